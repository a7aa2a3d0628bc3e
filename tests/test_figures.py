"""Figures answer one question at a glance (issue #32, second pass, item 8): a panel per
question, every axis labelled with its unit, legends beside the data, never on it; the
bench's figure one panel per operation with one line per engine, the schedule's Gantt
chart with its last level inside the frame and its speed-up figure written for one
processor count too."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

import dyn_plugin as dp
from dyn_plugin.tools import bench

matplotlib.use("Agg")
BENCH_JSON = Path(__file__).resolve().parents[1] / "validation" / "bench" / "bench.json"


@pytest.fixture
def saved(monkeypatch):
    """The figures saved while the test runs, drawn (after their savefig)."""
    figures = []
    original = Figure.savefig

    def savefig(self, *args, **kwargs):
        original(self, *args, **kwargs)
        figures.append(self)
    monkeypatch.setattr(Figure, "savefig", savefig)
    return figures


def data_axes(fig) -> list:
    return [ax for ax in fig.axes if ax.axison and (ax.lines or ax.patches)]


def legends_off_the_data(fig) -> None:
    """No legend box overlaps a panel that shows data."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)          # pyplot.close left the figure a canvas that cannot draw
    canvas.draw()
    renderer = canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legends
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in data_axes(fig):
            assert not box.overlaps(ax.get_window_extent(renderer)), (legend.get_texts()[0].get_text(), ax.get_title())


def labelled_with_units(fig) -> None:
    for ax in data_axes(fig):
        assert ax.get_title(), ax
        for label in (ax.get_xlabel(), ax.get_ylabel()):
            assert "(" in label or "[" in label or label.startswith("number of"), (ax.get_title(), label)


@pytest.fixture(scope="module")
def bench_result():
    return bench.BenchResult.from_dict(json.loads(BENCH_JSON.read_text()))


def test_bench_figures_have_a_panel_per_operation_and_a_line_per_engine(bench_result, saved, tmp_path):
    """validation/bench/bench.json (a 1- and 2-worker sweep of 6 operations and 6 engines):
    before, one panel of ~40 curves; now 6 panels of at most 6 engines and the limit."""
    ops = bench_result.settings["ops"]
    engines = {m.backend for m in bench_result.measurements}
    assert bench.plot_scaling(bench_result, tmp_path / "scaling.png").is_file()
    assert bench.plot_cores(bench_result, tmp_path / "scaling-cores.png").is_file()
    for fig in saved:
        panels = data_axes(fig)
        assert [ax.get_title().split(":")[0] for ax in panels] == ops
        for ax in panels:
            colours = {tuple(matplotlib.colors.to_rgba(line.get_color())) for line in ax.lines}
            assert len(colours) <= len(engines)
            assert ax.get_xscale() == ax.get_yscale() == "log"
        labelled_with_units(fig)
        legends_off_the_data(fig)


def test_a_run_without_a_sweep_writes_no_cores_figure(bench_result, tmp_path):
    one = bench.BenchResult.from_dict(json.loads(BENCH_JSON.read_text()))
    one.measurements = [m for m in one.measurements if m.workers in (None, 2)]
    assert bench.plot_cores(one, tmp_path / "cores.png") is None and not (tmp_path / "cores.png").exists()


def test_schedule_figures_for_one_processor_count(saved, tmp_path):
    """--processors 6: the Gantt chart shows every level inside its frame, and the
    speed-up figure is written (it was dropped without a word), legends off the curves."""
    from dyn_plugin.parallel import plot_study, schedule_study

    study = schedule_study(dp.load_robot("puma560"), "general", [6])
    gantt, speedup = plot_study(study, tmp_path / "gantt.png")
    assert (gantt.name, speedup.name) == ("gantt.png", "gantt-speedup.png") and speedup.is_file()
    chart, curves = saved
    (ax,) = chart.axes
    shown = study.shown()
    right = max(patch.get_x() + patch.get_width() for patch in ax.patches)
    assert right == shown.levels + 0.5 < ax.get_xlim()[1]
    assert shown.levels in ax.get_xticks()
    s_p, e_p = data_axes(curves)
    assert "speed-up" in s_p.get_ylabel() and "efficiency" in e_p.get_ylabel()
    ours = [line for line in s_p.lines if line.get_label() == "critical-path schedule"]
    assert [list(line.get_xdata()) for line in ours] == [[6]]
    assert ours[0].get_ydata()[0] == pytest.approx(study.tasks / shown.levels, rel=1e-12)   # S_p = T_1 / T_p
    labelled_with_units(curves)
    legends_off_the_data(curves)
    legends_off_the_data(chart)


def test_identify_fit_figure_has_units_and_its_legend_off_the_data(saved, tmp_path):
    from dyn_plugin.identification import identify, plot_fit, simulate_measurements

    model = dp.load_robot("scara")
    data = simulate_measurements(model, noise=0.01, samples=200, seed=1)
    result = identify(model, data.q, data.qd, data.qdd, data.tau)
    plot_fit(result, tmp_path / "fit.png", data.t)
    (fig,) = saved
    assert [ax.get_ylabel().split("\n")[0] for ax in data_axes(fig)] == [f"joint {j + 1}" for j in range(model.n)]
    assert all("N·m" in ax.get_ylabel() for ax in fig.axes) and fig.axes[-1].get_xlabel() == "t (s)"
    legends_off_the_data(fig)
    plot_fit(result, tmp_path / "fit_samples.png")
    assert saved[-1].axes[-1].get_xlabel() == "sample"
    assert np.isfinite(result.relative_rms_error)
