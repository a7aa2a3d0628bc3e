"""Friction models: the properties of the sources (Schilling, Fundamentals of Robotics,
eq. 6-3-3; Dhanaraj's thesis, ch. 3), hand-computed bearing cases, and the compiled
velocity-friction law (dyn_plugin.friction.law.compiled / single) against its numpy form."""

import dataclasses

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.friction import (EfficiencyCurve, TransmissionFriction, VelocityFriction, direction, journal_bearing,
                                 journal_bearing_pair, linear_bearing, thrust_bearing, transmission_input_torque)
from dyn_plugin.friction import law
from dyn_plugin.friction.parameters import FrictionModel

RNG = np.random.default_rng(0)


def schilling(qd, bv, bd, bs, eps):
    """Schilling eq. 6-3-3 transcribed: b = b_v q̇ + sgn(q̇) (b_d + (b_s − b_d) exp(−|q̇|/ε))."""
    return bv * qd + np.sign(qd) * (bd + (bs - bd) * np.exp(-np.abs(qd) / eps))


def test_schilling_model_as_printed():
    model = VelocityFriction.create(1, viscous=0.3, coulomb=1.2, static=2.0, stribeck_velocity=0.05)
    for qd in (-3.0, -0.01, 0.0, 1e-4, 0.2, 5.0):
        assert model.torque(np.array([qd]))[0] == pytest.approx(schilling(qd, 0.3, 1.2, 2.0, 0.05), abs=1e-15)


def test_tends_to_plus_minus_static_level_at_rest():
    model = VelocityFriction.create(2, viscous=[0.5, 0.1], coulomb=[1.0, 0.4], coulomb_negative=[1.5, 0.2],
                                    static=[2.0, 0.6], static_negative=[2.5, 0.3], stribeck_velocity=0.1)
    tiny = 1e-12
    np.testing.assert_allclose(model.torque(np.array([tiny, tiny])), [2.0, 0.6], rtol=1e-9)
    np.testing.assert_allclose(model.torque(np.array([-tiny, -tiny])), [-2.5, -0.3], rtol=1e-9)
    np.testing.assert_array_equal(model.torque(np.zeros(2)), [0.0, 0.0])  # sgn(0) = 0
    # far from rest only viscous + Coulomb remain
    np.testing.assert_allclose(model.torque(np.array([10.0, -10.0])), [0.5 * 10 + 1.0, -0.1 * 10 - 0.2], rtol=1e-12)


def test_dissipative_for_non_negative_parameters():
    for _ in range(20):
        n = 4
        coulomb, coulomb_negative = RNG.uniform(0, 3, n), RNG.uniform(0, 3, n)
        model = VelocityFriction.create(n, viscous=RNG.uniform(0, 2, n), coulomb=coulomb,
                                        coulomb_negative=coulomb_negative, static=coulomb + RNG.uniform(0, 2, n),
                                        static_negative=coulomb_negative + RNG.uniform(0, 2, n),
                                        stribeck_velocity=RNG.uniform(0.01, 1, n), smoothing=RNG.choice([0.0, 0.05]))
        qd = RNG.normal(scale=2, size=(50, n))
        assert np.all(qd * model.torque(qd) >= 0)


def test_smooth_variant_converges_to_sharp():
    sharp = VelocityFriction.create(1, viscous=0.2, coulomb=1.0, static=1.5, stribeck_velocity=0.1)
    qd = np.concatenate([-np.logspace(-3, 1, 40), np.logspace(-3, 1, 40)])[:, None]
    errors = []
    for width in (1e-2, 1e-3, 1e-4, 1e-5):
        smooth = dataclasses.replace(sharp, smoothing=width)
        errors.append(np.max(np.abs(smooth.torque(qd) - sharp.torque(qd))))
    assert errors[-1] < 1e-12 and all(a > b for a, b in zip(errors, errors[1:]))


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(viscous=-0.1), "viscous"),
    (dict(coulomb=[1.0, -1.0, 0.0]), "coulomb"),
    (dict(static=np.nan), "static"),
    (dict(stribeck_velocity=0.0), "stribeck_velocity"),
    (dict(viscous=[1.0, 2.0]), r"one per joint \(3\)"),
    (dict(smoothing=-1.0), "smoothing"),
    (dict(smoothing={"j": 0.1}), "smoothing"),
    (dict(coulomb=2.0, static=0.0), "static.*joint index 0.*coulomb"),        # breakaway below sliding
    (dict(coulomb=1.0, coulomb_negative=[1.0, 2.0, 1.0], static_negative=1.5), "static_negative.*joint index 1"),
    (dict(viscous=["0.1", "0.2", "0.3"]), "viscous.*joint index 0.*'0.1'"),   # text is not parsed
    (dict(coulomb=True), "coulomb"),
    (dict(viscous={"joint1": 1.0}), "viscous.*joint names"),                  # by name needs the names
])
def test_bad_velocity_friction_parameters(kwargs, fragment):
    with pytest.raises(dp.ModelError, match=fragment):
        VelocityFriction.create(3, **kwargs)


def test_wrong_velocity_shape_names_the_expected_shape():
    with pytest.raises(dp.InputError, match=r"qd must have shape \(3,\) or \(N, 3\)"):
        VelocityFriction.create(3, viscous=1.0).torque(np.zeros(4))


# -- bearings ----------------------------------------------------------------------------


def test_pure_radial_load():
    """A radial force only: every journal form gives μ r |F_N| (eqs. 3.1-3.3)."""
    f, n = np.array([3.0, -4.0, 7.0]), np.zeros(3)
    assert journal_bearing(f, 0.1, 0.08) == pytest.approx(0.1 * 0.08 * 5.0)
    assert journal_bearing_pair(f, n, 0.1, 0.08, 0.2) == pytest.approx(0.1 * 0.08 * 5.0)
    assert journal_bearing_pair(f, n, 0.1, 0.08, 0.2, printed=True) == pytest.approx(0.1 * 0.08 * 5.0)
    # linear bearing: (μ/d)(|½d fx| + |½d fy|)·2 = μ(|fx| + |fy|)
    assert linear_bearing(f, n, 0.1, 0.2) == pytest.approx(0.1 * (3.0 + 4.0))


def test_pure_moment():
    """A bending moment only is reacted by a bearing couple |F| d: |τ_f| = 2 μ r |n⊥| / d."""
    f, n = np.zeros(3), np.array([0.6, 0.8, 5.0])  # n_z is the drive torque: it loads no bearing
    assert journal_bearing_pair(f, n, 0.1, 0.07, 0.25) == pytest.approx(2 * 0.1 * 0.07 * 1.0 / 0.25)
    assert journal_bearing(f, 0.1, 0.07) == 0.0


def test_pure_thrust():
    f = np.array([0.0, 0.0, -12.0])
    assert thrust_bearing(f, 0.1, 0.05) == pytest.approx(0.1 * 0.05 * 12.0)
    assert journal_bearing_pair(f, np.zeros(3), 0.1, 0.05, 0.2) == 0.0


def test_journal_pair_is_invariant_under_rotation_about_the_axis():
    """The statics form depends only on the load, not on how the frame is turned about z;
    the printed eq. 3.3 does not have this property (see journal_bearing_pair's docstring)."""
    f, n = RNG.normal(size=(100, 3)), RNG.normal(size=(100, 3))
    angle = RNG.uniform(0, 2 * np.pi, 100)
    c, s = np.cos(angle), np.sin(angle)
    Rz = np.zeros((100, 3, 3))
    Rz[:, 0, 0], Rz[:, 0, 1], Rz[:, 1, 0], Rz[:, 1, 1], Rz[:, 2, 2] = c, -s, s, c, 1
    f2, n2 = np.einsum("kij,kj->ki", Rz, f), np.einsum("kij,kj->ki", Rz, n)
    np.testing.assert_allclose(journal_bearing_pair(f2, n2, 0.1, 0.1, 0.3),
                               journal_bearing_pair(f, n, 0.1, 0.1, 0.3), rtol=1e-12)
    printed = journal_bearing_pair(f2, n2, 0.1, 0.1, 0.3, printed=True)
    assert np.max(np.abs(printed - journal_bearing_pair(f, n, 0.1, 0.1, 0.3, printed=True))) > 1e-3


# -- transmission ----------------------------------------------------------------------


CURVE = EfficiencyCurve([0.0, 0.05, 0.2, 1.0], [0.3, 0.5, 0.75, 0.85])


def test_transmission_four_cases_of_table_3_2():
    eta = CURVE(np.array(20.0 / 100.0))  # |τ_out| / τ_rated = 0.2 -> 0.75
    assert eta == pytest.approx(0.75)
    cases = {  # (τ_out, q̇): τ_in
        (20.0, 1.0): 20.0 / 0.75 + 2.0,     # case 1: driving, positive
        (-20.0, -1.0): -20.0 / 0.75 - 2.0,  # case 2: driving, negative
        (20.0, -1.0): 20.0 * 0.75 - 2.0,    # case 3: back-driven
        (-20.0, 1.0): -20.0 * 0.75 + 2.0,   # case 4: back-driven
    }
    for (tau_out, qd), expected in cases.items():
        assert transmission_input_torque(tau_out, qd, CURVE, 100.0, 2.0) == pytest.approx(expected)
    # at rest (undefined in the thesis) no loss is added
    assert transmission_input_torque(0.0, 0.0, CURVE, 100.0, 2.0) == 0.0


def test_cubic_curve_passes_through_its_points_and_stays_in_range():
    cubic = EfficiencyCurve(CURVE.load_ratio, CURVE.efficiency, kind="cubic")
    np.testing.assert_allclose(cubic(CURVE.load_ratio), CURVE.efficiency, rtol=1e-12)
    values = cubic(np.linspace(-1, 3, 400))
    assert np.all((values > 0) & (values <= 1))


@pytest.mark.parametrize("ratio, efficiency, fragment", [
    ([0.0, 0.5, 1.0], [0.5, 1.2, 0.9], r"\(0, 1\]"),
    ([0.0, 0.5, 1.0], [0.0, 0.5, 0.9], r"\(0, 1\]"),
    ([0.0, 0.7, 0.5], [0.5, 0.6, 0.9], "strictly increasing"),
    ([0.0, 0.5], [0.5, 0.6, 0.9], "equal length"),
])
def test_bad_efficiency_curves(ratio, efficiency, fragment):
    with pytest.raises(dp.ModelError, match=fragment):
        EfficiencyCurve(ratio, efficiency)


# -- the compiled law ----------------------------------------------------------------------------


def _friction_model(smoothing=0.0):
    velocity = VelocityFriction.create(3, viscous=[0.3, 0.0, 0.2], coulomb=[1.2, 0.5, 0.0],
                                       coulomb_negative=[1.0, 0.4, 0.0], static=[2.0, 0.6, 0.0],
                                       stribeck_velocity=[0.05, 0.1, 0.2], smoothing=smoothing)
    transmission = TransmissionFriction.create(3, None, 1.0, breakaway=[0.0, 0.3, 0.0])
    return FrictionModel(velocity, transmission=transmission, armature=[0.5, 0.0, 1.5])


def numpy_law(friction, qd):
    """b(q̇) + d τ_B with numpy, from the levels (L⁺, L⁻) of FrictionModel.levels."""
    positive, negative = friction.levels(qd)
    return friction.velocity.viscous * qd + direction(qd, friction.smoothing) * np.where(qd > 0, positive, negative)


@pytest.mark.parametrize("smoothing", [0.0, 0.05])
def test_compiled_law_equals_its_numpy_form(smoothing):
    """The one law, compiled (batches, one state) and in numpy (levels, direction), agree;
    the one-state functions equal the batch loops; the dry part is the law without b_v q̇."""
    friction = _friction_model(smoothing)
    qd = np.array([[0.01, -0.2, 0.0], [3.0, -1e-4, 1e-3], [-2.0, 0.0, -0.5], [1e-9, -1e-9, 7.0]])
    expected = numpy_law(friction, qd)
    np.testing.assert_allclose(friction.load_independent_torque(qd), expected, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(friction.dry_torque(qd), expected - friction.velocity.viscous * qd, rtol=1e-14,
                               atol=1e-15)
    np.testing.assert_allclose(friction.velocity.torque(qd), numpy_law(FrictionModel(friction.velocity), qd),
                               rtol=1e-14, atol=1e-15)
    table = law.parameter_table(friction.velocity, friction.breakaway, friction.armature)
    qdd, tau = RNG.normal(size=qd.shape), RNG.normal(size=qd.shape)
    added, removed, stuck = np.empty(qd.shape), np.empty(qd.shape), np.empty(len(qd), bool)
    law.compiled().added(table, qd, qdd, tau, added)
    law.compiled().removed(table, qd, tau, removed, stuck)
    np.testing.assert_allclose(added, tau + friction.armature * qdd + expected, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(removed, tau - expected, rtol=1e-14, atol=1e-15)
    # a joint at rest with sharp dry friction needs stiction: joint 2 in state 2, not joint 3
    # in state 0 (it has no dry friction)
    assert stuck.tolist() == ([False, False, True, False] if smoothing == 0 else [False] * 4)
    one = np.empty(3)
    for k in range(len(qd)):
        assert law.single("added")(table, qd[k], qdd[k], tau[k], one) == law.OK
        np.testing.assert_array_equal(one, added[k])
        status = law.single("removed")(table, qd[k], tau[k], np.zeros(3), one)
        assert status == (law.AT_REST if stuck[k] else law.OK)
        if status == law.OK:
            np.testing.assert_array_equal(one, removed[k])


def test_compiled_one_state_functions_refuse_what_they_cannot_do():
    """Wrong lengths and non-finite entries give a status, other types a TypeError (the
    callers' validating paths then name the problem); an overflow is NOT_FINITE_RESULT."""
    friction = _friction_model()
    table, out = law.parameter_table(friction.velocity, friction.breakaway, friction.armature), np.empty(3)
    added, removed = law.single("added"), law.single("removed")
    v = np.array([0.1, -0.2, 0.3])
    assert added(table, np.zeros(4), v, v, out) == law.BAD_SHAPE
    assert removed(table, v, v, v, np.empty(2)) == law.BAD_SHAPE
    assert added(table, np.array([np.nan, 0, 0]), v, v, out) == law.NOT_FINITE
    assert removed(table, v, np.array([0, np.inf, 0]), v, out) == law.NOT_FINITE
    assert added(table, np.array([1e308, 0.1, 0.1]), v, np.array([1.7e308, 0, 0]), out) == law.NOT_FINITE_RESULT
    for bad in ([0.1, -0.2, 0.3], v.astype(np.float32), np.repeat(v, 2)[::2]):
        with pytest.raises(TypeError):
            added(table, bad, v, v, out)


def test_compiled_law_parallel_batches_equal_serial_ones():
    """From PARALLEL_FROM states the loops run in parallel: the same numbers, state by state."""
    friction = _friction_model()
    table = law.parameter_table(friction.velocity, friction.breakaway, friction.armature)
    N = law.PARALLEL_FROM + 37
    qd, qdd, tau = RNG.normal(size=(N, 3)), RNG.normal(size=(N, 3)), RNG.normal(size=(N, 3))
    qd[::5, 1] = 0.0
    loops = law.compiled()
    for loop, arrays in ((loops.added, (table, qd, qdd, tau)), (loops.removed, (table, qd, tau)),
                         (loops.torque, (qd, table, True))):
        big = [np.empty((N, 3))] + ([np.empty(N, bool)] if loop is loops.removed else [])
        small = [np.empty((N, 3))] + ([np.empty(N, bool)] if loop is loops.removed else [])
        loop(*arrays, *big)
        loop.serial(*arrays, *small)
        for a, b in zip(big, small):
            np.testing.assert_array_equal(a, b)
    # and the law's numpy form, in every chunk of states (the last one partial)
    added, removed, stuck = np.empty((N, 3)), np.empty((N, 3)), np.empty(N, bool)
    loops.added(table, qd, qdd, tau, added)
    loops.removed(table, qd, tau, removed, stuck)
    expected = numpy_law(friction, qd)
    np.testing.assert_allclose(added, tau + friction.armature * qdd + expected, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(removed, tau - expected, rtol=1e-14, atol=1e-15)
    assert np.array_equal(stuck, (qd == 0).any(axis=1))


@pytest.mark.parametrize("kind", ["linear", "cubic"])
def test_the_transmission_inverted_gives_back_its_input(kind):
    """TransmissionFriction.output_torque inverts τ_out ↦ τ_out η^(−s) joint by joint (forward
    dynamics starts from it): back to τ_in to 1e-15 relative, torques from 1e-6 to 500 N·m,
    driving, back-driven, at rest and smoothed directions; 0 stays 0."""
    curve = EfficiencyCurve(np.array([0.0, 0.1, 0.3, 0.6, 1.0, 2.0]), np.array([0.3, 0.5, 0.7, 0.8, 0.85, 0.9]), kind)
    transmission = TransmissionFriction.create(3, curves=[curve, None, curve], rated_torque=[20.0, 0.0, 5.0])
    rng = np.random.default_rng(0)
    tau_in = rng.normal(0, 1, (4000, 3)) * rng.choice([1e-6, 1e-2, 1.0, 100.0], (4000, 3))
    tau_in[:10] = 0.0
    for d in (rng.choice([-1.0, 0.0, 1.0], (4000, 3)), np.tanh(rng.normal(size=(4000, 3)))):
        tau_out = transmission.output_torque(tau_in, d)
        back = tau_out * transmission.factor(tau_out, d)
        assert np.all(np.abs(back - tau_in) <= 1e-15 * np.abs(tau_in) + 1e-300)
        assert np.array_equal(tau_out[:, 1], tau_in[:, 1]) and np.all(tau_out[:10] == 0.0)
