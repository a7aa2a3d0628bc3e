"""The code generator's operations as a task graph: parallelism at the finest grain.

Dhanaraj's decomposition (:mod:`.taskgraph`) cuts the recursion into subtasks of 3 flops
because he generated the code by hand from a symbolic listing.  The code generator
(:mod:`dyn_plugin.symbolic.codegen`) builds the whole customised inverse dynamics as an
expression DAG with constants folded and shared subexpressions built once; its arithmetic
nodes are a task graph of 1-flop tasks whose count is exactly the generated code's
(``GeneratedCode.counts``: multiplications + additions).  Sines and cosines are inputs
here, as in the thesis (its R_i hold them; Table 4.1 has no subtask for them); sign changes
are free, as in the counts.

:func:`operation_graph` builds it, :func:`decompositions` sets it beside the 3-flop
subtask graphs (T_1 and critical path in flops, the speed-up bound T_1/critical path, and
list schedules), which validation/schedules.md reports.
"""

from __future__ import annotations

from ..errors import InputError
from .dag import TaskGraph
from .scheduling import critical_path_length, max_concurrency, schedule
from .taskgraph import newton_euler_graph, require_moving_joint

ARITHMETIC = ("+", "-", "*")
PROGRAMS = ("inverse_dynamics", "mass_matrix")


def operation_graph(model, program: str = "inverse_dynamics", regroup: bool = True) -> TaskGraph:
    """The arithmetic operations of the customised ``program`` (``"inverse_dynamics"``: τ,
    gravity included; ``"mass_matrix"``: M(q)) of ``model`` as a task graph of 1-flop
    tasks: the nodes of the generator's expression DAG, each needing the arithmetic nodes
    among its operands (through sign changes, which are free).  A model without moving
    joints is a ModelError; one whose τ is identically zero (no moving link with mass) gives
    an empty graph, which :func:`.scheduling.schedule` refuses."""
    from ..symbolic.customise import prepare
    from ..symbolic.graph import Graph
    from ..symbolic.recursion import _id_program, _mass_matrix_program

    if program not in PROGRAMS:
        raise InputError(f"program must be one of {', '.join(PROGRAMS)}; got {program!r}")
    if model.floating_base or model.mimic:
        raise InputError(f"operation graph of robot {model.name!r}: the code generator takes fixed-base models "
                         "without mimic joints")
    require_moving_joint(model)
    links, base_acc = prepare(model, regroup)
    built = _id_program(Graph(), links, base_acc) if program == "inverse_dynamics" else \
        _mass_matrix_program(Graph(), links)
    g = built.graph
    nodes = sorted(built.reachable())
    predecessors = {node: _arithmetic_operands(g, node) for node in nodes if g.op[node] in ARITHMETIC}
    return TaskGraph(predecessors, name=f"{model.name} {program.replace('_', ' ')} operations", flops_per_task=1,
                     notes=("sines and cosines are inputs (as in the thesis), sign changes are free",),
                     meta={"program": program})


def _arithmetic_operands(g, node) -> set:
    """The arithmetic nodes ``node`` reads, looking through sign changes."""
    out, stack = set(), list(g.args[node])
    while stack:
        arg = stack.pop()
        if g.op[arg] in ARITHMETIC:
            out.add(arg)
        elif g.op[arg] == "neg":
            stack.extend(g.args[arg])
    return out


def decompositions(model, processors=(2, 4, 6, 8, 16), rule: str = "critical-path") -> list:
    """One row per decomposition of ``model``'s inverse dynamics -- Dhanaraj's 3-flop
    subtasks (general and customised) and the generated code's operations -- with T_1 and
    the critical path in flops, the speed-up bound T_1 / critical path, the widest ASAP
    layer, and the speed-up S_p of a list schedule on each of ``processors``."""
    graphs = [("3-flop subtasks, general", newton_euler_graph(model, "general")),
              ("3-flop subtasks, customised", newton_euler_graph(model, "customised")),
              ("generated code, operations", operation_graph(model))]
    rows = []
    for label, graph in graphs:
        flops, path = len(graph) * graph.flops_per_task, critical_path_length(graph) * graph.flops_per_task
        rows.append({"decomposition": label, "tasks": len(graph), "flops_per_task": graph.flops_per_task,
                     "flops": flops, "critical_path_flops": path, "speedup_bound": flops / path,
                     "max_concurrency": max_concurrency(graph, "asap"),
                     "speedups": {p: schedule(graph, p, rule).speedup for p in processors}})
    return rows
