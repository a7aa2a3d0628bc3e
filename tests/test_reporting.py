"""Markdown report and plots of a (small) validation run: written, readable, complete."""

import matplotlib
import numpy as np
import pytest

from dyn_plugin.tools import validate
from dyn_plugin.tools.reporting import histogram_figure, markdown_report, plot_report, trajectory_figure

matplotlib.use("Agg")


def test_report_and_plots(tmp_path):
    suite = validate.load_suite("quick")
    suite.robots, suite.samples = ["scara"], 5
    suite.references = ["pinocchio", "pybullet"]
    suite.quantities = ["tau", "qdd", "step", "traj_zero"]
    suite.duration = 0.05
    report = validate.run(suite)
    assert report.passed
    text = markdown_report(report)
    assert "## Against pinocchio" in text and "## Against pybullet" in text
    assert "Trajectory error growth" in text and "**Verdict: all passed**" in text
    paths = plot_report(report, tmp_path)
    assert sorted(p.name for p in paths) == ["scara_errors.png", "scara_trajectories.png"]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    trajectory = next(c for c in report.comparisons if c.quantity == "traj_zero")
    assert np.all(np.isfinite(trajectory.trace["ours"]))


@pytest.fixture(scope="module")
def every_backend():
    """The default suite's 6 backends (2 with friction) against both references: 12 pairs,
    more than matplotlib's 10-colour cycle; the friction backends have no τ against
    pinocchio (checked by stepping), so the τ panel shows only 8 of the 12 pairs."""
    default = validate.load_suite("default")
    suite = validate.load_suite("quick")
    suite.robots, suite.samples, suite.quantities = ["scara"], 2, ["tau", "M", "traj_zero"]
    suite.backends, suite.references, suite.duration = default.backends, ["pinocchio", "pybullet"], 0.05
    report = validate.run(suite)
    assert len({(c.backend, c.reference) for c in report.comparisons}) == 2 * len(default.backends) > 10
    return report


def _legend_texts(fig) -> list:
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [text.get_text() for legend in legends for text in legend.get_texts()]


def test_histogram_legend_names_every_pair_and_the_tolerance(every_backend):
    rows = [c for c in every_backend.comparisons if c.trace is None]
    fig = histogram_figure("scara", rows, every_backend.suite)
    pairs = {f"{c.backend} vs {c.reference}" for c in rows}
    texts = _legend_texts(fig)
    assert len(texts) == len(pairs) + 1 and set(texts) == pairs | {"tolerance 1e-09"}
    fig.tight_layout()
    fig.canvas.draw()
    (legend,) = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    box, page = legend.get_window_extent(), fig.bbox
    assert page.y0 <= box.y0 and box.y1 <= page.y1 and page.x0 <= box.x0 and box.x1 <= page.x1  # not cut off


def test_tolerance_line_looks_unlike_every_histogram(every_backend):
    """The tolerance is the only black, dash-dotted line; histograms are coloured, solid or dashed."""
    from matplotlib.colors import to_rgb

    rows = [c for c in every_backend.comparisons if c.trace is None]
    fig = histogram_figure("scara", rows, every_backend.suite)
    for ax in fig.axes:
        outlines = [patch for patch in ax.patches]
        if not outlines:
            continue
        (tolerance,) = ax.lines
        assert tolerance.get_xdata()[0] == every_backend.suite.rtol
        colour = to_rgb(tolerance.get_color())
        assert max(colour) - min(colour) < 0.05                   # achromatic
        assert all(np.ptp(to_rgb(p.get_edgecolor())) > 0.1 for p in outlines)
        assert tolerance.get_linestyle() not in {p.get_linestyle() for p in outlines}


def test_trajectory_plot_is_labelled(every_backend):
    """Stick-slip overlay: which curve is pybullet and which is ours, units on both axes."""
    traces = [c for c in every_backend.comparisons if c.trace is not None]
    fig = trajectory_figure("scara", traces)
    overlays, errors = fig.axes[:-1], fig.axes[-1]
    assert fig._suptitle.get_text()
    assert any("newton_euler_friction" in ax.get_title() and "stick" in ax.get_title() for ax in overlays)
    for ax in fig.axes:
        assert ax.get_title() and "[s]" in ax.get_xlabel() and "[rad" in ax.get_ylabel()
    texts = _legend_texts(fig)
    assert "pybullet (thick, pale)" in texts and "newton_euler_friction, ours (dashed)" in texts
    assert {c.backend for c in traces} | {"tolerance 1e-08"} <= set(texts)
    assert errors.get_yscale() == "log"


def test_plots_have_a_colour_for_every_backend_and_reference_pair(every_backend, tmp_path):
    (path,) = [p for p in plot_report(every_backend, tmp_path) if p.name == "scara_errors.png"]
    assert path.stat().st_size > 10_000


def test_every_trajectory_panel_has_its_own_title_naming_its_case(every_backend):
    """Each panel says which trajectory it shows and what (was: only the top row named the case)."""
    traces = [c for c in every_backend.comparisons if c.trace is not None]
    fig = trajectory_figure("scara", traces)
    titles = [ax.get_title() for ax in fig.axes]
    assert len(set(titles)) == len(titles) == 3          # rigid overlay, friction overlay, errors
    assert all(title.startswith("1 s trajectory under zero torque\n") for title in titles)


def test_checks_against_physics_are_not_drawn_as_histograms(every_backend):
    """A quantity that is not an error per random state (a trajectory, a check against a
    physical law) has no histogram panel, and does not stop the figures."""
    import dataclasses

    rows = [c for c in every_backend.comparisons if c.trace is None]
    physics = dataclasses.replace(rows[0], quantity="bristles_steady", reference="physics")
    fig = histogram_figure("scara", rows + [physics], every_backend.suite)
    assert not any("bristles" in ax.get_title() for ax in fig.axes)
