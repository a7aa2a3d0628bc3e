"""Parallel inverse dynamics: task graphs and static schedules (Dhanaraj 1990, ch. 4).

>>> from dyn_plugin import load_robot
>>> from dyn_plugin.parallel import newton_euler_graph, schedule
>>> graph = newton_euler_graph(load_robot("puma560"), mode="general")   # 231 subtasks of 3 flops
>>> s = schedule(graph, processors=6)                                    # 39 levels, S = 5.92
>>> s.table[0]                                                           # level 1's task codes

The Newton-Euler recursion is cut into the 43 subtasks per link of Table 4.1, with Table
4.2's eliminations ("general") and those of the model's zero vectors, Tables 4.4-4.6
("customised"): :mod:`.taskgraph`.  Layering, critical path, list schedules (the thesis's
look-ahead rule and a critical-path rule), bounds and S_p, E_p work on any task graph
(:class:`TaskGraph`, or a mapping ``{task: predecessors}``): :mod:`.scheduling`.
The generated code's operations (1 flop each) are a task graph too,
:func:`operation_graph`; :func:`decompositions` sets the two side by side.
:func:`schedule_study` runs a robot over processor counts; :func:`plot_study` draws it
(a Gantt chart, and the speed-up and efficiency against p);
:mod:`.thesis` holds the printed figures compared with.
"""

from . import thesis
from .dag import PHASES, Task, TaskGraph, subgraph
from .gantt import plot_study
from .operations import decompositions, operation_graph
from .scheduling import (LAYERINGS, RULES, Schedule, alap_levels, asap_levels, bottom_levels, check_schedule,
                         critical_path, critical_path_length, efficiency, layer_numbers, layers, lower_bound,
                         max_concurrency, schedule, schedule_problems, speedup, window_lower_bound)
from .study import ScheduleStudy, schedule_study
from .taskgraph import MODES, SUBTASKS, newton_euler_graph

__all__ = [
    "LAYERINGS", "MODES", "PHASES", "RULES", "SUBTASKS", "Schedule", "ScheduleStudy", "Task", "TaskGraph",
    "alap_levels", "asap_levels", "decompositions", "operation_graph", "bottom_levels", "check_schedule", "critical_path", "critical_path_length",
    "efficiency", "layer_numbers", "layers", "lower_bound", "max_concurrency", "newton_euler_graph", "plot_study",
    "schedule", "schedule_problems", "schedule_study", "speedup", "subgraph", "thesis", "window_lower_bound",
]
