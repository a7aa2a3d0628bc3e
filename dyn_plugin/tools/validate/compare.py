"""The comparisons of ``dyn-plugin validate``: the error measure, one quantity's largest
error (:class:`Comparison`), and a run's comparisons and skips (:class:`Report`).

The error measure of one entry is ``|ours − reference| / max(1, |reference|)`` (relative
for large values, absolute for small ones); a quantity passes when its largest such error
over all samples and entries is at most ``rtol``.

Before pybullet judges a backend, pybullet is held to pinocchio on the same states (or the
same trajectory) for the same quantity: that reference disagreement is the *floor*.  Where
it exceeds the tolerance, a comparison against pybullet passes when its error is at most
tolerance + floor and the backend is within the tolerance of what pinocchio predicts for
the same experiment (see :class:`Comparison`);
:func:`dyn_plugin.backends.pybullet_diagnostics.pybullet_differences` says why the
references disagree where it can tell.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from ...backends.registry import backends as registered_backends
from . import plan
from .plan import STEPPING
from .suite import Suite

__all__ = ["Comparison", "Report", "comparison", "merge_tasks", "relative_errors"]


@dataclasses.dataclass
class Comparison:
    """The largest error of one quantity of one backend against one reference.

    Against pybullet it carries ``floor``, pybullet's own largest error against pinocchio on
    the same states (or trajectory), rigid body alone.  Where the floor exceeds the tolerance
    the comparison passes at ``max_rel <= rtol + floor``: the triangle inequality
    |ours − pybullet| <= |ours − pinocchio| + |pinocchio − pybullet| bounds the error of a
    backend that agrees with pinocchio by exactly that.  What keeps it honest is the first
    term: ``pinocchio_error``, the backend's largest error against pinocchio's prediction of
    the same experiment (pinocchio's values; for a friction backend the same friction law
    over pinocchio), computed wherever ``max_rel`` exceeds ``rtol``, must be within ``rtol``.
    """

    robot: str
    backend: str
    reference: str
    quantity: str
    samples: int
    max_abs: float
    max_rel: float
    worst_sample: int
    worst_entry: tuple
    rtol: float
    errors: np.ndarray = dataclasses.field(default=None, repr=False)  # per sample, for plots
    trace: dict = dataclasses.field(default=None, repr=False)         # trajectories, for plots
    floor: Optional[float] = None             # pybullet vs pinocchio, same states (against pybullet only)
    pinocchio_error: Optional[float] = None   # ours vs pinocchio's prediction, where max_rel > rtol

    @property
    def floor_applies(self) -> bool:
        """True when the references disagree beyond the tolerance on this quantity."""
        return self.floor is not None and self.floor > self.rtol

    @property
    def passed(self) -> bool:
        if self.max_rel <= self.rtol:
            return True
        return bool(self.floor_applies and self.max_rel <= self.rtol + self.floor
                    and self.pinocchio_error is not None and self.pinocchio_error <= self.rtol)

    @property
    def within_floor(self) -> bool:
        """Passed only because the references disagree: above the tolerance, within the floor."""
        return self.passed and self.max_rel > self.rtol

    def as_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("errors", "trace")}
        if not self.floor_applies:  # shown only where pybullet and pinocchio disagree
            del out["floor"]
        if self.pinocchio_error is None:
            del out["pinocchio_error"]
        out["worst_entry"] = list(self.worst_entry)
        out["passed"] = self.passed
        if self.trace is not None:
            out["error_growth"] = self.trace["growth"]
        return out


def relative_errors(ours: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """|ours − ref| / max(1, |ref|) elementwise; NaN counts as infinitely wrong."""
    ours, reference = np.asarray(ours, dtype=float), np.asarray(reference, dtype=float)
    rel = np.abs(ours - reference) / np.maximum(1.0, np.abs(reference))
    return np.where(np.isnan(rel), np.inf, rel)


def comparison(robot, backend, reference, quantity, ours, ref, tol, trace=None, floor=None) -> "Comparison":
    """The :class:`Comparison` of ``ours`` with ``ref`` (samples first, any shape after) at
    tolerance ``tol``; ``trace``: the trajectories, for plots; ``floor``, against pybullet: ``(disagreement, predicted)``, the references' own
    disagreement and pinocchio's prediction of ``ours`` (an array, or a callable run only
    when ``ours`` misses ``tol``)."""
    rel = relative_errors(ours, ref)
    worst = np.unravel_index(int(np.argmax(rel)), rel.shape)
    diff = np.abs(np.asarray(ours, dtype=float) - np.asarray(ref, dtype=float))
    c = Comparison(robot=robot, backend=backend, reference=reference, quantity=quantity, samples=len(rel),
                   max_abs=float(np.max(np.where(np.isnan(diff), np.inf, diff))), max_rel=float(rel.max()),
                   worst_sample=int(worst[0]), worst_entry=tuple(int(i) for i in worst[1:]), rtol=tol,
                   errors=rel.reshape(len(rel), -1).max(axis=1), trace=trace)
    if floor is not None:
        c.floor, predicted = float(floor[0]), floor[1]
        if c.max_rel > tol:
            c.pinocchio_error = float(relative_errors(ours, predicted() if callable(predicted) else predicted).max())
    return c


@dataclasses.dataclass
class Report:
    """The comparisons of a run; ``notes``: per robot whose references disagree, why
    (:func:`~dyn_plugin.backends.pybullet_diagnostics.pybullet_differences`; empty: not
    diagnosed); ``skips``: what the suite names and a backend was not asked for
    (:class:`.plan.Skip`), which fails nothing."""

    suite: Suite
    comparisons: list
    seconds: float
    notes: dict = dataclasses.field(default_factory=dict)
    skips: list = dataclasses.field(default_factory=list)

    def skip_lines(self) -> list:
        """The skips in words, one line per reason (:func:`.plan.skip_lines`)."""
        robots = dict.fromkeys([*(c.robot for c in self.comparisons), *(s.robot for s in self.skips)])
        return plan.skip_lines(self.skips, list(robots))

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    def failures(self) -> list:
        return [c for c in self.comparisons if not c.passed]

    def own_tolerances(self) -> str:
        """The tolerances of quantities judged by neither the suite's rtol nor its trajectory
        tolerance (the bristles' observed order: within 0.1 of 1), as "; quantity at <= tol"
        for the headers that state the tolerance; "" without them."""
        usual = {self.suite.rtol, self.suite.trajectory_tol}
        own = {c.quantity: c.rtol for c in self.comparisons if c.rtol not in usual}
        return "".join(f"; {quantity} at <= {tol:g}" for quantity, tol in own.items())

    def disagreements(self) -> list:
        """``(robot, quantity, floor, friction)`` where the references disagree beyond the
        tolerance, in report order; ``friction``: the floor of the friction backends'
        experiments (:mod:`.engine`'s ``_floor``).  The backends of a robot share each floor."""
        friction = set(registered_backends(can=("friction",)))
        found = {(c.robot, c.quantity, c.backend in friction and c.quantity in STEPPING): c.floor
                 for c in self.comparisons if c.floor_applies}
        return [(robot, quantity, floor, with_friction) for (robot, quantity, with_friction), floor in found.items()]

    def disagreement_lines(self) -> list:
        """The disagreements in words, and why, one line each."""
        lines = [f"{robot}: reference disagreement: pybullet vs pinocchio {floor:.1e} on {quantity}; judged against "
                 "that floor" if not friction else
                 f"{robot}: reference disagreement with friction: {floor:.1e} on {quantity} (pinocchio and our "
                 "friction law, on pybullet's rigid body vs the model's); judged against that floor"
                 for robot, quantity, floor, friction in self.disagreements()]
        for robot in dict.fromkeys(robot for robot, *_ in self.disagreements()):
            lines += [f"{robot}: why: {note}" for note in self.notes.get(robot, [])] or [
                f"{robot}: why: not diagnosed (no known pybullet alteration of this model)"]
        return lines

    def as_dict(self) -> dict:
        from ..._version import __version__

        out = {
            "dyn_plugin_version": __version__,
            "suite": dataclasses.asdict(self.suite),
            "passed": self.passed,
            "seconds": round(self.seconds, 3),
            "results": [c.as_dict() for c in self.comparisons],
            "skipped": [s.as_dict() for s in self.skips],
        }
        if self.disagreements():
            out["reference_disagreement"] = self.disagreement_lines()
        return out


def merge_tasks(parts: list) -> list:
    """The tasks' comparisons of each (robot, backend, reference, quantity) merged into one,
    in the order the tasks first report them."""
    groups: dict = {}
    for comparisons in parts:
        for c in comparisons:
            groups.setdefault((c.robot, c.backend, c.reference, c.quantity), []).append(c)
    return [_merge(group) for group in groups.values()]


def _merge(parts: list) -> "Comparison":
    """Comparisons of one quantity over consecutive chunks as the one comparison over all
    their states (the first largest error wins, as an argmax over all states would)."""
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [p.samples for p in parts])
    worst = int(np.argmax([p.max_rel for p in parts]))
    floors, pinocchio = [p.floor for p in parts if p.floor is not None], [p.pinocchio_error for p in parts
                                                                           if p.pinocchio_error is not None]
    return dataclasses.replace(parts[worst], samples=int(offsets[-1]), max_abs=max(p.max_abs for p in parts),
                               worst_sample=int(offsets[worst]) + parts[worst].worst_sample,
                               errors=np.concatenate([p.errors for p in parts]), floor=max(floors, default=None),
                               pinocchio_error=max(pinocchio, default=None))
