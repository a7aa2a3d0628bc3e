"""The timed run: check every option, measure the machine's peak flop rate, prepare each
robot's inputs outside the timed regions, warm up, check ours against pinocchio (untimed),
then time every op × backend × N (× number of workers for the batch calls that use them)
and divide by pinocchio's per-call loop at the same op and N."""

from __future__ import annotations

import functools

import time
import warnings
from typing import Callable, Optional, Sequence

import numpy as np

from ...errors import BackendError, DynPluginError, InputError, argument
from ...loops import available_cores, check_workers, using_workers
from ...loops import workers as current_workers
from ..machine import OthersClock, environment, load_average, usable_cores
from ..validate import relative_errors
from .operations import (DEFAULT_BACKENDS, DEFAULT_SIZES, OP_ARGS, OPS, OUR_METHODS, PIN_CALLS, PIN_PARALLEL_CALLS,
                         PYBULLET_CALLS, REFERENCE_KINDS)
from .limits import operation_flops
from .peak import best_peak, measure_peak
from .results import BenchResult, Measurement
from .timing import (BUDGET, LOOP_BUDGET, LOOP_MIN_STATES, SMALL_N, TARGET, _calls, _timer, measure,
                     measure_side_by_side)

__all__ = ["CHECK_RTOL", "CHECK_STATES", "PARALLEL_RTOL", "check_pinocchio_parallel", "resolve", "resolve_workers",
           "run_bench"]

GENERATED_DEFAULT_NV = 30   # by default the generated backends are timed up to this many velocities: numba
                            # compiles talos's (nv 50, a 2.3 MB module) for over ten minutes on a 2-core machine
CHECK_STATES = 16      # states of the correctness checks
CHECK_RTOL = 1e-8      # ours vs pinocchio, |diff| / max(1, |ref|)
OTHERS_BUSY = 0.1     # cores kept busy by other processes, on average, above which the report says so
PARALLEL_RTOL = 1e-12  # pinocchio's parallel functions vs its loop


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
    """The largest of the validation's error measure, ``relative_errors(a, b)`` (0 when empty);
    tuples (derivatives) part by part."""
    if isinstance(a, tuple):
        return max(_rel(x, y) for x, y in zip(a, b))
    rel = relative_errors(a, b)
    return float(rel.max()) if rel.size else 0.0


def _first(x):
    """The first state of a result (of each part of a tuple)."""
    return tuple(part[0] for part in x) if isinstance(x, tuple) else x[0]


def check_pinocchio_parallel(model, count: int = 64, seed: int = 0, threads: Optional[int] = None) -> dict:
    """pinocchio's parallel batch functions against its per-call loop on ``count`` random
    states: ``{"rneaInParallel": max rel err vs rnea, "abaInParallel": vs aba(..., WORLD),
    "abaInParallel_vs_aba_local": vs the default aba}``.  The first two are exactly 0 in
    pin 4.1; the last is roundoff (≈1e-13)."""
    from ...backends.pinocchio_backend import PinocchioBackend
    from ...sampling import random_states

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


def resolve_workers(workers=None) -> list:
    """The numbers of workers to measure, ascending and distinct: ``workers``, or the
    current setting (:func:`dyn_plugin.loops.workers`: every usable core unless
    ``DYN_PLUGIN_WORKERS`` says fewer).  InputError for one below 1 or above the usable
    cores (our loops never use more)."""
    if workers is None:
        return [current_workers()]
    if isinstance(workers, int):
        workers = [workers]
    counts = sorted(set(check_workers(k, argument("workers")) for k in workers))
    if not counts:
        raise InputError(f"{argument('workers')} needs at least one number")
    cores = available_cores()
    if counts[-1] > cores:
        raise InputError(f"{argument('workers')} {counts[-1]}: this process may use {cores} core{'s' if cores > 1 else ''} "
                         f"(choose from 1 to {cores})")
    return counts


def resolve(robots=None, backends=None, ops=None, sizes=None, against=None, repeat=None, workers=None,
            lock=None) -> dict:
    """Check every option before any timing; raises InputError / BackendError /
    UnknownRobotError with a message naming what is valid.  ``lock``: joints held fixed in
    every robot (:func:`~dyn_plugin.robots.load_robot`'s)."""
    from ...backends.registry import backends as registered_backends
    from .robots import LEGGED, bench_robots, load_bench_robot

    robots = list(robots) if robots else bench_robots()
    models = {}
    for robot in robots:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = load_bench_robot(robot, lock=lock)
        if model.nv == 0:
            raise InputError(f"robot {robot!s}: {model.name!r} has no moving joint (only fixed joints) and a fixed "
                             "base: there is nothing to time")
        named = model.name and model.name not in models and str(robot) not in LEGGED
        key = model.name if named else str(robot)
        models[key] = (model, [str(w.message) for w in caught])
    ops = list(dict.fromkeys(ops)) if ops else list(OPS)
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        raise InputError(f"unknown operation {unknown[0]!r}; operations: {', '.join(OPS)}")
    sizes = sorted(set(int(s) for s in (sizes or DEFAULT_SIZES)))
    if any(s < 1 for s in sizes):
        raise InputError(f"{argument('sizes')} must be at least 1, got {min(sizes)}")
    against = list(dict.fromkeys(against)) if against is not None else list(REFERENCE_KINDS)
    for ref in against:
        if ref not in REFERENCE_KINDS:
            raise InputError(f"unknown reference {ref!r}; references: {', '.join(REFERENCE_KINDS)}")
    if "pinocchio" not in against:  # every ratio is against it
        against.insert(0, "pinocchio")
    ours_available = registered_backends(("ours", "generated"))
    ours = list(backends) if backends else list(DEFAULT_BACKENDS)
    for name in ours:
        if name in REFERENCE_KINDS:
            raise InputError(f"{name!r} is a reference, not one of our backends: choose references with "
                             f"{argument('against')} ({', '.join(REFERENCE_KINDS)}); the pinocchio loop is always timed")
        if name not in ours_available:
            raise BackendError(f"unknown backend {name!r}; available: {', '.join(ours_available)}")
    if repeat is not None and repeat < 1:
        raise InputError(f"{argument('repeat')} must be at least 1, got {repeat}")
    return {"models": models, "ops": ops, "sizes": sizes, "against": against,
            "backends": list(dict.fromkeys(ours)), "chosen_backends": bool(backends), "repeat": repeat,
            "workers": resolve_workers(workers)}


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
              loop_budget: float = LOOP_BUDGET, workers: Optional[Sequence[int]] = None, peak: bool = True,
              progress: Optional[Callable[[str, int, int], None]] = None, lock=None) -> BenchResult:
    """Time every robot × op × backend × size; see :mod:`dyn_plugin.tools.bench`.

    ``robots``: names or URDF paths (default: the bundled ones); ``backends``: ours
    (default ``newton_euler``, ``symbolic_numba``, ``newton_euler_friction``); ``against``: references among ``pinocchio``,
    ``pinocchio_parallel``, ``pybullet`` (default all; the pinocchio loop is always timed);
    ``repeat``: repeats per measurement (default 9 for N ≤ 100, else 5, within
    ``budget`` s); ``workers``: the numbers of cores our parallel batch loops are timed
    with, each in turn (default: the current setting, every usable core; single states
    are timed once); ``threads``: pinocchio's parallel functions' threads, one fixed number
    (default: each number of ``workers``, so that a sweep runs both alike);
    ``target``: seconds per repeat at least; ``peak``: measure the machine's peak flop rate
    (:mod:`.peak`, for the physical limit); ``progress(label, done, total)`` before each
    measurement; ``lock``: joints held fixed in every robot, {name: rad or m}.
    """
    start = time.perf_counter()
    opts = resolve(robots, backends, ops, sizes, against, repeat, workers, lock)
    if threads is not None and threads < 1:
        raise InputError(f"{argument('threads')} must be at least 1, got {threads}")
    opts["threads"] = [threads] if threads else list(opts["workers"])
    load_before, others = load_average(), OthersClock()
    result = BenchResult(
        settings={"robots": list(opts["models"]), "lock": lock, "backends": opts["backends"], "ops": opts["ops"],
                  "sizes": opts["sizes"], "against": opts["against"], "repeat": repeat, "seed": seed,
                  "target_s": target, "budget_s": budget, "loop_budget_s": loop_budget,
                  "loop_min_states": LOOP_MIN_STATES,
                  "repeat_default": f"9 for N <= {SMALL_N}, else 5; stopped once a measurement used budget_s",
                  "workers": opts["workers"], "pinocchio_threads": opts["threads"],
                  "workers_meaning": "cores of our parallel batch loops (dyn_plugin.using_workers) and threads of "
                                     "pinocchio's parallel functions; single states and per-call loops are serial "
                                     "and timed once (workers null)",
                  "pinocchio_loop": "for k in range(N): pin.rnea(model, data, Q[k], V[k], A[k])  (Q row-major (N, nq))",
                  "pinocchio_parallel": "pin.rneaInParallel(threads, ModelPool, Q.T, V.T, A.T, out) with "
                                        "column-major (nq, N) arrays, out preallocated",
                  "ratio": "time per state / pinocchio per-call loop's time per state, same robot, op and N "
                           "(< 1 = faster); speed-up = 1 / ratio"},
        environment=environment(max(opts["threads"])), measurements=[], unavailable=[], checks=[], warmups=[],
        notes=[], robots={})
    result.environment["dyn_plugin_cores"] = available_cores()
    peak_cores = sorted({1, available_cores(), *opts["workers"]})
    before = measure_peak(peak_cores, target=min(target, 0.02)) if peak else None
    batches = [N for N in opts["sizes"] if N > 1]
    per_op = len(opts["backends"]) + len(opts["against"]) if 1 in opts["sizes"] else 0
    per_op += len(batches) * (len(opts["backends"]) + len(opts["against"])
                              + (len(opts["threads"]) - 1) * ("pinocchio_parallel" in opts["against"]))
    total, done = per_op * len(opts["ops"]) * len(opts["models"]), [0]

    def tick(label):
        if progress:
            progress(label, done[0], total)
        done[0] += 1

    for robot, (model, load_notes) in opts["models"].items():
        result.robots[robot] = model.n
        result.notes += [f"{robot}: {note}" for note in load_notes]
        _RobotBench(result, robot, model, opts, seed, target, budget, loop_budget, tick).run()
    if peak:  # measured before and after the timings: the best of both (others' load only ever lowers it)
        result.environment["peak_flops"] = best_peak(before, measure_peak(peak_cores, target=min(target, 0.02)))
    result.seconds = time.perf_counter() - start
    result.environment["load_average"] = {"before": load_before, "after": load_average()}
    busy = others.cores_busy()
    result.environment["others_busy_cores"] = busy
    if busy is not None and busy > OTHERS_BUSY:
        result.notes.append(f"other processes kept {busy:.2f} of the {usable_cores()} usable cores busy on average "
                            "while this ran: they disturb timings, multi-threaded ones most")
    return result


def _build_ours(result, robot, model, names, chosen: bool = True) -> dict:
    """Our backends ``names`` (registered: :func:`resolve` checked) for ``model``; one that
    cannot be built for it is skipped with a note, and so is a generated one on a model of
    more than GENERATED_DEFAULT_NV velocities unless the backends were ``chosen`` (``--backend``)."""
    from ...backends.registry import backend_class, get_backend

    built = {}
    for name in names:
        if not chosen and getattr(backend_class(name), "kind", "") == "generated" and model.nv > GENERATED_DEFAULT_NV:
            result.notes.append(f"{robot}: {name} skipped by default (nv {model.nv} > {GENERATED_DEFAULT_NV}: numba "
                                "compiles generated code of this size for many minutes, once); time it with "
                                f"--backend {name}")
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
        if type(be).can("friction"):
            continue  # friction is part of these dynamics: not pinocchio's (validate checks them by stepping)
        for op in ops:
            args = [getattr(states, a)[:k] for a in OP_ARGS[op]]
            fn = getattr(be, OUR_METHODS[op])
            err = max(_rel(fn(*args), reference[op]), _rel(fn(*(a[0] for a in args)), _first(reference[op])))
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

    def __init__(self, result, robot, model, opts, seed, target, budget, loop_budget, tick):
        from ...backends.pinocchio_backend import PinocchioBackend
        from ...sampling import random_states

        self.result, self.robot, self.model, self.opts = result, robot, model, opts
        self.threads = max(opts["threads"])  # pinocchio's parallel functions at N = 1, and its checks
        self.target, self.budget, self.loop_budget, self.tick = target, budget, loop_budget, tick
        against, sizes = opts["against"], opts["sizes"]
        self.states = random_states(model, max(max(sizes), 2), seed=seed)
        self.ours = _build_ours(result, robot, model, opts["backends"], chosen=opts.get("chosen_backends", True))
        for name, be in self.ours.items():
            for op, entry in operation_flops(be).items():
                if op in opts["ops"]:
                    result.flops.append({"robot": robot, "backend": name, "op": op, **entry})
        self.pin_be = PinocchioBackend(model)
        self.pin = self.pin_be._pin
        self.P = _pin_arrays(self.pin_be, self.states)
        self.pool = None
        if "pinocchio_parallel" in against:
            self.pool = self.pin.ModelPool(self.pin_be.pin_model, self.threads)
            self._check_parallel(seed, min(64, max(2, max(sizes))))
        self.pb_be = self.pb_lists = None
        self.pb_missing = None          # why pybullet is not timed on this robot
        if "pybullet" in against:
            self._pybullet(model)

    def _pybullet(self, model) -> None:
        """pybullet's body of ``model`` for its raw calls, or the reason it is not timed: a
        floating base (pybullet's calls take the base in their own coordinates, and its
        gravity there is wrong away from rotations about one axis: the module docstring of
        :mod:`dyn_plugin.backends.pybullet_backend`), or a model pybullet cannot take."""
        from ...backends.pybullet_backend import PybulletBackend

        if model.floating_base:
            self.pb_missing = ("a floating base: pybullet's calls take it in their own coordinates and get its "
                               "gravity wrong away from rotations about one axis (dyn_plugin/backends/pybullet_backend.py)")
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                self.pb_be = PybulletBackend(model)
            except DynPluginError as exc:
                self.pb_missing = f"pybullet cannot take this model: {exc}"
                return
        self.result.notes += [f"{self.robot}: pybullet: {w.message}" for w in caught]
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
                if N == 1:   # one state: ours and pinocchio's call side by side (serial: no workers)
                    for name in [*self.ours, "pinocchio"]:
                        self.tick(f"{self.robot} {op} {name} N=1")
                    self.side_by_side(op, 1, [run for name, be in self.ours.items()
                                              for run in self.our_runs(op, 1, name, be, [None])]
                                      + [self.pin_single_run(op)])
                else:        # a batch: each of ours on every number of workers side by side, then pinocchio's loop
                    for name, be in self.ours.items():
                        self.tick(f"{self.robot} {op} {name} N={N} workers={self.opts['workers']}")
                        self.side_by_side(op, N, self.our_runs(op, N, name, be, self.opts["workers"]))
                    self.tick(f"{self.robot} {op} pinocchio N={N}")
                    self.time_pin_loop(op, N)
                if "pinocchio_parallel" in against:
                    for threads in ([self.threads] if N == 1 else self.opts["threads"]):
                        self.tick(f"{self.robot} {op} pinocchio_parallel N={N} threads={threads}")
                        self.time_pin_parallel(op, N, first=N == sizes[0], threads=threads)
                if "pybullet" in against:
                    self.tick(f"{self.robot} {op} pybullet N={N}")
                    self.time_pybullet(op, N, first=N == sizes[0])
                _ratios(self.result, self.robot, op, N)

    # -- one measurement ---------------------------------------------------------------

    def record(self, op, backend, call, N, timed, stmt, names, workers=None):
        self._append(op, backend, call, N, timed, workers,
                     measure(stmt, names, timed, N, self.opts["repeat"], self.target, self.budget))

    def _append(self, op, backend, call, N, timed, workers, measured):
        number, reps, first, requested = measured
        self.result.measurements.append(Measurement(
            robot=self.robot, op=op, backend=backend, call=call, N=N, timed_states=timed, number=number,
            repeats_us=reps, first_call_s=first, repeats_requested=requested, workers=workers))

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

    def side_by_side(self, op, N, runs):
        """Time ``runs`` ``(backend, call, workers, stmt, names)`` on all N states with their
        repeats interleaved (:func:`.timing.measure_side_by_side`), so that a ratio between
        them -- a parallel efficiency, a time against pinocchio's -- compares like with like."""
        measured = measure_side_by_side([(stmt, names, functools.partial(using_workers, workers))
                                         for _, _, workers, stmt, names in runs],
                                        N, N, self.opts["repeat"], self.target, self.budget)
        for (backend, call, workers, _, _), result in zip(runs, measured):
            self._append(op, backend, call, N, N, workers, result)

    def our_runs(self, op, N, name, be, sweep) -> list:
        """The public API on the full batch, its parallel loops on each number of cores of
        ``sweep`` (``dyn_plugin.using_workers``; None: the current setting); (n,) arrays for
        N = 1."""
        arrays = {f"x{i}": (getattr(self.states, a)[0] if N == 1 else getattr(self.states, a)[:N])
                  for i, a in enumerate(OP_ARGS[op])}
        stmt, names = _calls("f", list(arrays)), {"f": getattr(be, OUR_METHODS[op]), **arrays}
        return [(name, f"be.{OUR_METHODS[op]}", workers, stmt, names) for workers in sweep]

    def pin_single_run(self, op):
        """``pin.rnea(m, d, q, v, a)`` once."""
        argnames = OP_ARGS[op]
        names = {"f": getattr(self.pin, PIN_CALLS[op]), "m": self.pin_be.pin_model, "d": self.pin_be.data,
                 **{f"x{i}": self.P[a][0] for i, a in enumerate(argnames)}}
        stmt = _calls("f", ["m", "d", *(f"x{i}" for i in range(len(argnames)))])
        return "pinocchio", f"pin.{PIN_CALLS[op]}", None, stmt, names

    def time_pin_loop(self, op, N):
        """``pin.rnea(m, d, Q[k], V[k], A[k])`` in a loop over rows of (N, nq) arrays."""
        argnames = OP_ARGS[op]
        names = {"f": getattr(self.pin, PIN_CALLS[op]), "m": self.pin_be.pin_model, "d": self.pin_be.data,
                 **{f"X{i}": self.P[a] for i, a in enumerate(argnames)}}
        call = _calls("f", ["m", "d", *(f"X{i}[k]" for i in range(len(argnames)))])

        def statement(S):
            return f"for k in range({S}): {call}", names
        S = self.loop_states(N, statement)
        self.record(op, "pinocchio", f"pin.{PIN_CALLS[op]} loop", N, S, *statement(S))

    def time_pin_parallel(self, op, N, first, threads):
        """``pin.rneaInParallel(threads, pool, Q, V, A, out)``: column-major (nq, N) views."""
        if op not in PIN_PARALLEL_CALLS:
            if first and threads == self.threads:
                self.unavailable(op, "pinocchio_parallel", f"pinocchio has no parallel {PIN_CALLS[op]}")
            return
        cols = {f"X{i}": self.P[a][:N].T for i, a in enumerate(OP_ARGS[op])}  # F-contiguous, no copy
        names = {"f": getattr(self.pin, PIN_PARALLEL_CALLS[op]), "T": threads, "pool": self.pool, **cols,
                 "out": np.zeros((self.pin_be.pin_model.nv, N), order="F")}
        self.record(op, "pinocchio_parallel", f"pin.{PIN_PARALLEL_CALLS[op]}", N, N,
                    _calls("f", ["T", "pool", *cols, "out"]), names, workers=threads)

    def time_pybullet(self, op, N, first):
        """``p.calculateInverseDynamics(body, q, v, a)`` etc. on lists in pybullet's joint order."""
        if self.pb_be is None:
            if first:
                self.unavailable(op, "pybullet", self.pb_missing)
            return
        if op not in PYBULLET_CALLS:
            if first:
                self.unavailable(op, "pybullet", "pybullet has no call for it" + (" (stepping is not comparable)"
                                                                                  if op == "FD" else ""))
            return
        argnames = OP_ARGS[op]
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
    """Each measurement of ``robot`` × ``op`` × ``N`` over pinocchio's loop, and over its
    parallel functions with as many threads as the measurement's workers (else the most
    threads measured)."""
    pin_loop = result.find(robot, op, "pinocchio", N)
    for m in result.measurements:
        if (m.robot, m.op, m.N) == (robot, op, N):
            m.ratio = m.median_us / pin_loop.median_us if pin_loop and pin_loop.median_us > 0 else None
            parallel = (result.find(robot, op, "pinocchio_parallel", N, m.workers)
                        or result.find(robot, op, "pinocchio_parallel", N))  # a fixed --threads
            if parallel is not None and parallel.median_us > 0:
                m.ratio_parallel = m.median_us / parallel.median_us

