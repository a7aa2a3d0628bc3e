"""What a caller can get wrong, refused by name instead of answered wrongly.

* joint-space arrays that are not real numbers (complex, text, booleans, objects);
* results that are not finite although every input is (q̇ = 1e300 overflows float64):
  a NaN never leaves the library, on the compiled single-state path, the batch path and
  the friction backends alike;
* friction parameters: a static (breakaway) level below the Coulomb level, and values
  given per joint name (a dict, from Python or from a data file).

Messages are matched on the names at fault (argument, key, joint), not on sentences.
"""

from __future__ import annotations

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.errors import NumericalError
from dyn_plugin.friction.models import VelocityFriction
from dyn_plugin.friction.parameters import FrictionModel, load_friction
from conftest import OURS as RIGID
from conftest import WITH_FRICTION

OURS = RIGID + WITH_FRICTION


@pytest.fixture(scope="module")
def puma():
    return dp.load_robot("puma560")


@pytest.fixture(scope="module", params=OURS + ("newton_euler_numpy",))
def backend(request, puma):
    if request.param == "newton_euler_numpy":
        return dp.get_backend("newton_euler", puma, compiled=False)
    return dp.get_backend(request.param, puma)


ARGUMENTS = {"inverse_dynamics": ("q", "qd", "qdd"), "forward_dynamics": ("q", "qd", "tau"),
             "mass_matrix": ("q",), "bias_forces": ("q", "qd"), "gravity_torques": ("q",),
             "coriolis_matrix": ("q", "qd")}


def _state(method, n, batch=None):
    shape = (n,) if batch is None else (batch, n)
    return {k: np.full(shape, 0.3) for k in ARGUMENTS[method]}


# -- 1. joint-space arrays that are not real numbers ------------------------------------------

NOT_REAL = {
    "complex": (lambda x: x + 1j, "complex"),
    "complex-zero-imaginary": (lambda x: x.astype(complex), "complex"),
    "complex-list": (lambda x: [complex(v) for v in x.ravel()] if x.ndim == 1 else [[complex(v) for v in r] for r in x],
                     "complex"),
    "text": (lambda x: x.astype(str), "text"),
    "bool": (lambda x: x > 0, "bool"),
    "object-none": (lambda x: np.where(np.arange(x.shape[-1]) == 2, None, x).astype(object), "None"),
}


@pytest.mark.parametrize("kind", list(NOT_REAL))
@pytest.mark.parametrize("method", ["inverse_dynamics", "forward_dynamics", "mass_matrix", "bias_forces",
                                    "gravity_torques", "coriolis_matrix"])
@pytest.mark.parametrize("batch", [None, 3], ids=["single", "batch"])
def test_not_real_numbers_are_refused_by_name(backend, method, kind, batch):
    make, fragment = NOT_REAL[kind]
    arrays = _state(method, backend.model.n, batch)
    culprit = ARGUMENTS[method][-1]
    arrays[culprit] = make(arrays[culprit])
    with pytest.raises(dp.InputError, match=fragment) as info:
        getattr(backend, method)(**arrays)
    assert str(info.value).startswith(f"{culprit} "), str(info.value)


def test_numbers_of_other_real_types_are_still_accepted(puma):
    be = dp.get_backend("newton_euler", puma)
    q = np.linspace(-1, 1, 6).astype(np.float32).astype(float)      # exactly representable in float32
    expected = be.inverse_dynamics(q, q, q)
    # other dtypes and lists take the validating batch path: equal to the single-state kernel to 1e-12
    for convert in (lambda x: x.astype(np.float32), list, lambda x: x.astype(object), lambda x: x.tolist()):
        np.testing.assert_allclose(be.inverse_dynamics(convert(q), convert(q), convert(q)), expected,
                                   rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(be.inverse_dynamics([0, 1, 2, 0, 1, 2], np.zeros(6, int), np.zeros(6, np.uint8)),
                               be.inverse_dynamics(np.array([0.0, 1, 2, 0, 1, 2]), np.zeros(6), np.zeros(6)),
                               rtol=1e-12, atol=1e-12)


def test_friction_torque_refuses_complex_velocities():
    with pytest.raises(dp.InputError, match="qd .*complex"):
        VelocityFriction.create(2, viscous=1.0).torque(np.array([1.0, 2.0j]))


def test_non_finite_input_names_the_joint(puma):
    be = dp.get_backend("newton_euler", puma)
    qd = np.zeros(6)
    qd[4] = np.nan
    with pytest.raises(dp.InputError, match="qd .*joint5"):
        be.inverse_dynamics(np.zeros(6), qd, np.zeros(6))


# -- 2. results that are not finite -----------------------------------------------------------

OVERFLOWING = {   # method -> the argument made huge (the others stay moderate): q̇² overflows
    "inverse_dynamics": "qd",
    "forward_dynamics": "qd",
    "bias_forces": "qd",
}


@pytest.mark.parametrize("method", list(OVERFLOWING))
@pytest.mark.parametrize("batch", [None, 4], ids=["single", "batch"])
def test_overflow_is_an_error_not_a_nan(backend, method, batch):
    n = backend.model.n
    arrays = _state(method, n, batch)
    culprit = OVERFLOWING[method]
    if batch is None:
        arrays[culprit][1] = 1e300
    else:
        arrays[culprit][2, 1] = 1e300
    with pytest.raises(NumericalError) as info:
        getattr(backend, method)(**arrays)
    message = str(info.value)
    assert method in message and f"{culprit} = 1e+300" in message and "joint2" in message, message
    if batch is not None:
        assert "state 2" in message, message
    assert isinstance(info.value, dp.DynPluginError) and isinstance(info.value, ArithmeticError)


@pytest.mark.parametrize("method", ["inverse_dynamics", "forward_dynamics"])
def test_huge_acceleration_or_torque_overflows_clearly(backend, method):
    culprit = {"inverse_dynamics": "qdd", "forward_dynamics": "tau"}[method]
    arrays = _state(method, backend.model.n)
    arrays[culprit][:] = 1e308
    with pytest.raises(NumericalError, match=culprit):
        getattr(backend, method)(**arrays)


def test_large_but_representable_results_are_returned(puma):
    """1e100 rad/s squares to 1e200: finite, so answered (and the same by both algorithms)."""
    q, qd = np.full(6, 0.3), np.full(6, 1e100)
    ne = dp.get_backend("newton_euler", puma).inverse_dynamics(q, qd, np.zeros(6))
    le = dp.get_backend("lagrange_euler", puma).inverse_dynamics(q, qd, np.zeros(6))
    assert np.all(np.isfinite(ne)) and np.abs(ne).max() > 1e190
    np.testing.assert_allclose(ne, le, rtol=1e-9, atol=1e-9 * np.abs(le).max())


@pytest.mark.parametrize("batch", [None, 3], ids=["single", "batch"])
def test_coriolis_matrix_is_linear_in_qd_without_overflowing(backend, batch):
    """C(q, q̇) is linear in q̇: at q̇ = 1e300 u it is 1e300 C(q, u), finite, where polarising
    h(q̇ ± s e_j) directly would square 1e300 and return NaN."""
    rng = np.random.default_rng(3)
    n = backend.model.n
    q, u = rng.uniform(-1, 1, (2, n) if batch is None else (2, batch, n))
    small = backend.coriolis_matrix(q, u)
    huge = backend.coriolis_matrix(q, 1e300 * u)
    assert np.all(np.isfinite(huge))
    np.testing.assert_allclose(huge / 1e300, small, rtol=1e-9, atol=1e-9 * np.abs(small).max())


LONG_REACH = """<?xml version="1.0"?>
<robot name="long_reach">
  <link name="base"/>
  <link name="arm"><inertial><mass value="1"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="hand"><inertial><mass value="10"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="swing" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="revolute"><parent link="arm"/><child link="hand"/><origin xyz="1e154 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


@pytest.mark.parametrize("name", RIGID)
def test_mass_matrix_overflow_names_the_joint(name):
    """M_swing,swing = 10 kg · (1e154 m)² overflows whatever q is: the model is at fault,
    every number in it is finite, and the error says where."""
    try:
        model = dp.load_urdf_string(LONG_REACH)
    except dp.ModelError:
        pytest.skip("the URDF reader refuses such a reach")
    be = dp.get_backend(name, model)
    for q in (np.zeros(2), np.zeros((3, 2))):
        with pytest.raises(NumericalError, match="mass_matrix.*swing"):
            be.mass_matrix(q)


def test_compiled_single_state_kernels_report_an_overflow(puma):
    """The kernels flag a non-finite result themselves (status != 0), at no cost to the
    Python fast path; the caller then takes the validating path, which raises."""
    be = dp.get_backend("newton_euler", puma)
    q, qd, out = np.full(6, 0.3), np.full(6, 1e300), np.empty(6)
    assert be._inverse_entry(be._packed, q, qd, q, out) != 0           # the entry points one state goes to
    assert be._bias_entry(be._packed, q, qd, out) != 0
    assert be._forward_entry(be._packed, q, qd, q, out) != 0
    assert be._inverse_entry(be._packed, q, q, q, out) == 0 and np.all(np.isfinite(out))
    with pytest.raises(NumericalError):
        be.inverse_dynamics(q, qd, q)


def test_symbolic_numba_single_state_does_not_leak_nan(puma):
    be = dp.get_backend("symbolic_numba", puma)
    q = np.full(6, 0.3)
    with pytest.raises(NumericalError, match="qd"):
        be.inverse_dynamics(q, np.full(6, 1e300), q)
    with pytest.raises(NumericalError, match="qd"):
        be.bias_forces(q, np.full(6, 1e300))


# -- 3. friction: static level below the Coulomb level ----------------------------------------


@pytest.mark.parametrize("kwargs, names", [
    (dict(coulomb=2.0, static=0.0), ("static", "coulomb")),
    (dict(coulomb=[1.0, 2.0, 1.0], static=[1.5, 1.0, 1.0]), ("static", "coulomb")),
    (dict(coulomb=1.0, coulomb_negative=3.0, static_negative=2.0), ("static_negative", "coulomb_negative")),
    (dict(coulomb=1.0, coulomb_negative=3.0, static=2.0), ("static_negative", "coulomb_negative")),
])
def test_static_level_below_coulomb_is_refused(kwargs, names):
    with pytest.raises(dp.ModelError) as info:
        VelocityFriction.create(3, **kwargs)
    message = str(info.value)
    assert all(name in message for name in names), message
    assert "joint" in message, message


def test_static_below_coulomb_names_the_joint_and_both_values(puma):
    static = [30.0, 13.59, 7.09, 0.5, 0.67, 0.30]        # joint4: 0.5 below its Coulomb 0.85
    coulomb = [24.73, 13.59, 7.09, 0.85, 0.67, 0.30]
    with pytest.raises(dp.ModelError) as info:
        FrictionModel.create(puma, coulomb=coulomb, static=static)
    message = str(info.value)
    assert "joint4" in message and "0.5" in message and "0.85" in message, message


@pytest.mark.parametrize("kwargs", [
    dict(coulomb=2.0),                                      # static defaults to Coulomb
    dict(coulomb=2.0, static=2.0),
    dict(coulomb=2.0, static=3.0, coulomb_negative=1.0),    # static_negative defaults to static
    dict(coulomb=[1, 2, 3], coulomb_negative=[3, 2, 1]),    # asymmetric, no peak
    dict(coulomb=1.0, coulomb_negative=3.0, static=1.5, static_negative=3.5),
])
def test_static_at_or_above_coulomb_is_accepted(kwargs):
    velocity = VelocityFriction.create(3, **kwargs)
    assert np.all(velocity.static_positive >= velocity.coulomb_positive)
    assert np.all(velocity.static_negative >= velocity.coulomb_negative)


# -- 4. friction values per joint name ----------------------------------------------------------


def test_friction_dicts_are_mapped_by_joint_name(puma):
    friction = FrictionModel.create(puma, viscous={"joint2": 1.5, "joint5": 0.25}, coulomb={"joint1": 3.0},
                                    static={"joint1": 4.0}, armature={"joint6": 0.01})
    np.testing.assert_array_equal(friction.velocity.viscous, [0, 1.5, 0, 0, 0.25, 0])
    np.testing.assert_array_equal(friction.velocity.coulomb_positive, [3.0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(friction.velocity.static_positive, [4.0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(friction.armature, [0, 0, 0, 0, 0, 0.01])
    # joints missing from a dict take the parameter's default: static -> that joint's Coulomb level
    mixed = FrictionModel.create(puma, coulomb=[1, 2, 3, 4, 5, 6], static={"joint3": 3.5})
    np.testing.assert_array_equal(mixed.velocity.static_positive, [1, 2, 3.5, 4, 5, 6])
    np.testing.assert_array_equal(mixed.velocity.static_negative, [1, 2, 3.5, 4, 5, 6])
    be = dp.get_backend("newton_euler_friction", puma, friction=friction)
    assert be.friction is friction


def test_friction_dict_with_an_unknown_joint_names_it(puma):
    with pytest.raises(dp.ModelError) as info:
        FrictionModel.create(puma, viscous={"joint2": 1.0, "elbow": 2.0})
    message = str(info.value)
    assert "viscous" in message and "'elbow'" in message and "joint1" in message, message


def test_friction_dict_without_joint_names_says_what_to_pass():
    with pytest.raises(dp.ModelError, match="viscous.*joint names"):
        FrictionModel.create(6, viscous={"joint2": 1.0})


def test_friction_dict_with_a_bad_value_names_key_and_joint(puma):
    with pytest.raises(dp.ModelError, match="coulomb.*joint3"):
        FrictionModel.create(puma, coulomb={"joint3": -1.0})
    with pytest.raises(dp.ModelError, match="coulomb.*joint3"):
        FrictionModel.create(puma, coulomb={"joint3": "a lot"})


def test_friction_made_for_other_joints_is_refused(puma):
    """A FrictionModel built from joint names remembers them; a robot whose joints are
    named otherwise is refused (the count alone matching is not enough)."""
    friction = FrictionModel.create([f"axis{i}" for i in range(1, 7)], viscous={"axis2": 1.0})
    assert friction.joint_names == tuple(f"axis{i}" for i in range(1, 7))
    with pytest.raises(dp.ModelError, match="axis1.*joint1|joint1.*axis1"):
        dp.get_backend("newton_euler_friction", puma, friction=friction)
    assert FrictionModel.create(puma, viscous=1.0).joint_names == puma.joint_names
    assert FrictionModel.create(6, viscous=1.0).joint_names is None     # by count: any 6-joint robot


def _friction_file(tmp_path, profile_body: str):
    path = tmp_path / "arm_friction.toml"
    path.write_text(f'default_profile = "p"\n[profiles.p]\n{profile_body}\n')
    return path


def test_data_file_accepts_values_per_joint_name(tmp_path, puma):
    path = _friction_file(tmp_path, 'viscous = { joint2 = 1.5 }\ncoulomb = 1.0\nstatic = { joint6 = 2.0 }')
    friction = load_friction(path, puma)
    np.testing.assert_array_equal(friction.velocity.viscous, [0, 1.5, 0, 0, 0, 0])
    np.testing.assert_array_equal(friction.velocity.static_positive, [1, 1, 1, 1, 1, 2.0])
    be = dp.get_backend("lagrange_euler_friction", puma, friction=str(path))
    np.testing.assert_array_equal(be.friction.velocity.viscous, friction.velocity.viscous)


@pytest.mark.parametrize("body, fragments", [
    ('viscous = { joint2 = 1.5, wrist = 2.0 }', ("viscous", "'wrist'")),
    ('viscous = { joint2 = "fast" }', ("viscous", "joint2")),
    ('coulomb = [1, 2, 3, 4, 5, 6]\nstatic = [1, 2, 3, 3.5, 5, 6]', ("static", "joint4", "3.5", "4")),
    ('coulomb = { joint3 = -2.0 }', ("coulomb", "joint3")),
])
def test_data_file_errors_name_file_key_and_joint(tmp_path, puma, body, fragments):
    path = _friction_file(tmp_path, body)
    with pytest.raises(dp.ModelError) as info:
        load_friction(path, puma)
    message = str(info.value)
    assert path.name in message and "'p'" in message, message
    assert all(fragment in message for fragment in fragments), message
