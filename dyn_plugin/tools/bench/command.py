"""``dyn-plugin bench``: its options (:func:`add_arguments`) and the command
(:func:`run`: measure, print, write; the exit code)."""

from __future__ import annotations

import argparse
import time

from ...errors import InputError
from ..activity import activity
from ..machine import keep_freed_memory
from .operations import DEFAULT_BACKENDS, DEFAULT_SIZES, OPS, QUICK_SIZES, REFERENCE_KINDS
from .runner import resolve, run_bench
from .figures import cores_path, plot_cores, plot_scaling
from .tables import print_report, write_json
from .targets import TARGET_BATCH, TARGET_ROBOT
from .timing import TARGET

__all__ = ["add_arguments", "exit_code", "run"]


MAX_SIZE = 1_000_000
"""The largest batch ``--sizes`` takes (the PUMA-560's M at 10⁶ states: 288 MB)."""


def _whole(text: str, what: str, lowest: int, highest=None) -> int:
    """A whole number (also written 1e5) from ``lowest`` to ``highest`` (None: no limit)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a {what}: {text!r}") from None
    if not value.is_integer() or value < lowest or (highest is not None and value > highest):
        bounds = f"from {lowest:,} to {highest:,}" if highest is not None else f">= {lowest}"
        raise argparse.ArgumentTypeError(f"{what}s are whole numbers {bounds}, got {text!r}")
    return int(value)


def _size(text: str) -> int:
    return _whole(text, "batch size", 1, MAX_SIZE)


def _seed(text: str) -> int:
    return _whole(text, "seed", 0)


def _at_least_one(what: str):
    """An argparse type: a whole number ≥ 1 (``what`` names it in the error)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1 ({what}), got {value}")
        return value
    return parse


_repeat = _at_least_one("a whole number")
_workers = _at_least_one("a number of cores (1 = serial)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``dyn-plugin bench``."""
    parser.description = ("Median µs per state of our backends, pinocchio (per-call loop and parallel batch "
                          "functions) and pybullet, at several batch sizes; ratios to the pinocchio loop.")
    parser.add_argument("--robot", nargs="+", metavar="NAME_OR_URDF", help="robots (default: every bundled one, and solo12 and talos of example-robot-data, "
                             "floating)")
    parser.add_argument("--backend", nargs="+", metavar="NAME",
                        help=f"our backends (default: {' '.join(DEFAULT_BACKENDS)}; any of ours or the generated "
                             "ones that dyn-plugin backends lists)")
    parser.add_argument("--against", nargs="+", metavar="REF", choices=REFERENCE_KINDS,
                        help=f"references: {' '.join(REFERENCE_KINDS)} (default: all; the pinocchio loop is "
                             "always timed, every ratio is against it)")
    parser.add_argument("--op", nargs="+", choices=OPS, metavar="OP",
                        help=f"operations: {' '.join(OPS)} (default: all)")
    parser.add_argument("--sizes", nargs="+", type=_size, metavar="N",
                        help=f"batch sizes (default: {' '.join(map(str, DEFAULT_SIZES))}; 1e5 works; at most 1e6)")
    parser.add_argument("--repeat", type=_repeat,
                        help="repeats per measurement (default: 9 for N <= 100, else 5, within 2 s)")
    parser.add_argument("--workers", nargs="+", type=_workers, metavar="K",
                        help="cores of our parallel batch loops, their repeats interleaved, e.g. --workers 1 2 "
                             "(a sweep: the parallel-scaling table, efficiency t(1) / (K t(K))); pinocchio's parallel "
                             "functions get as many threads (default: every usable core; single states are "
                             "timed once)")
    parser.add_argument("--threads", type=_repeat, metavar="T",
                        help="a fixed number of threads for pinocchio's parallel functions, whatever --workers "
                             "(default: each --workers number)")
    parser.add_argument("--seed", type=_seed, default=0, help="random states' seed (default 0)")
    parser.add_argument("--quick", action="store_true", help="a smoke test: sizes 1 100, 3 repeats of >= 5 ms")
    parser.add_argument("--json", metavar="FILE", help="write every figure and the environment as JSON ('-': stdout)")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="first robot, log-log, a panel per operation: ns per state vs N, with the physical "
                             "limit (flops per state ÷ measured peak); with --workers 1 2 also FILE-cores.png, "
                             "ns per state vs cores at the largest N")
    parser.add_argument("--fresh-memory", action="store_true",
                        help="leave the allocator as it is (default: freed memory is kept for reuse, so that the "
                             "repeats time the dynamics, not the system's first touch of a fresh result's pages)")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when a speed target is missed ({TARGET_ROBOT}: one state and "
                             f"{TARGET_BATCH:,} states)")


def run(args: argparse.Namespace, console=None) -> int:
    """``dyn-plugin bench``: run, print, write; returns the exit code (0, or 1 for a missed
    target with ``--check``).  Bad input raises DynPluginError (dyn_plugin.tools.cli.main: exit code 2)."""
    from rich.console import Console

    start = time.perf_counter()
    console = console or Console()
    quiet = args.json == "-"
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else None)
    target = 0.005 if args.quick else TARGET
    workers = getattr(args, "workers", None)
    from ..cli.robot import lock_of

    lock = lock_of(args)
    resolve(args.robot, args.backend, args.op, sizes, args.against, repeat, workers, lock)  # fail before any timing

    allocator = "default" if args.fresh_memory else keep_freed_memory()
    kwargs = dict(robots=args.robot, backends=args.backend, ops=args.op, sizes=sizes, against=args.against,
                  repeat=repeat, seed=args.seed, threads=args.threads, target=target, workers=workers, lock=lock)
    with activity("bench") as shown:
        try:
            result = run_bench(**kwargs, progress=_progress(shown))
        except MemoryError:
            raise InputError(f"bench: not enough memory for batches of up to {max(sizes):,} states of these robots; "
                             "use smaller --sizes") from None

    result.environment["allocator"] = allocator
    if args.json:
        write_json(result, args.json)
    written = [plot_scaling(result, args.plot), plot_cores(result, cores_path(args.plot))] if args.plot else []
    targets = result.targets()
    if not quiet:
        print_report(result, console)
        for path in filter(None, written):
            console.print(f"wrote {path}")
        if args.json:
            console.print(f"wrote {args.json}")
        if args.check and not targets:
            console.print(f"[yellow]note:[/] --check: no target measured (the targets are for {TARGET_ROBOT} at "
                          f"N = 1 and {TARGET_BATCH:,})")
        console.print(f"total wall time {time.perf_counter() - start:.1f} s")
    return exit_code(targets, args.check)


def _progress(shown):
    """``progress(label, done, total)`` of :func:`.runner.run_bench` shown by
    :mod:`dyn_plugin.tools.activity`: on a terminal a bar of the measurements, in a log a
    line per robot and operation; each measurement's label is the heartbeat's step."""
    seen = set()

    def report(label: str, done: int, total: int) -> None:
        key = tuple(label.split()[:2])
        shown.fraction(done, total)
        shown.step(f"{key[0]} {key[1]} ({done}/{total} measurements done)" if key not in seen
                   else f"measuring {label}", shown=key not in seen)
        seen.add(key)
    return report


def exit_code(targets: list, check: bool) -> int:
    """1 when ``check`` and a target is missed, else 0 (a miss alone is informative)."""
    return 1 if check and any(t["status"] == "MISS" for t in targets) else 0

