"""What a bench run returns: one :class:`Measurement` per robot × op × backend × N (× the
number of workers, for the calls that use them), and the :class:`BenchResult` holding them
with the environment, checks and notes (its :meth:`BenchResult.as_dict` is the ``--json``
document, with the parallel scaling and the physical limits computed from them)."""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from .limits import limit_rows
from .targets import evaluate_targets

__all__ = ["BenchResult", "Measurement", "parallel_scaling"]


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
    ratio_parallel: Optional[float] = None  # median / pinocchio_parallel's median (same workers), when there is one
    workers: Optional[int] = None           # cores the call could use: our parallel loops' workers, pinocchio's
                                            # parallel threads; None: a single state or a per-call loop (serial)

    @property
    def median_us(self) -> float:
        return float(np.median(self.repeats_us))

    @property
    def median_ns(self) -> float:
        return 1e3 * self.median_us

    @property
    def extrapolated(self) -> bool:
        return self.timed_states < self.N

    @property
    def cut_short(self) -> bool:
        return len(self.repeats_us) < self.repeats_requested

    def as_dict(self) -> dict:
        return {
            "robot": self.robot, "op": self.op, "backend": self.backend, "call": self.call, "N": self.N,
            "workers": self.workers, "median_ns": self.median_ns,
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
    flops: list = dataclasses.field(default_factory=list)  # [{"robot", "backend", "op", "flops", "counts", "how"}]

    @property
    def worker_counts(self) -> list:
        """The numbers of workers measured (``--workers``), ascending; [] when unknown."""
        return list(self.settings.get("workers") or [])

    @property
    def main_workers(self) -> Optional[int]:
        """The largest number of workers measured: the one the batch figures, ratios and
        targets are read at (every usable core by default)."""
        counts = self.worker_counts
        return counts[-1] if counts else None

    def find(self, robot, op, backend, N, workers: Optional[int] = None) -> Optional[Measurement]:
        """The measurement of ``robot`` × ``op`` × ``backend`` × ``N`` with ``workers``
        (default: the largest number measured for it); a measurement that uses no workers
        (a single state, a per-call loop) matches any."""
        found = [m for m in self.measurements if (m.robot, m.op, m.backend, m.N) == (robot, op, backend, N)]
        if workers is not None:
            found = [m for m in found if m.workers is None or m.workers == workers]
        if not found:
            return None
        return max(found, key=lambda m: -1 if m.workers is None else m.workers)

    def targets(self) -> list:
        return evaluate_targets(self)

    def scaling(self) -> list:
        return parallel_scaling(self)

    def limits(self) -> list:
        return limit_rows(self)

    @classmethod
    def from_dict(cls, doc: dict) -> "BenchResult":
        """A result back from its ``--json`` document (e.g. to plot it again); the
        scaling, limits and targets are recomputed from the figures."""
        fields = {f.name for f in dataclasses.fields(Measurement)}
        measurements = []
        for row in doc["results"]:
            kept = {k: v for k, v in row.items() if k in fields}
            measurements.append(Measurement(**kept, number=row["calls_per_repeat"], ratio=row["ratio_vs_pinocchio"],
                                            ratio_parallel=row["ratio_vs_pinocchio_parallel"]))
        flops = [{"robot": r["robot"], "backend": r["backend"], "op": r["op"], "flops": r["flops_per_state"],
                  "counts": r["counts"], "how": r["how"]} for r in doc.get("limits", [])]
        return cls(settings=doc["settings"], environment=doc["environment"], measurements=measurements,
                   unavailable=doc["unavailable"], checks=doc["checks"], warmups=doc["warmup"], notes=doc["notes"],
                   robots=doc["robots"], seconds=doc.get("seconds", 0.0), flops=flops)

    def as_dict(self) -> dict:
        return {
            "tool": "dyn-plugin bench",
            "environment": self.environment,
            "settings": self.settings,
            "robots": self.robots,
            "seconds": round(self.seconds, 3),
            "results": [m.as_dict() for m in self.measurements],
            "scaling": self.scaling(),
            "limits": self.limits(),
            "unavailable": self.unavailable,
            "checks": self.checks,
            "warmup": self.warmups,
            "targets": self.targets(),
            "notes": self.notes,
        }


def parallel_scaling(result: BenchResult) -> list:
    """Parallel efficiency of every robot × op × backend × N measured with 1 worker and
    more: for each K > 1, ``E = t(1) / (K · t(K))`` (1 = perfect, 1/K = no gain) and the
    speed-up ``t(1) / t(K)``, t the median time per state."""
    rows = []
    groups = {}
    for m in result.measurements:
        if m.workers is not None:
            groups.setdefault((m.robot, m.op, m.backend, m.N), {})[m.workers] = m
    for (robot, op, backend, N), by_workers in groups.items():
        one = by_workers.get(1)
        if one is None or one.median_us <= 0:
            continue
        for k, m in sorted(by_workers.items()):
            if k == 1 or m.median_us <= 0:
                continue
            rows.append({"robot": robot, "op": op, "backend": backend, "N": N, "workers": k,
                         "ns_per_state_1": one.median_ns, "ns_per_state": m.median_ns,
                         "speedup": one.median_us / m.median_us,
                         "efficiency": one.median_us / (k * m.median_us)})
    return rows
