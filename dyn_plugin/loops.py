"""Batch loops compiled twice: serially, and in parallel over the cores from PARALLEL_FROM
states.  Shared by the compiled kernels (:mod:`dyn_plugin.compiled.kernels`) and the
compiled friction law (:mod:`dyn_plugin.friction.law`); numba is imported only when a
loop is compiled, so that importing this module costs nothing.
"""

from __future__ import annotations

import types

PARALLEL_FROM = 2048     # smaller batches run serially: a parallel region costs ~10 µs,
                         # and far more when another process holds the other core


def serial_and_parallel(body, options: dict) -> tuple:
    """``(serial, parallel)``: ``body`` (a loop over ``numba.prange``) compiled with numba's
    ``options``, once with prange running as range and once in parallel.  The serial copy
    gets its own name so that numba's on-disk cache keeps both."""
    import numba

    copy = types.FunctionType(body.__code__, body.__globals__, body.__name__ + "_serial", body.__defaults__,
                              body.__closure__)
    copy.__qualname__ = body.__qualname__ + "_serial"
    return numba.njit(**options)(copy), numba.njit(parallel=True, **options)(body)


def for_size(loops: tuple, N: int):
    """The serial loop of ``loops`` for fewer than PARALLEL_FROM states, else the parallel one."""
    serial, parallel = loops
    return parallel if N >= PARALLEL_FROM else serial
