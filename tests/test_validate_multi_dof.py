"""`dyn-plugin validate` on a robot with spherical, planar and floating joints: our backends
against pinocchio (which takes such joints), pybullet refused by name and listed as skipped
with its reason (its comparisons, and the stepping and trajectories that need it), the run
passing; and pybullet's refusal itself."""

from __future__ import annotations

import json

import pytest

import dyn_plugin as dp
from dyn_plugin.errors import ModelError
from dyn_plugin.tools.cli import main
from test_simulate_multi_dof import FREE_BODY, SUBTREE


@pytest.fixture(scope="module")
def robot(tmp_path_factory):
    path = tmp_path_factory.mktemp("multi_dof") / "free_body.urdf"
    path.write_text(FREE_BODY.format(below=SUBTREE))
    return path


def test_validate_compares_with_pinocchio_and_lists_pybullet_as_skipped(robot, tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["validate", "--robot", str(robot), "--backend", "newton_euler", "--samples", "5",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    compared = {(c["backend"], c["reference"], c["quantity"]) for c in report["results"]}
    assert compared == {("newton_euler", "pinocchio", q) for q in ("tau", "M", "bias", "gravity", "Cqd", "qdd", "dtau",
                                                                     "dqdd")}
    assert max(c["max_rel"] for c in report["results"]) < 1e-9
    skipped = {(s["backend"], s["quantity"]): s["reason"] for s in report["skipped"]}
    for quantity in ("tau", "M", "qdd", "step", "traj_zero", "traj_gravity"):
        assert "joint 'free'" in skipped["pybullet (reference)", quantity]
    assert "pybullet" in skipped["newton_euler", "traj_gravity"]
    assert "pybullet (reference): tau, M, bias" in capsys.readouterr().out


def test_pybullet_refuses_such_joints_by_name(robot):
    model = dp.load_robot(str(robot))
    with pytest.raises(ModelError, match="joint 'free' of robot 'free_body' .*floating"):
        dp.get_backend("pybullet", model)
    from dyn_plugin.backends.pybullet_backend import PybulletBackend

    with pytest.raises(ModelError, match="joint 'free' of robot 'free_body' is floating"):
        PybulletBackend(model)


def test_a_fixed_joint_with_dynamics_loads_as_pinocchio_loads_it():
    """A fixed joint's <dynamics> is read and unused (pr2, icub_reduced and alex_sake_hands of
    example-robot-data have such joints; pinocchio loads them): not refused as if it were a
    joint of several degrees of freedom."""
    import pinocchio as pin

    xml = FREE_BODY.format(below="").replace(
        '<joint name="free" type="floating">', '<joint name="free" type="fixed"><dynamics damping="0.7" friction="0.1"/>')
    model = dp.load_urdf_string(xml)
    assert model.joint_names == ("elsewhere",) and model.nv == pin.buildModelFromXML(xml).nv == 1
