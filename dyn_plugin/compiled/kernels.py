"""numba kernels: Newton-Euler, composite-rigid-body and articulated-body dynamics.

These are the fast twins of the readable numpy implementations in
:mod:`dyn_plugin.algorithms` (tests hold them equal to 1e-12): the same recursions,
written state by state on scalars so that nothing is allocated inside the loops.  Each
algorithm has

* a per-state core ``_<algo>_state(P, ..., W)`` working in the scratch array ``W``;
* ``_<algo>_rows``: the loop over the states (rows) of its arrays, the compiled function
  the core is inlined into, with ``W`` on its stack; everything below calls it, so one
  state, a batch, serially or in parallel, runs the same machine code;
* ``<algo>_single``: one state, arguments and result checked in the kernel (it returns a
  status instead of raising, so the caller can produce a clear error; a result that is
  not finite, float64 overflow, is NOT_FINITE_RESULT), no allocation;
  compiled for exactly one signature by :func:`single`, and keeping the GIL;
* ``<algo>_batch``: a (serial, parallel) pair of loops over N states, CHUNK states per
  call of the rows loop, so memory stays bounded for any N; the parallel one from
  PARALLEL_FROM states.  (Batches of inverse and forward dynamics and of the mass matrix
  run across SIMD lanes instead: :mod:`.link_lanes`, which falls back on
  ``_inverse_dynamics_rows``, ``_forward_dynamics_rows`` and ``_mass_matrix_rows`` for
  angles its sine cannot take.)

``P`` is the packed model of :mod:`.layout`.  3-vectors travel as tuples, which numba
keeps in registers.  Compiled once per machine: ``cache=True`` stores the machine code
next to this file (or in ``NUMBA_CACHE_DIR``).

The per-state cores are the one statement of each recursion that more than numba runs:
they use ``+``, ``-``, ``*``, ``/`` and ``cos``/``sin`` only, so :mod:`.traced` runs the
same source on exact trigonometric polynomials to derive the closed forms
(:mod:`dyn_plugin.symbolic.newton_derivation`).  Keep them that way: no numpy function
on a number inside ``_*_state`` and its helpers (``cos``/``sin`` are this module's, by name).
"""

from __future__ import annotations

import functools
import math

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .. import loops
from .borrowed import MATRIX, VECTOR, entry_of
from ..loops import serial_and_parallel
from ..terms import Terms

# -- the packed model's columns (see .layout, which fills them) ---------------------------
# Kept here, not in .layout: numba freezes them into the cached machine code and only
# notices a change to this file.
# per-joint columns
PARENT, KIND = 0, 1          # parent index (-1: base); 0 revolute, 1 prismatic
ROT0 = 2                      # R₀' = F_λᵀ R₀ F_i, row-major 3×3 (9)
POS0 = 11                     # p₀' = F_λᵀ p₀, joint origin in the parent frame (3)
FRAME = 14                    # F_i, row-major (9): turns link quantities back to the URDF frame
MASS = 23
MOMENT = 24                   # first moment h = m c (3)
INERTIA = 27                  # inertia about the link origin, row-major 3×3 (9)
ARMATURE = 36                 # rotor inertia added to M's diagonal (pinocchio's armature)
WIDTH = 37

# robot row (row n)
BASE_ACC = 0                  # fictitious base acceleration −g (3), Fu 3.3-46

# -- which terms of τ = M q̈ + C q̇ + g a kernel evaluates: the bits of dyn_plugin.terms.Terms ----
# Spelled out here, not read from Terms at call time: numba freezes globals into the machine
# code it caches and only notices a change to this file, so a change to Terms must fail here.
TERM_INERTIA, TERM_VELOCITY, TERM_GRAVITY = 1, 2, 4      # q̈ (and armature), q̇, g
TERM_BIAS = TERM_VELOCITY | TERM_GRAVITY
TERM_ALL = TERM_INERTIA | TERM_VELOCITY | TERM_GRAVITY
if (TERM_INERTIA, TERM_VELOCITY, TERM_GRAVITY, TERM_BIAS, TERM_ALL) != (
        int(Terms.INERTIA), int(Terms.VELOCITY), int(Terms.GRAVITY), int(Terms.BIAS), int(Terms.ALL)):
    raise ImportError("dyn_plugin.compiled.kernels: the TERM_* bits disagree with dyn_plugin.terms.Terms; "
                      "update them here (this file) so that numba's cache is invalidated")

# status codes of the *_single kernels (3 is unused; 4 matches the generated code's status)
OK, BAD_SHAPE, NOT_FINITE, NOT_FINITE_RESULT = 0, 1, 2, 4
CHUNK = 64                                       # states per call of a rows loop in batches

# 'contract' lets LLVM fuse a*b + c into one FMA instruction (one rounding instead of two)
_OPTIONS = dict(cache=True, error_model="numpy", nogil=True, fastmath={"contract"})
# One state keeps the GIL: releasing and taking it back would cost ~80 ns, a sixth of the call.
_SINGLE_OPTIONS = dict(_OPTIONS, nogil=False)
_jit = nb.njit(**_OPTIONS)
# The per-state cores and their helpers are inlined (numba IR) into the loop over states of
# their algorithm (``_<algo>_rows``): a call between compiled functions passes each array as a
# struct of ~9 words and counts references to it (atomic adds, on a line that the other cores
# write too): a fifth of the time of inverse dynamics, a quarter of forward dynamics.
_inline = nb.njit(inline="always", **_OPTIONS)
PARALLEL_FROM = loops.PARALLEL_FROM     # here too: generated modules import it from this module


def _serial_and_parallel(body):
    """A batch loop compiled twice, (serial, parallel) (:func:`dyn_plugin.loops.serial_and_parallel`)."""
    return serial_and_parallel(body, _OPTIONS)


# -- cos and sin ----------------------------------------------------------------------------
# The cores call ``cos`` and ``sin`` by name (traced.python_form rebinds them).  The C
# library's cost ~20 ns a call, a third of the inverse dynamics of a PUMA; these do what it
# does, with a table and without a call: x = j π/16 + r, |r| ≤ π/32, by a three-part
# Cody-Waite reduction, then sin x = S_j + (S_j c' + C_j s) and cos x = C_j + (C_j c' − S_j s)
# with (C_j, S_j) = (cos, sin)(j π/16), s = sin r and c' = cos r − 1 by their Taylor series
# (the first term left out is below 2^-60 of the result).  Within 3 ulp (1.2e-16) of the C
# library's, which still answers beyond ANGLE_LIMIT (and for NaN).

ANGLE_LIMIT = 65536.0                     # rad: j < 2^19, so that j·_STEP_1 and j·_STEP_2 are exact
_SIXTEEN_OVER_PI = 5.092958178940651
_STEP_1, _STEP_2, _STEP_3 = 0.1963495408417657, 7.596375632879957e-12, 2.5278328109949383e-22  # π/16 in 33 + 33 + 53 bits
_ROUND = 6755399441055744.0               # 1.5·2^52: (x + _ROUND) − _ROUND is x rounded to an integer
_COS_OCTANT = (1.0, 0.9807852804032304, 0.9238795325112867, 0.8314696123025452, 0.7071067811865476,
               0.5555702330196022, 0.3826834323650898, 0.19509032201612828, 0.0)   # cos(m π/16), m = 0..8, rounded
# (the constants from 200-bit values of π, mpmath)


def _table() -> np.ndarray:
    """(C_j, S_j) for j = 0..31: cos and sin of m π/16 with their quadrant's signs (exact)."""
    table = np.empty((32, 2))
    for j in range(32):
        quadrant, m = divmod(j, 8)
        c, s = _COS_OCTANT[m], _COS_OCTANT[8 - m]
        table[j] = [(c, s), (-s, c), (-c, -s), (s, -c)][quadrant]
    return table


_TABLE = _table()


@_jit
def _sin_cos_parts(x):
    """(C_j, S_j, sin r, cos r − 1) for x = j π/16 + r, |x| ≤ ANGLE_LIMIT."""
    j = (x * _SIXTEEN_OVER_PI + _ROUND) - _ROUND
    r = ((x - j * _STEP_1) - j * _STEP_2) - j * _STEP_3
    z = r * r
    s = r + r * z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (1.0 / 362880.0))))
    c = z * (-0.5 + z * (1.0 / 24.0 + z * (-1.0 / 720.0 + z * (1.0 / 40320.0 + z * (-1.0 / 3628800.0)))))
    index = int(j) & 31
    return _TABLE[index, 0], _TABLE[index, 1], s, c


@_jit
def cos(x):
    """cos x, for the cores (see above)."""
    if not abs(x) <= ANGLE_LIMIT:                 # and NaN
        return math.cos(x)
    C, S, s, c = _sin_cos_parts(x)
    return C + (C * c - S * s)


@_jit
def sin(x):
    """sin x, for the cores (see above)."""
    if not abs(x) <= ANGLE_LIMIT:
        return math.sin(x)
    C, S, s, c = _sin_cos_parts(x)
    return S + (S * c + C * s)


# scratch rows of W (n, ROWS, 3): the placement, then each algorithm's own rows
R_ROW, P_ROW = 0, 3            # rows 0-2: R (parent ← link), row 3: p
ROWS = 27


# -- 3-vectors and 3×3 blocks ------------------------------------------------------------

@_jit
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@_jit
def _scale(s, a):
    return (s * a[0], s * a[1], s * a[2])


@_jit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@_jit
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@_jit
def _row(W, i, r):
    return (W[i, r, 0], W[i, r, 1], W[i, r, 2])


@_jit
def _put(W, i, r, v):
    W[i, r, 0], W[i, r, 1], W[i, r, 2] = v[0], v[1], v[2]


@_jit
def _accumulate(W, i, r, v):
    W[i, r, 0] += v[0]
    W[i, r, 1] += v[1]
    W[i, r, 2] += v[2]


@_jit
def _col(P, i, c):
    return (P[i, c], P[i, c + 1], P[i, c + 2])


@_jit
def _mat_vec(W, i, r, v):
    """M v for the 3×3 block in rows r..r+2 of W[i]."""
    return (W[i, r, 0] * v[0] + W[i, r, 1] * v[1] + W[i, r, 2] * v[2],
            W[i, r + 1, 0] * v[0] + W[i, r + 1, 1] * v[1] + W[i, r + 1, 2] * v[2],
            W[i, r + 2, 0] * v[0] + W[i, r + 2, 1] * v[1] + W[i, r + 2, 2] * v[2])


@_jit
def _mat_t_vec(W, i, r, v):
    """Mᵀ v for the 3×3 block in rows r..r+2 of W[i]."""
    return (W[i, r, 0] * v[0] + W[i, r + 1, 0] * v[1] + W[i, r + 2, 0] * v[2],
            W[i, r, 1] * v[0] + W[i, r + 1, 1] * v[1] + W[i, r + 2, 1] * v[2],
            W[i, r, 2] * v[0] + W[i, r + 1, 2] * v[1] + W[i, r + 2, 2] * v[2])


@_jit
def _packed_mat_vec(P, i, c, v):
    """M v for a row-major 3×3 stored in P[i, c:c+9]."""
    return (P[i, c] * v[0] + P[i, c + 1] * v[1] + P[i, c + 2] * v[2],
            P[i, c + 3] * v[0] + P[i, c + 4] * v[1] + P[i, c + 5] * v[2],
            P[i, c + 6] * v[0] + P[i, c + 7] * v[1] + P[i, c + 8] * v[2])


# -- placements and arguments ------------------------------------------------------------

@_inline
def _placements(P, Q, k, W):
    """R and p of every link in its parent (kinematics.link_placements), into W.
    Revolute: R = R₀' Rz(q); prismatic: p = p₀' + q R₀' ẑ (the z normal form of .layout)."""
    n = P.shape[0] - 1
    for i in range(n):
        if P[i, KIND] == 0.0:
            c, s = cos(Q[k, i]), sin(Q[k, i])
            for a in range(3):
                x, y = P[i, ROT0 + 3 * a], P[i, ROT0 + 3 * a + 1]
                W[i, R_ROW + a, 0] = c * x + s * y
                W[i, R_ROW + a, 1] = c * y - s * x
                W[i, R_ROW + a, 2] = P[i, ROT0 + 3 * a + 2]
            _put(W, i, P_ROW, _col(P, i, POS0))
        else:
            for a in range(3):
                for b in range(3):
                    W[i, R_ROW + a, b] = P[i, ROT0 + 3 * a + b]
            slide = (P[i, ROT0 + 2], P[i, ROT0 + 5], P[i, ROT0 + 8])
            _put(W, i, P_ROW, _add(_col(P, i, POS0), _scale(Q[k, i], slide)))


@_jit
def _bad_shape(n, x) -> bool:
    """x is not n adjacent entries (NumPy calls a vector of one entry C-contiguous whatever
    its stride)."""
    return x.shape[0] != n or x.strides[0] != 8


@_jit
def _zero_if_finite(x):
    """Σ x_i·0 over the entries of the vector x: 0.0 when all are finite, else NaN (inf·0
    and NaN·0 are NaN); a multiply-add an entry and no branch."""
    zero = 0.0
    for i in range(x.shape[0]):
        zero += x[i] * 0.0
    return zero


@_jit
def _check(n, x):
    """Status of one joint-space vector: OK, BAD_SHAPE (a length other than n, or entries
    not adjacent) or NOT_FINITE."""
    if _bad_shape(n, x):
        return BAD_SHAPE
    return OK if _zero_if_finite(x) == 0.0 else NOT_FINITE


@_jit
def _finite_result(x):
    """OK when every entry of the result vector x is finite, else NOT_FINITE_RESULT (overflow)."""
    return OK if _zero_if_finite(x) == 0.0 else NOT_FINITE_RESULT


@_jit
def _one(x):
    """A vector (n,) as a batch of one (1, n), so that one state runs the batch code (a
    view; ``reshape`` would cost ~40 ns)."""
    return x[None, :]


STACK_JOINTS = 64             # up to this many joints the scratch W is on the stack (648 bytes a joint)


@_inline
def _scratch(P):
    """The scratch W (n, ROWS, 3) of the calling function (this one is inlined into it):
    in its stack frame, gone when it returns, up to STACK_JOINTS joints (an allocation
    costs ~60 ns, a sixth of one state's inverse dynamics), else allocated.  Not in a loop:
    each pass would add a scratch to the frame."""
    n = P.shape[0] - 1
    return _stack_scratch(n) if n <= STACK_JOINTS else np.empty((n, ROWS, 3))


@intrinsic
def _stack_scratch(typingctx, n):
    """An uninitialised (n, ROWS, 3) float64 array in the stack frame of the function that
    calls this (an alloca: see _scratch)."""
    array = types.Array(types.float64, 3, "C")

    def codegen(context, builder, signature, args):
        def intp(value):
            return context.get_constant(types.intp, value)
        rows = args[0]
        data = builder.alloca(ir.DoubleType(), size=builder.mul(rows, intp(ROWS * 3)))
        W = context.make_array(array)(context, builder)
        context.populate_array(W, data=data, shape=cgutils.pack_array(builder, [rows, intp(ROWS), intp(3)]),
                               strides=cgutils.pack_array(builder, [intp(ROWS * 3 * 8), intp(3 * 8), intp(8)]),
                               itemsize=intp(8), meminfo=None)
        return W._getvalue()

    return array(types.intp), codegen


# -- recursive Newton-Euler (algorithms.newton_euler; Fu Table 3.3, Khalil's link moments) --

W_OMEGA, W_ALPHA, W_ACC, W_FORCE, W_MOMENT = 4, 5, 6, 7, 8


@_inline
def _rnea_state(P, Q, QD, QDD, k, terms, W):
    """Joint wrenches (f, n) at each joint origin in its frame, into W rows 7 and 8.

    ``terms`` (an int of TERM_* bits): without TERM_VELOCITY q̇ counts as zero, without
    TERM_INERTIA q̈ does, without TERM_GRAVITY g does.
    """
    n = P.shape[0] - 1
    _placements(P, Q, k, W)
    zero = (0.0, 0.0, 0.0)
    moving = (terms & TERM_VELOCITY) != 0
    accelerating = (terms & TERM_INERTIA) != 0
    base = _col(P, n, BASE_ACC) if (terms & TERM_GRAVITY) != 0 else zero
    w_p, wd_p, vd_p = zero, zero, base            # the parent's (ω, ω̇, v̇): the base's, then link i−1's
    for i in range(n):
        parent = int(P[i, PARENT])
        if parent != i - 1:                       # not the link just computed (kept in registers)
            if parent < 0:
                w_p, wd_p, vd_p = zero, zero, base
            else:
                w_p, wd_p, vd_p = _row(W, parent, W_OMEGA), _row(W, parent, W_ALPHA), _row(W, parent, W_ACC)
        p = _row(W, i, P_ROW)
        origin_acc = _add(vd_p, _add(_cross(wd_p, p), _cross(w_p, _cross(w_p, p))))
        w = _mat_t_vec(W, i, R_ROW, w_p)                              # parent → link frame
        wd = _mat_t_vec(W, i, R_ROW, wd_p)
        vd = _mat_t_vec(W, i, R_ROW, origin_acc)
        rate = QD[k, i] if moving else 0.0
        acc = QDD[k, i] if accelerating else 0.0
        if P[i, KIND] == 0.0:                     # Fu 3.3-50, 3.3-51 with z = ẑ: ω × ẑq̇ = (ω_y q̇, −ω_x q̇, 0)
            wd = (wd[0] + w[1] * rate, wd[1] - w[0] * rate, wd[2] + acc)
            w = (w[0], w[1], w[2] + rate)
        else:                                     # 3.3-52, prismatic: + ẑq̈ + 2ω × ẑq̇
            vd = (vd[0] + 2.0 * w[1] * rate, vd[1] - 2.0 * w[0] * rate, vd[2] + acc)
        _put(W, i, W_OMEGA, w)
        _put(W, i, W_ALPHA, wd)
        _put(W, i, W_ACC, vd)
        # Newton and Euler about the link origin (Khalil): F = m v̇ + ω̇×h + ω×(ω×h),
        # N = I_O ω̇ + ω×(I_O ω) + h×v̇, equal to Fu 3.3-54/55 moved from the centre of mass.
        h = _col(P, i, MOMENT)
        _put(W, i, W_FORCE, _add(_scale(P[i, MASS], vd), _add(_cross(wd, h), _cross(w, _cross(w, h)))))
        Iw = _packed_mat_vec(P, i, INERTIA, w)
        _put(W, i, W_MOMENT, _add(_packed_mat_vec(P, i, INERTIA, wd), _add(_cross(w, Iw), _cross(h, vd))))
        w_p, wd_p, vd_p = w, wd, vd
    # 3.3-56, 3.3-57: each link's wrench carried to its parent; to link i−1 in registers (a
    # chain's whole backward pass), to another parent through W.  The sums are formed in
    # the same order either way (children with larger indices first).
    carried, f_child, moment_child = False, zero, zero
    for i in range(n - 1, -1, -1):
        f, moment = _row(W, i, W_FORCE), _row(W, i, W_MOMENT)
        if carried:
            f, moment = _add(f, f_child), _add(moment, moment_child)
            _put(W, i, W_FORCE, f)
            _put(W, i, W_MOMENT, moment)
        parent = int(P[i, PARENT])
        carried = parent >= 0 and parent == i - 1
        if parent >= 0:
            f_child = _mat_vec(W, i, R_ROW, f)
            moment_child = _add(_mat_vec(W, i, R_ROW, moment), _cross(_row(W, i, P_ROW), f_child))
            if not carried:
                _accumulate(W, parent, W_FORCE, f_child)
                _accumulate(W, parent, W_MOMENT, moment_child)


@_jit
def _project(P, W, i):
    """τ_i: the joint wrench along the axis (moment for revolute, force for prismatic)."""
    return W[i, W_MOMENT, 2] if P[i, KIND] == 0.0 else W[i, W_FORCE, 2]


@_inline
def _torques(P, Q, QD, QDD, k, terms, TAU, W):
    """τ = the ``terms`` of M q̈ + C q̇ + g, the armature q̈ with TERM_INERTIA."""
    _rnea_state(P, Q, QD, QDD, k, terms, W)
    n = P.shape[0] - 1
    accelerating = (terms & TERM_INERTIA) != 0
    for i in range(n):
        tau = _project(P, W, i)
        if accelerating:
            tau += P[i, ARMATURE] * QDD[k, i]
        TAU[k, i] = tau


@_jit
def _status(n, q, qd, qdd):
    """Status of three joint-space vectors (see _check)."""
    if _bad_shape(n, q) or _bad_shape(n, qd) or _bad_shape(n, qdd):
        return BAD_SHAPE
    return OK if _zero_if_finite(q) + _zero_if_finite(qd) + _zero_if_finite(qdd) == 0.0 else NOT_FINITE


@_jit
def _inverse_dynamics_rows(P, Q, QD, QDD, terms, TAU):
    """The ``terms`` of τ for the states (rows) of Q, QD, QDD into TAU, one after another;
    QD (QDD) is not read without TERM_VELOCITY (TERM_INERTIA)."""
    W = _scratch(P)
    for k in range(Q.shape[0]):
        _torques(P, Q, QD, QDD, k, terms, TAU, W)


def inverse_dynamics_single(P, q, qd, qdd, tau):
    """τ (n,) of one state into ``tau``; returns a status code (OK = 0).  The one kernel with
    its core inlined: the call that ``bench`` holds against pinocchio's rnea (the other
    one-state kernels call their rows loop, ~50 ns more, and compile 10 s faster)."""
    n = P.shape[0] - 1
    status = _status(n, q, qd, qdd)
    if status == OK and tau.shape[0] == n:
        _torques(P, _one(q), _one(qd), _one(qdd), 0, TERM_ALL, _one(tau), _scratch(P))
        status = _finite_result(tau)
    return status


def bias_single(P, q, qd, tau):
    """C(q, q̇) q̇ + g(q) for one state (no armature); returns a status."""
    n = P.shape[0] - 1
    status = _status(n, q, qd, q)
    if status == OK and tau.shape[0] == n:
        _inverse_dynamics_rows(P, _one(q), _one(qd), _one(q), TERM_BIAS, _one(tau))
        status = _finite_result(tau)
    return status


@_jit
def _joint_wrenches_rows(P, Q, QD, QDD, F, M):
    """Joint reaction forces F and moments M (rows, n, 3), each in its joint's frame."""
    n = P.shape[0] - 1
    W = _scratch(P)
    for k in range(Q.shape[0]):
        _rnea_state(P, Q, QD, QDD, k, TERM_ALL, W)
        for i in range(n):                                        # back to the URDF joint frame
            f = _packed_mat_vec(P, i, FRAME, _row(W, i, W_FORCE))
            moment = _packed_mat_vec(P, i, FRAME, _row(W, i, W_MOMENT))
            for a in range(3):
                F[k, i, a] = f[a]
                M[k, i, a] = moment[a]


def _joint_wrenches_batch(P, Q, QD, QDD, F, M):
    """Joint reaction forces F and moments M (N, n, 3), CHUNK states per task."""
    N = Q.shape[0]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        rows = slice(chunk * CHUNK, min(N, (chunk + 1) * CHUNK))
        _joint_wrenches_rows(P, Q[rows], QD[rows], QDD[rows], F[rows], M[rows])


joint_wrenches_batch = _serial_and_parallel(_joint_wrenches_batch)   # (serial, parallel)


# -- composite-rigid-body mass matrix (Featherstone 2008, Table 6.2) ------------------------

C_MASS, C_MOMENT, C_INERTIA, C_FORCE, C_TORQUE = 4, 5, 6, 9, 10   # rows of W (C_MASS: m, then F_i's frame)


@_inline
def _crba_state(P, Q, k, H, W):
    """M(q) (n, n) into H.  Composite bodies are kept as (m, h, I_O) about the link origin
    and moved to the parent with the parallel-axis theorem; then every F_i = I^c_i S_i is
    carried down to the base, all of them one joint at a time (independent products, where
    carrying each F_i down its own path would make one long chain)."""
    n = P.shape[0] - 1
    _placements(P, Q, k, W)
    for i in range(n):
        for j in range(n):
            H[k, i, j] = 0.0            # joints on different branches do not couple
        W[i, C_MASS, 0] = P[i, MASS]
        _put(W, i, C_MOMENT, _col(P, i, MOMENT))
        for a in range(3):
            _put(W, i, C_INERTIA + a, _col(P, i, INERTIA + 3 * a))
    for i in range(n - 1, -1, -1):
        m, h = W[i, C_MASS, 0], _row(W, i, C_MOMENT)
        if P[i, KIND] == 0.0:               # F = I^c S: [I_O ẑ; ẑ × h] (revolute)
            torque = (W[i, C_INERTIA, 2], W[i, C_INERTIA + 1, 2], W[i, C_INERTIA + 2, 2])
            force = (-h[1], h[0], 0.0)
            H[k, i, i] = torque[2] + P[i, ARMATURE]
        else:                               # [h × ẑ; m ẑ] (prismatic)
            torque, force = (h[1], -h[0], 0.0), (0.0, 0.0, m)
            H[k, i, i] = m + P[i, ARMATURE]
        _put(W, i, C_FORCE, force)
        _put(W, i, C_TORQUE, torque)
        W[i, C_MASS, 1] = i                 # the link whose frame F_i is in
        parent = int(P[i, PARENT])
        if parent >= 0:
            _add_composite(W, i, parent, m, h)
    for j in range(n - 1, -1, -1):          # children before parents: F_i in frame j → its parent's
        parent = int(P[j, PARENT])
        if parent >= 0:
            revolute, p = P[parent, KIND] == 0.0, _row(W, j, P_ROW)
            for i in range(j, n):
                if W[i, C_MASS, 1] == j:
                    force = _mat_vec(W, j, R_ROW, _row(W, i, C_FORCE))
                    torque = _add(_mat_vec(W, j, R_ROW, _row(W, i, C_TORQUE)), _cross(p, force))
                    _put(W, i, C_FORCE, force)
                    _put(W, i, C_TORQUE, torque)
                    W[i, C_MASS, 1] = parent
                    H[k, i, parent] = H[k, parent, i] = torque[2] if revolute else force[2]


@_inline
def _add_composite(W, i, parent, m, h):
    """Add body i's (m, h, I_O) to its parent's, in the parent frame at the parent origin:
    h' = R h + m p;  I' = R I Rᵀ + m(|p|² 1 − p pᵀ) + 2(Rh·p) 1 − Rh pᵀ − p (Rh)ᵀ, symmetric
    (its lower triangle is computed, and mirrored); body i's I is left rotated."""
    p = _row(W, i, P_ROW)
    hr = _mat_vec(W, i, R_ROW, h)
    W[parent, C_MASS, 0] += m
    _accumulate(W, parent, C_MOMENT, _add(hr, _scale(m, p)))
    diagonal = m * _dot(p, p) + 2.0 * _dot(hr, p)
    mp = _scale(m, p)
    _rotate_symmetric(W, i, C_INERTIA)
    for a in range(3):
        for b in range(a + 1):
            shift = (diagonal if a == b else 0.0) - mp[a] * p[b] - hr[a] * p[b] - p[a] * hr[b]
            W[parent, C_INERTIA + a, b] += W[i, C_INERTIA + a, b] + shift
    _mirror(W, parent, C_INERTIA)


@_jit
def _mass_matrix_rows(P, Q, H):
    """M (rows, n, n) of the states (rows) of Q into H."""
    W = _scratch(P)
    for k in range(Q.shape[0]):
        _crba_state(P, Q, k, H, W)


def mass_matrix_single(P, q, H):
    """M(q) (n, n) of one state into H; returns a status code."""
    n = P.shape[0] - 1
    status = _check(n, q) if H.shape[0] == n and H.shape[1] == n else BAD_SHAPE
    if status == OK:
        _mass_matrix_rows(P, _one(q), H[None])
        for i in range(n):
            status |= _finite_result(H[i])
    return status


# -- articulated-body forward dynamics (algorithms.articulated_body; Featherstone Table 7.1) --
# Spatial vectors as (angular, linear) tuple pairs; an articulated inertia as 3×3 blocks
# [[A, B], [Bᵀ, C]] (rows A_ROW.., B_ROW.., C_ROW.. of W).

V_ANG, V_LIN, C_ANG, C_LIN, PA_N, PA_F = 4, 5, 6, 7, 8, 9
A_ROW, B_ROW, CC_ROW = 10, 13, 16
U_N, U_F, ACC_ANG, ACC_LIN, SCALARS = 19, 20, 21, 22, 23     # SCALARS: (D, u, q̈)
T_ROW = 24                                                   # 3 rows: a temporary block


@_inline
def _aba_state(P, Q, QD, TAU, QDD, k, W):
    n = P.shape[0] - 1
    _placements(P, Q, k, W)
    zero = (0.0, 0.0, 0.0)
    for i in range(n):                                            # pass 1: velocities, bias
        parent = int(P[i, PARENT])
        w_p, v_p = (zero, zero) if parent < 0 else (_row(W, parent, V_ANG), _row(W, parent, V_LIN))
        w = _mat_t_vec(W, i, R_ROW, w_p)
        v = _mat_t_vec(W, i, R_ROW, _add(v_p, _cross(w_p, _row(W, i, P_ROW))))
        rate = QD[k, i]
        if P[i, KIND] == 0.0:                                     # c = v ×ₘ S q̇, S = [ẑ; 0]
            w = (w[0], w[1], w[2] + rate)
            c_ang, c_lin = (w[1] * rate, -w[0] * rate, 0.0), (v[1] * rate, -v[0] * rate, 0.0)
        else:                                                     # S = [0; ẑ]
            v = (v[0], v[1], v[2] + rate)
            c_ang, c_lin = zero, (w[1] * rate, -w[0] * rate, 0.0)
        _put(W, i, V_ANG, w)
        _put(W, i, V_LIN, v)
        _put(W, i, C_ANG, c_ang)
        _put(W, i, C_LIN, c_lin)
        m, h = P[i, MASS], _col(P, i, MOMENT)
        n_I = _add(_packed_mat_vec(P, i, INERTIA, w), _cross(h, v))     # I v
        f_I = _add(_cross(w, h), _scale(m, v))
        _put(W, i, PA_N, _add(_cross(w, n_I), _cross(v, f_I)))           # v ×* I v
        _put(W, i, PA_F, _cross(w, f_I))
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
            u = TAU[k, i] - W[i, PA_N, 2]
        else:                                                     # [B ẑ; C ẑ]
            U_n = (W[i, B_ROW, 2], W[i, B_ROW + 1, 2], W[i, B_ROW + 2, 2])
            U_f = (W[i, CC_ROW, 2], W[i, CC_ROW + 1, 2], W[i, CC_ROW + 2, 2])
            D = U_f[2] + P[i, ARMATURE]
            u = TAU[k, i] - W[i, PA_F, 2]
        _put(W, i, U_N, U_n)
        _put(W, i, U_F, U_f)
        W[i, SCALARS, 0], W[i, SCALARS, 1] = D, u
        parent = int(P[i, PARENT])
        if parent >= 0:
            _pass_to_parent(W, i, parent, U_n, U_f, D, u)
    for i in range(n):                                            # pass 3: accelerations
        parent = int(P[i, PARENT])
        if parent < 0:
            a_ang, a_lin = zero, _col(P, n, BASE_ACC)
        else:
            a_ang, a_lin = _row(W, parent, ACC_ANG), _row(W, parent, ACC_LIN)
        a_lin = _add(_mat_t_vec(W, i, R_ROW, _add(a_lin, _cross(a_ang, _row(W, i, P_ROW)))), _row(W, i, C_LIN))
        a_ang = _add(_mat_t_vec(W, i, R_ROW, a_ang), _row(W, i, C_ANG))
        acc = (W[i, SCALARS, 1] - _dot(_row(W, i, U_N), a_ang) - _dot(_row(W, i, U_F), a_lin)) / W[i, SCALARS, 0]
        if P[i, KIND] == 0.0:
            a_ang = (a_ang[0], a_ang[1], a_ang[2] + acc)
        else:
            a_lin = (a_lin[0], a_lin[1], a_lin[2] + acc)
        _put(W, i, ACC_ANG, a_ang)
        _put(W, i, ACC_LIN, a_lin)
        QDD[k, i] = acc


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
    c_ang, c_lin = _row(W, i, C_ANG), _row(W, i, C_LIN)
    k = u * inverse
    pa_n = _add(_row(W, i, PA_N), _add(_mat_vec(W, i, A_ROW, c_ang), _add(_mat_vec(W, i, B_ROW, c_lin), _scale(k, U_n))))
    pa_f = _add(_row(W, i, PA_F), _add(_mat_t_vec(W, i, B_ROW, c_ang), _add(_mat_vec(W, i, CC_ROW, c_lin), _scale(k, U_f))))
    p = _row(W, i, P_ROW)
    f = _mat_vec(W, i, R_ROW, pa_f)
    _accumulate(W, parent, PA_F, f)
    _accumulate(W, parent, PA_N, _add(_mat_vec(W, i, R_ROW, pa_n), _cross(p, f)))
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


@_inline
def _mirror(W, i, r):
    """The upper triangle of the block in rows r..r+2 from its lower one."""
    W[i, r, 1], W[i, r, 2], W[i, r + 1, 2] = W[i, r + 1, 0], W[i, r + 2, 0], W[i, r + 2, 1]


@_inline
def _rotate_block(W, i, r):
    """Block ← R Block Rᵀ (link axes → parent axes), in place."""
    for a in range(3):                                            # Block Rᵀ, row by row
        _put(W, i, r + a, _mat_vec(W, i, R_ROW, _row(W, i, r + a)))
    for b in range(3):                                            # then R (Block Rᵀ), column by column
        col = _mat_vec(W, i, R_ROW, (W[i, r, b], W[i, r + 1, b], W[i, r + 2, b]))
        W[i, r, b], W[i, r + 1, b], W[i, r + 2, b] = col[0], col[1], col[2]


@_inline
def _rotate_symmetric(W, i, r):
    """Block ← R Block Rᵀ for a symmetric block: Block Rᵀ row by row, then the lower
    triangle of R (Block Rᵀ), mirrored."""
    for a in range(3):
        _put(W, i, r + a, _mat_vec(W, i, R_ROW, _row(W, i, r + a)))
    R_0, R_1, R_2 = _row(W, i, R_ROW), _row(W, i, R_ROW + 1), _row(W, i, R_ROW + 2)
    T_0 = (W[i, r, 0], W[i, r + 1, 0], W[i, r + 2, 0])
    T_1 = (W[i, r, 1], W[i, r + 1, 1], W[i, r + 2, 1])
    T_2 = (W[i, r, 2], W[i, r + 1, 2], W[i, r + 2, 2])
    W[i, r, 0] = _dot(R_0, T_0)
    W[i, r + 1, 0] = W[i, r, 1] = _dot(R_1, T_0)
    W[i, r + 2, 0] = W[i, r, 2] = _dot(R_2, T_0)
    W[i, r + 1, 1] = _dot(R_1, T_1)
    W[i, r + 2, 1] = W[i, r + 1, 2] = _dot(R_2, T_1)
    W[i, r + 2, 2] = _dot(R_2, T_2)


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


# -- linear algebra -----------------------------------------------------------------------

@_jit
def spd_solve(M, b, x):   # generated modules call this: bump codegen.GENERATOR_VERSION when it changes
    """x = M⁻¹ b for a symmetric positive-definite M (n, n), by Cholesky M = L Lᵀ.  M is
    overwritten: L below the diagonal, 1/L_jj on it (so that every division but n is a
    multiplication)."""
    n = b.shape[0]
    for j in range(n):
        d = M[j, j]
        for k in range(j):
            d -= M[j, k] * M[j, k]
        inverse = 1.0 / np.sqrt(d)
        M[j, j] = inverse
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= M[i, k] * M[j, k]
            M[i, j] = s * inverse
    for i in range(n):                      # L y = b
        s = b[i]
        for k in range(i):
            s -= M[i, k] * x[k]
        x[i] = s * M[i, i]
    for i in range(n - 1, -1, -1):          # Lᵀ x = y
        s = x[i]
        for k in range(i + 1, n):
            s -= M[k, i] * x[k]
        x[i] = s * M[i, i]


@_jit
def _shifted_solve(M, d, b, x, L):
    """x = (M + diag d)⁻¹ b by Cholesky, in the scratch L (n, n); M and b are not written."""
    n = b.shape[0]
    for j in range(n):
        for i in range(j, n):
            L[i, j] = M[i, j]
        L[j, j] += d[j]
    spd_solve(L, b, x)


def shifted_spd_solve_single(M, d, b, x):
    """x = (M + diag d)⁻¹ b (n,) for a symmetric M (n, n) with M + diag d positive definite
    (e.g. a mass matrix and the armature on its diagonal); returns a status code (OK = 0)."""
    n = b.shape[0]
    if M.shape[0] != n or M.shape[1] != n or d.shape[0] != n or x.shape[0] != n:
        return BAD_SHAPE
    _shifted_solve(M, d, b, x, np.empty((n, n)))
    return _finite_result(x)


def _shifted_spd_solve_batch(M, d, B, X):
    """X[k] = (M[k] + diag d)⁻¹ B[k] for M (N, n, n), B and X (N, n)."""
    N, n = B.shape
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        L = np.empty((n, n))
        for k in range(chunk * CHUNK, min(N, (chunk + 1) * CHUNK)):
            _shifted_solve(M[k], d, B[k], X[k], L)


shifted_spd_solve_batch = _serial_and_parallel(_shifted_spd_solve_batch)   # (serial, parallel)


# -- the single-state kernels, typed ---------------------------------------------------------

_VECTOR, _MATRIX, _MODEL = VECTOR, MATRIX, MATRIX          # borrowed by the entry points (.borrowed)
_SIGNATURES = {
    "inverse_dynamics": (inverse_dynamics_single, nb.int64(_MODEL, _VECTOR, _VECTOR, _VECTOR, _VECTOR)),
    "bias": (bias_single, nb.int64(_MODEL, _VECTOR, _VECTOR, _VECTOR)),
    "forward_dynamics": (forward_dynamics_single, nb.int64(_MODEL, _VECTOR, _VECTOR, _VECTOR, _VECTOR)),
    "mass_matrix": (mass_matrix_single, nb.int64(_MODEL, _VECTOR, _MATRIX)),
    "shifted_spd_solve": (shifted_spd_solve_single, nb.int64(_MATRIX, _VECTOR, _VECTOR, _VECTOR)),
}


def single(name: str, signatures: dict = _SIGNATURES):
    """The single-state kernel ``name`` of ``signatures`` (name -> (function, signature);
    this module's by default), compiled for exactly its signature on first use (not at
    import).  Any other argument type (a list, an int or strided array, a batch) raises
    TypeError in numba's C dispatcher instead of compiling a new specialisation."""
    return _typed(*signatures[name])


@functools.lru_cache(maxsize=None)
def _typed(py_func, signature):
    return nb.njit(signature, **_SINGLE_OPTIONS)(py_func)


def entry_point(name: str, signatures: dict = _SIGNATURES):
    """The single-state kernel ``name`` without numba's dispatcher, which spends ~40 ns per
    argument typing it: its compiled entry point, whose arrays are borrowed
    (:mod:`.borrowed`: anything but a numpy float64 array, C-contiguous, of the declared
    dimensions raises TypeError there).  A wrong length, or entries not finite, give a
    status.  The dispatcher itself where arrays cannot be borrowed."""
    return _entry_point(*signatures[name])


@functools.lru_cache(maxsize=None)
def _entry_point(py_func, signature):
    return entry_of(_typed(py_func, signature))
