"""The real-data report (dyn_plugin/tools/real_data/) on the decimated slices of tests/data:
what it scores is what it says (held-out RMS of the public API's fit, the published
models' RMS from their arrays, a law's fit against its linear least-squares closed form),
and what it writes (README tables from the JSON's numbers, small PNGs)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.tools.real_data import franka_study, panda_study, write_report
from dyn_plugin.tools.real_data.__main__ import main

DATA = Path(__file__).resolve().parent / "data"
SLICE = DATA / "panda_gaz2019_every5.npz"
FRANKA = {speed: DATA / f"franka_joint2_{speed}_every10.npz" for speed in ("slow", "middle", "high")}
PROTOCOL = {"rate": 25.0}


@pytest.fixture(scope="module")
def panda():
    from test_lock import erd_panda

    return dp.load_robot(erd_panda(), lock=["panda_finger_joint1", "panda_finger_joint2"])


@pytest.fixture(scope="module")
def studies(panda):
    labels = []
    p = panda_study(SLICE, panda, sets=("none", "viscous+coulomb"), methods=("least squares",),
                    laws=("coulomb_viscous",), protocol=PROTOCOL, progress=labels.append)
    f = franka_study(FRANKA, laws=("coulomb_viscous",), progress=labels.append)
    return p, f, labels


@pytest.fixture(scope="module")
def independent(panda):
    """(fit part, held-out part, the viscous + Coulomb fit) through the public API."""
    fit, held = dp.prepare_log(**dp.load_log(SLICE), cutoff=10.0, rate=25.0, trim=0.5).split(0.4)
    return fit, held, dp.identify(panda, fit, friction=("viscous", "coulomb"))


def test_panda_scores_are_the_held_out_rms_of_the_fit(studies, independent):
    p, _, labels = studies
    fit, held, result = independent
    assert len(labels) == 2 + 1 + 3 and labels[0].startswith("Panda, none, least squares: held-out total")
    summary = p["summary"]
    assert (summary["fit_samples"], summary["holdout_samples"]) == (len(fit), len(held))
    score = dp.holdout_rms(result, held)
    entry = summary["models"][1]
    assert entry["friction"] == "viscous+coulomb"
    assert np.abs(np.subtract(entry["holdout_rms"], score.per_joint)).max() <= 1e-12 * score.total
    for entry in summary["models"]:
        assert entry["holdout_rms_total"] == pytest.approx(np.sqrt(np.mean(np.square(entry["holdout_rms"]))),
                                                           rel=1e-14)
    assert summary["models"][0]["holdout_rms_total"] > 2 * score.total       # no friction: far worse
    assert np.array_equal(p["arrays"]["measured"], held.tau)


def test_panda_law_is_fitted_on_the_rigid_residual(panda, studies, independent):
    """coulomb_viscous with an offset is linear: where its least-squares solution has
    F_C, F_v ≥ 0 (the bounds inactive), fit_friction must find it."""
    from dyn_plugin.identification import joint_torque_regressor

    p, _, _ = studies
    fit, held, result = independent

    def rigid(part):
        return result.base.regressor(joint_torque_regressor(panda, part.q, part.qd, part.qdd)) @ result.inertial

    law = p["summary"]["laws"][0]
    predicted, checked = rigid(held), 0
    for j in range(7):
        columns = np.stack([np.sign(fit.qd[:, j]), fit.qd[:, j], np.ones(len(fit))], axis=1)
        coulomb, viscous, offset = np.linalg.lstsq(columns, fit.tau[:, j] - rigid(fit)[:, j], rcond=None)[0]
        if coulomb >= 0 and viscous >= 0:
            checked += 1
            fitted = law["fits"][j]["params"]
            assert [fitted["coulomb"], fitted["viscous"], fitted["offset"]] == pytest.approx(
                [coulomb, viscous, offset], rel=1e-6, abs=1e-9)
            predicted[:, j] += coulomb * np.sign(held.qd[:, j]) + viscous * held.qd[:, j] + offset
            rms = np.sqrt(np.mean((held.tau[:, j] - predicted[:, j]) ** 2))
            assert law["holdout_rms"][j] == pytest.approx(rms, rel=1e-6)
    assert checked >= 4


def test_franka_published_rms_from_the_arrays(studies):
    _, f, _ = studies
    summary = f["summary"]
    for speed, path in FRANKA.items():
        with np.load(path) as stored:
            measured = stored["tau_friction"]
            for name in ("CV", "Dahl", "Stribeck"):
                expected = np.sqrt(np.mean((stored[f"published_{name}"] - measured) ** 2))
                assert summary["published"][name][speed] == pytest.approx(expected, rel=1e-14)
    assert summary["published"]["LuGre"]["high"] is None               # the published LuGre diverges there
    rms = summary["laws"]["coulomb_viscous"]["rms"]
    assert set(rms) == set(FRANKA) and all(set(row) == set(FRANKA) for row in rms.values())
    fitted = summary["laws"]["coulomb_viscous"]["fits"]["slow"]
    assert rms["slow"]["slow"] == pytest.approx(fitted["rms"], rel=1e-12)


def test_report_files_from_the_numbers(studies, tmp_path):
    p, f, _ = studies
    written = write_report(tmp_path, p, f)
    names = sorted(path.name for path in written)
    assert names == ["README.md", "franka_laws.png", "franka_rms.png", "panda_holdout.png", "panda_rms.png",
                     "real_data.json"]
    for path in written:
        if path.suffix == ".png":
            assert 10_000 < path.stat().st_size < 200_000, path.name
    data = json.loads((tmp_path / "real_data.json").read_text())
    text = (tmp_path / "README.md").read_text()
    assert "python -m dyn_plugin.tools.real_data" in text and "NOT the published protocol: rate 25" in text
    for entry in data["panda"]["models"]:
        assert f"| {entry['friction']} | {entry['method']} | " in text
        assert f"{entry['holdout_rms_total']:.4g} |" in text
    assert "| 0.275 |" in text                                       # the published total beside ours
    assert f"{data['franka']['laws']['coulomb_viscous']['rms']['high']['high']:.4g}" in text


def test_main_refuses_missing_data_in_one_line(tmp_path, capsys):
    assert main(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no file" in err and "--data DIR" in err
    assert not (tmp_path / "out").exists()
