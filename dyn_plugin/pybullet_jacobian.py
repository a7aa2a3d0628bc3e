"""``calculateJacobian`` with pybullet's signature and meaning, exact.

``calculateJacobian(bodyUniqueId, linkIndex, localPosition, objPositions, objVelocities,
objAccelerations, physicsClientId)`` returns (J_lin, J_ang), each 3 × (dof [+ 6]) as a
tuple of rows: the world-frame velocity of the point of link ``linkIndex`` (−1: the base)
at ``localPosition`` (3, m) in that link's pybullet frame (its centre of mass with the
inertial axes, ``getDynamicsInfo[3:5]``; ``getLinkState[0:2]``), and the link's angular
velocity, per unit rate of each degree of freedom: v = J_lin q̇, ω = J_ang q̇ (world axes; a
fixed base at its pose in the scene).  Columns are
pybullet's flags=0 degrees of freedom (revolute and prismatic joints in joint order); a
floating body has 6 more first, pybullet's u of its base (angular then linear velocity of
its centre-of-mass frame, in that frame: :mod:`dyn_plugin.backends.pybullet_backend`).  A
floating body's positions are its dof joint positions, the base's centre-of-mass frame then
at the world origin with the identity orientation (pybullet's convention), or dof + 7 as
calculateInverseDynamics takes them (base pose first).  Velocities and accelerations are
checked (pybullet requires them) but do not enter.

Each column is the geometric Jacobian of Siciliano, Sciavicco, Villani & Oriolo 2009,
eq. 3.30 (:mod:`dyn_plugin.frames`), moved from the link frame's origin to the point,
v_x = v_o + ω × (x − o).  It equals the finite differences of the point's world position
and of the link's orientation (``tests/test_pybullet_drop_in.py``).  Where pybullet's own
answer differs it is pybullet that is off, measured (``tests/test_pybullet_drop_in.py``):
its columns are in its inverse-dynamics tree's frame, the base at the identity, so a fixed
base turned in the world gets them unturned; and on links whose centre of mass is away from
their joint frame (pybullet_data's r2d2 legs) its linear part misses the differences by
0.3 m/rad: ``PhysicsServerCommandProcessor::processCalculateJacobianCommand`` adds
``localPosition`` at the tree's body origin, not at the link's centre of mass.  A floating
base's columns are for the base at the identity pose whatever the positions say (ours take
dof + 7 positions for another pose).  Spherical joints are refused
here as by pybullet (this function has no multi-DOF layout).
"""

from __future__ import annotations


import numpy as np

from . import frames
from .backends.pybullet_backend import import_pybullet
from .errors import InputError
from .pybullet_bodies import BodyDynamics, body_dynamics, resolve_client


def calculateJacobian(bodyUniqueId, linkIndex, localPosition, objPositions, objVelocities, objAccelerations,
                      physicsClientId=None) -> tuple:
    """(J_lin, J_ang) (3 × columns each, tuples of rows) of a link's point; see the module docstring."""
    import_pybullet()
    bd = body_dynamics(bodyUniqueId, resolve_client(physicsClientId))
    bd.one_dof_only("calculateJacobian")
    point = _local_point(bd, localPosition)
    link = _link_name(bd, linkIndex)
    for values, label in ((objVelocities, "objVelocities"), (objAccelerations, "objAccelerations")):
        bd.to_model(values, label)
    q = _configuration(bd, objPositions)
    J = frames.frame_jacobian(bd.model, q, link)[0]                       # (6, nv) at the link frame's origin
    R = frames.frame_placement(bd.model, q, link)[0, :3, :3]
    inertial = bd.inertial_frames[linkIndex + 1]
    r = R @ (inertial[:3, :3] @ point + inertial[:3, 3])                  # link origin → point, world
    J_lin = J[:3] - np.cross(r[:, None], J[3:], axis=0)
    J_ang = J[3:]
    if bd.base is not None:
        order = np.concatenate([np.arange(6), 6 + bd.dof_to_model])
        S = np.eye(J.shape[1])
        S[:6, :6] = bd.base.S
        J_lin, J_ang = (J_lin @ S)[:, order], (J_ang @ S)[:, order]
    else:
        R_base = _fixed_base_rotation(bd)
        J_lin, J_ang = R_base @ J_lin[:, bd.dof_to_model], R_base @ J_ang[:, bd.dof_to_model]
    return _rows(J_lin), _rows(J_ang)


def _fixed_base_rotation(bd: BodyDynamics) -> np.ndarray:
    """The fixed base link's orientation (3, 3) in the world, from the scene: its
    centre-of-mass frame's (``getBasePositionAndOrientation``) turned back by R_i."""
    p = import_pybullet()
    _, orientation = p.getBasePositionAndOrientation(bd.body, physicsClientId=bd.client)
    return np.array(p.getMatrixFromQuaternion(orientation)).reshape(3, 3) @ bd.inertial_frames[0][:3, :3].T


def _rows(matrix: np.ndarray) -> tuple:
    return tuple(tuple(float(x) for x in row) for row in matrix)


def _local_point(bd: BodyDynamics, localPosition) -> np.ndarray:
    try:
        point = np.asarray(localPosition, dtype=float)
    except (TypeError, ValueError):
        point = None
    if point is None or point.shape != (3,) or not np.all(np.isfinite(point)):
        raise InputError(f"calculateJacobian: localPosition must be 3 finite numbers (m, in the link's centre-of-mass "
                         f"frame) for {bd.label}, got {localPosition!r}")
    return point


def _link_name(bd: BodyDynamics, linkIndex) -> str:
    count = len(bd.inertial_frames) - 1
    if isinstance(linkIndex, bool) or not isinstance(linkIndex, (int, np.integer)) or not -1 <= linkIndex < count:
        raise InputError(f"calculateJacobian: linkIndex must be an integer from -1 (the base) to {count - 1} for "
                         f"{bd.label}, got {linkIndex!r}")
    p = import_pybullet()
    if linkIndex < 0:
        return p.getBodyInfo(bd.body, physicsClientId=bd.client)[0].decode()
    return p.getJointInfo(bd.body, int(linkIndex), physicsClientId=bd.client)[12].decode()


def _configuration(bd: BodyDynamics, objPositions) -> np.ndarray:
    """Our q (1, nq): the joints for a fixed base; for a floating one dof positions (base's
    centre-of-mass frame at the world origin, identity orientation) or dof + 7."""
    if bd.base is None:
        return bd.to_model(objPositions, "objPositions")[None]
    if np.shape(objPositions) == (bd.dof,):
        joints = bd.to_model(objPositions, "objPositions")[None]
        return bd.base.configuration_from(np.zeros((1, 3)), np.array([[0.0, 0.0, 0.0, 1.0]]), joints)
    return bd.to_configuration(objPositions)


__all__ = ["calculateJacobian"]
