"""The CLI's Dask verbs against one 2-process LocalCluster, reached by its address:
``validate --dask``, ``dataset`` and ``friction --monte-carlo`` give exactly what the
serial runs give."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("zarr")

from dyn_plugin.tools.cli import main  # noqa: E402
from dyn_plugin.dataset import read_dataset  # noqa: E402


def run(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def json_of(argv, capsys) -> dict:
    assert run([*argv, "--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)


def test_validate_on_dask_equals_the_serial_run(dask_address, capsys):
    """300 states: two chunks (250 + 50) and the trajectories, as three tasks."""
    argv = ["validate", "--robot", "scara", "--backend", "newton_euler", "newton_euler_friction",
            "--samples", "300", "--seed", "5"]
    serial = json_of(argv, capsys)
    distributed = json_of([*argv, "--dask", dask_address], capsys)
    for report in (serial, distributed):
        report.pop("seconds")
    assert serial == distributed
    assert serial["passed"] and {r["samples"] for r in serial["results"] if r["quantity"] == "tau"} == {300}


def test_dataset_on_dask_equals_serial_and_a_rerun_computes_nothing(dask_address, tmp_path, capsys):
    argv = ["dataset", "scara", "--states", "3000", "--chunk", "1000", "--mass-matrix"]
    assert run([*argv, "--out", str(tmp_path / "serial.zarr")]) == 0
    assert run([*argv, "--out", str(tmp_path / "dask.zarr"), "--dask", dask_address]) == 0
    serial, distributed = (read_dataset(tmp_path / name) for name in ("serial.zarr", "dask.zarr"))
    for key in ("q", "qd", "qdd", "tau", "M"):
        assert np.array_equal(serial[key], distributed[key]), key
    capsys.readouterr()
    assert run([*argv, "--out", str(tmp_path / "serial.zarr")]) == 0
    assert "computed 0, skipped 3" in capsys.readouterr().out


def test_dataset_refuses_a_store_of_another_robot(tmp_path, capsys):
    store = str(tmp_path / "store.zarr")
    assert run(["dataset", "scara", "--states", "10", "--chunk", "10", "--out", store]) == 0
    capsys.readouterr()
    assert run(["dataset", "puma560", "--states", "10", "--chunk", "10", "--out", store]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "overwrite" in err


@pytest.mark.parametrize("argv, fragment", [
    (["dataset", "scara", "--states", "0", "--out", "X"], "at least 1"),
    (["dataset", "scara", "--states", "10", "--chunk", "20", "--out", "X"], "chunk"),
    (["friction", "scara", "--dask"], "--monte-carlo"),
])
def test_dask_verbs_bad_input_is_one_line(argv, fragment, tmp_path, capsys):
    argv = [str(tmp_path / "x.zarr") if a == "X" else a for a in argv]
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and fragment in err, err


def test_friction_monte_carlo_on_dask_equals_serial(dask_address, capsys):
    argv = ["friction", "puma560", "--monte-carlo", "16", "--samples", "21", "--profile", "dhanaraj"]
    serial = json_of(argv, capsys)
    distributed = json_of([*argv, "--dask", dask_address], capsys)
    assert serial == distributed
    assert np.any(np.array(serial["std"]) > 0)


def test_dataset_of_a_floating_robot_from_a_urdf_file(tmp_path):
    """``--floating-base``: a URDF file's robot with a free-flying root; q has the 7 base
    entries first (nq = n + 7), the others n + 6."""
    import dyn_plugin as dp
    from urdf_factory import random_tree_urdf

    path = tmp_path / "tree.urdf"
    path.write_text(random_tree_urdf(4, 5, name="tree"))
    store = tmp_path / "f.zarr"
    assert run(["dataset", str(path), "--floating-base", "--states", "200", "--trajectories", "--out", str(store)]) == 0
    data = read_dataset(store)
    model = dp.load_robot(str(path), floating_base=True)
    assert data["q"].shape == (200, model.n + 7) and data["tau"].shape == (200, model.n + 6)
    assert data["attributes"]["coordinate_names"][:7] == list(model.configuration_names[:7])
    be = dp.get_backend("newton_euler", model)
    assert np.array_equal(data["tau"], be.inverse_dynamics(data["q"], data["qd"], data["qdd"]))
