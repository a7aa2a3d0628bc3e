"""Articulated-body forward dynamics, compiled: per state, and over a batch across SIMD
lanes (Featherstone 2008, Table 7.1).  The readable statement, which these are held to, is
:mod:`dyn_plugin.algorithms.articulated_body`.

Per state: ``_aba_state(P, Q, QD, TAU, QDD, k, W)`` (on scalars, as the other per-state
cores: see :mod:`.newton_euler`), its rows loop ``_forward_dynamics_rows`` and the
one-state ``forward_dynamics_single``.  Spatial vectors as (angular, linear) tuple pairs;
an articulated inertia as 3×3 blocks [[A, B], [Bᵀ, C]] (rows A_ROW.., B_ROW.., CC_ROW.. of W).

Over a batch: ``forward_dynamics_lanes``, :data:`.lane_blocks.LANES` states at once (read
:mod:`.lane_blocks` first), run over N states by ``forward_dynamics_batch``; it falls back
on ``_forward_dynamics_rows`` for angles its sine cannot take.  The two forms agree to
rounding (``tests/test_statements.py``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..arrays import SINGULAR
from .jit import inline as _inline, jit as _jit, serial_and_parallel as _serial_and_parallel
from .lane_blocks import (BLOCK, COMMON, LANES, Q_IN, Q_OUT, Q_RATE, _add_into, _block, _copy,
                          _link_constants, _load3, _load_states, _parent_block, _placement, _rotate, _rotate_sym,
                          _rotations, _store3, _store_results, _sym_vec, _t_vec, _vec)
from .layout import ARMATURE, BASE_ACC, INERTIA, KIND, MASS, MOMENT, PARENT, Offsets
from .scratch import P_ROW, R_ROW, _mirror, _placements, _rotate_block, _rotate_symmetric, _scratch, algorithm_rows
from .status import OK, _finite_result, _one, _status
from .vectors import _accumulate, _add, _col, _cross, _dot, _mat_t_vec, _mat_vec, _packed_mat_vec, _put, _row, _scale

# -- per state --------------------------------------------------------------------------------

W_ROWS = algorithm_rows("articulated_body", (
    ("W_V_ANG", 1), ("W_V_LIN", 1),                    # spatial velocity (ω, v)
    ("W_C_ANG", 1), ("W_C_LIN", 1),                    # velocity-product acceleration c
    ("W_PA_N", 1), ("W_PA_F", 1),                      # p^A: bias moment, force
    ("A_ROW", 3), ("B_ROW", 3), ("CC_ROW", 3),         # I^A's blocks A, B, C
    ("W_U_N", 1), ("W_U_F", 1),                        # U = I^A S
    ("W_ACC_ANG", 1), ("W_ACC_LIN", 1),                # spatial acceleration a
    ("SCALARS", 1),                                    # (D, u, q̈)
    ("T_ROW", 3),                                      # a temporary block
))
(W_V_ANG, W_V_LIN, W_C_ANG, W_C_LIN, W_PA_N, W_PA_F, A_ROW, B_ROW, CC_ROW, W_U_N, W_U_F, W_ACC_ANG, W_ACC_LIN, SCALARS,
 T_ROW) = W_ROWS.at("W_V_ANG", "W_V_LIN", "W_C_ANG", "W_C_LIN", "W_PA_N", "W_PA_F", "A_ROW", "B_ROW", "CC_ROW",
                    "W_U_N", "W_U_F", "W_ACC_ANG", "W_ACC_LIN", "SCALARS", "T_ROW")


@_inline
def _aba_state(P, Q, QD, TAU, QDD, k, W):
    n = P.shape[0] - 1
    _placements(P, Q, k, W)
    zero = (0.0, 0.0, 0.0)
    for i in range(n):                                            # pass 1: velocities, bias
        parent = int(P[i, PARENT])
        w_p, v_p = (zero, zero) if parent < 0 else (_row(W, parent, W_V_ANG), _row(W, parent, W_V_LIN))
        w = _mat_t_vec(W, i, R_ROW, w_p)
        v = _mat_t_vec(W, i, R_ROW, _add(v_p, _cross(w_p, _row(W, i, P_ROW))))
        rate = QD[k, i]
        if P[i, KIND] == 0.0:                                     # c = v ×ₘ S q̇, S = [ẑ; 0]
            w = (w[0], w[1], w[2] + rate)
            c_ang, c_lin = (w[1] * rate, -w[0] * rate, 0.0), (v[1] * rate, -v[0] * rate, 0.0)
        else:                                                     # S = [0; ẑ]
            v = (v[0], v[1], v[2] + rate)
            c_ang, c_lin = zero, (w[1] * rate, -w[0] * rate, 0.0)
        _put(W, i, W_V_ANG, w)
        _put(W, i, W_V_LIN, v)
        _put(W, i, W_C_ANG, c_ang)
        _put(W, i, W_C_LIN, c_lin)
        m, h = P[i, MASS], _col(P, i, MOMENT)
        n_I = _add(_packed_mat_vec(P, i, INERTIA, w), _cross(h, v))     # I v
        f_I = _add(_cross(w, h), _scale(m, v))
        _put(W, i, W_PA_N, _add(_cross(w, n_I), _cross(v, f_I)))           # v ×* I v
        _put(W, i, W_PA_F, _cross(w, f_I))
        for a in range(3):                                           # I^A = I
            _put(W, i, A_ROW + a, _col(P, i, INERTIA + 3 * a))
            _put(W, i, CC_ROW + a, (m if a == 0 else 0.0, m if a == 1 else 0.0, m if a == 2 else 0.0))
        _put(W, i, B_ROW, (0.0, -h[2], h[1]))                        # B = [h]×
        _put(W, i, B_ROW + 1, (h[2], 0.0, -h[0]))
        _put(W, i, B_ROW + 2, (-h[1], h[0], 0.0))
    for i in range(n - 1, -1, -1):                                # pass 2: articulated inertias
        if P[i, KIND] == 0.0:                                     # U = I^A S = [A ẑ; Bᵀ ẑ]
            U_n = (W[i, A_ROW, 2], W[i, A_ROW + 1, 2], W[i, A_ROW + 2, 2])
            U_f = _row(W, i, B_ROW + 2)
            D = U_n[2] + P[i, ARMATURE]
            u = TAU[k, i] - W[i, W_PA_N, 2]
        else:                                                     # [B ẑ; C ẑ]
            U_n = (W[i, B_ROW, 2], W[i, B_ROW + 1, 2], W[i, B_ROW + 2, 2])
            U_f = (W[i, CC_ROW, 2], W[i, CC_ROW + 1, 2], W[i, CC_ROW + 2, 2])
            D = U_f[2] + P[i, ARMATURE]
            u = TAU[k, i] - W[i, W_PA_F, 2]
        _put(W, i, W_U_N, U_n)
        _put(W, i, W_U_F, U_f)
        W[i, SCALARS, 0], W[i, SCALARS, 1] = D, u
        parent = int(P[i, PARENT])
        if parent >= 0:
            _pass_to_parent(W, i, parent, U_n, U_f, D, u)
    if not _regular_pivots(W, n):
        for i in range(n):
            QDD[k, i] = np.nan
        return
    for i in range(n):                                            # pass 3: accelerations
        parent = int(P[i, PARENT])
        if parent < 0:
            a_ang, a_lin = zero, _col(P, n, BASE_ACC)
        else:
            a_ang, a_lin = _row(W, parent, W_ACC_ANG), _row(W, parent, W_ACC_LIN)
        a_lin = _add(_mat_t_vec(W, i, R_ROW, _add(a_lin, _cross(a_ang, _row(W, i, P_ROW)))), _row(W, i, W_C_LIN))
        a_ang = _add(_mat_t_vec(W, i, R_ROW, a_ang), _row(W, i, W_C_ANG))
        acc = (W[i, SCALARS, 1] - _dot(_row(W, i, W_U_N), a_ang) - _dot(_row(W, i, W_U_F), a_lin)) / W[i, SCALARS, 0]
        if P[i, KIND] == 0.0:
            a_ang = (a_ang[0], a_ang[1], a_ang[2] + acc)
        else:
            a_lin = (a_lin[0], a_lin[1], a_lin[2] + acc)
        _put(W, i, W_ACC_ANG, a_ang)
        _put(W, i, W_ACC_LIN, a_lin)
        QDD[k, i] = acc


@_inline
def _regular_pivots(W, n):
    """Whether every D_i exceeds SINGULAR × the largest: the D_i are the pivots of a
    factorisation of M(q) (Featherstone 2008, §6.5), so λ_min ≤ min D_i and max D_i ≤
    max M_ii ≤ λ_max, and a smaller one means M(q) is singular to rounding (its q̈ would be
    rounding error times 1e16 or more: NaN instead, which the caller refuses)."""
    smallest, largest = np.inf, 0.0
    for i in range(n):
        smallest, largest = min(smallest, W[i, SCALARS, 0]), max(largest, W[i, SCALARS, 0])
    return smallest > SINGULAR * largest


@_inline
def _pass_to_parent(W, i, parent, U_n, U_f, D, u):
    """I^a = I^A − U Uᵀ/D and p^a = p^A + I^a c + U u/D, added to the parent as
    Xᵀ I^a X and Xᵀ p^a (X = ⁱX_λ = [[Rᵀ, 0], [−Rᵀ p×, Rᵀ]]).  The blocks A and C are
    symmetric: their lower triangles are computed, then mirrored."""
    inverse = 1.0 / D
    V_n, V_f = _scale(inverse, U_n), _scale(inverse, U_f)         # U / D
    for a in range(3):                                            # I^a, in place
        for b in range(3):
            W[i, B_ROW + a, b] -= U_n[a] * V_f[b]
        for b in range(a + 1):
            W[i, A_ROW + a, b] -= U_n[a] * V_n[b]
            W[i, CC_ROW + a, b] -= U_f[a] * V_f[b]
    _mirror(W, i, A_ROW)
    _mirror(W, i, CC_ROW)
    c_ang, c_lin = _row(W, i, W_C_ANG), _row(W, i, W_C_LIN)
    k = u * inverse
    pa_n = _add(_row(W, i, W_PA_N), _add(_mat_vec(W, i, A_ROW, c_ang), _add(_mat_vec(W, i, B_ROW, c_lin), _scale(k, U_n))))
    pa_f = _add(_row(W, i, W_PA_F), _add(_mat_t_vec(W, i, B_ROW, c_ang), _add(_mat_vec(W, i, CC_ROW, c_lin), _scale(k, U_f))))
    p = _row(W, i, P_ROW)
    f = _mat_vec(W, i, R_ROW, pa_f)
    _accumulate(W, parent, W_PA_F, f)
    _accumulate(W, parent, W_PA_N, _add(_mat_vec(W, i, R_ROW, pa_n), _cross(p, f)))
    _rotate_symmetric(W, i, A_ROW)                                # blocks into the parent's axes
    _rotate_block(W, i, B_ROW)
    _rotate_symmetric(W, i, CC_ROW)
    # shift to the parent origin: B' = B + p×C and A' = A + p×Bᵀ − B' p× (C unchanged), where
    # column b of p×C is p × (row b of C), column b of p×Bᵀ is p × (row b of B) and row a
    # of B' p× is (row a of B') × p
    for b in range(3):                                            # B' into T, column by column
        column = _add((W[i, B_ROW, b], W[i, B_ROW + 1, b], W[i, B_ROW + 2, b]), _cross(p, _row(W, i, CC_ROW + b)))
        W[i, T_ROW, b], W[i, T_ROW + 1, b], W[i, T_ROW + 2, b] = column[0], column[1], column[2]
    for a in range(3):
        row = _cross(_row(W, i, T_ROW + a), p)                    # row a of B' p×
        for b in range(a + 1):
            shifted = W[i, A_ROW + a, b] + _cross(p, _row(W, i, B_ROW + b))[a] - row[b]
            W[parent, A_ROW + a, b] += shifted
            if b < a:
                W[parent, A_ROW + b, a] += shifted
        for b in range(3):
            W[parent, B_ROW + a, b] += W[i, T_ROW + a, b]
            W[parent, CC_ROW + a, b] += W[i, CC_ROW + a, b]



@_jit
def _forward_dynamics_rows(P, Q, QD, TAU, QDD):
    """q̈ (rows, n) of the states (rows) of Q, QD, TAU into QDD."""
    W = _scratch(P)
    for k in range(Q.shape[0]):
        _aba_state(P, Q, QD, TAU, QDD, k, W)


def forward_dynamics_single(P, q, qd, tau, qdd):
    """q̈ (n,) of one state into ``qdd``; returns a status code (OK = 0)."""
    n = P.shape[0] - 1
    status = _status(n, q, qd, tau)
    if status == OK and qdd.shape[0] == n:
        _forward_dynamics_rows(P, _one(q), _one(qd), _one(tau), _one(qdd))
        status = _finite_result(qdd)
    return status



# -- over a batch across SIMD lanes ---------------------------------------------------------------

LINK_BLOCK = Offsets((              # after the common ones (Q_IN: τ, Q_OUT: q̈); a 6-link robot's
                                    # scratch: 7·94·16·8 B = 84 KB
    ("OMEGA", 3), ("VEL", 3),       # spatial velocity (ω, v) in the link frame
    ("C_ANG", 2), ("C_LIN", 2),     # velocity-product acceleration c (x, y; z is 0)
    ("BIAS_N", 3), ("BIAS_F", 3),   # p^A: bias force, moment then force
    ("CHILD_A", 6), ("CHILD_B", 9), ("CHILD_C", 6),   # Σ children's Xᵀ I^a X: A (lower), B, C (lower)
    ("U_N", 3), ("U_F", 3), ("D_INV", 1), ("U_SCALAR", 1),   # U = I^A S, 1/D, u = τ − Sᵀ p^A
    ("ACC_ANG", 3), ("ACC_LIN", 3),                          # spatial acceleration a
    ("FROM_PARENT", 6),             # the parent's (ω, v) in pass 1, its a in pass 3
    ("TO_PARENT", 27),              # Xᵀ p^a, Xᵀ I^a X for the parent, as BIAS_N.. (RECEIVED)
), COMMON.end)
(OMEGA, VEL, C_ANG, C_LIN, BIAS_N, BIAS_F, CHILD_A, CHILD_B, CHILD_C, U_N, U_F, D_INV, U_SCALAR, ACC_ANG, ACC_LIN,
 FROM_PARENT, TO_PARENT) = LINK_BLOCK.at("OMEGA", "VEL", "C_ANG", "C_LIN", "BIAS_N", "BIAS_F", "CHILD_A", "CHILD_B",
                                         "CHILD_C", "U_N", "U_F", "D_INV", "U_SCALAR", "ACC_ANG", "ACC_LIN",
                                         "FROM_PARENT", "TO_PARENT")
RECEIVED = U_N - BIAS_N             # BIAS_N..CHILD_C: what a link receives from each child
if LINK_BLOCK.end - TO_PARENT != RECEIVED:
    raise ImportError("dyn_plugin.compiled.articulated_body: TO_PARENT must hold what a parent receives (RECEIVED)")
ABA_QUANTITIES = LINK_BLOCK.end
# A lane loop reads and writes its own link's block only (see .lane_blocks); what crosses
# between a link and its parent is copied before or after.


@_jit
def _velocities(P, X, i, parent, m_lanes):
    """Pass 1 for link i: R (:func:`_rotations`), (ω, v), c, p^A = v ×* I v, and its
    children's sums zeroed."""
    rev, pri, R0, p0, m, h, I, _ = _link_constants(P, i)
    own = _block(X, i, ABA_QUANTITIES)
    _rotations(P, own, i, m_lanes)
    _copy(_block(X, parent, ABA_QUANTITIES), OMEGA, own, FROM_PARENT, 6)
    for k in range(CHILD_A * LANES, U_N * LANES):
        own[k] = 0.0
    for l in range(m_lanes):
        R, p = _placement(own, l, R0, p0, pri)
        w_p, v_p = _load3(own, l, FROM_PARENT), _load3(own, l, FROM_PARENT + 3)
        w, v = _t_vec(R, w_p), _t_vec(R, _add(v_p, _cross(w_p, p)))
        rate = own[l + Q_RATE * LANES]
        w, v = (w[0], w[1], w[2] + rev * rate), (v[0], v[1], v[2] + pri * rate)
        _store3(own, l, OMEGA, w)
        _store3(own, l, VEL, v)
        own[l + C_ANG * LANES], own[l + (C_ANG + 1) * LANES] = rev * w[1] * rate, -rev * w[0] * rate
        own[l + C_LIN * LANES] = (rev * v[1] + pri * w[1]) * rate
        own[l + (C_LIN + 1) * LANES] = -(rev * v[0] + pri * w[0]) * rate
        bias_n, bias_f = _rigid_bias(m, h, I, w, v)
        _store3(own, l, BIAS_N, bias_n)
        _store3(own, l, BIAS_F, bias_f)


@_inline
def _rigid_bias(m, h, I, w, v):
    """p = v ×* I v (moment, force) of a body (m, h = m c, I_O lower) moving at (ω, v) =
    (w, v) in its frame (Featherstone 2008 Table 7.1)."""
    n_I = _add(_sym_vec(I, w), _cross(h, v))             # I v
    f_I = _add(_cross(w, h), _scale(m, v))
    return _add(_cross(w, n_I), _cross(v, f_I)), _cross(w, f_I)


@_inline
def _articulated(own, l, m, h, I):
    """I^A = I + the children's sums, as blocks (A lower, B rows, C lower)."""
    A = (I[0] + own[l + CHILD_A * LANES], I[1] + own[l + (CHILD_A + 1) * LANES], I[2] + own[l + (CHILD_A + 2) * LANES],
         I[3] + own[l + (CHILD_A + 3) * LANES], I[4] + own[l + (CHILD_A + 4) * LANES],
         I[5] + own[l + (CHILD_A + 5) * LANES])
    B = ((own[l + CHILD_B * LANES], own[l + (CHILD_B + 1) * LANES] - h[2], own[l + (CHILD_B + 2) * LANES] + h[1]),
         (own[l + (CHILD_B + 3) * LANES] + h[2], own[l + (CHILD_B + 4) * LANES], own[l + (CHILD_B + 5) * LANES] - h[0]),
         (own[l + (CHILD_B + 6) * LANES] - h[1], own[l + (CHILD_B + 7) * LANES] + h[0], own[l + (CHILD_B + 8) * LANES]))
    C = (m + own[l + CHILD_C * LANES], own[l + (CHILD_C + 1) * LANES], m + own[l + (CHILD_C + 2) * LANES],
         own[l + (CHILD_C + 3) * LANES], own[l + (CHILD_C + 4) * LANES], m + own[l + (CHILD_C + 5) * LANES])
    return A, B, C


@_jit
def _inertias(P, X, i, parent, m_lanes):
    """Pass 2 for link i: U = I^A S, D, u; then, with a parent, :func:`_carry`."""
    rev, pri, R0, p0, m, h, I, armature = _link_constants(P, i)
    own = _block(X, i, ABA_QUANTITIES)
    for l in range(m_lanes):
        A, B, C = _articulated(own, l, m, h, I)
        U_n = (rev * A[3] + pri * B[0][2], rev * A[4] + pri * B[1][2], rev * A[5] + pri * B[2][2])
        U_f = (rev * B[2][0] + pri * C[3], rev * B[2][1] + pri * C[4], rev * B[2][2] + pri * C[5])
        bias_n, bias_f = _load3(own, l, BIAS_N), _load3(own, l, BIAS_F)
        inverse = 1.0 / (rev * U_n[2] + pri * U_f[2] + armature)
        u = own[l + Q_IN * LANES] - (rev * bias_n[2] + pri * bias_f[2])
        _store3(own, l, U_N, U_n)
        _store3(own, l, U_F, U_f)
        own[l + D_INV * LANES], own[l + U_SCALAR * LANES] = inverse, u
    if parent >= 0:
        _carry(P, X, i, parent, m_lanes)


@_jit
def _carry(P, X, i, parent, m_lanes):
    """The rest of pass 2 for link i: I^a = I^A − U Uᵀ/D and p^a = p^A + I^a c + U u/D
    (I^a left in the CHILD_ quantities), Xᵀ p^a into TO_PARENT; then :func:`_carry_inertia`.
    Functions of their own, each one lane loop: a second lane loop in one function was not
    vectorised (the compiler lost that the lane index is ≥ 0), and one loop doing all of it
    holds more values than the machine has registers."""
    _, pri, R0, p0, m, h, I, _ = _link_constants(P, i)
    own = _block(X, i, ABA_QUANTITIES)
    for l in range(m_lanes):
        A, B, C = _articulated(own, l, m, h, I)
        U_n, U_f = _load3(own, l, U_N), _load3(own, l, U_F)
        inverse, u = own[l + D_INV * LANES], own[l + U_SCALAR * LANES]
        V_n, V_f = _scale(inverse, U_n), _scale(inverse, U_f)
        A = (A[0] - U_n[0] * V_n[0], A[1] - U_n[1] * V_n[0], A[2] - U_n[1] * V_n[1],
             A[3] - U_n[2] * V_n[0], A[4] - U_n[2] * V_n[1], A[5] - U_n[2] * V_n[2])
        B = ((B[0][0] - U_n[0] * V_f[0], B[0][1] - U_n[0] * V_f[1], B[0][2] - U_n[0] * V_f[2]),
             (B[1][0] - U_n[1] * V_f[0], B[1][1] - U_n[1] * V_f[1], B[1][2] - U_n[1] * V_f[2]),
             (B[2][0] - U_n[2] * V_f[0], B[2][1] - U_n[2] * V_f[1], B[2][2] - U_n[2] * V_f[2]))
        C = (C[0] - U_f[0] * V_f[0], C[1] - U_f[1] * V_f[0], C[2] - U_f[1] * V_f[1],
             C[3] - U_f[2] * V_f[0], C[4] - U_f[2] * V_f[1], C[5] - U_f[2] * V_f[2])
        c_ang = (own[l + C_ANG * LANES], own[l + (C_ANG + 1) * LANES], 0.0)
        c_lin = (own[l + C_LIN * LANES], own[l + (C_LIN + 1) * LANES], 0.0)
        k = u * inverse
        pa_n = _add(_load3(own, l, BIAS_N), _add(_add(_sym_vec(A, c_ang), _vec(B, c_lin)), _scale(k, U_n)))
        pa_f = _add(_load3(own, l, BIAS_F), _add(_add(_t_vec(B, c_ang), _sym_vec(C, c_lin)), _scale(k, U_f)))
        R, p = _placement(own, l, R0, p0, pri)
        f = _vec(R, pa_f)
        _store3(own, l, TO_PARENT + BIAS_F - BIAS_N, f)
        _store3(own, l, TO_PARENT, _add(_vec(R, pa_n), _cross(p, f)))
        _store_blocks(own, l, CHILD_A, A, B, C)
    _carry_inertia(P, X, i, m_lanes)
    _add_into(own, TO_PARENT, _block(X, parent, ABA_QUANTITIES), BIAS_N, RECEIVED)


@_inline
def _store_blocks(own, l, first, A, B, C):
    """A (6, lower), B (9), C (6, lower) into quantities first.. (constant indices only: a
    loop here stops the vectoriser)."""
    _store3(own, l, first, A[:3])
    _store3(own, l, first + 3, A[3:])
    _store3(own, l, first + 6, B[0])
    _store3(own, l, first + 9, B[1])
    _store3(own, l, first + 12, B[2])
    _store3(own, l, first + 15, C[:3])
    _store3(own, l, first + 18, C[3:])


@_jit
def _carry_inertia(P, X, i, m_lanes):
    """Xᵀ [[A, B], [Bᵀ, C]] X of link i's I^a (in its CHILD_ quantities, from _carry), for
    the parent, into TO_PARENT: the blocks turned into the parent's axes, then moved to its
    origin, B' = B + p×C, A' = A + p×Bᵀ − B' p×, C' = C (as _pass_to_parent)."""
    _, pri, R0, p0, _, _, _, _ = _link_constants(P, i)
    own = _block(X, i, ABA_QUANTITIES)
    for l in range(m_lanes):
        R, p = _placement(own, l, R0, p0, pri)
        A = _rotate_sym(R, (own[l + CHILD_A * LANES], own[l + (CHILD_A + 1) * LANES], own[l + (CHILD_A + 2) * LANES],
                            own[l + (CHILD_A + 3) * LANES], own[l + (CHILD_A + 4) * LANES],
                            own[l + (CHILD_A + 5) * LANES]))
        B = _rotate(R, (_load3(own, l, CHILD_B), _load3(own, l, CHILD_B + 3), _load3(own, l, CHILD_B + 6)))
        C = _rotate_sym(R, (own[l + CHILD_C * LANES], own[l + (CHILD_C + 1) * LANES], own[l + (CHILD_C + 2) * LANES],
                            own[l + (CHILD_C + 3) * LANES], own[l + (CHILD_C + 4) * LANES],
                            own[l + (CHILD_C + 5) * LANES]))
        rows_C = ((C[0], C[1], C[3]), (C[1], C[2], C[4]), (C[3], C[4], C[5]))
        pC = (_cross(p, rows_C[0]), _cross(p, rows_C[1]), _cross(p, rows_C[2]))    # column b of p×C
        B2 = ((B[0][0] + pC[0][0], B[0][1] + pC[1][0], B[0][2] + pC[2][0]),
              (B[1][0] + pC[0][1], B[1][1] + pC[1][1], B[1][2] + pC[2][1]),
              (B[2][0] + pC[0][2], B[2][1] + pC[1][2], B[2][2] + pC[2][2]))
        pB = (_cross(p, B[0]), _cross(p, B[1]), _cross(p, B[2]))       # column b of p×Bᵀ
        Bp = (_cross(B2[0], p), _cross(B2[1], p), _cross(B2[2], p))     # row a of B' p×
        A = (A[0] + pB[0][0] - Bp[0][0], A[1] + pB[0][1] - Bp[1][0], A[2] + pB[1][1] - Bp[1][1],
             A[3] + pB[0][2] - Bp[2][0], A[4] + pB[1][2] - Bp[2][1], A[5] + pB[2][2] - Bp[2][2])
        _store_blocks(own, l, TO_PARENT + CHILD_A - BIAS_N, A, B2, C)


@_jit
def _accelerations(P, X, i, parent, m_lanes):
    """Pass 3 for link i: q̈_i = (u − Uᵀ a')/D, a = a' + S q̈_i, a' = X a_parent + c."""
    rev, pri, R0, p0, _, _, _, _ = _link_constants(P, i)
    own = _block(X, i, ABA_QUANTITIES)
    _copy(_block(X, parent, ABA_QUANTITIES), ACC_ANG, own, FROM_PARENT, 6)
    for l in range(m_lanes):
        R, p = _placement(own, l, R0, p0, pri)
        a_ang_p, a_lin_p = _load3(own, l, FROM_PARENT), _load3(own, l, FROM_PARENT + 3)
        a_lin = _t_vec(R, _add(a_lin_p, _cross(a_ang_p, p)))
        a_ang = _t_vec(R, a_ang_p)
        a_ang = (a_ang[0] + own[l + C_ANG * LANES], a_ang[1] + own[l + (C_ANG + 1) * LANES], a_ang[2])
        a_lin = (a_lin[0] + own[l + C_LIN * LANES], a_lin[1] + own[l + (C_LIN + 1) * LANES], a_lin[2])
        acc = (own[l + U_SCALAR * LANES] - _dot(_load3(own, l, U_N), a_ang) - _dot(_load3(own, l, U_F), a_lin)) \
            * own[l + D_INV * LANES]
        _store3(own, l, ACC_ANG, (a_ang[0], a_ang[1], a_ang[2] + rev * acc))
        _store3(own, l, ACC_LIN, (a_lin[0], a_lin[1], a_lin[2] + pri * acc))
        own[l + Q_OUT * LANES] = acc



@_jit
def _aba_base(P, X):
    """The base block n of the scratch: ω = v = 0, a = (0, −g), for every lane."""
    n = P.shape[0] - 1
    base = _block(X, n, ABA_QUANTITIES)
    for l in range(LANES):
        for e in range(3):
            base[l + (OMEGA + e) * LANES] = base[l + (VEL + e) * LANES] = base[l + (ACC_ANG + e) * LANES] = 0.0
            base[l + (ACC_LIN + e) * LANES] = P[n, BASE_ACC + e]



@_jit
def forward_dynamics_lanes(P, Q, QD, TAU, QDD, start, stop, X):
    """q̈ of the states start..stop−1 (rows of Q, QD, TAU (N, n)) into QDD, LANES at a time,
    in the scratch X ((n + 1)·ABA_QUANTITIES·LANES entries: the links' blocks, then the
    base's, which :func:`_aba_base` sets).  A block of lanes with an angle beyond
    lanes.EXACT_RANGE runs the per-state kernel instead."""
    n = P.shape[0] - 1
    for first in range(start, stop, LANES):
        last = min(stop, first + LANES)
        m_lanes = last - first
        if _load_states(X, ABA_QUANTITIES, n, Q, QD, TAU, first, m_lanes, True, True):
            _forward_dynamics_rows(P, Q[first:last], QD[first:last], TAU[first:last], QDD[first:last])
            continue
        for i in range(n):
            _velocities(P, X, i, _parent_block(P, i), m_lanes)
        for i in range(n - 1, -1, -1):
            _inertias(P, X, i, int(P[i, PARENT]), m_lanes)
        for i in range(n):
            _accelerations(P, X, i, _parent_block(P, i), m_lanes)
        _store_results(X, ABA_QUANTITIES, n, QDD, first, m_lanes)
        _refuse_singular_lanes(X, n, QDD, first, m_lanes)


@_jit
def lane_pivots(X, l, first_link, n, smallest, largest):
    """(smallest, largest) of ``smallest``, ``largest`` and lane l's pivots D_i = 1/D_INV
    of links first_link..n−1 (see _regular_pivots)."""
    for i in range(first_link, n):
        D = 1.0 / _block(X, i, ABA_QUANTITIES)[l + D_INV * LANES]
        smallest, largest = min(smallest, D), max(largest, D)
    return smallest, largest


@_jit
def _refuse_singular_lanes(X, n, QDD, first, m_lanes):
    """NaN in row first + l of QDD for each lane l whose pivots D_i are not all above
    SINGULAR × the largest (see _regular_pivots)."""
    for l in range(m_lanes):
        smallest, largest = lane_pivots(X, l, 0, n, np.inf, 0.0)
        if not smallest > SINGULAR * largest:
            for i in range(n):
                QDD[first + l, i] = np.nan


def _forward_dynamics_batch(P, Q, QD, TAU, QDD):
    """q̈ (N, n) into QDD, BLOCK states per task (a multiple of LANES, so that every state
    falls in the same place of a block of lanes whatever the number of workers)."""
    N, n = Q.shape[0], P.shape[0] - 1
    for block in nb.prange((N + BLOCK - 1) // BLOCK):
        X = np.empty((n + 1) * ABA_QUANTITIES * LANES)
        _aba_base(P, X)
        forward_dynamics_lanes(P, Q, QD, TAU, QDD, block * BLOCK, min(N, (block + 1) * BLOCK), X)


forward_dynamics_batch = _serial_and_parallel(_forward_dynamics_batch)   # (serial, parallel)

