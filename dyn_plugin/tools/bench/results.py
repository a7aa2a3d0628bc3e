"""What a bench run returns: one :class:`Measurement` per robot × op × backend × N, and
the :class:`BenchResult` holding them with the environment, checks and notes (its
:meth:`BenchResult.as_dict` is the ``--json`` document)."""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from .targets import evaluate_targets

__all__ = ["BenchResult", "Measurement"]


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
