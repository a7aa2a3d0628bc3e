"""Friction laws and their fitting (dyn_plugin/friction/laws.py, fitting.py, the fit-friction verb).

Each law against its printed formula at chosen points (Olsson et al. 1998 §2; Schilling
eq. 6-3-3; Canudas de Wit et al. 1995 eqs. (2)-(5); Gaz et al. 2019; Dahl 1968 and the
closed form of its transient after a reversal at constant speed); fits recovering known
parameters from noise-free data, at 1 rad/s and at ±0.01 rad/s with 10 N·m; the measured
Franka joint 2 (tests/data/franka_joint2_*_every10.npz, README there) against the models
its authors published; bad inputs; the CLI end to end.
"""

import json
import math

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.errors import InputError
from dyn_plugin.friction import laws
from dyn_plugin.friction.fitting import undetermined_note

DATA = "tests/data/franka_joint2_{}_every10.npz"
RUNS = ("slow", "middle", "high")

# Gaz et al. 2019 (tests/data/README.md): φ1 N·m, φ2 s/rad, φ3 rad/s of the Panda's joints 1..7
GAZ = dict(phi1=[0.54615, 0.87224, 0.64068, 1.2794, 0.83904, 0.30301, 0.56489],
           phi2=[5.1181, 9.0657, 10.136, 5.5903, 8.3469, 17.133, 10.336],
           phi3=[0.039533, 0.025882, -0.04607, 0.036194, 0.026226, -0.021047, 0.0035526])


def torque(law, qd, t=None, **params):
    return laws.evaluate(laws.LAWS[law], params, np.asarray(qd, dtype=float), None if t is None else np.asarray(t))


def rms(a, b):
    with np.errstate(over="ignore"):             # the published LuGre diverges on the high run (inf)
        return float(np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2)))


# -- the laws against their formulas ---------------------------------------------------------

def test_coulomb_viscous_is_its_formula():
    got = torque("coulomb_viscous", [-2.0, -0.1, 0.0, 0.4], coulomb=0.3, viscous=0.5)
    np.testing.assert_allclose(got, [-0.3 - 1.0, -0.3 - 0.05, 0.0, 0.3 + 0.2], rtol=1e-15, atol=0)


def test_schilling_and_stribeck_are_their_formulas():
    p = dict(coulomb=0.3, static=0.5, stribeck_velocity=0.02, viscous=0.7)
    for v in (-0.5, -0.03, -0.001, 0.002, 0.02, 0.9):
        s = math.copysign(1.0, v)
        schilling = 0.7 * v + s * (0.3 + 0.2 * math.exp(-abs(v) / 0.02))        # Schilling eq. 6-3-3
        stribeck = s * (0.3 + 0.2 * math.exp(-(v / 0.02) ** 2)) + 0.7 * v        # LuGre eq. (5)
        assert torque("schilling", [v], **p)[0] == pytest.approx(schilling, rel=1e-14)
        assert torque("stribeck", [v], **p)[0] == pytest.approx(stribeck, rel=1e-14)
    assert torque("schilling", [0.0], **p)[0] == 0.0 and torque("stribeck", [0.0], **p)[0] == 0.0


@pytest.mark.parametrize("joint", range(7))
def test_sigmoid_with_gaz_parameters_has_the_published_shape(joint):
    phi1, phi2, phi3 = (GAZ[k][joint] for k in ("phi1", "phi2", "phi3"))
    p = dict(phi1=phi1, phi2=phi2, phi3=phi3)
    assert torque("sigmoid", [0.0], **p)[0] == 0.0                                  # zero at rest by construction
    for v in (-1.5, -0.2, 0.05, 0.7):
        printed = phi1 / (1 + math.exp(-phi2 * (v + phi3))) - phi1 / (1 + math.exp(-phi2 * phi3))
        assert torque("sigmoid", [v], **p)[0] == pytest.approx(printed, rel=1e-13, abs=1e-15)
    sigma = 1 / (1 + math.exp(-phi2 * phi3))
    ends = torque("sigmoid", [-1e3, 1e3], **p)
    np.testing.assert_allclose(ends, [-phi1 * sigma, phi1 * (1 - sigma)], rtol=1e-13)    # its two asymptotes
    assert np.all(np.diff(torque("sigmoid", np.linspace(-3, 3, 2001), **p)) >= 0)   # never decreasing,
    assert np.all(np.diff(torque("sigmoid", np.linspace(-0.5, 0.5, 2001), **p)) > 0)  # increasing before saturation
    slope = (torque("sigmoid", [1e-6], **p)[0] - torque("sigmoid", [-1e-6], **p)[0]) / 2e-6
    assert slope == pytest.approx(phi1 * phi2 * sigma * (1 - sigma), rel=1e-8)      # logistic slope at 0


def reversal(speed, samples=400, step=1e-3):
    """q̇ = +speed at the first sample, −speed after it, uniform steps: the first step's held
    velocity is 0 (no motion), then the displacement since the reversal is x_k = speed (t_k − t_1)."""
    t = np.arange(samples) * step
    qd = np.full(samples, -speed)
    qd[0] = speed
    return t, qd, speed * (t - t[1])


def test_dahl_after_a_reversal_is_its_closed_form_and_rate_independent():
    fc, s0, fv = 0.4, 300.0, 0.2
    for speed in (0.05, 0.5):
        t, qd, x = reversal(speed)
        got = torque("dahl", qd, t, coulomb=fc, sigma0=s0, viscous=fv)
        # dF/dx = σ0 (1 + F/F_C) going backwards from F = +F_C: F = −F_C + 2 F_C exp(−σ0 x / F_C)
        closed = -fc + 2 * fc * np.exp(-s0 * x / fc) - fv * speed
        assert got[0] == pytest.approx(fc + fv * speed, rel=1e-14)                 # steady state of sample 0
        np.testing.assert_allclose(got[1:], closed[1:], rtol=1e-12, atol=1e-14)


def test_lugre_after_a_reversal_is_its_closed_form():
    p = dict(coulomb=0.3, static=0.5, stribeck_velocity=0.04, sigma0=800.0, sigma1=2.0, viscous=0.1)
    speed = 0.03
    t, qd, x = reversal(speed)
    g = 0.3 + 0.2 * math.exp(-(speed / 0.04) ** 2)          # eq. (4), even in v
    z_ss = g / 800.0
    z = -z_ss + 2 * z_ss * np.exp(-x / z_ss)               # ż = −|v| (1 + z / z_ss) from z = +z_ss
    zdot = -speed * (1 + z / z_ss)
    closed = 800.0 * z + 2.0 * zdot - 0.1 * speed            # eq. (3)
    got = torque("lugre", qd, t, **p)
    np.testing.assert_allclose(got[1:], closed[1:], rtol=1e-11, atol=1e-13)
    steady = torque("lugre", np.full(50, speed), np.arange(50) * 0.01, **p)
    np.testing.assert_allclose(steady, torque("stribeck", np.full(50, speed), **p), rtol=1e-14)  # eq. (5)


def test_affine_scan_is_the_recursion():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=1000), rng.uniform(0, 1, 1000)
    z = [0.7]
    for k in range(1000):
        z.append(a[k] + b[k] * z[-1])
    np.testing.assert_allclose(laws.affine_scan(a, b, 0.7), z, rtol=1e-12, atol=1e-14)


# -- fitting recovers known parameters ---------------------------------------------------------

TRUE = {"coulomb_viscous": dict(coulomb=0.4, viscous=0.8),
        "schilling": dict(coulomb=0.4, static=0.6, stribeck_velocity=0.05, viscous=0.8),
        "stribeck": dict(coulomb=0.4, static=0.6, stribeck_velocity=0.05, viscous=0.8),
        "sigmoid": dict(phi1=0.87224, phi2=9.0657, phi3=0.025882),
        "dahl": dict(coulomb=0.4, sigma0=200.0, viscous=0.8),
        "lugre": dict(coulomb=0.4, static=0.6, stribeck_velocity=0.05, sigma0=200.0, sigma1=0.5, viscous=0.8)}
# how each parameter scales with the velocity scale V and the torque scale T
DIMENSION = {"coulomb": (1, 0), "static": (1, 0), "viscous": (1, -1), "stribeck_velocity": (0, 1),
             "sigma0": (1, -1), "sigma1": (1, -1), "phi1": (1, 0), "phi2": (0, -1), "phi3": (0, 1)}


def excitation(speed, samples=1200):
    """Three tones through zero velocity many times, irregular stamps (s)."""
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.uniform(0.5, 1.5, samples)) * 0.02
    qd = speed * (0.6 * np.sin(2 * np.pi * 0.1 * t) + 0.3 * np.sin(2 * np.pi * 0.37 * t + 1)
                  + 0.1 * np.sin(2 * np.pi * 1.3 * t))
    return t, qd


@pytest.mark.parametrize("law", dp.FRICTION_LAWS)
@pytest.mark.parametrize("speed, torque_scale", [(1.0, 1.0), (0.01, 16.0)])   # the second: ±0.01 rad/s, ~10 N·m
def test_fit_recovers_noise_free_parameters(law, speed, torque_scale):
    true = {k: v * torque_scale ** DIMENSION[k][0] * speed ** DIMENSION[k][1] for k, v in TRUE[law].items()}
    t, qd = excitation(speed)
    tau = laws.evaluate(laws.LAWS[law], true, qd, t)
    fit = dp.fit_friction(qd, tau, law=law, t=t)
    assert set(fit.params) == set(true)
    for name, value in true.items():
        assert fit.params[name] == pytest.approx(value, rel=1e-6), name
    assert fit.rms <= 1e-9 * np.sqrt(np.mean(tau ** 2))
    np.testing.assert_allclose(fit.predict(qd, t=t), tau, rtol=0, atol=1e-8 * np.abs(tau).max())
    assert fit.undetermined == ()                # every parameter of the truth shapes the data


@pytest.mark.parametrize("law", ["schilling", "stribeck"])
@pytest.mark.parametrize("hump", [0.5, 1.0, 3.0])          # the Stribeck velocity in units of the RMS speed
def test_a_wide_stribeck_hump_is_recovered(law, hump):
    """A hump as wide as the motion itself: the starts at 0.03 and 0.3 V had no gradient
    towards it, and v_S = 1.7 V was fitted as no hump at all (F_S = F_C, RMS 1.6e-2 N·m on
    noise-free data)."""
    t, qd = excitation(0.5)
    speed = np.sqrt(np.mean(qd ** 2))
    true = dict(coulomb=0.3, static=0.9, stribeck_velocity=hump * speed, viscous=0.5)
    tau = laws.evaluate(laws.LAWS[law], true, qd, t)
    fit = dp.fit_friction(qd, tau, law=law, t=t)
    for name, value in true.items():
        assert fit.params[name] == pytest.approx(value, rel=1e-6), name


@pytest.mark.parametrize("law, hump", [("schilling", None), ("stribeck", None), ("stribeck", 1e-9)])
def test_a_parameter_the_data_do_not_see_is_reported_undetermined(law, hump):
    """Data with no static hump (F_S = F_C: v_S multiplies F_S − F_C = 0), or one of width
    1e-9 rad/s that no sample's speed comes near (e^(−(q̇/v_S)²) underflows to 0): v_S is
    arbitrary, and so is F_S where the fit found a hump that no sample sees; they are
    reported.  Moving one of them by the step the definition takes (v_S by a factor e, F_S
    by the RMS torque T) moves the prediction by less than 1e-6 T; moving any other tenfold
    moves it by 1e-3 N·m or more."""
    t, qd = excitation(0.5)
    static = 0.3 if hump is None else 0.9
    true = dict(coulomb=0.3, static=static, stribeck_velocity=hump or 0.1, viscous=0.5)
    tau = laws.evaluate(laws.LAWS[law], true, qd, t)
    fit = dp.fit_friction(qd, tau, law=law, t=t)
    assert fit.rms <= 1e-9 * np.sqrt(np.mean(tau ** 2))
    assert "stribeck_velocity" in fit.undetermined and set(fit.undetermined) <= {"static", "stribeck_velocity"}
    assert fit.to_dict()["undetermined"] == list(fit.undetermined)
    assert f"stribeck_velocity = {fit.params['stribeck_velocity']:.3g} rad/s" in undetermined_note(fit.to_dict())
    assert ("static" in fit.undetermined) == (fit.params["static"] > fit.params["coulomb"])    # an unseen hump
    prediction, scale = fit.predict(qd), np.sqrt(np.mean(tau ** 2))
    for name, value in fit.params.items():
        if name in fit.undetermined:
            moved = value * np.e if name == "stribeck_velocity" else value + scale
        else:
            moved = 0.1 * value if name == "coulomb" else 10 * value
        change = np.sqrt(np.mean((torque(law, qd, **dict(fit.params, **{name: moved})) - prediction) ** 2))
        assert (change <= 1e-6 * scale) if name in fit.undetermined else (change >= 1e-3), (name, change)


@pytest.mark.parametrize("law", ["schilling", "stribeck"])
def test_parameters_that_trade_off_together_are_reported_undetermined(law):
    """|q̇| only 0.1 and 0.3 rad/s, both ways: the law's four parameters meet two torque levels
    per direction, so a family of them fits exactly.  The fit is one of the family, far
    from the truth that fits as exactly, and each parameter alone still moves the
    prediction: only the Jacobian's null space tells (the fit said ``()``)."""
    t = np.arange(0, 40, 0.002)
    qd = np.where(np.sin(2 * np.pi * 0.25 * t) >= 0, 1.0, -1.0) * np.where(np.sin(2 * np.pi * 0.1 * t) >= 0, 0.1, 0.3)
    true = dict(coulomb=0.3, static=0.5, stribeck_velocity=0.15, viscous=0.5)
    tau = torque(law, qd, **true)
    fit = dp.fit_friction(qd, tau, law=law)
    assert fit.rms <= 1e-9 * np.sqrt(np.mean(tau ** 2))
    assert max(abs(fit.params[name] / value - 1) for name, value in true.items()) > 0.1     # another exact fit
    assert {"coulomb", "stribeck_velocity"} <= set(fit.undetermined)


def test_lugre_on_noisy_data_reaches_the_fit_started_at_the_truth():
    """LuGre (F_C 0.6, F_S 0.9, v_S 0.04) with noise of σ = 0.05 N·m: 3 of 25 seeds stopped
    in a worse minimum (v_S from 5e-6 to 3e7, σ1 a fifth of the truth; the sum of squares
    46 σ² above the fit started at the truth), the stiff start built on a Coulomb level at
    its floor.  Here seed 109, against least squares started at the truth."""
    from scipy.optimize import least_squares

    t = np.linspace(0, 10, 2000)
    qd = 0.4 * np.sin(2 * np.pi * 0.3 * t) + 0.15 * np.sin(2 * np.pi * 1.1 * t + 0.3)
    true = dict(coulomb=0.6, static=0.9, stribeck_velocity=0.04, sigma0=200.0, sigma1=1.0, viscous=0.8)
    law = laws.LAWS["lugre"]
    tau = laws.evaluate(law, true, qd, t) + 0.05 * np.random.default_rng(109).normal(size=t.size)
    fit = dp.fit_friction(qd, tau, law="lugre", t=t)

    def residual(x):
        return laws.evaluate(law, dict(zip(true, np.exp(x))), qd, t) - tau
    best = least_squares(residual, np.log(list(true.values())), xtol=1e-14, ftol=1e-14, gtol=1e-14)
    assert fit.rms <= np.sqrt(np.mean(best.fun ** 2)) * (1 + 1e-9)
    assert fit.params["stribeck_velocity"] == pytest.approx(0.045, rel=0.05)


def test_offset_is_recovered_and_reported():
    t, qd = excitation(0.2)
    true = dict(coulomb=0.5, viscous=2.0, offset=-0.3)
    tau = laws.evaluate(laws.LAWS["coulomb_viscous"], true, qd)
    fit = dp.fit_friction(qd, tau, law="coulomb_viscous", offset=True)
    for name, value in true.items():
        assert fit.params[name] == pytest.approx(value, rel=1e-9)
    d = fit.to_dict()
    assert d["units"] == {"coulomb": "N·m", "viscous": "N·m·s/rad", "offset": "N·m"}
    assert json.loads(json.dumps(d))["params"] == pytest.approx(true, rel=1e-9)


# -- the measured Franka joint 2 against the published models -----------------------------------

@pytest.fixture(scope="module")
def runs():
    return {run: dict(np.load(DATA.format(run))) for run in RUNS}


def published_best(data):
    scores = [rms(data[k], data["tau_friction"]) for k in data if k.startswith("published_")]
    return min(s for s in scores if np.isfinite(s))


@pytest.fixture(scope="module")
def slow_fits(runs):
    slow = runs["slow"]
    return {law: dp.fit_friction(slow["qd"], slow["tau_friction"], law=law, t=slow["t"]) for law in dp.FRICTION_LAWS}


def held_out(fits, data):
    return {law: rms(fit.predict(data["qd"], t=data["t"]), data["tau_friction"]) for law, fit in fits.items()}


@pytest.mark.parametrize("run", RUNS)
def test_fitted_on_a_run_our_best_law_is_at_least_the_best_published(runs, run):
    data = runs[run]
    ours = min(dp.fit_friction(data["qd"], data["tau_friction"], law=law, t=data["t"]).rms
               for law in ("coulomb_viscous", "sigmoid", "dahl"))    # a subset: its best bounds the best of all
    assert ours <= published_best(data)          # measured: 0.161 vs 0.232, 0.221 vs 0.375, 0.394 vs 0.406


def test_coulomb_viscous_is_the_classical_least_squares_fit(runs, slow_fits):
    slow = runs["slow"]
    columns = np.column_stack([np.sign(slow["qd"]), slow["qd"]])
    coulomb, viscous = np.linalg.lstsq(columns, slow["tau_friction"], rcond=None)[0]
    assert slow_fits["coulomb_viscous"].params == pytest.approx({"coulomb": coulomb, "viscous": viscous}, rel=1e-9)


def test_a_law_that_contains_another_fits_at_least_as_well(slow_fits):
    """Schilling and Stribeck contain Coulomb-viscous (F_S = F_C), LuGre contains Dahl (F_S = F_C, σ1 = 0)."""
    rms_of = {law: fit.rms for law, fit in slow_fits.items()}
    assert rms_of["schilling"] <= rms_of["coulomb_viscous"] * (1 + 1e-12)
    assert rms_of["stribeck"] <= rms_of["coulomb_viscous"] * (1 + 1e-12)
    assert rms_of["lugre"] <= rms_of["dahl"] * (1 + 1e-12)


def test_fitted_on_the_slow_run_our_best_law_predicts_the_middle_run_as_well_as_the_published(runs, slow_fits):
    middle = runs["middle"]
    assert min(held_out(slow_fits, middle).values()) <= published_best(middle)   # measured: lugre 0.3741 vs 0.3752


@pytest.mark.xfail(strict=True, reason="measured on these slices: our best slow-fitted law predicts the high run at "
                                       "0.4066 N·m (dahl), the published Dahl at 0.4062; on the full logs it is a tie "
                                       "(coulomb_viscous = the published CV, 0.40261 N·m)")
def test_fitted_on_the_slow_run_our_best_law_predicts_the_high_run_as_well_as_the_published(runs, slow_fits):
    high = runs["high"]
    assert min(held_out(slow_fits, high).values()) <= published_best(high)


def test_dynamic_prediction_starts_from_the_steady_state_of_its_first_sample(runs, slow_fits):
    high = runs["high"]
    fit = slow_fits["dahl"]
    first = fit.predict(high["qd"], t=high["t"])[0]
    p = fit.params
    assert first == pytest.approx(math.copysign(p["coulomb"], high["qd"][0]) + p["viscous"] * high["qd"][0], rel=1e-12)


# -- refused input ------------------------------------------------------------------------------

def test_bad_inputs_are_refused_with_clear_errors():
    t, qd = excitation(0.1, samples=50)
    tau = np.sign(qd) * 0.3
    with pytest.raises(InputError, match="unknown friction law 'coulomb'.*coulomb_viscous, schilling"):
        dp.fit_friction(qd, tau, law="coulomb")
    with pytest.raises(InputError, match="tau has 49 samples but qd has 50"):
        dp.fit_friction(qd, tau[:-1])
    with pytest.raises(InputError, match="tau has a non-finite entry .* at sample 7"):
        dp.fit_friction(qd, np.where(np.arange(50) == 7, np.nan, tau))
    with pytest.raises(InputError, match="qd has a non-finite entry .* at sample 3"):
        dp.fit_friction(np.where(np.arange(50) == 3, np.inf, qd), tau)
    with pytest.raises(InputError, match="needs at least 13 samples, got 5"):
        dp.fit_friction(qd[:5], tau[:5], law="lugre", t=t[:5])
    with pytest.raises(InputError, match="dahl law is dynamic.*needs the sample times t"):
        dp.fit_friction(qd, tau, law="dahl")
    with pytest.raises(InputError, match=r"t must be strictly increasing, but t\[10\]"):
        dp.fit_friction(qd, tau, law="dahl", t=np.where(np.arange(50) == 10, t[9], t))
    with pytest.raises(InputError, match=r"shape \(50, 2\); fit the columns"):
        dp.fit_friction(np.column_stack([qd, qd]), tau)
    with pytest.raises(InputError, match="qd is zero at every sample"):
        dp.fit_friction(np.zeros(50), tau)
    fit = dp.fit_friction(qd, tau, law="dahl", t=t)
    with pytest.raises(InputError, match="needs the sample times"):
        fit.predict(qd)
    with pytest.raises(InputError, match="q has 3 samples but qd has 50"):
        fit.predict(qd, t=t, q=[0.0, 1.0, 2.0])


def test_an_offset_needs_motion_both_ways():
    # q̇ > 0 at every sample: a Coulomb level and an offset are one constant torque.  Measured
    # before the refusal: Schilling fitted F_C = 1.9e9, τ_0 = -1.9e9 (exact at the samples,
    # -3.9e9 N·m predicted at any q̇ < 0)
    t, qd = excitation(0.1, samples=60)
    qd = np.abs(qd) + 0.01
    tau = laws.evaluate(laws.LAWS["schilling"], dict(TRUE["schilling"], offset=0.1), qd)
    for law in ("coulomb_viscous", "schilling", "lugre"):
        with pytest.raises(InputError, match="offset=True needs motion both ways: q̇ is positive or zero"):
            dp.fit_friction(qd, tau, law=law, t=t, offset=True)
        with pytest.raises(InputError, match="q̇ is negative or zero at every sample"):
            dp.fit_friction(-qd, -tau, law=law, t=t, offset=True)
    fit = dp.fit_friction(qd, tau - 0.1, law="schilling")              # without the offset: the law alone
    assert fit.rms <= 1e-9 * np.sqrt(np.mean(tau ** 2))


def test_one_speed_cannot_tell_coulomb_from_viscous():
    """|q̇| the same at every moving sample (one speed, or a reversal test at ±one speed):
    sgn(q̇) and q̇ are proportional there.  Measured before the refusal: F_C = 1.4e11 N·m,
    F_v = −2.8e12 N·m·s/rad at q̇ = 0.05 rad/s (−1.3e12 N·m predicted at 0.5 rad/s)."""
    t = np.arange(400) * 1e-3
    tau = 0.4 + 0.02 * np.random.default_rng(0).normal(size=t.size)
    square = 0.05 * np.sign(np.sin(2 * np.pi * 2 * t + 0.1))
    for qd, torque in ((np.full_like(t, 0.05), tau), (square, 0.4 * np.sign(square)), (np.where(t < 0.2, 0.05, 0.0), tau)):
        for law in ("coulomb_viscous", "stribeck", "schilling", "lugre"):
            with pytest.raises(InputError, match=r"one speed, \|q̇\| = 0.05 rad/s, at every moving sample"):
                dp.fit_friction(qd, torque, law=law, t=t)
    two = np.where(t < 0.2, 0.05, 0.5)                           # two speeds: both identified
    fit = dp.fit_friction(two, 0.3 + 0.2 * two, law="coulomb_viscous")
    assert abs(fit.params["coulomb"] - 0.3) <= 1e-9 and abs(fit.params["viscous"] - 0.2) <= 1e-9


def test_with_an_offset_one_speed_in_each_direction_is_refused():
    """q̇ = +0.1 rad/s forward and −0.3 backward, with an offset: sgn(q̇), q̇ and 1 are linearly
    dependent.  Measured before the refusal (noise 0.01 N·m): F_C = 5.5e9 N·m, F_v = −2.8e10,
    τ_0 = −2.8e9, −1.1e10 N·m predicted at 0.5 rad/s, nothing reported undetermined.  Samples
    at rest tell the offset apart (sgn 0): then the fit recovers the truth."""
    t = np.arange(0, 20, 0.002)
    qd = np.where(np.sin(2 * np.pi * 0.25 * t) >= 0, 0.1, -0.3)
    true = dict(coulomb=0.3, viscous=0.5, offset=0.05)
    tau = laws.evaluate(laws.LAWS["coulomb_viscous"], true, qd)
    for law in ("coulomb_viscous", "stribeck", "lugre"):
        with pytest.raises(InputError, match=r"one speed in each direction \(0.1 rad/s forward, 0.3 rad/s backward\)"):
            dp.fit_friction(qd, tau, law=law, t=t, offset=True)
    qd[::7] = 0.0
    fit = dp.fit_friction(qd, laws.evaluate(laws.LAWS["coulomb_viscous"], true, qd), law="coulomb_viscous", offset=True)
    assert fit.params == pytest.approx(true, rel=1e-9) and fit.undetermined == ()


def test_data_beyond_the_float_range_of_the_scales_are_refused():
    """RMS torque 1e140 N·m at speeds of 1e-170 rad/s: T/V overflows; scipy's ValueError
    ('Initial guess is outside of provided bounds') is now one InputError."""
    t = np.arange(0, 2, 0.002)
    wave = np.sin(2 * np.pi * t)
    for law in ("coulomb_viscous", "sigmoid"):
        with pytest.raises(InputError, match="the data's scales overflow float64"):
            dp.fit_friction(1e-170 * wave, 1e140 * (np.sign(wave) + 0.5 * wave), law=law)


# -- the command line -------------------------------------------------------------------------

def main(argv):
    from dyn_plugin.tools.cli import main as cli

    return cli(argv)


def test_cli_fits_scores_and_writes_json(capsys, tmp_path):
    plot = tmp_path / "friction.png"
    code = main(["fit-friction", DATA.format("slow"), "--law", "coulomb_viscous", "dahl",
                 "--test", DATA.format("middle"), "--plot", str(plot), "--json", "-"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["laws"]) == {"coulomb_viscous", "dahl"}
    slow, middle = DATA.format("slow"), DATA.format("middle")
    data = np.load(middle)
    assert result["published"]["CV"][middle] == pytest.approx(rms(data["published_CV"], data["tau_friction"]), rel=1e-12)
    fit = dp.fit_friction(**{k: np.load(slow)[k] for k in ("qd", "t")}, tau=np.load(slow)["tau_friction"], law="dahl")
    assert result["laws"]["dahl"]["rms"][slow] == pytest.approx(fit.rms, rel=1e-12)
    assert result["laws"]["dahl"]["rms"][middle] == pytest.approx(
        rms(fit.predict(data["qd"], t=data["t"]), data["tau_friction"]), rel=1e-12)
    assert plot.stat().st_size > 10_000


def test_cli_reads_a_csv_file(capsys, tmp_path):
    t, qd = excitation(0.3, samples=200)
    tau = laws.evaluate(laws.LAWS["coulomb_viscous"], dict(coulomb=0.25, viscous=1.5), qd)
    path = tmp_path / "joint.csv"
    path.write_text("# a joint\ntau,qd,t\n" + "".join(f"{a:.17g},{b:.17g},{c:.17g}\n" for a, b, c in zip(tau, qd, t)))
    assert main(["fit-friction", str(path), "--law", "coulomb_viscous", "--json", "-"]) == 0
    params = json.loads(capsys.readouterr().out)["laws"]["coulomb_viscous"]["fit"]["params"]
    assert params == pytest.approx({"coulomb": 0.25, "viscous": 1.5}, rel=1e-9)


@pytest.mark.parametrize("content, message", [
    (b"t,qd,tau\n1,2,3\n", "is not an .npz archive"),                     # text named .npz
    (None, "damaged or truncated"),                                       # the first 3000 bytes of a real archive
    ("no tau", "no friction torque"),
])
def test_cli_refuses_a_bad_file_in_one_line(capsys, tmp_path, content, message):
    path = tmp_path / "joint.npz"
    if content is None:
        with open(DATA.format("slow"), "rb") as archive:
            path.write_bytes(archive.read()[:3000])
    elif content == "no tau":
        np.savez(path, t=np.arange(5.0), qd=np.ones(5))
    else:
        path.write_bytes(content)
    assert main(["fit-friction", str(path), "--law", "coulomb_viscous"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and message in err[0], err
