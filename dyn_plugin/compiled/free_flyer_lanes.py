"""A floating base's inverse and forward dynamics over a batch across SIMD lanes, the
recursions started from the base's own motion.

The free-flyer chain (:mod:`.free_flyer`) moves like the floating robot, but its first five
links are massless joints at zero: running the chain's lanes forms over them (five link
steps of each pass, and on the way in five rank-one projections of the articulated
inertia) is a fifth of solo12's work for nothing, and mapping the states to it (d(q, v),
the chain's configuration and acceleration) costs passes over the arrays in numpy.  Here
the lanes forms of :mod:`.newton_euler` and :mod:`.articulated_body` run over the robot's
own links (chain links FREE_FLYER_BASE + 1 ..), read the floating state (q (N, n + 1),
v, a or τ (N, n), n = nv) itself, and start from the base link FREE_FLYER_BASE, whose
motion is the base's (:mod:`.free_flyer`'s module docstring: the chain's q̈ = a + d):

- inverse dynamics (Fu Table 3.3, Fu 3.3-46..57): the base link has ω = v_ang, ω̇ = a_ang
  and its origin v̇ = a_lin + ω × v_lin + Rᵀ(−g) (= the chain's a + d), so no acceleration
  −g enters at a base block; τ's base entries are the base link's whole wrench (own and
  children's) in its frame about its origin, (force, moment), as the chain's joints at
  zero along the base axes carry it;
- forward dynamics (Featherstone 2008 Table 7.1, with a floating base as in its ch. 9):
  the base link's velocity is (ω, v) = (v_ang, v_lin), its velocity-product acceleration
  c = 0, p^A and I^A are formed from its children as for any link, then its spatial
  acceleration, gravity removed, is the solution of I^A a' = τ_B − p^A (τ_B = (τ_ang,
  τ_lin), a 6×6 solve by 3×3 blocks, :func:`_solve_base`); the children's pass 3 starts
  from a', and the base's a = (a'_lin + Rᵀg, a'_ang) (with the chain: q̈ − d).

The base link's joints carry no armature (the chain of a floating model has none there:
:func:`.free_flyer.pack_free_flyer` refuses it).  Every state's quaternion is read as the
other kernels read it (:func:`.free_flyer._unit_quaternion`): a norm within UNIT_TOLERANCE
of 1 is normalised, any other is counted (``bad``: the caller names the state).  A block
of lanes with a joint angle beyond lanes.EXACT_RANGE runs the chain's per-state kernels
instead, the map done state by state.  Held to those, to pinocchio and to the numpy map
of :mod:`dyn_plugin.floating` in ``tests/test_free_flyer_kernels.py`` and
``tests/test_statements.py``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..arrays import SINGULAR
from .articulated_body import (ABA_QUANTITIES, ACC_ANG, ACC_LIN, BIAS_F, BIAS_N, C_ANG, C_LIN, CHILD_A, OMEGA, U_N,
                               VEL, _accelerations, _articulated, _forward_dynamics_rows, _inertias, _rigid_bias,
                               _velocities, lane_pivots)
from .composite_rigid_body import FREE_FLYER_BASE as BASE   # the chain's base link
from .free_flyer import _chain_joints, _gravity_in_base, _less_offset, _offset, _unit_quaternion
from .jit import jit as _jit, serial_and_parallel as _serial_and_parallel
from .lane_blocks import (BLOCK, LANES, Q_ANGLE, Q_IN, Q_OUT, Q_RATE, _block, _link_constants, _load3, _store3,
                          _store_results, _sym_vec, _t_vec, _vec)
from .lanes import EXACT_RANGE
from .layout import PARENT
from .newton_euler import (N_ACCEL, N_ALPHA, N_CHILDREN, N_FORCE, N_MOMENT, N_OMEGA, NE_QUANTITIES, TERM_ALL,
                           TERM_GRAVITY, TERM_INERTIA, TERM_VELOCITY, _inverse_dynamics_rows, _link_wrench, _motion,
                           _wrenches)
from .scratch import _stack_rows
from .vectors import _add, _dot, _scale

@_jit
def _load_joints(X, size, n, Q, V, A, first, m_lanes, with_v, with_a):
    """Rows first.. of the robot's joints (link i > BASE: q at column i + 1 of the floating
    Q (N, n + 1), v and the input at column i of V, A (N, n); zeros without ``with_v``,
    ``with_a``) into Q_ANGLE, Q_RATE, Q_IN of their link blocks; whether an angle lies
    beyond lanes.EXACT_RANGE (or is not finite)."""
    far = False
    for i in range(BASE + 1, n):
        own = _block(X, i, size)
        for l in range(m_lanes):
            angle = Q[first + l, i + 1]
            own[l + Q_ANGLE * LANES] = angle
            own[l + Q_RATE * LANES] = V[first + l, i] if with_v else 0.0
            own[l + Q_IN * LANES] = A[first + l, i] if with_a else 0.0
            far |= not abs(angle) < EXACT_RANGE
    return far


@_jit
def _base_state(P, Q, V, k, moving):
    """State k's unit quaternion, whether its norm was within UNIT_TOLERANCE of 1, and the
    base velocity (v_lin, ω) (3-tuples; zero without ``moving``)."""
    quaternion, unit = _unit_quaternion(Q[k, 3], Q[k, 4], Q[k, 5], Q[k, 6])
    if moving:
        return quaternion, unit, (V[k, 0], V[k, 1], V[k, 2]), (V[k, 3], V[k, 4], V[k, 5])
    return quaternion, unit, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)


# -- inverse dynamics ---------------------------------------------------------------------------

@_jit
def _base_motion(P, X, Q, V, A, first, m_lanes, terms):
    """The base link's ω = v_ang, ω̇ = a_ang and origin v̇ = a_lin + d_lin (the ``terms``' parts)
    for each lane, then its own wrench, its children's sum zeroed; the number of states whose
    quaternion is not unit."""
    moving, accelerating = (terms & TERM_VELOCITY) != 0, (terms & TERM_INERTIA) != 0
    own = _block(X, BASE, NE_QUANTITIES)
    bad = 0
    for l in range(m_lanes):
        k = first + l
        quaternion, unit, u, w = _base_state(P, Q, V, k, moving)
        bad += not unit
        lin, _ = _offset(P, quaternion, u, w, moving, (terms & TERM_GRAVITY) != 0)
        if accelerating:
            lin, alpha = _add(lin, (A[k, 0], A[k, 1], A[k, 2])), (A[k, 3], A[k, 4], A[k, 5])
        else:
            alpha = (0.0, 0.0, 0.0)
        _store3(own, l, N_OMEGA, w)
        _store3(own, l, N_ALPHA, alpha)
        _store3(own, l, N_ACCEL, lin)
    for e in range(N_CHILDREN * LANES, (N_CHILDREN + 6) * LANES):
        own[e] = 0.0
    _link_wrench(P, own, BASE, m_lanes)
    return bad


@_jit
def _base_wrench(X, m_lanes):
    """τ's base entries: the base link's whole wrench (force, moment), into Q_OUT of the
    chain's six base links."""
    own = _block(X, BASE, NE_QUANTITIES)
    for e in range(3):
        force, moment = _block(X, e, NE_QUANTITIES), _block(X, 3 + e, NE_QUANTITIES)
        for l in range(m_lanes):
            force[l + Q_OUT * LANES] = own[l + (N_FORCE + e) * LANES] + own[l + (N_CHILDREN + e) * LANES]
            moment[l + Q_OUT * LANES] = own[l + (N_MOMENT + e) * LANES] + own[l + (N_CHILDREN + 3 + e) * LANES]


@_jit
def _torques_per_state(P, Q, V, A, terms, TAU, first, last):
    """The ``terms`` of τ of states first..last−1 by the chain's per-state kernel (the
    chain's q̈ = a + d, the parts of d the terms ask for)."""
    n = P.shape[0] - 1
    moving, accelerating = (terms & TERM_VELOCITY) != 0, (terms & TERM_INERTIA) != 0
    QC, VC, AC = _stack_rows(1, n), _stack_rows(1, n), _stack_rows(1, n)
    for k in range(first, last):
        quaternion, _, u, w = _base_state(P, Q, V, k, moving)
        lin, ang = _offset(P, quaternion, u, w, moving, (terms & TERM_GRAVITY) != 0)
        _chain_joints(Q[k], QC)
        for i in range(n):
            VC[0, i] = V[k, i] if moving else 0.0
            AC[0, i] = A[k, i] if accelerating else 0.0
        for e in range(3):
            AC[0, e] += lin[e]
            AC[0, 3 + e] += ang[e]
        _inverse_dynamics_rows(P, QC, VC, AC, TERM_ALL, TAU[k:k + 1])


@_jit
def torques_lanes(P, Q, V, A, terms, TAU, start, stop, X):
    """The ``terms`` (newton_euler's TERM_* bits) of τ (N, n) of the floating states
    start..stop−1 (Q (N, n + 1), V, A (N, n); V, A not read without TERM_VELOCITY,
    TERM_INERTIA) into TAU, LANES at a time, in the scratch X ((n + 1)·NE_QUANTITIES·LANES
    entries); the number of states whose quaternion is not unit."""
    n = P.shape[0] - 1
    moving, accelerating = (terms & TERM_VELOCITY) != 0, (terms & TERM_INERTIA) != 0
    bad = 0
    for first in range(start, stop, LANES):
        last = min(stop, first + LANES)
        m_lanes = last - first
        bad += _base_motion(P, X, Q, V, A, first, m_lanes, terms)
        if _load_joints(X, NE_QUANTITIES, n, Q, V, A, first, m_lanes, moving, accelerating):
            _torques_per_state(P, Q, V, A, terms, TAU, first, last)
            continue
        for i in range(BASE + 1, n):
            _motion(P, X, i, int(P[i, PARENT]), m_lanes)
        for i in range(n - 1, BASE, -1):
            _wrenches(P, X, i, int(P[i, PARENT]), m_lanes)
        _base_wrench(X, m_lanes)
        _store_results(X, NE_QUANTITIES, n, TAU, first, m_lanes)
    return bad


def _torques_batch(P, Q, V, A, terms, TAU, bad):
    """:func:`torques_lanes` over N states, BLOCK per task; bad (tasks,) the counts of
    quaternions that are not unit."""
    N, n = Q.shape[0], P.shape[0] - 1
    for block in nb.prange((N + BLOCK - 1) // BLOCK):
        X = np.empty((n + 1) * NE_QUANTITIES * LANES)
        bad[block] = torques_lanes(P, Q, V, A, terms, TAU, block * BLOCK, min(N, (block + 1) * BLOCK), X)


torques_batch = _serial_and_parallel(_torques_batch)   # (serial, parallel)


# -- forward dynamics ---------------------------------------------------------------------------

@_jit
def _base_velocity(P, X, Q, V, first, m_lanes):
    """Pass 1 for the base link: (ω, v) = (v_ang, v_lin), c = 0, p^A = v ×* I v, its
    children's sums zeroed; the number of states whose quaternion is not unit."""
    _, _, _, _, m, h, I, _ = _link_constants(P, BASE)
    own = _block(X, BASE, ABA_QUANTITIES)
    bad = 0
    for l in range(m_lanes):
        _, unit, u, w = _base_state(P, Q, V, first + l, True)
        bad += not unit
        _store3(own, l, OMEGA, w)
        _store3(own, l, VEL, u)
        bias_n, bias_f = _rigid_bias(m, h, I, w, u)
        _store3(own, l, BIAS_N, bias_n)
        _store3(own, l, BIAS_F, bias_f)
    for e in range(C_ANG * LANES, (C_LIN + 2) * LANES):
        own[e] = 0.0
    for e in range(CHILD_A * LANES, U_N * LANES):
        own[e] = 0.0
    return bad


@_jit
def _sym_inverse(S):
    """S⁻¹ (lower triangle) of a symmetric positive definite 3×3 S (lower triangle), by
    its adjugate."""
    c00, c10, c11 = S[2] * S[5] - S[4] * S[4], S[4] * S[3] - S[1] * S[5], S[0] * S[5] - S[3] * S[3]
    c20, c21, c22 = S[1] * S[4] - S[2] * S[3], S[1] * S[3] - S[0] * S[4], S[0] * S[2] - S[1] * S[1]
    inverse = 1.0 / (S[0] * c00 + S[1] * c10 + S[3] * c20)
    return (c00 * inverse, c10 * inverse, c11 * inverse, c20 * inverse, c21 * inverse, c22 * inverse)


@_jit
def _sym_pivots(S, smallest, largest):
    """(smallest, largest) of those given and the three pivots of S = L D Lᵀ (a symmetric
    3×3, lower triangle): S₀₀, the 2×2 minor ÷ S₀₀, det S ÷ the minor."""
    minor = S[0] * S[2] - S[1] * S[1]
    det = S[0] * (S[2] * S[5] - S[4] * S[4]) + S[1] * (S[4] * S[3] - S[1] * S[5]) + S[3] * (S[1] * S[4] - S[2] * S[3])
    for pivot in (S[0], minor / S[0], det / minor):
        smallest, largest = min(smallest, pivot), max(largest, pivot)
    return smallest, largest


@_jit
def _solve_base(A, B, C, r_ang, r_lin):
    """(x, y, smallest, largest) with [[A, B], [Bᵀ, C]] (x, y) = (r_ang, r_lin): A, C
    symmetric (lower triangles), B rows, the whole positive definite (an articulated
    inertia), by the Schur complement of C: W = B C⁻¹, S = A − W Bᵀ, x = S⁻¹ (r_ang − W
    r_lin), y = C⁻¹ r_lin − Wᵀ x; and the smallest and largest pivot of C and S (pivots of
    M(q)'s factorisation, as the joints' D_i: :func:`.articulated_body._regular_pivots`)."""
    C_inv = _sym_inverse(C)
    W = (_sym_vec(C_inv, B[0]), _sym_vec(C_inv, B[1]), _sym_vec(C_inv, B[2]))
    S = (A[0] - _dot(W[0], B[0]), A[1] - _dot(W[1], B[0]), A[2] - _dot(W[1], B[1]),
         A[3] - _dot(W[2], B[0]), A[4] - _dot(W[2], B[1]), A[5] - _dot(W[2], B[2]))
    x = _sym_vec(_sym_inverse(S), _add(r_ang, _scale(-1.0, _vec(W, r_lin))))
    smallest, largest = _sym_pivots(S, *_sym_pivots(C, np.inf, 0.0))
    return x, _add(_sym_vec(C_inv, r_lin), _scale(-1.0, _t_vec(W, x))), smallest, largest


@_jit
def _base_acceleration(P, X, Q, TAU, first, m_lanes):
    """The base link's a' = (I^A)⁻¹ (τ_B − p^A) (gravity removed) into ACC_ANG, ACC_LIN, and
    the base's a = (a'_lin + Rᵀg, a'_ang) into Q_OUT of the chain's six base links."""
    n = P.shape[0] - 1
    _, _, _, _, m, h, I, _ = _link_constants(P, BASE)
    own = _block(X, BASE, ABA_QUANTITIES)
    for l in range(m_lanes):
        k = first + l
        A, B, C = _articulated(own, l, m, h, I)
        r_ang = _add((TAU[k, 3], TAU[k, 4], TAU[k, 5]), _scale(-1.0, _load3(own, l, BIAS_N)))
        r_lin = _add((TAU[k, 0], TAU[k, 1], TAU[k, 2]), _scale(-1.0, _load3(own, l, BIAS_F)))
        a_ang, a_lin, smallest, largest = _solve_base(A, B, C, r_ang, r_lin)
        smallest, largest = lane_pivots(X, l, BASE + 1, n, smallest, largest)
        if not smallest > SINGULAR * largest:         # M(q) singular to rounding: NaN, refused by the caller
            a_ang = a_lin = (np.nan, np.nan, np.nan)
        _store3(own, l, ACC_ANG, a_ang)
        _store3(own, l, ACC_LIN, a_lin)
        fall = _gravity_in_base(P, _unit_quaternion(Q[k, 3], Q[k, 4], Q[k, 5], Q[k, 6])[0])     # Rᵀ(−g)
        for e in range(3):
            _block(X, e, ABA_QUANTITIES)[l + Q_OUT * LANES] = a_lin[e] - fall[e]
            _block(X, 3 + e, ABA_QUANTITIES)[l + Q_OUT * LANES] = a_ang[e]


@_jit
def _forward_per_state(P, Q, V, TAU, QDD, first, last):
    """q̈ of states first..last−1 by the chain's per-state kernel, less d."""
    n = P.shape[0] - 1
    QC = _stack_rows(1, n)
    for k in range(first, last):
        _chain_joints(Q[k], QC)
        _forward_dynamics_rows(P, QC, V[k:k + 1], TAU[k:k + 1], QDD[k:k + 1])
        _less_offset(P, Q[k], V[k], QDD[k])


@_jit
def forward_dynamics_lanes(P, Q, V, TAU, QDD, start, stop, X):
    """q̈ (N, n) of the floating states start..stop−1 (Q (N, n + 1), V, TAU (N, n)) into
    QDD, LANES at a time, in the scratch X ((n + 1)·ABA_QUANTITIES·LANES entries); the
    number of states whose quaternion is not unit."""
    n = P.shape[0] - 1
    bad = 0
    for first in range(start, stop, LANES):
        last = min(stop, first + LANES)
        m_lanes = last - first
        bad += _base_velocity(P, X, Q, V, first, m_lanes)
        if _load_joints(X, ABA_QUANTITIES, n, Q, V, TAU, first, m_lanes, True, True):
            _forward_per_state(P, Q, V, TAU, QDD, first, last)
            continue
        for i in range(BASE + 1, n):
            _velocities(P, X, i, int(P[i, PARENT]), m_lanes)
        for i in range(n - 1, BASE, -1):
            _inertias(P, X, i, int(P[i, PARENT]), m_lanes)
        _base_acceleration(P, X, Q, TAU, first, m_lanes)
        for i in range(BASE + 1, n):
            _accelerations(P, X, i, int(P[i, PARENT]), m_lanes)
        _store_results(X, ABA_QUANTITIES, n, QDD, first, m_lanes)
    return bad


def _forward_dynamics_batch(P, Q, V, TAU, QDD, bad):
    """:func:`forward_dynamics_lanes` over N states, BLOCK per task; bad (tasks,) the counts
    of quaternions that are not unit."""
    N, n = Q.shape[0], P.shape[0] - 1
    for block in nb.prange((N + BLOCK - 1) // BLOCK):
        X = np.empty((n + 1) * ABA_QUANTITIES * LANES)
        bad[block] = forward_dynamics_lanes(P, Q, V, TAU, QDD, block * BLOCK, min(N, (block + 1) * BLOCK), X)


forward_dynamics_batch = _serial_and_parallel(_forward_dynamics_batch)   # (serial, parallel)
