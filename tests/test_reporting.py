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
