"""The free-flyer map inside the kernels: a floating-base state run through the per-state
cores of its free-flyer chain, with no Python per joint.

A floating robot at one state moves like its free-flyer chain
(:func:`dyn_plugin.floating.free_flyer_chain`: three prismatic then three revolute joints
at zero between the world and the base, the robot's joints after them, gravity zero) at
the chain state (0, q_joints; v; a + d(q, v)), with (module docstring of
:mod:`dyn_plugin.floating`)

    d_lin = ω × v − Rᵀ g,    d_ang = −(ω_y ω_z, −ω_x ω_z, ω_x ω_y),

R the base orientation of the unit quaternion q[3:7] (x, y, z, w).  So ID(q, v, a) =
ID_chain(q_c, v, a + d), FD(q, v, τ) = FD_chain(q_c, v, τ) − d, M(q) = M_chain(q_c).  The
kernels here take the floating state itself (q (n + 1,), v, a or τ (n,) for the chain's
n = nv joints), do that map on scalars, and run the chain's cores (:mod:`.newton_euler`,
:mod:`.articulated_body`, :mod:`.composite_rigid_body`, :mod:`.derivatives`) on the
chain's packed model with the world's −g in its robot row (:func:`pack_free_flyer`,
column ``FREE_FLYER_ACC`` of :mod:`.layout`).  The chain is the one statement of the
recursions; only the map is written here, once more than in :mod:`dyn_plugin.floating`
(numpy, the reference these are held to in ``tests/test_floating_base.py``).

The quaternion rule is :func:`dyn_plugin.floating.unit_quaternions`': a norm within
UNIT_TOLERANCE of 1 is normalised, any other gives the status BAD_QUATERNION, on which
the caller takes its validating path (whose error names the state and the norm).

Derivatives along the tangent of q (:func:`dyn_plugin.floating.acceleration_offset_derivatives`):
the chain's ∂τ/∂q with its six base columns replaced by M[:, 0:3] (∂d_lin/∂δθ = −[Rᵀg]×),
and its ∂τ/∂v plus M[:, 0:6] ∂d/∂v (:func:`_base_columns`).

Batches: :func:`offsets_batch` computes d (N, 6) for the chain's batch kernels (the caller
adds it to a, or subtracts it from the chain's q̈), :func:`base_columns_batch` the
derivatives' base columns; :func:`mass_matrix_batch` runs the composite-rigid-body lanes
form on the floating q itself, its six free-flyer joints in closed form
(:mod:`.composite_rigid_body`), and checks the states and M as it goes.  They read the states as scalars, never as row views: a view
counts a reference to its array, an atomic add on a cache line that the other cores write
too (a parallel loop over rows of views ran 50× slower than this serially).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..errors import ModelError
from .articulated_body import _forward_dynamics_rows
from .composite_rigid_body import CRBA_QUANTITIES, FREE_FLYER_BASE, _floating_mass_matrix_rows, mass_matrix_lanes
from .derivatives import _finite_matrices, _implicit, _inverse_dynamics_derivatives_rows, _square
from .jit import CHUNK, inline as _inline, jit as _jit, serial_and_parallel as _serial_and_parallel
from .lane_blocks import BLOCK, LANES
from .layout import ARMATURE, FREE_FLYER_ACC
from .newton_euler import TERM_ALL, _inverse_dynamics_rows
from .scratch import _stack_rows
from .status import BAD_SHAPE, NOT_FINITE, NOT_FINITE_RESULT, OK, _bad_shape, _finite_result, _one, _zero_if_finite
from .vectors import _add, _cross

# Spelled out, not read from dyn_plugin.joints at call time (numba freezes it into the cached
# machine code, which notices changes to this package only): checked against it at import.
UNIT_TOLERANCE = 1e-6
BAD_QUATERNION = 8                     # a status (.status): |‖q[3:7]‖ − 1| > UNIT_TOLERANCE
BASE_Q, BASE_V = 7, 6                  # entries of the base in q and in v (dyn_plugin.floating's)


def check_constants() -> None:
    """ImportError if the constants above disagree with :mod:`dyn_plugin.joints` and
    :mod:`dyn_plugin.floating` (update them here, so that numba's cache is invalidated)."""
    from .. import floating, joints

    if (UNIT_TOLERANCE, BASE_Q, BASE_V) != (joints.UNIT_TOLERANCE, floating.BASE_Q, floating.BASE_V) \
            or FREE_FLYER_BASE != BASE_V - 1:
        raise ImportError("dyn_plugin.compiled.free_flyer: UNIT_TOLERANCE, BASE_Q, BASE_V or "
                          "composite_rigid_body.FREE_FLYER_BASE disagree with dyn_plugin.joints / dyn_plugin.floating; "
                          "update them here")


def pack_free_flyer(chain_packed: np.ndarray, gravity) -> np.ndarray:
    """The packed free-flyer chain (:func:`.layout.pack_model` of
    :func:`dyn_plugin.floating.free_flyer_chain`, gravity zero) with the world's gravity
    (3,) m/s² for these kernels.  Its six base joints carry no armature (a ModelError
    otherwise: the base is a body, not a motor; :mod:`.free_flyer_lanes` relies on it)."""
    P = np.array(chain_packed, dtype=float)
    if np.any(P[:BASE_V, ARMATURE] != 0.0):
        raise ModelError("a free-flyer chain's six base joints carry no armature (the floating base is a body, "
                         f"not a motor); got {P[:BASE_V, ARMATURE].tolist()}")
    P[-1, FREE_FLYER_ACC:FREE_FLYER_ACC + 3] = -np.asarray(gravity, dtype=float)
    return P


# -- the map ----------------------------------------------------------------------------------

@_jit
def _unit_quaternion(x, y, z, w):
    """The quaternion (x, y, z, w) normalised, and whether its norm was within
    UNIT_TOLERANCE of 1.  (Scalars, not a row of a batch: a view of a row counts a
    reference to its array, an atomic add on a line the other cores write too.)"""
    norm = np.sqrt(x * x + y * y + z * z + w * w)
    return (x / norm, y / norm, z / norm, w / norm), abs(norm - 1.0) <= UNIT_TOLERANCE


@_jit
def _gravity_in_base(P, quaternion):
    """Rᵀ (−g) (3,): the world's −g (FREE_FLYER_ACC) in the base frame, R of the unit
    quaternion (x, y, z, w) as :func:`dyn_plugin.joints.quaternion_matrix`."""
    x, y, z, w = quaternion
    n = P.shape[0] - 1
    g0, g1, g2 = P[n, FREE_FLYER_ACC], P[n, FREE_FLYER_ACC + 1], P[n, FREE_FLYER_ACC + 2]
    column0 = (1 - 2 * (y * y + z * z), 2 * (x * y + z * w), 2 * (x * z - y * w))
    column1 = (2 * (x * y - z * w), 1 - 2 * (x * x + z * z), 2 * (y * z + x * w))
    column2 = (2 * (x * z + y * w), 2 * (y * z - x * w), 1 - 2 * (x * x + y * y))
    return (column0[0] * g0 + column0[1] * g1 + column0[2] * g2, column1[0] * g0 + column1[1] * g1 + column1[2] * g2,
            column2[0] * g0 + column2[1] * g1 + column2[2] * g2)


@_jit
def _offset(P, quaternion, u, w, velocity, gravity):
    """d's base entries (d_lin, d_ang) (see the module docstring) for the base velocity
    (u, ω) (3-tuples): the velocity part with ``velocity``, the gravity part with
    ``gravity``."""
    lin, ang = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    if velocity:
        lin = _cross(w, u)
        ang = (-w[1] * w[2], w[0] * w[2], -w[0] * w[1])
    if gravity:
        lin = _add(lin, _gravity_in_base(P, quaternion))
    return lin, ang


@_jit
def _head(v):
    """(v[0], v[1], v[2]): a base's linear velocity."""
    return v[0], v[1], v[2]


@_jit
def _tail(v):
    """(v[3], v[4], v[5]): a base's angular velocity."""
    return v[3], v[4], v[5]


@_jit
def _chain_joints(q, QC):
    """The chain's configuration into QC[0]: the six base joints at zero, then q[7:]."""
    for i in range(QC.shape[1]):
        QC[0, i] = 0.0 if i < BASE_V else q[i + 1]


@_jit
def _state_status(n, q, v, x):
    """OK, BAD_SHAPE (q not n + 1 adjacent entries, v or x not n), NOT_FINITE, or
    BAD_QUATERNION."""
    if _bad_shape(n + 1, q) or _bad_shape(n, v) or _bad_shape(n, x):
        return BAD_SHAPE
    if _zero_if_finite(q) + _zero_if_finite(v) + _zero_if_finite(x) != 0.0:
        return NOT_FINITE
    return OK if _unit_quaternion(q[3], q[4], q[5], q[6])[1] else BAD_QUATERNION


@_jit
def _configuration_status(n, q):
    if _bad_shape(n + 1, q):
        return BAD_SHAPE
    if _zero_if_finite(q) != 0.0:
        return NOT_FINITE
    return OK if _unit_quaternion(q[3], q[4], q[5], q[6])[1] else BAD_QUATERNION


@_inline
def _shifted(x, lin, ang, sign, X):
    """X[0] = x with sign·(lin, ang) added to its six base entries."""
    for i in range(x.shape[0]):
        X[0, i] = x[i]
    for e in range(3):
        X[0, e] += sign * lin[e]
        X[0, 3 + e] += sign * ang[e]


@_inline
def _vector_status(n, q, v, x, out):
    """:func:`_state_status`, or BAD_SHAPE when the result ``out`` is not n long."""
    status = _state_status(n, q, v, x)
    return status if status != OK or out.shape[0] == n else BAD_SHAPE


@_inline
def _matrix_status(n, q, M):
    """:func:`_configuration_status`, or BAD_SHAPE when ``M`` is not (n, n)."""
    status = _configuration_status(n, q)
    return status if status != OK or (M.shape[0] == n and M.shape[1] == n) else BAD_SHAPE


@_inline
def _chain_acceleration(P, q, v, a, QC, AC):
    """The chain's state of one floating state (checked): its configuration into QC[0], its
    q̈ = a + d(q, v) into AC[0] (module docstring)."""
    _chain_joints(q, QC)
    lin, ang = _offset(P, _unit_quaternion(q[3], q[4], q[5], q[6])[0], _head(v), _tail(v), True, True)
    _shifted(a, lin, ang, 1.0, AC)


@_inline
def _less_offset(P, q, v, a):
    """The chain's q̈ in ``a`` made the floating robot's, a − d(q, v), in place."""
    lin, ang = _offset(P, _unit_quaternion(q[3], q[4], q[5], q[6])[0], _head(v), _tail(v), True, True)
    for e in range(3):
        a[e] -= lin[e]
        a[3 + e] -= ang[e]


# -- one state: arguments and result checked in the kernel (entry_points) ------------------------

def inverse_dynamics_single(P, q, v, a, tau):
    """τ (n,) of one floating state into ``tau``; returns a status (status.OK = 0)."""
    n = P.shape[0] - 1
    status = _vector_status(n, q, v, a, tau)
    if status != OK:
        return status
    QC, AC = _stack_rows(1, n), _stack_rows(1, n)
    _chain_acceleration(P, q, v, a, QC, AC)
    _inverse_dynamics_rows(P, QC, _one(v), AC, TERM_ALL, _one(tau))
    return _finite_result(tau)


def bias_single(P, q, v, tau):
    """C(q, v) v + g(q) (n,) of one floating state: the chain's τ at q̈ = d."""
    n = P.shape[0] - 1
    status = _vector_status(n, q, v, v, tau)
    if status != OK:
        return status
    QC, AC = _stack_rows(1, n), _stack_rows(1, n)
    for i in range(n):
        AC[0, i] = 0.0
    _chain_acceleration(P, q, v, AC[0], QC, AC)
    _inverse_dynamics_rows(P, QC, _one(v), AC, TERM_ALL, _one(tau))
    return _finite_result(tau)


def forward_dynamics_single(P, q, v, tau, a):
    """a (n,) of one floating state into ``a``: the chain's q̈ − d."""
    n = P.shape[0] - 1
    status = _vector_status(n, q, v, tau, a)
    if status != OK:
        return status
    QC = _stack_rows(1, n)
    _chain_joints(q, QC)
    _forward_dynamics_rows(P, QC, _one(v), _one(tau), _one(a))
    _less_offset(P, q, v, a)
    return _finite_result(a)


def mass_matrix_single(P, q, H):
    """M (n, n) of one floating configuration into H: the chain's, its six joints in closed
    form (:mod:`.composite_rigid_body`)."""
    n = P.shape[0] - 1
    status = _matrix_status(n, q, H)
    if status != OK:
        return status
    QC = _stack_rows(1, n)
    _chain_joints(q, QC)
    _floating_mass_matrix_rows(P, QC, H[None])
    for i in range(n):
        status |= _finite_result(H[i])
    return status


@_jit
def _base_columns(P, quaternion, u, w, M, DQ, DV, k):
    """The chain's ∂τ/∂q, ∂τ/∂v (n, n) of state k (DQ[k], DV[k]) at the chain state made
    the floating robot's, along the tangent of q: the base columns of DQ become
    M[:, 0:3] ∂d_lin/∂δθ, row i M[k, i, 0:3] × Rᵀ(−g) (3:6; 0 for 0:3), and DV gains
    M[:, 0:6] ∂d/∂v (the matrices of :func:`dyn_plugin.floating.acceleration_offset_derivatives`),
    for the base velocity (u, ω) = (u, w) (3-tuples)."""
    s = _gravity_in_base(P, quaternion)
    for i in range(M.shape[1]):
        m_lin, m_ang = (M[k, i, 0], M[k, i, 1], M[k, i, 2]), (M[k, i, 3], M[k, i, 4], M[k, i, 5])
        turn = _cross(m_lin, s)
        along_w, along_u = _cross(m_lin, w), _cross(u, m_lin)
        spin = (w[2] * m_ang[1] - w[1] * m_ang[2], -w[2] * m_ang[0] - w[0] * m_ang[2],
                -w[1] * m_ang[0] + w[0] * m_ang[1])
        for e in range(3):
            DQ[k, i, e] = 0.0
            DQ[k, i, 3 + e] = turn[e]
            DV[k, i, e] += along_w[e]
            DV[k, i, 3 + e] += along_u[e] + spin[e]


def inverse_dynamics_derivatives_single(P, q, v, a, DQ, DV):
    """∂τ/∂q (along the tangent), ∂τ/∂v (n, n) of one floating state into DQ, DV; a status."""
    n = P.shape[0] - 1
    status = _state_status(n, q, v, a)
    if status != OK or not _square(n, DQ, DV):
        return status if status != OK else BAD_SHAPE
    quaternion = _unit_quaternion(q[3], q[4], q[5], q[6])[0]
    QC, AC = _stack_rows(1, n), _stack_rows(1, n)
    _chain_acceleration(P, q, v, a, QC, AC)
    M = np.empty((1, n, n))
    _inverse_dynamics_derivatives_rows(P, QC, _one(v), AC, DQ[None], DV[None])
    _floating_mass_matrix_rows(P, QC, M)
    _base_columns(P, quaternion, _head(v), _tail(v), M, DQ[None], DV[None], 0)
    return _finite_matrices(n, DQ, DV)


def forward_dynamics_derivatives_single(P, q, v, tau, DQ, DV, MINV):
    """∂a/∂q (along the tangent), ∂a/∂v, M⁻¹ (n, n) of one floating state, from the
    inverse dynamics' derivatives at a = FD (implicit functions, :func:`.derivatives._implicit`);
    a status (NOT_FINITE_RESULT for a mass matrix that is not invertible)."""
    n = P.shape[0] - 1
    status = _state_status(n, q, v, tau)
    if status != OK or not _square(n, DQ, DV, MINV):
        return status if status != OK else BAD_SHAPE
    quaternion = _unit_quaternion(q[3], q[4], q[5], q[6])[0]
    QC, QDDC = _stack_rows(1, n), _stack_rows(1, n)
    _chain_joints(q, QC)
    _forward_dynamics_rows(P, QC, _one(v), _one(tau), QDDC)            # the chain's q̈ = a + d
    M = np.empty((1, n, n))
    _inverse_dynamics_derivatives_rows(P, QC, _one(v), QDDC, DQ[None], DV[None])
    _floating_mass_matrix_rows(P, QC, M)
    _base_columns(P, quaternion, _head(v), _tail(v), M, DQ[None], DV[None], 0)
    if not _implicit(M[0], DQ, DV, MINV, np.empty((n, 4 * n))):
        return NOT_FINITE_RESULT
    return _finite_matrices(n, DQ, DV, MINV)


# -- batches ------------------------------------------------------------------------------------

def _offsets_batch(P, Q, V, velocity, gravity, D):
    """d's base entries (N, 6) of the states (Q (N, n + 1), V (N, n)) into D; a state whose
    quaternion is not unit gets NaN in D[k, 0] (the caller names it)."""
    N = Q.shape[0]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        for k in range(chunk * CHUNK, min(N, (chunk + 1) * CHUNK)):
            quaternion, unit = _unit_quaternion(Q[k, 3], Q[k, 4], Q[k, 5], Q[k, 6])
            if not unit:
                D[k, 0] = np.nan
                continue
            lin, ang = _offset(P, quaternion, (V[k, 0], V[k, 1], V[k, 2]), (V[k, 3], V[k, 4], V[k, 5]), velocity,
                               gravity)
            for e in range(3):
                D[k, e], D[k, 3 + e] = lin[e], ang[e]


offsets_batch = _serial_and_parallel(_offsets_batch)   # (serial, parallel)


def _base_columns_batch(P, Q, V, M, DQ, DV):
    """:func:`_base_columns` for every state (Q (N, n + 1) with unit quaternions within
    UNIT_TOLERANCE, V (N, n), M, DQ, DV (N, n, n), DQ and DV in place)."""
    N = Q.shape[0]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        for k in range(chunk * CHUNK, min(N, (chunk + 1) * CHUNK)):
            quaternion = _unit_quaternion(Q[k, 3], Q[k, 4], Q[k, 5], Q[k, 6])[0]
            _base_columns(P, quaternion, (V[k, 0], V[k, 1], V[k, 2]), (V[k, 3], V[k, 4], V[k, 5]), M, DQ, DV, k)


base_columns_batch = _serial_and_parallel(_base_columns_batch)   # (serial, parallel)

@_jit
def _zero_if_valid(Q, k):
    """0.0 when state k of Q (N, n + 1) is finite and its quaternion unit within
    UNIT_TOLERANCE, else NaN (read as scalars: see the module docstring)."""
    zero = 0.0
    for i in range(Q.shape[1]):
        zero += Q[k, i] * 0.0
    return zero if _unit_quaternion(Q[k, 3], Q[k, 4], Q[k, 5], Q[k, 6])[1] else np.nan


def _mass_matrix_batch(P, Q, H, check):
    """M (N, n, n) of the floating configurations Q (N, n + 1) into H, BLOCK states per task
    (:func:`.composite_rigid_body.mass_matrix_lanes` with ``floating``); check (tasks,): 0.0
    where every state of the task is finite with a unit quaternion and its M finite, else
    NaN (the caller names the state)."""
    N, n = Q.shape[0], P.shape[0] - 1
    for block in nb.prange((N + BLOCK - 1) // BLOCK):
        start, stop = block * BLOCK, min(N, (block + 1) * BLOCK)
        zero = 0.0
        for k in range(start, stop):
            zero += _zero_if_valid(Q, k)
        check[block] = zero + mass_matrix_lanes(P, Q, H, start, stop, np.empty(n * CRBA_QUANTITIES * LANES), True)


mass_matrix_batch = _serial_and_parallel(_mass_matrix_batch)   # (serial, parallel)

check_constants()


# -- another backend's one-state kernels on the chain, made the floating robot's ------------------

def _closure(signature):
    """numba's compiler for a kernel that calls another backend's (a closure: compiled per
    process, not cached), typed for exactly ``signature``, keeping the GIL."""
    return nb.njit(signature, error_model="numpy", fastmath={"contract"}, nogil=False)


def chain_entries(inverse, forward, mass, vector, matrix) -> tuple:
    """``(inverse(P, q, v, a, tau), bias(P, q, v, tau), forward(P, q, v, tau, a), mass(P, q,
    M))`` -> status, for one floating state, from the free-flyer chain's typed one-state
    kernels of another backend (``inverse(q, qd, qdd, tau)``, ``forward(q, qd, tau, qdd)``,
    ``mass(q, M)`` -> 0 or a non-zero status, e.g. the generated code's ``*_state``): the map
    to the chain done here, as in :func:`inverse_dynamics_single` and its siblings, with P
    the :func:`pack_free_flyer` of the chain.  ``vector``, ``matrix``: the numba types of
    their array arguments."""
    model, state = nb.float64[:, ::1], vector

    @_closure(nb.int64(model, state, state, state, state))
    def inverse_entry(P, q, v, a, tau):
        n = P.shape[0] - 1
        status = _vector_status(n, q, v, a, tau)
        if status != OK:
            return status
        QC, AC = np.empty((1, n)), np.empty((1, n))
        _chain_acceleration(P, q, v, a, QC, AC)
        return inverse(QC[0], v, AC[0], tau)

    @_closure(nb.int64(model, state, state, state))
    def bias_entry(P, q, v, tau):
        n = P.shape[0] - 1
        status = _vector_status(n, q, v, v, tau)
        if status != OK:
            return status
        QC, AC = np.empty((1, n)), np.zeros((1, n))
        _chain_acceleration(P, q, v, AC[0], QC, AC)
        return inverse(QC[0], v, AC[0], tau)

    @_closure(nb.int64(model, state, state, state, state))
    def forward_entry(P, q, v, tau, a):
        n = P.shape[0] - 1
        status = _vector_status(n, q, v, tau, a)
        if status != OK:
            return status
        QC = np.empty((1, n))
        _chain_joints(q, QC)
        status = forward(QC[0], v, tau, a)
        _less_offset(P, q, v, a)
        return status if status != OK else _finite_result(a)

    @_closure(nb.int64(model, state, matrix))
    def mass_entry(P, q, M):
        n = P.shape[0] - 1
        status = _matrix_status(n, q, M)
        if status != OK:
            return status
        QC = np.empty((1, n))
        _chain_joints(q, QC)
        return mass(QC[0], M)

    return inverse_entry, bias_entry, forward_entry, mass_entry
