"""Timing one statement, ``timeit``-style: local names, garbage collector off, ``number``
calls per repeat chosen so that a repeat lasts at least ``target`` seconds, the repeats
cut short once a measurement has used ``budget`` seconds (unless they were asked for)."""

from __future__ import annotations

import math
import timeit
from typing import Optional, Sequence

__all__ = ["BUDGET", "LOOP_BUDGET", "LOOP_MIN_STATES", "SMALL_N", "TARGET", "measure"]

TARGET = 0.02          # s: a repeat lasts at least this long (timeit's number is chosen for it)
BUDGET = 2.0           # s: default repeats stop once a measurement has used this much
LOOP_BUDGET = 1.0      # s: a per-call loop longer than this is timed on a prefix ...
LOOP_MIN_STATES = 2000  # ... of at least this many states
SMALL_N = 100          # default repeats: 9 up to this N, 5 above


def _timer(stmt: str, names: dict) -> timeit.Timer:
    """A timeit.Timer running ``stmt`` with ``names`` bound as local variables, as in a
    user's function (the setup code runs inside timeit's inner function)."""
    glob = {f"_g_{k}": v for k, v in names.items()}
    setup = "; ".join(f"{k} = _g_{k}" for k in names) or "pass"
    return timeit.Timer(stmt, setup=setup, globals=glob)


def _calls(fn: str, args: Sequence[str], kwargs: str = "") -> str:
    inner = ", ".join(list(args) + ([kwargs] if kwargs else []))
    return f"{fn}({inner})"


def measure(stmt: str, names: dict, states: int, N: int, repeat: Optional[int], target: float = TARGET,
            budget: float = BUDGET) -> tuple:
    """Time ``stmt`` (which processes ``states`` states per run).

    Returns ``(number, [µs per state per repeat], first call s, repeats requested)``.
    """
    timer = _timer(stmt, names)
    first = timer.timeit(1)  # warm-up at this N: untimed
    number = 1
    if first < target:
        # calibrate: grow number until a run lasts >= target / 10, then scale to target
        while True:
            t = timer.timeit(number)
            if t >= target / 10 or number >= 10 ** 7:
                break
            number *= 10
        number = max(1, int(math.ceil(number * target / max(t, 1e-9))))
    requested = repeat if repeat is not None else (9 if N <= SMALL_N else 5)
    out, spent = [], 0.0
    for _ in range(requested):
        t = timer.timeit(number)
        out.append(t / number / states * 1e6)
        spent += t
        if repeat is None and spent >= budget:
            break
    return number, out, first, requested
