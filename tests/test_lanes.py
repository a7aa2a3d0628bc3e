"""Batches over SIMD lanes and over cores (issue #16, part 2): the vectorisable sine and
cosine against the C library, the Cholesky solve over lanes against numpy, the generated
batch code against pinocchio, and results bit-identical for any number of workers."""

import math

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin import loops
from dyn_plugin.compiled import lanes
from dyn_plugin.errors import InputError


def _angles():
    rng = np.random.default_rng(3)
    near_zeros = np.arange(-4000, 4000) * (np.pi / 2)          # every quadrant boundary up to |x| ~ 6e3
    return np.concatenate([rng.uniform(-10, 10, 20000), rng.uniform(-1e5, 1e5, 20000),
                           rng.uniform(-0.9, 0.9, 5000) * lanes.EXACT_RANGE,
                           near_zeros, np.nextafter(near_zeros, np.inf), near_zeros + 1e-9,
                           [0.0, 1e-300, 5e-324, -1e-8, math.pi / 4, -math.pi / 4]])


def _ulps(ours, libm):
    return np.abs(ours - libm) / np.spacing(np.maximum(np.abs(libm), np.finfo(float).tiny))


def test_sin_cos_lanes_within_two_ulps_of_the_c_library():
    x = _angles()
    n = len(x)
    X = np.zeros(3 * lanes.LANES)
    worst_sin = worst_cos = 0.0
    for start in range(0, n, lanes.LANES):
        chunk = x[start:start + lanes.LANES]
        X[:len(chunk)] = chunk
        lanes.sin_cos_lanes(X, 0, 1, 2, len(chunk))
        s, c = X[lanes.LANES:lanes.LANES + len(chunk)], X[2 * lanes.LANES:2 * lanes.LANES + len(chunk)]
        worst_sin = max(worst_sin, _ulps(s, np.sin(chunk)).max())
        worst_cos = max(worst_cos, _ulps(c, np.cos(chunk)).max())
    assert worst_sin <= 2 and worst_cos <= 2, (worst_sin, worst_cos)


def test_sin_cos_scalar_equals_the_lanes_and_huge_angles_use_the_c_library():
    x = np.array([0.3, -2.0, 1e3, 3 * lanes.EXACT_RANGE, -1e22, 1e300])
    X = np.zeros(3 * lanes.LANES)
    X[:len(x)] = x
    lanes.sin_cos_lanes(X, 0, 1, 2, len(x))
    for k, angle in enumerate(x):
        assert lanes.sin_cos(angle) == (X[lanes.LANES + k], X[2 * lanes.LANES + k])
    for angle in x[3:]:
        assert lanes.sin_cos(angle) == (math.sin(angle), math.cos(angle))


def test_cholesky_solve_lanes_equals_numpy():
    rng = np.random.default_rng(5)
    n, m = 7, 100
    A = rng.normal(size=(m, n, n))
    M = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(n)
    b = rng.normal(size=(m, n))
    flat_M = np.zeros((n * n, lanes.LANES))
    flat_M[:, :m] = M.reshape(m, n * n).T
    flat_b = np.zeros((n, lanes.LANES))
    flat_b[:, :m] = b.T
    x = np.zeros((n, lanes.LANES))
    flat_M, flat_b, x = flat_M.ravel(), flat_b.ravel(), x.ravel()
    lanes.cholesky_solve_lanes(flat_M, flat_b, x, n, m)
    expected = np.linalg.solve(M, b[..., None])[..., 0]
    ours = x.reshape(n, lanes.LANES)[:, :m].T
    assert np.abs(ours - expected).max() <= 1e-12 * np.abs(expected).max()


def test_cholesky_solve_lanes_gives_nan_for_a_matrix_that_is_not_positive_definite():
    n = 2
    M = np.zeros((n * n, lanes.LANES))
    M[:, 0] = [1.0, 2.0, 2.0, 1.0]                   # eigenvalues 3 and −1
    M[:, 1] = [2.0, 0.0, 0.0, 2.0]
    b = np.ones((n, lanes.LANES))
    M, b = M.ravel(), b.ravel()
    lanes.cholesky_solve_lanes(M, b, b, n, 2)
    x = b.reshape(n, lanes.LANES)
    assert np.isnan(x[:, 0]).any()
    assert np.allclose(x[:, 1], 0.5, rtol=0, atol=1e-15)


# -- the generated batch code ------------------------------------------------------------

@pytest.fixture(scope="module", params=dp.list_robots())
def pair(request):
    model = dp.load_robot(request.param)
    return dp.get_backend("symbolic_numba", model), dp.get_backend("pinocchio", model)


def _states(n, N, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-scale, scale, (N, n)) for _ in range(3)]


def _relative(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


@pytest.mark.parametrize("N", [1, 5, lanes.LANES + 3, loops.PARALLEL_FROM + 37])
def test_generated_batches_equal_pinocchio(pair, N):
    ours, ref = pair
    q, qd, qdd = _states(ours.model.n, N, seed=N)
    assert _relative(ours.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd)) <= 1e-12
    assert _relative(ours.bias_forces(q, qd), ref.bias_forces(q, qd)) <= 1e-12
    assert _relative(ours.mass_matrix(q), ref.mass_matrix(q)) <= 1e-12
    tau = ref.inverse_dynamics(q, qd, qdd)
    assert _relative(ours.forward_dynamics(q, qd, tau), qdd) <= 1e-9      # through cond(M)


def test_generated_batches_take_angles_beyond_the_reduced_range(pair):
    """|q| ≥ EXACT_RANGE goes to the C library's sin/cos, lane by lane."""
    ours, ref = pair
    q, qd, qdd = _states(ours.model.n, 300, seed=9)
    q[::7] += 4 * lanes.EXACT_RANGE
    assert _relative(ours.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd)) <= 1e-9
    assert _relative(ours.mass_matrix(q), ref.mass_matrix(q)) <= 1e-9


def test_one_state_equals_its_row_of_a_batch(pair):
    ours, _ = pair
    q, qd, qdd = _states(ours.model.n, 9, seed=2)
    for k in range(len(q)):
        np.testing.assert_allclose(ours.inverse_dynamics(q[k], qd[k], qdd[k]), ours.inverse_dynamics(q, qd, qdd)[k],
                                   rtol=1e-14, atol=1e-12)


# -- workers ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["symbolic_numba", "newton_euler"])
def test_results_are_bit_identical_for_any_number_of_workers(name):
    model = dp.load_robot("puma560")
    q, qd, qdd = _states(model.n, loops.PARALLEL_FROM + 300, seed=4)
    results = {}
    for count in (1, 2):
        be = dp.get_backend(name, model, workers=count)
        results[count] = (be.inverse_dynamics(q, qd, qdd), be.forward_dynamics(q, qd, qdd), be.mass_matrix(q))
    for one, two in zip(results[1], results[2]):
        assert np.array_equal(one, two)
    small = dp.get_backend(name, model).inverse_dynamics(q[:100], qd[:100], qdd[:100])   # serial loop
    assert np.array_equal(small, results[2][0][:100])


def test_workers_setting_nests_and_is_restored(monkeypatch):
    monkeypatch.delenv(loops.WORKERS_ENV, raising=False)
    cores = loops.available_cores()
    assert loops.workers() == cores
    with dp.using_workers(1):
        assert loops.workers() == 1
        with dp.using_workers(None):
            assert loops.workers() == 1
    assert loops.workers() == cores
    dp.set_workers(1)
    try:
        assert loops.workers() == 1
        with dp.using_workers(cores + 5):
            assert loops.workers() == cores          # never more than the usable cores
    finally:
        dp.set_workers(None)
    monkeypatch.setenv(loops.WORKERS_ENV, "1")
    assert loops.workers() == 1


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_bad_workers_are_refused(bad):
    with pytest.raises(InputError, match="workers must be a positive integer"):
        dp.get_backend("newton_euler", dp.load_robot("scara"), workers=bad)
    with pytest.raises(InputError):
        with dp.using_workers(bad):
            pass


def test_bad_workers_environment_is_refused(monkeypatch):
    monkeypatch.setenv(loops.WORKERS_ENV, "many")
    with pytest.raises(InputError, match="DYN_PLUGIN_WORKERS"):
        loops.workers()
    monkeypatch.setenv(loops.WORKERS_ENV, "0")
    with pytest.raises(InputError, match="DYN_PLUGIN_WORKERS"):
        loops.workers()
