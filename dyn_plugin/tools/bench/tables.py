"""The bench's figures for people and files: rich tables (one per robot, then the
targets), their legend and footnotes, the environment line, JSON and the log-log plot."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

from rich.markup import escape

from ...errors import InputError
from ..output import write_or_print
from .operations import OP_DESCRIPTIONS, REFERENCE_KINDS
from .results import BenchResult
from .targets import FRICTION_LIMIT, TARGET_BATCH, TARGET_ROBOT

__all__ = ["environment_line", "format_tables", "legend_lines", "plot_scaling", "print_report", "write_json"]


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


def format_tables(result: BenchResult) -> list:
    """Rich renderables: one table per robot (rows op × backend, columns batch sizes),
    then the targets table when there are targets."""
    from rich.table import Table

    out = []
    sizes = result.settings["sizes"]
    for robot, n in result.robots.items():
        table = Table(title=f"{escape(robot)} ({n} joints): median µs per state, and its ratio to pinocchio's",
                      title_justify="left")
        table.add_column("op")
        table.add_column("backend")
        table.add_column("call")
        for N in sizes:
            table.add_column(f"N={N:,} µs", justify="right")
            table.add_column("ratio", justify="right")
        for op in result.settings["ops"]:
            rows = _row_order(result, robot, op)
            for j, backend in enumerate(rows):
                found = {m.N: m for m in result.measurements if (m.robot, m.op, m.backend) == (robot, op, backend)}
                if not found:
                    reason = next((u["reason"] for u in result.unavailable
                                   if (u["robot"], u["op"], u["backend"]) == (robot, op, backend)), None)
                    if reason is None:
                        continue
                    table.add_row(op if j == 0 else "", escape(backend), "[dim]none[/]",
                                  *(["[dim]—[/]"] * (2 * len(sizes))), end_section=j == len(rows) - 1)
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
                table.add_row(op if j == 0 else "", escape(backend), call.replace("pin.", "").replace("p.", ""), *cells,
                              end_section=j == len(rows) - 1)
        out.append(table)
    targets = result.targets()
    if targets:
        out.append(_targets_table(targets))
    return out


def _targets_table(targets: list):
    from rich.table import Table

    table = Table(title=f"speed targets for the {TARGET_ROBOT} (informative; with --check a missed target exits 1)",
                  title_justify="left")
    for column in ("backend", "op", "N", "target", "measured", "status"):
        table.add_column(column, justify="right" if column in ("N", "measured") else "left")
    for t in targets:
        status = "[green]met[/]" if t["status"] == "PASS" else "[bold red]missed[/]"
        table.add_row(escape(t["backend"]), t["op"], f"{t['N']:,}", t["target"], f"{_fmt_ratio(t['value'])}×", status)
    return table


def legend_lines(result: BenchResult) -> list:
    """What the tables' abbreviations, ratios and target rows mean, in plain words."""
    lines = ["op: " + "; ".join(f"{op} = {OP_DESCRIPTIONS[op]}" for op in result.settings["ops"]),
             "ratio: time ratio to the pinocchio per-call loop, i.e. the row's µs per state ÷ pinocchio's at the "
             "same operation and N; below 1 = faster than pinocchio (green), above 1 = slower (yellow); "
             "speed-up = 1 ÷ ratio"]
    if TARGET_ROBOT not in result.robots:
        return lines
    lines.append(f"speed targets ({TARGET_ROBOT} only) judge two sizes: one state (N = 1: time ratio ≤ the "
                 f"limit) and a batch of {TARGET_BATCH:,} states (speed-up ≥ the limit); friction backends: "
                 f"time ≤ {FRICTION_LIMIT:g}× their frictionless counterpart's at those sizes (the worse one "
                 "shown); other sizes are measured, not judged")
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
    return (", ".join(parts) + f"; CPU {env['cpu']} ({env['usable_cores']} of {env['cores']} cores usable; "
            f"{threads}pinocchio parallel threads {env['pinocchio_parallel_threads']}); {env['date']}"
            + (f"; load average {env['load_average']['before'][0]:g} before, {env['load_average']['after'][0]:g} "
               "after" if env.get("load_average") and env["load_average"]["before"] else ""))


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


def plot_scaling(result: BenchResult, path, robot: Optional[str] = None) -> Path:
    """Log-log µs per state against batch size N, one panel per operation, one line per
    backend, for ``robot`` (default: the first).  Hollow markers: loop timed on a prefix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    robot = robot or next(iter(result.robots), None)
    if robot not in result.robots:
        raise InputError(f"no results for robot {robot!r}; measured: {', '.join(result.robots)}")
    ops = [op for op in result.settings["ops"] if any(m.robot == robot and m.op == op for m in result.measurements)]
    cols = 2 if len(ops) > 1 else 1
    rows = int(math.ceil(len(ops) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(6.0 * cols, 4.2 * rows), squeeze=False)
    backends = list(dict.fromkeys(m.backend for m in result.measurements if m.robot == robot))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"] * 3
    colours = dict(zip([b for b in backends if b != "pinocchio"], cycle))
    colours["pinocchio"] = "black"  # the reference of every ratio
    for ax, op in zip(axes.flat, ops):
        for backend in backends:
            ms = sorted((m for m in result.measurements if (m.robot, m.op, m.backend) == (robot, op, backend)),
                        key=lambda m: m.N)
            if not ms:
                continue
            call = ms[-1].call
            ax.plot([m.N for m in ms], [m.median_us for m in ms], "--" if backend == "pinocchio" else "-",
                    color=colours[backend], label=f"{backend}: {call}")
            for m in ms:
                ax.plot(m.N, m.median_us, "o", color=colours[backend],
                        markerfacecolor="none" if m.extrapolated else colours[backend])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{op}: {OP_DESCRIPTIONS[op]}", fontsize=9)
        ax.set_xlabel("batch size N (states per call)")
        ax.set_ylabel("µs per state (median)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(ops):]:
        ax.axis("off")
    env = result.environment
    hollow = any(m.extrapolated for m in result.measurements if m.robot == robot)
    fig.suptitle(f"{robot}: time per state vs batch size — {env['cpu']}, {env['date'][:10]}"
                 + ("\n(hollow markers: per-call loop timed on a prefix of the N states)" if hollow else ""),
                 fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
