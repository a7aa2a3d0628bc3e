"""The inertial-parameter regressor against pinocchio's computeJointTorqueRegressor and rnea."""

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg

import dyn_plugin as dp
from dyn_plugin.errors import InputError, ModelError
from dyn_plugin.identification import base_parameters, joint_torque_regressor
from dyn_plugin.identification.base import pivoted_qr, random_states
from dyn_plugin.algorithms.regressor import parameter_names

from urdf_factory import random_tree_urdf


def _pinocchio(model):
    pm = pin.buildModelFromXML(model.source_urdf)
    pm.gravity.linear = np.asarray(model.gravity)
    return pm, pm.createData()


def _check(model, states=4, seed=0):
    pm, pd = _pinocchio(model)
    be = dp.get_backend("newton_euler", model)
    rng = np.random.default_rng(seed)
    q, qd, qdd = rng.normal(size=(3, states, model.n))
    Y = be.regressor(q, qd, qdd)
    assert Y.shape == (states, model.n, 10 * model.n)
    theta = model.inertial_parameters(flat=True)
    theta_pin = np.concatenate([pm.inertias[j].toDynamicParameters() for j in range(1, pm.njoints)])
    assert np.abs(theta - theta_pin).max() <= 1e-12 * max(1.0, np.abs(theta_pin).max())
    for k in range(states):
        Yp = pin.computeJointTorqueRegressor(pm, pd, q[k], qd[k], qdd[k])
        assert np.abs(Y[k] - Yp).max() <= 1e-12 * max(1.0, np.abs(Yp).max())
        tau = pin.rnea(pm, pd, q[k], qd[k], qdd[k])
        assert np.abs(Y[k] @ theta - tau).max() <= 1e-12 * max(1.0, np.abs(tau).max())
    single = be.regressor(q[0], qd[0], qdd[0])
    assert single.shape == (model.n, 10 * model.n) and np.array_equal(single, Y[0])


@pytest.mark.parametrize("robot", dp.list_robots())
def test_bundled_robots_match_pinocchio(robot):
    _check(dp.load_robot(robot))


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_match_pinocchio(seed):
    rng = np.random.default_rng(100 + seed)
    model = dp.load_urdf_string(random_tree_urdf(rng, int(rng.integers(2, 8)), continuous=False))
    _check(model, states=3, seed=seed)


def test_other_gravity_and_every_backend_has_it():
    model = dp.load_robot("puma560").with_gravity((1.0, -2.0, -9.0))
    _check(model, states=2)
    q = np.zeros(6)
    for name in ("lagrange_euler", "pinocchio"):
        Y = dp.get_backend(name, model).regressor(q, q, q)
        assert np.allclose(Y @ model.inertial_parameters(flat=True), dp.get_backend(name, model).gravity_torques(q),
                           atol=1e-12, rtol=0)


def test_base_parameters_reproduce_torques():
    model = dp.load_robot("puma560")
    base = base_parameters(model)
    assert base.rank == 36                              # the PUMA-560's known count (revolute 6R, no friction)
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.normal(size=(3, 5, 6))
    Y = joint_torque_regressor(model, q, qd, qdd)
    theta = model.inertial_parameters(flat=True)
    tau = Y @ theta
    assert np.abs(base.regressor(Y) @ base.values(theta) - tau).max() <= 1e-10 * np.abs(tau).max()
    text = str(base)
    assert "36 base parameters of 60" in text and "Izz_link1' = Izz_link1" in text


def test_bad_shapes_and_floating_base():
    be = dp.get_backend("newton_euler", dp.load_robot("puma560"))
    with pytest.raises(InputError):
        be.regressor(np.zeros(5), np.zeros(6), np.zeros(6))
    with pytest.raises(InputError):
        be.regressor(np.zeros((3, 6)), np.zeros((2, 6)), np.zeros((3, 6)))
    floating = dp.load_robot("puma560").with_floating_base()
    with pytest.raises(ModelError, match="the regressor"):
        joint_torque_regressor(floating, np.zeros((1, 13)), np.zeros((1, 12)), np.zeros((1, 12)))


def test_pivoted_qr_is_lapacks_where_no_norms_tie():
    A = np.random.default_rng(4).normal(size=(40, 9)) * np.linspace(1, 3, 9)
    R, order = pivoted_qr(A)
    _, R_lapack, order_lapack = scipy.linalg.qr(A, mode="economic", pivoting=True)
    assert np.array_equal(order, order_lapack)
    assert np.allclose(np.abs(R), np.abs(R_lapack), rtol=1e-12, atol=1e-12 * np.abs(R).max())
    assert np.allclose(A[:, order], np.linalg.qr(A[:, order])[0] @ np.linalg.qr(A[:, order])[1], rtol=1e-12)


def test_the_choice_of_base_parameters_does_not_depend_on_rounding():
    """Columns of tied norms are taken in the standard parameters' order: a regressor changed
    at the level of rounding (another machine's BLAS) gives the same base parameters, and the
    PUMA-560's first joint keeps its own (Izz_link1' = Izz_link1 + ...)."""
    model = dp.load_robot("puma560")
    Y = joint_torque_regressor(model, *random_states(model, 40)).reshape(-1, 60)
    live = np.flatnonzero(np.linalg.norm(Y, axis=0) > 1e-9 * np.linalg.norm(Y, axis=0).max())
    _, order = pivoted_qr(Y[:, live], 1e-9)
    rng = np.random.default_rng(5)
    for _ in range(5):
        _, noisy = pivoted_qr(Y[:, live] * (1.0 + 4e-16 * rng.standard_normal(Y[:, live].shape)), 1e-9)
        assert set(noisy[:36]) == set(order[:36])
    assert list(parameter_names(model)).index("Izz_link1") in live[order[:36]]
