"""The real-data report's figures (PNG, small: ≤ 100 dpi, decimated scatter): held-out
Panda torques, RMS bar charts, friction-velocity curves and loops of the Franka joint."""

from __future__ import annotations

from pathlib import Path

import numpy as np

DPI = 80
SCATTER_POINTS = 1500
"""At most this many measured points per speed in a scatter (every k-th sample)."""
SPEED_COLOURS = {"slow": "C0", "middle": "C1", "high": "C2"}
MODEL_COLOURS = ("C3", "C0", "C2", "C1")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path, dpi: int = DPI) -> Path:
    fig.savefig(path, dpi=dpi)
    _pyplot().close(fig)
    return path


def panda_holdout(path: Path, arrays: dict, joints, labels) -> Path:
    """On the held-out part, per joint (one row each): measured and predicted torque (left),
    and measured − predicted of each model of ``labels`` (keys of ``arrays["predicted"]``,
    right); legend above."""
    plt = _pyplot()
    t, measured = arrays["t"], arrays["measured"]
    n = measured.shape[1]
    fig, axes = plt.subplots(n, 2, figsize=(10, 1.2 * n + 1.0), sharex=True, squeeze=False,
                             gridspec_kw={"width_ratios": (3, 2)})
    for j in range(n):
        left, right = axes[j]
        left.plot(t, measured[:, j], "-", lw=2.2, color="0.7", label="measured (filtered)")
        right.axhline(0.0, color="0.7", lw=0.8)
        for k, label in enumerate(labels):
            predicted = arrays["predicted"][label][:, j]
            left.plot(t, predicted, "-", lw=0.8, color=MODEL_COLOURS[k % 4], label=label)
            right.plot(t, measured[:, j] - predicted, "-", lw=0.7, color=MODEL_COLOURS[k % 4])
        left.set_ylabel(f"τ{j + 1} (N·m)", fontsize="small")
        right.set_ylabel(f"error {j + 1} (N·m)", fontsize="small")
        for ax in (left, right):
            ax.tick_params(labelsize="small")
    for ax in axes[-1]:
        ax.set_xlabel("t (s), held-out part of the log")
    axes[0, 1].set_title("measured − predicted", fontsize="small")
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper center", ncol=len(names), fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.965))
    return _save(fig, path, dpi=72)             # 14 panels of lines: ~170 kB at 80 dpi


def rms_bars(path: Path, groups, series: dict, ylabel: str, title: str) -> Path:
    """Grouped bars: one group per entry of ``groups`` (x labels), one bar per series
    (``{label: values per group}``, None for a missing value, drawn as an 'x'); legend to
    the right of the axes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 3.6))
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups))
    for k, (label, values) in enumerate(series.items()):
        heights = np.array([np.nan if v is None else v for v in values], dtype=float)
        offset = (k - (len(series) - 1) / 2) * width
        ax.bar(x + offset, np.nan_to_num(heights), width, label=label, color=f"C{k % 10}")
        missing = np.isnan(heights)
        ax.plot(x[missing] + offset, np.zeros(missing.sum()), "x", color=f"C{k % 10}", ms=6)
    ax.set_xticks(x, groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    fig.tight_layout()
    return _save(fig, path)


def franka_laws(path: Path, arrays: dict, laws) -> Path:
    """Friction against velocity, one panel per law: each speed's measured points (light)
    and the law fitted on that speed along the samples (a curve for a static law, loops
    for a dynamic one)."""
    plt = _pyplot()
    columns = 3
    rows = -(-len(laws) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(10, 3.0 * rows + 0.6), sharex=True, sharey=True,
                             squeeze=False)
    for ax, law in zip(axes.ravel(), laws):
        for speed, data in arrays.items():
            every = max(1, len(data["qd"]) // SCATTER_POINTS)
            colour = SPEED_COLOURS.get(speed, "C7")
            ax.plot(data["qd"][::every], data["tau"][::every], ".", ms=1.5, color=colour, alpha=0.25)
            ax.plot(data["qd"], data["predicted"][law], "-", lw=0.7, color=colour, label=f"{speed}")
        ax.set_title(law, fontsize="medium")
        ax.tick_params(labelsize="small")
    for ax in axes.ravel()[len(laws):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("q̇ (rad/s)")
    for ax in axes[:, 0]:
        ax.set_ylabel("friction τ (N·m)")
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, [f"{name}: measured (dots), law fitted on it (line)" for name in names], loc="upper center",
               ncol=len(names), fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return _save(fig, path)
