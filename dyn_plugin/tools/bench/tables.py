"""The bench's results for people and files: rich tables (one per robot, then the
targets), their legend and footnotes, the environment line, JSON (the plots: :mod:`.figures`)."""

from __future__ import annotations

import json
from typing import Optional

from rich.markup import escape

from ..output import write_or_print
from ...loops import PARALLEL_FROM
from .limits import TRIG_FLOPS
from .operations import OP_DESCRIPTIONS, REFERENCE_KINDS
from .results import BenchResult
from .targets import (BATCH_TIME_TARGETS, EFFICIENCY_TARGET, FRICTION_LIMIT, FRICTION_OPS, GENERATED_BACKEND,
                      PARALLEL_SPEEDUP_TARGETS, TARGET_BATCH, TARGET_ROBOT, all_cores_measured)

__all__ = ["environment_line", "format_tables", "legend_lines", "print_report", "write_json"]


def _fmt_us(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _fmt_ratio(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _row_order(result, robot, op) -> list:
    ours = [b for b in result.settings["backends"] if any(m.backend == b and m.robot == robot
                                                          for m in result.measurements)]
    return ours + [ref for ref in REFERENCE_KINDS if ref in result.settings["against"]]


def _worker_rows(result, robot, op, backend) -> list:
    """The rows of one backend: one per number of workers it was timed with (ascending),
    or a single one (None) for a backend that never uses workers."""
    counts = sorted({m.workers for m in result.measurements
                     if (m.robot, m.op, m.backend) == (robot, op, backend) and m.workers is not None})
    return counts or [None]


def format_tables(result: BenchResult) -> list:
    """Rich renderables: one table per robot (rows op × backend × workers, columns batch
    sizes), then the parallel scaling, the physical limits and the targets, when there are
    any."""
    from rich.table import Table

    out = []
    sizes = result.settings["sizes"]
    for robot, n in result.robots.items():
        table = Table(title=f"{escape(robot)} ({n} joints): median µs per state, and its ratio to pinocchio's",
                      title_justify="left")
        table.add_column("op")
        table.add_column("backend")
        table.add_column("call")
        table.add_column("cores", justify="right")
        for N in sizes:
            table.add_column(f"N={N:,} µs", justify="right")
            table.add_column("ratio", justify="right")
        for op in result.settings["ops"]:
            rows = [(backend, k) for backend in _row_order(result, robot, op)
                    for k in _worker_rows(result, robot, op, backend)]
            for j, (backend, workers) in enumerate(rows):
                found = {m.N: m for m in result.measurements if (m.robot, m.op, m.backend) == (robot, op, backend)
                         and m.workers in (None, workers)}
                last = j == len(rows) - 1
                if not found:
                    reason = next((u["reason"] for u in result.unavailable
                                   if (u["robot"], u["op"], u["backend"]) == (robot, op, backend)), None)
                    if reason is None:
                        continue
                    table.add_row(op if j == 0 else "", escape(backend), "[dim]none[/]", "",
                                  *(["[dim]—[/]"] * (2 * len(sizes))), end_section=last)
                    continue
                call = next(iter(found.values())).call
                cells = []
                for N in sizes:
                    m = found.get(N)
                    if m is None:
                        cells += ["[dim]—[/]", ""]
                        continue
                    mark = ("†" if m.extrapolated else "") + ("‡" if m.cut_short else "")
                    ratio = "" if m.ratio is None else _fmt_ratio(m.ratio)
                    if backend == "pinocchio":
                        ratio = "[dim]1[/]"
                    elif m.ratio is not None:
                        ratio = f"[green]{ratio}[/]" if m.ratio < 1 else f"[yellow]{ratio}[/]"
                    cells += [_fmt_us(m.median_us) + mark, ratio]
                table.add_row(op if j == 0 else "", escape(backend), call.replace("pin.", "").replace("p.", ""),
                              "1" if workers is None else str(workers), *cells, end_section=last)
        out.append(table)
    scaling = result.scaling()
    if scaling:
        out.append(_scaling_table(result, scaling))
    limits = result.limits()
    if limits:
        out.append(_limits_table(result, limits))
    targets = result.targets()
    if targets:
        out.append(_targets_table(targets))
    return out


def _fmt_ns(value: Optional[float]) -> str:
    if value is None:
        return "[dim]—[/]"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _fmt_efficiency(value: float) -> str:
    text = f"{100 * value:.0f} %"
    return f"[green]{text}[/]" if value >= EFFICIENCY_TARGET else f"[yellow]{text}[/]"


def _scaling_table(result: BenchResult, rows: list):
    """Parallel scaling: ns per state on 1 worker and on K, the speed-up and the efficiency
    E = t(1) / (K · t(K)), per robot × op × backend × N."""
    from rich.table import Table

    counts = sorted({r["workers"] for r in rows})
    table = Table(title="parallel scaling: median ns per state on 1 core and on K cores (our workers, pinocchio's "
                        "threads); E = t(1) / (K · t(K)), 100 % = perfect", title_justify="left")
    for column in ("robot", "op", "backend", "N", "1 core ns"):
        table.add_column(column, justify="right" if column in ("N", "1 core ns") else "left")
    for k in counts:
        table.add_column(f"{k} cores ns", justify="right")
        table.add_column("speed-up", justify="right")
        table.add_column("E", justify="right")
    groups = {}
    for r in rows:
        groups.setdefault((r["robot"], r["op"], r["backend"], r["N"]), {})[r["workers"]] = r
    keys = list(groups)
    for j, key in enumerate(keys):
        robot, op, backend, N = key
        by_k = groups[key]
        serial = backend in result.settings.get("backends", ()) and N < PARALLEL_FROM
        cells = []
        for k in counts:
            r = by_k.get(k)
            cells += (["[dim]—[/]", "", ""] if r is None else
                      [_fmt_ns(r["ns_per_state"]), f"{r['speedup']:.2f}×", _fmt_efficiency(r["efficiency"])])
        first = next(iter(by_k.values()))
        table.add_row(escape(robot), op, escape(backend), f"{N:,}" + ("§" if serial else ""),
                      _fmt_ns(first["ns_per_state_1"]), *cells,
                      end_section=j + 1 < len(keys) and keys[j + 1][:2] != key[:2])
    return table


def _limits_table(result: BenchResult, rows: list):
    """The physical limit of the generated code: flops per state ÷ the measured peak, and
    the measured time at the largest N as a share of it (% of peak)."""
    from rich.table import Table

    counts = sorted({int(k) for r in rows for k in r["measured"]})
    table = Table(title="physical limit: flops per state ÷ the machine's measured peak = the fewest ns per state; "
                        "% of peak = limit ÷ measured", title_justify="left")
    for column in ("robot", "op", "backend", "flops/state", "N"):
        table.add_column(column, justify="right" if column in ("flops/state", "N") else "left")
    for k in counts:
        unit = "core" if k == 1 else "cores"
        table.add_column(f"limit ns ({k} {unit})", justify="right")
        table.add_column(f"measured ns ({k} {unit})", justify="right")
        table.add_column("% of peak", justify="right")
    for r in rows:
        cells = []
        for k in counts:
            m = r["measured"].get(str(k))
            if m is None:
                limit = r["limit_ns_per_state"].get(str(k))
                cells += [_fmt_ns(limit), "[dim]—[/]", ""]
                continue
            pct = m["percent_of_peak"]
            cells += [_fmt_ns(m["limit_ns_per_state"]), _fmt_ns(m["ns_per_state"]),
                      "[dim]—[/]" if pct is None else f"{pct:.1f} %"]
        table.add_row(escape(r["robot"]), r["op"], escape(r["backend"]), f"{r['flops_per_state']:,}", f"{r['N']:,}",
                      *cells)
    return table


def _fmt_target_value(t: dict) -> str:
    unit = t.get("unit", "×")
    if unit == "ns":
        return f"{_fmt_ns(t['value'])} ns"
    if unit == "efficiency":
        return f"{100 * t['value']:.0f} %"
    return f"{_fmt_ratio(t['value'])}×"


def _targets_table(targets: list):
    from rich.table import Table

    table = Table(title=f"speed targets for the {TARGET_ROBOT} (informative; with --check a missed target exits 1)",
                  title_justify="left")
    for column in ("backend", "op", "N", "cores", "target", "measured", "status"):
        table.add_column(column, justify="right" if column in ("N", "cores", "measured") else "left")
    for t in targets:
        status = "[green]met[/]" if t["status"] == "PASS" else "[bold red]missed[/]"
        cores = "" if t.get("workers") is None else str(t["workers"])
        table.add_row(escape(t["backend"]), t["op"], f"{t['N']:,}", cores, t["target"], _fmt_target_value(t), status)
    return table


def legend_lines(result: BenchResult) -> list:
    """What the tables' abbreviations, ratios and target rows mean, in plain words."""
    lines = ["op: " + "; ".join(f"{op} = {OP_DESCRIPTIONS[op]}" for op in result.settings["ops"]),
             "ratio: time ratio to the pinocchio per-call loop, i.e. the row's µs per state ÷ pinocchio's at the "
             "same operation and N; below 1 = faster than pinocchio (green), above 1 = slower (yellow); "
             "speed-up = 1 ÷ ratio"]
    counts = result.worker_counts
    if counts:
        lines.append("cores: our batch loops' workers (--workers) or pinocchio's parallel threads; single states "
                     "(N = 1) and per-call loops are serial, timed once and shown on each row of their backend; "
                     f"ratios to pinocchio_parallel are at equal cores; batches below {PARALLEL_FROM:,} states run "
                     "serially in our backends whatever the workers (§ in the scaling table: E ≈ 1/K there)")
    if result.flops:
        lines.append(f"physical limit: flops per state of the generated code (multiplications + additions, "
                     f"{TRIG_FLOPS} flops per sine or cosine; FD adds τ − bias, Cholesky n³/3 and 2n² for the "
                     "solves) ÷ the peak measured on this machine with an FMA kernel (an FMA = 2 flops)")
    if TARGET_ROBOT not in result.robots:
        return lines
    lines.append(f"speed targets ({TARGET_ROBOT} only) judge two sizes: one state (N = 1: time ratio ≤ the "
                 f"limit) and a batch of {TARGET_BATCH:,} states (speed-up ≥ the limit); friction backends: "
                 f"time ≤ {FRICTION_LIMIT:g}× their frictionless counterpart's at those sizes (the worse one "
                 f"shown) for {', '.join(FRICTION_OPS)}; other sizes and friction derivatives are measured, "
                 "not judged")
    if any(m.backend == GENERATED_BACKEND and m.robot == TARGET_ROBOT for m in result.measurements):
        times = ", ".join(f"{op} ≤ {limit:g} ns" for op, limit in BATCH_TIME_TARGETS)
        speed = ", ".join(f"{op} ≥ {limit:g}×" for op, limit in PARALLEL_SPEEDUP_TARGETS)
        lines.append(f"{GENERATED_BACKEND} at {TARGET_BATCH:,} states on all cores: time per state ({times}), "
                     f"throughput over pinocchio's parallel functions on as many threads ({speed}); "
                     f"parallel efficiency ≥ {100 * EFFICIENCY_TARGET:g} % from 1 to 2 workers (judged when "
                     "--workers includes 1 and 2)")
        if not all_cores_measured(result):
            lines.append(f"the largest --workers ({result.main_workers}) is not every core "
                         f"({result.environment.get('dyn_plugin_cores')}): the all-cores targets are not judged")
    if TARGET_BATCH not in result.settings["sizes"]:
        lines.append(f"this run has no N = {TARGET_BATCH:,}: batch targets not judged (add it with --sizes)")
    return lines


def _footnotes(result: BenchResult) -> list:
    lines = legend_lines(result)
    extrapolated = [m for m in result.measurements if m.extrapolated]
    if extrapolated:
        least = min(m.timed_states for m in extrapolated)
        lines.append(f"† per-call loop timed on the first {least:,}+ states of N (its time per state does not "
                     "depend on N; JSON: timed_states)")
    if any(m.cut_short for m in result.measurements):
        budget = result.settings["budget_s"]
        lines.append(f"‡ fewer repeats than the default: the measurement reached its {budget:g} s budget "
                     "(JSON: repeats_us)")
    reps = sorted({len(m.repeats_us) for m in result.measurements})
    if reps:
        count = str(reps[0]) if reps[0] == reps[-1] else f"{reps[0]}–{reps[-1]}"
        lines.append(f"median of {count} repeats, each ≥ {result.settings['target_s'] * 1e3:g} ms "
                     "(timeit-style, after an untimed warm-up call); ratios are of medians")
    return lines


def environment_line(env: dict) -> str:
    v = env["versions"]
    parts = [f"dyn_plugin {v['dyn_plugin']}", f"Python {v['python']}"]
    parts += [f"{k} {v[k]}" for k in ("numpy", "numba", "pin", "pybullet") if v.get(k)]
    threads = f"numba threads {env['numba_threads']}, " if env.get("numba_threads") else ""
    peak = env.get("peak_flops")
    peak_text = ""
    if peak:
        most = peak["all_cores"]
        peak_text = (f"; peak {peak['gflops']['1']:.1f} GFLOP/s on 1 core" if "1" in peak["gflops"] else "; peak")
        if most != 1:
            peak_text += f", {peak['gflops_all_cores']:.1f} on {most}"
        peak_text += " (FMA kernel, best of repeats)"
    return (", ".join(parts) + f"; CPU {env['cpu']} ({env['usable_cores']} of {env['cores']} cores usable; "
            f"{threads}pinocchio parallel threads {env['pinocchio_parallel_threads']}){peak_text}; {env['date']}"
            + (f"; load average {env['load_average']['before'][0]:g} before, {env['load_average']['after'][0]:g} "
               "after" if env.get("load_average") and env["load_average"]["before"] else "")
            + (f"; other processes {env['others_busy_cores']:.2f} cores" if env.get("others_busy_cores") is not None
               else ""))


def print_report(result: BenchResult, console) -> None:
    """Environment, one table per robot, footnotes, targets, checks that failed, notes, wall time."""
    console.print(f"[dim]{environment_line(result.environment)}[/]")
    for renderable in format_tables(result):
        console.print(renderable)
    for line in _footnotes(result):
        console.print(f"[dim]{line}[/]")
    for u in dict.fromkeys((u["backend"], u["reason"]) for u in result.unavailable):
        console.print(f"[dim]— {u[0]}: {u[1]}[/]")
    warm = [w for w in result.warmups if w["seconds"] > 0.5]
    for w in warm:
        console.print(f"[dim]warm-up (JIT compile, first calls; untimed) of {w['backend']} on {w['robot']}: "
                      f"{w['seconds']:.1f} s[/]")
    failed = [c for c in result.checks if not c["ok"]]
    checked = len(result.checks)
    if checked:
        console.print(f"correctness checks (untimed): {checked - len(failed)} of {checked} passed")
    for c in failed:
        console.print(f"[bold red]check failed[/] {escape(c['robot'])} {escape(c['backend'])}: {escape(c['what'])}: "
                      f"{c['max_rel']:.2e}")
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")
    console.print(f"measurements took {result.seconds:.1f} s")


def write_json(result: BenchResult, path) -> None:
    """Every figure and the environment as JSON; ``path`` '-' writes to stdout."""
    write_or_print(path, json.dumps(result.as_dict(), indent=2, allow_nan=False))
