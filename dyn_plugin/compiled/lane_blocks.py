"""The recursions over a batch across SIMD lanes: what their lanes forms share.

The per-state kernels run one state after another, and a state's passes are chains of
dependent products that keep the machine's vector units idle.  The lanes form of each
algorithm (``inverse_dynamics_lanes`` in :mod:`.newton_euler`, ``forward_dynamics_lanes``
in :mod:`.articulated_body`, ``mass_matrix_lanes`` in :mod:`.composite_rigid_body`) runs
every step of its recursion, for one link, over a block of :data:`LANES` states in a loop
that the compiler vectorises (four states per AVX2 instruction): the loop body is
straight-line arithmetic on one state, reading and writing quantities stored flat over
lanes as in :mod:`.lanes` (quantity e of link i, state l at ``(i·size + e)·LANES + l``),
so that two quantities of one link are a constant distance apart.  Each algorithm declares
the quantities of its link block as (name, size) pairs after :data:`COMMON` (an
:class:`.layout.Offsets`).  What the compiler needs to vectorise a loop, and what stopped
it, is said where it matters (_block here, ``_carry`` in :mod:`.articulated_body`).

What differs between a revolute and a prismatic joint, a branch in the per-state kernels,
is a blend here by the link's constants ``rev`` (1.0 revolute, 0.0 prismatic) and
``pri = 1 − rev``: multiplying by an exact 0.0 or 1.0 changes no finite value, and a body
without branches is one the compiler can vectorise.  The base is link block ``n``: zero
velocity, acceleration −g (Fu 3.3-46), so that the first link reads its "parent" as any
other does.

Same model (:mod:`.layout`'s packed array, z normal form: R = R₀' Rz(q) for a revolute joint,
p = p₀' + q R₀'ẑ for a prismatic one), same armature, same equations as the per-state
kernels; the sums are formed in another order, so the two agree to rounding
(``tests/test_statements.py`` runs both forms on the same states; other tests hold
both to pinocchio).  sin and cos are :func:`.lanes.sin_cos`'s (vectorisable); a block of
lanes with an angle beyond its exact range runs the per-state kernel.  A state's result
does not depend on its place in the batch, nor on the number of workers.

Symmetric 3×3 blocks travel as their lower triangle ``(s00, s10, s11, s20, s21, s22)``,
rotations as rows ``((R00, R01, R02), ...)``.
"""

from __future__ import annotations

from .jit import inline as _inline, jit as _jit
from .lanes import EXACT_RANGE, _reduced_sin_cos
from .layout import ARMATURE, INERTIA, KIND, MASS, MOMENT, PARENT, POS0, ROT0, Offsets
from .vectors import _dot

LANES = 16                    # states per block of lanes (8, 32 and 64 were no faster for the PUMA-560)
BLOCK = 64 * LANES            # states per task of the parallel loop (a multiple of LANES: see
                              # articulated_body._forward_dynamics_batch)

# the quantities of a link block that every algorithm has, each over LANES states
COMMON = Offsets((
    ("Q_ANGLE", 1), ("Q_RATE", 1),      # q, q̇
    ("Q_IN", 1), ("Q_OUT", 1),          # the input τ (ABA) or q̈ (NE), the result
    ("R_COL0", 3), ("R_COL1", 3),       # columns 0 and 1 of R (column 2 is R₀'ẑ, a constant)
))
Q_ANGLE, Q_RATE, Q_IN, Q_OUT, R_COL0, R_COL1 = COMMON.at("Q_ANGLE", "Q_RATE", "Q_IN", "Q_OUT", "R_COL0", "R_COL1")
# A lane loop reads and writes its own link's block only, at constant distances: with the
# parent's block too (a run-time distance) the compiler gives up vectorising ("too many
# memory checks").  What crosses between a link and its parent is copied before or after,
# by loops over whole quantities (_copy, _add_into).

# (``_inline``: indexing by the lane inside the lane loop itself, see _block)


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

