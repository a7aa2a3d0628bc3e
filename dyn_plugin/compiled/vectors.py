"""3-vectors as tuples and 3×3 blocks of the per-state kernels' arrays.

3-vectors travel as tuples, which numba keeps in registers.  A 3×3 block of the scratch
``W`` (n, ROWS, 3) of :mod:`.scratch` is three of its rows; one of the packed model ``P``
of :mod:`.layout` is nine adjacent columns, row-major.  Plain ``+``, ``-``, ``*`` only, so
that :mod:`.traced` runs them on other numbers too.
"""

from __future__ import annotations

from .jit import jit as _jit


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
