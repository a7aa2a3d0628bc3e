"""cos and sin for the per-state kernels, without a call into the C library.

The per-state cores call ``cos`` and ``sin`` by name (:func:`.traced.python_form` rebinds
them).  The C library's cost ~20 ns a call, a third of the inverse dynamics of a PUMA;
these do what it does, with a table and without a call: x = j π/16 + r, |r| ≤ π/32, by a
three-part Cody-Waite reduction, then sin x = S_j + (S_j c' + C_j s) and
cos x = C_j + (C_j c' − S_j s) with (C_j, S_j) = (cos, sin)(j π/16), s = sin r and
c' = cos r − 1 by their Taylor series (the first term left out is below 2^-60 of the
result).  Within 3 ulp (1.2e-16) of the C library's, which still answers beyond
ANGLE_LIMIT (and for NaN).  (The batches across SIMD lanes use :func:`.lanes.sin_cos`,
which the compiler can vectorise.)
"""

from __future__ import annotations

import math

import numpy as np

from .jit import jit as _jit

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
