"""The generated batches check finiteness as they compute (symbolic/emit.py: each lane adds
x·0 of its inputs and results), so Backend._run makes no pass over the arrays before or
after; what the fused check flags is then checked exactly, and named."""

import numpy as np
import pytest

import dyn_plugin
from dyn_plugin.errors import InputError, NumericalError
from dyn_plugin.loops import PARALLEL_FROM, using_workers

SIZES = (5, PARALLEL_FROM + 131)          # serial, and blocks in parallel threads


@pytest.fixture(scope="module")
def puma():
    model = dyn_plugin.load_robot("puma560")
    return dyn_plugin.get_backend("symbolic_numba", model), dyn_plugin.get_backend("pinocchio", model)


def _states(N, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, (N, 6)) for _ in range(3)]


@pytest.mark.parametrize("N", SIZES)
@pytest.mark.parametrize("workers", [1, 2])
def test_a_nan_that_no_result_reads_is_named(puma, N, workers):
    """M(q) does not depend on q₁: the NaN is caught on the way in, not through the result."""
    be, _ = puma
    q, _, _ = _states(N)
    q[N - 2, 0] = np.nan
    with using_workers(workers), pytest.raises(InputError, match=rf"q has a non-finite entry .*'joint1'.*state {N - 2}"):
        be.mass_matrix(q)


@pytest.mark.parametrize("N", SIZES)
@pytest.mark.parametrize("method, bad", [("inverse_dynamics", "qdd"), ("forward_dynamics", "tau"),
                                         ("bias_forces", "qd"), ("inverse_dynamics_derivatives", "qd")])
def test_an_infinite_input_is_named(puma, N, method, bad):
    be, _ = puma
    q, qd, third = _states(N)
    arrays = {"bias_forces": (q, qd)}.get(method, (q, qd, third))
    arrays[{"q": 0, "qd": 1}.get(bad, 2)][N // 2, 3] = -np.inf
    with pytest.raises(InputError, match=rf"{bad} has a non-finite entry .*'joint4'.*state {N // 2}"):
        getattr(be, method)(*arrays)


@pytest.mark.parametrize("N", SIZES)
@pytest.mark.parametrize("method", ["inverse_dynamics", "inverse_dynamics_derivatives"])
def test_an_overflowing_result_is_named(puma, N, method):
    be, _ = puma
    q, qd, qdd = _states(N)
    qd[N - 1] = 1e200
    with pytest.raises(NumericalError, match=rf"{method} of robot 'puma560' overflowed.*state {N - 1}"):
        getattr(be, method)(q, qd, qdd)


@pytest.mark.parametrize("N", SIZES)
def test_a_flagged_result_that_is_finite_is_returned(puma, monkeypatch, N):
    """The fused check flags a finite result whose sum overflows (τ entries near 1e308);
    Backend._run then checks exactly and must return such a result, not refuse it."""
    be, ref = puma
    flagged = []

    def checking(method):
        def flag(*states):
            flagged.append(method.__name__)
            return method(*states), False
        return flag

    monkeypatch.setattr(be, "_checking_batch", checking)
    q, qd, qdd = _states(N, seed=5)
    tau = be.inverse_dynamics(q, qd, qdd)
    expected = ref.inverse_dynamics(q, qd, qdd)
    assert flagged == ["_batch_inverse_dynamics"]
    assert np.abs(tau - expected).max() <= 1e-12 * np.abs(expected).max()


@pytest.mark.parametrize("N", SIZES)
def test_checked_batches_equal_pinocchio(puma, N):
    be, ref = puma
    q, qd, third = _states(N, seed=3)
    for method, arrays in [("inverse_dynamics", (q, qd, third)), ("forward_dynamics", (q, qd, third)),
                           ("mass_matrix", (q,)), ("bias_forces", (q, qd))]:
        ours, theirs = getattr(be, method)(*arrays), getattr(ref, method)(*arrays)
        assert np.abs(ours - theirs).max() <= 1e-12 * max(1.0, np.abs(theirs).max()), method
    for ours, theirs in zip(be.inverse_dynamics_derivatives(q, qd, third), ref.inverse_dynamics_derivatives(q, qd, third)):
        assert np.abs(ours - theirs).max() <= 1e-12 * max(1.0, np.abs(theirs).max())
