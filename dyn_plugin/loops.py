"""Batch loops in parallel over the cores from PARALLEL_FROM states, and how many cores
("workers") they use: loops compiled twice, serially and with numba's prange
(:func:`serial_and_parallel`, :func:`for_size`: the compiled kernels of
:mod:`dyn_plugin.compiled` and the friction law of :mod:`dyn_plugin.friction.law`).  (The
generated code of :mod:`dyn_plugin.symbolic.emit` runs its blocks of states by one parallel
loop compiled once, :func:`dyn_plugin.compiled.lanes.run_blocks`, with these workers.)
numba is imported only when a loop is compiled or run in parallel, so that importing this
module costs nothing.

Workers: every usable core by default; ``DYN_PLUGIN_WORKERS`` (environment, read once),
:func:`set_workers` (process-wide) and :func:`using_workers` (a ``with`` block in this
thread; what a backend's ``workers=`` does) choose fewer, the innermost winning.  The
states of a batch are split into the same chunks whatever the number of workers, and each
state is computed by the same code, so results are bit-identical for any number of workers.
"""

from __future__ import annotations

import contextlib
import os
import threading
import types
from typing import Optional

from .errors import InputError

PARALLEL_FROM = 2048     # smaller batches run serially: a parallel region costs ~10 µs,
                         # and far more when another process holds the other core
WORKERS_ENV = "DYN_PLUGIN_WORKERS"

_process_workers: Optional[int] = None
_local = threading.local()


def serial_and_parallel(body, options: dict) -> tuple:
    """``(serial, parallel)``: ``body`` (a loop over ``numba.prange``) compiled with numba's
    ``options``, once with prange running as range and once in parallel.  The serial copy
    gets its own name so that numba's on-disk cache keeps both."""
    import numba

    copy = types.FunctionType(body.__code__, body.__globals__, body.__name__ + "_serial", body.__defaults__,
                              body.__closure__)
    copy.__qualname__ = body.__qualname__ + "_serial"
    return numba.njit(**options)(copy), numba.njit(parallel=True, **options)(body)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at most numba's thread pool."""
    import numba

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(usable, numba.config.NUMBA_NUM_THREADS))


def check_workers(workers, what: str = "workers") -> int:
    """``workers`` as an int ≥ 1, or InputError naming ``what``."""
    if isinstance(workers, bool) or not isinstance(workers, int) and not hasattr(workers, "__index__"):
        raise InputError(f"{what} must be a positive integer, got {workers!r}")
    if int(workers) < 1:
        raise InputError(f"{what} must be a positive integer (1 = serial), got {int(workers)}")
    return int(workers)


def _environment_workers() -> Optional[int]:
    text = os.environ.get(WORKERS_ENV, "").strip()
    if not text:
        return None
    try:
        return check_workers(int(text), WORKERS_ENV)
    except ValueError:
        raise InputError(f"{WORKERS_ENV} must be a positive integer, got {text!r}") from None


def workers() -> int:
    """The number of cores parallel loops use now (see the module docstring), never more
    than :func:`available_cores`."""
    chosen = getattr(_local, "workers", None) or _process_workers or _environment_workers()
    cores = available_cores()
    return cores if chosen is None else min(chosen, cores)


def set_workers(workers: Optional[int]) -> None:
    """Cores for parallel loops in this process from now on; None: back to the default
    (``DYN_PLUGIN_WORKERS``, else every usable core)."""
    global _process_workers
    _process_workers = None if workers is None else check_workers(workers)


@contextlib.contextmanager
def using_workers(workers: Optional[int]):
    """``with using_workers(2): ...`` runs the parallel loops of this thread on 2 cores;
    None leaves the current setting."""
    previous = getattr(_local, "workers", None)
    _local.workers = previous if workers is None else check_workers(workers)
    try:
        yield
    finally:
        _local.workers = previous


def for_size(loops: tuple, N: int):
    """The serial loop of ``loops`` for fewer than PARALLEL_FROM states or one worker, else
    the parallel one, set to run on :func:`workers` cores."""
    serial, parallel = loops
    if N < PARALLEL_FROM:
        return serial
    count = workers()
    if count == 1:
        return serial
    import numba

    numba.set_num_threads(count)
    return parallel
