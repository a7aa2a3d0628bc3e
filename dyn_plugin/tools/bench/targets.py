"""The speed targets, judged for the PUMA-560 at one state and at 10⁵ states only: our
time per state against pinocchio's, each friction backend's against its frictionless
counterpart's, and for the generated backend (:data:`GENERATED_BACKEND`) at 10⁵ states on
all cores its time per state, its throughput against pinocchio's parallel functions and
its parallel efficiency from 1 to 2 workers.  Informative, unless ``dyn-plugin bench
--check`` makes a miss exit 1.  Judged on a :class:`.results.BenchResult`, which lists
them in its ``--json`` document (so this module does not import it: imports point down).

Batch figures are read at the largest number of workers measured (``--workers``); the
all-cores targets are judged only when that is every core our loops may use."""

from __future__ import annotations

from ...backends.registry import backend_class
from ...backends.registry import backends as registered_backends
from .operations import PIN_CALLS, REFERENCE_KINDS

__all__ = ["BACKEND_TARGETS", "BATCH_TIME_TARGETS", "EFFICIENCY_TARGET", "FRICTION_LIMIT", "FRICTION_OPS", "GENERATED_BACKEND",
           "PARALLEL_SPEEDUP_TARGETS",
           "TARGETS", "TARGET_BATCH", "TARGET_ROBOT", "TARGET_SIZES", "all_cores_measured", "evaluate_targets",
           "target_label"]

TARGET_ROBOT = "puma560"
TARGET_BATCH = 100_000
# The sizes the speed targets judge: one state, and a batch of TARGET_BATCH states.  Other
# sizes are measured and shown but never judged.
TARGET_SIZES = {"single": 1, "batch": TARGET_BATCH}
FRICTION_LIMIT = 1.5
FRICTION_OPS = ("ID", "FD", "M", "bias")
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
    ("dID", "single", 2.0),      # issue #15: within 2× of pinocchio's derivatives for one state,
    ("dID", "batch", 1.0),       # ahead of them in a batch
    ("dFD", "single", 2.0),
    ("dFD", "batch", 1.0),
)
# Tighter limits for one backend (issue #16: the generic recursion, one state, ≤ 0.8× pinocchio's time):
BACKEND_TARGETS = {("newton_euler", "ID", "single"): 0.8, ("newton_euler", "FD", "single"): 0.8}
# The generated backend at TARGET_BATCH states on all cores:
GENERATED_BACKEND = "symbolic_numba"
BATCH_TIME_TARGETS = (("ID", 50.0), ("FD", 150.0), ("M", 40.0))     # ns per state at most
PARALLEL_SPEEDUP_TARGETS = (("ID", 12.0), ("FD", 12.0))             # throughput ≥ limit × pinocchio_parallel's
EFFICIENCY_TARGET = 0.85   # t(1 worker) / (2 · t(2 workers)) at least, each op (when 1 and 2 were measured)


def _rigid_counterpart(name: str):
    """The frictionless backend that friction backend ``name`` wraps by default: its class's
    ``default_rigid`` (``newton_euler`` for ``newton_euler_friction``), else None."""
    return getattr(backend_class(name), "default_rigid", None)


def target_label(op: str, kind: str, limit: float) -> str:
    """A target in words, e.g. ``time ≤ 1× pinocchio rnea``."""
    if kind == "single":
        return f"time ≤ {limit:g}× pinocchio {PIN_CALLS[op]}"
    return f"speed-up ≥ {limit:g}× a pinocchio {PIN_CALLS[op]} loop"


def all_cores_measured(result) -> bool:
    """Whether the largest number of workers measured is every core our loops may use
    (True when the result does not say: a run before ``--workers``)."""
    main, cores = result.main_workers, result.environment.get("dyn_plugin_cores")
    return main is None or cores is None or main >= cores


def evaluate_targets(result) -> list:
    """The speed targets, for the PUMA-560 where measured at the sizes they judge
    (:data:`TARGET_SIZES`): one state, time ratio to pinocchio ≤ limit; 10⁵ states,
    throughput speed-up over the pinocchio loop ≥ limit; friction backends, time ≤ 1.5×
    their rigid counterpart's (the worse of the two sizes).  A target whose size was not
    measured is not judged."""
    if TARGET_ROBOT not in result.robots:
        return []
    ours = list(dict.fromkeys(m.backend for m in result.measurements
                              if m.robot == TARGET_ROBOT and m.backend not in REFERENCE_KINDS))
    with_friction = registered_backends(can=("friction",))
    rigid = [b for b in ours if b not in with_friction and not b.startswith("lagrange_euler")]
    friction = [b for b in ours if b in with_friction and _rigid_counterpart(b) in ours]
    return ([t for b in rigid for t in _speed_targets(result, b)]
            + [t for b in friction for t in _friction_targets(result, b)]
            + (_generated_targets(result) if GENERATED_BACKEND in ours else []))


def _target(backend, op, N, label, measure, value, relation, limit, unit="×", workers=None) -> dict:
    ok = value <= limit if relation == "<=" else value >= limit
    return {"robot": TARGET_ROBOT, "backend": backend, "target": label, "op": op, "N": N, "measure": measure,
            "value": value, "relation": relation, "limit": limit, "unit": unit, "workers": workers,
            "status": "PASS" if ok else "MISS"}


def _speed_targets(result, backend) -> list:
    out = []
    for op, kind, limit in TARGETS:
        N, limit = TARGET_SIZES[kind], BACKEND_TARGETS.get((backend, op, kind), limit)
        meas = result.find(TARGET_ROBOT, op, backend, N)
        if meas is None or not meas.ratio:
            continue
        if kind == "single":
            out.append(_target(backend, op, N, target_label(op, kind, limit), "time ratio", meas.ratio, "<=", limit))
        else:
            out.append(_target(backend, op, N, target_label(op, kind, limit), "speed-up", 1 / meas.ratio, ">=", limit,
                               workers=meas.workers))
    return out


def _generated_targets(result) -> list:
    """The generated backend at TARGET_BATCH states: ns per state and throughput against
    pinocchio's parallel functions on all cores; parallel efficiency from 1 to 2 workers."""
    backend, N, out = GENERATED_BACKEND, TARGET_BATCH, []
    if all_cores_measured(result):
        for op, limit in BATCH_TIME_TARGETS:
            meas = result.find(TARGET_ROBOT, op, backend, N)
            if meas is not None:
                out.append(_target(backend, op, N, f"≤ {limit:g} ns per state (batch, all cores)", "ns per state",
                                   meas.median_ns, "<=", limit, unit="ns", workers=meas.workers))
        for op, limit in PARALLEL_SPEEDUP_TARGETS:
            meas = result.find(TARGET_ROBOT, op, backend, N)
            if meas is not None and meas.ratio_parallel:
                out.append(_target(backend, op, N, f"throughput ≥ {limit:g}× pinocchio {PIN_CALLS[op]}InParallel "
                                   "(batch, all cores)", "throughput ratio to pinocchio_parallel",
                                   1 / meas.ratio_parallel, ">=", limit, workers=meas.workers))
    for op in dict.fromkeys(m.op for m in result.measurements if (m.robot, m.backend) == (TARGET_ROBOT, backend)):
        one, two = (result.find(TARGET_ROBOT, op, backend, N, k) for k in (1, 2))
        if one is None or two is None or one.workers != 1 or two.workers != 2 or two.median_us <= 0:
            continue
        out.append(_target(backend, op, N, f"parallel efficiency ≥ {100 * EFFICIENCY_TARGET:g} % from 1 to 2 "
                           "workers (batch)", "t(1) / (2 · t(2))", one.median_us / (2 * two.median_us), ">=",
                           EFFICIENCY_TARGET, unit="efficiency", workers=2))
    return out


def _friction_targets(result, backend) -> list:
    """FRICTION_LIMIT for the dynamics themselves (FRICTION_OPS); the derivatives of the
    friction laws (numpy, a chain rule of several laws) are measured, not judged."""
    rigid = _rigid_counterpart(backend)
    out = []
    measured = (m.op for m in result.measurements if (m.robot, m.backend) == (TARGET_ROBOT, backend))
    for op in [op for op in dict.fromkeys(measured) if op in FRICTION_OPS]:
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
