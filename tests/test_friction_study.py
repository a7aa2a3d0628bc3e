"""The friction case study (``dyn-plugin friction``): trajectory, columns, figures, CLI."""

import json

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.tools.cli import main
from dyn_plugin.studies.friction_study import reference_trajectory, run_study


@pytest.fixture(scope="module")
def puma():
    return dp.load_robot("puma560")


def test_reference_trajectory_is_a_rest_to_rest_quintic(puma):
    t, q, qd, qdd = reference_trajectory(puma, duration=2.0, samples=2001)
    assert np.abs(qd[[0, -1]]).max() == 0 and np.abs(qdd[[0, -1]]).max() < 1e-12
    dt, travel = t[1] - t[0], q[-1] - q[0]
    # central differences are within dt²/6 max|third derivative| of the analytic ones;
    # for the quintic, |q'''| <= 60 |travel| / T³ and |q''''| <= 360 |travel| / T⁴ (T = 2 s)
    assert np.all(np.abs(np.gradient(q, dt, axis=0)[1:-1] - qd[1:-1]) <= dt**2 / 6 * 60 * np.abs(travel) / 8)
    assert np.all(np.abs(np.gradient(qd, dt, axis=0)[1:-1] - qdd[1:-1]) <= dt**2 / 6 * 360 * np.abs(travel) / 16)
    span = puma.upper - puma.lower
    np.testing.assert_allclose(np.abs(travel), 0.3 * span, rtol=1e-12)
    assert np.all(np.sign(qd[60, :3]) == [1, -1, 1])  # Table 3.5's velocity signs at t = 0.6 s


def test_study_columns_add_up_to_the_backend_torque(puma):
    backend = dp.get_backend("newton_euler_friction", puma, profile="dhanaraj")
    study = run_study(backend, samples=51)
    np.testing.assert_allclose(study.parts.input, backend.inverse_dynamics(study.q, study.qd, study.qdd),
                               rtol=1e-12, atol=1e-12)
    table = study.table_at(0.6)
    np.testing.assert_allclose(table["total input"], table["total at joint"] + table["transmission"]
                               + table["velocity friction"], rtol=1e-12, atol=1e-12)
    share = study.friction_share()
    assert np.all((share >= 0) & (share <= 1))
    assert np.all(share[:3] > 0.2) and np.all(share[3:] == 0)   # the profile has friction on joints 1-3 only
    assert np.all(study.dissipated_energy() >= 0)
    assert np.all(study.dissipated_energy()[:3] > 1.0)


def test_rigid_backend_is_refused(puma):
    with pytest.raises(dp.InputError, match="no friction"):
        run_study(dp.get_backend("newton_euler", puma))


def test_cli_friction_writes_table_plot_and_json(tmp_path, capsys):
    plot, report = tmp_path / "puma.png", tmp_path / "puma.json"
    assert main(["friction", "puma560", "--profile", "dhanaraj", "--samples", "41", "--plot", str(plot),
                 "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "Table 3.5" in out and "friction share" in out
    assert plot.stat().st_size > 10_000
    data = json.loads(report.read_text())
    assert data["friction"] == "dhanaraj" and data["time"] == pytest.approx(0.6)
    total = np.array(data["table"]["total at joint"]) + np.array(data["table"]["transmission"])
    np.testing.assert_allclose(data["table"]["total input"], total, atol=1e-12)


@pytest.mark.parametrize("argv, fragment", [
    (["friction", "puma560", "--profile", "nope"], "no profile 'nope'"),
    (["friction", "puma560", "--backend", "pinocchio"], "must be one with friction"),
    (["friction", "nosuchrobot"], "unknown robot"),
    (["friction", "puma560", "--samples", "1"], "from 2 to"),
])
def test_cli_friction_bad_input(argv, fragment, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses an out-of-range option itself
        code = exc.code
    assert code == 2
    assert fragment in capsys.readouterr().err


def test_cli_friction_notes_a_frictionless_model_not_a_motionless_study(capsys):
    """Two samples of a rest-to-rest motion never move: the PUMA-560's friction is still
    there (its note said "has no friction"); the SCARA's URDF has none."""
    assert main(["friction", "puma560", "--samples", "2"]) == 0
    assert "has no friction" not in capsys.readouterr().out
    assert main(["friction", "scara"]) == 0
    assert "scara has no friction in 'urdf'" in capsys.readouterr().out
