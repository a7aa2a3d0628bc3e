"""Analytic derivatives of the friction laws (dyn_plugin.friction.derivatives) against
central finite differences of the model code they differentiate (VelocityFriction.torque,
direction, BearingFriction.magnitude, TransmissionFriction.factor), on random inputs and on
the bundled PUMA-560 friction profiles; and the clear InputError at every point where a law
has no derivative.

The differences are central and Richardson-extrapolated, (4 D(h/2) − D(h)) / 3 with
D(h) = (f(x+h) − f(x−h)) / 2h (error O(h⁴)), with h = 1e-3 × the distance to the law's
nearest kink or feature width, so that they are good to ~1e-11 and a tolerance of 1e-8
relative catches any wrong term.
"""

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.friction import (BearingFriction, EfficiencyCurve, TransmissionFriction, VelocityFriction,
                                 direction)
from dyn_plugin.friction.derivatives import (_law_derivative, bearing_magnitude_gradient, direction_derivative,
                                             transmission_partials, velocity_torque_derivative)
from dyn_plugin.friction.parameters import FrictionModel, load_friction

RTOL = 1e-8

RNG = np.random.default_rng(20240611)


def central(f, x, h):
    """Richardson-extrapolated central difference of the elementwise function f at x, step h
    (broadcast with x), as an array that carries the bound of its rounding error in
    ``.noise`` (8 ε |f| / h: the quotients' cancellation, amplified by the extrapolation)."""
    def d(step):
        high, low = f(x + step), f(x - step)
        return (high - low) / (2 * step), np.maximum(np.abs(high), np.abs(low))
    (half, size), (full, _) = d(h / 2), d(h)
    out = ((4 * half - full) / 3).view(Difference)
    out.noise = 8 * np.finfo(float).eps * size / h
    return out


class Difference(np.ndarray):
    """A finite difference with its rounding-error bound ``noise`` (same shape)."""
    noise = 0.0


def assert_derivative(analytic, numeric, rtol=RTOL):
    """|analytic − numeric| ≤ rtol (|analytic| + 1e-3 max |analytic|) + the difference's rounding
    bound: relative, with a floor for entries that cancel to ~0 (a wrong formula is off by
    O(1) of its terms)."""
    noise = np.broadcast_to(getattr(numeric, "noise", 0.0), np.shape(numeric))
    analytic, numeric = np.asarray(analytic), np.asarray(numeric)
    assert analytic.shape == numeric.shape
    floor = 1e-3 * np.max(np.abs(analytic)) if analytic.size else 0.0
    err = np.abs(analytic - numeric)
    tol = rtol * (np.abs(analytic) + floor) + noise
    worst = np.unravel_index(np.argmax(err - tol), err.shape)
    assert np.all(err <= tol), (f"at {worst}: analytic {analytic[worst]!r}, numeric {numeric[worst]!r}, "
                                f"error {err[worst]:.3e} > {tol[worst]:.3e}")


@pytest.fixture(scope="module")
def puma():
    return dp.load_robot("puma560")


@pytest.fixture(scope="module")
def corke(puma):
    return load_friction("puma560", puma, "corke")


@pytest.fixture(scope="module")
def dhanaraj(puma):
    return load_friction("puma560", puma, "dhanaraj")


def away_from_zero(x, least):
    """x with every |entry| at least ``least`` (sign kept; zeros go positive)."""
    return np.where(x >= 0, 1.0, -1.0) * np.maximum(np.abs(x), least)


# -- 1. direction ---------------------------------------------------------------------------


@pytest.mark.parametrize("smoothing", [0.0, 1e-3, 0.05, 2.0])
def test_direction_derivative(smoothing):
    qd = away_from_zero(RNG.normal(scale=0.3, size=(40, 4)), 1e-2)
    qd[0] = [1e-6, -1e-6, 50.0, -800.0]                            # the slope of tanh near 0 and in its tails
    analytic = direction_derivative(qd, smoothing)
    scale = np.minimum(np.abs(qd), smoothing) if smoothing > 0 else np.abs(qd)
    numeric = central(lambda x: direction(x, smoothing), qd, 1e-3 * scale)
    assert_derivative(analytic, numeric)
    if smoothing > 0:                                             # (1 − tanh²)/w, not just the numbers above
        middle = np.abs(qd / smoothing) < 5
        np.testing.assert_allclose(analytic[middle], ((1 - np.tanh(qd / smoothing) ** 2) / smoothing)[middle],
                                   rtol=1e-12)
    else:
        assert np.all(analytic == 0)
    assert direction_derivative(qd[3], smoothing).shape == (4,)


def test_direction_derivative_at_rest():
    assert direction_derivative(np.zeros((2, 3)), 0.1) == pytest.approx(np.full((2, 3), 10.0))
    with pytest.raises(dp.InputError, match=r"joint index 1, state 2: sgn\(q̇\) jumps at q̇ = 0.*smoothing > 0"):
        direction_derivative(np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 0.0, 3.0]]), 0.0)
    with pytest.raises(dp.InputError, match=r"joint 'b' \(index 1\): sgn"):
        direction_derivative(np.array([1.0, 0.0, 0.0]), 0.0, joints=("a", "b", "c"))
    with pytest.raises(dp.InputError, match="smoothing"):
        direction_derivative(np.ones(3), -1.0)
    with pytest.raises(dp.InputError, match="non-finite"):
        direction_derivative(np.array([1.0, np.nan]), 0.1)


# -- 2. velocity friction ------------------------------------------------------------------


def random_velocity(n, smoothing, symmetric_static=False):
    coulomb, coulomb_negative = RNG.uniform(0, 3, n), RNG.uniform(0, 3, n)
    static = coulomb + RNG.uniform(0, 2, n)
    static_negative = static if symmetric_static else coulomb_negative + RNG.uniform(0, 2, n)
    if symmetric_static:
        coulomb_negative = np.minimum(coulomb_negative, static)
    return VelocityFriction.create(n, viscous=RNG.uniform(0, 2, n), coulomb=coulomb,
                                   coulomb_negative=coulomb_negative, static=static, static_negative=static_negative,
                                   stribeck_velocity=RNG.uniform(0.02, 0.5, n), smoothing=smoothing)


def check_velocity(velocity, qd):
    analytic = velocity_torque_derivative(velocity, qd)
    scales = [np.abs(qd), np.broadcast_to(velocity.stribeck_velocity, qd.shape)]
    if velocity.smoothing > 0:
        scales.append(np.full(qd.shape, velocity.smoothing))
    numeric = central(velocity.torque, qd, 1e-3 * np.minimum.reduce(scales))
    assert_derivative(analytic, numeric)


@pytest.mark.parametrize("smoothing", [0.0, 0.01, 0.05, 1.0])
def test_velocity_torque_derivative_random(smoothing):
    for _ in range(5):
        velocity = random_velocity(5, smoothing)
        qd = away_from_zero(RNG.normal(scale=0.5, size=(60, 5)), 1e-3)
        check_velocity(velocity, qd)


def test_velocity_torque_derivative_terms():
    """Each term on its own, against the hand derivative: viscous; Stribeck decay (sharp);
    the smoothed Coulomb level."""
    qd = np.array([[0.3, -0.7]])
    viscous = VelocityFriction.create(2, viscous=[1.5, 0.2])
    np.testing.assert_allclose(velocity_torque_derivative(viscous, qd), [[1.5, 0.2]], rtol=1e-15)
    stribeck = VelocityFriction.create(2, coulomb=1.0, static=3.0, stribeck_velocity=0.2)
    np.testing.assert_allclose(velocity_torque_derivative(stribeck, qd), -2.0 / 0.2 * np.exp(-np.abs(qd) / 0.2),
                               rtol=1e-14)
    coulomb = VelocityFriction.create(2, coulomb=2.0, smoothing=0.5)
    np.testing.assert_allclose(velocity_torque_derivative(coulomb, qd), 2.0 * (1 - np.tanh(qd / 0.5) ** 2) / 0.5,
                               rtol=1e-14)


@pytest.mark.parametrize("smoothing", [0.0, 0.05])
def test_velocity_torque_derivative_corke_profile(corke, smoothing):
    velocity = corke.with_smoothing(smoothing).velocity
    qd = away_from_zero(RNG.uniform(-2, 2, (50, 6)), 1e-3)
    check_velocity(velocity, qd)
    single = velocity_torque_derivative(velocity, qd[0])
    assert single.shape == (6,) and np.array_equal(single, velocity_torque_derivative(velocity, qd[:1])[0])


def test_law_derivative_with_breakaway():
    """The helper behind velocity_torque_derivative on a table with a transmission breakaway
    τ_B (FrictionModel.table): against FrictionModel.load_independent_torque = b(q̇) + d τ_B."""
    for smoothing in (0.0, 0.05):
        velocity = random_velocity(4, smoothing)
        transmission = TransmissionFriction.create(4, None, 1.0, breakaway=RNG.uniform(0.5, 3, 4))
        friction = FrictionModel(velocity, transmission=transmission)
        qd = away_from_zero(RNG.normal(scale=0.5, size=(60, 4)), 1e-3)
        analytic = _law_derivative("test", qd, friction.table, None, False)
        scale = np.minimum.reduce([np.abs(qd), np.broadcast_to(velocity.stribeck_velocity, qd.shape)]
                                  + ([np.full(qd.shape, smoothing)] if smoothing else []))
        assert_derivative(analytic, central(friction.load_independent_torque, qd, 1e-3 * scale))
    sym = FrictionModel(VelocityFriction.create(1, viscous=0.3, coulomb=1.0, smoothing=0.05),
                        transmission=TransmissionFriction.create(1, None, 1.0, breakaway=2.0))
    at_rest = _law_derivative("test", np.zeros((1, 1)), sym.table, None, False)
    assert at_rest[0, 0] == pytest.approx(0.3 + (1.0 + 2.0) / 0.05, rel=1e-15)
    breakaway_only = FrictionModel(VelocityFriction.create(1), transmission=TransmissionFriction.create(1, None, 1.0,
                                                                                                      breakaway=2.0))
    with pytest.raises(dp.InputError, match="sharp dry friction"):
        _law_derivative("test", np.zeros((1, 1)), breakaway_only.table, None, False)


def test_velocity_torque_derivative_at_rest_where_differentiable(dhanaraj):
    """At q̇ = 0: smooth with equal static levels (b' = b_v + b_s/w), and sharp without dry
    friction (b' = b_v; the dhanaraj profile has no lumped velocity friction at all)."""
    velocity = random_velocity(4, 0.05, symmetric_static=True)
    qd = np.zeros((1, 4))
    analytic = velocity_torque_derivative(velocity, qd)
    np.testing.assert_allclose(analytic[0], velocity.viscous + velocity.static_positive / 0.05, rtol=1e-15)
    # b has a |q̇| q̇ term at 0 (C¹, not C²): a plain central difference with a tiny step
    h = 1e-9
    assert_derivative(analytic, (velocity.torque(qd + h) - velocity.torque(qd - h)) / (2 * h), rtol=1e-6)
    viscous = VelocityFriction.create(3, viscous=[0.5, 0.0, 2.0])
    np.testing.assert_array_equal(velocity_torque_derivative(viscous, np.zeros(3)), [0.5, 0.0, 2.0])
    np.testing.assert_array_equal(velocity_torque_derivative(dhanaraj.velocity, np.zeros((2, 6))), np.zeros((2, 6)))


def test_velocity_torque_derivative_refuses_rest(corke, puma):
    qd = np.ones((3, 6))
    qd[2, 4] = 0.0
    with pytest.raises(dp.InputError, match=r"joint 'joint5' \(index 4\), state 2: sharp dry friction.*"
                                            r"smoothing > 0"):
        velocity_torque_derivative(corke.velocity, qd, joints=puma)
    with pytest.raises(dp.InputError, match=r"joint index 4, state 2: the static level switches at q̇ = 0"):
        velocity_torque_derivative(corke.with_smoothing(0.05).velocity, qd)
    sharp_symmetric = VelocityFriction.create(2, coulomb=1.0)
    with pytest.raises(dp.InputError, match=r"joint index 1: sharp dry friction"):
        velocity_torque_derivative(sharp_symmetric, np.array([1.0, 0.0]))
    with pytest.raises(dp.InputError, match=r"qd must have shape \(6,\) or \(N, 6\)"):
        velocity_torque_derivative(corke.velocity, np.ones(5))


# -- 3. bearing friction -------------------------------------------------------------------


KINDS = ("journal", "journal_pair", "linear", "thrust", "none")


def bearing_kinks(force, moment, spacing):
    """The distance to the nearest kink of any bearing form, per state and joint (N, n):
    every norm and absolute value the forms take (each moves by at most the step)."""
    fx, fy, fz = force[..., 0], force[..., 1], force[..., 2]
    nx, ny = moment[..., 0], moment[..., 1]
    h = 0.5 * spacing
    terms = [np.hypot(fx, fy), np.abs(fz)]
    for sign in (1.0, -1.0):
        terms += [np.hypot(h * fx - ny, h * fy + sign * nx), np.hypot(h * fx + ny, h * fy - sign * nx)]
    terms += [np.abs(h * fx - ny), np.abs(h * fy - nx), np.abs(h * fx + ny), np.abs(h * fy + nx)]
    return np.minimum.reduce(terms)


def check_bearing(bearing, force, moment):
    grad_f, grad_n = bearing_magnitude_gradient(bearing, force, moment)
    assert grad_f.shape == force.shape and grad_n.shape == moment.shape
    h = 1e-3 * bearing_kinks(force, moment, bearing.spacing)
    for component in range(3):
        unit = np.zeros(3)
        unit[component] = 1.0
        numeric_f = central(lambda step: bearing.magnitude(force + step[..., None] * unit, moment), 0.0 * h, h)
        numeric_n = central(lambda step: bearing.magnitude(force, moment + step[..., None] * unit), 0.0 * h, h)
        assert_derivative(grad_f[..., component], numeric_f)
        assert_derivative(grad_n[..., component], numeric_n)


@pytest.mark.parametrize("printed", [False, True])
def test_bearing_gradient_random(printed):
    bearing = BearingFriction.create(len(KINDS), KINDS, mu=RNG.uniform(0.05, 0.3, len(KINDS)),
                                     radius=RNG.uniform(0.02, 0.2, len(KINDS)),
                                     spacing=RNG.uniform(0.05, 0.5, len(KINDS)), printed=printed)
    force = RNG.normal(scale=100.0, size=(80, len(KINDS), 3))
    moment = RNG.normal(scale=10.0, size=(80, len(KINDS), 3))
    check_bearing(bearing, force, moment)
    grad_f, grad_n = bearing_magnitude_gradient(bearing, force[0], moment[0])
    assert grad_f.shape == (len(KINDS), 3)
    assert np.all(grad_f[4] == 0) and np.all(grad_n[4] == 0)                # kind "none"
    assert np.all(grad_n[[0, 3]] == 0) and np.all(grad_f[:3, 2] == 0)       # journal, thrust; no axial part


def test_bearing_gradient_known_values():
    """Homogeneous of degree 1: ∇_f·f + ∇_n·n = |τ_f| (Euler), for every form."""
    bearing = BearingFriction.create(4, KINDS[:4], mu=0.1, radius=0.08, spacing=0.2)
    force, moment = RNG.normal(size=(30, 4, 3)), RNG.normal(size=(30, 4, 3))
    grad_f, grad_n = bearing_magnitude_gradient(bearing, force, moment)
    np.testing.assert_allclose(np.sum(grad_f * force + grad_n * moment, axis=-1), bearing.magnitude(force, moment),
                               rtol=1e-12)


def test_bearing_gradient_dhanaraj_wrenches(puma, dhanaraj):
    """The dhanaraj profile's journal pairs, at the axis-frame reaction wrenches the friction
    backend computes for random states (FrictionBackend._bearing)."""
    be = dp.get_backend("newton_euler_friction", puma, profile="dhanaraj")
    q, qd, qdd = (RNG.uniform(-2, 2, (30, 6)) for _ in range(3))
    f, n = be.joint_wrenches(q, qd, qdd)
    to_axis = be._axis_frames
    force, moment = np.einsum("nji,Nnj->Nni", to_axis, f), np.einsum("nji,Nnj->Nni", to_axis, n)
    check_bearing(dhanaraj.bearing, force, moment)


def test_bearing_gradient_refuses_kinks():
    bearing = BearingFriction.create(["j0", "j1", "j2", "j3"], KINDS[:4], mu=0.1, radius=0.1, spacing=0.4)
    force, moment = np.ones((3, 4, 3)), np.full((3, 4, 3), 0.5)
    cases = [  # (joint, force entries, moment entries, message)
        (0, {0: 0.0, 1: 0.0}, {}, r"joint 'j0' \(index 0\), state 1: journal bearing: the radial load"),
        (1, {0: 1.0, 1: 2.0}, {1: 0.2, 0: -0.4}, r"joint 'j1' \(index 1\), state 1: journal_pair bearing: "
                                                  r"the bearing load A = \(½d f_x − n_y, ½d f_y \+ n_x\) is 0"),
        (1, {0: 1.0, 1: 2.0}, {1: -0.2, 0: 0.4}, r"journal_pair bearing: the bearing load B"),
        (2, {0: 1.0, 1: 3.0}, {1: 0.2, 0: 0.1}, r"joint 'j2' \(index 2\), state 1: linear bearing: the load "
                                                 r"term ½d f_x − n_y is 0"),
        (2, {0: 1.0, 1: 2.0}, {1: 0.1, 0: -0.4}, r"linear bearing: the load term ½d f_y \+ n_x is 0"),
        (3, {2: 0.0}, {}, r"joint 'j3' \(index 3\), state 1: thrust bearing: the axial load f_z is 0"),
    ]
    for joint, f_entries, n_entries, message in cases:
        f, n = force.copy(), moment.copy()
        for k, v in f_entries.items():
            f[1, joint, k] = v
        for k, v in n_entries.items():
            n[1, joint, k] = v
        with pytest.raises(dp.InputError, match=message):
            bearing_magnitude_gradient(bearing, f, n, joints=("j0", "j1", "j2", "j3"))
        # skipped where d = 0 (``where``): no error, a zero gradient there
        where = np.ones((3, 4), bool)
        where[1, joint] = False
        grad_f, grad_n = bearing_magnitude_gradient(bearing, f, n, where=where)
        assert np.all(grad_f[1, joint] == 0) and np.all(grad_n[1, joint] == 0)
    printed = BearingFriction.create(1, "journal_pair", mu=0.1, radius=0.1, spacing=0.4, printed=True)
    with pytest.raises(dp.InputError, match=r"joint index 0: journal_pair bearing \(printed eq. 3.3\): the bearing "
                                            r"load A = \(½d f_x − n_y, ½d f_y − n_x\) is 0"):
        bearing_magnitude_gradient(printed, np.array([[1.0, 2.0, 0.0]]), np.array([[0.4, 0.2, 0.0]]))
    # a bearing whose coefficient is 0 is identically 0: differentiable anywhere
    idle = BearingFriction.create(2, ["journal", "thrust"], mu=0.0, radius=0.1)
    grad_f, grad_n = bearing_magnitude_gradient(idle, np.zeros((2, 3)), np.zeros((2, 3)))
    assert np.all(grad_f == 0) and np.all(grad_n == 0)
    with pytest.raises(dp.InputError, match=r"force must have shape \(4, 3\) or \(N, 4, 3\)"):
        bearing_magnitude_gradient(bearing, np.ones((3, 4)), np.ones((3, 4)))


# -- 4. transmission -------------------------------------------------------------------------


LINEAR = EfficiencyCurve([0.0, 0.05, 0.2, 1.0], [0.3, 0.5, 0.75, 0.85])
HELD = EfficiencyCurve([0.1, 0.3, 0.6, 1.2], [0.4, 0.55, 0.8, 0.9])                   # held below 0.1 and above 1.2
CUBIC = EfficiencyCurve([0.0, 0.05, 0.2, 1.0], [0.3, 0.5, 0.75, 0.85], kind="cubic")
OVERSHOOT = EfficiencyCurve([0.0, 0.2, 0.4, 1.0], [0.3, 0.95, 1.0, 0.9], kind="cubic")  # spline > 1 in (0.243, 0.4)


def curve_kinks(curve):
    """The load ratios where ``curve`` may have a kink: its table, and where a cubic meets its clip."""
    points = list(curve.load_ratio)
    if curve.kind == "cubic":
        for bound in (curve.efficiency.min(), 1.0):
            points += list(curve._spline.solve(bound, extrapolate=False))
    return np.array(points)


def check_transmission(transmission, tau, d):
    d_tau, d_d = transmission_partials(transmission, tau, d)
    ratio = np.abs(tau) / np.where(transmission.rated_torque > 0, transmission.rated_torque, 1.0)
    distance = np.abs(tau)
    for i, curve in enumerate(transmission.curves):
        if curve is not None:
            kinks = curve_kinks(curve)
            near = np.min(np.abs(ratio[:, i, None] - kinks), axis=1) * transmission.rated_torque[i]
            distance[:, i] = np.minimum(distance[:, i], near)

    def through(tau_out, direction_factor):
        return tau_out * transmission.factor(tau_out, direction_factor)

    assert_derivative(d_tau, central(lambda t: through(t, d), tau, 1e-3 * distance))
    assert_derivative(d_d, central(lambda x: through(tau, x), d, np.full(d.shape, 1e-3)))


@pytest.mark.parametrize("curve", [LINEAR, HELD, CUBIC, OVERSHOOT], ids=["linear", "held", "cubic", "overshoot"])
def test_transmission_partials_random(curve):
    rated = np.array([50.0, 120.0, 7.0, 1.0])
    transmission = TransmissionFriction.create(4, [curve, curve, None, curve], rated, breakaway=[1.0, 0.0, 2.0, 0.5])
    tau = RNG.uniform(-1.5, 1.5, (200, 4)) * rated
    d = RNG.uniform(-1, 1, (200, 4))
    d[:20] = RNG.choice([-1.0, 0.0, 1.0], (20, 4))                     # sharp directions, and at rest
    check_transmission(transmission, tau, d)
    d_tau, d_d = transmission_partials(transmission, tau, d)
    assert np.all(d_tau[:, 2] == 1) and np.all(d_d[:, 2] == 0)           # no curve: T = τ_out
    # with d = 0, T = τ_out whatever the curve, and ∂T/∂d = −|τ_out| ln η
    d_tau, d_d = transmission_partials(transmission, tau, np.zeros_like(d))
    assert np.all(d_tau == 1)
    np.testing.assert_allclose(d_d[:, 0], -np.abs(tau[:, 0]) * np.log(curve(np.abs(tau[:, 0]) / 50.0)), rtol=1e-14)


def test_transmission_partials_clipped_cubic():
    """Where the overshooting cubic is clipped at 1, η is constant: T = τ_out / 1^(...) = τ_out."""
    transmission = TransmissionFriction.create(1, OVERSHOOT, 1.0)
    tau = np.array([[0.3], [-0.35]])
    assert np.all(OVERSHOOT._spline(np.abs(tau)) > 1)
    d_tau, d_d = transmission_partials(transmission, tau, np.array([[0.7], [-0.4]]))
    np.testing.assert_array_equal(d_tau, 1.0)
    np.testing.assert_array_equal(d_d, 0.0)


def test_transmission_partials_dhanaraj_profile(dhanaraj):
    transmission = dhanaraj.transmission
    tau = RNG.uniform(-1.2, 1.2, (150, 6)) * np.where(transmission.rated_torque > 0, transmission.rated_torque, 50.0)
    tau[:30] *= 0.02                                                  # the steep low-load part of the curve
    d = np.tanh(RNG.normal(size=(150, 6)) / 0.3)
    check_transmission(transmission, tau, d)
    d_tau, d_d = transmission_partials(None, tau, d)
    assert np.all(d_tau == 1) and np.all(d_d == 0)


def test_transmission_partials_formulas():
    """Driving and back-driven against Table 3.2 by hand: T = τ/η or τ η inside a segment."""
    transmission = TransmissionFriction.create(1, LINEAR, 100.0)
    slope = (0.75 - 0.5) / 0.15
    for tau, d in ((10.0, 1.0), (-10.0, -1.0), (10.0, -1.0), (-10.0, 1.0)):
        eta = LINEAR(abs(tau) / 100.0)
        d_tau, d_d = transmission_partials(transmission, np.array([tau]), np.array([d]))
        driving = tau * d > 0
        expected = (1 / eta - abs(tau) * slope / 100.0 / eta ** 2) if driving else (eta + abs(tau) * slope / 100.0)
        assert d_tau[0] == pytest.approx(expected, rel=1e-14)
        assert d_d[0] == pytest.approx(-abs(tau) * eta ** (-1 if driving else 1) * np.log(eta), rel=1e-14)


def test_transmission_partials_at_zero_torque():
    transmission = TransmissionFriction.create(2, [LINEAR, EfficiencyCurve([0.0, 1.0], [1.0, 0.8])], 10.0)
    tau, d = np.zeros((2, 2)), np.array([[0.0, 0.5], [0.0, -1.0]])
    d_tau, d_d = transmission_partials(transmission, tau, d)              # d = 0, or η(0) = 1: slope 1
    np.testing.assert_array_equal(d_tau, 1.0)
    np.testing.assert_array_equal(d_d, 0.0)
    h = 1e-7
    through = lambda t: t * transmission.factor(t, d)                     # noqa: E731
    np.testing.assert_allclose((through(tau + h) - through(tau - h)) / (2 * h), 1.0, rtol=1e-6)
    with pytest.raises(dp.InputError, match=r"joint index 0, state 1: τ_out = 0 with d ≠ 0.*driving.*back-driven"):
        transmission_partials(transmission, np.zeros((2, 2)), np.array([[0.0, 0.0], [0.3, 0.0]]))


def test_transmission_partials_refuses_curve_kinks(puma, dhanaraj):
    transmission = TransmissionFriction.create(4, [LINEAR, HELD, CUBIC, OVERSHOOT], [2.0, 4.0, 1.0, 1.0])
    assert OVERSHOOT._spline(0.4) == 1.0                                  # the spline leaves its clip at 1 there
    cases = [(0, 0.05 * 2.0, "linear"), (0, -0.2 * 2.0, "linear"), (0, 1.0 * 2.0, "linear"),
             (1, 0.1 * 4.0, "linear"), (1, -1.2 * 4.0, "linear"), (1, 0.6 * 4.0, "linear"),
             (2, 1.0, "cubic"), (3, 0.4, "cubic"), (3, -1.0, "cubic")]
    for joint, value, kind in cases:
        tau, d = np.full((2, 4), 0.123), np.full((2, 4), 0.5)
        tau[1, joint] = value
        with pytest.raises(dp.InputError, match=rf"joint index {joint}, state 1: the load ratio \|τ_out\|/τ_rated "
                                                rf"sits on a kink of the {kind} efficiency curve"):
            transmission_partials(transmission, tau, d)
        d[1, joint] = 0.0                                                 # T = τ_out at d = 0: no kink
        assert transmission_partials(transmission, tau, d)[0][1, joint] == 1.0
    # a breakpoint where the curve goes on straight is no kink
    straight = TransmissionFriction.create(1, EfficiencyCurve([0.0, 0.5, 1.0], [0.5, 0.6, 0.7]), 1.0)
    tau, d = np.array([[0.5]]), np.array([[1.0]])
    d_tau, _ = transmission_partials(straight, tau, d)
    assert d_tau[0, 0] == pytest.approx(1 / 0.6 - 0.5 * 0.2 / 0.6 ** 2, rel=1e-12)
    # the dhanaraj profile's curve, named by joint
    tau = np.full((1, 6), 1.0)
    tau[0, 2] = 0.3 * 89.4
    assert tau[0, 2] / 89.4 == 0.3
    with pytest.raises(dp.InputError, match=r"joint 'joint3' \(index 2\): the load ratio"):
        transmission_partials(dhanaraj.transmission, tau[0], np.ones(6), joints=puma.joint_names)


# -- the chain rule through the backend's formula -------------------------------------------


def test_chain_rule_through_the_friction_composition(dhanaraj):
    """τ_in(q̇) = T(τ_rigid + d·|τ_f^J|, d) + d τ_B + b(q̇), d = direction(q̇, w), with the rigid
    torque and the joint wrenches held fixed (FrictionBackend._breakdown's friction part):
    ∂τ_in/∂q̇ = (∂T/∂τ · |τ_f^J| + ∂T/∂d + τ_B) ∂d/∂q̇ + ∂b/∂q̇."""
    friction = dhanaraj.with_smoothing(0.05)
    velocity = random_velocity(6, 0.05)
    rigid = RNG.normal(scale=40.0, size=(40, 6))
    force, moment = RNG.normal(scale=100, size=(40, 6, 3)), RNG.normal(scale=10, size=(40, 6, 3))
    magnitude = friction.bearing.magnitude(force, moment)
    transmission = friction.transmission

    def tau_in(qd):
        d = direction(qd, 0.05)
        out = rigid + d * magnitude
        return out * transmission.factor(out, d) + d * transmission.breakaway + velocity.torque(qd)

    qd = away_from_zero(RNG.normal(scale=0.2, size=(40, 6)), 1e-2)
    d = direction(qd, 0.05)
    d_tau, d_d = transmission_partials(transmission, rigid + d * magnitude, d)
    analytic = ((d_tau * magnitude + d_d + transmission.breakaway) * direction_derivative(qd, 0.05)
                + velocity_torque_derivative(velocity, qd))
    # the step must not carry τ_out across a breakpoint of the efficiency curve: small
    assert_derivative(analytic, central(tau_in, qd, 1e-6 * np.minimum(np.abs(qd), 0.05)), rtol=1e-6)
