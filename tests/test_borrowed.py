"""The one-state kernels' entry points borrow their arrays (dyn_plugin.compiled.borrowed):
they must take exactly C-contiguous numpy float64 arrays of the declared dimensions, refuse
everything else with TypeError before reading a byte of it, leak no reference, and give
pinocchio's numbers."""

import pickle
import sys

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.compiled import borrowed, entry_points, status

N_JOINTS = 6


class Subclass(np.ndarray):
    pass


def _state(seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, (3, N_JOINTS))


@pytest.fixture(scope="module")
def puma():
    model = dp.load_robot("puma560")
    return dp.get_backend("newton_euler", model), dp.get_backend("pinocchio", model)


def test_arrays_are_borrowed_here():
    """On this CPython and NumPy the fields are where borrowed reads them: the entry points are
    not the dispatcher (which would be correct, but 0.3 µs slower a call)."""
    assert borrowed.AVAILABLE
    entry = entry_points.entry_point("inverse_dynamics")
    assert entry is not entry_points.single("inverse_dynamics")
    assert "numba" not in type(entry).__module__


REFUSED_VECTORS = {
    "list": lambda v: v.tolist(),
    "tuple": lambda v: tuple(v),
    "none": lambda v: None,
    "scalar": lambda v: v[0],
    "0-d": lambda v: np.array(v[0]),
    "row (1, n)": lambda v: v[None, :],
    "column (n, 1)": lambda v: v[:, None],
    "int64": lambda v: v.astype(np.int64),
    "uint64": lambda v: v.astype(np.uint64),
    "object": lambda v: v.astype(object),
    "complex64": lambda v: v.astype(np.complex64),
    "datetime64": lambda v: v.astype(np.int64).astype("datetime64[s]"),
    "float32": lambda v: v.astype(np.float32),
    "big-endian float64": lambda v: v.astype(">f8"),
    "strided": lambda v: np.repeat(v, 2)[::2],
    "subclass": lambda v: v.view(Subclass),
}


@pytest.mark.parametrize("kind", list(REFUSED_VECTORS))
@pytest.mark.parametrize("position", [1, 2, 3, 4])
def test_entry_point_refuses_anything_but_float64_vectors(puma, kind, position):
    fast, _ = puma
    entry = entry_points.entry_point("inverse_dynamics")
    q, qd, qdd = _state()
    tau = np.full(N_JOINTS, 7.0)
    args = [fast._packed, q, qd, qdd, tau]
    args[position] = REFUSED_VECTORS[kind](args[position])
    with pytest.raises(TypeError, match=borrowed.REFUSED):
        entry(*args)
    assert np.all(tau == 7.0)


@pytest.mark.parametrize("make", [np.asfortranarray, lambda M: M[:, ::-1], lambda M: M.ravel(), lambda M: M[None]],
                         ids=["fortran", "reversed columns", "1-d", "3-d"])
def test_entry_point_refuses_other_matrices(puma, make):
    fast, _ = puma
    q = _state()[0]
    M = np.zeros((N_JOINTS, N_JOINTS))
    with pytest.raises(TypeError, match=borrowed.REFUSED):
        entry_points.entry_point("mass_matrix")(fast._packed, q, make(M))
    with pytest.raises(TypeError, match=borrowed.REFUSED):
        entry_points.entry_point("mass_matrix")(np.asfortranarray(fast._packed), q, M)


def test_accepted_vectors_give_pinocchios_torque(puma):
    """Read-only, a row of a C matrix, a dtype that is float64 but not NumPy's own dtype
    object (unpickled), an explicit native byte order: all borrowed, all exact."""
    fast, pin = puma
    Q = _state(1)
    expected = pin.inverse_dynamics(*Q)
    readonly = Q[0].copy()
    readonly.setflags(write=False)
    unpickled = pickle.loads(pickle.dumps(Q[1]))
    assert unpickled.dtype is not np.dtype(np.float64)            # the case this covers
    native = Q[2].astype("<f8" if sys.byteorder == "little" else ">f8")
    entry = entry_points.entry_point("inverse_dynamics")
    for args in [(readonly, Q[1], Q[2]), (Q[0], unpickled, native), tuple(np.ascontiguousarray(Q))]:
        tau = np.empty(N_JOINTS)
        assert entry(fast._packed, *args, tau) == status.OK
        assert np.max(np.abs(tau - expected)) <= 1e-12 * np.max(np.abs(expected))


def test_no_reference_is_kept_or_lost(puma):
    fast, _ = puma
    entry = entry_points.entry_point("inverse_dynamics")
    q, qd, qdd = _state()
    tau, wrong = np.empty(N_JOINTS), q.astype(np.float32)
    before = [sys.getrefcount(x) for x in (fast._packed, q, qd, qdd, tau, wrong)]
    for _ in range(1000):
        entry(fast._packed, q, qd, qdd, tau)
        with pytest.raises(TypeError):
            entry(fast._packed, q, wrong, qdd, tau)
    assert [sys.getrefcount(x) for x in (fast._packed, q, qd, qdd, tau, wrong)] == before


@pytest.mark.parametrize("kind", ["int64", "big-endian float64", "subclass", "strided", "object", "list"])
def test_backend_gives_pinocchios_numbers_for_refused_kinds(puma, kind):
    """What the entry point refuses takes Backend's validating path: the same numbers."""
    fast, pin = puma
    q, qd, qdd = np.round(_state(2))
    convert = REFUSED_VECTORS[kind]
    for method, args in [("inverse_dynamics", (q, qd, qdd)), ("forward_dynamics", (q, qd, qdd)),
                         ("mass_matrix", (q,)), ("bias_forces", (q, qd))]:
        expected = getattr(pin, method)(*args)
        got = getattr(fast, method)(*map(convert, args))
        assert np.max(np.abs(got - expected)) <= 1e-11 * max(1.0, np.max(np.abs(expected))), method


@pytest.mark.parametrize("kind", ["0-d", "column (n, 1)", "complex64", "datetime64"])
def test_backend_names_what_it_cannot_take(puma, kind):
    fast, _ = puma
    q, qd, qdd = _state(3)
    with pytest.raises(dp.InputError, match="^q "):
        fast.inverse_dynamics(REFUSED_VECTORS[kind](q), qd, qdd)


def test_entry_of_gives_the_dispatcher_where_an_entry_point_would_trust_its_caller(monkeypatch):
    """A kernel with numba's own array types, or arrays that cannot be borrowed here: the
    dispatcher, which types its arguments (a float32 vector is refused, not misread)."""
    import numba

    plain = numba.njit("int64(float64[::1])")(lambda x: x.shape[0])
    assert borrowed.entry_of(plain) is plain
    with pytest.raises(TypeError):
        borrowed.entry_of(plain)(np.zeros(3, np.float32))
    typed = entry_points.single("inverse_dynamics")
    assert borrowed.entry_of(typed) is not typed
    monkeypatch.setattr(borrowed, "AVAILABLE", False)
    assert borrowed.entry_of(typed) is typed
