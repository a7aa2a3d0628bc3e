"""Validation reports for people: a Markdown summary and PNG figures (matplotlib)."""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np

from .validation import QUANTITIES, STEPPING, Report


def _describe(quantity: str) -> str:
    return QUANTITIES[quantity][1] if quantity in QUANTITIES else STEPPING[quantity]


def markdown_report(report: Report) -> str:
    """The validation report as Markdown: settings, one table per reference, failures."""
    from . import __version__

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
        f"{suite.duration:g} s).",
        "",
        "**Verdict: " + ("all passed**" if report.passed else f"{len(report.failures())} failed**"),
        "",
        "| quantity | meaning |",
        "|---|---|",
    ]
    lines += [f"| `{q}` | {_describe(q)} |" for q in suite.quantities]
    for reference in suite.references:
        rows = [c for c in report.comparisons if c.reference == reference]
        quantities = [q for q in suite.quantities if any(c.quantity == q for c in rows)]
        lines += ["", f"## Against {reference}", "", "| robot | backend | " + " | ".join(quantities) + " |",
                  "|---|---|" + "---:|" * len(quantities)]
        for key in dict.fromkeys((c.robot, c.backend) for c in rows):
            cells = {c.quantity: c for c in rows if (c.robot, c.backend) == key}
            lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(_cell(cells.get(q)) for q in quantities) + " |")
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
                  f"{c.worst_sample}, entry {list(c.worst_entry)}" for c in report.failures()]
    return "\n".join(lines) + "\n"


def _cell(comparison) -> str:
    if comparison is None:
        return "–"  # not compared: τ and q̈ of a friction backend are checked by stepping
    return f"{comparison.max_rel:.1e}" + ("" if comparison.passed else " **FAIL**")


def _versions() -> str:
    from importlib import metadata

    found = []
    for dist in ("pin", "pybullet", "numpy"):
        try:
            found.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join(found)


def plot_report(report: Report, folder) -> list:
    """Write per robot an error histogram and (with trajectories) an overlay plot; return paths."""
    import matplotlib

    matplotlib.use("Agg")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for robot in dict.fromkeys(c.robot for c in report.comparisons):
        rows = [c for c in report.comparisons if c.robot == robot]
        paths.append(_histograms(robot, rows, report.suite, folder))
        traces = [c for c in rows if c.trace is not None]
        if traces:
            paths.append(_trajectories(robot, traces, folder))
    return paths


def _histograms(robot, rows, suite, folder) -> Path:
    import matplotlib.pyplot as plt

    quantities = list(dict.fromkeys(c.quantity for c in rows if c.trace is None))
    cols = min(3, len(quantities))
    nrows = int(np.ceil(len(quantities) / cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.0 * nrows), squeeze=False)
    floor = 1e-18  # exact agreement is drawn at the floor of the log scale
    bins = np.logspace(-18, max(0, np.log10(suite.rtol) + 2), 45)
    pairs = list(dict.fromkeys((c.backend, c.reference) for c in rows))
    palette = plt.get_cmap("tab20").colors           # 20 colours; more pairs than that reuse them
    colours = {pair: palette[k % len(palette)] for k, pair in enumerate(pairs)}
    for ax, quantity in zip(axes.flat, quantities):
        for c in (c for c in rows if c.quantity == quantity):
            ax.hist(np.maximum(c.errors, floor), bins=bins, histtype="step", color=colours[(c.backend, c.reference)],
                    label=f"{c.backend} vs {c.reference}")
        ax.axvline(suite.rtol, color="red", linestyle="--", linewidth=1)
        ax.set_xscale("log")
        ax.set_title(f"{quantity}: {_describe(quantity)}", fontsize=8)
        ax.set_xlabel("relative error per state")
    for ax in list(axes.flat)[len(quantities):]:
        ax.axis("off")
    axes.flat[0].set_ylabel("states")
    axes.flat[0].legend(fontsize=6)
    return _save(fig, f"{robot}: errors against the references (red: tolerance {suite.rtol:g})",
                 folder / f"{robot}_errors.png")


def _trajectories(robot, traces, folder) -> Path:
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys(c.quantity for c in traces))
    fig, axes = plt.subplots(2, len(cases), figsize=(6 * len(cases), 6.5), squeeze=False)
    for col, case in enumerate(cases):
        first = next(c for c in traces if c.quantity == case)
        t = first.trace["t"]
        ax = axes[0, col]
        for j in range(first.trace["ours"].shape[1]):
            line, = ax.plot(t, first.trace["pybullet"][:, j], linewidth=3, alpha=0.35)
            ax.plot(t, first.trace["ours"][:, j], color=line.get_color(), linewidth=1, linestyle="--")
        ax.set_title(f"{case}: q(t), pybullet (thick) and {first.backend} (dashed)", fontsize=9)
        ax.set_xlabel("t [s]")
        ax.set_ylabel("q [rad or m]")
        ax = axes[1, col]
        for c in (c for c in traces if c.quantity == case):
            error = np.abs(c.trace["ours"] - c.trace["pybullet"]).max(axis=1)
            ax.semilogy(t, np.maximum(error, 1e-18), label=c.backend)
        ax.axhline(first.rtol, color="red", linestyle="--", linewidth=1)
        ax.set_xlabel("t [s]")
        ax.set_ylabel("max |q_ours − q_pybullet|")
        ax.legend(fontsize=7)
    return _save(fig, f"{robot}: our semi-implicit Euler against pybullet stepping, same dt",
                 folder / f"{robot}_trajectories.png")


def _save(fig, title: str, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
