"""A backend added by CONTRIBUTING's recipe, with rigid τ and M only, passes the default
``dyn-plugin validate`` (issue #29, item 1): the plan asks it only for what the Backend
interface gives every backend (τ, M and the defaults derived from them: gravity, bias, C q̇,
q̈, hence pybullet's stepping and trajectories) and lists what its capabilities do not
promise (the analytic derivatives) as skipped, with the reason, without failing.

Twice: installed by an entry point of the ``dyn_plugin.backends`` group (a ``*.dist-info``
folder on PYTHONPATH, which importlib.metadata reads as an installed distribution) and run by
the command line in a subprocess; and registered in this process with ``register_backend``.
The backend is real: the readable Newton-Euler and composite-rigid-body algorithms of
dyn_plugin/algorithms/, each held here to pinocchio and pybullet at 1e-9.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import dyn_plugin as dp
from dyn_plugin.errors import BackendError, ModelError
from dyn_plugin.tools import validate
from dyn_plugin.tools.validate.plan import DERIVATIVES, QUANTITIES, WHY
from dyn_plugin.tools.reporting import markdown_report

NAME = "third_party_minimal"
MODULE = "third_party_minimal_backend"
SOURCE = textwrap.dedent('''
    """A third-party backend: rigid-body τ (Newton-Euler) and M (CRBA), nothing else."""
    from dyn_plugin.algorithms import composite_rigid_body, newton_euler
    from dyn_plugin.backends.base import Backend


    class MinimalBackend(Backend):
        name = "third_party_minimal"
        description = "rigid τ and M only (a third party's)"
        kind = "ours"
        capabilities = frozenset()

        def _batch_inverse_dynamics(self, q, qd, qdd):
            return newton_euler.inverse_dynamics(self.model, q, qd, qdd)

        def _batch_mass_matrix(self, q):
            return composite_rigid_body.mass_matrix(self.model, q)
''')
NO_DERIVATIVES = WHY["derivatives"]


@pytest.fixture
def package(tmp_path):
    """A folder holding the backend's module and a distribution declaring it as an entry point."""
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    info = tmp_path / "third_party_minimal-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: third-party-minimal\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[dyn_plugin.backends]\n{NAME} = {MODULE}:MinimalBackend\n")
    return tmp_path


def test_entry_point_backend_passes_the_default_validate(package, tmp_path):
    """The default suite (every registered backend of ours, both references, every quantity),
    on the SCARA with 20 states and dt = 5 ms to stay within seconds: exit 0, the backend
    compared on everything but the derivatives, which are listed as skipped with the reason."""
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(package), os.environ.get("PYTHONPATH")])),
           "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "dyn_plugin.tools.cli", "validate", "--robot", "scara",
                           "--samples", "20", "--dt", "0.005", "--json", str(report)],
                          env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"skipped: {NAME}: dtau, dqdd: {NO_DERIVATIVES}" in proc.stdout, proc.stdout
    data = json.loads(report.read_text())
    ours = [r for r in data["results"] if r["backend"] == NAME]
    compared = {(r["reference"], r["quantity"]) for r in ours}
    expected = {(reference, quantity) for reference in ("pinocchio", "pybullet") for quantity in QUANTITIES}
    assert compared == expected | {("pybullet", q) for q in ("step", "traj_zero", "traj_gravity")}, compared
    assert all(r["passed"] and r["max_rel"] <= 1e-9 for r in ours), ours
    skipped = {(s["quantity"], s["reason"]) for s in data["skipped"] if s["backend"] == NAME}
    assert skipped == {("dtau", NO_DERIVATIVES), ("dqdd", NO_DERIVATIVES),
                       ("bristles", WHY["bristles"])}, data["skipped"]


@pytest.fixture
def registered(package, monkeypatch):
    """The backend added by the recipe in this process (register_backend), removed afterwards."""
    monkeypatch.syspath_prepend(str(package))
    from third_party_minimal_backend import MinimalBackend

    dp.register_backend(NAME, MinimalBackend)
    yield MinimalBackend
    dp.unregister_backend(NAME)


def small_suite(backends, robots=("puma560", "stanford")):
    return validate.Suite(robots=list(robots), backends=list(backends), references=["pinocchio", "pybullet"],
                            quantities=[*QUANTITIES, *DERIVATIVES], samples=10, name="third party")


def test_registered_backend_is_compared_and_its_derivatives_skipped(registered):
    report = validate.run(small_suite([NAME, "newton_euler"]))
    assert report.passed
    ours = [c for c in report.comparisons if c.backend == NAME]
    assert {(c.robot, c.reference, c.quantity) for c in ours} == {
        (robot, reference, quantity) for robot in ("puma560", "stanford") for reference in ("pinocchio", "pybullet")
        for quantity in QUANTITIES}
    assert all(c.max_rel <= 1e-9 for c in ours), [(c.robot, c.quantity, c.max_rel) for c in ours if c.max_rel > 1e-9]
    assert {c.quantity for c in report.comparisons if c.backend == "newton_euler"} >= set(DERIVATIVES)
    assert {(s.robot, s.backend, s.quantity) for s in report.skips} == {
        (robot, NAME, quantity) for robot in ("puma560", "stanford") for quantity in DERIVATIVES}
    line = f"{NAME}: dtau, dqdd: {NO_DERIVATIVES}"
    assert report.skip_lines() == [line]
    assert f"- {line}" in markdown_report(report)
    assert {(s["backend"], s["quantity"], s["reason"]) for s in report.as_dict()["skipped"]} == {
        (NAME, quantity, NO_DERIVATIVES) for quantity in DERIVATIVES}


def test_a_model_the_factory_refuses_is_skipped_and_a_factory_bug_named(registered):
    """A factory's DynPluginError is its refusal of that robot: listed, the other robots compared;
    any other exception is a bug, a BackendError naming backend and robot."""
    def picky(model, **options):
        if model.name == "stanford":
            raise ModelError("picky takes no prismatic joint (stanford's joint 3)")
        return registered(model, **options)

    def broken(model, **options):
        raise TypeError("an unexpected argument")

    dp.register_backend("picky", picky)
    dp.register_backend("broken", broken)
    try:
        report = validate.run(small_suite(["picky"]))
        with pytest.raises(BackendError, match="backend 'broken' failed to build for robot 'puma560': TypeError"):
            validate.run(small_suite(["broken"]))
    finally:
        dp.unregister_backend("picky")
        dp.unregister_backend("broken")
    assert report.passed and {c.robot for c in report.comparisons} == {"puma560"}
    refused = [s for s in report.skips if s.robot == "stanford"]
    assert [s.quantity for s in refused] == [*QUANTITIES, *DERIVATIVES]
    assert all("picky takes no prismatic joint" in s.reason for s in refused)
