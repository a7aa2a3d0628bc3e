"""The recursions of :mod:`.kernels` over a batch across SIMD lanes: Newton-Euler inverse
dynamics (Fu Table 3.3, as ``kernels._rnea_state``) and the articulated-body forward dynamics
(Featherstone 2008, Table 7.1, as ``kernels._aba_state``), for :data:`LANES` states at once
(the composite-rigid-body mass matrix: :mod:`.mass_lanes`, with the helpers here).

The per-state kernels run one state after another, and a state's passes are chains of
dependent products that keep the machine's vector units idle.  Here every step of a
recursion, for one link, runs over a block of states in a loop that the compiler
vectorises (four states per AVX2 instruction): the loop body is straight-line arithmetic on
one state, reading and writing quantities stored flat over lanes as in :mod:`.lanes`
(quantity e of link i, state l at ``(i·size + e)·LANES + l``), so that two quantities of
one link are a constant distance apart.  What the compiler needs to vectorise a loop, and
what stopped it, is said where it matters (_block, ABA_QUANTITIES, _carry).

What differs between a revolute and a prismatic joint, a branch in the per-state kernels,
is a blend here by the link's constants ``rev`` (1.0 revolute, 0.0 prismatic) and
``pri = 1 − rev``: multiplying by an exact 0.0 or 1.0 changes no finite value, and a body
without branches is one the compiler can vectorise.  The base is link block ``n``: zero
velocity, acceleration −g (Fu 3.3-46), so that the first link reads its "parent" as any
other does.

Same model (:mod:`.layout`'s packed array, z normal form: R = R₀' Rz(q) for a revolute joint,
p = p₀' + q R₀'ẑ for a prismatic one), same armature, same equations as the per-state
kernels; the sums are formed in another order, so the two agree to rounding (tests hold
both to pinocchio).  sin and cos are :func:`.lanes.sin_cos`'s (vectorisable); a block of
lanes with an angle beyond its exact range runs the per-state kernel.  A state's result
does not depend on its place in the batch, nor on the number of workers.

Symmetric 3×3 blocks travel as their lower triangle ``(s00, s10, s11, s20, s21, s22)``,
rotations as rows ``((R00, R01, R02), ...)``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import (_OPTIONS, ARMATURE, BASE_ACC, INERTIA, KIND, MASS, MOMENT, PARENT, POS0, ROT0, _add, _cross,
                      _dot, _forward_dynamics_rows, _inverse_dynamics_rows, _scale, _serial_and_parallel, TERM_GRAVITY,
                      TERM_INERTIA, TERM_VELOCITY)
from .lanes import EXACT_RANGE, _reduced_sin_cos

# numba freezes these into the cached machine code and watches only this file: keep them here
MODEL_COLUMNS = (PARENT, KIND, ROT0, POS0, MASS, MOMENT, INERTIA, ARMATURE, BASE_ACC)
if MODEL_COLUMNS != (0, 1, 2, 11, 23, 24, 27, 36, 0):
    raise ImportError("dyn_plugin.compiled.link_lanes: the packed model's columns changed; update "
                      "MODEL_COLUMNS here (this file) so that numba's cache of these kernels is invalidated")

LANES = 16                    # states per block of lanes (8, 32 and 64 were no faster for the PUMA-560)
BLOCK = 64 * LANES            # states per task of the parallel loop (a multiple of LANES: see _forward_dynamics_batch)

# the quantities of a link block, each over LANES states: first those of both recursions,
Q_ANGLE, Q_RATE, Q_IN, Q_OUT = 0, 1, 2, 3          # q, q̇, the input τ (ABA) or q̈ (NE), the result
R_COL0, R_COL1 = 4, 7                               # columns 0 and 1 of R (column 2 is R₀'ẑ, a constant)
# then the articulated-body algorithm's (a 6-link robot's scratch: 7·94·16·8 B = 84 KB)
OMEGA, VEL = 10, 13                                 # spatial velocity (ω, v) in the link frame
C_ANG, C_LIN = 16, 18                               # velocity-product acceleration c (x, y; z is 0)
BIAS_N, BIAS_F = 20, 23                             # p^A: bias force, moment then force
CHILD_A, CHILD_B, CHILD_C = 26, 32, 41              # Σ children's Xᵀ I^a X: A (6, lower), B (9), C (6, lower)
RECEIVED = 27                                       # BIAS_N.. : what a link receives from each child
U_N, U_F, D_INV, U_SCALAR = 47, 50, 53, 54          # U = I^A S, 1/D, u = τ − Sᵀ p^A
ACC_ANG, ACC_LIN = 55, 58                           # spatial acceleration a
FROM_PARENT = 61                                    # the parent's (ω, v) in pass 1, its a in pass 3 (6)
TO_PARENT = 67                                      # Xᵀ p^a, Xᵀ I^a X for the parent, as BIAS_N.. (27)
ABA_QUANTITIES = 94
# A lane loop reads and writes its own link's block only, at constant distances: with the
# parent's block too (a run-time distance) the compiler gives up vectorising ("too many
# memory checks").  What crosses between a link and its parent is copied before or after,
# by loops over whole quantities (_copy, _add_into).

_jit = nb.njit(**_OPTIONS)
_inline = nb.njit(inline="always", **_OPTIONS)   # indexing by the lane inside the lane loop itself (see _block)


# -- 3×3 blocks as tuples -------------------------------------------------------------------

@_jit
def _t_vec(R, v):
    """Rᵀ v."""
    return (R[0][0] * v[0] + R[1][0] * v[1] + R[2][0] * v[2],
            R[0][1] * v[0] + R[1][1] * v[1] + R[2][1] * v[2],
            R[0][2] * v[0] + R[1][2] * v[1] + R[2][2] * v[2])


@_jit
def _vec(R, v):
    """R v."""
    return (_dot(R[0], v), _dot(R[1], v), _dot(R[2], v))


@_jit
def _sym_vec(S, v):
    """S v for a symmetric S given by its lower triangle."""
    return (S[0] * v[0] + S[1] * v[1] + S[3] * v[2],
            S[1] * v[0] + S[2] * v[1] + S[4] * v[2],
            S[3] * v[0] + S[4] * v[1] + S[5] * v[2])


@_jit
def _rotate_sym(R, S):
    """R S Rᵀ (lower triangle) of a symmetric S (lower triangle)."""
    T0, T1, T2 = _sym_vec(S, R[0]), _sym_vec(S, R[1]), _sym_vec(S, R[2])     # rows of R S, transposed
    return (_dot(R[0], T0), _dot(R[1], T0), _dot(R[1], T1), _dot(R[2], T0), _dot(R[2], T1), _dot(R[2], T2))


@_jit
def _rotate(R, B):
    """R B Rᵀ of a full B (rows)."""
    T = (_vec(B, R[0]), _vec(B, R[1]), _vec(B, R[2]))                       # T[b] = B R[b] = column b of B Rᵀ
    return (_vec(T, R[0]), _vec(T, R[1]), _vec(T, R[2]))                    # row a: R[a] · T[b]


# -- the passes, each one link over the lanes ---------------------------------------------------

# A link's block is a view of the scratch (_block), indexed from 0 by the lane l and the
# quantity e at l + e·LANES: indices the compiler sees are never negative (numba wraps a
# negative index around, a select on every access that stops vectorisation).

@_jit
def _block(X, i, size):
    """Link i's quantities in the scratch X of blocks of ``size`` quantities."""
    return X[i * size * LANES:(i + 1) * size * LANES]


@_jit
def _copy(source, first, target, to, count):
    """Quantities first.. of the block ``source`` into to.. of ``target``, ``count`` of them."""
    for k in range(count * LANES):
        target[to * LANES + k] = source[first * LANES + k]


@_jit
def _add_into(source, first, target, to, count):
    """Quantities first.. of the block ``source`` added to to.. of ``target``."""
    for k in range(count * LANES):
        target[to * LANES + k] += source[first * LANES + k]


@_inline
def _load3(Y, l, e):
    return (Y[l + e * LANES], Y[l + (e + 1) * LANES], Y[l + (e + 2) * LANES])


@_inline
def _store3(Y, l, e, v):
    Y[l + e * LANES], Y[l + (e + 1) * LANES], Y[l + (e + 2) * LANES] = v[0], v[1], v[2]


@_jit
def _link_constants(P, i):
    """``(rev, pri, R₀' rows, p₀', m, h, I_O lower, armature)`` of link i."""
    pri = P[i, KIND]
    R0 = ((P[i, ROT0], P[i, ROT0 + 1], P[i, ROT0 + 2]), (P[i, ROT0 + 3], P[i, ROT0 + 4], P[i, ROT0 + 5]),
          (P[i, ROT0 + 6], P[i, ROT0 + 7], P[i, ROT0 + 8]))
    I = (P[i, INERTIA], P[i, INERTIA + 3], P[i, INERTIA + 4], P[i, INERTIA + 6], P[i, INERTIA + 7],
         P[i, INERTIA + 8])
    return (1.0 - pri, pri, R0, (P[i, POS0], P[i, POS0 + 1], P[i, POS0 + 2]), P[i, MASS],
            (P[i, MOMENT], P[i, MOMENT + 1], P[i, MOMENT + 2]), I, P[i, ARMATURE])


@_inline
def _placement(own, l, R0, p0, pri):
    """R (rows) and p of one lane's link in its parent (its R columns 0, 1 stored by pass 1)."""
    R = ((own[l + R_COL0 * LANES], own[l + R_COL1 * LANES], R0[0][2]),
         (own[l + (R_COL0 + 1) * LANES], own[l + (R_COL1 + 1) * LANES], R0[1][2]),
         (own[l + (R_COL0 + 2) * LANES], own[l + (R_COL1 + 2) * LANES], R0[2][2]))
    slide = pri * own[l + Q_ANGLE * LANES]
    return R, (p0[0] + slide * R0[0][2], p0[1] + slide * R0[1][2], p0[2] + slide * R0[2][2])


@_jit
def _rotations(P, own, i, m_lanes):
    """Columns 0 and 1 of link i's R = R₀' Rz(q), each lane, into its block ``own``."""
    rev, _, R0, _, _, _, _, _ = _link_constants(P, i)
    for l in range(m_lanes):
        s, c = _reduced_sin_cos(rev * own[l + Q_ANGLE * LANES])
        _store3(own, l, R_COL0, (c * R0[0][0] + s * R0[0][1], c * R0[1][0] + s * R0[1][1], c * R0[2][0] + s * R0[2][1]))
        _store3(own, l, R_COL1, (c * R0[0][1] - s * R0[0][0], c * R0[1][1] - s * R0[1][0], c * R0[2][1] - s * R0[2][0]))


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
        n_I = _add(_sym_vec(I, w), _cross(h, v))             # I v
        f_I = _add(_cross(w, h), _scale(m, v))
        _store3(own, l, BIAS_N, _add(_cross(w, n_I), _cross(v, f_I)))
        _store3(own, l, BIAS_F, _cross(w, f_I))


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
    origin, B' = B + p×C, A' = A + p×Bᵀ − B' p×, C' = C (as kernels._pass_to_parent)."""
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


# -- a block of states --------------------------------------------------------------------------

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
def _parent_block(P, i):
    """The block link i reads its parent's motion from: the parent's, or the base's (n)."""
    parent = int(P[i, PARENT])
    return parent if parent >= 0 else P.shape[0] - 1


@_jit
def _load_states(X, size, n, A, B, C, first, m_lanes, with_B, with_C):
    """Rows first.. of the inputs A (q), B, C (N, n) into quantities Q_ANGLE, Q_RATE, Q_IN of
    the link blocks (zeros for B without ``with_B``, C without ``with_C``: not read then);
    whether an angle lies beyond lanes.EXACT_RANGE, where the vectorised sine loses accuracy."""
    far = False
    for i in range(n):
        own = _block(X, i, size)
        for l in range(m_lanes):
            own[l + Q_ANGLE * LANES] = A[first + l, i]
            own[l + Q_RATE * LANES] = B[first + l, i] if with_B else 0.0
            own[l + Q_IN * LANES] = C[first + l, i] if with_C else 0.0
            far |= not abs(A[first + l, i]) < EXACT_RANGE
    return far


@_jit
def _store_results(X, size, n, OUT, first, m_lanes):
    """Quantity Q_OUT of the link blocks into rows first.. of OUT (N, n)."""
    for i in range(n):
        own = _block(X, i, size)
        for l in range(m_lanes):
            OUT[first + l, i] = own[l + Q_OUT * LANES]


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


def _forward_dynamics_batch(P, Q, QD, TAU, QDD):
    """q̈ (N, n) into QDD, BLOCK states per task (a multiple of LANES, so that every state
    falls in the same place of a block of lanes whatever the number of workers)."""
    N, n = Q.shape[0], P.shape[0] - 1
    for block in nb.prange((N + BLOCK - 1) // BLOCK):
        X = np.empty((n + 1) * ABA_QUANTITIES * LANES)
        _aba_base(P, X)
        forward_dynamics_lanes(P, Q, QD, TAU, QDD, block * BLOCK, min(N, (block + 1) * BLOCK), X)


forward_dynamics_batch = _serial_and_parallel(_forward_dynamics_batch)   # (serial, parallel)


# -- Newton-Euler (kernels._rnea_state; Fu Table 3.3, link wrenches about the origin) ------------
# the quantities of a link block after the common ones (Q_IN: q̈, Q_OUT: τ)
N_OMEGA, N_ALPHA, N_ACCEL = 10, 13, 16     # ω, ω̇ and v̇ of the link origin, in the link frame
N_FORCE, N_MOMENT = 19, 22                 # the link's own wrench F, N (Khalil's form about its origin)
N_CHILDREN = 25                            # Σ children's wrenches (f, n) in this link's frame (6)
N_FROM_PARENT = 31                         # the parent's (ω, ω̇, v̇) (9)
N_TO_PARENT = 40                           # this link's whole wrench (f, n) in the parent's frame (6)
NE_QUANTITIES = 46


@_jit
def _motion(P, X, i, parent, m_lanes):
    """Forward pass for link i (Fu 3.3-50..3.3-52): R, ω, ω̇, v̇, then its own wrench
    (:func:`_link_wrench`); its children's sum zeroed."""
    rev, pri, R0, p0, _, _, _, _ = _link_constants(P, i)
    own = _block(X, i, NE_QUANTITIES)
    _rotations(P, own, i, m_lanes)
    _copy(_block(X, parent, NE_QUANTITIES), N_OMEGA, own, N_FROM_PARENT, 9)
    for k in range(N_CHILDREN * LANES, (N_CHILDREN + 6) * LANES):
        own[k] = 0.0
    for l in range(m_lanes):
        R, p = _placement(own, l, R0, p0, pri)
        w_p, wd_p, vd_p = _load3(own, l, N_FROM_PARENT), _load3(own, l, N_FROM_PARENT + 3), \
            _load3(own, l, N_FROM_PARENT + 6)
        origin_acc = _add(vd_p, _add(_cross(wd_p, p), _cross(w_p, _cross(w_p, p))))
        w, wd, vd = _t_vec(R, w_p), _t_vec(R, wd_p), _t_vec(R, origin_acc)
        rate, acc = own[l + Q_RATE * LANES], own[l + Q_IN * LANES]
        wd = (wd[0] + rev * w[1] * rate, wd[1] - rev * w[0] * rate, wd[2] + rev * acc)       # 3.3-50, 3.3-51
        w = (w[0], w[1], w[2] + rev * rate)
        vd = (vd[0] + pri * 2.0 * w[1] * rate, vd[1] - pri * 2.0 * w[0] * rate, vd[2] + pri * acc)   # 3.3-52
        _store3(own, l, N_OMEGA, w)
        _store3(own, l, N_ALPHA, wd)
        _store3(own, l, N_ACCEL, vd)
    _link_wrench(P, own, i, m_lanes)


@_jit
def _link_wrench(P, own, i, m_lanes):
    """Link i's own wrench F = m v̇ + ω̇×h + ω×(ω×h), N = I ω̇ + ω×(I ω) + h×v̇ (Fu 3.3-53..55
    about the link origin), from its ω, ω̇, v̇ (a lane loop of its own: see _carry)."""
    _, _, _, _, m, h, I, _ = _link_constants(P, i)
    for l in range(m_lanes):
        w, wd, vd = _load3(own, l, N_OMEGA), _load3(own, l, N_ALPHA), _load3(own, l, N_ACCEL)
        _store3(own, l, N_FORCE, _add(_scale(m, vd), _add(_cross(wd, h), _cross(w, _cross(w, h)))))
        _store3(own, l, N_MOMENT, _add(_sym_vec(I, wd), _add(_cross(w, _sym_vec(I, w)), _cross(h, vd))))


@_jit
def _wrenches(P, X, i, parent, m_lanes):
    """Backward pass for link i (3.3-56, 3.3-57): its whole wrench (own + children's), τ_i
    its component along the joint axis (+ armature q̈), carried to the parent."""
    rev, pri, R0, p0, _, _, _, armature = _link_constants(P, i)
    own = _block(X, i, NE_QUANTITIES)
    for l in range(m_lanes):
        f = _add(_load3(own, l, N_FORCE), _load3(own, l, N_CHILDREN))
        moment = _add(_load3(own, l, N_MOMENT), _load3(own, l, N_CHILDREN + 3))
        own[l + Q_OUT * LANES] = rev * moment[2] + pri * f[2] + armature * own[l + Q_IN * LANES]
        R, p = _placement(own, l, R0, p0, pri)
        f = _vec(R, f)
        _store3(own, l, N_TO_PARENT, f)
        _store3(own, l, N_TO_PARENT + 3, _add(_vec(R, moment), _cross(p, f)))
    if parent >= 0:
        _add_into(own, N_TO_PARENT, _block(X, parent, NE_QUANTITIES), N_CHILDREN, 6)


@_jit
def _ne_base(P, X, terms):
    """The base block n: ω = ω̇ = 0, v̇ = −g (Fu 3.3-46; 0 without TERM_GRAVITY), every lane."""
    n = P.shape[0] - 1
    base = _block(X, n, NE_QUANTITIES)
    gravity = (terms & TERM_GRAVITY) != 0
    for l in range(LANES):
        for e in range(3):
            base[l + (N_OMEGA + e) * LANES] = base[l + (N_ALPHA + e) * LANES] = 0.0
            base[l + (N_ACCEL + e) * LANES] = P[n, BASE_ACC + e] if gravity else 0.0


@_jit
def inverse_dynamics_lanes(P, Q, QD, QDD, terms, TAU, start, stop, X):
    """The ``terms`` (TERM_* bits) of τ of the states start..stop−1 (rows of Q, QD, QDD
    (N, n); QD, QDD not read without TERM_VELOCITY, TERM_INERTIA) into TAU, LANES at a time,
    in the scratch X ((n + 1)·NE_QUANTITIES·LANES entries).  A block of lanes with an angle
    beyond lanes.EXACT_RANGE runs the per-state kernel instead."""
    n = P.shape[0] - 1
    _ne_base(P, X, terms)
    moving, accelerating = (terms & TERM_VELOCITY) != 0, (terms & TERM_INERTIA) != 0
    for first in range(start, stop, LANES):
        last = min(stop, first + LANES)
        m_lanes = last - first
        if _load_states(X, NE_QUANTITIES, n, Q, QD, QDD, first, m_lanes, moving, accelerating):
            _inverse_dynamics_rows(P, Q[first:last], QD[first:last], QDD[first:last], terms, TAU[first:last])
            continue
        for i in range(n):
            _motion(P, X, i, _parent_block(P, i), m_lanes)
        for i in range(n - 1, -1, -1):
            _wrenches(P, X, i, int(P[i, PARENT]), m_lanes)
        _store_results(X, NE_QUANTITIES, n, TAU, first, m_lanes)


def _inverse_dynamics_batch(P, Q, QD, QDD, terms, TAU):
    """The ``terms`` of τ (N, n) into TAU, BLOCK states per task (see _forward_dynamics_batch)."""
    N, n = Q.shape[0], P.shape[0] - 1
    for block in nb.prange((N + BLOCK - 1) // BLOCK):
        X = np.empty((n + 1) * NE_QUANTITIES * LANES)
        inverse_dynamics_lanes(P, Q, QD, QDD, terms, TAU, block * BLOCK, min(N, (block + 1) * BLOCK), X)


inverse_dynamics_batch = _serial_and_parallel(_inverse_dynamics_batch)   # (serial, parallel)
