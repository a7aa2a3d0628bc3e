"""A DH table's motor inertia is the model's armature, and every backend applies it or
refuses the model (it was silently ignored: τ changed by exactly 0).  References:
pinocchio with ``model.armature`` set on its own model of the bundled URDF, and the
physical statement τ = τ_rigid + a q̈, M = M_rigid + diag(a)."""

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

import dyn_plugin as dp
from dyn_plugin.backends import registry
from dyn_plugin.dh import model_from_table
from dyn_plugin.robots import bundled_dir, robot_path, robot_table

ROBOTS = [name for name in dp.list_robots()
          if any(row.motor_inertia for row in robot_table(name)["rows"])]
# From the registry: the backends whose factory takes armature= apply it; every other one,
# friction backends aside (their rigid backend decides), must refuse such a model.
APPLY = [name for name in dp.list_backends() if registry.takes_armature(registry.backend_class(name))]
REFUSE = [name for name in dp.list_backends() if name not in APPLY and "friction" not in registry.declared(name)[1]]


def states(n, count=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (3, count, n))


def pinocchio_with_armature(name, armature):
    """pinocchio's own model of the bundled URDF, its armature set directly."""
    model = pin.buildModelFromUrdf(str(robot_path(name)))
    model.armature = np.asarray(armature, dtype=float)
    return model, model.createData()


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


@pytest.mark.parametrize("name", ROBOTS)
def test_table_motor_inertia_is_the_models_armature(name):
    model = model_from_table(bundled_dir() / f"{name}.toml")
    expected = [row.motor_inertia for row in robot_table(name)["rows"]]
    assert model.armature.tolist() == expected and any(expected)
    assert not np.any(dp.load_robot(name).armature)          # the bundled URDF carries the rigid bodies


@pytest.mark.parametrize("backend", APPLY)
@pytest.mark.parametrize("name", ROBOTS)
def test_backends_apply_the_armature_as_pinocchio(name, backend):
    model = model_from_table(bundled_dir() / f"{name}.toml")
    pm, data = pinocchio_with_armature(name, model.armature)
    be = dp.get_backend(backend, model)
    Q, V, A = states(model.n)
    tau = be.inverse_dynamics(Q, V, A)
    M = be.mass_matrix(Q)
    qdd = be.forward_dynamics(Q, V, tau)
    for k in range(len(Q)):
        assert rel(tau[k], pin.rnea(pm, data, Q[k], V[k], A[k])) <= 1e-12
        assert rel(M[k], pin.crba(pm, data, Q[k])) <= 1e-12
        assert rel(qdd[k], A[k]) <= 1e-10
    one = be.inverse_dynamics(Q[0], V[0], A[0])                 # the one-state path too
    assert rel(one, pin.rnea(pm, data, Q[0], V[0], A[0])) <= 1e-12


@pytest.mark.parametrize("name", ROBOTS)
def test_armature_adds_exactly_a_qdd(name):
    model = model_from_table(bundled_dir() / f"{name}.toml")
    rigid = dataclasses.replace(model, armature=None)
    Q, V, A = states(model.n, seed=1)
    with_armature, without = dp.get_backend("newton_euler", model), dp.get_backend("newton_euler", rigid)
    assert rel(with_armature.inverse_dynamics(Q, V, A) - without.inverse_dynamics(Q, V, A),
               model.armature * A) <= 1e-12
    assert rel(with_armature.mass_matrix(Q) - without.mass_matrix(Q), np.diag(model.armature)[None]) <= 1e-12
    numpy_backend = dp.get_backend("newton_euler", model, compiled=False)
    assert rel(numpy_backend.inverse_dynamics(Q, V, A), with_armature.inverse_dynamics(Q, V, A)) <= 1e-12


def test_floating_base_keeps_the_joints_armature():
    model = model_from_table(bundled_dir() / "puma560.toml")
    floating = dataclasses.replace(dp.load_robot("puma560", floating_base=True), armature=model.armature)
    ours, reference = dp.get_backend("newton_euler", floating), dp.get_backend("pinocchio", floating)
    rng = np.random.default_rng(2)
    q = np.concatenate([rng.uniform(-1, 1, 3), [0.0, 0.0, np.sin(0.2), np.cos(0.2)], rng.uniform(-1, 1, 6)])
    v, a = rng.uniform(-1, 1, 12), rng.uniform(-1, 1, 12)
    assert rel(ours.inverse_dynamics(q, v, a), reference.inverse_dynamics(q, v, a)) <= 1e-12
    assert rel(ours.mass_matrix(q), reference.mass_matrix(q)) <= 1e-12
    rigid = dp.get_backend("pinocchio", dataclasses.replace(floating, armature=None))
    assert rel(ours.mass_matrix(q) - rigid.mass_matrix(q), np.diag(np.r_[np.zeros(6), model.armature])) <= 1e-12


def test_backends_that_cannot_apply_it_refuse_the_model():
    model = model_from_table(bundled_dir() / "puma560.toml")
    for name in REFUSE:
        with pytest.raises(dp.BackendError, match="cannot apply the armature"):
            dp.get_backend(name, model)


def test_armature_is_given_once():
    model = model_from_table(bundled_dir() / "puma560.toml")
    with pytest.raises(dp.InputError, match="carries armature"):
        dp.get_backend("newton_euler", model, armature=np.ones(6))
    with pytest.raises(dp.InputError, match="adds armature too"):
        dp.get_backend("newton_euler_friction", model, friction=dp.FrictionModel.create(6, armature=np.ones(6)))
    with pytest.raises(dp.ModelError, match="armature of joint 'joint2' must be >= 0"):
        dataclasses.replace(model, armature=[0.0, -1.0, 0, 0, 0, 0])


def test_friction_backend_over_a_model_with_armature():
    model = model_from_table(bundled_dir() / "puma560.toml")
    viscous = np.linspace(1.0, 2.0, 6)
    be = dp.get_backend("newton_euler_friction", model, friction=dp.FrictionModel.create(6, viscous=viscous))
    pm, data = pinocchio_with_armature("puma560", model.armature)
    q, v, a = states(6, count=1, seed=3)[:, 0]
    assert rel(be.inverse_dynamics(q, v, a), pin.rnea(pm, data, q, v, a) + viscous * v) <= 1e-12


def test_urdf_records_the_armature_it_cannot_carry(tmp_path):
    model = model_from_table(bundled_dir() / "puma560.toml")
    text = dp.to_urdf(model)
    assert "armature (rotor inertia" in text and "joint2 4.71" in text
    assert not np.any(dp.load_urdf_string(text).armature)
