"""The bristle laws (dyn_plugin/friction/bristles.py) against closed forms: the steady state
of LuGre eq. (5) (Canudas de Wit et al. 1995), the exact exponential step against a fine
RK4 of the ODE, the Dahl hysteresis loop F_tip = F_C tanh(σ0 A / F_C) and its presliding
stiffness σ0, and stability of the step at h = 1/240 s with σ0 = 1e5 N·m/rad."""

import numpy as np
import pytest

from dyn_plugin.errors import InputError, ModelError
from dyn_plugin.friction import bristles as br

LUGRE = dict(sigma0=[1e3, 2e3, 5e2], coulomb=[1.0, 2.0, 0.5], static=[1.5, 2.0, 0.9],
             stribeck_velocity=[0.1, 0.2, 0.05], sigma1=[30.0, 40.0, 5.0], sigma2=[0.4, 0.1, 2.0])


def lugre():
    return br.Bristles.lugre(3, **LUGRE)


def rk4(z, v, h, bristles, substeps):
    """RK4 of the augmented ODE (ż, İ) = (bristle_rate, F) at constant v: z(h) and the impulse I(h)."""
    def rate(state):
        zz = state[0]
        return np.array([br.bristle_rate(zz, v, bristles), br.force(zz, v, bristles)])
    state, dt = np.array([z, np.zeros_like(z)]), h / substeps
    for _ in range(substeps):
        k1 = rate(state)
        k2 = rate(state + dt / 2 * k1)
        k3 = rate(state + dt / 2 * k2)
        k4 = rate(state + dt * k3)
        state = state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return state[0], state[1]


def test_steady_state_is_the_stribeck_viscous_law():
    b = lugre()
    v = np.array([[0.3, -0.05, 0.02], [-2.0, 1e-3, -0.07]])
    g = np.array(LUGRE["coulomb"]) + (np.array(LUGRE["static"]) - np.array(LUGRE["coulomb"])) * np.exp(
        -(v / np.array(LUGRE["stribeck_velocity"])) ** 2)
    z_ss = np.sign(v) * g / np.array(LUGRE["sigma0"])               # LuGre eq. (5): ż = 0
    assert np.allclose(br.bristle_rate(z_ss, v, b), 0.0, rtol=0, atol=1e-12)
    expected = g * np.sign(v) + np.array(LUGRE["sigma2"]) * v
    assert np.allclose(br.force(z_ss, v, b), expected, rtol=1e-12, atol=0)
    assert np.allclose(br.steady_state_force(v, b), expected, rtol=1e-12, atol=0)
    assert np.allclose(br.bristle_step(z_ss, v, 0.01, b), z_ss, rtol=1e-12, atol=0)
    long = br.step(np.zeros_like(v), v, 1e3, b)                       # relaxed: F̄ -> F_ss, z -> z_ss
    assert np.allclose(long.z, z_ss, rtol=1e-12, atol=0)
    assert np.all(-v * br.steady_state_force(v, b) <= 0)              # friction power dissipates


@pytest.mark.parametrize("h", [1e-3, 1 / 240])
def test_exact_step_matches_fine_rk4_of_the_ode(h):
    b = lugre()
    rng = np.random.default_rng(4)
    z = rng.uniform(-2, 2, (4, 3)) * 1e-3
    v = rng.uniform(-0.3, 0.3, (4, 3))
    exact = br.step(z, v, h, b)
    z_rk, impulse = rk4(z, v, h, b, 4000)
    assert np.allclose(exact.z, z_rk, rtol=1e-9, atol=0)
    assert np.allclose(br.bristle_step(z, v, h, b), z_rk, rtol=1e-9, atol=0)
    assert np.allclose(h * exact.force, impulse, rtol=1e-9, atol=1e-9 * np.abs(impulse).max())


def test_slope_is_the_derivative_of_the_step_averaged_force():
    """dF̄/dv against a 5-point finite difference (truncation ~ e⁴ f⁽⁵⁾, e = 1e-5 rad/s)."""
    b = lugre()
    rng = np.random.default_rng(1)
    z, v = rng.uniform(-2, 2, (6, 3)) * 1e-3, rng.uniform(-0.3, 0.3, (6, 3))
    e = 1e-5
    f = [br.step(z, v + k * e, 1 / 240, b).force for k in (-2, -1, 1, 2)]
    fd = (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * e)
    assert np.allclose(br.step(z, v, 1 / 240, b).slope, fd, rtol=1e-8, atol=0)


def test_slope_at_rest_is_the_mean_of_the_one_sided_slopes():
    b = lugre()
    z = np.array([1e-4, -3e-4, 2e-4])
    h, e = 1 / 240, 1e-9
    right = (br.step(z, e, h, b).force - br.step(z, 0.0, h, b).force) / e
    left = (br.step(z, 0.0, h, b).force - br.step(z, -e, h, b).force) / e
    assert np.allclose(br.step(z, 0.0, h, b).slope, (left + right) / 2, rtol=1e-6)


def dahl_loop(amplitude, steps_per_half, half_periods):
    """Bristle deflections along x = A sin(θ) sampled at θ_k, starting at x = −A on the
    closed loop, stepped with piecewise-constant v (exact: Dahl depends on displacement only)."""
    b = br.Bristles.dahl(1, sigma0=2e3, coulomb=0.8)
    z_ss = 0.8 / 2e3
    theta = -np.pi / 2 + np.pi * np.arange(half_periods * steps_per_half + 1) / steps_per_half
    x = amplitude * np.sin(theta)
    h = 1e-3
    z = [np.array([-z_ss * np.tanh(amplitude / z_ss)])]
    for k in range(len(x) - 1):
        z.append(br.bristle_step(z[-1], np.array([(x[k + 1] - x[k]) / h]), h, b))
    return b, z_ss, x, np.concatenate(z)


def test_dahl_hysteresis_loop_closed_form():
    amplitude = 3e-4                                    # rad, comparable to z_ss = 4e-4 rad
    b, z_ss, x, z = dahl_loop(amplitude, 50, 4)
    tip = z_ss * np.tanh(amplitude / z_ss)              # F_tip = F_C tanh(σ0 A / F_C)
    ascending = z_ss - (z_ss + tip) * np.exp(-(x + amplitude) / z_ss)
    descending = -z_ss + (z_ss + tip) * np.exp(-(amplitude - x) / z_ss)
    rising = np.concatenate([[True], np.diff(x) > 0])
    expected = np.where(((np.arange(len(x)) // 50) % 2 == 0) & rising | (np.arange(len(x)) % 100 == 50),
                        ascending, descending)
    assert np.allclose(z, expected, rtol=1e-9, atol=1e-12 * z_ss)
    assert np.allclose(b.sigma0 * z[50::100], 0.8 * np.tanh(2e3 * amplitude / 0.8), rtol=1e-12)


def test_presliding_stiffness_is_sigma0():
    """From z = 0 a tiny displacement δ gives F = σ0 z_ss (1 − e^(−δ/z_ss)) = σ0 δ (1 − δ/(2 z_ss) + …)."""
    for b in (br.Bristles.dahl(1, sigma0=5e4, coulomb=2.0), br.Bristles.lugre(1, **{k: v[:1] for k, v in LUGRE.items()})):
        delta, h = 1e-10, 1.0
        z = br.bristle_step(np.zeros(1), np.array([delta / h]), h, b)
        z_ss = br.steady_deflection(0.0, b)
        assert np.allclose(b.sigma0 * z / delta, b.sigma0 * (1 - delta / (2 * z_ss)), rtol=1e-12)


def test_stiff_bristles_stay_bounded_at_pybullet_step():
    """σ0 = 1e5 N·m/rad at h = 1/240 s: x = |v| h / z_ss up to 1e8, z⁺ lies between z and s z_ss."""
    b = br.Bristles.lugre(2, sigma0=1e5, coulomb=[0.5, 5.0], static=[0.8, 6.0], stribeck_velocity=0.01,
                          sigma1=[300.0, 3e3], sigma2=1.0)
    rng = np.random.default_rng(2)
    v = rng.choice([-1, 1], (2000, 2)) * 10.0 ** rng.uniform(-14, 3, (2000, 2))
    v[:5] = 0.0
    z_ss = br.steady_deflection(v, b)
    z = rng.uniform(-10, 10, (2000, 2)) * z_ss
    out = br.step(z, v, 1 / 240, b)
    assert np.isfinite(out.z).all() and np.isfinite(out.force).all() and np.isfinite(out.slope).all()
    target = np.sign(v) * z_ss
    low, high = np.minimum(z, target), np.maximum(z, target)
    assert np.all((out.z >= low - 1e-15 * z_ss) & (out.z <= high + 1e-15 * z_ss))


def test_bad_parameters_and_state_are_refused():
    with pytest.raises(ModelError, match="sigma0.*joint index 1"):
        br.Bristles.lugre(2, sigma0=[1e3, 0.0], coulomb=1.0)
    with pytest.raises(ModelError, match="static.*below"):
        br.Bristles.lugre(2, sigma0=1e3, coulomb=1.0, static=[2.0, 0.5])
    with pytest.raises(ModelError, match="coulomb"):
        br.Bristles.dahl(1, sigma0=1e3, coulomb=0.0)
    with pytest.raises(InputError, match=r"\(\.\.\., 2\)"):
        br.Bristles.dahl(2, sigma0=1e3, coulomb=1.0).check_state(np.zeros(3))
    with pytest.raises(InputError, match="h must be > 0"):
        br.step(np.zeros(2), np.zeros(2), 0.0, br.Bristles.dahl(2, sigma0=1e3, coulomb=1.0))
