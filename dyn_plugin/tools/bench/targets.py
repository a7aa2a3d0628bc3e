"""The speed targets, judged for the PUMA-560 at one state and at 10⁵ states only: our
time per state against pinocchio's, and each friction backend's against its frictionless
counterpart's.  Informative, unless ``dyn-plugin bench --check`` makes a miss exit 1."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...backends.registry import backend_class
from ...backends.registry import backends as registered_backends
from .operations import PIN_CALLS, REFERENCE_KINDS

if TYPE_CHECKING:
    from .results import BenchResult

__all__ = ["FRICTION_LIMIT", "TARGETS", "TARGET_BATCH", "TARGET_ROBOT", "TARGET_SIZES", "evaluate_targets",
           "target_label"]

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


def _rigid_counterpart(name: str):
    """The frictionless backend that friction backend ``name`` wraps by default: its class's
    ``default_rigid`` (``newton_euler`` for ``newton_euler_friction``), else None."""
    return getattr(backend_class(name), "default_rigid", None)


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
    with_friction = registered_backends(can=("friction",))
    rigid = [b for b in ours if b not in with_friction and not b.startswith("lagrange_euler")]
    friction = [b for b in ours if b in with_friction and _rigid_counterpart(b) in ours]
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
    rigid = _rigid_counterpart(backend)
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
