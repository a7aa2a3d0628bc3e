"""The validation's reference floor (dyn_plugin/tools/validate/): where pybullet itself
disagrees with pinocchio, a backend is judged against that disagreement, never blamed for it,
and never excused for an error of its own.

The robot: three links, the last one with a full inertia tensor (ixy, ixz and iyz non-zero
in its ``<inertial>`` frame).  pybullet diagonalises such a tensor by Bullet's Jacobi method,
which stops at 1e-6 of the trace, and drops what is left off the diagonal
(BulletURDFImporter::getMassAndInertia2, btMatrix3x3::diagonalize); with ixy alone one
rotation diagonalises it exactly, so the link carries all three terms.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.backends.base import Backend
from dyn_plugin.backends.friction_backend import NewtonEulerFrictionBackend
from dyn_plugin.backends.newton_euler_backend import NewtonEulerBackend
from dyn_plugin.backends.registry import get_backend, register_backend, unregister_backend
from dyn_plugin.sampling import random_states
from dyn_plugin.backends import pybullet_diagnostics
from dyn_plugin.tools import validate
from dyn_plugin.tools.cli import main
from dyn_plugin.tools.reporting import markdown_report

RTOL = 1e-9

FULL_INERTIA = 'ixx="0.037" ixy="-0.0031" ixz="0.0023" iyy="0.032" iyz="-0.0011" izz="0.034"'
URDF = """<?xml version="1.0"?>
<robot name="tilted">
  <link name="base_link"><inertial><mass value="1"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base_link"/><child link="upper"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <link name="upper"><inertial><origin xyz="0.2 0.01 0"/><mass value="2"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial></link>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <link name="fore"><inertial><origin xyz="0.15 0 0.02" rpy="0.1 0.2 0.3"/><mass value="1.5"/>
    <inertia INERTIA/></inertial></link>
</robot>
"""


def _urdf(tmp_path, inertia=FULL_INERTIA):
    path = tmp_path / "tilted.urdf"
    path.write_text(URDF.replace("INERTIA", inertia))
    return str(path)


def _suite(robot, backends, references=("pinocchio", "pybullet"), quantities=("tau", "M", "gravity", "qdd", "step", "traj_zero")):
    return validate.Suite(robots=[robot], backends=list(backends), references=list(references),
                            quantities=list(quantities), samples=40, rtol=RTOL)


def _find(report, backend, reference, quantity):
    return next(c for c in report.comparisons if (c.backend, c.reference, c.quantity) == (backend, reference, quantity))


def test_the_replica_of_bullets_diagonalisation_is_what_pybullet_loads(tmp_path):
    """bullet_diagonalize gives pybullet's own principal moments and inertial frame (getDynamicsInfo)."""
    model = dp.load_robot(_urdf(tmp_path))
    pybullet = get_backend("pybullet", model)
    info = pybullet._p.getDynamicsInfo(pybullet.body, pybullet.joint_indices[1], physicsClientId=pybullet.client)
    inertia = np.array([[0.037, -0.0031, 0.0023], [-0.0031, 0.032, -0.0011], [0.0023, -0.0011, 0.034]])
    rotation, moments = pybullet_diagnostics.bullet_diagonalize(inertia)
    np.testing.assert_allclose(moments, info[2], rtol=1e-15, atol=0)
    rpy = np.array([0.1, 0.2, 0.3])   # the <inertial> frame, then Bullet's principal axes
    frame = np.array(pybullet._p.getMatrixFromQuaternion(pybullet._p.getQuaternionFromEuler(rpy))).reshape(3, 3)
    np.testing.assert_allclose(np.array(pybullet._p.getMatrixFromQuaternion(info[4])).reshape(3, 3),
                               frame @ rotation, rtol=0, atol=1e-14)
    # what it leaves off the diagonal is far above round-off, and is what pybullet drops
    assert np.abs(rotation @ np.diag(moments) @ rotation.T - inertia).max() > 1e-13
    assert list(pybullet_diagnostics.pybullet_dropped_inertia(model)) == ["fore"]
    # the diagnosis is complete: pinocchio on the inertias pybullet simulates is pybullet
    states = random_states(model, 20, seed=1)
    pinocchio = get_backend("pinocchio", pybullet_diagnostics.pybullet_model(model))
    for quantity in ("tau", "M", "qdd"):
        compute = validate.QUANTITIES[quantity][0]
        assert validate.relative_errors(compute(pinocchio, states), compute(pybullet, states)).max() <= RTOL
    # ixy alone: one Jacobi rotation, exact; nothing to name
    assert pybullet_diagnostics.pybullet_dropped_inertia(dp.load_robot(_urdf(
        tmp_path, 'ixx="0.01" ixy="0.003" ixz="0" iyy="0.02" iyz="0" izz="0.025"'))) == {}


def test_a_floor_is_reported_and_our_backend_judged_against_it(tmp_path):
    report = validate.run(_suite(_urdf(tmp_path), ["newton_euler"]))
    qdd = _find(report, "newton_euler", "pybullet", "qdd")
    # the case is real: pybullet misses pinocchio (and us) beyond the tolerance
    assert qdd.floor > 10 * RTOL and qdd.max_rel > RTOL
    assert qdd.passed and qdd.within_floor and qdd.max_rel <= RTOL + qdd.floor and qdd.pinocchio_error <= RTOL
    assert all(c.max_rel <= RTOL for c in report.comparisons if c.reference == "pinocchio")
    assert report.passed
    # an inertia tensor does not enter g(q): there the references agree, and no floor is shown
    assert not _find(report, "newton_euler", "pybullet", "gravity").floor_applies
    assert not any(line.endswith("on gravity; judged against that floor") for line in report.disagreement_lines())
    lines = report.disagreement_lines()
    assert f"tilted: reference disagreement: pybullet vs pinocchio {qdd.floor:.1e} on qdd; judged against that floor" \
        in lines
    assert any("why:" in line and "'fore'" in line for line in lines)
    assert not any("'upper'" in line for line in lines)
    data = json.loads(json.dumps(report.as_dict()))
    assert data["passed"] and data["reference_disagreement"] == lines
    row = next(r for r in data["results"] if (r["reference"], r["quantity"]) == ("pybullet", "qdd"))
    assert row["floor"] == qdd.floor and row["passed"]
    markdown = markdown_report(report)
    assert f"(floor {qdd.floor:.1e})" in markdown and "'fore'" in markdown


def test_the_cli_shows_the_floor_and_exits_0(tmp_path, capsys):
    assert main(["validate", "--robot", _urdf(tmp_path), "--backend", "newton_euler", "--quantity", "M", "qdd",
                 "--samples", "10"]) == 0
    out = " ".join(capsys.readouterr().out.split())   # rich wraps long lines
    assert "tilted: reference disagreement: pybullet vs pinocchio" in out and "on qdd; judged against that floor" in out
    assert "'fore'" in out and "all passed" in out


class _OffByMicro(NewtonEulerBackend):
    """τ off by 1e-6 N·m on every joint: a real error, 1000 times the tolerance."""

    name = "off_by_micro"

    def _batch_inverse_dynamics(self, q, qd, qdd):
        return super()._batch_inverse_dynamics(q, qd, qdd) + 1e-6


class _Halfway(Backend):
    """pinocchio's dynamics, but q̈ halfway to pybullet's: within the floor of pybullet, off
    pinocchio by half of it.  Only the comparison with pinocchio's prediction can catch it."""

    name = "halfway"

    def __init__(self, model, gravity=None):
        super().__init__(model, gravity)
        self.pinocchio, self.pybullet = get_backend("pinocchio", model), get_backend("pybullet", model)

    def _batch_inverse_dynamics(self, q, qd, qdd):
        return self.pinocchio.inverse_dynamics(q, qd, qdd)

    def _batch_mass_matrix(self, q):
        return self.pinocchio.mass_matrix(q)

    def _batch_forward_dynamics(self, q, qd, tau):
        return (self.pinocchio.forward_dynamics(q, qd, tau) + self.pybullet.forward_dynamics(q, qd, tau)) / 2


@pytest.fixture
def registered():
    names = []

    def register(cls):
        register_backend(cls.name, cls)
        names.append(cls.name)
    yield register
    for name in names:
        unregister_backend(name)


def test_the_floor_does_not_hide_an_error_against_pinocchio(tmp_path, registered):
    registered(_OffByMicro)
    report = validate.run(_suite(_urdf(tmp_path), ["newton_euler", "off_by_micro"]))
    assert not report.passed
    assert {(c.backend, c.reference, c.quantity) for c in report.failures()} == {
        ("off_by_micro", "pinocchio", "tau"), ("off_by_micro", "pybullet", "tau")}
    tau = _find(report, "off_by_micro", "pybullet", "tau")
    assert tau.floor_applies and tau.pinocchio_error > RTOL   # there is a floor, and it does not excuse 1e-6


def test_an_error_within_the_floor_fails_even_without_pinocchio_among_the_references(tmp_path, registered):
    registered(_Halfway)
    report = validate.run(_suite(_urdf(tmp_path), ["newton_euler", "halfway"], references=["pybullet"],
                                   quantities=["qdd"]))
    halfway, ours = _find(report, "halfway", "pybullet", "qdd"), _find(report, "newton_euler", "pybullet", "qdd")
    assert halfway.floor_applies and RTOL < halfway.max_rel <= RTOL + halfway.floor   # pybullet alone would pass it
    assert halfway.pinocchio_error > RTOL and not halfway.passed
    assert ours.passed and ours.within_floor
    assert [c.backend for c in report.failures()] == ["halfway"]


def test_the_cli_says_when_numba_compiles_the_kernels(tmp_path):
    """A fresh numba cache: the notice comes before the first build; then the cache is used, silently."""
    command = [sys.executable, "-m", "dyn_plugin.tools.cli", "validate", "--robot", "scara", "--backend",
               "newton_euler", "--against", "pinocchio", "--quantity", "tau", "--samples", "2"]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    notice = "validate: compiling kernels for first use (cached afterwards)"
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines()[0] == notice
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and notice not in again.stderr


class _SlipperyFriction(NewtonEulerFrictionBackend):
    """A wrong friction step: q̇⁺ 1e-6 too large on every joint ((q̇⁺ − q̇)/dt off by 1e-3 at 1 ms)."""

    name = "slippery_friction"

    def velocity_step(self, q, qd, tau, dt):
        return super().velocity_step(q, qd, tau, dt) + 1e-6


def test_the_friction_floor_does_not_absorb_an_error_of_our_friction_law(tmp_path, registered):
    """A friction backend's floor is what pybullet's rigid body changes in its experiment,
    with our friction law on both sides: a wrong law shows in full against pybullet."""
    registered(_SlipperyFriction)
    report = validate.run(_suite(_urdf(tmp_path), ["newton_euler_friction", "slippery_friction"],
                                   quantities=["step"]))
    good, wrong = (_find(report, name, "pybullet", "step") for name in ("newton_euler_friction", "slippery_friction"))
    assert good.floor_applies and good.max_rel > RTOL and good.passed
    # its twin over pinocchio errs alike, so the error is all against pybullet, beyond the floor
    assert wrong.floor == pytest.approx(good.floor, rel=0.01) and wrong.pinocchio_error <= RTOL
    assert not wrong.passed and [c.backend for c in report.failures()] == ["slippery_friction"]
    assert any("reference disagreement with friction" in line and "on step" in line
               for line in report.disagreement_lines())
