"""A whole pybullet body's state — floating base and spherical joints included — read
from and written to its scene, as our (q, v) and in pybullet's multi-DOF layout
(:mod:`dyn_plugin.pybullet_layout`).  Used by :class:`dyn_plugin.pybullet_bridge.DynamicsStepper`
and :class:`dyn_plugin.pybullet_friction.FrictionInjector` for bodies that are not a fixed
base with revolute and prismatic joints only (:func:`joint_state` reads those).

pybullet's functions (``getBasePositionAndOrientation``, ``getBaseVelocity``,
``getJointStatesMultiDof`` and their ``reset`` twins) hold the base's centre-of-mass pose
and world velocities, each spherical joint's quaternion (x, y, z, w) and angular velocity
in its child's frame, and each revolute or prismatic joint's position and rate: exactly
the flags=1 layout's entries, which :class:`~dyn_plugin.pybullet_layout.MultiDofLayout`
maps to ours.
"""

from __future__ import annotations

import numpy as np

from .errors import SimulationError


def joint_state(p, bd) -> tuple:
    """(q, q̇) (n,), (n,) of a body's revolute and prismatic joints in model order."""
    states = p.getJointStates(bd.body, bd.joint_indices, physicsClientId=bd.client)
    return bd.to_model([s[0] for s in states], "positions"), bd.to_model([s[1] for s in states], "velocities")


def time_step(p, client) -> float:
    """The client's time step (s, ``fixedTimeStep``)."""
    return float(p.getPhysicsEngineParameters(physicsClientId=client)["fixedTimeStep"])


def read_state(p, bd, layout) -> tuple:
    """Our (q (1, nq), v (1, nv)) of the body's state in its scene."""
    positions, velocities = np.zeros(layout.size), np.zeros(layout.size)
    if bd.base is not None:
        position, orientation = p.getBasePositionAndOrientation(bd.body, physicsClientId=bd.client)
        linear, angular = p.getBaseVelocity(bd.body, physicsClientId=bd.client)
        positions[0:7], velocities[0:6] = (*position, *orientation), (*linear, *angular)
    joints = [j for j, _ in bd.moving]
    for (_, offset, _), state in zip(layout.entries, p.getJointStatesMultiDof(bd.body, joints,
                                                                            physicsClientId=bd.client)):
        positions[offset:offset + len(state[0])] = state[0]
        velocities[offset:offset + len(state[1])] = state[1]
    q = layout.configuration(positions)
    return q, layout.velocity(q, velocities)[0]


def write_state(p, bd, layout, q: np.ndarray, v: np.ndarray) -> None:
    """Put our (q (1, nq), v (1, nv)) into the body's scene (base pose and world velocities,
    every moving joint's position and rate)."""
    positions, velocities = layout.positions(q), layout.velocities(q, v)
    if bd.base is not None:
        p.resetBasePositionAndOrientation(bd.body, positions[0:3], positions[3:7], physicsClientId=bd.client)
        p.resetBaseVelocity(bd.body, velocities[0:3], velocities[3:6], physicsClientId=bd.client)
    for (joint, _), (_, offset, kind) in zip(bd.moving, layout.entries):
        width = 4 if kind == "spherical" else 1
        p.resetJointStateMultiDof(bd.body, joint, positions[offset:offset + width],
                                  velocities[offset:offset + width - (width == 4)], physicsClientId=bd.client)


def layout_state(p, bd, layout, q: np.ndarray, v: np.ndarray) -> tuple:
    """(positions, velocities) tuples in the multi-DOF layout of our (q, v); a fixed base's
    7 position entries hold its pose in the scene, as PDControllerStableMultiDof builds them."""
    positions = layout.positions(q)
    if bd.base is None:
        position, orientation = p.getBasePositionAndOrientation(bd.body, physicsClientId=bd.client)
        positions = tuple(float(x) for x in (*position, *orientation)) + positions[7:]
    return positions, layout.velocities(q, v)


def motors_off(p, bd) -> None:
    """Switch off the velocity motors pybullet puts on every revolute and prismatic joint
    (and any on a spherical joint), so that a torque is the only actuation."""
    p.setJointMotorControlArray(bd.body, bd.joint_indices, p.VELOCITY_CONTROL, forces=[0.0] * bd.dof,
                                physicsClientId=bd.client)
    for joint, k in bd.moving:
        if bd.model.joint_types[k] == "spherical":
            p.setJointMotorControlMultiDof(bd.body, joint, p.POSITION_CONTROL, targetPosition=[0, 0, 0, 1],
                                           positionGain=0, velocityGain=0, force=[0, 0, 0], physicsClientId=bd.client)


def check_finite(model, q: np.ndarray, v: np.ndarray, where: str, advice: str) -> None:
    """Raise SimulationError naming the base or joint of the first non-finite entry of q
    (1, nq) or v (1, nv)."""
    for values, label, column in ((q, "q", 0), (v, "v", 1)):
        bad = np.flatnonzero(~np.isfinite(values[0]))
        if len(bad):
            i = int(bad[0])
            owner = next((f"joint {name!r}" for name, slices in zip(model.joint_names, model.joint_slices)
                          if slices is not None and slices[column].start <= i < slices[column].stop), "the floating base")
            raise SimulationError(f"{where}: {owner} would get {label}[{i}] = {values[0, i]:.3g}; {advice}")
