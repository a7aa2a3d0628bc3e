"""Task graphs and static schedules of Dhanaraj's thesis ch. 4 (dyn_plugin.parallel),
against the figures the thesis prints (dyn_plugin/parallel/thesis.py: §4.3.1, Tables
4.3-4.8, Appendix C).  Every schedule made here is checked valid by ``schedule`` itself
(``check_schedule``: each task once, predecessors at earlier levels, at most p per level)."""

import json
import math

import pytest

import dyn_plugin as dp
from dyn_plugin.errors import InputError, ModelError
from dyn_plugin.parallel import (RULES, SUBTASKS, TaskGraph, check_schedule, critical_path, critical_path_length,
                                 layer_numbers, layers, lower_bound, max_concurrency, newton_euler_graph, schedule,
                                 schedule_problems, schedule_study, subgraph, thesis, window_lower_bound)
from dyn_plugin.parallel.taskgraph import (BEARING_FRICTION, FIRST_LINK_ELIMINATED, LAST_LINK_ELIMINATED,
                                           LOCAL_LAYERS, PRISMATIC_ELIMINATED, TRANSMISSION, link_data)
from dyn_plugin.tools.cli import main
from urdf_factory import random_tree_urdf

INERTIAL = '<inertial><origin xyz="0.1 0 0"/><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ' \
           'ixz="0" iyz="0"/></inertial>'


def _urdf(name: str, joints) -> str:
    """A URDF of ``joints`` = [(name, parent link, child link, axis, type)], base link 'base'."""
    links = {child for _, _, child, _, _ in joints}
    body = "".join(f'<link name="{link}">{INERTIAL}</link>' for link in sorted(links))
    body += "".join(f'<joint name="{j}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
                    f'<origin xyz="0 0 0.3"/><axis xyz="{axis}"/><limit lower="-1" upper="1" effort="1" '
                    f'velocity="1"/></joint>' for j, parent, child, axis, kind in joints)
    return f'<robot name="{name}"><link name="base"/>{body}</robot>'


def revolute_chain(n: int):
    """n revolute joints, alternately perpendicular and parallel: the thesis's general arm shape."""
    return dp.load_urdf_string(_urdf("chain", [(f"j{k}", "base" if k == 1 else f"l{k - 1}", f"l{k}",
                                                "0 0 1" if k % 2 else "0 1 0", "revolute") for k in range(1, n + 1)]))


@pytest.fixture(scope="module")
def general():
    return newton_euler_graph(dp.load_robot("puma560"), "general")


@pytest.fixture(scope="module")
def stanford():
    return newton_euler_graph(dp.load_robot("stanford"), "customised")


@pytest.fixture(scope="module")
def stanford_printed():
    """The thesis's own 156 Stanford subtasks (the tasks of Table 4.7), Table 4.1's precedences."""
    codes = {code for row in thesis.TABLE_4_7 for code in row}
    return subgraph(newton_euler_graph(dp.load_robot("stanford"), "full"), codes)


# -- Table 4.1 and the layered graph of one link ------------------------------------

def test_table_4_1_has_43_subtasks_with_the_repaired_precedences():
    assert sorted(SUBTASKS) == list(range(1, 44))
    assert [n for n, row in SUBTASKS.items() if row.phase == "forward"] == list(range(1, 26))
    assert SUBTASKS[4].parent == SUBTASKS[5].parent == (6,)           # OCR "T_0^p"
    assert set(SUBTASKS[41].same) == {27, 28, 29, *range(33, 41)}      # OCR "T40 to T40"
    assert SUBTASKS[30].child == (32,) and SUBTASKS[39].child == (41, 42, 43)
    assert (len(PRISMATIC_ELIMINATED), len(FIRST_LINK_ELIMINATED), len(LAST_LINK_ELIMINATED)) == (9, 19, 8)


def test_one_link_layered_graph_has_6_forward_and_3_backward_layers():
    """§4.3.1: six forward layers, three backward, link i two layers after link i-1
    (Table 4.3: link 2's T1, T2 in layer 1, T6-T8 and T12-T14 in layer 3)."""
    forward = {LOCAL_LAYERS[n] for n in range(1, 26)}
    backward = {LOCAL_LAYERS[n] for n in range(26, 44)}
    assert forward == set(range(1, 7)) and backward == {1, 2, 3}
    assert [LOCAL_LAYERS[n] for n in (1, 3, 6, 12, 9, 15, 18, 23, 26, 32, 41)] == [1, 2, 3, 3, 4, 4, 5, 6, 1, 2, 3]


# -- the general six-link arm (§4.3.1, Table 4.3, Appendix C) -------------------------

def test_general_six_link_arm_figures(general):
    g = thesis.GENERAL_ARM
    assert len(general) == g["tasks"] == 6 * 43 - 19 - 8
    assert critical_path_length(general) == g["layers"] == 4 * 6 + 3
    assert len(layers(general, "thesis")) == 27
    assert max_concurrency(general, "thesis") == g["max_concurrency"]
    widest = [k + 1 for k, layer in enumerate(layers(general, "thesis")) if len(layer) == 13]
    assert widest == [5, 7, 9]                                          # "as indicated by layers 5, 7 and 9"
    s = schedule(general, 13)
    assert s.levels == 27
    assert s.speedup == pytest.approx(g["speedup"], abs=0.01)          # 231 / 27 = 8.556, printed 8.55
    assert s.efficiency == pytest.approx(g["efficiency"], abs=1e-4)    # 65.81 %
    assert len(critical_path(general)) == 27


def test_asap_layering_is_as_long_but_wider(general):
    """ASAP gives the same 27 layers, but backward subtasks that need only forward results
    (T26-T29, T36-T38) join the forward layers: 18 at once instead of 13."""
    assert len(layers(general, "asap")) == 27
    assert max_concurrency(general, "asap") == 18
    early = layer_numbers(general, "asap")
    assert early[527] < early[623]            # N_5 is ready long before link 6's forward recursion ends


@pytest.mark.parametrize("n", [2, 3, 4, 9, 12])
def test_critical_path_is_4n_plus_3(n):
    graph = newton_euler_graph(revolute_chain(n), "general")
    assert len(graph) == 43 * n - 27
    assert critical_path_length(graph) == 4 * n + 3                    # 12n + 9 flops
    assert max_concurrency(graph) == min(13, {2: 9, 3: 11}.get(n, 13))
    assert len(set(graph.tasks)) == len(graph) and all(100 < t < (n + 1) * 100 for t in graph.tasks)


def test_thesis_layering_reproduces_table_4_3(general):
    """Every task of Table 4.3 on links 2-6 in the printed layer; the differences are the
    printed table's own faults (link 1, and the last link's eliminated subtasks)."""
    printed = {code: k + 1 for k, row in enumerate(thesis.TABLE_4_3) for code in row}
    assert len(printed) == 240
    ours = layer_numbers(general, "thesis")
    assert {c for c in printed if c > 200 and c in ours and ours[c] != printed[c]} == set()
    assert set(printed) - set(ours) == {126, 127} | {600 + n for n in LAST_LINK_ELIMINATED}
    assert set(ours) - set(printed) == {119}


def test_appendix_c_lengths_met_or_beaten(general):
    """Appendix C: 116, 78, 58, 47, 39, 34, 31, 30 levels for p = 2..9.  The critical-path
    rule meets or beats each, and reaches the window lower bound (optimal); the thesis's
    rule is one level longer at p = 8 and 9, where the printed schedules are not valid."""
    for p, printed in thesis.GENERAL_ARM["levels"].items():
        best = schedule(general, p, "critical-path")
        assert lower_bound(general, p) <= best.levels <= printed
        assert best.levels == window_lower_bound(general, p)
        ours = schedule(general, p, "thesis")
        assert lower_bound(general, p) <= ours.levels <= printed + (p in (8, 9))
    assert [schedule(general, p).levels for p in range(2, 10)] == [116, 77, 58, 47, 39, 34, 30, 28]


def test_printed_six_processor_schedule_breaks_a_precedence(general):
    """Table C.5 runs 401 (needs ω of link 3) at the level of 303; it also keeps 126 and
    lacks 119 and 128.  The checker says so."""
    problems = schedule_problems(general, thesis.TABLE_C5, 6)
    assert "task 401 at level 5 needs 303, which runs at level 5" in problems
    assert any("126 is not a task" in p for p in problems)
    with pytest.raises(InputError, match="invalid schedule"):
        check_schedule(general, thesis.TABLE_C5, 6)


# -- the customised Stanford arm (Tables 4.4-4.8) -------------------------------------

def test_stanford_sparsity_from_the_model_matches_table_4_4():
    """Zeros of p_{i-1} (into link i, with q3 along the boom) and s_i per link, from
    prepare(); Table 4.4 prints the same but for link 5's s_z (Table 2.7 and the model: 0)."""
    links = link_data(dp.load_robot("stanford"), customised=True)
    com_zeros = [link.com_zeros for link in links]
    offsets_into = [link.offset_zeros for link in links]           # p_0 .. p_5
    assert com_zeros == [1, 2, 2, 1, 2, 2]                           # Table 4.4: 1, 2, 2, 1, 1, 2
    assert offsets_into == [3, 2, 2, 3, 3, 3]                       # p_1 = (0, d2, 0), p_2 = (0, -q3, 0)
    assert [link.rotation_subtasks for link in links] == [0] * 6    # every rest rotation a signed permutation
    assert [link.revolute for link in links] == [True, True, False, True, True, True]


def test_stanford_customised_tasks_against_table_4_6(stanford):
    """153 subtasks.  Against Tables 4.2 + 4.6 as printed (154): 316 and 317 stay (they
    compute λ₂ p₂ with p₂ = (0, −q₃, 0); Table 4.6 used p₃ = 0), 522, 523, 537 go (s₅ has
    two zeros).  Table 4.7's 156 keeps also 120, 121, 126, 127, 233 and drops 119, 128, 129."""
    assert len(stanford) == 153
    per_link = [sum(1 for t in stanford.tasks if t // 100 == k) for k in range(1, 7)]
    assert per_link == [19, 31, 21, 31, 28, 23]
    table_4_2 = {100 + n for n in FIRST_LINK_ELIMINATED} | {300 + n for n in PRISMATIC_ELIMINATED} | \
        {600 + n for n in LAST_LINK_ELIMINATED}
    everything = {100 * k + n for k in range(1, 7) for n in range(1, 44)}
    ours = everything - set(stanford.tasks) - table_4_2
    printed = {code for codes in thesis.TABLE_4_6.values() for code in codes} - table_4_2
    assert printed - ours == {316, 317}
    assert ours - printed == {522, 523, 537}
    assert len(everything - table_4_2 - printed) == 154
    table_4_7 = {code for row in thesis.TABLE_4_7 for code in row}
    assert set(stanford.tasks) ^ table_4_7 == {316, 317, 119, 128, 129} | {120, 121, 126, 127, 233, 522, 523, 537}


def test_stanford_layering_and_table_4_8_times(stanford):
    """Dhanaraj's stacking: 27 layers, maximum concurrency 9 (Table 4.7); the critical path
    is 25, because the boom's ω and the zero offsets of links 4-6 shorten two chains that the
    stacking keeps at two layers per link.  Times at 0.135 ms per level (Table 4.8) are never
    longer than the printed "present work"."""
    ref = thesis.STANFORD
    assert len(layers(stanford, "thesis")) == ref["layers"] == 27
    assert max_concurrency(stanford, "thesis") == ref["max_concurrency"] == 9
    assert critical_path_length(stanford) == 25
    for rule in RULES:
        for p, printed in ref["levels"].items():
            s = schedule(stanford, p, rule)
            assert lower_bound(stanford, p) <= s.levels <= printed
            assert s.levels * ref["ms_per_level"] <= ref["present_work_ms"][p] + 0.005 + 1e-12   # 5.265 printed 5.26
    assert [schedule(stanford, p).levels for p in range(1, 9)] == [153, 77, 51, 39, 31, 26, 25, 25]


def test_printed_stanford_task_set_reproduces_table_4_8(stanford_printed):
    """Table 4.7's own 156 subtasks, scheduled by the thesis's rule: the printed levels
    (Table 4.8's times / 0.135 ms) at p = 1, 2, 3, 5, 7, shorter at 6 and 8, one longer at
    p = 4, where the printed Table C.11 has only 155 tasks and breaks precedences."""
    ref = thesis.STANFORD
    assert len(stanford_printed) == ref["tasks"] == 156
    assert max_concurrency(stanford_printed, "thesis") == 9 and len(layers(stanford_printed, "thesis")) == 27
    ours = {p: schedule(stanford_printed, p, "thesis").levels for p in ref["levels"]}
    assert {p: ours[p] for p in (1, 2, 3, 5, 7)} == {p: ref["levels"][p] for p in (1, 2, 3, 5, 7)}
    assert [round(ours[p] * ref["ms_per_level"], 2) for p in (1, 2, 3, 5, 7)] == [21.06, 10.67, 7.02, 4.32, 3.65]
    assert ours[6] < ref["levels"][6] and ours[8] < ref["levels"][8] and ours[4] == ref["levels"][4] + 1
    problems = schedule_problems(stanford_printed, thesis.TABLE_C11, 4)
    assert "task 401 at level 6 needs 303, which runs at level 6" in problems
    assert sum(map(len, thesis.TABLE_C11)) == 155


# -- any graph ------------------------------------------------------------------------

def test_generic_dag_is_layered_and_scheduled():
    dag = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"], "e": [], "f": ["e"], "g": ["d", "f"]}
    assert critical_path_length(dag) == 4 and critical_path(dag) == ["a", "b", "d", "g"]
    assert layers(dag, "asap") == [["a", "e"], ["b", "c", "f"], ["d"], ["g"]]
    assert layer_numbers(dag, "alap")["e"] == 2 and layers(dag, "thesis") == layers(dag, "asap")
    for p in (1, 2, 3):
        for rule in RULES:
            s = schedule(dag, p, rule)
            assert s.levels >= lower_bound(dag, p) == max(math.ceil(7 / p), 4)
    assert schedule(dag, 2).levels == 4 and schedule(dag, 1).speedup == 1.0
    graph = TaskGraph(dag, flops_per_task=1)
    assert schedule(graph, 3).efficiency == pytest.approx(7 / 4 / 3)


@pytest.mark.parametrize("table, fragment", [
    ([["a"], ["b", "c"], ["d"]], "never run"),
    ([["a"], ["b", "c"], ["d", "d"], ["e"]], "runs twice"),
    ([["a", "b"], ["c"], ["d"], ["e"]], "needs 'a', which runs at level 1"),
    ([["a"], ["b", "c", "e"], ["d"]], "3 tasks on 2 processors"),
    ([["a"], ["b", "c"], ["d"], ["e", "x"]], "'x' is not a task"),
])
def test_checker_finds_each_fault(table, fragment):
    dag = {"a": [], "b": ["a"], "c": ["a"], "d": ["b"], "e": []}
    assert any(fragment in problem for problem in schedule_problems(dag, table, 2))
    with pytest.raises(InputError):
        check_schedule(dag, table, 2)
    check_schedule(dag, [["a", "e"], ["b", "c"], ["d"]], 2)


def test_bad_graphs_and_processor_counts_are_refused(general):
    with pytest.raises(InputError, match="cycle"):
        schedule({"a": ["b"], "b": ["a"]}, 1)
    with pytest.raises(InputError, match="not a task"):
        schedule({"a": ["z"]}, 1)
    for p in (0, -1, 1.5, True, "2"):
        with pytest.raises(InputError, match="processors"):
            schedule(general, p)
    with pytest.raises(InputError, match="rule"):
        schedule(general, 2, rule="fastest")
    with pytest.raises(InputError, match="mode"):
        newton_euler_graph(dp.load_robot("puma560"), "optimised")


# -- trees, unsupported models, friction ----------------------------------------------

TREE = [("j1", "base", "l1", "0 0 1", "revolute"), ("j2a", "l1", "l2", "0 1 0", "revolute"),
        ("j3a", "l2", "l3", "0 1 0", "revolute"), ("j2b", "l1", "l4", "0 1 0", "revolute"),
        ("j3b", "l4", "l5", "0 0 1", "prismatic")]


def test_tree_precedences_follow_parent_and_all_children():
    model = dp.load_urdf_string(_urdf("tree", TREE))
    assert list(model.parents) == [-1, 0, 1, 0, 3]
    graph = newton_euler_graph(model, "general")
    # root 24 + 10 for its second child; link 2, link 4: 43; leaf 3: 35; prismatic leaf 5: 43 - 9 - 8
    assert len(graph) == 24 + 10 + 43 + 35 + 43 + 26
    assert graph.preds[201] == graph.preds[401] == frozenset()       # T1 of the root's children: ω₀ = 0
    assert graph.preds[412] == {110}                                  # λ of the parent (link 1), not of link 3
    assert graph.preds[130] == {232} and graph.preds[154] == {432}    # f of the first and the second child
    assert {156, 130, 131} <= graph.preds[132] and 163 in graph.preds[141]
    assert graph.preds[230] == {326}                                  # leaf 3: f = F, its T32 removed
    for p in (1, 2, 4, 20):
        for rule in RULES:
            assert schedule(graph, p, rule).levels >= lower_bound(graph, p)


@pytest.mark.parametrize("seed", range(4))
def test_random_trees_schedule_validly(seed):
    model = dp.load_urdf_string(random_tree_urdf(seed, 7))
    for mode in ("general", "customised"):
        graph = newton_euler_graph(model, mode, friction=seed % 2 == 1)
        base = 100 if max(d.number for d in graph.info.values()) < 100 else 1000    # links with many extras
        assert all(t == d.link * base + d.number for t, d in graph.info.items())
        for p in (1, 3, 50):
            for rule in RULES:
                s = schedule(graph, p, rule)
                assert s.levels >= window_lower_bound(graph, p) >= lower_bound(graph, p)


def test_unsupported_models_are_refused_by_name():
    with pytest.raises(ModelError, match="floating base"):
        newton_euler_graph(dp.load_robot("puma560", floating_base=True))
    welded = dp.load_urdf_string(_urdf("welded", [("weld", "base", "l1", "0 0 1", "fixed")]))
    with pytest.raises(ModelError, match="'welded' has no moving joint"):
        newton_euler_graph(welded)


def test_friction_subtasks_follow_table_3_3(general):
    """Table 3.3: bearing friction 15 M + 5 A (revolute) and 10 M + 7 A (prismatic),
    transmission 2 M + 2 A (linear interpolation) or 5 M + 4 A (spline), as 3-flop subtasks."""
    assert BEARING_FRICTION == {True: math.ceil(20 / 3), False: math.ceil(17 / 3)}
    assert TRANSMISSION == {"linear": math.ceil(4 / 3), "spline": math.ceil(9 / 3)}
    puma = newton_euler_graph(dp.load_robot("puma560"), "general", friction=True)
    assert len(puma) == 231 + 6 * (7 + 2)
    assert critical_path_length(puma) == 27 + 7    # joint 1's friction after the recursion: 5 + 2 levels
    assert critical_path(puma)[-7:] == [144, 146, 148, 149, 150, 151, 152]
    assert {132, 141, 142} <= puma.preds[144] and 143 in puma.preds[150]
    boom = newton_euler_graph(dp.load_robot("stanford"), "general", friction=True, transmission="spline")
    assert len(boom) == 222 + 5 * (7 + 3) + (6 + 3) and 332 in boom.preds[349]   # prismatic τ = f_z


# -- the command line -----------------------------------------------------------------

def test_cli_json_shape(tmp_path, general):
    out = tmp_path / "schedules.json"
    assert main(["schedule", "puma560", "--general", "--processors", "6", "13", "--rule", "thesis",
                 "critical-path", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert {"robot", "mode", "tasks", "critical_path_levels", "max_concurrency", "schedules"} <= set(report)
    assert (report["robot"], report["mode"], report["tasks"]) == ("puma560", "general", 231)
    assert (report["critical_path_levels"], report["max_concurrency"]) == (27, 13)
    assert [(s["rule"], s["processors"]) for s in report["schedules"]] == \
        [("thesis", 6), ("thesis", 13), ("critical-path", 6), ("critical-path", 13)]
    for entry in report["schedules"]:
        assert {"processors", "levels", "speedup", "efficiency", "table"} <= set(entry)
        assert entry["levels"] == len(entry["table"]) and entry["thesis_levels"] == {6: 39, 13: 27}[entry["processors"]]
        assert all(type(code) is int for level in entry["table"] for code in level)
        check_schedule(general, entry["table"], entry["processors"])
        assert entry["speedup"] == pytest.approx(231 / entry["levels"], abs=1e-6)


def test_cli_default_max_and_plot(tmp_path, capsys):
    png = tmp_path / "stanford.png"
    assert main(["schedule", "stanford", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "customised" and report["tasks"] == 153
    assert [s["processors"] for s in report["schedules"]] == list(range(1, 10))
    assert main(["schedule", "stanford", "--max", "--friction", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "206 subtasks" in out and "wrote" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv, fragment", [
    (["schedule", "nosuchbot"], "bundled robots"),
    (["schedule", "puma560", "--processors", "0"], "at least 1"),
    (["schedule", "puma560", "--processors", "2.5"], "whole number"),
    (["schedule", "puma560", "--max", "--processors", "3"], "not allowed"),
    (["schedule", "puma560", "--general", "--customised"], "not allowed"),
    (["schedule", "puma560", "--rule", "fastest"], "invalid choice"),
])
def test_cli_bad_input_is_one_line_exit_2(argv, fragment, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and "Traceback" not in err and err.count("\n") == 1


def test_cli_model_without_moving_joints_exit_2(tmp_path, capsys):
    path = tmp_path / "welded.urdf"
    path.write_text(_urdf("welded", [("weld", "base", "l1", "0 0 1", "fixed")]))
    assert main(["schedule", str(path)]) == 2
    assert "no moving joint" in capsys.readouterr().err


def test_study_defaults_to_one_up_to_the_maximum_concurrency(general):
    study = schedule_study(revolute_chain(6), "general", rules=RULES)
    assert [s.processors for s in study.schedules] == list(range(1, 14)) * 2
    assert study.reference is thesis.GENERAL_ARM and study.shown().processors == 9


# -- processor counts of any integral type, big counts in the figures, the thesis's robot by its file ----------

def _png_size(path) -> tuple:
    """(width, height) in pixels, from the PNG's IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_gantt_chart_is_as_tall_as_the_processors_used(tmp_path):
    """A schedule on far more processors than any level uses is drawn as tall as its widest
    level: the same height as on exactly that many processors; 10^30 processors draw too."""
    from dyn_plugin.parallel import plot_study

    model = dp.load_robot("scara")
    wide = schedule_study(model, processors=[200, 10 ** 30])
    busy = max(len(level) for level in wide.schedules[0].table)
    assert busy < 20 and all(s.table == wide.schedules[0].table for s in wide.schedules)
    exact = schedule_study(model, processors=busy)
    heights = {}
    for name, study, shown in (("200", wide, wide.schedules[0]), ("1e30", wide, wide.schedules[1]),
                               ("busy", exact, exact.schedules[0])):
        gantt, speed = plot_study(study, tmp_path / f"{name}.png", schedule=shown)
        heights[name] = _png_size(gantt)[1]
        assert _png_size(speed)[1] < 1000
    assert heights["200"] == heights["1e30"] == heights["busy"] < 1500


def test_processor_counts_of_any_integral_type():
    import numpy as np

    graph = newton_euler_graph(dp.load_robot("scara"), "general")
    s = schedule(graph, np.int64(4))
    assert type(s.processors) is int and s.table == schedule(graph, 4).table
    for p in (True, np.True_, 4.0, np.float64(4), "4", None):
        with pytest.raises(InputError, match="whole number >= 1"):
            schedule(graph, p)
    study = schedule_study(dp.load_robot("scara"), processors=np.arange(1, 4))
    assert [s.processors for s in study.schedules] == [1, 2, 3]
    assert [s["processors"] for s in json.loads(study.to_json())["schedules"]] == [1, 2, 3]


def test_study_takes_one_processor_count_and_names_every_mode():
    import numpy as np

    model = dp.load_robot("scara")
    assert [s.processors for s in schedule_study(model, processors=4).schedules] == [4]
    assert [s.processors for s in schedule_study(model, processors=np.uint8(3)).schedules] == [3]
    for p in (True, 2.5, "4", [2, 2.0], [np.True_]):
        with pytest.raises(InputError, match="whole number >= 1"):
            schedule_study(model, processors=p)
    with pytest.raises(InputError, match="general, customised, full, operations; got 'foo'"):
        schedule_study(model, mode="foo")


def test_an_empty_graph_is_refused():
    for graph in ({}, TaskGraph({}, name="nothing")):
        with pytest.raises(InputError, match="no tasks"):
            schedule(graph, 4)


def test_thesis_figures_only_for_the_bundled_stanford_file(tmp_path):
    """Another arm that calls itself "stanford" gets no Dhanaraj figures; the bundled file does,
    as loaded (a locked joint makes it another arm)."""
    fake = tmp_path / "fake_stanford.urdf"
    fake.write_text(_urdf("stanford", [(f"j{k}", "base" if k == 1 else f"l{k - 1}", f"l{k}", "0 0 1", "revolute")
                                       for k in range(1, 7)]))
    impostor = dp.load_robot(str(fake))
    assert impostor.name == "stanford"
    assert schedule_study(impostor, processors=[4]).reference is None
    assert schedule_study(dp.load_robot("stanford"), processors=[4]).reference is thesis.STANFORD
    locked = dp.load_robot("stanford", lock={"joint6": None})
    assert schedule_study(locked, processors=[4]).reference is None
    out = tmp_path / "fake.json"
    assert main(["schedule", str(fake), "--processors", "4", "6", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["thesis"] is None and not any("thesis_levels" in s for s in report["schedules"])


def test_cli_json_to_stdout_still_writes_the_plot(tmp_path, capsys):
    png = tmp_path / "jp.png"
    assert main(["schedule", "scara", "--processors", "2", "3", "--json", "-", "--plot", str(png)]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)                       # stdout is the JSON alone
    assert [s["processors"] for s in report["schedules"]] == [2, 3]
    for path in (png, tmp_path / "jp-speedup.png"):
        assert _png_size(path)[0] > 0 and str(path) in captured.err


def test_cli_big_processor_count_with_a_plot(tmp_path, capsys):
    png = tmp_path / "big.png"
    assert main(["schedule", "scara", "--processors", "1e30", "--plot", str(png)]) == 0
    assert _png_size(png)[1] < 1500 and "wrote" in capsys.readouterr().out


def test_cli_help_names_each_modes_default(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["schedule", "--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split()).split(" options: ", 1)[1]     # past the usage line
    order = ("--general", "--customised", "--operations", "--rule")
    entries = {option: text.split(f" {option} ", 1)[1].split(f" {after} ", 1)[0]
               for option, after in zip(order, order[1:])}
    assert entries["--customised"].endswith("(default)")
    for option in ("--general", "--operations"):   # neither is the default, and neither says it is
        assert "(default: customised)" not in entries[option] and entries[option].endswith("(default: --customised)")
