"""Timing one statement, ``timeit``-style: local names, garbage collector off, ``number``
calls per repeat chosen so that a repeat lasts at least ``target`` seconds, the repeats
cut short once a measurement has used ``budget`` seconds (unless they were asked for)."""

from __future__ import annotations

import contextlib
import math
import timeit
from typing import Optional, Sequence

__all__ = ["BUDGET", "LOOP_BUDGET", "LOOP_MIN_STATES", "SMALL_N", "TARGET", "measure", "measure_side_by_side"]

TARGET = 0.02          # s: a repeat lasts at least this long (timeit's number is chosen for it)
BUDGET = 2.0           # s: default repeats stop once a measurement has used this much
LOOP_BUDGET = 1.0      # s: a per-call loop longer than this is timed on a prefix ...
LOOP_MIN_STATES = 2000  # ... of at least this many states
SMALL_N = 100          # default repeats: 9 up to this N, 5 above
SETTLE_FROM = 0.005    # s: statements whose warm-up call takes this long are warmed up ...
SETTLE = 1.0           # s: ... this long in all, interleaved (see _settle)


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
    (result,) = measure_side_by_side([(stmt, names, contextlib.nullcontext)], states, N, repeat, target, budget)
    return result


def measure_side_by_side(runs: Sequence[tuple], states: int, N: int, repeat: Optional[int],
                         target: float = TARGET, budget: float = BUDGET) -> list:
    """Time several statements ``(stmt, names, context)`` (each processing ``states``
    states per run, each repeat inside ``context()``, e.g. a number of workers) with their
    repeats interleaved -- repeat 1 of each, then repeat 2 of each, ... -- so that a burst
    of load from elsewhere on the machine falls on all of them alike and their ratios (a
    parallel efficiency) stay fair.  One :func:`measure` tuple per run."""
    timers = [_timer(stmt, names) for stmt, names, _ in runs]
    firsts = []
    for timer, (_, _, context) in zip(timers, runs):
        with context():
            firsts.append(timer.timeit(1))  # warm-up at this N: untimed
    if max(firsts) >= SETTLE_FROM:
        _settle(timers, [context for _, _, context in runs], sum(firsts))
    numbers = []
    for timer, first, (_, _, context) in zip(timers, firsts, runs):
        with context():
            numbers.append(_calibrated(timer, first, target))
    requested = repeat if repeat is not None else (9 if N <= SMALL_N else 5)
    out, spent = [[] for _ in runs], 0.0
    for _ in range(requested):
        for timer, number, times, (_, _, context) in zip(timers, numbers, out, runs):
            with context():
                t = timer.timeit(number)
            times.append(t / number / states * 1e6)
            spent += t
        if repeat is None and spent >= budget * len(runs):
            break
    return [(number, times, first, requested) for number, times, first in zip(numbers, out, firsts)]


def _settle(timers: list, contexts: list, spent: float) -> None:
    """Untimed calls of each statement in turn until the warm-up has lasted SETTLE s.  A
    large batch's first calls can run several times slower than the ones after (seen here:
    ∂τ of 10⁵ states on 2 workers, 1000-1300 ns/state for 3-4 calls, then 120, with as
    many page faults in each call); the repeats should measure the steady state."""
    while spent < SETTLE:
        for timer, context in zip(timers, contexts):
            with context():
                spent += timer.timeit(1)


def _calibrated(timer: timeit.Timer, first: float, target: float) -> int:
    """Calls per repeat so that a repeat lasts at least ``target`` s (``first``: one call's s)."""
    if first >= target:
        return 1
    number = 1
    while True:                  # grow number until a run lasts >= target / 10, then scale to target
        t = timer.timeit(number)
        if t >= target / 10 or number >= 10 ** 7:
            break
        number *= 10
    return max(1, int(math.ceil(number * target / max(t, 1e-9))))
