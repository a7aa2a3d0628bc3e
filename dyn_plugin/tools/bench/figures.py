"""The bench's figures (PNG, log-log, median ns per state), one question each, one panel
per operation, one colour and marker per engine, legends beside the panels:

* :func:`plot_scaling` -- how the time per state falls with the batch size N (batches on
  the most cores measured), with the generated code's physical limit (flops per state ÷
  the measured peak, :mod:`.limits`);
* :func:`plot_cores` -- how it falls with the cores at the largest N (our workers,
  pinocchio's threads), beside ideal 1/K scaling and the limit on K cores; written only
  for a sweep (``--workers 1 2``).

Both read a :class:`~.results.BenchResult`, so a ``--json`` file can be plotted again
(:meth:`~.results.BenchResult.from_dict`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...errors import InputError
from .operations import OP_DESCRIPTIONS
from .results import BenchResult

__all__ = ["cores_path", "plot_cores", "plot_scaling"]

# One look per engine, the same in every panel and figure; ours take the colour cycle.
_REFERENCE_LOOKS = {"pinocchio": ("black", "s"), "pinocchio_parallel": ("tab:red", "D"), "pybullet": ("tab:purple", "v")}
_OURS_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
_OURS_MARKERS = ("o", "^", "P", "X", "*", "h", "<")
_REFERENCE_WORDS = {"pinocchio": "pinocchio, a loop of per-state calls (the reference of every ratio)",
                    "pinocchio_parallel": "pinocchio's parallel batch functions",
                    "pybullet": "pybullet, a loop of per-state calls"}
_DASHED = (0, (5, 3))
_NS = "ns per state (median)"
_LEGEND_INCHES = 2.9     # the legend's column, right of the panels


def cores_path(path) -> Path:
    """Where :func:`plot_cores` goes beside ``path``: ``scaling.png`` -> ``scaling-cores.png``."""
    path = Path(path)
    return path.with_name(f"{path.stem}-cores{path.suffix}")


def plot_scaling(result: BenchResult, path, robot: Optional[str] = None) -> Path:
    """``path``: median ns per state against the batch size N for ``robot`` (default: the
    first), one panel per operation, batches on the most cores measured; hollow markers: a
    per-call loop timed on a prefix of the N states; dashed: the generated code's limit."""
    plt, robot, mine, ops = _setup(result, robot)
    looks = _looks(mine)
    most = max((m.workers or 0 for m in mine), default=0)
    fig, panels = _panels(plt, ops, sharex=True)
    gflops = _gflops(result)
    limit_cores = most if most in gflops else (max(gflops) if gflops else None)
    for op, ax in zip(ops, panels):
        sizes = sorted({m.N for m in mine if m.op == op})
        for backend, (colour, marker) in looks.items():
            rows = sorted((m for m in mine if (m.op, m.backend) == (op, backend) and m.workers in (None, most)),
                          key=lambda m: m.N)
            if not rows:
                continue
            ax.plot([m.N for m in rows], [m.median_ns for m in rows], "-", color=colour, lw=1.3)
            for m in rows:
                ax.plot(m.N, m.median_ns, marker, color=colour, ms=5,
                        markerfacecolor="none" if m.extrapolated else colour)
        for r in _limits(result, robot, op):
            if limit_cores is not None and sizes:
                limit = r["flops_per_state"] / gflops[limit_cores]
                ax.plot([sizes[0], sizes[-1]], [limit, limit], ls=_DASHED, color=looks.get(r["backend"], ("grey",))[0],
                        lw=1.0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("batch size N (states per call)")
    handles = _engine_handles(looks)
    if any(m.extrapolated for m in mine):
        handles.append(_handle(color="grey", marker="o", ls="none", markerfacecolor="none",
                               label="per-call loop timed on a prefix of the N states"))
    if _any_limit(result, robot) and limit_cores is not None:
        handles.append(_handle(color="grey", ls=_DASHED, label=f"physical limit of the generated code: flops per state "
                                                               f"÷ peak measured on {_cores(limit_cores)}"))
    on = f", batches on {_cores(most)}" if most else ""
    return _finish(plt, fig, handles, f"{robot}: time per state vs batch size{on}", result, path)


def plot_cores(result: BenchResult, path, robot: Optional[str] = None) -> Optional[Path]:
    """``path``: median ns per state at the largest N against the cores (our workers,
    pinocchio's threads), one panel per operation, with ideal 1/K scaling from each
    1-core point (dotted), the limit on K cores (dashed) and the serial pinocchio loop
    (a thin line); None (nothing written) unless two or more worker counts were measured."""
    plt, robot, mine, ops = _setup(result, robot)
    largest = max(m.N for m in mine)
    at_largest = [m for m in mine if m.N == largest]
    ks = sorted({m.workers for m in at_largest if m.workers is not None})
    if len(ks) < 2:
        return None
    from matplotlib.ticker import NullLocator

    looks = _looks(mine)
    gflops = _gflops(result)
    fig, panels = _panels(plt, ops, sharex=True)
    for op, ax in zip(ops, panels):
        for backend, (colour, marker) in looks.items():
            rows = sorted((m for m in at_largest if (m.op, m.backend) == (op, backend)), key=lambda m: m.workers or 0)
            parallel = [m for m in rows if m.workers is not None]
            if parallel:
                ax.plot([m.workers for m in parallel], [m.median_ns for m in parallel], "-", marker=marker,
                        color=colour, lw=1.3, ms=5)
                one = next((m for m in parallel if m.workers == 1), None)
                if one is not None:
                    ax.plot(ks, [one.median_ns / k for k in ks], ":", color=colour, lw=0.9)
            elif rows and backend == "pinocchio":
                ax.plot([ks[0], ks[-1]], [rows[0].median_ns] * 2, "-", color=colour, lw=0.8, alpha=0.5)
        for r in _limits(result, robot, op):
            points = [(k, r["flops_per_state"] / gflops[k]) for k in ks if k in gflops]
            ax.plot([k for k, _ in points], [v for _, v in points], ls=_DASHED, color=looks.get(r["backend"], ("grey",))[0],
                    lw=1.0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("cores (our workers; pinocchio's threads)")
    parallel_engines = {b: look for b, look in looks.items()
                        if any(m.backend == b and m.workers is not None for m in at_largest)}
    handles = _engine_handles(parallel_engines)
    if "pinocchio" in looks:
        handles.append(_handle(color="black", lw=0.8, alpha=0.5, label="pinocchio's per-state loop (serial)"))
    handles.append(_handle(color="grey", ls=":", lw=0.9, label="ideal 1/K scaling from 1 core"))
    if _any_limit(result, robot):
        handles.append(_handle(color="grey", ls=_DASHED, label="physical limit on K cores: flops per state ÷ peak "
                                                               "measured on K"))
    return _finish(plt, fig, handles, f"{robot}: time per state vs cores, N = {largest:,}", result, path)


def _setup(result: BenchResult, robot: Optional[str]):
    """pyplot (Agg), the robot, its measurements and its operations (in the run's order)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    robot = robot or next(iter(result.robots), None)
    if robot not in result.robots:
        raise InputError(f"no results for robot {robot!r}; measured: {', '.join(result.robots)}")
    mine = [m for m in result.measurements if m.robot == robot]
    ops = [op for op in result.settings["ops"] if any(m.op == op for m in mine)]
    if not ops:
        raise InputError(f"no measurement of robot {robot!r} to plot")
    return plt, robot, mine, ops


def _looks(measurements) -> dict:
    """backend -> (colour, marker): ours first, in the order measured, then the references."""
    backends = list(dict.fromkeys(m.backend for m in measurements))
    ours = [b for b in backends if b not in _REFERENCE_LOOKS]
    looks = {b: (_OURS_COLOURS[i % len(_OURS_COLOURS)], _OURS_MARKERS[i % len(_OURS_MARKERS)])
             for i, b in enumerate(ours)}
    looks.update({b: _REFERENCE_LOOKS[b] for b in backends if b in _REFERENCE_LOOKS})
    return looks


def _panels(plt, ops, sharex: bool):
    """A figure with one panel per operation (3 per row), titled with what it computes;
    the y axis of each its own (a derivative costs 10× a τ)."""
    columns = min(3, len(ops))
    rows = -(-len(ops) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.3 * columns + _LEGEND_INCHES, 3.4 * rows + 0.8), sharex=sharex,
                             squeeze=False)
    panels = list(axes.flat)
    for ax in panels[len(ops):]:
        ax.remove()
    for op, ax in zip(ops, panels):
        ax.set_title(f"{op}: {OP_DESCRIPTIONS.get(op, op)}", fontsize=9)
        ax.set_ylabel(_NS)
        ax.grid(True, which="major", alpha=0.4)
        ax.grid(True, which="minor", axis="y", alpha=0.15)
        ax.tick_params(labelbottom=True)
    return fig, panels[:len(ops)]


def _gflops(result: BenchResult) -> dict:
    peak = result.environment.get("peak_flops") or {}
    return {int(k): g for k, g in (peak.get("gflops") or {}).items() if g}


def _limits(result: BenchResult, robot: str, op: str) -> list:
    return [r for r in result.limits() if r["robot"] == robot and r["op"] == op]


def _any_limit(result: BenchResult, robot: str) -> bool:
    return bool(_gflops(result)) and any(r["robot"] == robot for r in result.limits())


def _cores(k: int) -> str:
    return f"{k} core{'s' if k > 1 else ''}"


def _handle(**style):
    from matplotlib.lines import Line2D

    return Line2D([], [], **style)


def _engine_handles(looks: dict) -> list:
    return [_handle(color=colour, marker=marker, lw=1.3, label=_REFERENCE_WORDS.get(backend, backend))
            for backend, (colour, marker) in looks.items()]


def _finish(plt, fig, handles, title: str, result: BenchResult, path) -> Path:
    """The legend to the right of the panels, the title with the machine, the file."""
    import textwrap

    from matplotlib.ticker import LogFormatterSciNotation

    env = result.environment
    peak = "; peak " + ", ".join(f"{g:.1f} GFLOP/s on {_cores(k)}" for k, g in sorted(_gflops(result).items())) \
        if _gflops(result) else ""
    for handle in handles:
        handle.set_label(textwrap.fill(handle.get_label(), 36))
    fig.suptitle(f"{title}\n{env.get('cpu', '')}, {str(env.get('date', ''))[:10]}{peak}", fontsize=10)
    for ax in fig.axes:       # a panel spanning about a decade: label some minor ticks too
        ax.yaxis.set_minor_formatter(LogFormatterSciNotation(labelOnlyBase=False, minor_thresholds=(1.2, 0.5)))
    right = 1 - _LEGEND_INCHES / fig.get_size_inches()[0]
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(right, 0.5), fontsize=8, frameon=False,
               labelspacing=1.0)
    fig.tight_layout(rect=(0, 0, right, 1))
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
