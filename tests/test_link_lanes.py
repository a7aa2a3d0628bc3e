"""Forward dynamics across SIMD lanes (dyn_plugin.compiled.articulated_lanes), the batch
path of ``newton_euler``'s forward dynamics, against pinocchio's ``aba``.

Each state's q̈ must reproduce τ through pinocchio's own ``rnea`` to 1e-12 (backward error)
and equal ``aba``'s to 1e-15·cond(M) (the accuracy of any backward-stable solve), on the
bundled robots, on random trees with branches, prismatic joints and fixed joints, and with
armature.  Batches of 45 states leave a partial block of lanes.  Also: a state's result
does not depend on its place in the batch or on the number of workers (bit for bit), and
an angle beyond the vectorised sine's exact range takes the per-state kernel.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import dyn_plugin as dp
from dyn_plugin.compiled import articulated_lanes, kernels
from dyn_plugin.compiled.lanes import EXACT_RANGE
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
    twin = PinocchioTwin(model, urdf_text(model))
    twin.pm.armature[twin.iv] = armature
    for k in range(len(q)):
        pq, pv = twin.pin_q(q[k]), twin.pin_v(qd[k])
        M = pin.crba(twin.pm, twin.pd, pq)[np.ix_(twin.iv, twin.iv)]
        expected = pin.aba(twin.pm, twin.pd, pq, pv, twin.pin_v(tau[k]))[twin.iv]
        back = pin.rnea(twin.pm, twin.pd, pq, pv, twin.pin_v(qdd[k]))[twin.iv]
        assert np.max(np.abs(back - tau[k])) <= 1e-12 * max(1.0, np.max(np.abs(tau[k])))
        error = np.linalg.norm(qdd[k] - expected) / max(1.0, np.linalg.norm(expected))
        assert error <= max(1e-13, 1e-15 * np.linalg.cond(M)), (k, error)


@pytest.mark.parametrize("index", range(len(MODELS)), ids=[f"{m.name}-{i}" for i, m in enumerate(MODELS)])
@pytest.mark.parametrize("with_armature", [False, True], ids=["rigid", "armature"])
def test_batch_forward_dynamics_equals_pinocchio(index, with_armature):
    model = MODELS[index]
    armature = np.linspace(0.05, 0.3, model.n) if with_armature else np.zeros(model.n)
    be = dp.get_backend("newton_euler", model, armature=armature)
    q, qd, tau = _states(model, 45, seed=index)
    qdd = be.forward_dynamics(q, qd, tau)
    _pinocchio_check(model, armature, q, qd, tau, qdd)


def test_a_state_is_the_same_wherever_it_stands_in_a_batch():
    be = dp.get_backend("newton_euler", MODELS[-3])
    q, qd, tau = _states(be.model, 50, seed=5)
    batch = be.forward_dynamics(q, qd, tau)
    assert np.array_equal(be.forward_dynamics(q[3:], qd[3:], tau[3:]), batch[3:])
    for k in (0, 17, 49):                             # a lane of a full block, alone in a block of one
        assert np.array_equal(be.forward_dynamics(q[k:k + 1], qd[k:k + 1], tau[k:k + 1])[0], batch[k])


def test_workers_give_the_same_bits():
    be = dp.get_backend("newton_euler", dp.load_robot("puma560"))
    q, qd, tau = _states(be.model, kernels.PARALLEL_FROM + 3 * articulated_lanes.BLOCK + 5, seed=2)
    with dp.using_workers(1):
        one = be.forward_dynamics(q, qd, tau)
    with dp.using_workers(2):
        two = be.forward_dynamics(q, qd, tau)
    assert np.array_equal(one, two)


def test_an_angle_beyond_the_exact_range_takes_the_per_state_kernel():
    model = dp.load_robot("puma560")
    be = dp.get_backend("newton_euler", model)
    q, qd, tau = _states(model, 40, seed=3)
    q[20, 2] = 3.0 * EXACT_RANGE                     # its block of lanes: states 16..31
    qdd = be.forward_dynamics(q, qd, tau)
    per_state = np.array([be.forward_dynamics(q[k], qd[k], tau[k]) for k in range(16, 32)])
    assert np.array_equal(qdd[16:32], per_state)     # the per-state kernel, bit for bit
    _pinocchio_check(model, np.zeros(model.n), q, qd, tau, qdd)
