"""Where an algorithm is stated twice in dyn_plugin/compiled, the second statement is held
to the first on the same states (CONTRIBUTING, "One statement of each recursion"):

* the lanes forms (Newton-Euler's ``inverse_dynamics_lanes``, the articulated body's
  ``forward_dynamics_lanes``, the composite rigid body's ``mass_matrix_lanes``, over 16
  states at once) against the per-state kernels (``_inverse_dynamics_rows``,
  ``_forward_dynamics_rows``, ``_mass_matrix_rows``) on the same packed model and states:
  τ and each of its terms (bias, gravity, velocity, inertia alone), q̈ and M agree to
  1e-13 relative (the same equations, the sums formed in another order); and the mass
  matrix's floating form (the free-flyer chain's six joints in closed form, states read
  from the floating q) against the per-state kernel on the chain configuration;
* a floating robot's τ (each term) and q̈ over a batch started from the base link
  (``free_flyer_lanes``: the floating q read in the kernel, the massless chain links
  skipped) against the per-state kernels on its free-flyer chain at the chain's q̈ = a + d
  (d of dyn_plugin.floating in numpy, the parts each term asks for), 1e-13; base armature
  refused (``free_flyer.pack_free_flyer``);
* the hand-differentiated tangent of ``compiled/derivatives.py`` against the per-state
  Newton-Euler kernel ``_rnea_state`` itself run on dual numbers (``compiled/traced.py``):
  ∂τ/∂q and ∂τ/∂q̇ agree to 1e-12 relative.

On every bundled robot and on random trees (branches, prismatic and fixed joints,
tests/urdf_factory.py), with armature.  Each form is also held to pinocchio elsewhere
(tests/test_link_lanes.py, tests/test_compiled.py, tests/test_derivatives.py); here a term
added to one statement and not to the other fails by name.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin import floating
from dyn_plugin.compiled import (articulated_body, composite_rigid_body, derivatives, free_flyer, free_flyer_lanes,
                                 newton_euler)
from dyn_plugin.compiled.lanes import EXACT_RANGE
from dyn_plugin.compiled.layout import pack_model
from dyn_plugin.compiled.scratch import ROWS
from dyn_plugin.compiled.traced import python_form
from dyn_plugin.errors import ModelError
from dyn_plugin.kinematics import REVOLUTE
from urdf_factory import random_tree_urdf

TREES = [(401, 7, dict(branched=True, prismatic=True)), (402, 9, dict(branched=True, prismatic=False)),
         (403, 5, dict(branched=False, prismatic=True))]
MODELS = [dp.load_robot(name) for name in dp.list_robots()] + \
    [dp.load_urdf_string(random_tree_urdf(seed, n, **options)) for seed, n, options in TREES]
IDS = [f"{model.name}-{i}" for i, model in enumerate(MODELS)]
TERMS = {"all": newton_euler.TERM_ALL, "bias": newton_euler.TERM_BIAS, "gravity": newton_euler.TERM_GRAVITY,
         "velocity": newton_euler.TERM_VELOCITY, "inertia": newton_euler.TERM_INERTIA}


def _packed_and_states(model, N=45, seed=0):
    """The packed model with armature 0.05..0.3 and N states (45: two full blocks of lanes
    and a partial one), angles within the lanes' sine range (so the lanes form runs)."""
    rng = np.random.default_rng(seed)
    P = pack_model(model, np.linspace(0.05, 0.3, model.n))
    q = rng.uniform(-np.pi, np.pi, (N, model.n))
    return P, q, rng.normal(0, 2, (N, model.n)), rng.normal(0, 20, (N, model.n))


def _relative(a, b) -> float:
    """max |a − b| over max(1, max |b|), per state, the worst state."""
    scale = np.maximum(1.0, np.max(np.abs(b.reshape(len(b), -1)), axis=1))
    return float(np.max(np.max(np.abs((a - b).reshape(len(b), -1)), axis=1) / scale))


@pytest.mark.parametrize("index", range(len(MODELS)), ids=IDS)
def test_lanes_forms_equal_the_per_state_kernels(index):
    """τ (and each of its terms), q̈ and M: the lanes form against the per-state kernel."""
    P, q, qd, x = _packed_and_states(MODELS[index], seed=index)
    serial = 0                                               # (serial, parallel) loops: the serial one
    for name, terms in TERMS.items():
        lanes, per_state = np.empty(q.shape), np.empty(q.shape)
        newton_euler.inverse_dynamics_batch[serial](P, q, qd, x, terms, lanes)
        newton_euler._inverse_dynamics_rows(P, q, qd, x, terms, per_state)
        assert _relative(lanes, per_state) <= 1e-13, name
    tau = per_state                                          # τ of the last terms: the armature's and M's
    lanes, per_state = np.empty(q.shape), np.empty(q.shape)
    articulated_body.forward_dynamics_batch[serial](P, q, qd, x, lanes)
    articulated_body._forward_dynamics_rows(P, q, qd, x, per_state)
    assert _relative(lanes, per_state) <= 1e-13
    H_lanes, H_state = np.empty((len(q), len(P) - 1, len(P) - 1)), np.empty((len(q), len(P) - 1, len(P) - 1))
    composite_rigid_body.mass_matrix_batch[serial](P, q, H_lanes)
    composite_rigid_body._mass_matrix_rows(P, q, H_state)
    assert _relative(H_lanes, H_state) <= 1e-13
    assert np.allclose(np.einsum("kij,kj->ki", H_state, x), tau, rtol=0, atol=1e-9 * max(1, np.abs(tau).max()))


FLOATING = [(404, 6, dict(branched=True, prismatic=True)), (405, 4, dict(branched=False, prismatic=False))]


@pytest.mark.parametrize("seed, n, options", FLOATING)
def test_floating_mass_matrix_equals_the_per_state_kernel(seed, n, options):
    """M of a floating robot by the lanes form with the free-flyer's six joints in closed
    form (composite_rigid_body.mass_matrix_lanes with ``floating``, through
    free_flyer.mass_matrix_batch), and by the per-state kernel's floating form (one state,
    the derivatives' M), against the per-state kernel on the free-flyer chain's
    configurations, 1e-13; 45 states, two blocks of lanes and a partial one, the last
    block with an angle beyond the lanes' sine range (the per-state kernel inside)."""
    model = dp.load_urdf_string(random_tree_urdf(seed, n, **options), floating_base=True)
    P = pack_model(floating.free_flyer_chain(model), np.concatenate([np.zeros(6), np.linspace(0.05, 0.3, n)]))
    rng = np.random.default_rng(seed)
    q = np.concatenate([floating.random_base_states(rng, 45, 1.0, 1.0)[0], rng.uniform(-np.pi, np.pi, (45, n))], 1)
    q[-2, -1] = 2.0 * EXACT_RANGE
    H_lanes, H_state, check = np.empty((45, n + 6, n + 6)), np.empty((45, n + 6, n + 6)), np.empty(1)
    free_flyer.mass_matrix_batch[0](P, q, H_lanes, check)
    composite_rigid_body._mass_matrix_rows(P, floating.chain_configuration(q), H_state)
    assert check[0] == 0.0
    assert _relative(H_lanes, H_state) <= 1e-13
    assert not np.array_equal(H_lanes[:32], H_state[:32])     # two computations (see test_the_lanes_forms_ran)
    H_floating = np.empty(H_state.shape)                       # the per-state kernel's own floating form
    composite_rigid_body._floating_mass_matrix_rows(P, floating.chain_configuration(q), H_floating)
    assert _relative(H_floating, H_state) <= 1e-13


def _floating_packed_and_states(model, N=45, seed=0):
    """A floating model's packed free-flyer chain (free_flyer.pack_free_flyer: the world's
    gravity for the kernels) with armature 0.05..0.3 on the robot's joints and none on the
    six base joints, and N floating states q (N, nv + 1), v, x (N, nv): 45 are two full
    blocks of lanes and a partial one; one state of the last block has a revolute joint at
    2·EXACT_RANGE (that block runs the per-state kernels)."""
    rng = np.random.default_rng(seed)
    chain = floating.free_flyer_chain(model)
    P = free_flyer.pack_free_flyer(pack_model(chain, np.concatenate([np.zeros(6), np.linspace(0.05, 0.3, model.n)])),
                                   model.gravity)
    base_q, base_v, base_a = floating.random_base_states(rng, N, 2.0, 20.0)
    q = np.concatenate([base_q, rng.uniform(-np.pi, np.pi, (N, model.n))], 1)
    v = np.concatenate([base_v, rng.normal(0, 2, (N, model.n))], 1)
    x = np.concatenate([base_a, rng.normal(0, 20, (N, model.n))], 1)
    q[-3, 7 + model.joint_types.index(REVOLUTE)] = 2.0 * EXACT_RANGE
    return P, q, v, x


def _chain_torques(model, P, q, v, a, terms):
    """The ``terms`` of a floating robot's τ by the per-state kernel on its free-flyer chain:
    the chain's configuration, v (with TERM_VELOCITY) and q̈ = a (with TERM_INERTIA) + d(q, v)
    (dyn_plugin.floating.acceleration_offset: its velocity part with TERM_VELOCITY, its
    gravity part with TERM_GRAVITY)."""
    moving = terms & newton_euler.TERM_VELOCITY != 0
    d = floating.acceleration_offset(model, q, v, gravity=terms & newton_euler.TERM_GRAVITY != 0, velocity=moving)
    acceleration = d + (a if terms & newton_euler.TERM_INERTIA else 0.0)
    tau = np.empty(v.shape)
    newton_euler._inverse_dynamics_rows(P, floating.chain_configuration(q), v if moving else np.zeros(v.shape),
                                        acceleration, newton_euler.TERM_ALL, tau)
    return tau


def _chain_accelerations(model, P, q, v, tau):
    """A floating robot's q̈ by the per-state articulated-body kernel on its free-flyer
    chain, less d(q, v)."""
    chain_qdd = np.empty(v.shape)
    articulated_body._forward_dynamics_rows(P, floating.chain_configuration(q), v, tau, chain_qdd)
    return chain_qdd - floating.acceleration_offset(model, q, v)


@pytest.mark.parametrize("seed, n, options", FLOATING)
def test_floating_lanes_forms_equal_the_per_state_kernels(seed, n, options):
    """τ (each of the five TERMS) and q̈ of a floating robot by free_flyer_lanes (the
    recursions started from the base link, reading the floating q) against the per-state
    kernels on the free-flyer chain (the map of dyn_plugin.floating in numpy), 1e-13; no
    quaternion counted as not unit.  The two full blocks of lanes are another computation
    than the per-state fallback of free_flyer_lanes (its sums in another order: not
    bit-equal), the last block with a joint beyond the sine range is that fallback itself."""
    model = dp.load_urdf_string(random_tree_urdf(seed, n, **options), floating_base=True)
    P, q, v, x = _floating_packed_and_states(model, seed=seed)
    bad = np.empty(1, dtype=np.int64)
    for name, terms in TERMS.items():
        lanes, fallback = np.empty(v.shape), np.empty(v.shape)
        free_flyer_lanes.torques_batch[0](P, q, v, x, terms, lanes, bad)
        assert bad[0] == 0, name
        assert _relative(lanes, _chain_torques(model, P, q, v, x, terms)) <= 1e-13, name
        free_flyer_lanes._torques_per_state(P, q, v, x, terms, fallback, 0, len(q))
        assert not np.array_equal(lanes[:32], fallback[:32]), name
        assert np.array_equal(lanes[32:], fallback[32:]), name
    lanes, fallback = np.empty(v.shape), np.empty(v.shape)
    free_flyer_lanes.forward_dynamics_batch[0](P, q, v, x, lanes, bad)
    assert bad[0] == 0
    assert _relative(lanes, _chain_accelerations(model, P, q, v, x)) <= 1e-13
    free_flyer_lanes._forward_per_state(P, q, v, x, fallback, 0, len(q))
    assert not np.array_equal(lanes[:32], fallback[:32])
    # the same per-state kernel, inlined into forward_dynamics_lanes and compiled on its own:
    # LLVM may fuse other multiply-adds in each copy (seen: 6e-16 relative after other
    # tests compiled the kernel first), so not bit for bit as the torques above
    assert _relative(lanes[32:], fallback[32:]) <= 1e-14


def test_free_flyer_chain_refuses_base_armature():
    """pack_free_flyer refuses armature on the six base joints (the base is a body, not a
    motor; free_flyer_lanes starts the recursion from the base link and has none there)."""
    model = dp.load_urdf_string(random_tree_urdf(405, 4, branched=False, prismatic=False), floating_base=True)
    armature = np.zeros(model.nv)
    armature[4] = 0.1
    with pytest.raises(ModelError, match="six base joints carry no armature"):
        free_flyer.pack_free_flyer(pack_model(floating.free_flyer_chain(model), armature), model.gravity)


def test_the_lanes_forms_ran():
    """The comparison above is between two computations: on the PUMA-560 the lanes forms'
    sums, formed in another order, differ from the per-state kernels' in the last bits
    (were both the per-state kernel, as beyond the lanes' sine range, they would not)."""
    P, q, qd, x = _packed_and_states(dp.load_robot("puma560"))
    lanes, per_state = np.empty(q.shape), np.empty(q.shape)
    newton_euler.inverse_dynamics_batch[0](P, q, qd, x, newton_euler.TERM_ALL, lanes)
    newton_euler._inverse_dynamics_rows(P, q, qd, x, newton_euler.TERM_ALL, per_state)
    assert not np.array_equal(lanes, per_state)


# -- the hand tangent against the kernel on dual numbers ----------------------------------------

class Dual:
    """a + b·ε with ε² = 0, ``b`` a vector of directions: forward-mode derivatives of
    whatever is computed with + − × / cos sin (Griewank & Walther, "Evaluating
    Derivatives", 2nd ed. 2008, §3.1).  numpy scalars defer to it (``__array_ufunc__``)."""

    __array_ufunc__ = None

    def __init__(self, value, tangent):
        self.value, self.tangent = float(value), tangent

    @staticmethod
    def _parts(x):
        return (x.value, x.tangent) if isinstance(x, Dual) else (float(x), 0.0)

    def __add__(self, other):
        v, t = self._parts(other)
        return Dual(self.value + v, self.tangent + t)

    __radd__ = __add__

    def __sub__(self, other):
        v, t = self._parts(other)
        return Dual(self.value - v, self.tangent - t)

    def __rsub__(self, other):
        v, t = self._parts(other)
        return Dual(v - self.value, t - self.tangent)

    def __mul__(self, other):
        v, t = self._parts(other)
        return Dual(self.value * v, self.tangent * v + self.value * t)

    __rmul__ = __mul__

    def __truediv__(self, other):
        v, t = self._parts(other)
        return Dual(self.value / v, (self.tangent * v - self.value * t) / (v * v))

    def __rtruediv__(self, other):
        v, t = self._parts(other)
        return Dual(v / self.value, (t * self.value - v * self.tangent) / (self.value * self.value))

    def __neg__(self):
        return Dual(-self.value, -self.tangent)


def _cos(x):
    return Dual(math.cos(x.value), -math.sin(x.value) * x.tangent) if isinstance(x, Dual) else math.cos(x)


def _sin(x):
    return Dual(math.sin(x.value), math.cos(x.value) * x.tangent) if isinstance(x, Dual) else math.sin(x)


def _dual_tau_derivatives(P, q, qd, qdd):
    """(∂τ/∂q, ∂τ/∂q̇) (n, n) of one state by ``newton_euler._rnea_state`` on dual numbers
    seeded with the 2n directions ∂/∂q_j, ∂/∂q̇_j (the armature's q̈ term has no such part)."""
    n = len(q)
    seed = np.identity(2 * n)
    Q = np.array([[Dual(q[j], seed[j]) for j in range(n)]], dtype=object)
    QD = np.array([[Dual(qd[j], seed[n + j]) for j in range(n)]], dtype=object)
    QDD = np.array([list(qdd)], dtype=object)
    W = np.empty((n, ROWS, 3), dtype=object)
    python_form(newton_euler._rnea_state, cos=_cos, sin=_sin)(P, Q, QD, QDD, 0, newton_euler.TERM_ALL, W)
    project = python_form(newton_euler._project)
    tangents = np.array([Dual._parts(project(P, W, i))[1] * np.ones(2 * n) for i in range(n)])
    return tangents[:, :n], tangents[:, n:]


@pytest.mark.parametrize("index", range(len(MODELS)), ids=IDS)
def test_hand_tangent_equals_the_kernel_on_dual_numbers(index):
    """∂τ/∂q, ∂τ/∂q̇ of compiled/derivatives.py against _rnea_state on dual numbers, 1e-12."""
    P, q, qd, qdd = _packed_and_states(MODELS[index], N=3, seed=index)
    n = q.shape[1]
    DQ, DV = np.empty((len(q), n, n)), np.empty((len(q), n, n))
    derivatives.inverse_dynamics_derivatives_batch[0](P, q, qd, qdd, DQ, DV)
    for k in range(len(q)):
        dual_q, dual_v = _dual_tau_derivatives(P, q[k], qd[k], qdd[k])
        for hand, dual in ((DQ[k], dual_q), (DV[k], dual_v)):
            assert np.max(np.abs(hand - dual)) <= 1e-12 * max(1.0, np.max(np.abs(dual))), (k, hand - dual)
