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



# -- 5. each message speaks the language of its caller --------------------------------------------

def test_argument_is_the_keyword_in_python_and_the_option_on_the_command_line():
    from dyn_plugin.errors import argument, arguments_spelled

    assert (argument("out"), argument("overwrite", True)) == ("out", "overwrite=True")
    with arguments_spelled({"out": "--out", "overwrite": "--overwrite"}):
        assert (argument("out"), argument("overwrite", True)) == ("--out", "--overwrite")
        assert argument("mimic", True) == "mimic=True (Python API)"     # no such option here
    assert argument("out") == "out"


def test_an_explicit_chunk_above_states_names_the_options(tmp_path, capsys):
    pytest.importorskip("zarr")
    assert run(["dataset", "scara", "--states", "30", "--chunk", "50", "--out", str(tmp_path / "s.zarr")]) == 2
    assert "--chunk (50 states) must not exceed --states (30)" in one_line_error(capsys)
    with pytest.raises(dp.InputError, match=r"^chunk \(50 states\) must not exceed states \(30\)"):
        dp.dataset("scara", 30, chunk=50, out=tmp_path / "s.zarr", progress=False)


def test_a_store_of_other_settings_names_overwrite_and_out_as_the_caller_spells_them(tmp_path, capsys):
    pytest.importorskip("zarr")
    store = str(tmp_path / "s.zarr")
    assert run(["dataset", "scara", "--states", "10", "--out", store]) == 0
    capsys.readouterr()
    assert run(["dataset", "scara", "--states", "10", "--seed", "1", "--out", store]) == 2
    line = one_line_error(capsys)
    assert "pass --overwrite to replace it, or choose another --out" in line and "=True" not in line
    with pytest.raises(dp.InputError, match="pass overwrite=True to replace it, or choose another out$"):
        dp.dataset("scara", 10, seed=1, out=store, progress=False)


def test_an_output_in_a_missing_folder_is_named_by_its_option(capsys):
    assert run(["dataset", "scara", "--states", "10", "--out", "/nonexistent/d.zarr"]) == 2
    assert one_line_error(capsys).endswith("--out /nonexistent/d.zarr: folder /nonexistent does not exist")


def test_the_mimic_warning_names_the_option_on_the_command_line(tmp_path, capsys):
    from test_mimic import MIMIC_URDF

    from dyn_plugin.errors import URDFWarning

    path = tmp_path / "mimicry.urdf"
    path.write_text(MIMIC_URDF)
    with pytest.warns(URDFWarning, match=r"load with mimic=True for reduced"):
        dp.load_robot(str(path))
    assert run(["validate", "--robot", str(path), "--backend", "newton_euler", "--quantity", "tau",
                "--samples", "2", "--against", "pinocchio"]) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if "mimic joints" in line]
    assert len(warning) == 1 and "load with --mimic for reduced" in warning[0], warning


def test_an_unknown_reference_lists_the_references(capsys):
    assert run(["validate", "--against", "pinochio"]) == 2
    line = one_line_error(capsys)
    assert "--against: unknown backend 'pinochio'; references: pinocchio, pybullet" in line
    assert "newton_euler" not in line
