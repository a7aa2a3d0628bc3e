"""dp.identify(..., physical=True): standard parameters fitted under the rigid-body LMIs
(dyn_plugin/identification/physical.py), the identified robot written as URDF and read back
by pinocchio and pybullet, and the Panda log of Gaz et al. 2019 (tests/data/README.md)."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.errors import InputError, ModelError, NumericalError
from dyn_plugin.identification import physical, simulate_measurements
from dyn_plugin.identification.physical import is_consistent, pseudo_inertia
from dyn_plugin.algorithms.regressor import joint_torque_regressor

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def puma():
    return dp.load_robot("puma560")


def _truth(model):
    """A rigid PUMA-560 that is not the nominal one: heavier, other centres, larger inertias."""
    return dataclasses.replace(model, masses=model.masses * 1.2, coms=model.coms * 0.9 + 0.01,
                               inertias=model.inertias * 1.3)


def _relative_error(result, meas):
    return np.abs(result.predicted - meas.tau_exact).max() / np.abs(meas.tau_exact).max()


def test_noise_free_rigid_truth_recovered_exactly(puma):
    truth = _truth(puma)
    assert all(is_consistent(theta) for theta in truth.inertial_parameters())
    meas = simulate_measurements(truth, None, noise=0.0, samples=100, seed=3)
    result = dp.identify(puma, meas.q, meas.qd, meas.qdd, meas.tau, friction="viscous", physical=True)
    assert _relative_error(result, meas) <= 1e-9                  # τ of newton_euler on the true robot
    assert all(result.consistency.values()) and result.method == "physical"
    # the constraints are inactive: the least-squares optimum, completed nearest the nominal
    assert result.solver.startswith("none") and result.residual_cost == 0.0
    beta = result.base.values(truth.inertial_parameters())
    assert np.abs(result.inertial - beta).max() <= 1e-9 * np.abs(beta).max()


def test_noise_free_through_the_semidefinite_program(puma, monkeypatch):
    # the same data with step 0 refused: Clarabel's fit alone must recover τ
    monkeypatch.setattr(physical, "_rigid_with_margin", lambda *args: False)
    meas = simulate_measurements(_truth(puma), None, noise=0.0, samples=100, seed=3)
    result = dp.identify(puma, meas.q, meas.qd, meas.qdd, meas.tau, friction="viscous", physical=True)
    assert result.solver == "CLARABEL"
    assert _relative_error(result, meas) <= 1e-9
    assert all(result.consistency.values())


def test_short_noisy_data_inconsistent_for_least_squares_consistent_for_physical(puma):
    meas = simulate_measurements(_truth(puma), None, noise=0.1, samples=30, seed=3)
    ls = dp.identify(puma, meas.q, meas.qd, meas.qdd, meas.tau, friction="viscous")
    fit = dp.identify(puma, meas.q, meas.qd, meas.qdd, meas.tau, friction="viscous", physical=True)
    assert not any(ls.consistency.values())                      # every link's completion fails
    assert all(fit.consistency.values())
    # the true robot is feasible, so the best consistent fit is no worse than the truth's own
    # residual (the noise); pulling the unseen parameters to nominal costs ≤ NEAREST·ρ₁·d:
    # measured 0.3 %, 1 % allowed.  Least squares, unconstrained, can only be better.
    noise = np.sqrt(np.mean((meas.tau - meas.tau_exact) ** 2) / np.mean(meas.tau ** 2))
    assert ls.relative_rms_error <= fit.relative_rms_error <= 1.01 * noise
    assert 0 < fit.residual_cost < 0.01
    assert fit.distance_to_nominal["total"] < ls.distance_to_nominal["total"]
    assert all(value >= 0 for value in fit.friction.values())
    eigenvalues = np.linalg.eigvalsh(pseudo_inertia(fit.standard))
    assert np.all(eigenvalues[:, 0] > 0)
    text = fit.report()
    assert "distance to nominal" in text and "every link has m > 0" in text
    data = fit.to_dict()
    assert data["method"] == "physical" and set(data["distance_to_nominal"]) == set(puma.link_names) | {"total"}
    with pytest.raises(ModelError, match=r"not a rigid body .*link1.*physical=True"):
        ls.to_model()


def test_written_urdf_reproduces_the_identified_torques_in_pinocchio_and_pybullet(puma, tmp_path):
    pin = pytest.importorskip("pinocchio")
    pybullet = pytest.importorskip("pybullet")
    meas = simulate_measurements(_truth(puma), None, noise=0.1, samples=30, seed=3)
    result = dp.identify(puma, meas.q, meas.qd, meas.qdd, meas.tau, friction="viscous", physical=True)
    path = dp.write_urdf(result.to_model(), tmp_path / "identified.urdf")
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-2, 2, (3, 20, puma.n))
    expected = joint_torque_regressor(puma, q, qd, qdd) @ result.standard.ravel()     # Y θ
    pin_model = pin.buildModelFromUrdf(str(path))
    pin_model.gravity.linear = puma.gravity
    data = pin_model.createData()
    tau = np.array([pin.rnea(pin_model, data, *state) for state in zip(q, qd, qdd)])
    assert np.abs(tau - expected).max() <= 1e-9 * np.abs(expected).max()
    mass = np.array([pin.crba(pin_model, data, state) for state in q])
    mass = np.triu(mass) + np.swapaxes(np.triu(mass, 1), 1, 2)
    client = pybullet.connect(pybullet.DIRECT)
    try:
        body = pybullet.loadURDF(str(path), useFixedBase=True, flags=pybullet.URDF_USE_INERTIA_FROM_FILE,
                                 physicsClientId=client)
        bullet = np.array([pybullet.calculateMassMatrix(body, state.tolist(), physicsClientId=client) for state in q])
    finally:
        pybullet.disconnect(client)
    assert np.abs(bullet - mass).max() <= 1e-9 * np.abs(mass).max()    # no inertia zeroed by pybullet


def test_panda_log_physical_fit_is_consistent_and_predicts_held_out_torques():
    panda = _panda()
    with np.load(DATA / "panda_gaz2019_every5.npz") as raw:
        log = dp.prepare_log(raw["t"], raw["q"], raw["tau"], qd=raw["qd"], cutoff=10.0, rate=50.0, trim=0.5)
    fit, held_out = log.split(0.4)
    result = dp.identify(panda, fit, friction=("viscous", "coulomb"), physical=True)
    assert all(result.consistency.values())
    # measured: 0.1396 N·m here (LS 0.1389); the published model 0.275
    assert dp.holdout_rms(result, held_out).total < 0.16
    assert result.distance_to_nominal["total"] < 5


def test_bad_input_is_refused_with_reasons(puma, monkeypatch):
    meas = simulate_measurements(puma, None, noise=0.05, samples=40, seed=3)
    args = (meas.q, meas.qd, meas.qdd, meas.tau)
    massless = dataclasses.replace(puma, masses=np.where(np.arange(6) == 2, 0.0, puma.masses))
    with pytest.raises(InputError, match=r"nominal mass > 0 .*link3.*nominal="):
        dp.identify(puma, *args, friction="viscous", nominal=massless, physical=True)
    with pytest.raises(InputError, match=r"nominal has 7 moving links, 'puma560' has 6"):
        dp.identify(puma, *args, nominal=_panda(), physical=True)
    monkeypatch.setattr(physical, "_rigid_with_margin", lambda *a: False)
    monkeypatch.setattr(physical, "_solver", lambda: ("CLARABEL", {"max_iter": 1}))
    with pytest.raises(NumericalError, match=r"step 1 .*CLARABEL.*status"):
        dp.identify(puma, *args, friction="viscous", physical=True)


def _panda():
    """example-robot-data's Panda with its fingers locked (the 7 joints of the log)."""
    from test_lock import erd_panda

    return dp.load_robot(erd_panda(), lock=["panda_finger_joint1", "panda_finger_joint2"])


def test_pseudo_inertia_in_theta_is_fu_s_pseudo_inertia():
    """physical.pseudo_inertia (linear in θ, for the LMIs) = Fu's J (3.2-18) of (m, c, I_c)
    as lagrange_euler states it, on every link of the bundled robots."""
    from dyn_plugin.algorithms.lagrange_euler import pseudo_inertia as fu_pseudo_inertia

    for name in dp.list_robots():
        model = dp.load_robot(name)
        theta = model.inertial_parameters(flat=True).reshape(model.n, 10)
        for i in range(model.n):
            expected = fu_pseudo_inertia(model.masses[i], model.coms[i], model.inertias[i])
            assert np.allclose(pseudo_inertia(theta[i]), expected, rtol=1e-13, atol=1e-15)
