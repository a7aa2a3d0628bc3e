"""The per-state kernels' scratch W (n, ROWS, 3): its rows, its place on the stack, and
what every algorithm starts with (the placements) or does to its blocks (rotations).

Row i of W belongs to link i: first its placement in its parent (R, parent ← link, in
rows R_ROW.., p in row P_ROW), then each algorithm's own rows, declared in the
algorithm's module from PLACEMENT_ROWS on (:class:`.layout.Offsets`) and checked to fit in
ROWS.  Up to STACK_JOINTS joints W lives in the stack frame of the calling kernel (an LLVM
``alloca``: :func:`_stack_scratch`), so that one state allocates nothing.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .jit import inline as _inline
from .layout import KIND, POS0, ROT0, Offsets
from .trigonometry import cos, sin
from .vectors import _add, _col, _dot, _mat_vec, _put, _row, _scale

PLACEMENT = Offsets((("R_ROW", 3), ("P_ROW", 1)))     # R (parent ← link), p
R_ROW, P_ROW = PLACEMENT.at("R_ROW", "P_ROW")
PLACEMENT_ROWS = PLACEMENT.end
ROWS = 27                     # rows per link: the most any algorithm declares (articulated_body's)
STACK_JOINTS = 64             # up to this many joints the scratch W is on the stack (648 bytes a joint)


def algorithm_rows(name: str, declared) -> Offsets:
    """The rows of W an algorithm declares as (name, size) pairs, after the placement;
    ImportError if they do not fit in ROWS."""
    rows = Offsets(declared, PLACEMENT_ROWS)
    if rows.end > ROWS:
        raise ImportError(f"dyn_plugin.compiled.scratch: {name} needs {rows.end} rows of the scratch, "
                          f"ROWS is {ROWS}; raise ROWS")
    return rows


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


@_inline
def _stack_rows(rows, n):
    """An uninitialised (rows, n) float64 array in the stack frame of the calling function
    (inlined into it, as :func:`_scratch`), allocated beyond STACK_JOINTS columns."""
    return _stack_matrix(rows, n) if n <= STACK_JOINTS else np.empty((rows, n))


@intrinsic
def _stack_matrix(typingctx, rows, n):
    """An uninitialised C-contiguous (rows, n) float64 array, an alloca (see _stack_rows)."""
    array = types.Array(types.float64, 2, "C")

    def codegen(context, builder, signature, args):
        def intp(value):
            return context.get_constant(types.intp, value)
        count, columns = args
        data = builder.alloca(ir.DoubleType(), size=builder.mul(count, columns))
        M = context.make_array(array)(context, builder)
        context.populate_array(M, data=data, shape=cgutils.pack_array(builder, [count, columns]),
                               strides=cgutils.pack_array(builder, [builder.mul(columns, intp(8)), intp(8)]),
                               itemsize=intp(8), meminfo=None)
        return M._getvalue()

    return array(types.intp, types.intp), codegen


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
