"""Validation reports for people: a Markdown summary and PNG figures (matplotlib)."""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np

from ..backends.registry import backends as registered_backends
from .machine import installed_versions
from .validate import BRISTLES, DERIVATIVES, QUANTITIES, STEPPING, TRAJECTORIES, Report

__all__ = ["REFERENCE_STYLES", "TOLERANCE_STYLE", "ZERO_FLOOR", "floor_verdict", "histogram_figure", "markdown_report",
           "plot_report", "trajectory_figure"]


def _describe(quantity: str) -> str:
    for group in (QUANTITIES, DERIVATIVES):
        if quantity in group:
            return group[quantity][1]
    return {**STEPPING, **BRISTLES}[quantity]


def _per_state(quantity: str) -> bool:
    """A quantity compared state by state over the suite's random states (a histogram
    shows its errors), not a trajectory nor a check against physics."""
    return quantity in QUANTITIES or quantity in DERIVATIVES or (quantity in STEPPING and quantity not in TRAJECTORIES)


def _case(quantity: str) -> str:
    """A trajectory case in a few words: its description up to the first comma."""
    return _describe(quantity).split(",")[0]


def markdown_report(report: Report) -> str:
    """The validation report as Markdown: settings, one table per reference, failures."""
    from .._version import __version__

    suite = report.suite
    lines = [
        f"# dyn-plugin validate: suite `{suite.name}`",
        "",
        f"dyn_plugin {__version__}, Python {platform.python_version()}, {_versions()}; "
        f"{suite.samples} random states per robot (seed {suite.seed}), q within the joint limits; "
        f"ran in {report.seconds:.1f} s.",
        "",
        f"Error measure: max over samples and entries of |ours − ref| / max(1, |ref|). "
        f"Pass at ≤ {suite.rtol:g} (trajectories: ≤ {suite.trajectory_tol:g}, dt = {suite.dt:g} s, "
        f"{suite.duration:g} s){report.own_tolerances().replace('<=', '≤')}" + ("; against pybullet, where it disagrees with pinocchio by more (the floor), "
                                    "at ≤ tolerance + floor and within the tolerance of pinocchio's prediction"
                                    if report.disagreements() else "")
        + ("; the derivatives' entries are divided by max(1, the largest entry of the state's matrix) first"
           if any(q in DERIVATIVES for q in suite.quantities) else "") + ".",
        "",
        "**Verdict: " + ("all passed**" if report.passed else f"{len(report.failures())} failed**"),
        "",
        "| quantity | meaning |",
        "|---|---|",
    ]
    lines += [f"| `{q}` | {_describe(q)} |" for q in suite.quantities]
    # the suite's references, then those of checks against physical oracles (validate/bristles)
    for reference in dict.fromkeys([*suite.references, *(c.reference for c in report.comparisons)]):
        rows = [c for c in report.comparisons if c.reference == reference]
        quantities = list(dict.fromkeys([*(q for q in suite.quantities if any(c.quantity == q for c in rows)),
                                         *(c.quantity for c in rows)]))
        lines += ["", f"## Against {reference}", "", "| robot | backend | " + " | ".join(quantities) + " |",
                  "|---|---|" + "---:|" * len(quantities)]
        for key in dict.fromkeys((c.robot, c.backend) for c in rows):
            cells = {c.quantity: c for c in rows if (c.robot, c.backend) == key}
            lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(_cell(cells.get(q)) for q in quantities) + " |")
    if report.skips:
        lines += ["", "## Skipped (not asked of the backend; fails nothing)", ""]
        lines += [f"- {line}" for line in report.skip_lines()]
    if report.disagreements():
        lines += ["", "## Reference disagreement (pybullet vs pinocchio, same states)", ""]
        lines += [f"- {line}" for line in report.disagreement_lines()]
    growth = [c for c in report.comparisons if c.trace is not None]
    if growth:
        marks = list(growth[0].trace["growth"])
        lines += ["", "## Trajectory error growth (max |Δq| up to t)", "",
                  "| robot | backend | case | " + " | ".join(marks) + " |", "|---|---|---|" + "---:|" * len(marks)]
        lines += [f"| {c.robot} | {c.backend} | {c.quantity} | " +
                  " | ".join(f"{v:.1e}" for v in c.trace["growth"].values()) + " |" for c in growth]
    if report.failures():
        lines += ["", "## Failures", ""]
        lines += [f"- {c.robot} {c.backend} vs {c.reference} `{c.quantity}`: {c.max_rel:.3e} at state "
                  f"{c.worst_sample}, entry {list(c.worst_entry)}{floor_verdict(c)}" for c in report.failures()]
    return "\n".join(lines) + "\n"


def floor_verdict(comparison) -> str:
    """How a comparison against pybullet stood against the references' disagreement, in
    words (empty where pybullet and pinocchio agree)."""
    c = comparison
    if not c.floor_applies:
        return ""
    against = f"; reference disagreement {c.floor:.1e}: pass at <= {c.rtol:g} + {c.floor:.1e}"
    if c.pinocchio_error is None:
        return against
    return against + f", ours vs pinocchio's prediction {c.pinocchio_error:.1e} (pass at <= {c.rtol:g})"


def _cell(comparison) -> str:
    if comparison is None:
        return "–"  # not compared: the report's skipped section says why
    floor = f" (floor {comparison.floor:.1e})" if comparison.floor_applies else ""
    return f"{comparison.max_rel:.1e}{floor}" + ("" if comparison.passed else " **FAIL**")


def _versions() -> str:
    return ", ".join(f"{dist} {version}" for dist, version in installed_versions(("pin", "pybullet", "numpy")).items()
                     if version)


def plot_report(report: Report, folder) -> list:
    """Write per robot an error histogram and (with trajectories) an overlay plot; return paths."""
    import matplotlib

    matplotlib.use("Agg")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for robot in dict.fromkeys(c.robot for c in report.comparisons):
        rows = [c for c in report.comparisons if c.robot == robot]
        if any(c.trace is None and _per_state(c.quantity) for c in rows):
            paths.append(_save(histogram_figure(robot, rows, report.suite), folder / f"{robot}_errors.png"))
        traces = [c for c in rows if c.trace is not None]
        if traces:
            paths.append(_save(trajectory_figure(robot, traces), folder / f"{robot}_trajectories.png"))
    return paths


# The tolerance line: black and dash-dotted, unlike every data line (coloured; solid or dashed).
TOLERANCE_STYLE = {"color": "black", "linestyle": "-.", "linewidth": 1.5}
REFERENCE_STYLES = ("-", "--", ":")   # one line style per reference, in the suite's order
ZERO_FLOOR = 1e-18                     # errors of exactly 0 are drawn here on the log scales


def _backend_colours(backends) -> dict:
    """One colour per backend (tab10; more than ten backends reuse colours)."""
    import matplotlib.pyplot as plt

    palette = plt.get_cmap("tab10").colors
    return {name: palette[k % len(palette)] for k, name in enumerate(dict.fromkeys(backends))}


def histogram_figure(robot, rows, suite):
    """Per quantity, a histogram of each backend x reference pair's errors over the random
    states, with the tolerance; one legend panel naming every pair (colour: backend, line
    style: reference) and the tolerance line."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    rows = [c for c in rows if c.trace is None and _per_state(c.quantity)]
    quantities = list(dict.fromkeys(c.quantity for c in rows))
    pairs = list(dict.fromkeys((c.backend, c.reference) for c in rows))
    cols = min(3, len(quantities) + 1)
    nrows = int(np.ceil((len(quantities) + 1) / cols))      # + 1: the legend's panel
    height = max(3.0 * nrows, 0.2 * (len(pairs) + 2) + 1.0)  # the legend fits in its panel
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, height), squeeze=False)
    bins = np.logspace(np.log10(ZERO_FLOOR), max(0, np.log10(suite.rtol) + 2), 45)
    colours = _backend_colours(c.backend for c in rows)
    references = list(dict.fromkeys(c.reference for c in rows))
    styles = {ref: REFERENCE_STYLES[k % len(REFERENCE_STYLES)] for k, ref in enumerate(references)}
    for ax, quantity in zip(axes.flat, quantities):
        for c in (c for c in rows if c.quantity == quantity):
            ax.hist(np.maximum(c.errors, ZERO_FLOOR), bins=bins, histtype="step", color=colours[c.backend],
                    linestyle=styles[c.reference])
        ax.axvline(suite.rtol, **TOLERANCE_STYLE)
        ax.set_xscale("log")
        ax.set_title(f"{quantity}: {_describe(quantity)}", fontsize=8)
        ax.set_xlabel(f"relative error per state (0 drawn at {ZERO_FLOOR:g})", fontsize=8)
        ax.set_ylabel("number of states", fontsize=8)
    for ax in list(axes.flat)[len(quantities):]:
        ax.axis("off")
    handles = [Line2D([], [], color=colours[b], linestyle=styles[r]) for b, r in pairs]
    handles.append(Line2D([], [], **TOLERANCE_STYLE))
    labels = [f"{b} vs {r}" for b, r in pairs] + [f"tolerance {suite.rtol:g}"]
    axes.flat[len(quantities)].legend(handles, labels, loc="upper left", fontsize=8,
                                      title="backend vs reference", title_fontsize=8)
    fig.suptitle(f"{robot}: error of each backend against each reference over {suite.samples} random states")
    return fig


def trajectory_figure(robot, traces):
    """Per trajectory case (columns): q(t) of one rigid and one friction backend (when
    run) over pybullet's, then every backend's largest |q − q_pybullet| over time; each
    panel's title names its case and what it shows."""
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys(c.quantity for c in traces))
    shown = _overlaid_backends(traces)
    fig, axes = plt.subplots(len(shown) + 1, len(cases), figsize=(5.5 * len(cases) + 2.5, 3.4 * (len(shown) + 1)),
                             squeeze=False)
    colours = _backend_colours(c.backend for c in traces)
    for col, case in enumerate(cases):
        for row, backend in enumerate(shown):
            trace = next(c for c in traces if (c.quantity, c.backend) == (case, backend))
            _overlay(axes[row, col], trace, heading=_case(case))
        _error_panel(axes[-1, col], [c for c in traces if c.quantity == case], colours, heading=_case(case))
    for ax in axes[:, -1]:   # the legends once per row, right of the last column
        ax.legend(*ax.get_legend_handles_labels(), fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle(f"{robot}: our semi-implicit Euler against pybullet's own stepping, same start and time step")
    return fig


def _overlaid_backends(traces) -> list:
    """The first rigid backend and the first friction backend (stick-slip) that ran."""
    with_friction = registered_backends(can=("friction",))
    ran = list(dict.fromkeys(c.backend for c in traces))
    rigid = [b for b in ran if b not in with_friction][:1]
    friction = [b for b in ran if b in with_friction][:1]
    return rigid + friction


def _overlay(ax, comparison, heading: str) -> None:
    """q(t) of every joint: pybullet thick and pale, ours dashed on top, same colour per joint."""
    trace, backend = comparison.trace, comparison.backend
    for j in range(trace["ours"].shape[1]):
        line, = ax.plot(trace["t"], trace["pybullet"][:, j], linewidth=4, alpha=0.35, label=f"joint {j + 1}")
        ax.plot(trace["t"], trace["ours"][:, j], color=line.get_color(), linewidth=1, linestyle="--")
    ax.plot([], [], color="grey", linewidth=4, alpha=0.35, label="pybullet (thick, pale)")
    ax.plot([], [], color="black", linewidth=1, linestyle="--", label=f"{backend}, ours (dashed)")
    friction = ", joint friction: stick and slip" if backend in registered_backends(can=("friction",)) else ""
    ax.set_title(f"{heading}\n{backend} (ours, dashed){friction}, over pybullet", fontsize=9)
    ax.set_xlabel("time t [s]")
    ax.set_ylabel("joint position q\n[rad; m if prismatic]", fontsize=8)


def _error_panel(ax, comparisons, colours, heading: str) -> None:
    """max over joints of |q_ours − q_pybullet| against time, one line per backend, and the tolerance."""
    for c in comparisons:
        error = np.abs(c.trace["ours"] - c.trace["pybullet"]).max(axis=1)
        ax.semilogy(c.trace["t"], np.maximum(error, ZERO_FLOOR), color=colours[c.backend], label=c.backend)
    ax.axhline(comparisons[0].rtol, label=f"tolerance {comparisons[0].rtol:g}", **TOLERANCE_STYLE)
    ax.set_title(f"{heading}\nlargest joint difference to pybullet, every backend", fontsize=9)
    ax.set_xlabel("time t [s]")
    ax.set_ylabel(f"max |q_ours − q_pybullet|\n[rad; m]  (0 drawn at {ZERO_FLOOR:g})", fontsize=8)


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
