"""Bad input gives a dyn_plugin error (or warning) that names the culprit.

Messages are matched on the NAME of the element at fault (joint, link, argument) or on
the expected shape, never on whole sentences.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import dyn_plugin as dp
from conftest import OURS
from urdf_factory import random_tree_urdf, write_urdf

GOOD_INERTIAL = """
    <inertial>
      <origin xyz="0.01 0.02 0.1" rpy="0.1 0.2 0.3"/>
      <mass value="{mass}"/>
      <inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/>
    </inertial>"""

DEFAULT_INERTIA = dict(mass=1.5, ixx=0.02, ixy=0.001, ixz=-0.002, iyy=0.03, iyz=0.0005, izz=0.025)


def link(name, **inertial):
    values = dict(DEFAULT_INERTIA, **inertial)
    return f'  <link name="{name}">{GOOD_INERTIAL.format(**values)}\n  </link>\n'


def joint(name, parent, child, jtype="revolute", axis="0 0 1"):
    limit = '<limit lower="-2" upper="2" effort="10" velocity="2"/>' if jtype in ("revolute", "prismatic") else ""
    return (f'  <joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="0 0 0.3" rpy="0 0 0"/><axis xyz="{axis}"/>{limit}</joint>\n')


def robot(*parts, name="bad_robot"):
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "".join(parts) + "</robot>\n"


def arm(upper_link=None, elbow=None):
    """base_link -shoulder_joint-> upper_arm -elbow_joint-> forearm, with replaceable parts."""
    return robot(
        link("base_link"),
        upper_link or link("upper_arm"),
        link("forearm"),
        joint("shoulder_joint", "base_link", "upper_arm"),
        elbow or joint("elbow_joint", "upper_arm", "forearm"),
    )


def test_the_reference_arm_loads():
    model = dp.load_urdf_string(arm())
    assert model.joint_names == ("shoulder_joint", "elbow_joint")


def test_error_hierarchy():
    for cls in (dp.URDFError, dp.ModelError, dp.InputError, dp.UnknownRobotError, dp.BackendError):
        assert issubclass(cls, dp.DynPluginError)
    from dyn_plugin.errors import NumericalError      # float64 overflow of a result: bad (huge) input
    assert issubclass(NumericalError, dp.InputError) and issubclass(NumericalError, ArithmeticError)
    assert issubclass(dp.PhysicalValidityWarning, UserWarning)


# -- URDF structure ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    '<robot name="r"><link name="a"></robot>',           # mismatched tags
    '<robot name="r"><link name="a"/>',                  # truncated
    "",                                                   # empty
    "this is not xml",
], ids=["mismatched-tag", "truncated", "empty", "not-xml"])
def test_malformed_xml(text):
    with pytest.raises(dp.URDFError):
        dp.load_urdf_string(text)


@pytest.mark.parametrize("role", ["parent", "child"])
def test_joint_with_missing_link(role):
    parent, child = ("ghost_link", "forearm") if role == "parent" else ("upper_arm", "ghost_link")
    xml = arm(elbow=joint("elbow_joint", parent, child))
    with pytest.raises(dp.URDFError, match="elbow_joint") as excinfo:
        dp.load_urdf_string(xml)
    assert "ghost_link" in str(excinfo.value)


def test_missing_link_from_file(tmp_path):
    xml = arm(elbow=joint("elbow_joint", "upper_arm", "ghost_link"))
    path = write_urdf(tmp_path, xml)
    with pytest.raises(dp.URDFError, match="elbow_joint") as excinfo:
        dp.load_robot(str(path))
    assert "ghost_link" in str(excinfo.value)


def test_link_with_two_parents():
    xml = robot(
        link("base_link"), link("upper_arm"), link("shared_link"),
        joint("shoulder_joint", "base_link", "upper_arm"),
        joint("elbow_joint", "upper_arm", "shared_link"),
        joint("wrist_joint", "base_link", "shared_link"),
    )
    with pytest.raises(dp.URDFError, match="shared_link"):
        dp.load_urdf_string(xml)


def test_kinematic_loop():
    # base_link -> a -> b -> c -> a : link_a has two parents and the joints close a loop
    xml = robot(
        link("base_link"), link("link_a"), link("link_b"), link("link_c"),
        joint("j_ab", "link_a", "link_b"), joint("j_bc", "link_b", "link_c"),
        joint("j_ca", "link_c", "link_a"), joint("j_base", "base_link", "link_a"),
    )
    with pytest.raises(dp.URDFError, match="link_a"):
        dp.load_urdf_string(xml)


def test_pure_loop_without_root():
    xml = robot(
        link("link_a"), link("link_b"),
        joint("j_ab", "link_a", "link_b"), joint("j_ba", "link_b", "link_a"),
    )
    with pytest.raises(dp.URDFError):
        dp.load_urdf_string(xml)


def test_two_roots():
    xml = robot(
        link("base_link"), link("upper_arm"), link("stray_link"),
        joint("shoulder_joint", "base_link", "upper_arm"),
    )
    with pytest.raises(dp.URDFError, match="stray_link"):
        dp.load_urdf_string(xml)


@pytest.mark.parametrize("jtype", ["ball", "gearbox", ""])
def test_unsupported_joint_type(jtype):
    xml = arm(elbow=joint("elbow_joint", "upper_arm", "forearm", jtype=jtype))
    with pytest.raises(dp.URDFError, match="elbow_joint") as excinfo:
        dp.load_urdf_string(xml)
    assert f"type {jtype!r}" in str(excinfo.value) and "spherical" in str(excinfo.value)


def test_what_a_joint_of_several_degrees_of_freedom_cannot_take():
    """A planar joint moves in its frame's x-y plane (pinocchio ignores another axis: refused
    here); one <dynamics> number or a <mimic> for several degrees of freedom is refused."""
    with pytest.raises(dp.URDFError, match=r"elbow_joint.*planar.*axis xyz='1 0 0'"):
        dp.load_urdf_string(arm(elbow=joint("elbow_joint", "upper_arm", "forearm", jtype="planar", axis="1 0 0")))
    assert dp.load_urdf_string(arm(elbow=joint("elbow_joint", "upper_arm", "forearm", jtype="planar"))).nq == 4
    damped = joint("elbow_joint", "upper_arm", "forearm", jtype="spherical").replace(
        "</joint>", '<dynamics damping="0.1"/></joint>')
    with pytest.raises(dp.URDFError, match=r"elbow_joint.*spherical.*<dynamics>"):
        dp.load_urdf_string(arm(elbow=damped))
    mimicking = joint("elbow_joint", "upper_arm", "forearm", jtype="floating").replace(
        "</joint>", '<mimic joint="shoulder_joint"/></joint>')
    with pytest.raises(dp.URDFError, match=r"elbow_joint.*floating.*<mimic>"):
        dp.load_urdf_string(arm(elbow=mimicking))


def test_zero_axis():
    xml = arm(elbow=joint("elbow_joint", "upper_arm", "forearm", axis="0 0 0"))
    with pytest.raises(dp.URDFError, match="elbow_joint"):
        dp.load_urdf_string(xml)


# -- physical validity -------------------------------------------------------------------------


def test_negative_mass():
    xml = arm(upper_link=link("upper_arm", mass=-2.0))
    with pytest.raises(dp.ModelError, match="upper_arm"):
        dp.load_urdf_string(xml)


@pytest.mark.parametrize("inertia", [
    dict(ixx=-0.02),                                        # negative diagonal
    dict(ixx=0.1, iyy=0.1, izz=0.1, ixy=0.2, ixz=0, iyz=0),  # positive diagonal, eigenvalue -0.1
], ids=["negative-diagonal", "indefinite-products"])
def test_inertia_not_positive_definite(inertia):
    xml = arm(upper_link=link("upper_arm", **inertia))
    with pytest.raises(dp.ModelError, match="upper_arm"):
        dp.load_urdf_string(xml)


def _rotated(p, axis):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    # a rotation taking z to `axis`
    z = np.array([0.0, 0.0, 1.0])
    v, c = np.cross(z, axis), float(z @ axis)
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    R = np.eye(3) + K + K @ K / (1 + c)
    inertia = R @ np.diag(p) @ R.T
    return dict(ixx=inertia[0, 0], iyy=inertia[1, 1], izz=inertia[2, 2],
                ixy=inertia[0, 1], ixz=inertia[0, 2], iyz=inertia[1, 2])


# principal moments (1, 1, 2.2): 2.2 > 1 + 1.  Rotated so that the largest moment lies
# along (1, 1, 1): then the DIAGONAL entries satisfy the triangle inequality, only the
# principal moments break it.
TRIANGLE_BREAKS = {
    "diagonal": dict(ixx=0.01, iyy=0.01, izz=0.022, ixy=0, ixz=0, iyz=0),
    "rotated": _rotated([0.01, 0.01, 0.022], [1, 1, 1]),
}


@pytest.mark.parametrize("inertia", TRIANGLE_BREAKS.values(), ids=TRIANGLE_BREAKS.keys())
def test_triangle_inequality_warns(inertia):
    xml = arm(upper_link=link("upper_arm", **inertia))
    with pytest.warns(dp.PhysicalValidityWarning, match="upper_arm"):
        model = dp.load_urdf_string(xml)
    assert model.n == 2  # a warning, not an error: the model is still built


def test_valid_inertia_does_not_warn():
    xml = random_tree_urdf(np.random.default_rng(7), 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dp.PhysicalValidityWarning)
        dp.load_urdf_string(xml)


# -- arrays --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model6():
    return dp.load_urdf_string(random_tree_urdf(np.random.default_rng(3), 6, name="six"))


SHAPE = r"\(6,\)|\(N, 6\)"


def _names_argument(message, arg):
    return re.search(rf"(?<![\w]){arg}(?![\w])", message) is not None


@pytest.mark.parametrize("name", OURS)
@pytest.mark.parametrize("method,args,culprit", [
    ("inverse_dynamics", dict(q=(5,), qd=(6,), qdd=(6,)), "q"),
    ("inverse_dynamics", dict(q=(6,), qd=(7,), qdd=(6,)), "qd"),
    ("inverse_dynamics", dict(q=(4, 6), qd=(4, 6), qdd=(4, 5)), "qdd"),
    ("forward_dynamics", dict(q=(6,), qd=(6,), tau=(6, 1)), "tau"),
    ("mass_matrix", dict(q=(2, 3, 6)), "q"),
    ("mass_matrix", dict(q=(6, 5)), "q"),
    ("gravity_torques", dict(q=()), "q"),
    ("bias_forces", dict(q=(6,), qd=(3, 2)), "qd"),
    ("coriolis_matrix", dict(q=(3,), qd=(6,)), "q"),
], ids=lambda x: x if isinstance(x, str) else None)
def test_wrong_shape(model6, name, method, args, culprit):
    be = dp.get_backend(name, model6)
    arrays = {k: np.zeros(shape) for k, shape in args.items()}
    with pytest.raises(dp.InputError, match=SHAPE) as excinfo:
        getattr(be, method)(**arrays)
    assert _names_argument(str(excinfo.value), culprit), str(excinfo.value)


@pytest.mark.parametrize("name", OURS)
def test_batch_sizes_differ(model6, name):
    be = dp.get_backend(name, model6)
    with pytest.raises(dp.InputError):
        be.inverse_dynamics(np.zeros((3, 6)), np.zeros((4, 6)), np.zeros((3, 6)))


@pytest.mark.parametrize("name", OURS)
@pytest.mark.parametrize("method,culprit,bad", [
    ("inverse_dynamics", "q", np.nan),
    ("inverse_dynamics", "qd", np.inf),
    ("inverse_dynamics", "qdd", np.nan),
    ("forward_dynamics", "tau", np.nan),
    ("mass_matrix", "q", np.nan),
    ("gravity_torques", "q", -np.inf),
])
def test_non_finite(model6, name, method, culprit, bad):
    be = dp.get_backend(name, model6)
    argnames = {"inverse_dynamics": ("q", "qd", "qdd"), "forward_dynamics": ("q", "qd", "tau"),
                "mass_matrix": ("q",), "gravity_torques": ("q",)}[method]
    arrays = {k: np.full((2, 6), 0.1) for k in argnames}
    arrays[culprit][1, 3] = bad
    with pytest.raises(dp.InputError) as excinfo:
        getattr(be, method)(**arrays)
    assert _names_argument(str(excinfo.value), culprit), str(excinfo.value)
    # single state too
    single = {k: v[1] for k, v in arrays.items()}
    with pytest.raises(dp.InputError) as excinfo:
        getattr(be, method)(**single)
    assert _names_argument(str(excinfo.value), culprit), str(excinfo.value)


# -- names -----------------------------------------------------------------------------------------


def test_unknown_robot():
    with pytest.raises(dp.UnknownRobotError, match="puma560") as excinfo:
        dp.load_robot("no_such_robot")
    assert "no_such_robot" in str(excinfo.value)


def test_unknown_robot_path(tmp_path):
    with pytest.raises(dp.UnknownRobotError, match="missing_robot"):
        dp.load_robot(str(tmp_path / "missing_robot.urdf"))


def test_unknown_backend(model6):
    with pytest.raises(dp.BackendError, match="newton_euler") as excinfo:
        dp.get_backend("featherstone", model6)
    message = str(excinfo.value)
    assert "featherstone" in message and "lagrange_euler" in message


@pytest.mark.parametrize("error", [1e-11, 9e-6, -5.6e-8])
def test_a_joint_axis_that_is_not_a_unit_vector_is_refused(error):
    """Backends read a model's axes as unit vectors (pinocchio's, which reads it through a
    URDF, normalises them): an axis 1 + 9e-6 long made newton_euler and pinocchio disagree by
    4.4e-5, and was accepted (allclose's default rtol of 1e-5 beside atol 1e-12)."""
    import dataclasses

    model = dp.load_robot("puma560")
    axes = model.axes.copy()
    axes[2] *= 1 + error
    with pytest.raises(dp.ModelError, match=rf"joint {model.joint_names[2]!r}: axis .* is not a unit vector"):
        dataclasses.replace(model, axes=axes)
    axes[2] = model.axes[2] * (1 + 1e-13)                 # rounding: accepted
    assert dataclasses.replace(model, axes=axes).n == model.n


def test_a_xacro_file_is_told_to_be_expanded_first():
    """A .xacro file's ${...} values: the error said only 'must be a number'."""
    text = ('<robot name="x" xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:property name="m" value="2"/>'
            '<link name="base"><inertial><mass value="${m}"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" '
            'iyz="0"/></inertial></link></robot>')
    with pytest.raises(dp.URDFError, match=r"<mass value='\$\{m\}'> must be a number \(xacro's .*expand the file first"):
        dp.load_urdf_string(text)


@pytest.mark.parametrize("gravity", [np.array([1 + 2j, 0, -9.81]), "down", {"z": -9.81}, [True, 0, 0], [0, 0, np.nan],
                                     [[0, 0, -9.81]]])
def test_gravity_that_is_not_three_finite_real_numbers(gravity):
    """A complex gravity became its real part with only numpy's ComplexWarning; a string or a
    dict gave numpy's ValueError or TypeError.  One ModelError now, wherever gravity is given:
    a backend, the URDF reader, a DH table, the potential energy."""
    from dyn_plugin.dh import DHRow
    from dyn_plugin.simulate import potential_energy

    model = dp.load_robot("scara")
    calls = [lambda: dp.get_backend("newton_euler", model, gravity=gravity),
             lambda: dp.load_urdf_string(model.source_urdf, gravity=gravity),
             lambda: dp.model_from_dh([DHRow("revolute", 0.0, 0.3, 0.0, 0.0, 1.0, inertia=(0.1, 0.1, 0.1, 0, 0, 0))],
                                      "standard", gravity=gravity),
             lambda: potential_energy(model, np.zeros((1, model.n)), gravity=gravity)]
    for call in calls:
        with pytest.raises(dp.ModelError, match="gravity must be 3 finite real numbers"):
            call()
