"""DH tables (standard and modified), URDF export, and the bundled robots generated from them."""

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.frames import frame_placement
from dyn_plugin.kinematics import forward_kinematics
from dyn_plugin.sampling import random_states
from dyn_plugin.robots import bundled_dir, generate_urdf, robot_table
from conftest import OURS, rel_err
from oracles import fu_two_link, schilling_scara
from urdf_factory import random_tree_urdf


def _rod(mass, length):
    """Thin uniform rod along x (Fu's distal frame: COM at -l/2), a tiny thickness keeps it valid."""
    i = mass * length**2 / 12
    return dict(mass=mass, com=(-length / 2, 0.0, 0.0), inertia=(1e-9, i, i, 0.0, 0.0, 0.0))


def test_standard_dh_two_link_equals_fu_closed_form():
    """Fu §3.2.6 two-link arm built from its standard DH table reproduces the printed τ."""
    m1, m2, l, g = 1.3, 0.7, 0.9, 9.8062
    rows = [dp.DHRow("revolute", alpha=0.0, a=l, d=0.0, theta=0.0, **_rod(m1, l)),
            dp.DHRow("revolute", alpha=0.0, a=l, d=0.0, theta=0.0, **_rod(m2, l))]
    model = dp.model_from_dh(rows, "standard", gravity=(0.0, -g, 0.0))
    rng = np.random.default_rng(1)
    for backend in OURS:
        be = dp.get_backend(backend, model)
        for _ in range(10):
            q, qd, qdd = rng.uniform(-2, 2, (3, 2))
            # the 1e-9 rod thickness adds at most m·1e-9 to D; the tolerance sits well above it
            expected = fu_two_link(q, qd, qdd, m1, m2, l, g)
            assert rel_err(be.inverse_dynamics(q, qd, qdd), expected) < 1e-8


def test_standard_dh_scara_with_prismatic_row_equals_schilling():
    """Schilling's SCARA rows (d1, a1, q1, π), (0, a2, q2, 0), (q3, 0, 0, 0) reproduce §6-6."""
    m1, m2, m3, a1, a2, l3, g = 3.0, 2.0, 1.2, 0.45, 0.35, 0.3, 9.8062
    rod3 = m3 * l3**2 / 12
    rows = [dp.DHRow("revolute", alpha=np.pi, a=a1, d=0.5, theta=0.0, **_rod(m1, a1)),
            dp.DHRow("revolute", alpha=0.0, a=a2, d=0.0, theta=0.0, **_rod(m2, a2)),
            dp.DHRow("prismatic", alpha=0.0, a=0.0, d=0.0, theta=0.0, mass=m3, com=(0, 0, -l3 / 2),
                     inertia=(rod3, rod3, 1e-9, 0, 0, 0))]
    model = dp.model_from_dh(rows, "standard", gravity=(0.0, 0.0, -g))
    rng = np.random.default_rng(2)
    for backend in OURS:
        be = dp.get_backend(backend, model)
        for _ in range(10):
            q, qd, qdd = rng.uniform(-1, 1, (3, 3))
            expected = schilling_scara(q, qd, qdd, m1, m2, m3, a1, a2, g)
            assert rel_err(be.inverse_dynamics(q, qd, qdd), expected) < 1e-8


def _modified_dh_chain(table, q):
    """Independent modified-DH forward kinematics: T = RotX(α) TransX(a) RotZ(θ) TransZ(d)."""
    T = np.eye(4)
    frames = []
    for row, qi in zip(table, q):
        theta = row["theta"] + (qi if row["joint"] == "revolute" else 0.0)
        d = row["d"] + (qi if row["joint"] == "prismatic" else 0.0)
        ca, sa, ct, st = np.cos(row["alpha"]), np.sin(row["alpha"]), np.cos(theta), np.sin(theta)
        A = np.array([[ct, -st, 0, row["a"]],
                      [st * ca, ct * ca, -sa, -sa * d],
                      [st * sa, ct * sa, ca, ca * d],
                      [0, 0, 0, 1]])  # Craig 3.6 / Dhanaraj eq. 2.4 (with +a, the code's sign)
        T = T @ A
        frames.append(T)
    return np.array(frames)


MODIFIED_DH = [name for name in dp.list_robots() if robot_table(name)["convention"] == "modified"]


@pytest.mark.parametrize("name", MODIFIED_DH)
def test_modified_dh_kinematics(name):
    """Link frames of the generated URDF equal the modified-DH chain of the source table,
    for every bundled robot whose table is in modified DH."""
    table = robot_table(name)
    model = dp.load_robot(name)
    rng = np.random.default_rng(3)
    for q in rng.uniform(-1, 1, (5, model.n)):
        T = forward_kinematics(model, q[None])[0]
        np.testing.assert_allclose(T, _modified_dh_chain(table["links"], q), atol=1e-12)


@pytest.mark.parametrize("name", dp.list_robots())
def test_committed_urdf_equals_regenerated(name):
    """The bundled URDF is exactly what the source table generates (run `dyn-plugin robots --regenerate`)."""
    assert (bundled_dir() / f"{name}.urdf").read_text() == generate_urdf(name)


def test_bundled_robots_are_physically_valid(bundled):
    assert np.all(bundled.masses > 0)
    for name, I in zip(bundled.link_names, bundled.inertias):
        moments = np.linalg.eigvalsh(I)
        assert moments[0] > 0, name
        assert moments[2] < moments[0] + moments[1], name


def test_bundled_robots_have_provenance():
    for name in dp.list_robots():
        text = (bundled_dir() / f"{name}.toml").read_text()
        table = robot_table(name)
        assert table["sources"], name
        assert text.count("#") >= len(table["links"]), f"{name}: numbers must cite their source"


def test_list_and_load_by_name():
    """Every NAME.toml in the bundled folder (friction data aside) is a robot, listed by name and
    loaded with its table's joints; the three published arms keep their published joint kinds."""
    tables = sorted(p.stem for p in bundled_dir().glob("*.toml") if not p.stem.endswith("_friction"))
    assert dp.list_robots() == tables and {"puma560", "scara", "stanford"} <= set(tables)
    for name in tables:
        assert list(dp.load_robot(name).joint_types) == [row["joint"] for row in robot_table(name)["links"]], name
    kinds = {name: "".join(t[0].upper() for t in dp.load_robot(name).joint_types) for name in ("puma560", "stanford", "scara")}
    assert kinds == {"puma560": "RRRRRR", "stanford": "RRPRRR", "scara": "RRPR"}


def test_urdf_round_trip_keeps_dynamics():
    """to_urdf then load gives the same dynamics, on a branched tree with fixed joints."""
    xml = random_tree_urdf(np.random.default_rng(7), 7)
    model = dp.load_urdf_string(xml)
    again = dp.load_urdf_string(dp.to_urdf(model))
    assert again.joint_names == model.joint_names
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, 20, model.n))
    a = dp.get_backend("newton_euler", model).inverse_dynamics(q, qd, qdd)
    b = dp.get_backend("newton_euler", again).inverse_dynamics(q, qd, qdd)
    assert rel_err(a, b) < 1e-13


def test_urdf_round_trip_keeps_frames_and_mimic_joints():
    """The frames of links merged through fixed joints, a payload's frame and mimic joints
    survive to_urdf and load (they were dropped: 'no frame tool0' after a round trip, and
    mimic followers came back independent, nv 4 for 2)."""
    from test_mimic import MIMIC_URDF

    model = dp.load_urdf_string(random_tree_urdf(np.random.default_rng(7), 7))
    model = model.with_payload(model.frame_names[-1], 0.7, com=(0.01, 0.02, 0.03))
    again = dp.load_urdf_string(dp.to_urdf(model))
    assert sorted(again.frame_names) == sorted(model.frame_names) and len(model.frame_names) > model.n + 2
    q = np.random.default_rng(1).uniform(-1, 1, (3, model.n))
    for name in model.frame_names:
        assert rel_err(frame_placement(again, q, name), frame_placement(model, q, name)) < 1e-14, name
    mimic = dp.load_urdf_string(MIMIC_URDF, mimic=True)
    back = dp.load_urdf_string(dp.to_urdf(mimic), mimic=True)
    assert back.mimic == mimic.mimic and back.nv == mimic.nv
    s = random_states(mimic, 5, seed=2)
    assert rel_err(dp.get_backend("newton_euler", back).inverse_dynamics(s.q, s.qd, s.qdd),
                   dp.get_backend("newton_euler", mimic).inverse_dynamics(s.q, s.qd, s.qdd)) < 1e-13


def test_a_floating_dh_robot_with_a_payload_on_its_base_in_the_reference_engines():
    """A DH model has no URDF source: the engines load to_urdf(model), which wrote the base
    link without its <inertial> (pinocchio saw 3 kg of 8; pybullet 4, its 1 kg default)."""
    rows = [dp.DHRow("revolute", alpha=0.0, a=0.0, d=0.0, theta=0.0, mass=2.0, com=(0.1, 0, 0),
                  inertia=(0.1, 0.2, 0.3, 0, 0, 0)),
            dp.DHRow("revolute", alpha=np.pi / 2, a=0.3, d=0.0, theta=0.0, mass=1.0, com=(0.1, 0, 0),
                  inertia=(0.05, 0.05, 0.05, 0, 0, 0))]
    model = dp.model_from_dh(rows, "modified").with_floating_base()
    model = model.with_payload(model.base_link, 5.0, (0, 0, 0.1), np.diag([0.1, 0.2, 0.3]))
    assert dp.load_urdf_string(dp.to_urdf(model), floating_base=True).base_mass == model.base_mass == 5.0
    s = random_states(model, 3, seed=2)
    ours = dp.get_backend("newton_euler", model)
    for name in ("pinocchio", "pybullet"):
        ref = dp.get_backend(name, model)
        assert np.allclose(ref.mass_matrix(s.q), ours.mass_matrix(s.q), rtol=1e-12, atol=1e-12), name
        assert np.allclose(ref.inverse_dynamics(s.q, s.qd, s.qdd), ours.inverse_dynamics(s.q, s.qd, s.qdd),
                           rtol=1e-11, atol=1e-11), name
