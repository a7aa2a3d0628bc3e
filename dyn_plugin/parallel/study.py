"""One robot's task graph scheduled on several processor counts, with the figures of
Dhanaraj's ch. 4 (T_1, critical path, maximum concurrency, S_p, E_p, Appendix C levels
where the thesis has them) and its JSON form (``dyn-plugin schedule --json``)."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Optional

from ..errors import InputError
from . import thesis
from .dag import TaskGraph
from .scheduling import (RULES, Schedule, critical_path, critical_path_length, layers, max_concurrency,
                         processor_count, require_tasks, schedule, window_lower_bound)
from .operations import operation_graph
from .taskgraph import MODES, newton_euler_graph

EFFICIENT = 0.9   # the Gantt chart shows the largest p this efficient (the thesis picks p by "efficiency above 98 %")
STUDY_MODES = (*MODES, "operations")


@dataclasses.dataclass(frozen=True)
class ScheduleStudy:
    """``schedules``: one :class:`~.scheduling.Schedule` per rule and processor count;
    ``reference``: the thesis's figures for this robot and mode (:func:`.thesis.reference`)."""

    robot: str
    mode: str
    friction: bool
    graph: TaskGraph
    schedules: tuple
    reference: Optional[dict] = None

    @property
    def tasks(self) -> int:
        """T_1: subtasks, the uniprocessor time in levels."""
        return len(self.graph)

    @property
    def critical_path(self) -> int:
        return critical_path_length(self.graph)

    @property
    def max_concurrency(self) -> int:
        """Widest layer of the thesis's layering (Table 4.3's 13 for the general arm)."""
        return max_concurrency(self.graph, "thesis")

    def thesis_levels(self, processors: int) -> Optional[int]:
        return (self.reference or {}).get("levels", {}).get(processors)

    def shown(self) -> Schedule:
        """The schedule a Gantt chart shows: first rule, the largest p with efficiency >=
        :data:`EFFICIENT` (else the fastest)."""
        first = [s for s in self.schedules if s.rule == self.schedules[0].rule]
        efficient = [s for s in first if s.efficiency >= EFFICIENT]
        if efficient:
            return max(efficient, key=lambda s: s.processors)
        return min(first, key=lambda s: (s.levels, s.processors))

    def as_dict(self) -> dict:
        """The JSON object of ``dyn-plugin schedule --json`` (task codes as integers)."""
        graph = self.graph
        ms = thesis.STANFORD["ms_per_level"]
        entries = []
        for s in self.schedules:
            entry = s.as_dict()
            entry["window_lower_bound"] = window_lower_bound(graph, s.processors)
            if graph.flops_per_task == 3:
                entry["time_ms_8086"] = round(s.levels * ms, 4)
            if self.thesis_levels(s.processors) is not None:
                entry["thesis_levels"] = self.thesis_levels(s.processors)
            entries.append(entry)
        return {
            "robot": self.robot, "mode": self.mode, "friction": self.friction, "tasks": self.tasks,
            "flops_per_task": graph.flops_per_task, "critical_path_levels": self.critical_path,
            "max_concurrency": self.max_concurrency, "max_concurrency_asap": max_concurrency(graph, "asap"),
            "thesis_layers": len(layers(graph, "thesis")), "critical_path": critical_path(graph),
            "task_code": ("link * 100 + subtask number (Dhanaraj Table 4.1; 523 = link 5, T23)" if graph.info else
                          "node number of the code generator's expression DAG (one + - or * each)"),
            "ms_per_level_8086": ms,     # Table 4.8: 21.06 ms / 156 subtasks (Intel 8086); time_ms_8086 = levels x this
            "rules": list(dict.fromkeys(s.rule for s in self.schedules)),
            "thesis": _jsonable(self.reference), "notes": list(graph.notes),
            "layers": layers(graph, "thesis"), "schedules": entries,
        }

    def to_json(self) -> str:
        """:meth:`as_dict` as indented JSON, each innermost list of numbers on one line."""
        text = json.dumps(self.as_dict(), indent=2, ensure_ascii=False)
        return re.sub(r"\[\s+([-0-9.,\s]+?)\s+\]", _one_line, text)


def _one_line(match) -> str:
    """A JSON list of numbers, matched across lines, on one line."""
    return "[" + ", ".join(item.strip(",") for item in match.group(1).split()) + "]"


def _jsonable(reference: Optional[dict]):
    """The thesis's figures with string keys (JSON objects)."""
    if reference is None:
        return None
    return {key: {str(k): v for k, v in value.items()} if isinstance(value, dict) else value
            for key, value in reference.items()}


def processor_counts(processors, graph: TaskGraph) -> list:
    """The processor counts to schedule: ``processors`` (one integral number or several)
    sorted without repeats, or by default 1 .. the maximum concurrency; each a whole number
    >= 1 (:func:`.scheduling.processor_count`), returned as ints."""
    if processors is None:
        return list(range(1, max_concurrency(graph, "thesis") + 1))
    try:
        counts = [processors] if isinstance(processors, (str, bytes)) else list(processors)
    except TypeError:       # one number (or what processor_count refuses, by its value)
        counts = [processors]
    if not counts:
        raise InputError("give at least one number of processors")
    return sorted({processor_count(p) for p in counts})


def task_graph(model, mode: str = "customised", friction: bool = False) -> TaskGraph:
    """The task graph a study schedules (:func:`schedule_study`): ``model``'s Newton-Euler
    subtasks in ``mode`` (one of :data:`STUDY_MODES`), or the generated code's operations
    for ``"operations"``; a graph without tasks (a robot whose τ is identically zero has no
    operations) is an InputError, as there is nothing to schedule."""
    if mode not in STUDY_MODES:
        raise InputError(f"mode must be one of {', '.join(STUDY_MODES)}; got {mode!r}")
    if mode == "operations":
        if friction:
            raise InputError("friction subtasks (Table 3.3) belong to the 3-flop decomposition, not to the generated "
                             "code's operations: drop --friction or --operations")
        graph = operation_graph(model)
        if not len(graph):
            raise InputError(f"the generated inverse dynamics of robot {model.name!r} has no operations (τ is "
                             "identically zero, e.g. no moving link has mass): there is nothing to schedule")
    else:
        graph = newton_euler_graph(model, mode, friction=friction)
    require_tasks(graph, f"the task graph of robot {model.name!r} ({mode})")
    return graph


def schedule_study(model, mode: str = "customised", processors=None, rules=("critical-path",),
                   friction: bool = False) -> ScheduleStudy:
    """Schedule ``model``'s Newton-Euler task graph (:func:`.taskgraph.newton_euler_graph`
    in ``mode``, with Table 3.3's friction subtasks when ``friction``; mode
    ``"operations"``: the generated code's operations, :func:`.operations.operation_graph`;
    see :func:`task_graph`) on each processor count of ``processors`` (one integral number
    or several; default: 1 .. maximum concurrency) by each rule of ``rules``."""
    rules = list(dict.fromkeys(rules))
    unknown = [rule for rule in rules if rule not in RULES]
    if unknown or not rules:
        raise InputError(f"scheduling rules must be among {', '.join(RULES)}; got {unknown or rules}")
    graph = task_graph(model, mode, friction)
    counts = processor_counts(processors, graph)
    schedules = tuple(schedule(graph, p, rule) for rule in rules for p in counts)
    reference = None if friction else thesis.reference(model, mode)
    return ScheduleStudy(model.name, mode, friction, graph, schedules, reference)
