"""Regression tests for inputs that used to give silently wrong numbers, and for the URDF
reader that replaced urchin (element-level errors, leniency where urdfdom is lenient,
iterative tree walk).

References: pinocchio (rnea, crba, aba) called directly on the same URDF text; relative
error |ours − ref| / max(1, |ref|) ≤ 1e-12 element by element.
"""

from __future__ import annotations

import contextlib
import re

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin.backends.registry import backends  # noqa: E402
from dyn_plugin.kinematics import rotation_from_z  # noqa: E402
from dyn_plugin.urdf import urdf_text  # noqa: E402

TOL = 1e-12
# Our rigid-body backends that take any URDF, from the registry (the friction backends add
# friction, the generated ones are covered by tests/test_codegen.py and tests/test_symbolic_cache.py).
RIGID = tuple(backends("ours", cannot=("friction",)))


def link(name, mass=1.0, inertia=(0.1, 0.2, 0.3), com="0.1 0.05 -0.02", rpy="0.3 -0.2 0.1", extra=""):
    ixx, iyy, izz = inertia
    return (f'<link name="{name}"><inertial><origin xyz="{com}" rpy="{rpy}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>{extra}</link>')


def joint(name, parent, child, axis="0 0 1", xyz="0.1 0 0.3", rpy="0 0 0", kind="revolute", extra=""):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>'
            f'<limit lower="-3" upper="3" effort="10" velocity="5"/>{extra}</joint>')


def robot(*elements, name="r"):
    return f'<robot name="{name}"><link name="base"/>{"".join(elements)}</robot>'


def pinocchio_references(xml, states):
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    out = {"tau": [], "M": [], "qdd": []}
    for q, qd, qdd, tau in states:
        out["tau"].append(pin.rnea(pm, pd, q, qd, qdd))
        M = pin.crba(pm, pd, q)
        out["M"].append(np.triu(M) + np.triu(M, 1).T)
        out["qdd"].append(pin.aba(pm, pd, q, qd, tau))
    return {k: np.array(v) for k, v in out.items()}


def random_states(n, count=10, seed=0):
    rng = np.random.default_rng(seed)
    return [tuple(rng.uniform(-2, 2, (4, n))) for _ in range(count)]


def rel_err(ours, ref):
    return float(np.max(np.abs(np.asarray(ours) - ref) / np.maximum(1.0, np.abs(ref))))


def assert_matches_pinocchio(xml, backends=RIGID):
    model = dp.load_urdf_string(xml)
    states = random_states(model.n)
    ref = pinocchio_references(xml, states)
    Q, QD, QDD, TAU = (np.array(column) for column in zip(*states))
    for name in backends:
        be = dp.get_backend(name, model)
        assert rel_err(be.inverse_dynamics(Q, QD, QDD), ref["tau"]) <= TOL, name
        assert rel_err(be.mass_matrix(Q), ref["M"]) <= TOL, name
        # q̈ by backward error: our q̈ must reproduce the torque (M is well conditioned here)
        qdd = be.forward_dynamics(Q, QD, TAU)
        assert np.all(np.isfinite(qdd)), name
        assert rel_err(qdd, ref["qdd"]) <= 1e-10, name
    return model


# -- zero-mass links keep their rotational inertia ------------------------------------------


@pytest.mark.parametrize("where", ["middle", "leaf"])
def test_massless_link_keeps_its_inertia(where):
    rotor = link("rotor", mass=0.0, inertia=(0.3, 0.3, 0.3), com="0 0 0")
    arm = link("arm", mass=1.0)
    order = (rotor, arm) if where == "middle" else (arm, rotor)
    names = ("rotor", "arm") if where == "middle" else ("arm", "rotor")
    xml = robot(*order, joint("j1", "base", names[0]), joint("j2", names[0], names[1], axis="0 1 0"))
    model = assert_matches_pinocchio(xml)
    index = model.link_names.index("rotor")
    assert np.allclose(model.inertias[index], 0.3 * np.eye(3), rtol=0, atol=1e-15)


def test_massless_links_merged_through_a_fixed_joint_keep_their_inertia():
    """Two massless links with rotated, off-origin inertias merged into one body: the sum
    of their rotated inertias, about any point (there is no mass to shift)."""
    xml = robot(link("a", mass=0.0, inertia=(0.1, 0.2, 0.25), com="0.3 0 0", rpy="0.4 0.1 0"),
                link("b", mass=0.0, inertia=(0.05, 0.05, 0.08), com="0 0.2 0", rpy="0 0 0.7"),
                link("tip", mass=2.0),
                joint("j1", "base", "a"), joint("fix", "a", "b", kind="fixed", rpy="0.2 0 0"),
                joint("j2", "b", "tip", axis="1 0 0"))
    assert_matches_pinocchio(xml)


# -- joint axes anywhere on the sphere -------------------------------------------------------


AXES_NEAR_POLES = ["0 2e-6 -0.999999999998", "1e-12 0 -1", "0 0 -1", "3e-9 -4e-9 -1", "0 0 1",
                   "1e-7 0 1", "-1 1e-9 0", "0 -1 1e-13", "1 0 -1e-10"]


@pytest.mark.parametrize("axis", AXES_NEAR_POLES)
def test_axes_near_coordinate_axes_match_pinocchio(axis):
    """The compiled newton_euler re-frames every joint so that its axis is z; near −z the
    old frame (Rodrigues with 1/(1 + cos)) lost 7e-5 of τ."""
    xml = robot(link("a"), link("b", mass=2.0, com="0.1 0 0.1"),
                joint("j1", "base", "a", axis=axis, rpy="1 0 0"), joint("j2", "a", "b", axis=axis, rpy="0 0.5 0"))
    assert_matches_pinocchio(xml)


def test_rotation_from_z_is_a_rotation_onto_the_axis_everywhere():
    rng = np.random.default_rng(3)
    axes = [np.array(a, dtype=float) for a in
            ([0, 0, 1], [0, 0, -1], [1, 0, 0], [0, -1, 0], [0, 2e-6, -0.999999999998], [1e-15, 0, -1],
             [0, 0, -1 + 1e-14], [-1e-8, 1e-8, -1])]
    axes += list(rng.normal(size=(500, 3)))
    for a in axes:
        a = a / np.linalg.norm(a)
        R = rotation_from_z(a)
        assert np.abs(R.T @ R - np.eye(3)).max() <= 1e-15  # a few ulps
        assert abs(np.linalg.det(R) - 1.0) <= 1e-15
        assert np.abs(R[:, 2] - a).max() == 0.0


@pytest.mark.parametrize("axis", ["0 0 1e-6", "0 3e-5 0", "2 0 0", "0 1e-9 -1e-9"])
def test_non_unit_axes_are_normalised_as_pinocchio_does(axis):
    """Short axes used to be replaced by x (urchin); pinocchio normalises them."""
    xml = robot(link("a"), link("b", mass=2.0), joint("j1", "base", "a", axis=axis), joint("j2", "a", "b", axis="0 1 0"))
    model = assert_matches_pinocchio(xml)
    values = np.array([float(v) for v in axis.split()])
    assert np.allclose(model.axes[0], values / np.linalg.norm(values), rtol=0, atol=1e-15)


def test_an_axis_of_norm_1e_300_is_the_unit_axis():
    """Beyond pinocchio (its normalisation underflows: |a|² = 1e-600 is 0): the model
    equals the one written with the unit axis (bit for bit where the short axis is exact;
    subnormal components carry fewer digits)."""
    def model(axis):
        return dp.load_urdf_string(robot(link("a"), joint("j1", "base", "a", axis=axis)))
    assert np.array_equal(model("1e-300 0 0").axes, model("1 0 0").axes)
    assert np.allclose(model("-3e-310 0 4e-310").axes, model("-0.6 0 0.8").axes, rtol=0, atol=1e-15)


def test_the_references_load_unit_axes():
    """pybullet steps with the axis as written, so the reference text carries unit axes."""
    xml = robot(link("a"), joint("j1", "base", "a", axis="0 0 1e-6"))
    model = dp.load_urdf_string(xml)
    reread = dp.load_urdf_string(urdf_text(model))
    assert np.array_equal(reread.axes, model.axes)
    assert 'xyz="0.0 0.0 1.0"' in urdf_text(model)
    unit = dp.load_urdf_string(robot(link("a"), joint("j1", "base", "a", axis="0 0 1")))
    assert urdf_text(unit) == unit.source_urdf  # already unit: the source, unchanged


def test_pybullet_steps_a_short_axis_like_a_unit_one():
    """One pybullet step of a joint written with axis 0 0 1e-6 equals our q̈ (it used to
    integrate a scaled-down axis, and validate hung in the rollout)."""
    xml = robot(link("a"), link("b", mass=2.0, com="0.1 0 0.1"),
                joint("j1", "base", "a", axis="1e-6 0 0"), joint("j2", "a", "b", axis="0 1 0"))
    model = dp.load_urdf_string(xml)
    ours = dp.get_backend("newton_euler", model)
    reference = dp.get_backend("pybullet", model)
    q, qd, tau, dt = np.array([0.3, -0.4]), np.array([0.2, 0.1]), np.array([0.5, -0.2]), 1e-3
    assert rel_err(reference.mass_matrix(q), ours.mass_matrix(q)) <= 1e-9
    _, qd_next = reference.step(q, qd, tau, dt)
    assert rel_err((qd_next - qd) / dt, ours.forward_dynamics(q, qd, tau)) <= 1e-9


# -- every number read is finite -----------------------------------------------------------------


BASE = robot(link("a"), joint("j1", "base", "a", extra='<dynamics damping="0.1" friction="0.2"/>'))


@pytest.mark.parametrize("old, new, element", [
    ('xyz="0.1 0 0.3"', 'xyz="nan 0 0.3"', "<origin xyz='nan 0 0.3'>"),
    ('rpy="0 0 0"', 'rpy="0 inf 0"', "<origin rpy='0 inf 0'>"),
    ('com="0.1 0.05 -0.02"'.replace("com", "xyz"), 'xyz="0.1 1e999 0"', "<origin xyz='0.1 1e999 0'>"),
    ('<mass value="1.0"/>', '<mass value="nan"/>', "<mass value='nan'>"),
    ('ixx="0.1"', 'ixx="-inf"', "<inertia ixx='-inf'>"),
    ('lower="-3"', 'lower="nan"', "<limit lower='nan'>"),
    ('effort="10"', 'effort="-1e999"', "<limit effort='-1e999'>"),
    ('upper="3"', 'upper="1e999"', "<limit upper='1e999'>"),
    ('velocity="5"', 'velocity="-1"', "<limit velocity='-1'> must be >= 0"),
    ('effort="10"', 'effort="-5"', "<limit effort='-5'> must be >= 0"),
    ('damping="0.1"', 'damping="-0.1"', "<dynamics damping='-0.1'> must be >= 0"),
    ('upper="3"', 'upper="-inf"', "<limit upper='-inf'>"),
    ('damping="0.1"', 'damping="inf"', "<dynamics damping='inf'>"),
    ('friction="0.2"', 'friction="NaN"', "<dynamics friction='NaN'>"),
    ('axis xyz="0 0 1"', 'axis xyz="0 nan 1"', "<axis xyz='0 nan 1'>"),
    ('ixx="0.1"', 'ixx="0.1 0.2"', "<inertia ixx='0.1 0.2'>"),
    ('lower="-3"', 'lower="low"', "<limit lower='low'>"),
])
def test_non_finite_and_malformed_numbers_are_refused_naming_the_element(old, new, element):
    assert old in BASE
    with pytest.raises(dp.URDFError) as info:
        dp.load_urdf_string(BASE.replace(old, new, 1))
    assert element in str(info.value)


def test_infinite_limits_mean_no_limit():
    xml = BASE.replace('lower="-3" upper="3" effort="10" velocity="5"',
                       'lower="-inf" upper="Infinity" effort="inf" velocity="+inf"')
    model = dp.load_urdf_string(xml)
    assert (model.lower[0], model.upper[0], model.effort_limits[0], model.velocity_limits[0]) == \
        (-np.inf, np.inf, np.inf, np.inf)


def test_an_inertial_without_inertia_names_the_link():
    xml = robot('<link name="a"><inertial><mass value="1"/></inertial></link>', joint("j1", "base", "a"))
    with pytest.raises(dp.URDFError, match="link 'a'.*<inertia"):
        dp.load_urdf_string(xml)


def test_links_in_a_loop_beside_the_tree_are_refused():
    xml = robot(link("a"), link("x"), link("y"), joint("j1", "base", "a"),
                joint("jx", "x", "y"), joint("jy", "y", "x"))
    with pytest.raises(dp.URDFError, match=r"\['x', 'y'\] are not connected"):
        dp.load_urdf_string(xml)


# -- lenient where urdfdom is: what plays no part in the dynamics ---------------------------------


LENIENT = [
    ("texture", robot(link("a", extra='<visual><geometry><box size="1 1 1"/></geometry><material name="m">'
                                     '<texture/></material></visual>'), joint("j1", "base", "a"))),
    ("transmission naming another file's joint",
     robot(link("a"), joint("j1", "base", "a"),
           '<transmission name="t"><type>transmission_interface/SimpleTransmission</type>'
           '<joint name="elsewhere"/><actuator name="m"><mechanicalReduction>1</mechanicalReduction>'
           '</actuator></transmission>')),
    ("word as mechanical reduction",
     robot(link("a"), joint("j1", "base", "a"),
           '<transmission name="t"><joint name="j1"/><actuator name="m">'
           '<mechanicalReduction>reduction</mechanicalReduction></actuator></transmission>')),
    ("xml version 0.0", '<?xml version="0.0"?>\n' + robot(link("a"), joint("j1", "base", "a"))),
    ("blank line before the declaration", '\n  <?xml version="1.0" ?>\n' + robot(link("a"), joint("j1", "base", "a"))),
    ("gazebo and sensors", robot(link("a"), joint("j1", "base", "a"),
                                 '<gazebo reference="a"><sensor name="s" type="camera"/></gazebo>')),
]


@pytest.mark.parametrize("label, xml", LENIENT, ids=[label for label, _ in LENIENT])
def test_elements_outside_the_dynamics_are_ignored_as_urdfdom_does(label, xml):
    pin.buildModelFromXML(xml)  # pinocchio (urdfdom) loads it
    model = dp.load_urdf_string(xml)
    assert model.joint_names == ("j1",)


def test_a_latin1_file_loads_and_undecodable_bytes_are_a_urdf_error(tmp_path):
    xml = robot(link("a"), joint("j1", "base", "a")).replace('name="r"', 'name="bras articulé"')
    latin1 = tmp_path / "latin1.urdf"
    latin1.write_bytes(b'<?xml version="1.0" encoding="ISO-8859-1"?>\n' + xml.encode("latin-1"))
    assert dp.load_urdf(latin1).name == "bras articulé"
    broken = tmp_path / "broken.urdf"
    broken.write_bytes(xml.encode("latin-1"))  # no declaration: UTF-8, and é is not UTF-8 here
    with pytest.raises(dp.URDFError, match="malformed XML"):
        dp.load_urdf(broken)


def test_a_chain_of_five_thousand_links_loads_without_recursion():
    """The tree walk is iterative (a recursive walk raised RecursionError near 990 links)."""
    count = 5000
    parts = [link(f"l{i}", inertia=(0.1, 0.1, 0.1)) + joint(f"j{i:05d}", "base" if i == 0 else f"l{i - 1}", f"l{i}",
                                                             axis="0 1 0") for i in range(count)]
    model = dp.load_urdf_string(robot(*parts))
    assert model.n == count
    assert model.parents[-1] == count - 2
    assert model.joint_names[0] == "j00000" and model.joint_names[-1] == f"j{count - 1:05d}"


def test_mimic_joints_are_named_in_one_warning_and_kept_independent():
    xml = robot(link("a"), link("b"), link("c"), joint("j1", "base", "a"),
                joint("j2", "a", "b", extra='<mimic joint="j1" multiplier="2"/>'),
                joint("j3", "a", "c", extra='<mimic joint="gone"/>'))
    with pytest.warns(dp.URDFWarning) as record:
        model = dp.load_urdf_string(xml)
    assert len(record) == 1
    message = str(record[0].message)
    assert "'j2' follows 'j1'" in message and "'j3' follows 'gone' (no such joint)" in message
    assert model.n == pin.buildModelFromXML(xml).nv == 3


@pytest.mark.parametrize("name", dp.list_backends())
def test_every_backend_answers_a_robot_without_moving_joints(name):
    """A model of fixed joints only: empty results of the documented shapes (lagrange_euler
    and the reference adapters used to raise IndexError / ValueError)."""
    xml = robot(link("a"), joint("f", "base", "a", kind="fixed"))
    be = dp.get_backend(name, dp.load_urdf_string(xml))
    one, batch = np.zeros(0), np.zeros((3, 0))
    assert be.inverse_dynamics(one, one, one).shape == (0,)
    assert be.inverse_dynamics(batch, batch, batch).shape == (3, 0)
    assert be.mass_matrix(one).shape == (0, 0)
    assert be.mass_matrix(batch).shape == (3, 0, 0)
    assert be.forward_dynamics(batch, batch, batch).shape == (3, 0)
    assert be.gravity_torques(one).shape == (0,)


def test_an_inertia_that_is_zero_but_for_round_off_is_accepted():
    """iCub's l_ankle_2 (example-robot-data): principal moments ±1.4e-20 kg·m²."""
    xml = robot('<link name="a"><inertial><mass value="0.1"/><inertia ixx="1e-20" ixy="1.2e-20" ixz="0" '
                'iyy="1e-20" iyz="0" izz="1e-21"/></inertial></link>', joint("j1", "base", "a"))
    assert_matches_pinocchio(xml)
    clearly_negative = xml.replace('ixy="1.2e-20"', 'ixy="1.2e-3"').replace('1e-20', '1e-3')
    with pytest.raises(dp.ModelError, match="link 'a'.*not positive semi-definite"):
        dp.load_urdf_string(clearly_negative)


def test_numbers_that_overflow_together_are_refused():
    """Each number finite, their combination not: 1e10 kg at 1e160 m has no finite inertia
    about the link origin."""
    xml = robot(link("a", mass=1e10, com="1e160 0 0"), joint("j1", "base", "a"))
    with pytest.raises(dp.ModelError, match="link 'a'.*not finite"):
        with np.errstate(over="ignore", invalid="ignore"):
            dp.load_urdf_string(xml)


@pytest.mark.parametrize("name", dp.list_backends())
def test_a_joint_moving_nothing_is_named_by_forward_dynamics(name):
    """A leaf link without <inertial>: M is singular, q̈ undefined. Every backend refuses it
    naming the joint and the link (NaN from newton_euler, LinAlgError from lagrange_euler
    before); pybullet gives such a link 1 kg and answers."""
    xml = robot(link("a"), '<link name="b"/>', joint("j1", "base", "a"), joint("j2", "a", "b", axis="0 1 0"))
    with pytest.warns(dp.PhysicalValidityWarning) if name == "pybullet" else contextlib.nullcontext():
        be = dp.get_backend(name, dp.load_urdf_string(xml))
    if name == "pybullet":
        assert np.all(np.isfinite(be.forward_dynamics(np.zeros(2), np.zeros(2), np.ones(2))))
        return
    for q in (np.zeros(2), np.zeros((3, 2))):
        with pytest.raises(dp.ModelError, match="singular.*joints moving no mass or inertia: 'j2'.*links without "
                                                "mass or inertia: 'b'"):
            be.forward_dynamics(q, np.zeros_like(q), np.ones_like(q))


def test_lower_above_upper_means_no_limit_as_in_bullet():
    """pybullet_data's cube_no_rotation.urdf writes lower="1" upper="-1" for free joints."""
    model = dp.load_urdf_string(BASE.replace('lower="-3" upper="3"', 'lower="1" upper="-1"'))
    assert (model.lower[0], model.upper[0]) == (-np.inf, np.inf)


def test_a_joint_about_an_axis_tilted_1e_9_from_its_centre_of_mass_line():
    """The joint moves 1e-18 kg·m² (1 kg at 1 m, axis 1e-9 off that line): M is regular
    with cond 3.7e11. The compiled kernels and the generated code formed the parallel-axis
    term as |c|² − c_z², which cancelled to 0 (q̈ wrong by 12x, or M singular); every
    backend now matches pinocchio's ABA within ε·cond(M)."""
    xml = robot('<link name="b"><inertial><mass value="0"/><inertia ixx="4e-7" iyy="4e-7" izz="4e-7" ixy="0" '
                'ixz="0" iyz="0"/></inertial></link>',
                link("d", mass=1.0, inertia=(0.0833, 0.0833, 0.0), com="0 0 1", rpy="0 0 0"),
                joint("b_joint1", "base", "b", axis="1 0 0", xyz="0 0 0"),
                joint("d_joint3", "base", "d", axis="0 1e-9 1", xyz="0 0 0"))
    model = dp.load_urdf_string(xml)
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    for name in backends(("ours", "generated"), cannot=("friction",)):
        be = dp.get_backend(name, model)
        for _ in range(5):
            q, tau = rng.uniform(-1, 1, 2), rng.normal(size=2)
            M = be.mass_matrix(q)
            assert abs(M[1, 1] - 1.0833e-18) <= 1e-30, name
            reference = pin.aba(pm, pd, q, np.zeros(2), tau)
            tolerance = max(1e-12, 1e-15 * np.linalg.cond(M))
            assert rel_err(be.forward_dynamics(q, np.zeros(2), tau), reference) <= tolerance, name


def test_links_welded_into_one_body_are_checked_as_that_body():
    """A link's inertia may break positivity only inside a larger rigid body that does not:
    a massless rod (one principal moment exactly 0) welded to a point mass 1 m away loads
    (the body's moments carry round-off of m |c|², not of the rod's 1e-6), and matches
    pinocchio; a non-physical link welded to a body too small to hide it is refused."""
    rod = ('<link name="rod"><inertial><origin xyz="0 0 0"/><mass value="0"/><inertia ixx="8.333333333e-06" '
           'iyy="3e-06" izz="5.333333333e-06" ixy="0" ixz="0" iyz="4e-06"/></inertial></link>')
    point = link("point", mass=1.0, inertia=(0.0, 0.0, 0.0), com="0.7 -0.4 0.6")
    xml = robot(rod, point, joint("j1", "base", "rod", axis="1 0 0"),
                joint("weld", "rod", "point", kind="fixed"), link("tip"), joint("j2", "point", "tip"))
    # the rod's tensor, written to 10 digits, is 1.2e-16 kg·m² short of PSD: said, as it is welded
    with pytest.warns(dp.PhysicalValidityWarning, match="'rod'.*not positive semi-definite.*welded"):
        assert_matches_pinocchio(xml)
    bad = ('<link name="rod"><inertial><origin xyz="0 0 0"/><mass value="0.1"/><inertia ixx="1e-3" '
           'iyy="1e-3" izz="1e-3" ixy="2e-3" ixz="0" iyz="0"/></inertial></link>')
    with pytest.warns(dp.PhysicalValidityWarning) as warned, \
            pytest.raises(dp.ModelError, match=r"rigid body of links \['rod', 'point'\].*not positive semi-definite"):
        dp.load_urdf_string(robot(bad, link("point", mass=0.01, inertia=(1e-6, 1e-6, 1e-6)), joint("j1", "base", "rod"),
                                  joint("weld", "rod", "point", kind="fixed")))
    said = [str(w.message) for w in warned]      # the link's two defects, each named (pytest re-emits the unmatched)
    assert len(said) == 2 and all("'rod'" in text for text in said), said
    assert re.search("not positive semi-definite.*welded", said[0]) and "triangle inequality" in said[1], said


@pytest.mark.parametrize("name", dp.list_backends())
def test_every_backend_answers_an_empty_batch_in_the_documented_shapes(name):
    """N = 0 states: (0, n) and (0, n, n) results (the pinocchio adapter returned (0,))."""
    be = dp.get_backend(name, dp.load_robot("puma560"))
    empty = np.zeros((0, 6))
    assert be.inverse_dynamics(empty, empty, empty).shape == (0, 6)
    assert be.mass_matrix(empty).shape == (0, 6, 6)
    assert be.forward_dynamics(empty, empty, empty).shape == (0, 6)
    assert be.frame_jacobian(empty, be.model.frame_names[-1]).shape == (0, 6, 6)
    frame = be.model.frame_names[-1]
    for wrench in (np.zeros((0, 6)), np.ones(6)):     # (N, 6) with N = 0 was refused "for a batch of 1 states"
        assert be.inverse_dynamics(empty, empty, empty, f_ext={frame: wrench}).shape == (0, 6)
        assert be.forward_dynamics(empty, empty, empty, f_ext={frame: wrench}).shape == (0, 6)
    with pytest.raises(dp.InputError, match="no frame 'nowhere'"):
        be.inverse_dynamics(empty, empty, empty, f_ext={"nowhere": np.zeros(6)})
    if type(be).can("derivatives"):
        assert [d.shape for d in be.inverse_dynamics_derivatives(empty, empty, empty)] == [(0, 6, 6)] * 2


def test_lagrange_euler_refuses_a_robot_too_large_for_its_memory(tmp_path, capsys):
    """Its U_ijk is n³·16 numbers per state: 3.2 GiB at n = 300, where a 50-state validate
    asked for 161 GiB and died with a MemoryError; refused by name beyond 1 GiB per state,
    when the backend is made (so that validate lists it as skipped and checks the others),
    and a large robot below that runs in smaller blocks."""
    from urdf_factory import random_tree_urdf
    from dyn_plugin.tools.cli import main

    text = random_tree_urdf(np.random.default_rng(1), 210, name="long")
    with pytest.raises(dp.ModelError, match=r"n = 210 joints need 1\.1 GiB per state for U_ijk; use newton_euler"):
        dp.get_backend("lagrange_euler", dp.load_urdf_string(text))
    (tmp_path / "long.urdf").write_text(text)
    assert main(["validate", "--robot", str(tmp_path / "long.urdf"), "--backend", "newton_euler", "lagrange_euler",
                 "--against", "pinocchio", "--quantity", "tau", "--samples", "2"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "skipped: lagrange_euler: tau: its factory refused the model" in out and "1 comparisons, all passed" in out
    mid = dp.load_urdf_string(random_tree_urdf(np.random.default_rng(2), 40, name="mid"))   # 8 MB: 32 per block
    q, qd, qdd = np.random.default_rng(3).uniform(-2, 2, (3, 40, mid.n))
    ours = dp.get_backend("lagrange_euler", mid).inverse_dynamics(q, qd, qdd)
    ref = dp.get_backend("newton_euler", mid).inverse_dynamics(q, qd, qdd)
    assert np.abs(ours - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("name,floating,call", [
    ("newton_euler_friction", False, "forward_dynamics_derivatives"),
    ("lagrange_euler_friction", False, "forward_dynamics_derivatives"),
    ("newton_euler_friction", True, "inverse_dynamics_derivatives"),
    ("newton_euler_friction", True, "inverse_dynamics"),
    ("lagrange_euler", True, "inverse_dynamics"),
])
def test_an_overflow_inside_a_wrapper_names_the_callers_input(name, floating, call):
    """Every input finite (1e160) and an intermediate overflowing (a q̈ from a forward solve,
    a floating base's shifted q̈): a NumericalError naming the input given, as every other
    path says it; it was an InputError about a 'qdd' the caller never gave, or gave finite."""
    model = dp.load_robot("puma560", floating_base=floating)
    be = dp.get_backend(name, model)
    big = np.full(model.nv, 1e160)
    with pytest.raises(dp.NumericalError, match=rf"{call} of robot 'puma560' overflowed: .* although every input is "
                                                 r"finite .* the largest input there is (tau|qdd) = 1e\+160"):
        getattr(be, call)(model.neutral(), big, big)


def test_pybullet_refuses_bodies_beyond_its_degrees_of_freedom():
    """pybullet's commands carry at most 128 positions and links (MAX_DEGREE_OF_FREEDOM): a
    floating tree of 123 joints got inverse dynamics 0.34 off, silently, and a body of 128
    links no joint state (validate's step: exit 3).  Refused by name; 121 floating joints (128
    positions) still agree with pinocchio."""
    from urdf_factory import random_tree_urdf

    def tree(n, floating):
        text = random_tree_urdf(np.random.default_rng(1), n, name=f"tree{n}", fixed=False)
        return dp.load_urdf_string(text, floating_base=floating)
    for n, floating in ((128, False), (122, True)):
        with pytest.raises(dp.BackendError, match=r"pybullet takes at most 127 links and 128 positions per body"):
            dp.get_backend("pybullet", tree(n, floating))
    from dyn_plugin.sampling import random_states as states_of

    model = tree(121, True)
    s = states_of(model, 2, seed=0)
    assert rel_err(dp.get_backend("pybullet", model).inverse_dynamics(s.q, s.qd, s.qdd),
                   dp.get_backend("pinocchio", model).inverse_dynamics(s.q, s.qd, s.qdd)) < 1e-9


def test_pybullet_reads_a_file_whose_meshes_are_missing(tmp_path):
    """pybullet refuses a whole file when one mesh is missing ("Cannot load URDF file"), and
    validate then skipped every pybullet comparison; its dynamics read only the inertials: the
    geometry-free copy is loaded instead, and agrees with pinocchio."""
    mesh = '<visual><geometry><mesh filename="package://nowhere/arm.stl"/></geometry></visual>'
    xml = robot(link("a", extra=mesh), link("b"), joint("j1", "base", "a"), joint("j2", "a", "b", axis="0 1 0"))
    path = tmp_path / "meshes.urdf"
    path.write_text(xml)
    model = dp.load_robot(str(path))
    q, qd, qdd = np.random.default_rng(0).uniform(-2, 2, (3, 5, model.n))
    assert rel_err(dp.get_backend("pybullet", model).inverse_dynamics(q, qd, qdd),
                   dp.get_backend("pinocchio", model).inverse_dynamics(q, qd, qdd)) < 1e-9
