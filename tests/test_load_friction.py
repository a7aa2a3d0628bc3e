"""Load-dependent friction in identification (friction term "load",
dyn_plugin/identification/friction.py): its columns against the Newton-Euler equations of
one rigid body written out by hand, and identification recovering known load coefficients."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.errors import InputError
from dyn_plugin.friction.law import direction
from dyn_plugin.identification import LOADS, friction_columns, load_magnitudes, simulate_measurements

SLICE = Path(__file__).resolve().parent / "data" / "panda_gaz2019_every5.npz"
MASS, LENGTH, ALONG, IYY = 2.5, 0.4, 0.07, 0.03
GRAVITY = np.array([0.8, -2.1, -9.81])      # a component along the axis gives an axial load

PENDULUM = f"""<robot name="pendulum">
  <link name="base"/>
  <link name="arm">
    <inertial><origin xyz="{LENGTH} {ALONG} 0" rpy="0 0 0"/><mass value="{MASS}"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="{IYY}" iyz="0" izz="0.02"/></inertial>
  </link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="10"/></joint>
</robot>
"""


def pendulum_wrench(q, qd, qdd):
    """Force f and moment n (N, 3) the base exerts on the arm at the hinge, arm frame, from
    Newton's and Euler's equations of one rigid body (Featherstone, Rigid Body Dynamics
    Algorithms, 2008, §2.13): with ω = q̇ ŷ, α = q̈ ŷ, c = (l, d, 0) and g_L = R_y(q)ᵀ g,
    a_c = α × c + ω × (ω × c) = (−q̇² l, 0, −q̈ l), f = m (a_c − g_L), and about the hinge
    n = I_c α + ω × I_c ω + c × f = (0, I_yy q̈, 0) + c × f (I_c diagonal: ω × I_c ω = 0)."""
    c, s = np.cos(q), np.sin(q)
    g_local = np.stack([c * GRAVITY[0] - s * GRAVITY[2], np.full_like(q, GRAVITY[1]),
                        s * GRAVITY[0] + c * GRAVITY[2]], axis=-1)
    a_com = np.stack([-qd ** 2 * LENGTH, np.zeros_like(q), -qdd * LENGTH], axis=-1)
    f = MASS * (a_com - g_local)
    com = np.array([LENGTH, ALONG, 0.0])
    n = np.cross(com, f) + np.stack([np.zeros_like(q), IYY * qdd, np.zeros_like(q)], axis=-1)
    return f, n


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    path = tmp_path_factory.mktemp("pendulum") / "pendulum.urdf"
    path.write_text(PENDULUM)
    return dp.load_robot(path).with_gravity(GRAVITY)


def test_load_columns_are_the_closed_form_of_a_pendulum(pendulum):
    rng = np.random.default_rng(4)
    q, qd, qdd = (rng.uniform(-2, 2, size=(40, 1)) for _ in range(3))
    f, n = pendulum_wrench(q[:, 0], qd[:, 0], qdd[:, 0])
    expected = {"radial": np.hypot(f[:, 0], f[:, 2]), "bending": np.hypot(n[:, 0], n[:, 2]),
                "axial": np.abs(f[:, 1]), "transmitted": np.abs(n[:, 1])}
    assert np.all(expected["axial"] > 1) and np.all(expected["bending"] > 0.1)
    magnitude = load_magnitudes(pendulum, pendulum, q, qd, qdd)
    columns, names = friction_columns(pendulum, q, qd, qdd, ("viscous", "load"), loads=pendulum)
    assert names == ("fv_hinge",) + tuple(f"{kind}_hinge" for kind in LOADS)
    sign = np.sign(qd[:, 0])
    for k, kind in enumerate(LOADS):
        scale = np.abs(expected[kind]).max()
        assert np.abs(magnitude[kind][:, 0] - expected[kind]).max() <= 1e-12 * scale, kind
        assert np.abs(columns[:, 0, 1 + k] - sign * expected[kind]).max() <= 1e-12 * scale, kind
    # the transmitted load is the rigid-body torque: τ = (I_yy + m l²) q̈ + m l g_Lz at g_Lz's sign
    tau = dp.get_backend("pinocchio", pendulum).inverse_dynamics(q, qd, qdd)
    assert np.abs(magnitude["transmitted"] - np.abs(tau)).max() <= 1e-12 * np.abs(tau).max()


def test_smoothing_and_refusals(pendulum):
    q = qd = qdd = np.array([[0.3], [-0.01], [0.02]])
    smooth, _ = friction_columns(pendulum, q, qd, qdd, ("load",), smoothing=0.05, loads=pendulum)
    magnitude = load_magnitudes(pendulum, pendulum, q, qd, qdd)
    assert np.abs(smooth[:, 0, 0] - direction(qd, 0.05)[:, 0] * magnitude["radial"][:, 0]).max() <= 1e-15
    with pytest.raises(InputError, match=r"'load' needs the robot model .*loads=RobotModel"):
        friction_columns(pendulum, q, qd, qdd, ("load",))
    with pytest.raises(InputError, match=r"loads must be a robot model of 'pendulum' with its joints \(hinge\)"):
        friction_columns(pendulum, q, qd, qdd, ("load",), loads=dp.load_robot("puma560"))


LOAD_TRUTH = {"radial": 2e-3, "bending": 1.5e-2, "axial": 3e-3, "transmitted": 4e-2}


def _with_load_friction(model, samples=160, seed=2):
    """Noise-free torques of ``model`` with viscous friction and known load coefficients
    (LOAD_TRUTH, scaled per joint) loaded by the model's own joint wrenches."""
    data = simulate_measurements(model, None, noise=0.0, samples=samples, seed=seed)
    magnitude = load_magnitudes(model, model, data.q, data.qd, data.qdd)
    truth, tau = {}, data.tau + 0.3 * data.qd
    s = np.sign(data.qd)
    for j, joint in enumerate(model.joint_names):
        truth[f"fv_{joint}"] = 0.3
        for kind in LOADS:
            truth[f"{kind}_{joint}"] = LOAD_TRUTH[kind] * (1 + 0.25 * j)
            tau[:, j] += truth[f"{kind}_{joint}"] * s[:, j] * magnitude[kind][:, j]
    return data, tau, truth


def test_identification_recovers_known_load_coefficients():
    puma = dp.load_robot("puma560")
    data, tau, truth = _with_load_friction(puma)
    result = dp.identify(puma, data.q, data.qd, data.qdd, tau, friction="viscous,load", loads=puma)
    assert result.loads is puma and result.loads_from == "the given model"
    for name, value in truth.items():
        assert result.parameter(name)[0] == pytest.approx(value, rel=1e-9, abs=1e-12), name
    assert np.abs(result.predicted - tau).max() <= 1e-9 * np.abs(tau).max()
    held = simulate_measurements(puma, None, noise=0.0, samples=30, seed=9)
    assert result.to_dict()["loads_from"] == "the given model"
    assert result.predict(held.q, held.qd, held.qdd).shape == (30, 6)


def test_two_passes_load_the_joints_with_the_first_pass_robot():
    puma = dp.load_robot("puma560")
    data = simulate_measurements(puma, None, noise=0.0, samples=160, seed=5)
    tau = data.tau + 0.3 * data.qd                      # no load friction in the data
    first = dp.identify(puma, data.q, data.qd, data.qdd, tau, friction="viscous")
    result = dp.identify(puma, data.q, data.qd, data.qdd, tau, friction="viscous,load")
    assert np.array_equal(result.loads.inertial_parameters(), first.to_model().inertial_parameters())
    assert "first pass" in result.loads_from and "least-squares completion" in result.loads_from
    loads = [v for name, v in result.friction.items() if not name.startswith("fv_")]
    assert len(loads) == 24 and max(np.abs(loads)) <= 1e-12          # of coefficients ~1e-2: none in the data
    assert np.abs(result.predicted - tau).max() <= 1e-12 * np.abs(tau).max()


def test_cli_identify_log_with_the_load_term(tmp_path, capsys):
    import json

    from test_lock import erd_panda

    from dyn_plugin.tools.cli import main

    fingers = [f"--lock=panda_finger_joint{k}" for k in (1, 2)]
    out = tmp_path / "load.json"
    code = main(["identify", str(erd_panda()), *fingers, "--log", str(SLICE), "--rate", "50",
                 "--friction", "viscous,coulomb,load", "--json", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data = json.loads(out.read_text())
    names = [p["name"] for p in data["parameters"]]
    joints = [f"panda_joint{j}" for j in range(1, 8)]
    assert all(f"{kind}_{joint}" in names for kind in LOADS for joint in joints)
    assert "first pass" in data["loads_from"] and "load columns: joint wrenches of" in captured.out
    # measured 0.0855 N·m at 50 Hz on this slice (0.0921 without the load term, test_log.py)
    assert data["holdout_rms_total"] < 0.12
