"""Monte-Carlo friction study: dyn_plugin.studies.friction_monte_carlo.

Small K and a short trajectory keep the file fast; the 2-process dask cluster is started
once for the module.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.errors import InputError, ModelError
from dyn_plugin.studies.friction_monte_carlo import (DEFAULT_UNCERTAINTY, PARAMETERS, Spec, Uncertainty,
                                                     friction_envelope, plot_envelope, read_uncertainty,
                                                     sample_friction)
from dyn_plugin.friction.parameters import friction_file, load_friction
from dyn_plugin.studies.friction_study import reference_trajectory

K = 64


@pytest.fixture(scope="module")
def puma():
    return dp.load_robot("puma560")


@pytest.fixture(scope="module")
def trajectory(puma):
    return reference_trajectory(puma, duration=1.0, samples=41)


# -- what is computed ----------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["corke", "dhanaraj"])
def test_nominal_is_what_friction_adds_to_the_rigid_body(puma, trajectory, profile):
    t, q, qd, qdd = trajectory
    env = friction_envelope(puma, samples=1, trajectory=trajectory, profile=profile)
    be = dp.get_backend("newton_euler_friction", puma, profile=profile)
    parts = be.inverse_dynamics_breakdown(q, qd, qdd)
    assert np.array_equal(env.nominal, parts.bearing + parts.transmission + parts.velocity)
    # = the actuator torque minus the rigid body and its motor inertia
    added = be.inverse_dynamics(q, qd, qdd) - parts.rigid_body - parts.armature
    assert np.allclose(env.nominal, added, rtol=0, atol=1e-9 * max(1.0, np.abs(added).max()))
    assert np.any(env.nominal[:, :3] != 0)
    assert env.t.shape == (41,) and env.percentiles.shape == (3, 41, 6) and env.mean.shape == (41, 6)


@pytest.mark.parametrize("profile", ["corke", "dhanaraj"])
def test_zero_uncertainty_gives_the_nominal_torque_exactly(puma, trajectory, profile):
    for none in (Uncertainty.none(), Uncertainty(default=0.0), Uncertainty(viscous=0.0, coulomb=Spec(absolute=0.0))):
        env = friction_envelope(puma, uncertainty=none, samples=20, trajectory=trajectory, profile=profile,
                                percentiles=(0, 5, 50, 95, 100), chunk_size=7)
        for level in env.percentiles:
            assert np.array_equal(level, env.nominal)
        assert np.array_equal(env.minimum, env.nominal) and np.array_equal(env.maximum, env.nominal)
        assert np.allclose(env.mean, env.nominal, rtol=1e-15, atol=0) and np.all(env.std < 1e-12)


def test_viscous_only_uniform_matches_the_closed_form(puma, trajectory):
    """b_v ~ U(b0 − a, b0 + a) changes the friction torque by exactly (b_v − b0) q̇."""
    t, q, qd, qdd = trajectory
    a = np.array([2.0, 3.0, 1.0, 0.2, 0.2, 0.1])                        # < b0 = 5.80, 9.50, 3.98, 0.41, 0.43, 0.22
    uncertainty = Uncertainty(viscous=Spec(absolute=a))
    levels = (5, 25, 50, 75, 95)
    env = friction_envelope(puma, uncertainty=uncertainty, samples=K, trajectory=trajectory, profile="corke",
                            percentiles=levels)
    b0 = load_friction("puma560", puma, "corke").velocity.viscous
    spread = a * np.abs(qd)                                              # (T, n) the analytic half-width
    tol = 1e-12 * max(1.0, np.abs(env.nominal).max())
    # every sample lies within nominal ± a|q̇| ...
    assert np.all(env.minimum >= env.nominal - spread - tol) and np.all(env.maximum <= env.nominal + spread + tol)
    # ... and the samples fill that interval (64 uniform draws: none above 0.8 of the half-width has p = 0.1^64)
    moving = np.abs(qd) > 1e-3
    assert np.all((env.minimum - env.nominal)[moving] <= -0.8 * spread[moving])
    assert np.all((env.maximum - env.nominal)[moving] >= 0.8 * spread[moving])
    # the exact percentiles of the drawn b_v (the same draws the envelope used)
    draws = np.array([f.velocity.viscous for f in sample_friction(load_friction("puma560", puma, "corke"),
                                                                   uncertainty, samples=K)])
    assert np.all(np.abs(draws - b0) <= a) and len(np.unique(draws[:, 0])) == K
    expected = np.percentile(env.nominal + (draws - b0)[:, None, :] * qd, levels, axis=0)
    assert np.allclose(env.percentiles, expected, rtol=0, atol=tol)
    # and the population quantiles of a uniform: the p-th percentile of (b_v − b0) q̇ is (2p − 1) a |q̇| whatever
    # the sign of q̇; the sample quantile's standard error is 2 √(p(1 − p)/K) a|q̇|: allow 4 of them
    for level, values in zip(levels, env.percentiles):
        p = level / 100
        population = env.nominal + (2 * p - 1) * spread
        assert np.all(np.abs(values - population)[moving] <= 8 * np.sqrt(p * (1 - p) / K) * spread[moving])
    # the draws themselves: uniform on b0 ± a (Kolmogorov-Smirnov on 4000 draws)
    from scipy.stats import kstest

    many = np.array([f.velocity.viscous for f in sample_friction(load_friction("puma560", puma, "corke"),
                                                                  uncertainty, samples=4000, seed=5)])
    for j in range(6):
        assert kstest(many[:, j], "uniform", args=(b0[j] - a[j], 2 * a[j])).pvalue > 1e-3
    # the standard deviation of U(−a, a) |q̇| is a|q̇|/√3
    assert np.allclose(env.std[moving], (spread / np.sqrt(3))[moving], rtol=0.25)
    assert np.all(env.std[np.abs(qd) == 0] == 0)


def test_serial_and_two_dask_workers_give_identical_results(puma, trajectory, dask_client):
    kwargs = dict(samples=K, seed=11, trajectory=trajectory, profile="dhanaraj", chunk_size=8,
                  uncertainty=Uncertainty(default=0.2, viscous=Spec(absolute=1.0, distribution="normal")))
    serial = friction_envelope(puma, **kwargs)
    client = dask_client

    def cached():  # backends in each worker's cache (the session's cluster may hold earlier studies')
        return client.run(lambda: len(__import__("dyn_plugin.studies.friction_monte_carlo", fromlist=["_"])._WORKER_CACHE))

    before = cached()
    parallel = friction_envelope(puma, client=client, **kwargs)
    assert len(client.scheduler_info()["workers"]) == 2
    # each worker process that ran chunks built this study's nominal backend once
    added = [count - before.get(worker, 0) for worker, count in cached().items()]
    assert sum(added) >= 1 and max(added) == 1
    for field in ("nominal", "percentiles", "mean", "std", "minimum", "maximum"):
        assert np.array_equal(getattr(serial, field), getattr(parallel, field)), field
    assert np.any(serial.std[:, :3] > 0)


def test_seed_and_chunks(puma, trajectory):
    base = dict(samples=50, trajectory=trajectory, profile="corke", chunk_size=16)
    a, b = friction_envelope(puma, seed=3, **base), friction_envelope(puma, seed=3, **base)
    c = friction_envelope(puma, seed=4, **base)
    assert np.array_equal(a.percentiles, b.percentiles) and not np.array_equal(a.percentiles, c.percentiles)
    models = sample_friction(load_friction("puma560", puma, "corke"), samples=50, seed=3, chunk_size=16)
    assert len(models) == 50


# -- physical bounds of the samples -----------------------------------------------------------


def test_static_stays_at_or_above_coulomb_in_every_sample(puma):
    nominal = dp.FrictionModel.create(puma, viscous=0.5, coulomb=[2.0, 2.0, 1.0, 0.3, 0.3, 0.3],
                                      coulomb_negative=[1.5, 2.5, 1.0, 0.2, 0.4, 0.3],
                                      static=[3.0, 2.2, 1.0, 0.5, 0.3, 0.6],
                                      static_negative=[2.0, 3.0, 1.1, 0.2, 0.5, 0.3])
    wide = Uncertainty(coulomb=Spec(absolute=1.5, distribution="normal"), coulomb_negative=Spec(relative=0.9),
                       static=Spec(relative=0.6), static_negative=Spec(absolute=1.0, distribution="normal"),
                       viscous=Spec(absolute=2.0, distribution="normal"), stribeck_velocity=Spec(relative=2.0))
    models = sample_friction(nominal, wide, samples=400, seed=1)
    raised = 0
    for m in models:
        v = m.velocity
        assert np.all(v.static_positive >= v.coulomb_positive) and np.all(v.static_negative >= v.coulomb_negative)
        for values in (v.viscous, v.coulomb_positive, v.coulomb_negative):
            assert np.all(values >= 0)
        assert np.all(v.stribeck_velocity > 0)
        raised += int(np.sum(v.static_positive == v.coulomb_positive) + np.sum(v.static_negative == v.coulomb_negative))
    assert raised > 0                                  # the bound was reached, so it was tested
    # truncated (conditioned), not clipped: no mass piled at 0, and the mean of N(0.5, 2²) given >= 0
    from scipy.stats import truncnorm

    viscous = np.array([m.velocity.viscous for m in models])
    assert viscous.min() > 0
    expected = truncnorm.mean(-0.25, np.inf, loc=0.5, scale=2.0)           # 1.79
    assert np.all(np.abs(viscous.mean(axis=0) - expected) < 0.3)          # standard error ~ 0.07


def test_default_keeps_a_model_without_stiction_peak_without_one(puma):
    corke = load_friction("puma560", puma, "corke")
    models = sample_friction(corke, samples=64)
    for m in models:
        v = m.velocity
        assert np.array_equal(v.static_positive, v.coulomb_positive)
        assert np.array_equal(v.static_negative, v.coulomb_negative)
        factor = v.coulomb_positive / corke.velocity.coulomb_positive
        assert np.allclose(v.coulomb_negative / corke.velocity.coulomb_negative, factor, rtol=1e-12)
        assert np.all(np.abs(factor - 1) <= 0.2 + 1e-12)
        assert np.all(np.abs(v.viscous / corke.velocity.viscous - 1) <= 0.2 + 1e-12)


def test_every_parameter_can_be_stated(puma):
    dhanaraj = load_friction("puma560", puma, "dhanaraj")
    for name in PARAMETERS:
        models = sample_friction(dhanaraj, Uncertainty({name: 0.1}), samples=4)
        assert len(models) == 4


def test_efficiency_stays_within_zero_and_one(puma):
    dhanaraj = load_friction("puma560", puma, "dhanaraj")
    models = sample_friction(dhanaraj, Uncertainty(efficiency=0.5, bearing_mu=0.3, breakaway=Spec(range=(0.0, 8.0))),
                             samples=200)
    top = [m.transmission.curves[0].efficiency.max() for m in models]
    assert max(top) <= 1.0 and max(top) > 0.99          # truncated at η = 1, and reached
    assert all(c.efficiency.min() > 0 for m in models for c in m.transmission.curves if c is not None)
    assert all(m.transmission.curves[4] is None for m in models)
    breakaway = np.array([m.transmission.breakaway for m in models])
    assert np.all((breakaway >= 0) & (breakaway <= 8.0)) and np.ptp(breakaway[:, 0]) > 6.0


# -- stated uncertainties, in Python and in the data file ------------------------------------


def test_bad_input_is_refused_with_the_culprit_named(puma, trajectory):
    run = lambda **kw: friction_envelope(puma, trajectory=trajectory, profile="corke", **kw)  # noqa: E731
    for samples in (0, -3, 2.5, True):
        with pytest.raises(InputError, match="samples"):
            run(samples=samples)
    with pytest.raises(InputError, match="seed"):
        run(seed=-1)
    with pytest.raises(InputError, match="percentiles"):
        run(percentiles=(5, 105))
    with pytest.raises(ModelError, match="unknown friction parameter.*'viscosity'"):
        Uncertainty(viscosity=0.1)
    with pytest.raises(ModelError, match="'coulomb' of joint 'joint3'.*-0.1"):
        run(uncertainty=Uncertainty(coulomb=[0.1, 0.1, -0.1, 0.1, 0.1, 0.1]))
    with pytest.raises(ModelError, match="'viscous'.*range.*physical"):
        run(uncertainty=Uncertainty(viscous=Spec(range=(-1.0, 2.0))))
    with pytest.raises(ModelError, match="no bearing friction.*'bearing_mu'"):
        run(uncertainty=Uncertainty(bearing_mu=0.1))
    with pytest.raises(ModelError, match="unknown joint.*'elbow'"):
        run(uncertainty=Uncertainty(viscous={"elbow": 0.1}))
    with pytest.raises(ModelError, match="exactly one of"):
        Spec(relative=0.1, absolute=1.0)
    with pytest.raises(ModelError, match="distribution"):
        Spec(relative=0.1, distribution="lognormal")
    with pytest.raises(InputError, match="trajectory"):
        friction_envelope(puma, trajectory=(trajectory[0], trajectory[1][:, :3], trajectory[2], trajectory[3]))
    with pytest.raises(InputError, match="trajectory qd has NaN"):
        friction_envelope(puma, trajectory=(trajectory[0], trajectory[1], trajectory[2] * np.nan, trajectory[3]))
    with pytest.raises(InputError, match="profile"):
        friction_envelope(puma, profile=trajectory)


def _with_uncertainty(tmp_path, table: str) -> Path:
    path = tmp_path / "puma560_friction.toml"
    path.write_text(friction_file("puma560").read_text() + "\n" + table)
    return path


def test_uncertainty_table_of_a_data_file(puma, trajectory, tmp_path):
    path = _with_uncertainty(tmp_path, """
[uncertainty]
source = "test numbers"
distribution = "uniform"
viscous = { absolute = [1.0, 1.0, 1.0, 0.1, 0.1, 0.1], source = "test" }

[uncertainty.profiles.dhanaraj]
breakaway = { range = [[5.0, 4.0, 2.0, 0, 0, 0], [7.0, 7.0, 3.0, 0, 0, 0]], distribution = "normal" }
""")
    assert load_friction(path, puma, "corke").name == "corke"                # the friction reader ignores the table
    corke = read_uncertainty(path, "corke")
    assert set(corke.specs) == {"viscous"} and corke.source == "test numbers"
    assert set(read_uncertainty(path, "dhanaraj").specs) == {"viscous", "breakaway"}
    env = friction_envelope(puma, friction=path, profile="corke", samples=16, trajectory=trajectory)
    assert env.uncertainty.source == "test numbers"
    spread = np.array([1.0, 1.0, 1.0, 0.1, 0.1, 0.1]) * np.abs(trajectory[2])
    assert np.all(np.abs(env.maximum - env.nominal) <= spread + 1e-9)
    # no table: the stated default
    assert read_uncertainty("puma560") is None
    assert friction_envelope(puma, samples=2, trajectory=trajectory).uncertainty is DEFAULT_UNCERTAINTY
    assert "ASSUMED" in DEFAULT_UNCERTAINTY.source


@pytest.mark.parametrize("table, match", [
    ('[uncertainty]\nviscous = 0.1\n', "source"),
    ('[uncertainty]\nsource = "x"\nviscosity = 0.1\n', "viscosity"),
    ('[uncertainty]\nsource = "x"\nviscous = { relative = 0.1, sigma = 2 }\n', "sigma"),
    ('[uncertainty]\nsource = "x"\n[uncertainty.profiles.nonesuch]\nviscous = 0.1\n', "nonesuch"),
])
def test_bad_uncertainty_tables_are_refused(tmp_path, table, match):
    with pytest.raises(ModelError, match=match):
        read_uncertainty(_with_uncertainty(tmp_path, table), "corke")


# -- output --------------------------------------------------------------------------------


def test_plot_and_json(puma, trajectory, tmp_path):
    env = friction_envelope(puma, samples=8, trajectory=trajectory, profile="dhanaraj")
    path = plot_envelope(env, tmp_path / "envelope.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
    data = env.as_dict()
    assert data["samples"] == 8 and np.array(data["percentiles"]).shape == (3, 41, 6)
    assert np.array_equal(env.percentile(50), env.percentiles[1])
    with pytest.raises(InputError, match="percentile 90"):
        env.percentile(90)


def test_importing_dyn_plugin_does_not_import_dask():
    code = ("import sys, dyn_plugin, dyn_plugin.studies.friction_monte_carlo; "
            "assert not {'dask', 'distributed'} & set(sys.modules), 'dask imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
