"""A task graph: unit-time tasks and their predecessors, the one object every function of
:mod:`dyn_plugin.parallel` schedules.

Any directed acyclic graph fits: the Newton-Euler subtasks of Dhanaraj's thesis Table 4.1
(:func:`dyn_plugin.parallel.newton_euler_graph`, 3 flops each), or the operations of a
generated straight-line program (1 flop each).  Tasks are hashable ids; each takes one
time unit (a *level*) on one processor (thesis §4.3.2: "all the subtasks are of equal
computational load of 3 flops").  ``info`` may describe a task (:class:`Task`: its link,
subtask number and phase), which the thesis's layering rule and the Gantt chart read.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from typing import Optional

from ..errors import InputError

FORWARD, BACKWARD, FRICTION = "forward", "backward", "friction"
PHASES = (FORWARD, BACKWARD, FRICTION)


@dataclasses.dataclass(frozen=True)
class Task:
    """What one task of a Newton-Euler graph computes (Dhanaraj Table 4.1).

    ``code``: its id, ``link * base + number`` (523 = link 5, T23 with base 100);
    ``link``: 1-based link number; ``number``: subtask number (1-43 Table 4.1, more for
    friction and the extra tasks of trees, see :mod:`.taskgraph`); ``phase``: forward,
    backward or friction; ``label``: the computation.
    """

    code: int
    link: int
    number: int
    phase: str
    label: str


class TaskGraph:
    """Unit-time tasks with predecessor sets; acyclic (checked).

    ``predecessors`` maps every task to the tasks it needs (each must be a task of the
    graph); the mapping's order is the graph's order (:attr:`tasks`), which breaks ties
    in the schedulers.  ``flops_per_task`` converts levels to flops (3 in the thesis);
    ``info`` describes tasks (:class:`Task`), ``notes`` say what the graph does not count,
    ``meta`` holds what its maker adds (a Newton-Euler graph: ``parents``, link -> parent
    link, 0 for the base).
    """

    def __init__(self, predecessors: Mapping, *, name: str = "", flops_per_task: int = 3,
                 info: Optional[Mapping] = None, notes: Iterable[str] = (), meta: Optional[Mapping] = None):
        self.tasks = tuple(predecessors)
        self.preds = {task: frozenset(predecessors[task]) for task in self.tasks}
        self.name = name
        self.flops_per_task = flops_per_task
        self.info = dict(info or {})
        self.notes = tuple(notes)
        self.meta = dict(meta or {})
        self.order = {task: k for k, task in enumerate(self.tasks)}
        self._check()
        succs: dict = {task: [] for task in self.tasks}
        for task in self.tasks:
            for pred in self.preds[task]:
                succs[pred].append(task)
        self.succs = {task: frozenset(s) for task, s in succs.items()}
        self.topological = self._topological_order()

    def __len__(self) -> int:
        return len(self.tasks)

    def __repr__(self) -> str:
        return f"TaskGraph({self.name!r}, {len(self)} tasks)"

    def phase(self, task) -> Optional[str]:
        """The task's phase (forward, backward, friction), None when the graph has no info."""
        described = self.info.get(task)
        return described.phase if described else None

    def _check(self) -> None:
        if len(set(self.tasks)) != len(self.tasks):
            raise InputError("task graph: a task is listed twice")
        for task in self.tasks:
            if not isinstance(task, Hashable):
                raise InputError(f"task graph: task {task!r} is not hashable")
            unknown = [p for p in self.preds[task] if p not in self.preds]
            if unknown:
                raise InputError(f"task graph: task {task!r} needs {unknown[0]!r}, which is not a task of the graph")
            if task in self.preds[task]:
                raise InputError(f"task graph: task {task!r} needs itself")

    def _topological_order(self) -> tuple:
        """Kahn's algorithm in graph order; a cycle is an InputError naming its tasks."""
        missing = {task: len(self.preds[task]) for task in self.tasks}
        ready = deque(task for task in self.tasks if not missing[task])
        out = []
        while ready:
            task = ready.popleft()
            out.append(task)
            for succ in sorted(self.succs[task], key=self.order.__getitem__):
                missing[succ] -= 1
                if not missing[succ]:
                    ready.append(succ)
        if len(out) != len(self.tasks):
            stuck = [task for task in self.tasks if missing[task]][:5]
            raise InputError(f"task graph has a cycle (tasks that never become ready: {stuck})")
        return tuple(out)


def as_graph(graph) -> TaskGraph:
    """A :class:`TaskGraph` as it is, a mapping ``{task: predecessors}`` as a new one."""
    if isinstance(graph, TaskGraph):
        return graph
    if isinstance(graph, Mapping):
        return TaskGraph(graph)
    raise InputError(f"expected a TaskGraph or a mapping {{task: predecessors}}, got {type(graph).__name__}")


def without(predecessors: dict, removed: Iterable) -> dict:
    """``predecessors`` without the ``removed`` tasks, each bypassed: a task that needed a
    removed one needs what that one needed.  This is how an eliminated subtask (thesis
    Table 4.2: its result is zero, or a copy) passes its inputs on: the last link's f_n = F_n
    (T32 gone), so its parent's T30 needs T26."""
    out = {task: set(preds) for task, preds in predecessors.items()}
    for task in removed:
        if task not in out:
            continue
        inputs = out.pop(task)
        for preds in out.values():
            if task in preds:
                preds.discard(task)
                preds |= inputs
    return out


def subgraph(graph: TaskGraph, keep: Iterable, name: str = "") -> TaskGraph:
    """The tasks ``keep`` of ``graph`` (in its order), the others removed as by
    :func:`without`; info, meta and flops per task carried over."""
    keep = set(keep)
    unknown = keep - set(graph.tasks)
    if unknown:
        raise InputError(f"subgraph: {sorted(unknown, key=repr)[:5]} are not tasks of {graph.name or 'the graph'}")
    kept = without({task: graph.preds[task] for task in graph.tasks}, [t for t in graph.tasks if t not in keep])
    return TaskGraph(kept, name=name or graph.name, flops_per_task=graph.flops_per_task,
                     info={t: graph.info[t] for t in kept if t in graph.info}, notes=graph.notes, meta=graph.meta)
