"""Simulating robots with spherical, planar and floating joints (dyn_plugin.simulate on the
manifold of every joint, dyn_plugin.configuration), judged by physical properties.

- Momentum in zero gravity, RK4 (issue #30: ≤ 1e-9 over 1 s): a floating-base random tree
  with spherical joints (the momentum from the base rows of M v, ``floating.momentum``); a
  free body on a floating joint hung from a fixed base (its momentum from v, m, c and I
  directly: no M involved); a subtree below a floating joint (spherical and planar joints
  in it; the momentum from the floating joint's rows of M v, which are the subtree's
  momentum in the joint's child frame).  Each relative to the largest momentum entry.
- Energy: without damping, RK4 conserves kinetic + potential to O(dt⁴) (gravity on: this
  holds the potential of a tree with such joints, built on their chain, to the dynamics).
- Semi-implicit Euler converges at first order to RK4's trajectory (compared on the
  manifold with ``configuration.difference``).
- Limits of the one-dof joints of such a model are watched at their own entries of q.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin import configuration, floating
from dyn_plugin.joints import quaternion_matrix
from dyn_plugin.sampling import random_states
from dyn_plugin.simulate import simulate
from urdf_factory import random_tree_urdf

ZERO_GRAVITY = (0.0, 0.0, 0.0)
DT = 2e-3                 # s: RK4 at this step conserves momentum to ~1e-10 over 1 s on these trees

FREE_BODY = """<?xml version="1.0"?>
<robot name="free_body">
  <link name="base_link"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="body"><inertial><origin xyz="0.1 -0.2 0.05" rpy="0.3 0.2 -0.4"/><mass value="2.5"/>
    <inertia ixx="0.4" iyy="0.25" izz="0.3" ixy="0.02" ixz="-0.01" iyz="0.03"/></inertial></link>
  <link name="other"><inertial><origin xyz="0 0.3 0"/><mass value="1.2"/>
    <inertia ixx="0.03" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="free" type="floating"><parent link="base_link"/><child link="body"/>
    <origin xyz="0.3 0.1 -0.2" rpy="0.5 -0.3 1.1"/></joint>
  {below}
  <joint name="elsewhere" type="continuous"><parent link="base_link"/><child link="other"/>
    <origin xyz="0 0 0.5"/><axis xyz="0 1 1"/></joint>
</robot>
"""
SUBTREE = """<link name="arm"><inertial><origin xyz="0 0 0.2"/><mass value="0.8"/>
    <inertia ixx="0.05" iyy="0.06" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="hand"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="spherical"><parent link="body"/><child link="arm"/>
    <origin xyz="0.2 0 0.1" rpy="0.1 0.2 0.3"/></joint>
  <joint name="wrist" type="planar"><parent link="arm"/><child link="hand"/>
    <origin xyz="0 0.1 0.4" rpy="0.4 0 0"/><axis xyz="0 0 1"/></joint>"""


def _run(model, q0, v0, duration=1.0, dt=DT, integrator="rk4"):
    backend = dp.get_backend("newton_euler", model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # joints leaving their limits: not the point here
        return backend, simulate(backend, q0, v0, np.zeros(model.nv), duration, dt, integrator=integrator,
                                 on_limit="ignore")


def _drift(values: np.ndarray) -> float:
    """max |x(t) − x(0)| over the run, relative to the largest entry of x(0)."""
    return float(np.abs(values - values[0]).max() / np.abs(values[0]).max())


def _in_world(model, joint: int, q: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Momentum (N, 6) (linear; angular about the world origin) in the world of a momentum
    h (N, 6) given in the child frame of floating joint ``joint`` about its origin (the
    joint hangs from the fixed base: its frame is at its rest placement)."""
    q_slice = model.joint_slices[joint][0]
    position, quaternion = q[:, q_slice][:, :3], q[:, q_slice][:, 3:]
    R = model.joint_rotations[joint] @ quaternion_matrix(quaternion)
    origin = position @ model.joint_rotations[joint].T + model.joint_positions[joint]
    linear = np.einsum("nij,nj->ni", R, h[:, :3])
    return np.concatenate([linear, np.einsum("nij,nj->ni", R, h[:, 3:]) + np.cross(origin, linear)], axis=1)


def _free_body_momentum(model, joint: int, v: np.ndarray) -> np.ndarray:
    """(N, 6) momentum of the link of floating joint ``joint`` from its velocity alone, child
    frame, about its origin: m (v + ω × c) and I_c ω + c × m (v + ω × c)."""
    v_slice = model.joint_slices[joint][1]
    u, w = v[:, v_slice][:, :3], v[:, v_slice][:, 3:]
    m, c = model.masses[joint], model.coms[joint]
    linear = m * (u + np.cross(w, c))
    return np.concatenate([linear, w @ model.inertias[joint].T + np.cross(c, linear)], axis=1)


def _subtree_momentum(backend, joint: int, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The floating joint's rows of M v (N, 6): its subtree's momentum, child frame."""
    rows = backend.model.joint_slices[joint][1]
    return np.einsum("nij,nj->ni", backend.mass_matrix(q)[:, rows, :], v)


def test_momentum_of_a_floating_tree_with_spherical_joints():
    xml = random_tree_urdf(31, 4, multi_dof=("spherical",), name="spherical_tree")
    model = dp.load_urdf_string(xml, floating_base=True).with_gravity(ZERO_GRAVITY)
    assert model.joint_types.count("spherical") >= 1
    s = random_states(model, 1, seed=4)
    backend, t = _run(model, s.q[0], s.qd[0])
    momentum = floating.momentum(backend, t.q, t.qd)
    assert _drift(momentum) < 1e-9
    assert t.relative_energy_drift() < 1e-9
    assert np.ptp(t.q[:, model.joint_slices[model.joint_types.index("spherical")][0]], axis=0).max() > 0.1   # it moves


def test_momentum_of_a_free_body_on_a_floating_joint():
    """The body alone below the joint: its momentum from v directly, and the same from M's rows."""
    model = dp.load_urdf_string(FREE_BODY.format(below=""), floating_base=False).with_gravity(ZERO_GRAVITY)
    free = model.joint_names.index("free")
    q0, v0 = model.neutral(), np.array([0.4, -0.3, 0.2, 1.5, -2.0, 0.7, 1.0])
    q0[model.joint_slices[free][0]] = [0.1, 0.2, -0.1, 0.3, -0.5, 0.2, 0.78]
    q0[model.joint_slices[free][0]][3:] /= np.linalg.norm(q0[model.joint_slices[free][0]][3:])
    q0 = configuration.integrate(model, q0[None], np.zeros((1, model.nv)))[0]       # the unit quaternion
    backend, t = _run(model, q0, v0)
    direct = _free_body_momentum(model, free, t.qd)
    np.testing.assert_allclose(_subtree_momentum(backend, free, t.q[::100], t.qd[::100]), direct[::100], rtol=0,
                               atol=1e-12 * np.abs(direct).max())
    assert _drift(_in_world(model, free, t.q, direct)) < 1e-9
    assert t.relative_energy_drift() < 1e-9


def test_momentum_of_a_subtree_below_a_floating_joint():
    model = dp.load_urdf_string(FREE_BODY.format(below=SUBTREE), floating_base=False).with_gravity(ZERO_GRAVITY)
    assert set(model.joint_types) == {"floating", "spherical", "planar", "revolute"}
    free = model.joint_names.index("free")
    s = random_states(model, 1, seed=6, speed=1.5)
    backend, t = _run(model, s.q[0], s.qd[0])
    assert _drift(_in_world(model, free, t.q, _subtree_momentum(backend, free, t.q, t.qd))) < 1e-9
    assert t.relative_energy_drift() < 1e-9


def test_energy_under_gravity_with_every_kind():
    """Gravity on, no damping: kinetic + potential conserved by RK4 (the potential of the
    chain of each joint; a wrong one would trade energy with the dynamics' gravity)."""
    xml = random_tree_urdf(33, 5, multi_dof=("spherical", "planar", "floating"), name="every_kind")
    model = dp.load_urdf_string(xml, floating_base=True)
    s = random_states(model, 1, seed=2)
    _, t = _run(model, s.q[0], s.qd[0], duration=0.5)
    assert np.ptp(t.potential) > 1.0                    # J: gravity does work
    assert t.relative_energy_drift() < 1e-9


def test_semi_implicit_euler_converges_at_first_order_to_rk4():
    """The free body and its subtree, 0.2 s: the error of semi-implicit Euler against RK4
    (dt 2e-3) on the manifold, (q_euler ⊖ q_rk4), halves with dt (ratio within 1.8-2.2)."""
    model = dp.load_urdf_string(FREE_BODY.format(below=SUBTREE), floating_base=False)
    s = random_states(model, 1, seed=8, speed=1.0)
    _, reference = _run(model, s.q[0], s.qd[0], duration=0.2, dt=2e-3)
    errors = []
    for dt in (4e-3, 2e-3):
        _, t = _run(model, s.q[0], s.qd[0], duration=0.2, dt=dt, integrator="semi_implicit_euler")
        errors.append(np.abs(configuration.difference(model, reference.q[-1:], t.q[-1:])).max())
    assert 1.8 < errors[0] / errors[1] < 2.2


def test_rk4_on_the_manifold_is_of_fourth_order():
    """The free body tumbling (0.5 s): RK4's error against RK4 at dt 5e-3 falls 16-fold when
    dt halves from 0.05 s (13-19; without the chart's dexp⁻¹, ξ̇ = v, it falls 4-fold:
    second order, and the momentum drifts 1e-6 at DT instead of 1e-11)."""
    model = dp.load_urdf_string(FREE_BODY.format(below="")).with_gravity(ZERO_GRAVITY)
    q0, v0 = model.neutral(), np.array([0.4, -0.3, 0.2, 1.5, -2.0, 0.7, 1.0])
    _, reference = _run(model, q0, v0, duration=0.5, dt=5e-3)
    errors = [np.abs(configuration.difference(model, reference.q[-1:], _run(model, q0, v0, 0.5, dt)[1].q[-1:])).max()
              for dt in (0.05, 0.025)]
    assert 13 < errors[0] / errors[1] < 19


def test_limits_are_read_at_the_joints_own_entries():
    """A bounded revolute joint after a spherical one (its q entry is not its joint index):
    every limit event's position is the joint's own entry of q at that time."""
    xml = random_tree_urdf(35, 4, multi_dof=("spherical",), name="limits")
    model = dp.load_urdf_string(xml, floating_base=True).with_gravity(ZERO_GRAVITY)
    s = random_states(model, 1, seed=1, speed=6.0)
    _, t = _run(model, s.q[0], s.qd[0], duration=0.5, dt=5e-3)
    assert t.limit_events
    for event in t.limit_events:
        i = model.joint_names.index(event.joint)
        k = int(round(event.time / t.dt))
        assert model.joint_types[i] != "spherical"
        assert event.position == t.q[k, model.joint_slices[i][0].start]
        assert event.bound in (model.lower[i], model.upper[i])


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_quaternions_stay_unit(integrator):
    model = dp.load_urdf_string(FREE_BODY.format(below=SUBTREE))
    s = random_states(model, 1, seed=9)
    _, t = _run(model, s.q[0], s.qd[0], duration=0.1, dt=5e-3, integrator=integrator)
    for i in model.multi_dof_indices:
        q = t.q[:, model.joint_slices[i][0]]
        if model.joint_types[i] != "planar":
            assert np.abs(np.linalg.norm(q[:, -4:], axis=1) - 1).max() < 1e-14


def test_a_diverging_state_names_the_joint_of_several_degrees_of_freedom():
    from dyn_plugin.simulate import _Divergence
    from dyn_plugin.errors import SimulationError

    model = dp.load_urdf_string(FREE_BODY.format(below=SUBTREE))
    q, v = model.neutral(), np.zeros(model.nv)
    q[model.joint_slices[model.joint_names.index("shoulder")][0].start] = np.nan
    with pytest.raises(SimulationError, match=r"joint 'shoulder' \(spherical\) has q = \[nan, 0, 0, 1\], q̇ = \[0, 0, 0\]"):
        _Divergence(model, np.arange(3) * 0.1, 0.1).check(1, q, v)
