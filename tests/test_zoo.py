"""The zoo (dyn_plugin/tools/zoo.py) on a sample: a file that passes, one refused for a
reason pinocchio shares, one without moving joints, and the exit codes.  pybullet_data
comes with pybullet, so these never skip; only the example-robot-data cases do when that
package is absent.  The full zoo is `dyn-plugin validate --suite zoo` (validation/zoo.md)."""

import json
import re
from pathlib import Path

import numpy as np
import pybullet_data
import pytest

import dyn_plugin as dp
from dyn_plugin.tools import validate, zoo
from dyn_plugin.tools.cli import main

DATA = Path(pybullet_data.getDataPath())
KUKA, PLANE, SPHERICAL = (str(DATA / name) for name in ("kuka_iiwa/model.urdf", "plane.urdf",
                                                        "spherical_joint_limit.urdf"))


@pytest.fixture(scope="module")
def suite():
    return validate.load_suite("zoo")


def entry(path):
    return next(e for e in zoo.discover()[0] if e.path == str(Path(path).resolve()))


def erd(rel):
    """An example-robot-data entry by its path under robots/, or a skip."""
    found = [e for e in zoo.discover()[0] if e.label.startswith(zoo.ERD) and e.path.endswith(f"/robots/{rel}")]
    if not found:
        pytest.skip(f"{zoo.ERD} is not installed (pip install 'dyn_plugin[zoo]'), or has no {rel}")
    return found[0]


def test_discovery_labels_paths_and_floating_bases():
    entries, _ = zoo.discover()
    assert len({e.path for e in entries}) == len({e.label for e in entries}) == len(entries)
    assert zoo.robots() == [e.path for e in entries]
    assert entry(KUKA).label == "pybullet_data/kuka_iiwa/model.urdf" and not entry(KUKA).floating
    assert entry(DATA / "r2d2.urdf").floating and entry(DATA / "quadruped/minitaur.urdf").floating
    assert all(any(e.label.startswith(f"pybullet_data/{f}") for e in entries) for f in zoo.PYBULLET_FLOATING)
    assert zoo.is_zoo("zoo") and not zoo.is_zoo("quick") and not zoo.is_zoo("no_such_suite")


def test_suite_expands_to_every_file(suite):
    assert suite.robots == zoo.robots() and suite.samples == 20 and suite.rtol == 1e-9
    assert {"newton_euler", "lagrange_euler"} <= set(suite.backends) and set(suite.references) == {"pinocchio",
                                                                                                     "pybullet"}


def test_pass_no_joints_and_a_spherical_joint_on_pybullet_data(suite):
    """A spherical joint (pybullet's dialect, which pinocchio's URDF parser refuses) is compared
    with pinocchio's JointModelSpherical; pybullet, a reference that does not take it, is
    named as skipped."""
    passed, still, ball = (zoo.validate_entry(entry(p), suite) for p in (KUKA, PLANE, SPHERICAL))
    assert (passed.line, passed.dof) == ("pass", 7) and passed.max_error <= 1e-9 and passed.ok
    assert (still.line, still.dof) == ("no moving joints", 0) and still.ok
    assert ball.line.startswith("pass (pinocchio only") and "joint 'neck'" in ball.line and "spherical" in ball.line
    assert ball.dof == 3 and ball.max_error <= 1e-9 and ball.ok


def test_tolerance_is_real(suite):
    """An impossible tolerance fails the 7-DOF arm, naming the quantity and the error."""
    import dataclasses

    result = zoo.validate_entry(entry(KUKA), dataclasses.replace(suite, rtol=1e-300))
    assert result.status == "FAIL" and result.line.split()[1] in validate.QUANTITIES and not result.ok


def test_non_physical_inertia_refused_and_pinocchio_verdicts(suite):
    """romeo_laas_small's body inertia has a negative principal moment: we refuse it, and
    pinocchio's mass matrix is singular there.  tiago's 1 mg antenna link has one of
    -3.5e-8 kg·m², but it is welded to the base: the rigid body that moves is physical,
    so the file loads (with a warning naming the link), fixed or floating."""
    romeo = zoo.validate_entry(erd("romeo_description/urdf/romeo_laas_small.urdf"), suite)
    assert romeo.status == "refused" and "not positive semi-definite" in romeo.detail
    assert romeo.shared and "M is not positive definite" in romeo.pinocchio
    assert romeo.floating and romeo.ok
    for floating in (False, True):
        with pytest.warns(dp.PhysicalValidityWarning) as warned:
            model = dp.load_robot(erd("tiago_description/robots/tiago.urdf").path, floating_base=floating)
        said = [str(w.message) for w in warned]  # both antennas, each for two defects
        assert any(re.search("base_antenna_left_link.*welded", text) for text in said), said
        assert {re.search(r"link '(\w+)'", text).group(1) for text in said} == {"base_antenna_left_link",
                                                                                "base_antenna_right_link"}, said
        assert np.linalg.eigvalsh(model.base_inertia)[0] > 0


def test_command_writes_table_and_json(tmp_path, capsys):
    out, md = tmp_path / "zoo.json", tmp_path / "zoo.md"
    assert main(["validate", "--suite", "zoo", "--robot", KUKA, PLANE, SPHERICAL, "--samples", "5",
                 "--json", str(out), "--report", str(md)]) == 0
    report = json.loads(out.read_text())
    assert report["passed"] and report["files"] == 3 and report["suite"]["robots"] == "zoo"
    assert [r["line"] for r in report["results"]][:2] == ["pass", "no moving joints"]
    assert report["counts"] == {"pass": 2, "refused": 0, "no moving joints": 1, "FAIL": 0, "ERROR": 0,
                                "refused, pinocchio shares": 0}
    text = md.read_text()
    assert "| pybullet_data/kuka_iiwa/model.urdf | 7 | pass | – |" in text
    assert "| pybullet_data/spherical_joint_limit.urdf | 3 | pass (pinocchio only" in text
    captured = capsys.readouterr()
    assert "[1/3] pybullet_data/kuka_iiwa/model.urdf: 7 DOF, pass" in captured.err
    assert "zoo passed" in captured.out


@pytest.mark.parametrize("argv", [["--dask"], ["--plots", "figures"], ["--robot", "/no/such/file.urdf"]])
def test_bad_usage_exit_2(argv, capsys):
    try:
        code = main(["validate", "--suite", "zoo", *argv])
    except SystemExit as exc:
        code = exc.code
    assert code == 2 and "dyn-plugin: error:" in capsys.readouterr().err
