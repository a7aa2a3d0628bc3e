"""What a new user meets in the first hour (issue #32, second pass): defaults that fit
small runs, bad files refused in one line, messages in the caller's language, a clean
Ctrl-C, and summaries instead of array dumps."""

from __future__ import annotations

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.tools.cli import main


def run(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:   # argparse: usage errors
        return exc.code


def one_line_error(capsys) -> str:
    """The single stderr line of a refusal, checked to be one line without a traceback."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# -- 1. a dataset smaller than the default chunk ------------------------------------------------

def test_a_small_dataset_takes_one_chunk_of_all_its_states(tmp_path):
    pytest.importorskip("zarr")
    import pinocchio as pin

    from dyn_plugin.dataset import read_dataset

    summary = dp.dataset("puma560", 40, out=tmp_path / "d.zarr", progress=False)
    assert (summary.states, summary.chunks) == (40, 1)
    data = read_dataset(tmp_path / "d.zarr")
    assert data["attributes"]["chunk"] == 40
    ours = dp.load_robot("puma560")
    model = pin.buildModelFromUrdf(str(ours.source_path))
    model.gravity.linear = ours.gravity
    reference = np.array([pin.rnea(model, model.createData(), q, qd, qdd)
                          for q, qd, qdd in zip(data["q"], data["qd"], data["qdd"])])
    assert np.abs(data["tau"] - reference).max() <= 1e-9 * max(1.0, np.abs(reference).max())


def test_dataset_cli_without_chunk_runs_below_the_default_chunk(tmp_path, capsys):
    pytest.importorskip("zarr")
    assert run(["dataset", "scara", "--states", "30", "--out", str(tmp_path / "s.zarr")]) == 0
    assert "30 states in 1 chunks" in capsys.readouterr().out

