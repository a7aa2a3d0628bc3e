"""``dyn-plugin bench``: time per state of our backends against pinocchio and pybullet (issue #6).

For each robot × operation (``ID`` inverse dynamics, ``FD`` forward dynamics, ``M`` mass
matrix, ``bias`` C q̇ + g) × backend × batch size N, the median time per state in µs, and
its ratio to pinocchio's per-call loop of the same operation at the same N, measured in
the same run:

===================  =================================================================
``ours``             ``be.inverse_dynamics(q, qd, qdd)`` etc. through the public API:
                     q of shape (n,) for N = 1 (the call a control loop makes), (N, n)
                     for batches, always timed on the full batch
``pinocchio``        the per-call loop ``for k in range(N): pin.rnea(m, d, Q[k], V[k], A[k])``
                     (``aba``, ``crba``, ``nonLinearEffects``); for N = 1 one call.  The
                     denominator of every ratio
``pinocchio_parallel``  ``pin.rneaInParallel`` / ``pin.abaInParallel`` on a ``ModelPool``,
                     column-major (nq, N) inputs, output preallocated; none for M and bias
``pybullet``         ``calculateInverseDynamics`` / ``calculateMassMatrix`` loops (bias: with
                     zero q̈), lists prepared beforehand; none for FD
===================  =================================================================

Inputs are converted (pinocchio's q, pybullet's lists) outside the timed region.  Every
measurement starts with an untimed warm-up call at its own N (and each of our backends
is called once per operation, single state and batch, before its first measurement:
JIT compilation happens there; its time is reported under ``warmup``).  Then ``timeit``-style:
the statement runs ``number`` times per repeat (chosen so a repeat lasts ≥ ``target``
seconds, 20 ms by default; local names, garbage collector off), and the figure is the
median over repeats of time / (number × states).  Default repeats: 9 for N ≤ 100, 5
above, cut short when a measurement has used ``budget`` seconds (2 s); an explicit
``repeat`` is always honoured.  A per-call loop (pinocchio, pybullet) whose full pass
would exceed ``loop_budget`` (1 s) is timed on a prefix of at least 2000 states: its time
per state does not depend on N (marked † in the table, ``extrapolated`` in JSON).

Before timing, each robot gets correctness checks (untimed): ours against pinocchio
(rigid backends; single state and batch), pinocchio's parallel functions against its
loop (``abaInParallel`` uses ``Convention.WORLD``, compared with ``aba(..., WORLD)``), and
whether ``pin.crba`` returns the full symmetric matrix.

API (what ``dyn-plugin bench`` uses)
------------------------------------
* :func:`add_arguments` ``(parser)`` — the sub-command's options; :func:`run` ``(args,
  console) -> exit code`` (0; 1 with ``--check`` when a target is missed; bad input raises
  :class:`~dyn_plugin.errors.DynPluginError`, which ``cli.main`` turns into exit code 2).
  Wiring in ``cli.py``::

      # build_parser()
      from .bench import add_arguments as bench_arguments   # light: imports nothing heavy
      bench_arguments(sub.add_parser("bench", help="time per state against pinocchio and pybullet"))

      # main(): commands["bench"] = _bench
      def _bench(args) -> int:
          from .bench import run
          return run(args, _console())

* :func:`run_bench` ``(...) -> BenchResult`` — the engine; :func:`print_report`,
  :func:`format_tables` (rich), :func:`write_json`, :func:`plot_scaling` (PNG, log-log),
  :func:`evaluate_targets` (the PUMA-560 speed targets, at N = 1 and 10⁵ only),
  :func:`legend_lines` (the tables' legend in words), :func:`environment` (versions,
  CPU, threads, date), :func:`check_pinocchio_parallel`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import sys
import time
import timeit
import warnings
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np
from rich.markup import escape

from .errors import BackendError, InputError

OPS = ("ID", "FD", "M", "bias")
OP_DESCRIPTIONS = {"ID": "inverse dynamics τ(q, q̇, q̈)", "FD": "forward dynamics q̈(q, q̇, τ)",
                   "M": "mass matrix M(q)", "bias": "bias forces C(q, q̇) q̇ + g(q)"}
OUR_METHODS = {"ID": "inverse_dynamics", "FD": "forward_dynamics", "M": "mass_matrix", "bias": "bias_forces"}
OP_ARGS = {"ID": ("q", "qd", "qdd"), "FD": ("q", "qd", "tau"), "M": ("q",), "bias": ("q", "qd")}
PIN_CALLS = {"ID": "rnea", "FD": "aba", "M": "crba", "bias": "nonLinearEffects"}
PIN_PARALLEL_CALLS = {"ID": "rneaInParallel", "FD": "abaInParallel"}
PYBULLET_CALLS = {"ID": "calculateInverseDynamics", "M": "calculateMassMatrix", "bias": "calculateInverseDynamics"}

REFERENCE_KINDS = ("pinocchio", "pinocchio_parallel", "pybullet")
DEFAULT_BACKENDS = ("newton_euler", "symbolic_numba", "newton_euler_friction")
# Our backends the benchmark knows; one that is not registered (yet) is skipped with a note.
KNOWN_OURS = ("newton_euler", "newton_euler_friction", "lagrange_euler", "lagrange_euler_friction", "symbolic",
              "symbolic_numba")
DEFAULT_SIZES = (1, 100, 10_000, 100_000)
QUICK_SIZES = (1, 100)

TARGET = 0.02          # s: a repeat lasts at least this long (timeit's number is chosen for it)
BUDGET = 2.0           # s: default repeats stop once a measurement has used this much
LOOP_BUDGET = 1.0      # s: a per-call loop longer than this is timed on a prefix ...
LOOP_MIN_STATES = 2000  # ... of at least this many states
SMALL_N = 100          # default repeats: 9 up to this N, 5 above
CHECK_STATES = 16      # states of the correctness checks
CHECK_RTOL = 1e-8      # ours vs pinocchio, |diff| / max(1, |ref|)
PARALLEL_RTOL = 1e-12  # pinocchio's parallel functions vs its loop

TARGET_ROBOT = "puma560"
TARGET_BATCH = 100_000
# The sizes the speed targets judge: one state, and a batch of TARGET_BATCH states.  Other
# sizes are measured and shown but never judged.
TARGET_SIZES = {"single": 1, "batch": TARGET_BATCH}
FRICTION_LIMIT = 1.5
# (op, "single" or "batch", limit): single = time ratio to pinocchio ≤ limit, batch = speed-up
# over pinocchio's per-call loop ≥ limit.  Friction backends: time ≤ FRICTION_LIMIT × their
# frictionless counterpart's, at both sizes.  lagrange_euler (O(n⁴) on purpose) has none.
TARGETS = (
    ("ID", "single", 1.0),
    ("ID", "batch", 10.0),
    ("FD", "single", 1.0),
    ("FD", "batch", 10.0),
    ("M", "single", 1.5),
    ("M", "batch", 10.0),
)


# --------------------------------------------------------------------------- results


@dataclasses.dataclass
class Measurement:
    """One robot × op × backend × N: µs per state, one figure per repeat."""

    robot: str
    op: str
    backend: str            # one of ours, or "pinocchio", "pinocchio_parallel", "pybullet"
    call: str               # what was timed
    N: int                  # batch size
    timed_states: int       # states actually timed per call (< N: per-call loop on a prefix)
    number: int             # calls per repeat
    repeats_us: list        # µs per state, one per repeat
    first_call_s: float     # the untimed warm-up call at this N, s
    repeats_requested: int = 0
    ratio: Optional[float] = None           # median / pinocchio loop's median, same robot, op, N
    ratio_parallel: Optional[float] = None  # median / pinocchio_parallel's median, when there is one

    @property
    def median_us(self) -> float:
        return float(np.median(self.repeats_us))

    @property
    def extrapolated(self) -> bool:
        return self.timed_states < self.N

    @property
    def cut_short(self) -> bool:
        return len(self.repeats_us) < self.repeats_requested

    def as_dict(self) -> dict:
        return {
            "robot": self.robot, "op": self.op, "backend": self.backend, "call": self.call, "N": self.N,
            "median_us": self.median_us, "repeats_us": list(self.repeats_us),
            "throughput_per_s": 1e6 / self.median_us if self.median_us > 0 else None,
            "ratio_vs_pinocchio": self.ratio,
            "speedup_vs_pinocchio": (1.0 / self.ratio) if self.ratio else None,
            "ratio_vs_pinocchio_parallel": self.ratio_parallel,
            "timed_states": self.timed_states, "extrapolated": self.extrapolated, "calls_per_repeat": self.number,
            "repeats_requested": self.repeats_requested, "cut_short": self.cut_short,
            "first_call_s": self.first_call_s,
        }


@dataclasses.dataclass
class BenchResult:
    """Everything one run measured; :meth:`as_dict` is the ``--json`` document."""

    settings: dict
    environment: dict
    measurements: list       # [Measurement]
    unavailable: list        # [{"robot", "op", "backend", "reason"}]
    checks: list             # [{"robot", "backend", "what", "max_rel", "rtol", "ok"}]
    warmups: list            # [{"robot", "backend", "seconds"}]
    notes: list              # [str]
    robots: dict             # name -> number of joints
    seconds: float = 0.0

    def find(self, robot, op, backend, N) -> Optional[Measurement]:
        for m in self.measurements:
            if (m.robot, m.op, m.backend, m.N) == (robot, op, backend, N):
                return m
        return None

    def targets(self) -> list:
        return evaluate_targets(self)

    def as_dict(self) -> dict:
        return {
            "tool": "dyn-plugin bench",
            "environment": self.environment,
            "settings": self.settings,
            "robots": self.robots,
            "seconds": round(self.seconds, 3),
            "results": [m.as_dict() for m in self.measurements],
            "unavailable": self.unavailable,
            "checks": self.checks,
            "warmup": self.warmups,
            "targets": self.targets(),
            "notes": self.notes,
        }


# --------------------------------------------------------------------------- environment


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _load_average() -> Optional[list]:
    """1, 5 and 15 min load averages: other processes on the machine disturb timings."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _numba_threads() -> Optional[int]:
    try:
        import numba
    except ImportError:
        return None
    return int(numba.get_num_threads())


def environment(parallel_threads: Optional[int] = None) -> dict:
    """Versions, CPU, cores, threads and date: what a timing depends on."""
    from datetime import datetime, timezone
    from importlib import metadata

    from . import __version__

    versions = {"dyn_plugin": __version__, "python": platform.python_version()}
    for dist in ("numpy", "numba", "pin", "pybullet", "scipy"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "versions": versions,
        "cpu": _cpu_model(),
        "machine": platform.machine(),
        "platform": platform.platform(),
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "numba_threads": _numba_threads(),
        "pinocchio_parallel_threads": parallel_threads if parallel_threads is not None else usable_cores(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "timer": "time.perf_counter via timeit (garbage collector off while timing)",
    }


# --------------------------------------------------------------------------- timing


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


# --------------------------------------------------------------------------- pinocchio helpers


def _pin_positions(pb, q: np.ndarray) -> np.ndarray:
    """Our positions (N, n) as pinocchio configurations (N, nq): cos/sin for continuous joints."""
    out = np.zeros((len(q), pb.pin_model.nq))
    for j, (iq, two) in enumerate(zip(pb._idx_q, pb._two_q)):
        if two:
            out[:, iq], out[:, iq + 1] = np.cos(q[:, j]), np.sin(q[:, j])
        else:
            out[:, iq] = q[:, j]
    return out


def _pin_velocities(pb, v: np.ndarray) -> np.ndarray:
    out = np.zeros((len(v), pb.pin_model.nv))
    out[:, pb._idx_v] = v
    return out


def _pin_arrays(pb, states) -> dict:
    arrays = {"q": _pin_positions(pb, states.q), "qd": _pin_velocities(pb, states.qd),
              "qdd": _pin_velocities(pb, states.qdd), "tau": _pin_velocities(pb, states.tau)}
    for k in range(min(3, len(states.q))):  # the vectorised conversion is the backend's own
        if not (np.array_equal(arrays["q"][k], pb.to_pin_q(states.q[k]))
                and np.array_equal(arrays["qd"][k], pb.to_pin_v(states.qd[k]))):
            raise BackendError("internal: pinocchio state conversion differs from PinocchioBackend's")
    return arrays


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rel = np.abs(a - b) / np.maximum(1.0, np.abs(b))
    return float(np.max(np.where(np.isnan(rel), np.inf, rel))) if rel.size else 0.0


def check_pinocchio_parallel(model, count: int = 64, seed: int = 0, threads: Optional[int] = None) -> dict:
    """pinocchio's parallel batch functions against its per-call loop on ``count`` random
    states: ``{"rneaInParallel": max rel err vs rnea, "abaInParallel": vs aba(..., WORLD),
    "abaInParallel_vs_aba_local": vs the default aba}``.  The first two are exactly 0 in
    pin 4.1; the last is roundoff (≈1e-13)."""
    from .backends.pinocchio_backend import PinocchioBackend
    from .sampling import random_states

    pin_be = PinocchioBackend(model)
    pin, m, d = pin_be._pin, pin_be.pin_model, pin_be.data
    arrays = _pin_arrays(pin_be, random_states(model, count, seed=seed))
    Q, V, A, T = arrays["q"], arrays["qd"], arrays["qdd"], arrays["tau"]
    threads = threads or usable_cores()
    pool = pin.ModelPool(m, threads)
    tau_par = np.zeros((m.nv, count), order="F")
    pin.rneaInParallel(threads, pool, Q.T, V.T, A.T, tau_par)
    qdd_par = np.zeros((m.nv, count), order="F")
    pin.abaInParallel(threads, pool, Q.T, V.T, T.T, qdd_par)
    tau_loop = np.array([pin.rnea(m, d, Q[k], V[k], A[k]).copy() for k in range(count)])
    world = getattr(getattr(pin, "Convention", None), "WORLD", None)
    aba_world = np.array([(pin.aba(m, d, Q[k], V[k], T[k], world) if world is not None
                           else pin.aba(m, d, Q[k], V[k], T[k])).copy() for k in range(count)])
    aba_local = np.array([pin.aba(m, d, Q[k], V[k], T[k]).copy() for k in range(count)])
    return {"rneaInParallel": _rel(tau_par.T, tau_loop), "abaInParallel": _rel(qdd_par.T, aba_world),
            "abaInParallel_vs_aba_local": _rel(qdd_par.T, aba_local), "threads": threads, "states": count}


# --------------------------------------------------------------------------- options


def _is_friction(name: str) -> bool:
    return name.endswith("_friction")


def resolve(robots=None, backends=None, ops=None, sizes=None, against=None, repeat=None) -> dict:
    """Check every option before any timing; raises InputError / BackendError /
    UnknownRobotError with a message naming what is valid."""
    from .backends import list_backends
    from .robots import list_robots, load_robot

    robots = list(robots) if robots else list_robots()
    models = {}
    for robot in robots:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = load_robot(robot)
        key = model.name if model.name and model.name not in models else str(robot)
        models[key] = (model, [str(w.message) for w in caught])
    ops = list(dict.fromkeys(ops)) if ops else list(OPS)
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        raise InputError(f"unknown operation {unknown[0]!r}; operations: {', '.join(OPS)}")
    sizes = sorted(set(int(s) for s in (sizes or DEFAULT_SIZES)))
    if any(s < 1 for s in sizes):
        raise InputError(f"batch sizes must be at least 1, got {min(sizes)}")
    against = list(dict.fromkeys(against)) if against is not None else list(REFERENCE_KINDS)
    for ref in against:
        if ref not in REFERENCE_KINDS:
            raise InputError(f"unknown reference {ref!r}; references: {', '.join(REFERENCE_KINDS)}")
    if "pinocchio" not in against:  # every ratio is against it
        against.insert(0, "pinocchio")
    available = list_backends()
    ours = list(backends) if backends else list(DEFAULT_BACKENDS)
    for name in ours:
        if name in REFERENCE_KINDS:
            raise InputError(f"{name!r} is a reference, not one of our backends: choose references with --against "
                             f"({', '.join(REFERENCE_KINDS)}); the pinocchio loop is always timed")
        if name not in available and name not in KNOWN_OURS:
            ours_available = [b for b in available if b not in REFERENCE_KINDS]
            raise BackendError(f"unknown backend {name!r}; available: {', '.join(ours_available)}")
    if repeat is not None and repeat < 1:
        raise InputError(f"repeat must be at least 1, got {repeat}")
    return {"models": models, "ops": ops, "sizes": sizes, "against": against,
            "backends": list(dict.fromkeys(ours)), "repeat": repeat}


# --------------------------------------------------------------------------- the run


class _PybulletLists:
    """Our states in pybullet's joint order as lists of floats (pybullet crashes on numpy
    rows), converted lazily, outside the timed region."""

    def __init__(self, be, states):
        self.be, self.states, self.rows = be, states, {"q": [], "qd": [], "qdd": []}

    def get(self, key: str, count: int) -> list:
        rows = self.rows[key]
        source = getattr(self.states, key)
        while len(rows) < count:
            rows.append(self.be._to_pb(source[len(rows)]))
        return rows[:count]


def run_bench(robots: Optional[Sequence[str]] = None, backends: Optional[Sequence[str]] = None,
              ops: Optional[Sequence[str]] = None, sizes: Optional[Sequence[int]] = None,
              against: Optional[Sequence[str]] = None, repeat: Optional[int] = None, seed: int = 0,
              threads: Optional[int] = None, target: float = TARGET, budget: float = BUDGET,
              loop_budget: float = LOOP_BUDGET,
              progress: Optional[Callable[[str, int, int], None]] = None) -> BenchResult:
    """Time every robot × op × backend × size; see the module docstring.

    ``robots``: names or URDF paths (default: the bundled ones); ``backends``: ours
    (default ``newton_euler``, ``symbolic_numba``, ``newton_euler_friction``); ``against``: references among ``pinocchio``,
    ``pinocchio_parallel``, ``pybullet`` (default all; the pinocchio loop is always timed);
    ``repeat``: repeats per measurement (default 9 for N ≤ 100, else 5, within
    ``budget`` s); ``threads``: pinocchio's parallel functions' threads (default: the usable
    cores); ``target``: seconds per repeat at least; ``progress(label, done, total)`` before
    each measurement.
    """
    start = time.perf_counter()
    opts = resolve(robots, backends, ops, sizes, against, repeat)
    if threads is not None and threads < 1:
        raise InputError(f"threads must be at least 1, got {threads}")
    threads = threads or usable_cores()
    load_before = _load_average()
    result = BenchResult(
        settings={"robots": list(opts["models"]), "backends": opts["backends"], "ops": opts["ops"],
                  "sizes": opts["sizes"], "against": opts["against"], "repeat": repeat, "seed": seed,
                  "target_s": target, "budget_s": budget, "loop_budget_s": loop_budget,
                  "loop_min_states": LOOP_MIN_STATES,
                  "repeat_default": f"9 for N <= {SMALL_N}, else 5; stopped once a measurement used budget_s",
                  "pinocchio_loop": "for k in range(N): pin.rnea(model, data, Q[k], V[k], A[k])  (Q row-major (N, nq))",
                  "pinocchio_parallel": "pin.rneaInParallel(threads, ModelPool, Q.T, V.T, A.T, out) with "
                                        "column-major (nq, N) arrays, out preallocated",
                  "ratio": "time per state / pinocchio per-call loop's time per state, same robot, op and N "
                           "(< 1 = faster); speed-up = 1 / ratio"},
        environment=environment(threads), measurements=[], unavailable=[], checks=[], warmups=[], notes=[],
        robots={})
    per_robot = len(opts["ops"]) * len(opts["sizes"]) * (len(opts["backends"]) + len(opts["against"]))
    total, done = per_robot * len(opts["models"]), [0]

    def tick(label):
        if progress:
            progress(label, done[0], total)
        done[0] += 1

    for robot, (model, load_notes) in opts["models"].items():
        result.robots[robot] = model.n
        result.notes += [f"{robot}: {note}" for note in load_notes]
        _RobotBench(result, robot, model, opts, seed, threads, target, budget, loop_budget, tick).run()
    result.seconds = time.perf_counter() - start
    result.environment["load_average"] = {"before": load_before, "after": _load_average()}
    busy = max((x[0] for x in (load_before, _load_average()) if x), default=0.0)
    if busy > 0.5:
        result.notes.append(f"the machine was busy (1-min load average up to {busy:g} on {usable_cores()} usable "
                            "cores): other processes disturb timings, multi-threaded ones most")
    return result


def _build_ours(result, robot, model, names) -> dict:
    from .backends import get_backend, list_backends

    built = {}
    for name in names:
        if name not in list_backends():
            result.notes.append(f"{robot}: backend {name!r} is not available (not registered); skipped")
            continue
        try:
            built[name] = get_backend(name, model)
        except BackendError as exc:
            result.notes.append(f"{robot}: backend {name!r} cannot be built: {exc}; skipped")
    return built


def _warm_up(result, robot, backends: dict, ops, states) -> None:
    """One call per op, single state and a batch of two, for each of our backends: JIT
    compilation and first-call costs happen here, never inside a timed region."""
    for name, be in backends.items():
        t0 = time.perf_counter()
        for op in ops:
            args = [getattr(states, a) for a in OP_ARGS[op]]
            fn = getattr(be, OUR_METHODS[op])
            fn(*(a[0] for a in args))
            fn(*(a[:2] for a in args))
        result.warmups.append({"robot": robot, "backend": name, "seconds": time.perf_counter() - t0})


def _correctness(result, robot, backends, pin_be, ops, states) -> None:
    """Untimed: ours against pinocchio (single and batch paths); crba symmetric or not."""
    k = min(CHECK_STATES, len(states.q))
    reference = {op: getattr(pin_be, OUR_METHODS[op])(*(getattr(states, a)[:k] for a in OP_ARGS[op])) for op in ops}
    for name, be in backends.items():
        if _is_friction(name):
            continue  # friction is part of these dynamics: not pinocchio's (validate checks them by stepping)
        for op in ops:
            args = [getattr(states, a)[:k] for a in OP_ARGS[op]]
            fn = getattr(be, OUR_METHODS[op])
            err = max(_rel(fn(*args), reference[op]), _rel(fn(*(a[0] for a in args)), reference[op][0]))
            ok = err <= CHECK_RTOL
            result.checks.append({"robot": robot, "backend": name, "what": f"{op} vs pinocchio ({k} states, "
                                  "single and batch)", "max_rel": err, "rtol": CHECK_RTOL, "ok": ok})
            if not ok:
                result.notes.append(f"{robot}: WARNING {name} {op} differs from pinocchio by {err:.2e} "
                                    f"(> {CHECK_RTOL:g}): its times are not of a correct result")
    pin, m, d = pin_be._pin, pin_be.pin_model, pin_be.data
    M = pin.crba(m, d, pin_be.to_pin_q(states.q[0]))
    full = bool(np.allclose(M, M.T, rtol=0, atol=1e-12) and np.any(np.tril(M, -1)))
    result.checks.append({"robot": robot, "backend": "pinocchio", "what": "pin.crba returns the full symmetric M",
                          "max_rel": 0.0 if full else float(np.max(np.abs(M - M.T))), "rtol": 1e-12, "ok": full})
    if not full:
        result.notes.append(f"{robot}: pin.crba returns only the upper triangle here; its time excludes "
                            "symmetrisation")


class _RobotBench:
    """The timed statements of one robot: inputs prepared once, outside every timed region."""

    def __init__(self, result, robot, model, opts, seed, threads, target, budget, loop_budget, tick):
        from .backends.pinocchio_backend import PinocchioBackend
        from .sampling import random_states

        self.result, self.robot, self.model, self.opts = result, robot, model, opts
        self.threads, self.target, self.budget, self.loop_budget, self.tick = threads, target, budget, loop_budget, tick
        against, sizes = opts["against"], opts["sizes"]
        self.states = random_states(model, max(max(sizes), 2), seed=seed)
        self.ours = _build_ours(result, robot, model, opts["backends"])
        self.pin_be = PinocchioBackend(model)
        self.pin = self.pin_be._pin
        self.P = _pin_arrays(self.pin_be, self.states)
        self.pool = None
        if "pinocchio_parallel" in against:
            self.pool = self.pin.ModelPool(self.pin_be.pin_model, threads)
            self._check_parallel(seed, min(64, max(2, max(sizes))))
        self.pb_be = self.pb_lists = None
        if "pybullet" in against:
            from .backends.pybullet_backend import PybulletBackend

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.pb_be = PybulletBackend(model)
            result.notes += [f"{robot}: pybullet: {w.message}" for w in caught]
            self.pb_lists = _PybulletLists(self.pb_be, self.states)

    def _check_parallel(self, seed, count):
        check = check_pinocchio_parallel(self.model, count=count, seed=seed, threads=self.threads)
        for call in PIN_PARALLEL_CALLS.values():
            ok = check[call] <= PARALLEL_RTOL
            what = f"{call} vs the per-call loop" + (" (aba with Convention.WORLD)" if call == "abaInParallel" else "")
            self.result.checks.append({"robot": self.robot, "backend": "pinocchio_parallel", "what": what,
                                       "max_rel": check[call], "rtol": PARALLEL_RTOL, "ok": ok})
            if not ok:
                self.result.notes.append(f"{self.robot}: WARNING pinocchio {call} differs from its loop by "
                                         f"{check[call]:.2e}")

    def run(self):
        ops, sizes, against = self.opts["ops"], self.opts["sizes"], self.opts["against"]
        _warm_up(self.result, self.robot, self.ours, ops, self.states)
        _correctness(self.result, self.robot, self.ours, self.pin_be, ops, self.states)
        for op in ops:
            for N in sizes:
                for name, be in self.ours.items():
                    self.tick(f"{self.robot} {op} {name} N={N}")
                    self.time_ours(op, N, name, be)
                self.tick(f"{self.robot} {op} pinocchio N={N}")
                self.time_pin_loop(op, N)
                if "pinocchio_parallel" in against:
                    self.tick(f"{self.robot} {op} pinocchio_parallel N={N}")
                    self.time_pin_parallel(op, N, first=N == sizes[0])
                if "pybullet" in against:
                    self.tick(f"{self.robot} {op} pybullet N={N}")
                    self.time_pybullet(op, N, first=N == sizes[0])
                _ratios(self.result, self.robot, op, N)

    # -- one measurement ---------------------------------------------------------------

    def record(self, op, backend, call, N, timed, stmt, names):
        number, reps, first, requested = measure(stmt, names, timed, N, self.opts["repeat"], self.target,
                                                 self.budget)
        self.result.measurements.append(Measurement(
            robot=self.robot, op=op, backend=backend, call=call, N=N, timed_states=timed, number=number,
            repeats_us=reps, first_call_s=first, repeats_requested=requested))

    def unavailable(self, op, backend, reason):
        self.result.unavailable.append({"robot": self.robot, "op": op, "backend": backend, "reason": reason})

    def loop_states(self, N, statement) -> int:
        """States a per-call loop is timed on: all N, or a prefix (>= LOOP_MIN_STATES) when
        a full pass would take longer than ``loop_budget``; ``statement(S)`` -> (stmt, names)."""
        if N <= LOOP_MIN_STATES:
            return N
        count = min(N, 1000)
        timer = _timer(*statement(count))
        timer.timeit(1)
        per_state = min(timer.timeit(1) for _ in range(3)) / count
        if per_state * N <= self.loop_budget:
            return N
        return min(N, max(LOOP_MIN_STATES, int(self.loop_budget / per_state)))

    def time_ours(self, op, N, name, be):
        """The public API on the full batch; (n,) arrays for N = 1."""
        arrays = {f"x{i}": (getattr(self.states, a)[0] if N == 1 else getattr(self.states, a)[:N])
                  for i, a in enumerate(OP_ARGS[op])}
        self.record(op, name, f"be.{OUR_METHODS[op]}", N, N, _calls("f", list(arrays)),
                    {"f": getattr(be, OUR_METHODS[op]), **arrays})

    def time_pin_loop(self, op, N):
        """``pin.rnea(m, d, q, v, a)`` once (N = 1), or the loop over rows Q[k] of (N, nq) arrays."""
        argnames = OP_ARGS[op]
        base = {"f": getattr(self.pin, PIN_CALLS[op]), "m": self.pin_be.pin_model, "d": self.pin_be.data}
        if N == 1:
            names = {**base, **{f"x{i}": self.P[a][0] for i, a in enumerate(argnames)}}
            stmt = _calls("f", ["m", "d", *(f"x{i}" for i in range(len(argnames)))])
            self.record(op, "pinocchio", f"pin.{PIN_CALLS[op]}", 1, 1, stmt, names)
            return
        names = {**base, **{f"X{i}": self.P[a] for i, a in enumerate(argnames)}}
        call = _calls("f", ["m", "d", *(f"X{i}[k]" for i in range(len(argnames)))])

        def statement(S):
            return f"for k in range({S}): {call}", names
        S = self.loop_states(N, statement)
        self.record(op, "pinocchio", f"pin.{PIN_CALLS[op]} loop", N, S, *statement(S))

    def time_pin_parallel(self, op, N, first):
        """``pin.rneaInParallel(threads, pool, Q, V, A, out)``: column-major (nq, N) views."""
        if op not in PIN_PARALLEL_CALLS:
            if first:
                self.unavailable(op, "pinocchio_parallel", f"pinocchio has no parallel {PIN_CALLS[op]}")
            return
        cols = {f"X{i}": self.P[a][:N].T for i, a in enumerate(OP_ARGS[op])}  # F-contiguous, no copy
        names = {"f": getattr(self.pin, PIN_PARALLEL_CALLS[op]), "T": self.threads, "pool": self.pool, **cols,
                 "out": np.zeros((self.pin_be.pin_model.nv, N), order="F")}
        self.record(op, "pinocchio_parallel", f"pin.{PIN_PARALLEL_CALLS[op]} ({self.threads} threads)", N, N,
                    _calls("f", ["T", "pool", *cols, "out"]), names)

    def time_pybullet(self, op, N, first):
        """``p.calculateInverseDynamics(body, q, v, a)`` etc. on lists in pybullet's joint order."""
        if op not in PYBULLET_CALLS:
            if first:
                self.unavailable(op, "pybullet", "pybullet has no forward-dynamics call (stepping is not comparable)")
            return
        argnames = {"ID": ("q", "qd", "qdd"), "M": ("q",), "bias": ("q", "qd")}[op]
        extra = ["Z"] if op == "bias" else []  # bias: zero acceleration
        base = {"f": getattr(self.pb_be._p, PYBULLET_CALLS[op]), "body": self.pb_be.body, "cid": self.pb_be.client,
                "Z": [0.0] * self.model.n}
        call = f"p.{PYBULLET_CALLS[op]}" + (" (q̈ = 0)" if op == "bias" else "")
        if N == 1:
            names = {**base, **{f"x{i}": self.pb_lists.get(a, 1)[0] for i, a in enumerate(argnames)}}
            stmt = _calls("f", ["body", *(f"x{i}" for i in range(len(argnames))), *extra], "physicsClientId=cid")
            self.record(op, "pybullet", call, 1, 1, stmt, names)
            return
        loop_call = _calls("f", ["body", *(f"X{i}[k]" for i in range(len(argnames))), *extra], "physicsClientId=cid")

        def statement(S):
            return (f"for k in range({S}): {loop_call}",
                    {**base, **{f"X{i}": self.pb_lists.get(a, S) for i, a in enumerate(argnames)}})
        S = self.loop_states(N, statement)
        self.record(op, "pybullet", call + " loop", N, S, *statement(S))


def _ratios(result, robot, op, N) -> None:
    pin_loop = result.find(robot, op, "pinocchio", N)
    parallel = result.find(robot, op, "pinocchio_parallel", N)
    for m in result.measurements:
        if (m.robot, m.op, m.N) == (robot, op, N):
            m.ratio = m.median_us / pin_loop.median_us if pin_loop and pin_loop.median_us > 0 else None
            if parallel is not None and parallel.median_us > 0:
                m.ratio_parallel = m.median_us / parallel.median_us


# --------------------------------------------------------------------------- targets


def target_label(op: str, kind: str, limit: float) -> str:
    """A target in words, e.g. ``time ≤ 1× pinocchio rnea``."""
    if kind == "single":
        return f"time ≤ {limit:g}× pinocchio {PIN_CALLS[op]}"
    return f"speed-up ≥ {limit:g}× a pinocchio {PIN_CALLS[op]} loop"


def evaluate_targets(result: BenchResult) -> list:
    """The speed targets, for the PUMA-560 where measured at the sizes they judge
    (:data:`TARGET_SIZES`): one state, time ratio to pinocchio ≤ limit; 10⁵ states,
    throughput speed-up over the pinocchio loop ≥ limit; friction backends, time ≤ 1.5×
    their rigid counterpart's (the worse of the two sizes).  A target whose size was not
    measured is not judged."""
    if TARGET_ROBOT not in result.robots:
        return []
    ours = list(dict.fromkeys(m.backend for m in result.measurements
                              if m.robot == TARGET_ROBOT and m.backend not in REFERENCE_KINDS))
    rigid = [b for b in ours if not _is_friction(b) and not b.startswith("lagrange_euler")]
    friction = [b for b in ours if _is_friction(b) and b[: -len("_friction")] in ours]
    return ([t for b in rigid for t in _speed_targets(result, b)]
            + [t for b in friction for t in _friction_targets(result, b)])


def _target(backend, op, N, label, measure, value, relation, limit) -> dict:
    ok = value <= limit if relation == "<=" else value >= limit
    return {"robot": TARGET_ROBOT, "backend": backend, "target": label, "op": op, "N": N, "measure": measure,
            "value": value, "relation": relation, "limit": limit, "status": "PASS" if ok else "MISS"}


def _speed_targets(result, backend) -> list:
    out = []
    for op, kind, limit in TARGETS:
        N = TARGET_SIZES[kind]
        meas = result.find(TARGET_ROBOT, op, backend, N)
        if meas is None or not meas.ratio:
            continue
        if kind == "single":
            out.append(_target(backend, op, N, target_label(op, kind, limit), "time ratio", meas.ratio, "<=", limit))
        else:
            out.append(_target(backend, op, N, target_label(op, kind, limit), "speed-up", 1 / meas.ratio, ">=", limit))
    return out


def _friction_targets(result, backend) -> list:
    rigid = backend[: -len("_friction")]
    out = []
    for op in dict.fromkeys(m.op for m in result.measurements if (m.robot, m.backend) == (TARGET_ROBOT, backend)):
        ratios = []
        for N in TARGET_SIZES.values():
            a, b = result.find(TARGET_ROBOT, op, backend, N), result.find(TARGET_ROBOT, op, rigid, N)
            if a and b and b.median_us > 0:
                ratios.append((a.median_us / b.median_us, N))
        if ratios:
            worst, N = max(ratios)
            out.append(_target(backend, op, N, f"time ≤ {FRICTION_LIMIT:g}× {rigid}",
                               f"time ratio to {rigid} (worse size)", worst, "<=", FRICTION_LIMIT))
    return out


# --------------------------------------------------------------------------- output


def _fmt_us(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _fmt_ratio(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _row_order(result, robot, op) -> list:
    ours = [b for b in result.settings["backends"] if any(m.backend == b and m.robot == robot
                                                          for m in result.measurements)]
    return ours + [ref for ref in REFERENCE_KINDS if ref in result.settings["against"]]


def format_tables(result: BenchResult) -> list:
    """Rich renderables: one table per robot (rows op × backend, columns batch sizes),
    then the targets table when there are targets."""
    from rich.table import Table

    out = []
    sizes = result.settings["sizes"]
    for robot, n in result.robots.items():
        table = Table(title=f"{escape(robot)} ({n} joints): median µs per state, and its ratio to pinocchio's",
                      title_justify="left")
        table.add_column("op")
        table.add_column("backend")
        table.add_column("call")
        for N in sizes:
            table.add_column(f"N={N:,} µs", justify="right")
            table.add_column("ratio", justify="right")
        for op in result.settings["ops"]:
            rows = _row_order(result, robot, op)
            for j, backend in enumerate(rows):
                found = {m.N: m for m in result.measurements if (m.robot, m.op, m.backend) == (robot, op, backend)}
                if not found:
                    reason = next((u["reason"] for u in result.unavailable
                                   if (u["robot"], u["op"], u["backend"]) == (robot, op, backend)), None)
                    if reason is None:
                        continue
                    table.add_row(op if j == 0 else "", escape(backend), "[dim]none[/]",
                                  *(["[dim]—[/]"] * (2 * len(sizes))), end_section=j == len(rows) - 1)
                    continue
                call = next(iter(found.values())).call
                cells = []
                for N in sizes:
                    m = found.get(N)
                    if m is None:
                        cells += ["[dim]—[/]", ""]
                        continue
                    mark = ("†" if m.extrapolated else "") + ("‡" if m.cut_short else "")
                    ratio = "" if m.ratio is None else _fmt_ratio(m.ratio)
                    if backend == "pinocchio":
                        ratio = "[dim]1[/]"
                    elif m.ratio is not None:
                        ratio = f"[green]{ratio}[/]" if m.ratio < 1 else f"[yellow]{ratio}[/]"
                    cells += [_fmt_us(m.median_us) + mark, ratio]
                table.add_row(op if j == 0 else "", escape(backend), call.replace("pin.", "").replace("p.", ""), *cells,
                              end_section=j == len(rows) - 1)
        out.append(table)
    targets = result.targets()
    if targets:
        out.append(_targets_table(targets))
    return out


def _targets_table(targets: list):
    from rich.table import Table

    table = Table(title=f"speed targets for the {TARGET_ROBOT} (informative; with --check a missed target exits 1)",
                  title_justify="left")
    for column in ("backend", "op", "N", "target", "measured", "status"):
        table.add_column(column, justify="right" if column in ("N", "measured") else "left")
    for t in targets:
        status = "[green]met[/]" if t["status"] == "PASS" else "[bold red]missed[/]"
        table.add_row(escape(t["backend"]), t["op"], f"{t['N']:,}", t["target"], f"{_fmt_ratio(t['value'])}×", status)
    return table


def legend_lines(result: BenchResult) -> list:
    """What the tables' abbreviations, ratios and target rows mean, in plain words."""
    lines = ["op: " + "; ".join(f"{op} = {OP_DESCRIPTIONS[op]}" for op in result.settings["ops"]),
             "ratio: time ratio to the pinocchio per-call loop, i.e. the row's µs per state ÷ pinocchio's at the "
             "same operation and N; below 1 = faster than pinocchio (green), above 1 = slower (yellow); "
             "speed-up = 1 ÷ ratio"]
    if TARGET_ROBOT not in result.robots:
        return lines
    lines.append(f"speed targets ({TARGET_ROBOT} only) judge two sizes: one state (N = 1: time ratio ≤ the "
                 f"limit) and a batch of {TARGET_BATCH:,} states (speed-up ≥ the limit); friction backends: "
                 f"time ≤ {FRICTION_LIMIT:g}× their frictionless counterpart's at those sizes (the worse one "
                 "shown); other sizes are measured, not judged")
    if TARGET_BATCH not in result.settings["sizes"]:
        lines.append(f"this run has no N = {TARGET_BATCH:,}: batch targets not judged (add it with --sizes)")
    return lines


def _footnotes(result: BenchResult) -> list:
    lines = legend_lines(result)
    extrapolated = [m for m in result.measurements if m.extrapolated]
    if extrapolated:
        least = min(m.timed_states for m in extrapolated)
        lines.append(f"† per-call loop timed on the first {least:,}+ states of N (its time per state does not "
                     "depend on N; JSON: timed_states)")
    if any(m.cut_short for m in result.measurements):
        budget = result.settings["budget_s"]
        lines.append(f"‡ fewer repeats than the default: the measurement reached its {budget:g} s budget "
                     "(JSON: repeats_us)")
    reps = sorted({len(m.repeats_us) for m in result.measurements})
    if reps:
        count = str(reps[0]) if reps[0] == reps[-1] else f"{reps[0]}–{reps[-1]}"
        lines.append(f"median of {count} repeats, each ≥ {result.settings['target_s'] * 1e3:g} ms "
                     "(timeit-style, after an untimed warm-up call); ratios are of medians")
    return lines


def environment_line(env: dict) -> str:
    v = env["versions"]
    parts = [f"dyn_plugin {v['dyn_plugin']}", f"Python {v['python']}"]
    parts += [f"{k} {v[k]}" for k in ("numpy", "numba", "pin", "pybullet") if v.get(k)]
    threads = f"numba threads {env['numba_threads']}, " if env.get("numba_threads") else ""
    return (", ".join(parts) + f"; CPU {env['cpu']} ({env['usable_cores']} of {env['cores']} cores usable; "
            f"{threads}pinocchio parallel threads {env['pinocchio_parallel_threads']}); {env['date']}"
            + (f"; load average {env['load_average']['before'][0]:g} before, {env['load_average']['after'][0]:g} "
               "after" if env.get("load_average") and env["load_average"]["before"] else ""))


def print_report(result: BenchResult, console) -> None:
    """Environment, one table per robot, footnotes, targets, checks that failed, notes, wall time."""
    console.print(f"[dim]{environment_line(result.environment)}[/]")
    for renderable in format_tables(result):
        console.print(renderable)
    for line in _footnotes(result):
        console.print(f"[dim]{line}[/]")
    for u in dict.fromkeys((u["backend"], u["reason"]) for u in result.unavailable):
        console.print(f"[dim]— {u[0]}: {u[1]}[/]")
    warm = [w for w in result.warmups if w["seconds"] > 0.5]
    for w in warm:
        console.print(f"[dim]warm-up (JIT compile, first calls; untimed) of {w['backend']} on {w['robot']}: "
                      f"{w['seconds']:.1f} s[/]")
    failed = [c for c in result.checks if not c["ok"]]
    checked = len(result.checks)
    if checked:
        console.print(f"correctness checks (untimed): {checked - len(failed)} of {checked} passed")
    for c in failed:
        console.print(f"[bold red]check failed[/] {escape(c['robot'])} {escape(c['backend'])}: {escape(c['what'])}: "
                      f"{c['max_rel']:.2e}")
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")
    console.print(f"measurements took {result.seconds:.1f} s")


def write_json(result: BenchResult, path) -> None:
    """Every figure and the environment as JSON; ``path`` '-' writes to stdout."""
    text = json.dumps(result.as_dict(), indent=2, allow_nan=False)
    if str(path) == "-":
        print(text)
    else:
        Path(path).write_text(text + "\n")


def plot_scaling(result: BenchResult, path, robot: Optional[str] = None) -> Path:
    """Log-log µs per state against batch size N, one panel per operation, one line per
    backend, for ``robot`` (default: the first).  Hollow markers: loop timed on a prefix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    robot = robot or next(iter(result.robots), None)
    if robot not in result.robots:
        raise InputError(f"no results for robot {robot!r}; measured: {', '.join(result.robots)}")
    ops = [op for op in result.settings["ops"] if any(m.robot == robot and m.op == op for m in result.measurements)]
    cols = 2 if len(ops) > 1 else 1
    rows = int(math.ceil(len(ops) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(6.0 * cols, 4.2 * rows), squeeze=False)
    backends = list(dict.fromkeys(m.backend for m in result.measurements if m.robot == robot))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"] * 3
    colours = dict(zip([b for b in backends if b != "pinocchio"], cycle))
    colours["pinocchio"] = "black"  # the reference of every ratio
    for ax, op in zip(axes.flat, ops):
        for backend in backends:
            ms = sorted((m for m in result.measurements if (m.robot, m.op, m.backend) == (robot, op, backend)),
                        key=lambda m: m.N)
            if not ms:
                continue
            call = ms[-1].call
            ax.plot([m.N for m in ms], [m.median_us for m in ms], "--" if backend == "pinocchio" else "-",
                    color=colours[backend], label=f"{backend}: {call}")
            for m in ms:
                ax.plot(m.N, m.median_us, "o", color=colours[backend],
                        markerfacecolor="none" if m.extrapolated else colours[backend])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{op}: {OP_DESCRIPTIONS[op]}", fontsize=9)
        ax.set_xlabel("batch size N (states per call)")
        ax.set_ylabel("µs per state (median)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(ops):]:
        ax.axis("off")
    env = result.environment
    hollow = any(m.extrapolated for m in result.measurements if m.robot == robot)
    fig.suptitle(f"{robot}: time per state vs batch size — {env['cpu']}, {env['date'][:10]}"
                 + ("\n(hollow markers: per-call loop timed on a prefix of the N states)" if hollow else ""),
                 fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- CLI


def _size(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a batch size: {text!r}") from None
    if not value.is_integer() or value < 1:
        raise argparse.ArgumentTypeError(f"batch sizes are whole numbers >= 1, got {text!r}")
    return int(value)


def _repeat(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``dyn-plugin bench``."""
    parser.description = ("Median µs per state of our backends, pinocchio (per-call loop and parallel batch "
                          "functions) and pybullet, at several batch sizes; ratios to the pinocchio loop.")
    parser.add_argument("--robot", nargs="+", metavar="NAME_OR_URDF", help="robots (default: every bundled one)")
    parser.add_argument("--backend", nargs="+", metavar="NAME",
                        help="our backends (default: newton_euler symbolic_numba newton_euler_friction; also lagrange_euler, "
                             "lagrange_euler_friction, symbolic when registered)")
    parser.add_argument("--against", nargs="+", metavar="REF", choices=REFERENCE_KINDS,
                        help="references: pinocchio pinocchio_parallel pybullet (default: all; the pinocchio loop is "
                             "always timed, every ratio is against it)")
    parser.add_argument("--op", nargs="+", choices=OPS, metavar="OP", help="operations: ID FD M bias (default: all)")
    parser.add_argument("--sizes", nargs="+", type=_size, metavar="N",
                        help="batch sizes (default: 1 100 10000 100000; 1e5 works)")
    parser.add_argument("--repeat", type=_repeat,
                        help="repeats per measurement (default: 9 for N <= 100, else 5, within 2 s)")
    parser.add_argument("--threads", type=_repeat, metavar="T",
                        help="threads of pinocchio's parallel functions (default: the usable cores)")
    parser.add_argument("--seed", type=int, default=0, help="random states' seed (default 0)")
    parser.add_argument("--quick", action="store_true", help="a smoke test: sizes 1 100, 3 repeats of >= 5 ms")
    parser.add_argument("--json", metavar="FILE", help="write every figure and the environment as JSON ('-': stdout)")
    parser.add_argument("--plot", metavar="FILE.png", help="log-log plot of µs per state vs N (first robot)")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when a speed target is missed ({TARGET_ROBOT}: one state and "
                             f"{TARGET_BATCH:,} states)")


def run(args: argparse.Namespace, console=None) -> int:
    """``dyn-plugin bench``: run, print, write; returns the exit code (0, or 1 for a missed
    target with ``--check``).  Bad input raises DynPluginError (cli.main: exit code 2)."""
    from rich.console import Console

    start = time.perf_counter()
    console = console or Console()
    quiet = args.json == "-"
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else None)
    target = 0.005 if args.quick else TARGET
    resolve(args.robot, args.backend, args.op, sizes, args.against, repeat)  # fail before any timing

    err = Console(stderr=True)
    kwargs = dict(robots=args.robot, backends=args.backend, ops=args.op, sizes=sizes, against=args.against,
                  repeat=repeat, seed=args.seed, threads=args.threads, target=target)
    if err.is_terminal:
        from rich.progress import Progress

        with Progress(console=err, transient=True) as bar:
            task = bar.add_task("bench", total=None)
            result = run_bench(**kwargs, progress=lambda label, done, total: bar.update(
                task, completed=done, total=total, description=label))
    else:  # logs: one line per robot and operation
        seen = set()

        def lines(label, done, total):
            key = tuple(label.split()[:2])
            if key not in seen:
                seen.add(key)
                print(f"bench: {key[0]} {key[1]} ({done}/{total} measurements done)", file=sys.stderr, flush=True)
        result = run_bench(**kwargs, progress=lines)

    if args.json:
        write_json(result, args.json)
    written = plot_scaling(result, args.plot) if args.plot else None
    targets = result.targets()
    if not quiet:
        print_report(result, console)
        if written:
            console.print(f"wrote {written}")
        if args.json:
            console.print(f"wrote {args.json}")
        if args.check and not targets:
            console.print(f"[yellow]note:[/] --check: no target measured (the targets are for {TARGET_ROBOT} at "
                          f"N = 1 and {TARGET_BATCH:,})")
        console.print(f"total wall time {time.perf_counter() - start:.1f} s")
    return exit_code(targets, args.check)


def exit_code(targets: list, check: bool) -> int:
    """1 when ``check`` and a target is missed, else 0 (a miss alone is informative)."""
    return 1 if check and any(t["status"] == "MISS" for t in targets) else 0

