"""The generated code's operations as a task graph (dyn_plugin.parallel.operations): as many
tasks as the generator counts, and a schedule of them, executed level by level with real
numbers, reproduces pinocchio's τ -- so the graph's precedences are complete."""

import math

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.errors import InputError
from dyn_plugin.parallel import check_schedule, critical_path_length, decompositions, lower_bound, operation_graph, \
    schedule
from dyn_plugin.symbolic.codegen import generate
from dyn_plugin.symbolic.customise import prepare
from dyn_plugin.symbolic.graph import Graph
from dyn_plugin.symbolic.recursion import _id_program
from dyn_plugin.tools.cli import main
from urdf_factory import random_tree_urdf


def _models():
    return [dp.load_robot(name) for name in dp.list_robots()] + \
        [dp.load_urdf_string(random_tree_urdf(np.random.default_rng(seed), 6)) for seed in (1, 2)]


@pytest.fixture(scope="module", params=range(len(dp.list_robots()) + 2))   # the bundled robots, then two trees
def model(request):
    return _models()[request.param]


def test_tasks_are_the_generated_code_operations(model):
    counts = generate(model, "python").counts
    assert len(operation_graph(model)) == counts["multiplications"] + counts["additions"]


def _execute(model, table, q, qd, qdd):
    """τ from the program's DAG, computing each level's tasks from values known before it:
    an operand that is a task of the same or a later level raises KeyError."""
    links, base_acc = prepare(model, True)
    program = _id_program(Graph(), links, base_acc)
    g = program.graph
    inputs = {f"{name}{i + 1}": array[i] for name, array in (("q", q), ("qd", qd), ("qdd", qdd))
              for i in range(model.n)}
    done: dict = {}

    def value(node):
        op = g.op[node]
        if op in ("+", "-", "*"):
            return done[node]
        if op == "const":
            return g.value[node]
        if op == "var":
            return inputs[g.value[node]]
        x = value(g.args[node][0])
        return {"neg": -x, "sin": math.sin(x), "cos": math.cos(x)}[op]

    for level in table:
        results = {}
        for node in level:
            a, b = (value(arg) for arg in g.args[node])
            results[node] = {"+": a + b, "-": a - b, "*": a * b}[g.op[node]]
        done.update(results)
    tau = np.empty(model.n)
    for _, (i,), node in program.outputs:
        tau[i] = value(node)
    return tau


@pytest.mark.parametrize("processors", [1, 3, 8])
def test_a_schedule_of_the_operations_computes_pinocchios_tau(model, processors):
    graph = operation_graph(model)
    s = schedule(graph, processors)
    check_schedule(graph, s.table, processors)
    assert lower_bound(graph, processors) <= s.levels
    rng = np.random.default_rng(processors)
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, model.n))
    expected = dp.get_backend("pinocchio", model).inverse_dynamics(q, qd, qdd)
    np.testing.assert_allclose(_execute(model, s.table, q, qd, qdd), expected, rtol=1e-12, atol=1e-12)


def test_decompositions_side_by_side_for_the_puma560():
    rows = {row["decomposition"]: row for row in decompositions(dp.load_robot("puma560"), processors=(2, 8))}
    general = rows["3-flop subtasks, general"]
    ops = rows["generated code, operations"]
    assert (general["tasks"], general["flops"], general["critical_path_flops"]) == (231, 693, 81)   # 4n+3 levels
    assert ops["flops"] == ops["tasks"] == 324                  # 184 multiplications + 140 additions
    assert ops["critical_path_flops"] == critical_path_length(operation_graph(dp.load_robot("puma560")))
    for row in rows.values():
        assert row["speedup_bound"] == pytest.approx(row["flops"] / row["critical_path_flops"])
        assert all(1.0 <= s <= min(p, row["speedup_bound"]) + 1e-12 for p, s in row["speedups"].items())


def test_operations_mode_in_the_cli(tmp_path, capsys):
    out = tmp_path / "ops.json"
    assert main(["schedule", "stanford", "--operations", "--processors", "1", "4", "--json", str(out)]) == 0
    import json

    data = json.loads(out.read_text())
    assert data["mode"] == "operations" and data["flops_per_task"] == 1
    assert data["tasks"] == sum(len(level) for level in data["schedules"][0]["table"])
    assert main(["schedule", "stanford", "--operations", "--friction"]) == 2
    assert "friction" in capsys.readouterr().err


def test_operation_graph_refuses_what_the_generator_does_not_take():
    with pytest.raises(InputError, match="program must be one of"):
        operation_graph(dp.load_robot("puma560"), program="forward_dynamics")
    with pytest.raises(InputError, match="fixed-base"):
        operation_graph(dp.load_robot("puma560").with_floating_base())


MASSLESS = ('<robot name="massless"><link name="base"/><link name="a"/><joint name="j1" type="revolute">'
            '<parent link="base"/><child link="a"/><origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
FIXED_ONLY = ('<robot name="fixedonly"><link name="base"/><link name="a"><inertial><mass value="1"/>'
              '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
              '<joint name="j1" type="fixed"><parent link="base"/><child link="a"/></joint></robot>')


def test_no_operations_to_schedule_is_refused():
    """τ ≡ 0 (the only moving link has no mass): the generated code has no operation, and
    there is nothing to schedule; no moving joint at all: refused as in the other modes."""
    from dyn_plugin.errors import ModelError
    from dyn_plugin.parallel import schedule_study

    massless = dp.load_urdf_string(MASSLESS)
    assert len(operation_graph(massless)) == 0
    for processors in (None, 4, [1, 2]):
        with pytest.raises(InputError, match="'massless' has no operations"):
            schedule_study(massless, "operations", processors)
    with pytest.raises(ModelError, match="'fixedonly' has no moving joint"):
        operation_graph(dp.load_urdf_string(FIXED_ONLY))


@pytest.mark.parametrize("urdf, fragment", [(MASSLESS, "has no operations"), (FIXED_ONLY, "has no moving joint")],
                         ids=["massless", "fixed-only"])
@pytest.mark.parametrize("options", [[], ["--processors", "4"], ["--max"], ["--processors", "4", "--plot", "{png}"],
                                     ["--json", "-"]])
def test_cli_no_operations_is_one_line_exit_2(tmp_path, capsys, urdf, fragment, options):
    path = tmp_path / "robot.urdf"
    path.write_text(urdf)
    png = tmp_path / "gantt.png"
    assert main(["schedule", str(path), "--operations", *(o.format(png=png) for o in options)]) == 2
    captured = capsys.readouterr()
    assert fragment in captured.err and captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert "got 0" not in captured.err and captured.out == "" and not png.exists()
