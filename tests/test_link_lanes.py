"""The recursions across SIMD lanes (the lanes forms of dyn_plugin.compiled.newton_euler,
articulated_body and composite_rigid_body), the batch path of ``newton_euler``'s inverse dynamics (and its bias, gravity and velocity terms), forward
dynamics and mass matrix, against pinocchio's ``rnea``, ``nonLinearEffects``,
``computeGeneralizedGravity``, ``aba`` and ``crba``.

τ and M must equal pinocchio's to 1e-12 relative to max(1, |τ|) (max(1, |M|)); each state's q̈ must reproduce τ
through pinocchio's own ``rnea`` to 1e-12 (backward error) and equal ``aba``'s to
1e-15·cond(M) (the accuracy of any backward-stable solve); on the bundled robots, on random
trees with branches, prismatic joints and fixed joints, and with armature.  Batches of 45
states leave a partial block of lanes.  Also: a state's result does not depend on its place
in the batch or on the number of workers (bit for bit), and an angle beyond the vectorised
sine's exact range takes the per-state kernel.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import dyn_plugin as dp
from dyn_plugin.compiled import lane_blocks
from dyn_plugin.compiled.lanes import EXACT_RANGE
from dyn_plugin.loops import PARALLEL_FROM
from dyn_plugin.urdf import urdf_text
from pinocchio_twin import PinocchioTwin
from urdf_factory import random_tree_urdf

TREES = [(301, 7, dict(branched=True, prismatic=True)), (302, 9, dict(branched=True, prismatic=False)),
         (303, 5, dict(branched=False, prismatic=True))]


def _models():
    models = [dp.load_robot(name) for name in dp.list_robots()]
    return models + [dp.load_urdf_string(random_tree_urdf(seed, n, **options)) for seed, n, options in TREES]


MODELS = _models()


def _states(model, N, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-np.pi, np.pi, (N, model.n)), rng.normal(0, 2, (N, model.n)), rng.normal(0, 20, (N, model.n))


def _pinocchio_check(model, armature, q, qd, tau, qdd):
    """Backward error through pinocchio's rnea and forward error against its aba, per state."""
    twin = _twin(model, armature)
    for k in range(len(q)):
        pq, pv = twin.pin_q(q[k]), twin.pin_v(qd[k])
        M = pin.crba(twin.pm, twin.pd, pq)[np.ix_(twin.iv, twin.iv)]
        expected = pin.aba(twin.pm, twin.pd, pq, pv, twin.pin_v(tau[k]))[twin.iv]
        back = pin.rnea(twin.pm, twin.pd, pq, pv, twin.pin_v(qdd[k]))[twin.iv]
        assert np.max(np.abs(back - tau[k])) <= 1e-12 * max(1.0, np.max(np.abs(tau[k])))
        error = np.linalg.norm(qdd[k] - expected) / max(1.0, np.linalg.norm(expected))
        assert error <= max(1e-13, 1e-15 * np.linalg.cond(M)), (k, error)


def _case(index, with_armature):
    """Model ``index``, its armature (zeros or 0.05..0.3), its newton_euler backend and 45 states."""
    model = MODELS[index]
    armature = np.linspace(0.05, 0.3, model.n) if with_armature else np.zeros(model.n)
    return model, armature, dp.get_backend("newton_euler", model, armature=armature), _states(model, 45, seed=index)


def every_case(test):
    """``test(index, with_armature)`` for each model of MODELS, rigid and with armature."""
    test = pytest.mark.parametrize("with_armature", [False, True], ids=["rigid", "armature"])(test)
    return pytest.mark.parametrize("index", range(len(MODELS)), ids=[f"{m.name}-{i}" for i, m in enumerate(MODELS)])(test)


def _twin(model, armature):
    """pinocchio's model of ``model`` with the same armature."""
    twin = PinocchioTwin(model, urdf_text(model))
    twin.pm.armature[twin.iv] = armature
    return twin


def _rel(a, b):
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


@every_case
def test_batch_inverse_dynamics_and_its_terms_equal_pinocchio(index, with_armature):
    model, armature, be, (q, qd, qdd) = _case(index, with_armature)
    twin = _twin(model, armature)
    ours = {"rnea": be.inverse_dynamics(q, qd, qdd), "nonLinearEffects": be.bias_forces(q, qd),
            "computeGeneralizedGravity": be.gravity_torques(q)}
    for k in range(len(q)):
        pq, pv = twin.pin_q(q[k]), twin.pin_v(qd[k])
        theirs = {"rnea": pin.rnea(twin.pm, twin.pd, pq, pv, twin.pin_v(qdd[k])),
                  "nonLinearEffects": pin.nonLinearEffects(twin.pm, twin.pd, pq, pv),
                  "computeGeneralizedGravity": pin.computeGeneralizedGravity(twin.pm, twin.pd, pq)}
        for call, value in theirs.items():
            assert _rel(ours[call][k], value[twin.iv]) <= 1e-12, (call, k)


@every_case
def test_batch_forward_dynamics_equals_pinocchio(index, with_armature):
    model, armature, be, (q, qd, tau) = _case(index, with_armature)
    qdd = be.forward_dynamics(q, qd, tau)
    _pinocchio_check(model, armature, q, qd, tau, qdd)


@every_case
def test_batch_mass_matrix_equals_pinocchio(index, with_armature):
    model, armature, be, (q, _, _) = _case(index, with_armature)
    twin = _twin(model, armature)
    ours = be.mass_matrix(q)
    for k in range(len(q)):
        theirs = pin.crba(twin.pm, twin.pd, twin.pin_q(q[k]))
        theirs = np.triu(theirs) + np.triu(theirs, 1).T                   # crba fills the upper triangle
        assert _rel(ours[k], theirs[np.ix_(twin.iv, twin.iv)]) <= 1e-12, k
        assert np.array_equal(ours[k], ours[k].T)


def _three(method):
    """``method`` of newton_euler as a function of (q, q̇, x), whatever it reads."""
    return (lambda f: lambda q, qd, x: f(q)) if method == "mass_matrix" else (lambda f: f)


@pytest.mark.parametrize("method", ["inverse_dynamics", "forward_dynamics", "mass_matrix"])
def test_a_state_is_the_same_wherever_it_stands_in_a_batch(method):
    be = dp.get_backend("newton_euler", MODELS[-3])
    f = _three(method)(getattr(be, method))
    q, qd, x = _states(be.model, 50, seed=5)
    batch = f(q, qd, x)
    assert np.array_equal(f(q[3:], qd[3:], x[3:]), batch[3:])
    for k in (0, 17, 49):                             # a lane of a full block, alone in a block of one
        assert np.array_equal(f(q[k:k + 1], qd[k:k + 1], x[k:k + 1])[0], batch[k])


@pytest.mark.parametrize("method", ["inverse_dynamics", "forward_dynamics", "mass_matrix"])
def test_workers_give_the_same_bits(method):
    be = dp.get_backend("newton_euler", dp.load_robot("puma560"))
    f = _three(method)(getattr(be, method))
    q, qd, x = _states(be.model, PARALLEL_FROM + 3 * lane_blocks.BLOCK + 5, seed=2)
    with dp.using_workers(1):
        one = f(q, qd, x)
    with dp.using_workers(2):
        two = f(q, qd, x)
    assert np.array_equal(one, two)


def test_an_angle_beyond_the_exact_range_takes_the_per_state_kernel():
    model = dp.load_robot("puma560")
    be = dp.get_backend("newton_euler", model)
    q, qd, x = _states(model, 40, seed=3)
    q[20, 2] = 3.0 * EXACT_RANGE                     # its block of lanes: states 16..31
    tau, qdd, M = be.inverse_dynamics(q, qd, x), be.forward_dynamics(q, qd, x), be.mass_matrix(q)
    for k in range(16, 32):                          # the per-state kernels, bit for bit
        assert np.array_equal(tau[k], be.inverse_dynamics(q[k], qd[k], x[k]))
        assert np.array_equal(qdd[k], be.forward_dynamics(q[k], qd[k], x[k]))
        assert np.array_equal(M[k], be.mass_matrix(q[k]))
    _pinocchio_check(model, np.zeros(model.n), q, qd, x, qdd)
