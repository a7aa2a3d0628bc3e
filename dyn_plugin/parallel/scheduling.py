"""Layering, critical path and static list schedules of any task graph (Dhanaraj ch. 4).

Every task takes one level on one processor (thesis §4.3: uniform 3-flop subtasks); a
schedule is a table of levels, each the tasks that run at once (at most p).  A task may
run only at a level after all its predecessors' levels.

* Layering (§4.3.1, Fig. 4.9, Tables 4.3 and 4.7): ``"asap"`` puts each task on the level
  after its last predecessor; ``"alap"`` as late as the critical path allows; ``"thesis"``
  places each task on its graph's nominal layer (``graph.meta["nominal_layers"]``: for a
  Newton-Euler graph, Dhanaraj's stacking of the links' layered graphs,
  :func:`.taskgraph.stacked_layers`), or later when a predecessor is not yet done, and
  a task without a nominal layer ASAP; on a generic graph it is ASAP.  ASAP lets backward
  subtasks that need only forward results (T26-T29, T36-T38) join the forward layers and
  widens them (18 tasks instead of Table 4.3's 13 for the general six-link arm).
* The critical path is the longest chain of tasks (the ASAP layers); the widest layer of a
  layering is its maximum concurrency (§4.3.1, Table 4.3: 13 processors give the 27
  levels).  The thesis's stacking is not always as short as the critical path: removed
  subtasks shorten chains that it keeps at two layers per link (customised Stanford arm:
  27 stacked layers, critical path 25).
* Schedules (§4.3.3, Fig. 4.10): list scheduling, at each level the p ready tasks of
  highest priority.  ``rule="thesis"``: priority by layer of the thesis layering, then task
  order: the tasks of the current layer first, left-overs going to the next level, and free
  processors filled by looking ahead at ready tasks of later layers (the thesis's
  "simplified bin-packing heuristic").  ``rule="critical-path"``: highest level first
  (HLFET, Adam, Chandy & Dickson 1974): priority by the longest chain of tasks still to
  run from the task to the end (its bottom level), ties to the earlier task in graph order.
* Eq. 4.1 speed-up S_p = T_1 / T_p and Eq. 4.2 efficiency E_p = S_p / p, with T in levels;
  no schedule is shorter than max(ceil(T_1 / p), critical path) (:func:`lower_bound`), nor
  than the window bound (:func:`window_lower_bound`), which proves most schedules here
  optimal.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import operator
from typing import Optional

from ..errors import InputError
from .dag import as_graph

RULES = ("critical-path", "thesis")
LAYERINGS = ("asap", "alap", "thesis")


def asap_levels(graph) -> dict:
    """Task -> its level (1-based) when every task runs right after its last predecessor."""
    graph = as_graph(graph)
    level = {}
    for task in graph.topological:
        level[task] = 1 + max((level[p] for p in graph.preds[task]), default=0)
    return level


def bottom_levels(graph) -> dict:
    """Task -> the number of tasks on the longest chain from it (included) to the end."""
    graph = as_graph(graph)
    level = {}
    for task in reversed(graph.topological):
        level[task] = 1 + max((level[s] for s in graph.succs[task]), default=0)
    return level


def critical_path_length(graph) -> int:
    """Levels of the longest chain of tasks: no schedule is shorter (0 for no task)."""
    return max(asap_levels(graph).values(), default=0)


def critical_path(graph) -> list:
    """One longest chain of tasks, first to last (ties: the earlier task in graph order)."""
    graph = as_graph(graph)
    bottom = bottom_levels(graph)
    if not bottom:
        return []
    task = min((t for t in graph.tasks if not graph.preds[t]), key=lambda t: (-bottom[t], graph.order[t]))
    chain = [task]
    while graph.succs[task]:
        task = min(graph.succs[task], key=lambda t: (-bottom[t], graph.order[t]))
        chain.append(task)
    return chain


def alap_levels(graph, length: Optional[int] = None) -> dict:
    """Task -> its latest level in a schedule of ``length`` levels (default: the critical path)."""
    graph = as_graph(graph)
    bottom = bottom_levels(graph)
    length = max(bottom.values(), default=0) if length is None else length
    return {task: length - bottom[task] + 1 for task in graph.tasks}


def layer_numbers(graph, rule: str = "thesis") -> dict:
    """Task -> layer (1-based) by ``rule``: ``"asap"``, ``"alap"`` or ``"thesis"`` (the
    graph's nominal layer, Fig. 4.9's stacking for a Newton-Euler graph, or the layer after
    its predecessors' when that is later; ASAP for a task without one)."""
    graph = as_graph(graph)
    if rule not in LAYERINGS:
        raise InputError(f"layering rule must be one of {', '.join(LAYERINGS)}; got {rule!r}")
    if rule == "alap":
        return alap_levels(graph)
    nominal = graph.meta.get("nominal_layers", {}) if rule == "thesis" else {}
    layer = {}
    for task in graph.topological:
        layer[task] = max(nominal.get(task, 1), 1 + max((layer[p] for p in graph.preds[task]), default=0))
    return layer


def layers(graph, rule: str = "thesis") -> list:
    """The layered task graph: a list of layers, each a list of tasks in graph order."""
    graph = as_graph(graph)
    number = layer_numbers(graph, rule)
    out = [[] for _ in range(max(number.values(), default=0))]
    for task in graph.tasks:
        out[number[task] - 1].append(task)
    return out


def max_concurrency(graph, rule: str = "thesis") -> int:
    """The widest layer of the layering ``rule`` (Table 4.3: 13 for the general six-link arm)."""
    return max((len(layer) for layer in layers(graph, rule)), default=0)


def lower_bound(graph, processors: int) -> int:
    """max(ceil(T_1 / p), critical path): no schedule on ``processors`` is shorter."""
    graph = as_graph(graph)
    processors = processor_count(processors)
    return max(math.ceil(len(graph) / processors), critical_path_length(graph))


def window_lower_bound(graph, processors: int) -> int:
    """A tighter bound: the n tasks whose ASAP level exceeds i and whose bottom level
    exceeds j all run within levels i+1 .. T-j, so T >= i + j + ceil(n / p), for every i, j
    (i = j = 0: ceil(T_1 / p); along a longest chain: the critical path)."""
    graph = as_graph(graph)
    processors = processor_count(processors)
    early, bottom = asap_levels(graph), bottom_levels(graph)
    height = max(bottom.values(), default=0)
    best = 0
    for i in range(height):
        count = [0] * (height + 2)
        for task in graph.tasks:
            if early[task] > i:
                count[bottom[task]] += 1
        n = 0
        for j in range(height, -1, -1):    # n = tasks with ASAP level > i and bottom level > j
            n += count[j + 1]
            if n:
                best = max(best, i + j + math.ceil(n / processors))
    return best


def speedup(tasks: int, levels: int) -> float:
    """Eq. 4.1: S_p = T_1 / T_p (T in levels, the uniprocessor time T_1 = number of tasks)."""
    return tasks / levels if levels else 1.0


def efficiency(speed_up: float, processors: int) -> float:
    """Eq. 4.2: E_p = S_p / p."""
    return speed_up / processors


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A static schedule: ``table[level]`` = the tasks run at that level (processor order)."""

    processors: int
    rule: str
    table: tuple
    tasks: int
    critical_path: int

    @property
    def levels(self) -> int:
        """T_p, the schedule's length in levels (× flops per task for flops)."""
        return len(self.table)

    @property
    def speedup(self) -> float:
        return speedup(self.tasks, self.levels)

    @property
    def efficiency(self) -> float:
        return efficiency(self.speedup, self.processors)

    @property
    def lower_bound(self) -> int:
        return max(math.ceil(self.tasks / self.processors), self.critical_path)

    def as_dict(self) -> dict:
        """The JSON form: processors, levels, speedup, efficiency, table (lists of task ids), rule, lower_bound."""
        return {"processors": self.processors, "rule": self.rule, "levels": self.levels,
                "speedup": round(self.speedup, 6), "efficiency": round(self.efficiency, 6),
                "lower_bound": self.lower_bound, "table": [list(level) for level in self.table]}


def schedule(graph, processors: int, rule: str = "critical-path") -> Schedule:
    """A list schedule of ``graph`` (at least one task) on ``processors`` (an integral
    number >= 1) by ``rule`` (see :data:`RULES` and the module docstring); checked with
    :func:`check_schedule` before it is returned."""
    graph = as_graph(graph)
    processors = processor_count(processors)
    require_tasks(graph)
    if rule not in RULES:
        raise InputError(f"scheduling rule must be one of {', '.join(RULES)}; got {rule!r}")
    priority = _priorities(graph, rule)
    missing = {task: len(graph.preds[task]) for task in graph.tasks}
    ready = [priority[task] for task in graph.tasks if not missing[task]]
    heapq.heapify(ready)
    table = []
    while ready:
        level = [heapq.heappop(ready)[-1] for _ in range(min(processors, len(ready)))]
        table.append(tuple(level))
        for task in level:
            for succ in graph.succs[task]:
                missing[succ] -= 1
                if not missing[succ]:
                    heapq.heappush(ready, priority[succ])
    result = Schedule(processors, rule, tuple(table), len(graph), critical_path_length(graph))
    check_schedule(graph, result.table, processors)
    return result


def _priorities(graph, rule: str) -> dict:
    """Task -> its heap entry (smaller runs first), ending with the task itself."""
    order = graph.order
    if rule == "thesis":
        layer = layer_numbers(graph, "thesis")
        return {task: (layer[task], order[task], task) for task in graph.tasks}
    bottom = bottom_levels(graph)
    return {task: (-bottom[task], order[task], task) for task in graph.tasks}


def processor_count(processors) -> int:
    """``processors`` as an int: any integral number >= 1 (int, numpy integer: ``operator.index``);
    a bool, a float or anything else is an InputError."""
    try:
        count = None if isinstance(processors, bool) else operator.index(processors)
    except TypeError:
        count = None
    if count is None or count < 1:
        raise InputError(f"the number of processors must be a whole number >= 1; got {processors!r}")
    return count


def require_tasks(graph, what: str = "") -> None:
    """An InputError for a graph without tasks: there is nothing to schedule (no S_p, no E_p)."""
    if not len(graph):
        name = as_graph(graph).name
        raise InputError(f"{what or (f'task graph {name!r}' if name else 'the task graph')} has no tasks: there is "
                         "nothing to schedule")


def schedule_problems(graph, table, processors: Optional[int] = None) -> list:
    """Why ``table`` (levels of task ids) is not a valid schedule of ``graph`` on
    ``processors`` (None: any number), one sentence each; empty when it is valid: every
    task exactly once, no unknown task, at most ``processors`` per level, every
    predecessor at an earlier level."""
    graph = as_graph(graph)
    problems, level_of = [], {}
    for number, level in enumerate(table, start=1):
        if processors is not None and len(level) > processors:
            problems.append(f"level {number} runs {len(level)} tasks on {processors} processors")
        for task in level:
            if task not in graph.preds:
                problems.append(f"level {number}: {task!r} is not a task of the graph")
            elif task in level_of:
                problems.append(f"task {task!r} runs twice (levels {level_of[task]} and {number})")
            else:
                level_of[task] = number
    missing = [task for task in graph.tasks if task not in level_of]
    if missing:
        problems.append(f"{len(missing)} tasks never run, e.g. {missing[:5]}")
    for task, number in level_of.items():
        late = [p for p in graph.preds[task] if level_of.get(p, math.inf) >= number]
        if late:
            problems.append(f"task {task!r} at level {number} needs {late[0]!r}, which runs at level "
                            f"{level_of.get(late[0], 'never')}")
    return problems


def check_schedule(graph, table, processors: Optional[int] = None) -> None:
    """Raise :class:`~dyn_plugin.errors.InputError` naming the first problems of an
    invalid schedule (:func:`schedule_problems`)."""
    problems = schedule_problems(graph, table, processors)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise InputError(f"invalid schedule of {as_graph(graph).name or 'the task graph'}: "
                         + "; ".join(problems[:3]) + more)
