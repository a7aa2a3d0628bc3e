"""What batch code needs to run across SIMD lanes: a sine and cosine that the compiler can
vectorise, and a Cholesky solve over lanes.

numba (LLVM) vectorises a loop over states only when every operation in its body has a
vector form.  ``math.sin``/``math.cos`` are calls into the C library, which have none (numba
has no SVML on this kind of machine), so a loop containing them runs one state at a time,
and ten sin/cos calls cost about as much as the 300 multiplications and additions of the
PUMA-560's inverse dynamics.  :func:`sin_cos` is the same function in plain arithmetic:

* Cody & Waite's argument reduction, ``r = x − n·π/2`` with ``n = round(2x/π)``, with π/2
  split in four parts (fdlibm's ``pio2_1``, ``pio2_2``, ``pio2_3`` of 33 bits each, then
  ``pio2_3t``) so that ``n·pio2_k`` is exact for ``|n| < 2²⁰`` and r keeps its relative
  accuracy even next to a zero of sin or cos;
* sin and cos of ``|r| ≤ π/4`` by fdlibm's minimax polynomials (``__kernel_sin``,
  ``__kernel_cos``: degree 13 and 14);
* the quadrant ``n mod 4`` applied by multiplying with 0.0 and 1.0, exactly, instead of by
  branches, which would stop the vectorisation.

Within 2 units in the last place of the C library's sin and cos for ``|x| <`` :data:`EXACT_RANGE`
(tests/test_lanes.py holds it); beyond, :func:`sin_cos` and :func:`sin_cos_lanes` call the C
library.

Arrays "over lanes" are flat, one quantity after the other, each of :data:`LANES` states
(entry e of lane l at ``e * LANES + l``): the states are contiguous, so the compiler loads
four at a time, and the distance between two quantities is a constant of the machine code,
so that it can prove in one test that the quantities read and written do not overlap.  (With
a 2-D array the distance is the array's run-time stride, and the compiler gives up
vectorising a body that reads 30 quantities and writes 6: too many overlap tests.)
"""

from __future__ import annotations

import functools
import math

import numba as nb
import numpy as np
from numba.experimental.function_type import WrapperAddressProtocol, _get_wrapper_address

from ..arrays import SINGULAR
from ..loops import PARALLEL_FROM, workers
from .jit import OPTIONS

_jit = nb.njit(**OPTIONS)

LANES = 128                       # states per chunk over lanes: a chunk's 30 quantities (30 KB) stay in L1
EXACT_RANGE = 2.0 ** 19 * math.pi  # |x| below which n·pio2_k is exact (|n| < 2²⁰)

# fdlibm (e_rem_pio2.c, k_sin.c, k_cos.c)
_TWO_OVER_PI = 6.36619772367581382433e-01
_PIO2_1, _PIO2_2, _PIO2_3 = 1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624871116645580e-21
_PIO2_3T = 8.47842766036889956997e-32
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11


@_jit
def _reduced_sin_cos(x):
    """sin x, cos x by reduction to |r| ≤ π/4 and fdlibm's polynomials; branch-free.  The
    floors are np.floor, a float: numba's math.floor returns an int64, and AVX2 turns int64
    into float64 one lane at a time (it made the function twice as slow)."""
    n = np.floor(x * _TWO_OVER_PI + 0.5)
    r = (((x - n * _PIO2_1) - n * _PIO2_2) - n * _PIO2_3) - n * _PIO2_3T
    z = r * r
    s = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
    c = 1.0 - 0.5 * z + z * z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
    odd = n - 2.0 * np.floor(0.5 * n)                               # 1.0 in quadrants 1 and 3
    sign = 1.0 - 2.0 * ((n - 4.0 * np.floor(0.25 * n)) >= 2.0)      # −1.0 in quadrants 2 and 3
    return sign * ((1.0 - odd) * s + odd * c), sign * ((1.0 - odd) * c - odd * s)


@_jit
def sin_cos(x):
    """(sin x, cos x), vectorisable: see the module docstring."""
    if abs(x) < EXACT_RANGE:
        return _reduced_sin_cos(x)
    return math.sin(x), math.cos(x)


@_jit
def sin_cos_lanes(X, angle, sine, cosine, m):
    """The entries ``sine`` and ``cosine`` of X (flat over lanes) = sin and cos of its entry
    ``angle``, for the first ``m`` lanes: a vectorised loop, then the C library for the rare
    |x| ≥ EXACT_RANGE."""
    a, s, c = angle * LANES, sine * LANES, cosine * LANES
    for l in range(m):
        X[s + l], X[c + l] = _reduced_sin_cos(X[a + l])
    for l in range(m):
        if abs(X[a + l]) >= EXACT_RANGE:
            X[s + l], X[c + l] = math.sin(X[a + l]), math.cos(X[a + l])


@_jit
def cholesky_solve_lanes(M, B, X, n, m):
    """X = M⁻¹ B lane by lane for the first ``m`` lanes, all flat over lanes (entry e of lane
    l at ``e * LANES + l``): ``M`` (n·n entries) each lane's symmetric positive-definite
    matrix row-major, overwritten by its Cholesky factor L (1/L_jj on the diagonal), ``B``
    and ``X`` (n entries; X may be B).  A matrix with a pivot not above SINGULAR × its
    largest diagonal entry (not positive definite, or singular to rounding: see
    dyn_plugin.arrays.SINGULAR) gives NaN in its lane (the caller refuses non-finite results)."""
    floor = np.zeros(LANES)
    for j in range(n):
        for l in range(m):
            floor[l] = max(floor[l], SINGULAR * M[(j * n + j) * LANES + l])
    for j in range(n):
        jj = (j * n + j) * LANES
        for k in range(j):
            jk = (j * n + k) * LANES
            for l in range(m):
                M[jj + l] -= M[jk + l] * M[jk + l]
        for l in range(m):
            M[jj + l] = 1.0 / math.sqrt(M[jj + l]) if M[jj + l] > floor[l] else np.nan
        for i in range(j + 1, n):
            ij = (i * n + j) * LANES
            for k in range(j):
                for l in range(m):
                    M[ij + l] -= M[(i * n + k) * LANES + l] * M[(j * n + k) * LANES + l]
            for l in range(m):
                M[ij + l] *= M[jj + l]
    for i in range(n):                                        # L y = b
        for l in range(m):
            X[i * LANES + l] = B[i * LANES + l]
        for k in range(i):
            for l in range(m):
                X[i * LANES + l] -= M[(i * n + k) * LANES + l] * X[k * LANES + l]
        for l in range(m):
            X[i * LANES + l] *= M[(i * n + i) * LANES + l]
    for i in range(n - 1, -1, -1):                            # Lᵀ x = y
        for k in range(i + 1, n):
            for l in range(m):
                X[i * LANES + l] -= M[(k * n + i) * LANES + l] * X[k * LANES + l]
        for l in range(m):
            X[i * LANES + l] *= M[(i * n + i) * LANES + l]


# -- blocks of states across the cores: the launcher of the generated code -------------------
# The generated batch functions ``_<f>_blocks(a, b, c, out, start, stop)`` (three input
# arrays, unused ones included, then the result) run over the blocks of a batch in numba's
# parallel loop below, which takes them as first-class functions: compiled once for every
# generated function, not once more for each (the body of a prange loop that called one by
# name would be compiled again with it), and started by numba's threads, which are awake
# in ~µs, where a Python thread took ~120 µs to start and ~50 µs to hand back (5-10 % of
# a 10⁵-state batch on two cores).

_ROWS = nb.types.float64[:, ::1]
BLOCKS_SIGNATURE = nb.types.float64(_ROWS, _ROWS, _ROWS, _ROWS, nb.types.int64, nb.types.int64)


def _blocks_in_parallel(blocks, a, b, c, out, per_block):
    """``blocks`` over the states of ``out`` in blocks of ``per_block`` states, in parallel
    on numba's threads (``numba.set_num_threads``); the sum of what they return."""
    N = out.shape[0]
    count = (N + per_block - 1) // per_block
    totals = np.zeros(count)
    for block in nb.prange(count):
        totals[block] = blocks(a, b, c, out, block * per_block, min(N, (block + 1) * per_block))
    return totals.sum()


@functools.lru_cache(maxsize=None)
def blocks_in_parallel():
    """The compiled :func:`_blocks_in_parallel` (first use: ~2 s, then numba's cache)."""
    signature = nb.types.float64(nb.types.FunctionType(BLOCKS_SIGNATURE), _ROWS, _ROWS, _ROWS, _ROWS, nb.types.int64)
    return nb.njit(signature, parallel=True, **OPTIONS)(_blocks_in_parallel)


class FirstClassBlocks(WrapperAddressProtocol):
    """A compiled ``_<f>_blocks`` function as a first-class function of BLOCKS_SIGNATURE for
    :func:`blocks_in_parallel`, its address looked up once (numba would look it up on
    every call, ~130 µs)."""

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher                 # keeps the machine code alive
        self.address = _get_wrapper_address(dispatcher, BLOCKS_SIGNATURE)

    def __wrapper_address__(self):
        return self.address

    def signature(self):
        return BLOCKS_SIGNATURE


def run_blocks(blocks, N: int, chunk: int, *arrays) -> float:
    """``blocks(a, b, c, out, start, stop)`` (a generated function of
    :mod:`dyn_plugin.symbolic.emit` that releases the GIL and cuts its states into chunks of
    ``chunk`` from ``start``) over the states 0..N−1 of ``arrays`` (its inputs, one to
    three, then ``out``; fewer inputs are padded with the first, which it does not read):
    at once for fewer than PARALLEL_FROM states or one worker, else split into
    :func:`dyn_plugin.loops.workers` contiguous blocks, each starting at a multiple of
    ``chunk``, run by numba's threads (:func:`blocks_in_parallel`).  The chunks, and so the
    results, are the same for any number of workers.  Returns the sum of what the blocks
    return (0.0 when every entry they read and wrote is finite, else NaN)."""
    *inputs, out = arrays
    a, b, c = inputs + inputs[:1] * (3 - len(inputs))
    count = workers() if N >= PARALLEL_FROM else 1
    if count == 1:
        return blocks(a, b, c, out, 0, N)
    nb.set_num_threads(count)
    return blocks_in_parallel()(_first_class(blocks), a, b, c, out, -(-N // (count * chunk)) * chunk)


_FIRST_CLASS: dict = {}


def _first_class(blocks):
    """``blocks`` as a first-class function (:class:`FirstClassBlocks`), made once per function."""
    if blocks not in _FIRST_CLASS:
        _FIRST_CLASS[blocks] = FirstClassBlocks(blocks)
    return _FIRST_CLASS[blocks]
