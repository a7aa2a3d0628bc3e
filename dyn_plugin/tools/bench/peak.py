"""The machine's peak double-precision throughput, measured: the denominator of the bench's
physical limit (flops per state ÷ peak = the fewest ns a state can take).

The kernel (:func:`_fma_kernel`) runs, for every entry of a small contiguous float64
array (256 entries, 2 KiB: it stays in L1), four independent chains of eight dependent
multiply-adds ``a = a·m + c``; numba (LLVM, ``fastmath={"contract"}``) vectorises the loop
over the entries into fused multiply-adds on whole SIMD registers, and the processor
overlaps the chains of neighbouring entries, so that the FMA units wait neither for memory
nor for the latency of a chain.  Flops are counted as the code states them: an FMA is a
multiplication and an addition, 2 flops, as in the operation counts of the generated code
(which the compiler contracts into FMAs the same way).  Each entry is written back (the
mean of its chains: bounded, never denormal) so that no pass can be optimised away.

On all cores each thread runs the same kernel on its own array (numba ``prange``, one
iteration per thread).  The figure is the best of the repeats (and ``dyn-plugin bench``
measures before and after its timings, keeping the best of both: :func:`best_peak`): other
processes on the machine only ever slow a repeat down, and a peak is what the machine can
do.
"""

from __future__ import annotations

import time
from typing import Iterable, Optional

import numpy as np

__all__ = ["ENTRIES", "FLOPS_PER_ENTRY", "KERNEL", "best_peak", "measure_peak", "peak_for"]

ENTRIES = 256                  # float64 per thread: 2 KiB, in L1
CHAINS, DEPTH = 4, 8           # independent FMA chains per entry, dependent FMAs per chain
# per entry and pass: CHAINS·DEPTH FMAs (2 flops each), CHAINS − 1 additions making the
# chains differ, CHAINS − 1 additions summing them, 1 multiplication scaling the sum
FLOPS_PER_ENTRY = 2 * CHAINS * DEPTH + 2 * (CHAINS - 1) + 1
KERNEL = (f"{ENTRIES} float64 (L1) per thread, each pass {CHAINS} independent chains of {DEPTH} fused "
          f"multiply-adds per entry, vectorised by LLVM; {FLOPS_PER_ENTRY} flops per entry and pass "
          "(an FMA = 2 flops); best of the repeats")

_compiled = {}


def _fma_kernel(x, m, c, passes):
    for _ in range(passes):
        for i in range(x.size):
            v = x[i]
            a0, a1, a2, a3 = v, v + 1.0, v + 2.0, v + 3.0
            for _ in range(DEPTH):          # a constant trip count: LLVM unrolls it
                a0 = a0 * m + c
                a1 = a1 * m + c
                a2 = a2 * m + c
                a3 = a3 * m + c
            x[i] = (a0 + a1 + a2 + a3) * 0.25


def _kernels():
    """(one thread, every thread): compiled on first use (cached on disk)."""
    if not _compiled:
        import numba

        serial = numba.njit(cache=True, fastmath={"contract"}, nogil=True)(_fma_kernel)

        def threads(x, m, c, passes):
            for t in numba.prange(x.shape[0]):
                serial(x[t], m, c, passes)

        _compiled["serial"] = serial
        _compiled["parallel"] = numba.njit(parallel=True, fastmath={"contract"}, nogil=True)(threads)
    return _compiled["serial"], _compiled["parallel"]


def _run(cores: int, passes: int, x: np.ndarray) -> float:
    """Seconds for ``passes`` passes on ``cores`` threads."""
    import numba

    serial, parallel = _kernels()
    start = time.perf_counter()
    if cores == 1:
        serial(x[0], 0.999, 1e-3, passes)
    else:
        numba.set_num_threads(cores)
        parallel(x, 0.999, 1e-3, passes)
    return time.perf_counter() - start


def measure_peak(cores: Iterable[int], target: float = 0.02, repeats: int = 7) -> dict:
    """GFLOP/s of the FMA kernel on each number of ``cores`` (threads, one array each):
    ``{"gflops": {"1": best, "2": ...}, "repeats_gflops": {...}, "kernel", ...}``;
    ``target`` seconds per repeat, ``repeats`` repeats, the best kept (see the module
    docstring).  Also ``gflops_1_core`` and ``gflops_all_cores`` (the largest count)."""
    import numba

    cores = sorted(set(int(k) for k in cores))
    previous = numba.get_num_threads()
    start = time.perf_counter()
    best, runs = {}, {}
    try:
        # passes calibrated on one core; every thread runs as many, so that a repeat lasts
        # about ``target`` on any number of cores (calibrating on several would count the
        # start of a parallel region, long when another process holds a core)
        x = np.full((1, ENTRIES), 1.0)
        _run(1, 1, x)  # compiles on first use
        passes = 16
        while True:
            t = _run(1, passes, x)
            if t >= target / 4 or passes >= 1 << 30:
                break
            passes *= 4
        passes = max(1, int(passes * target / max(t, 1e-9)))
        for k in cores:
            x = np.full((k, ENTRIES), 1.0)
            _run(k, 1, x)  # compiles (first time), wakes the threads
            flops = FLOPS_PER_ENTRY * ENTRIES * passes * k
            rates = [flops / _run(k, passes, x) / 1e9 for _ in range(repeats)]
            if not np.all(np.isfinite(x)):
                raise RuntimeError("internal: the peak kernel's values are not finite")
            runs[str(k)], best[str(k)] = rates, max(rates)
    finally:
        numba.set_num_threads(previous)
    most = str(cores[-1])
    return {"gflops": best, "gflops_1_core": best.get("1"), "gflops_all_cores": best[most], "all_cores": cores[-1],
            "repeats_gflops": runs, "kernel": KERNEL, "flops_per_fma": 2, "seconds": time.perf_counter() - start}


def best_peak(*peaks: dict) -> dict:
    """Several measurements of :func:`measure_peak` (e.g. before and after the timings) as
    one: the best figure for each number of cores, every repeat kept."""
    peaks = [p for p in peaks if p]
    if len(peaks) < 2:
        return peaks[0] if peaks else {}
    cores = sorted({int(k) for p in peaks for k in p["gflops"]})
    best = {str(k): max(p["gflops"][str(k)] for p in peaks if str(k) in p["gflops"]) for k in cores}
    runs = {str(k): [g for p in peaks for g in p["repeats_gflops"].get(str(k), [])] for k in cores}
    return {**peaks[0], "gflops": best, "gflops_1_core": best.get("1"), "gflops_all_cores": best[str(cores[-1])],
            "all_cores": cores[-1], "repeats_gflops": runs, "measurements": len(peaks),
            "seconds": sum(p["seconds"] for p in peaks)}


def peak_for(peak: Optional[dict], cores: Optional[int]) -> Optional[float]:
    """The measured GFLOP/s on ``cores`` threads (None: the most measured), or None when
    not measured: never extrapolated."""
    if not peak:
        return None
    if cores is None:
        return peak.get("gflops_all_cores")
    return peak.get("gflops", {}).get(str(cores))
