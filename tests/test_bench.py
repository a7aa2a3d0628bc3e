"""``dyn-plugin bench`` on tiny sizes: every figure in the JSON, ratios from the same
figures, the plot, pinocchio's parallel functions against its loop, and clear errors.
No timing is asserted: only structure and arithmetic."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.errors import BackendError, InputError, UnknownRobotError
from dyn_plugin.tools import bench
from dyn_plugin.tools.bench.runner import _ratios
from dyn_plugin.tools.bench.targets import FRICTION_OPS
from dyn_plugin.tools.cli.parser import _Parser

FAST = dict(sizes=[1, 10], repeat=2, target=1e-4)


@pytest.fixture(scope="module")
def puma_result():
    """Every op, ours (rigid and friction) and every reference, on the PUMA-560."""
    return bench.run_bench(robots=["puma560"], backends=["newton_euler", "newton_euler_friction"], **FAST)


def test_json_has_every_figure_and_the_environment(puma_result, tmp_path):
    path = tmp_path / "bench.json"
    bench.write_json(puma_result, path)
    doc = json.loads(path.read_text())
    env = doc["environment"]
    for dist in ("dyn_plugin", "python", "numpy", "numba", "pin", "pybullet"):
        assert dist in env["versions"]
    assert env["versions"]["pin"] and env["versions"]["pybullet"]
    for key in ("cpu", "platform", "cores", "usable_cores", "numba_threads", "pinocchio_parallel_threads", "date",
                "load_average", "others_busy_cores"):
        assert key in env
    assert doc["settings"]["sizes"] == [1, 10] and doc["settings"]["repeat"] == 2
    assert doc["robots"] == {"puma560": 6}

    expected = set()
    for op in bench.OPS:
        for backend in ("newton_euler", "newton_euler_friction", "pinocchio"):
            expected |= {(op, backend, N) for N in (1, 10)}
        if op in bench.PIN_PARALLEL_CALLS:
            expected |= {(op, "pinocchio_parallel", N) for N in (1, 10)}
        if op in bench.PYBULLET_CALLS:
            expected |= {(op, "pybullet", N) for N in (1, 10)}
    results = doc["results"]
    assert {(r["op"], r["backend"], r["N"]) for r in results} == expected and len(results) == len(expected)
    assert {(u["op"], u["backend"]) for u in doc["unavailable"]} == {
        ("M", "pinocchio_parallel"), ("bias", "pinocchio_parallel"), ("FD", "pybullet"),
        ("dID", "pinocchio_parallel"), ("dFD", "pinocchio_parallel"), ("dID", "pybullet"), ("dFD", "pybullet")}
    for r in results:
        assert r["robot"] == "puma560" and r["call"]
        assert len(r["repeats_us"]) == 2 and all(t > 0 for t in r["repeats_us"])
        assert r["median_us"] == pytest.approx(float(np.median(r["repeats_us"])), rel=1e-12)
        assert r["throughput_per_s"] == pytest.approx(1e6 / r["median_us"], rel=1e-12)
        assert r["timed_states"] == r["N"] and not r["extrapolated"]  # tiny sizes: never a prefix
        assert r["calls_per_repeat"] >= 1 and r["first_call_s"] >= 0
    assert any("single and batch" in c["what"] for c in doc["checks"])
    assert all(c["ok"] for c in doc["checks"]), doc["checks"]
    assert {w["backend"] for w in doc["warmup"]} == {"newton_euler", "newton_euler_friction"}


def test_ratios_are_ours_over_pinocchio_from_the_same_figures(puma_result):
    doc = puma_result.as_dict()
    pin = {(r["op"], r["N"]): r["median_us"] for r in doc["results"] if r["backend"] == "pinocchio"}
    par = {(r["op"], r["N"]): r["median_us"] for r in doc["results"] if r["backend"] == "pinocchio_parallel"}
    for r in doc["results"]:
        key = (r["op"], r["N"])
        assert r["ratio_vs_pinocchio"] == pytest.approx(r["median_us"] / pin[key], rel=1e-12)
        assert r["speedup_vs_pinocchio"] == pytest.approx(pin[key] / r["median_us"], rel=1e-12)
        if key in par:
            assert r["ratio_vs_pinocchio_parallel"] == pytest.approx(r["median_us"] / par[key], rel=1e-12)
        else:
            assert r["ratio_vs_pinocchio_parallel"] is None
        if r["backend"] == "pinocchio":
            assert r["ratio_vs_pinocchio"] == 1.0


def test_targets_come_from_the_measured_ratios(puma_result):
    """Sizes 1 and 10: only the one-state targets are judged (N = 10 is no target's size)."""
    figures = {(m.op, m.backend, m.N): m for m in puma_result.measurements}
    targets = puma_result.targets()
    assert {t["N"] for t in targets} == {1}
    rigid = [t for t in targets if t["backend"] == "newton_euler"]
    assert [t["op"] for t in rigid] == ["ID", "FD", "M", "dID", "dFD"]
    for t in rigid:
        m = figures[(t["op"], "newton_euler", 1)]
        assert t["value"] == pytest.approx(m.ratio) and t["relation"] == "<="
        assert t["status"] == ("PASS" if m.ratio <= t["limit"] else "MISS")
    friction = [t for t in targets if t["backend"] == "newton_euler_friction"]
    assert {t["op"] for t in friction} == set(FRICTION_OPS)        # derivatives: measured, not judged
    for t in friction:
        friction_us, rigid_us = (figures[(t["op"], b, 1)].median_us for b in ("newton_euler_friction", "newton_euler"))
        ratio = friction_us / rigid_us
        assert t["value"] == pytest.approx(ratio) and t["limit"] == 1.5


def _fake_result(sizes, pin_us, ours_us, backends=("newton_euler",)):
    """A BenchResult for the PUMA-560 with chosen times (ID only), ratios computed as in a run."""
    def fake(backend, N, us):
        return bench.Measurement(robot="puma560", op="ID", backend=backend, call="x", N=N, timed_states=N, number=1,
                                 repeats_us=[us], first_call_s=0.0, repeats_requested=1)

    measurements = [fake("pinocchio", N, pin_us) for N in sizes]
    measurements += [fake(b, N, ours_us) for b in backends for N in sizes]
    result = bench.BenchResult(settings={"backends": list(backends), "against": ["pinocchio"], "ops": ["ID"],
                                         "sizes": list(sizes)}, environment={}, measurements=measurements,
                               unavailable=[], checks=[], warmups=[], notes=[], robots={"puma560": 6})
    for N in sizes:
        _ratios(result, "puma560", "ID", N)
    return result


def test_sizes_no_target_covers_are_not_judged():
    """A batch target is for 10⁵ states: N = 1000 (here 40× slower than pinocchio) is no MISS."""
    result = _fake_result([1, 1000], pin_us=2.0, ours_us=1.0)
    slow = result.find("puma560", "ID", "newton_euler", 1000)
    slow.repeats_us = [80.0]
    _ratios(result, "puma560", "ID", 1000)
    assert [(t["N"], t["status"]) for t in result.targets()] == [(1, "PASS")]
    lines = bench.legend_lines(result)
    assert any("one state (N = 1" in line and "100,000 states" in line and "not judged" in line for line in lines)
    assert any("no N = 100,000" in line for line in lines)


def test_friction_target_is_the_worse_of_the_target_sizes():
    result = _fake_result([1, 1000, 100_000], pin_us=2.0, ours_us=1.0,
                          backends=("newton_euler", "newton_euler_friction"))
    for N, us in ((1, 1.2), (1000, 9.0), (100_000, 1.4)):   # N = 1000 is never judged
        result.find("puma560", "ID", "newton_euler_friction", N).repeats_us = [us]
    (target,) = [t for t in result.targets() if t["backend"] == "newton_euler_friction"]
    assert target["N"] == 100_000 and target["value"] == pytest.approx(1.4) and target["status"] == "PASS"


def test_table_and_plot(puma_result, tmp_path):
    from rich.console import Console

    console = Console(record=True, width=220)
    bench.print_report(puma_result, console)
    text = console.export_text()
    assert "puma560 (6 joints)" in text and "time ratio to the pinocchio" in text
    assert "rneaInParallel" in text and "calculateMassMatrix" in text and "speed targets" in text
    assert "issue" not in text and "MISS" not in text and "÷pin" not in text   # no project jargon
    assert "ID = inverse dynamics" in text and "speed-up = 1 ÷ ratio" in text
    assert f"pin {puma_result.environment['versions']['pin']}" in text  # versions and CPU on top
    assert puma_result.environment["cpu"] in text
    path = bench.plot_scaling(puma_result, tmp_path / "scaling.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


@pytest.mark.parametrize("robot", dp.list_robots())
def test_pinocchio_parallel_equals_its_loop(robot):
    errors = bench.check_pinocchio_parallel(dp.load_robot(robot), count=50, seed=3, threads=2)
    assert errors["rneaInParallel"] <= 1e-12
    assert errors["abaInParallel"] <= 1e-12             # against aba(..., Convention.WORLD)
    assert errors["abaInParallel_vs_aba_local"] <= 1e-10  # the default aba: roundoff only


def test_continuous_joints_and_a_urdf_path(tmp_path):
    """pinocchio's (cos, sin) configuration for continuous joints, converted outside the timing."""
    from urdf_factory import random_tree_urdf, write_urdf

    path = write_urdf(tmp_path, random_tree_urdf(np.random.default_rng(5), 4, continuous=True))
    model = dp.load_robot(str(path))
    assert model.continuous.any()
    errors = bench.check_pinocchio_parallel(model, count=20, threads=1)
    assert errors["rneaInParallel"] <= 1e-12 and errors["abaInParallel"] <= 1e-12
    result = bench.run_bench(robots=[str(path)], backends=["newton_euler"], ops=["ID", "M"], against=["pinocchio"],
                             **FAST)
    assert all(c["ok"] for c in result.checks), result.checks
    assert {m.backend for m in result.measurements} == {"newton_euler", "pinocchio"}


def test_backend_that_cannot_be_built_is_skipped_with_a_note():
    """Our backends are the registry's; one that cannot be built for a robot is skipped, not fatal."""
    def not_for_this_robot(model, **options):
        raise BackendError(f"not for {model.name}")

    dp.register_backend("not_for_this_robot", not_for_this_robot)
    try:
        result = bench.run_bench(robots=["scara"], backends=["not_for_this_robot"], ops=["ID"], against=["pinocchio"],
                                 **FAST)
    finally:
        dp.unregister_backend("not_for_this_robot")
    assert any("not_for_this_robot" in note and "skipped" in note for note in result.notes)
    assert {m.backend for m in result.measurements} == {"pinocchio"}


@pytest.mark.parametrize("kwargs, error, fragment", [
    (dict(ops=["XX"]), InputError, "ID, FD, M, bias"),
    (dict(backends=["warp_drive"]), BackendError, "newton_euler"),
    (dict(backends=["pybullet"]), InputError, "choose references with against"),   # Python's spelling
    (dict(robots=["nosuchbot"]), UnknownRobotError, "puma560"),
    (dict(against=["drake"]), InputError, "pinocchio_parallel"),
    (dict(sizes=[0]), InputError, "at least 1"),
    (dict(repeat=0), InputError, "at least 1"),
    (dict(threads=0), InputError, "at least 1"),
])
def test_bad_options_are_clear_errors(kwargs, error, fragment):
    with pytest.raises(error, match=fragment.replace(".", r"\.")):
        bench.run_bench(**kwargs)


def _parse(argv):
    parser = _Parser(prog="dyn-plugin bench")
    bench.add_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize("argv, fragment", [
    (["--op", "XX"], "invalid choice"),
    (["--sizes", "1.5"], "whole numbers"),
    (["--sizes", "0"], "whole numbers"),
    (["--against", "drake"], "invalid choice"),
    (["--repeat", "0"], "at least 1"),
    (["--sizes", "1e9"], "from 1 to 1,000,000"),       # was exit 3: 44.7 GiB asked for
    (["--seed", "-1"], "seeds are whole numbers >= 0"),  # was exit 3: numpy's 'expected non-negative integer'
])
def test_bad_arguments_exit_2(argv, fragment, capsys):
    with pytest.raises(SystemExit) as exc:
        _parse(argv)
    assert exc.value.code == 2 and fragment in capsys.readouterr().err


def test_cli_run_writes_json_and_plot(tmp_path, capsys):
    from rich.console import Console

    args = _parse(["--quick", "--robot", "scara", "--op", "ID", "FD", "--sizes", "1", "1e1", "--repeat", "2",
                   "--json", str(tmp_path / "b.json"), "--plot", str(tmp_path / "b.png"), "--check"])
    assert args.sizes == [1, 10]
    console = Console(record=True, width=200)
    assert bench.run(args, console) == 0  # --check: no target for scara, nothing missed
    doc = json.loads((tmp_path / "b.json").read_text())
    assert {r["op"] for r in doc["results"]} == {"ID", "FD"} and doc["robots"] == {"scara": 4}
    assert (tmp_path / "b.png").stat().st_size > 10_000
    text = console.export_text()
    assert "scara (4 joints)" in text and "total wall time" in text and "no target measured" in text


def test_cli_json_to_stdout_only(capsys):
    from rich.console import Console

    args = _parse(["--robot", "scara", "--backend", "newton_euler", "--op", "M", "--sizes", "1", "--repeat", "1",
                   "--against", "pinocchio", "--json", "-", "--fresh-memory"])
    console = Console(record=True)
    assert bench.run(args, console) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["backend"] for r in doc["results"]} == {"newton_euler", "pinocchio"}
    assert doc["environment"]["allocator"] == "default"
    assert console.export_text() == ""


def test_check_exits_1_on_a_miss_only():
    result = _fake_result([1, 100_000], pin_us=2.0, ours_us=1.0)
    result.find("puma560", "ID", "newton_euler", 100_000).repeats_us = [0.5]
    _ratios(result, "puma560", "ID", 100_000)
    targets = result.targets()
    assert [(t["N"], t["status"]) for t in targets] == [(1, "PASS"), (100_000, "MISS")]  # 0.5×; 4× < 10×
    assert targets[1]["value"] == pytest.approx(4.0)
    assert bench.exit_code(targets, check=True) == 1
    assert bench.exit_code(targets, check=False) == 0
    assert bench.exit_code(targets[:1], check=True) == 0


# -- cores: the --workers sweep, parallel efficiency, the physical limit -----------------------

needs_two_cores = pytest.mark.skipif(dp.loops.available_cores() < 2, reason="needs 2 usable cores")


@pytest.fixture(scope="module")
def sweep():
    """ID and M of the PUMA-560, ours (one of them generated) and pinocchio, at 1 and 2
    workers; ``seen``: the workers each of the spy backend's batch calls ran under."""
    seen = []

    def spy(model, **options):
        be = dp.get_backend("newton_euler", model, **options)
        original = be.inverse_dynamics

        def inverse_dynamics(q, qd, qdd):
            seen.append((np.ndim(q), dp.workers()))
            return original(q, qd, qdd)
        be.inverse_dynamics = inverse_dynamics
        return be

    dp.register_backend("spy_workers", spy)
    try:
        result = bench.run_bench(robots=["puma560"], backends=["spy_workers", "symbolic_numba"], ops=["ID", "M"],
                                 against=["pinocchio", "pinocchio_parallel"], workers=[2, 1, 2], **FAST)
    finally:
        dp.unregister_backend("spy_workers")
    return result, seen


@needs_two_cores
def test_workers_sweep_measures_batches_once_per_worker_count(sweep):
    result, seen = sweep
    doc = json.loads(json.dumps(result.as_dict()))
    assert doc["settings"]["workers"] == [1, 2] and doc["settings"]["pinocchio_threads"] == [1, 2]
    rows = {}
    for r in doc["results"]:
        assert "workers" in r and r["median_ns"] == pytest.approx(1e3 * r["median_us"], rel=1e-12)
        rows.setdefault((r["op"], r["backend"], r["N"]), []).append(r["workers"])
    for op in ("ID", "M"):
        for backend in ("spy_workers", "symbolic_numba"):
            assert rows[(op, backend, 1)] == [None]            # single states: timed once, serial
            assert sorted(rows[(op, backend, 10)]) == [1, 2]   # batches: once per number of workers
        assert rows[(op, "pinocchio", 1)] == rows[(op, "pinocchio", 10)] == [None]  # the per-call loop: once
    assert rows[("ID", "pinocchio_parallel", 1)] == [2]           # its threads, once for one state
    assert sorted(rows[("ID", "pinocchio_parallel", 10)]) == [1, 2]
    assert ("M", "pinocchio_parallel", 10) not in rows
    assert {k for ndim, k in seen if ndim == 2} >= {1, 2}       # the batches really ran under each setting
    # ratios to pinocchio_parallel are at equal cores
    for k in (1, 2):
        ours = result.find("puma560", "ID", "symbolic_numba", 10, k)
        par = result.find("puma560", "ID", "pinocchio_parallel", 10, k)
        assert ours.workers == par.workers == k
        assert ours.ratio_parallel == pytest.approx(ours.median_us / par.median_us, rel=1e-12)
    assert result.find("puma560", "ID", "symbolic_numba", 10).workers == 2   # default: the most workers


@needs_two_cores
def test_scaling_efficiency_is_computed_from_the_measured_times(sweep):
    result, _ = sweep
    scaling = result.as_dict()["scaling"]
    assert {(s["op"], s["backend"]) for s in scaling} == {("ID", "spy_workers"), ("ID", "symbolic_numba"),
                                                          ("M", "spy_workers"), ("M", "symbolic_numba"),
                                                          ("ID", "pinocchio_parallel")}
    for s in scaling:
        assert s["workers"] == 2 and s["N"] == 10
        one = result.find("puma560", s["op"], s["backend"], 10, 1).median_us
        two = result.find("puma560", s["op"], s["backend"], 10, 2).median_us
        assert s["ns_per_state_1"] == pytest.approx(1e3 * one) and s["ns_per_state"] == pytest.approx(1e3 * two)
        assert s["efficiency"] == pytest.approx(one / (2 * two), rel=1e-12)
        assert s["speedup"] == pytest.approx(one / two, rel=1e-12)


def test_scaling_arithmetic_on_chosen_times():
    def fake(backend, N, us, workers):
        return bench.Measurement(robot="r", op="ID", backend=backend, call="x", N=N, timed_states=N, number=1,
                                 repeats_us=[us], first_call_s=0.0, workers=workers)

    result = bench.BenchResult(settings={"workers": [1, 2, 4]}, environment={}, unavailable=[], checks=[], warmups=[],
                               notes=[], robots={"r": 6},
                               measurements=[fake("a", 1, 5.0, None), fake("a", 1000, 8.0, 1), fake("a", 1000, 5.0, 2),
                                             fake("a", 1000, 2.5, 4), fake("pinocchio", 1000, 9.0, None),
                                             fake("b", 1000, 3.0, 2)])   # no 1-worker time: no efficiency
    rows = {s["workers"]: s for s in bench.parallel_scaling(result)}
    assert set(rows) == {2, 4}
    assert rows[2]["efficiency"] == pytest.approx(0.8) and rows[2]["speedup"] == pytest.approx(1.6)
    assert rows[4]["efficiency"] == pytest.approx(0.8) and rows[4]["speedup"] == pytest.approx(3.2)


def test_peak_is_positive_and_finite():
    peak = bench.measure_peak([1], target=0.002, repeats=2)
    assert set(peak["gflops"]) == {"1"} and peak["all_cores"] == 1
    assert np.isfinite(peak["gflops_1_core"]) and peak["gflops_1_core"] > 0
    assert peak["gflops_all_cores"] == peak["gflops_1_core"] == max(peak["repeats_gflops"]["1"])
    assert "FMA" in bench.environment_line({**_ENV, "peak_flops": peak})


def test_peak_before_and_after_keeps_the_best():
    def peak(one, two):
        return {"gflops": {"1": one, "2": two}, "repeats_gflops": {"1": [one], "2": [two]}, "seconds": 0.1}

    best = bench.best_peak(peak(30.0, 70.0), peak(50.0, 60.0))
    assert best["gflops"] == {"1": 50.0, "2": 70.0} and best["gflops_1_core"] == 50.0
    assert best["gflops_all_cores"] == 70.0 and best["all_cores"] == 2 and best["measurements"] == 2
    assert best["repeats_gflops"]["2"] == [70.0, 60.0]


_ENV = {"versions": {"dyn_plugin": "0", "python": "3"}, "cpu": "cpu", "usable_cores": 2, "cores": 2,
        "pinocchio_parallel_threads": 2, "date": "2026-01-01"}


@needs_two_cores
def test_limit_follows_from_the_counts_and_the_peak(sweep):
    from dyn_plugin.symbolic.codegen import generate

    result, _ = sweep
    peak = result.environment["peak_flops"]
    assert set(peak["gflops"]) >= {"1", "2"}
    assert all(np.isfinite(g) and g > 0 for g in peak["gflops"].values())
    be = dp.get_backend("symbolic_numba", dp.load_robot("puma560"))
    counts = be.counts
    mm = generate(be.model, "python", mass_matrix=True).mass_matrix_counts
    expected = {"ID": counts["multiplications"] + counts["additions"] + bench.TRIG_FLOPS * counts["trig"],
                "M": mm["multiplications"] + mm["additions"] + bench.TRIG_FLOPS * mm["trig"]}
    n = be.model.n
    fd = bench.operation_flops(be)["FD"]
    assert fd["flops"] == (fd["counts"]["multiplications"] + fd["counts"]["additions"]
                           + bench.TRIG_FLOPS * fd["counts"]["trig"] + n + round(n ** 3 / 3) + 2 * n * n)
    limits = result.as_dict()["limits"]
    assert {(r["op"], r["backend"]) for r in limits} == {("ID", "symbolic_numba"), ("M", "symbolic_numba")}
    for r in limits:
        assert r["flops_per_state"] == expected[r["op"]] and r["N"] == 10
        for k, gflops in peak["gflops"].items():
            assert r["limit_ns_per_state"][k] == pytest.approx(r["flops_per_state"] / gflops, rel=1e-12)
        assert r["limit_ns_all_cores"] == pytest.approx(r["flops_per_state"] / peak["gflops_all_cores"])
        for k in ("1", "2"):
            m = r["measured"][k]
            ns = result.find("puma560", r["op"], "symbolic_numba", 10, int(k)).median_ns
            assert m["ns_per_state"] == pytest.approx(ns)
            assert m["percent_of_peak"] == pytest.approx(100 * r["limit_ns_per_state"][k] / ns, rel=1e-12)


@needs_two_cores
def test_sweep_tables_plot_and_json_round_trip(sweep, tmp_path):
    from rich.console import Console

    result, _ = sweep
    console = Console(record=True, width=250)
    bench.print_report(result, console)
    text = console.export_text()
    assert "parallel scaling" in text and "E = t(1) / (K · t(K))" in text
    assert "physical limit" in text and "% of peak" in text and "GFLOP/s" in text
    path = bench.plot_scaling(result, tmp_path / "sweep.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    doc = json.loads(json.dumps(result.as_dict()))
    again = bench.BenchResult.from_dict(doc).as_dict()
    assert {k: v for k, v in again.items() if k != "seconds"} == {k: v for k, v in doc.items() if k != "seconds"}


def _generated_result(workers, cores=2, ours=None, parallel=None):
    """The PUMA-560 at N = 1 and 100,000: pinocchio 2 µs, pinocchio_parallel ``parallel``
    µs and symbolic_numba ``ours`` µs per state, by number of workers."""
    def fake(backend, N, us, k):
        return bench.Measurement(robot="puma560", op="ID", backend=backend, call="x", N=N, timed_states=N, number=1,
                                 repeats_us=[us], first_call_s=0.0, repeats_requested=1, workers=k)

    ms = [fake("pinocchio", N, 2.0, None) for N in (1, 100_000)] + [fake("symbolic_numba", 1, 1.0, None)]
    ms += [fake("symbolic_numba", 100_000, ours[k], k) for k in workers]
    ms += [fake("pinocchio_parallel", 100_000, parallel[k], k) for k in workers]
    result = bench.BenchResult(settings={"backends": ["symbolic_numba"], "against": ["pinocchio", "pinocchio_parallel"],
                                         "ops": ["ID"], "sizes": [1, 100_000], "workers": list(workers)},
                               environment={"dyn_plugin_cores": cores}, measurements=ms, unavailable=[], checks=[],
                               warmups=[], notes=[], robots={"puma560": 6})
    for N in (1, 100_000):
        _ratios(result, "puma560", "ID", N)
    return result


def test_generated_backend_targets_on_all_cores_and_efficiency():
    result = _generated_result([1, 2], ours={1: 0.060, 2: 0.040}, parallel={1: 1.0, 2: 0.45})
    targets = {t["measure"]: t for t in result.targets() if t["N"] == 100_000}
    time = targets["ns per state"]
    assert time["value"] == pytest.approx(40.0) and time["limit"] == 50 and time["status"] == "PASS"
    assert time["workers"] == 2 and "all cores" in time["target"] and "ns per state" in time["target"]
    speed = targets["throughput ratio to pinocchio_parallel"]
    assert speed["value"] == pytest.approx(0.45 / 0.040) and speed["status"] == "MISS"   # 11.25× < 12×
    assert "rneaInParallel" in speed["target"]
    eff = targets["t(1) / (2 · t(2))"]
    assert eff["value"] == pytest.approx(0.060 / (2 * 0.040)) and eff["status"] == "MISS"   # 75 % < 85 %
    assert targets["speed-up"]["value"] == pytest.approx(2.0 / 0.040)   # the loop target, read on all cores
    from rich.console import Console

    console = Console(record=True, width=250)
    for renderable in bench.format_tables(result):
        console.print(renderable)
    text = console.export_text()
    assert "40 ns" in text and "75 %" in text and "11.2×" in text and "missed" in text


def test_all_cores_targets_need_every_core_and_efficiency_needs_1_and_2():
    result = _generated_result([1], ours={1: 0.030}, parallel={1: 1.0})
    judged = {t["measure"] for t in result.targets() if t["N"] == 100_000}
    assert judged == {"speed-up"}     # 1 of 2 cores: neither all-cores target, nor efficiency
    assert any("not every core" in line for line in bench.legend_lines(result))
    result = _generated_result([2], cores=2, ours={2: 0.030}, parallel={2: 1.0})
    judged = {t["measure"] for t in result.targets() if t["N"] == 100_000}
    assert judged == {"speed-up", "ns per state", "throughput ratio to pinocchio_parallel"}


@pytest.mark.parametrize("argv, fragment", [
    (["bench", "--workers", "0"], "at least 1"),
    (["bench", "--workers", "two"], "not a number of cores"),
    (["bench", "--robot", "scara", "--workers", "1", "999"], "--workers 999"),
])
def test_bad_workers_exit_2_with_one_line(argv, fragment, capsys):
    """A bad number is argparse's usage error (SystemExit 2), too many cores an input error
    (exit code 2): one line on stderr either way, before any timing."""
    from dyn_plugin.tools.cli import main

    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, err


def test_a_worker_sweep_interleaves_its_repeats():
    """Repeat k of every number of workers runs before repeat k + 1 of any, so that a burst
    of load elsewhere cannot fall on one side of a parallel efficiency only."""
    import contextlib

    from dyn_plugin.tools.bench.timing import measure_side_by_side

    order = []

    def entering(label):
        @contextlib.contextmanager
        def context():
            order.append(label)
            yield
        return context

    runs = [("sum(x)", {"x": [1.0] * 100}, entering(1)), ("sum(x)", {"x": [1.0] * 100}, entering(2))]
    measured = measure_side_by_side(runs, states=100, N=100, repeat=4, target=1e-4)
    assert order[-8:] == [1, 2] * 4                       # after one warm-up each
    assert [len(times) for _, times, _, _ in measured] == [4, 4]
    assert all(number >= 1 and all(t > 0 for t in times) for number, times, _, _ in measured)


FAULTS_OF_A_FRESH_ARRAY = """
import resource, sys
import numpy as np
from dyn_plugin.tools.machine import keep_freed_memory
if sys.argv[1] == "keep":
    print(keep_freed_memory())
def faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    np.ones(8_000_000)                   # 64 MB, written, freed
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
faults()
print(faults())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="page-fault counts and glibc: Linux")
def test_bench_keeps_freed_memory_so_a_second_batch_does_not_fault():
    """What ``dyn-plugin bench`` does to its allocator (tools.machine.keep_freed_memory):
    a second 64 MB result reuses the first one's pages (no page faults), where by default
    it is a new mapping that faults again."""
    def run(mode):
        out = subprocess.run([sys.executable, "-c", FAULTS_OF_A_FRESH_ARRAY, mode], capture_output=True, text=True,
                             check=True).stdout.split("\n")
        return out
    kept, default = run("keep"), run("default")
    assert kept[0].startswith("glibc, freed memory kept")
    assert int(kept[1]) <= 5 and int(default[0]) >= 20


def test_generated_backends_skip_large_models_unless_chosen():
    """By default the generated backends are not timed on a model of more than
    GENERATED_DEFAULT_NV velocities (numba would compile its code for many minutes): a note
    says so and how to ask for it; newton_euler is built as usual."""
    from dyn_plugin.tools.bench.results import BenchResult
    from dyn_plugin.tools.bench.runner import GENERATED_DEFAULT_NV, _build_ours
    from urdf_factory import random_tree_urdf

    model = dp.load_urdf_string(random_tree_urdf(np.random.default_rng(5), GENERATED_DEFAULT_NV + 1))
    result = BenchResult(settings={}, environment={}, measurements=[], unavailable=[], checks=[], warmups=[],
                         notes=[], robots={})
    built = _build_ours(result, "big", model, ["newton_euler", "symbolic_numba"], chosen=False)
    assert list(built) == ["newton_euler"]
    assert any("symbolic_numba skipped by default" in note and "--backend symbolic_numba" in note
               for note in result.notes)


def test_pybullet_is_not_timed_on_a_floating_base_and_says_why():
    """The default references include pybullet; on a floating robot (solo12) its raw calls
    are not comparable, so the bench records why instead of feeding it our 7 + n positions
    (it stopped with a shape error before)."""
    from dyn_plugin.tools.bench.robots import load_bench_robot

    try:
        load_bench_robot("solo12")
    except UnknownRobotError:
        pytest.skip("example-robot-data is not installed")
    result = bench.run_bench(robots=["solo12"], backends=["newton_euler"], ops=["ID"], sizes=[1, 4],
                             against=["pinocchio", "pybullet"], repeat=1, target=1e-4, budget=0.05, peak=False)
    missing = [u for u in result.unavailable if u["backend"] == "pybullet"]
    assert len(missing) == 1 and "floating base" in missing[0]["reason"]
    assert result.find("solo12", "ID", "newton_euler", 4) is not None


# -- whether other processes were busy: /proc/stat less our own CPU time --------------------------

SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_the_bench_counts_another_process_that_keeps_a_core_busy():
    """A process of its own spinning for 1.5 s is about one core busy (it still runs when
    the clock is read, so it is not a waited-for child whose time os.times counts)."""
    import time

    from dyn_plugin.tools.machine import OthersClock

    spinner = subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=3)])
    try:
        clock = OthersClock()
        time.sleep(1.5)
        busy = clock.cores_busy()
    finally:
        spinner.kill()
        spinner.wait()
    assert busy is not None and busy >= 0.6, busy


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_the_bench_does_not_count_its_own_threads_as_other_processes():
    """Two threads of this process hashing (hashlib releases the GIL) keep the cores busy for
    1.5 s.  Other processes can then have had at most the cores less what this process used;
    counting its own threads as others reads about 2 cores (1.99 measured, idle machine),
    beyond that bound whatever else runs (another pytest worker included)."""
    import hashlib
    import threading
    import time

    from dyn_plugin.tools.machine import OthersClock, usable_cores

    data = bytes(8 << 20)

    def hash_for(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            hashlib.sha256(data).digest()

    clock, wall, own = OthersClock(), time.monotonic(), os.times()
    threads = [threading.Thread(target=hash_for, args=(1.5,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    busy, now = clock.cores_busy(), os.times()
    own_cores = (now.user + now.system - own.user - own.system) / (time.monotonic() - wall)
    # this process must have run for the bound to say anything: 0.41 of a core was seen with
    # five other processes on the two cores, where counting its threads as others would still
    # read about 2 > 2 − 0.41 + 0.1
    assert own_cores > 0.25, own_cores
    assert busy is not None and busy <= usable_cores() - own_cores + 0.1, (busy, own_cores)
