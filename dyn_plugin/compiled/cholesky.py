"""Symmetric positive-definite solves by Cholesky, compiled: one system, or one per state.

``spd_solve`` is also called by the generated code (:mod:`dyn_plugin.symbolic.emit`):
bump :data:`dyn_plugin.symbolic.version.GENERATOR_VERSION` when it changes.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..arrays import SINGULAR
from .jit import CHUNK, jit as _jit, serial_and_parallel as _serial_and_parallel
from .status import BAD_SHAPE, _finite_result


@_jit
def spd_solve(M, b, x):   # generated modules call this: bump codegen.GENERATOR_VERSION when it changes
    """x = M⁻¹ b for a symmetric positive-definite M (n, n), by Cholesky M = L Lᵀ.  M is
    overwritten: L below the diagonal, 1/L_jj on it (so that every division but n is a
    multiplication).  A pivot not above SINGULAR × the largest diagonal entry (M singular to
    rounding: see dyn_plugin.arrays.SINGULAR) makes x NaN, which callers refuse."""
    n = b.shape[0]
    largest = 0.0
    for j in range(n):
        largest = max(largest, M[j, j])
    for j in range(n):
        d = M[j, j]
        for k in range(j):
            d -= M[j, k] * M[j, k]
        if not d > SINGULAR * largest:
            d = np.nan
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

