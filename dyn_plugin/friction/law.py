"""The velocity-friction law, written once: b(q̇) = b_v q̇ + s(q̇) (L(q̇) + τ_B).

Schilling, *Fundamentals of Robotics* (1990), eq. 6-3-3: viscous b_v q̇, and a dry level
L = b_d + (b_s − b_d) exp(−|q̇|/ε) decaying from the static level b_s at rest to the
Coulomb level b_d, per direction of motion (asymmetric, as Corke's PUMA); s = sgn(q̇) or
tanh(q̇/w); τ_B the transmission breakaway of Dhanaraj's thesis (Table 3.2).

:func:`direction` and :func:`dry_level` are plain arithmetic that numpy evaluates on
arrays and numba compiles for one joint, and :func:`_joint_torque` composes them.
:func:`compiled` compiles that (numba is imported on first use, so that ``import
dyn_plugin`` stays light) into the batch loops behind
:meth:`~dyn_plugin.friction.models.VelocityFriction.torque` and the one-state functions
(:func:`single`) the friction backends (:mod:`dyn_plugin.backends.friction_backend`) call.
Everything numba compiles lives in this file: numba's ``cache=True`` only notices changes
to the file of the function it caches.
"""

from __future__ import annotations

import functools
import hashlib
import types
from pathlib import Path

import numpy as np

from .. import loops
from ..loops import for_size, serial_and_parallel

PARALLEL_FROM = loops.PARALLEL_FROM


def sgn(x: np.ndarray) -> np.ndarray:
    """Sign with sgn(0) = 0 (the thesis leaves sgn(0) undefined; no friction at rest)."""
    return np.sign(x)


def direction(qd: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    """The direction factor of every dry-friction term: sgn(q̇), or tanh(q̇ / smoothing).
    (Also compiled by numba for one joint: plain arithmetic only.)"""
    return np.tanh(qd / smoothing) if smoothing > 0 else np.sign(qd)


def dry_level(qd: np.ndarray, coulomb, static, stribeck_velocity) -> np.ndarray:
    """Schilling's dry-friction level at speed |q̇| (eq. 6-3-3): L = b_d + (b_s − b_d) exp(−|q̇|/ε),
    the static level b_s at rest decaying to the Coulomb level b_d.  (Also compiled by numba
    for one joint: plain arithmetic only.)"""
    return coulomb + (static - coulomb) * np.exp(-np.abs(qd) / stribeck_velocity)


# -- the velocity-friction law, compiled -------------------------------------------------------
# Rows of the (ROWS, n) parameter table (:func:`parameter_table`), one column per joint.
VISCOUS, COULOMB_POSITIVE, COULOMB_NEGATIVE, STATIC_POSITIVE, STATIC_NEGATIVE, STRIBECK = range(6)
BREAKAWAY = 6       # the transmission breakaway τ_B, added to both dry levels
SMOOTHING = 7       # tanh width of the direction factor, 0 = sgn (sharp: set-valued at rest)
ARMATURE = 8        # a, for τ + a q̈ (the friction backends' diagonal armature)
ROWS = 9
assert COULOMB_NEGATIVE - 1 == COULOMB_POSITIVE and STATIC_NEGATIVE - 1 == STATIC_POSITIVE   # _joint_torque's rows
# Status codes of the one-state functions (0 = done; otherwise the caller takes its validating path).
OK, BAD_SHAPE, NOT_FINITE, AT_REST, NOT_FINITE_RESULT = 0, 1, 2, 3, 4


# The functions below are compiled by compiled(), which first binds the numba versions of
# direction, dry_level, _joint_torque, _stuck, _finite and the rows loops to these names, and
# numba.prange to _prange (numba reads globals when it compiles).
_direction_nb = _dry_level_nb = _joint_torque_nb = _finite_nb = _stuck_nb = None
_added_single_nb = _removed_single_nb = _rigid_nb = _rigid_block_nb = None   # also bound by compiled() / fused()
_torque_rows_nb = _added_rows_nb = _removed_rows_nb = None
_prange = range


def _joint_torque(qd, table, i, viscous):
    """Friction of joint i at velocity q̇: b = b_v q̇ + s(q̇) (L(q̇) + τ_B) (Schilling eq. 6-3-3,
    with the level L of the motion's direction and the transmission breakaway τ_B; without
    the viscous term when ``viscous`` is False)."""
    # the levels of the motion's direction by their row, not a branch: q̇'s sign is random
    # in a batch, and a mispredicted branch per joint doubled the law's time
    forward = qd > 0.0
    coulomb, static = table[COULOMB_NEGATIVE - forward, i], table[STATIC_NEGATIVE - forward, i]
    # no static hump: the level is b_d exactly (b_d + 0·e^…), without the C library's exp,
    # which took most of the law's time (PUMA-560, Corke's data, a batch on one core: 88 -> 15 ns per state)
    level = coulomb if static == coulomb else _dry_level_nb(qd, coulomb, static, table[STRIBECK, i])
    dry = _direction_nb(qd, table[SMOOTHING, i]) * (level + table[BREAKAWAY, i])
    return table[VISCOUS, i] * qd + dry if viscous else dry


def _stuck(qd, table, i):
    """True when joint i is at rest with sharp dry friction: its torque is then a set
    (stiction, which forward dynamics solves)."""
    return qd == 0.0 and table[SMOOTHING, i] == 0.0 and (table[STATIC_POSITIVE, i] + table[BREAKAWAY, i] > 0.0
                                                          or table[STATIC_NEGATIVE, i] + table[BREAKAWAY, i] > 0.0)


def _finite(x):
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return NOT_FINITE_RESULT
    return OK


def _torque_rows(QD, table, viscous, OUT):
    """OUT (N, n) = b(q̇) of every joint of every state (row)."""
    for k in range(QD.shape[0]):
        for i in range(QD.shape[1]):
            OUT[k, i] = _joint_torque_nb(QD[k, i], table, i, viscous)


def _added_rows(table, QD, QDD, TAU, OUT):
    """OUT (N, n) = τ + a q̈ + b(q̇): a rigid body's τ with armature and friction."""
    for k in range(QD.shape[0]):
        for i in range(QD.shape[1]):
            OUT[k, i] = TAU[k, i] + table[ARMATURE, i] * QDD[k, i] + _joint_torque_nb(QD[k, i], table, i, True)


def _removed_rows(table, QD, TAU, OUT, STUCK):
    """OUT (N, n) = τ − b(q̇), and STUCK (N,) True where a joint is at rest with sharp dry
    friction (the caller solves those states with stiction)."""
    for k in range(QD.shape[0]):
        stuck = False
        for i in range(QD.shape[1]):
            OUT[k, i] = TAU[k, i] - _joint_torque_nb(QD[k, i], table, i, True)
            stuck = stuck or _stuck_nb(QD[k, i], table, i)
        STUCK[k] = stuck


# The batches run the rows loops above on CHUNK states per task: numba's parallel loop body
# itself, the same loop over states, ran 1.7x slower per core than the compiled function.
CHUNK = 256


def _torque_batch(QD, table, viscous, OUT):
    N = QD.shape[0]
    for chunk in _prange((N + CHUNK - 1) // CHUNK):
        rows = slice(chunk * CHUNK, min(N, (chunk + 1) * CHUNK))
        _torque_rows_nb(QD[rows], table, viscous, OUT[rows])


def _added_batch(table, QD, QDD, TAU, OUT):
    N = QD.shape[0]
    for chunk in _prange((N + CHUNK - 1) // CHUNK):
        rows = slice(chunk * CHUNK, min(N, (chunk + 1) * CHUNK))
        _added_rows_nb(table, QD[rows], QDD[rows], TAU[rows], OUT[rows])


def _removed_batch(table, QD, TAU, OUT, STUCK):
    N = QD.shape[0]
    for chunk in _prange((N + CHUNK - 1) // CHUNK):
        rows = slice(chunk * CHUNK, min(N, (chunk + 1) * CHUNK))
        _removed_rows_nb(table, QD[rows], TAU[rows], OUT[rows], STUCK[rows])


def _added_single(table, qd, qdd, tau, out):
    """One state: out = τ + a q̈ + b(q̇) (n,); returns a status."""
    n = table.shape[1]
    if table.shape[0] != ROWS or qd.shape[0] != n or qdd.shape[0] != n or tau.shape[0] != n or out.shape[0] != n:
        return BAD_SHAPE
    for i in range(n):
        if not (np.isfinite(qd[i]) and np.isfinite(qdd[i]) and np.isfinite(tau[i])):
            return NOT_FINITE
    for i in range(n):
        out[i] = tau[i] + table[ARMATURE, i] * qdd[i] + _joint_torque_nb(qd[i], table, i, True)
    return _finite_nb(out)


def _removed_single(table, qd, tau, offset, out):
    """One state: out = τ − offset − b(q̇) (n,); returns a status, AT_REST when a joint is at
    rest with sharp dry friction (stiction: the caller solves it)."""
    n = table.shape[1]
    if table.shape[0] != ROWS or qd.shape[0] != n or tau.shape[0] != n or offset.shape[0] != n or out.shape[0] != n:
        return BAD_SHAPE
    for i in range(n):
        if not (np.isfinite(qd[i]) and np.isfinite(tau[i]) and np.isfinite(offset[i])):
            return NOT_FINITE
    for i in range(n):
        if _stuck_nb(qd[i], table, i):
            return AT_REST
    for i in range(n):
        out[i] = tau[i] - offset[i] - _joint_torque_nb(qd[i], table, i, True)
    return _finite_nb(out)


def _fused_inverse(data, table, q, qd, qdd, out):
    """One state in one call: out = the rigid body's τ (its one-state kernel ``_rigid_nb``
    with its ``data``) + a q̈ + b(q̇); returns a status."""
    status = _rigid_nb(data, q, qd, qdd, out)
    if status != OK:
        return status
    return _added_single_nb(table, qd, qdd, out, out)


def _fused_inverse_batch(data, table, Q, QD, QDD, TAU):
    """A batch in one loop: TAU (N, n) = the rigid body's τ (its block kernel
    ``_rigid_block_nb`` with its ``data``) + a q̈ + b(q̇), CHUNK states per task, the law
    applied while the chunk is in cache."""
    N = Q.shape[0]
    for chunk in _prange((N + CHUNK - 1) // CHUNK):
        start, stop = chunk * CHUNK, min(N, (chunk + 1) * CHUNK)
        _rigid_block_nb(data, Q, QD, QDD, TAU, start, stop)
        _added_rows_nb(table, QD[start:stop], QDD[start:stop], TAU[start:stop], TAU[start:stop])


def _fused_forward(data, table, q, qd, tau, out):
    """One state in one call: q̈ = the rigid body's forward dynamics (``_rigid_nb``) under
    τ − b(q̇); AT_REST when a joint at rest needs stiction; returns a status."""
    n = table.shape[1]
    rhs = np.empty(n)
    status = _removed_single_nb(table, qd, tau, np.zeros(n), rhs) if qd.shape[0] == n else BAD_SHAPE
    if status != OK:
        return status
    return _rigid_nb(data, q, qd, rhs, out)


_OPTIONS = dict(cache=True, nogil=True, error_model="numpy")
_VECTOR, _TABLE = "float64[::1]", "float64[:, ::1]"
_SIGNATURES = {
    "added": (_added_single, f"int64({_TABLE}, {_VECTOR}, {_VECTOR}, {_VECTOR}, {_VECTOR})"),
    "removed": (_removed_single, f"int64({_TABLE}, {_VECTOR}, {_VECTOR}, {_VECTOR}, {_VECTOR})"),
}


class _Batch:
    """A batch loop compiled twice (:func:`dyn_plugin.loops.serial_and_parallel`), called
    like the loop: serially below PARALLEL_FROM states, in parallel from there."""

    def __init__(self, body):
        self.serial, self.parallel = serial_and_parallel(body, _OPTIONS)

    def __call__(self, *arrays):                  # the last argument is an output with a row per state
        return for_size((self.serial, self.parallel), len(arrays[-1]))(*arrays)


def _numba():
    """numba, its on-disk cache stamped with the kernels' sources (dyn_plugin.compiled.cache:
    the fused kernels compile a rigid kernel in)."""
    import numba

    from ..compiled.cache import install

    install()
    return numba


@functools.lru_cache(maxsize=None)
def compiled() -> types.SimpleNamespace:
    """The compiled law's batch loops, on C-contiguous float64 (N, n) arrays and a
    :func:`parameter_table` (numba is imported here, and each loop compiled, or loaded from
    numba's cache, on its first call): ``torque(QD, table, viscous, OUT)``,
    ``added(table, QD, QDD, TAU, OUT)``, ``removed(table, QD, TAU, OUT, STUCK)``."""
    numba = _numba()

    jit = numba.njit(**_OPTIONS)
    # the per-joint helpers are inlined (numba IR) into the loops: a call would pass the
    # table as a struct and count references to it, atomic adds on a line that every
    # worker writes (2 workers took 2.3x as long as 1 over 10^5 states)
    inline = numba.njit(inline="always", **_OPTIONS)
    names = globals()
    names["_direction_nb"] = inline(direction)
    names["_dry_level_nb"] = inline(dry_level)
    names["_finite_nb"] = jit(_finite)
    names["_joint_torque_nb"] = inline(_joint_torque)
    names["_stuck_nb"] = inline(_stuck)
    for rows in (_torque_rows, _added_rows, _removed_rows):
        names[rows.__name__ + "_nb"] = jit(rows)
    names["_added_single_nb"] = jit(_added_single)
    names["_removed_single_nb"] = jit(_removed_single)
    names["_prange"] = numba.prange
    return types.SimpleNamespace(torque=_Batch(_torque_batch), added=_Batch(_added_batch),
                                 removed=_Batch(_removed_batch))


@functools.lru_cache(maxsize=None)
def single(name: str):
    """The one-state function ``name``, compiled for exactly its signature on first use:
    ``single("added")(table, qd, qdd, tau, out)`` (out = τ + a q̈ + b(q̇)) and
    ``single("removed")(table, qd, tau, offset, out)`` (out = τ − offset − b(q̇); AT_REST when
    a joint at rest needs stiction); each returns a status (OK = 0).  Anything but a
    writable float64 table and vectors raises TypeError (numba's dispatcher) instead of
    compiling another specialisation."""
    numba = _numba()

    compiled()                                   # binds the helpers they call
    py_func, signature = _SIGNATURES[name]
    return numba.njit(signature, **_OPTIONS)(py_func)


def parameter_table(velocity, breakaway=None, armature=None) -> np.ndarray:
    """The (ROWS, n) parameter table of the compiled law, new and writable: ``velocity``'s
    (a :class:`~dyn_plugin.friction.models.VelocityFriction`)
    parameters and smoothing, the transmission breakaway τ_B (n,) and the armature (n,)
    (zeros if None)."""
    table = np.zeros((ROWS, velocity.n))
    for row, values in ((VISCOUS, velocity.viscous), (COULOMB_POSITIVE, velocity.coulomb_positive),
                        (COULOMB_NEGATIVE, velocity.coulomb_negative), (STATIC_POSITIVE, velocity.static_positive),
                        (STATIC_NEGATIVE, velocity.static_negative), (STRIBECK, velocity.stribeck_velocity),
                        (SMOOTHING, velocity.smoothing), (BREAKAWAY, breakaway), (ARMATURE, armature)):
        if values is not None:
            table[row] = values
    return table


def friction_torque(qd: np.ndarray, table: np.ndarray, viscous: bool = True) -> np.ndarray:
    """b(q̇) of the compiled law for ``qd`` of shape (n,) or (N, n), validated by the caller;
    without the viscous term when ``viscous`` is False."""
    qd = np.ascontiguousarray(qd, dtype=float)
    flat = qd.reshape(-1, table.shape[1])
    out = np.empty(flat.shape)
    compiled().torque(flat, table, bool(viscous), out)
    return out.reshape(qd.shape)


_FUSED = {"inverse_dynamics": _fused_inverse, "forward_dynamics": _fused_forward}


@functools.lru_cache(maxsize=None)
def fused(name: str, rigid_kernel):
    """The law and a rigid backend's one-state kernel in one compiled call, for one state
    (a second call would cost as much as the friction itself):
    ``fused(name, kernel)(data, table, q, qd, x, out) -> status`` for ``name``
    ``"inverse_dynamics"`` (x = q̈, out = τ + a q̈ + b(q̇)) or ``"forward_dynamics"`` (x = τ,
    out = q̈ under τ − b(q̇)).  ``rigid_kernel(data, q, qd, x, out) -> status`` is what a
    backend declaring ``single_state_kernels`` gives (``data`` a C-contiguous float64 2-D
    array, vectors float64).  Compiled for exactly that signature (any other argument
    raises TypeError) and cached on disk under a name that carries a digest of the rigid
    kernel's source file: numba only watches this file, so a changed kernel gets a new
    entry instead of stale machine code."""
    numba = _numba()

    from ..compiled.borrowed import MATRIX, VECTOR

    compiled()                                   # binds the law's compiled helpers
    body = _FUSED[name]
    return numba.njit(numba.int64(MATRIX, MATRIX, VECTOR, VECTOR, VECTOR, VECTOR), **_OPTIONS)(
        _bound(body, rigid_kernel, "_rigid_nb"))


def _bound(body, kernel, name: str):
    """A copy of ``body`` that calls ``kernel`` as its global ``name``, named for numba's
    on-disk cache by ``body``, ``kernel`` and a digest of ``kernel``'s source file (numba only
    watches this file, so a changed kernel gets a new entry instead of stale machine code)."""
    source = kernel.py_func.__code__.co_filename
    digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16]
    label = f"{body.__name__}__{kernel.py_func.__name__}_{digest}"
    copy = types.FunctionType(body.__code__, dict(globals(), **{name: kernel}), label, body.__defaults__,
                              body.__closure__)
    copy.__qualname__ = label                    # its own entry in numba's cache
    return copy


@functools.lru_cache(maxsize=None)
def fused_batch(rigid_block):
    """Inverse dynamics of a batch in one loop: the rigid body's τ and the law on each chunk
    of states in turn, while it is in cache, instead of a second pass over the whole batch
    (10⁵ PUMA-560 states on 2 cores: 1.4× the rigid body's time in two passes, 1.1× in one).
    ``fused_batch(block)(data, table, Q, QD, QDD, TAU)`` with ``block(data, Q, QD, QDD, TAU,
    start, stop)`` what a backend declaring ``block_kernels`` gives; serial below
    PARALLEL_FROM states, parallel from there (a :class:`_Batch`)."""
    _numba()
    compiled()                                   # binds the law's compiled helpers
    return _Batch(_bound(_fused_inverse_batch, rigid_block, "_rigid_block_nb"))
