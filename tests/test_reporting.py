"""Markdown report and plots of a (small) validation run: written, readable, complete."""

import numpy as np

from dyn_plugin import validation
from dyn_plugin.reporting import markdown_report, plot_report


def test_report_and_plots(tmp_path):
    suite = validation.load_suite("quick")
    suite.robots, suite.samples = ["scara"], 5
    suite.references = ["pinocchio", "pybullet"]
    suite.quantities = ["tau", "qdd", "step", "traj_zero"]
    suite.duration = 0.05
    report = validation.run(suite)
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


def test_plots_have_a_colour_for_every_backend_and_reference_pair(tmp_path):
    """The default suite compares 6 backends with 2 references: 12 histogram lines, more
    than matplotlib's 10-colour cycle (this used to raise KeyError)."""
    default = validation.load_suite("default")
    suite = validation.load_suite("quick")
    suite.robots, suite.samples, suite.quantities = ["scara"], 2, ["M"]
    suite.backends, suite.references = default.backends, ["pinocchio", "pybullet"]
    report = validation.run(suite)
    assert len({(c.backend, c.reference) for c in report.comparisons}) == 2 * len(default.backends) > 10
    (path,) = [p for p in plot_report(report, tmp_path) if p.name == "scara_errors.png"]
    assert path.stat().st_size > 10_000
