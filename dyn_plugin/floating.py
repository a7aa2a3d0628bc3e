"""Floating bases: the free-flyer convention, and the fixed-base chain that moves like a
floating robot at any one state (moving on the configuration space, q ⊕ v and q₁ ⊖ q₀, is
:mod:`dyn_plugin.configuration`'s, the base a floating joint there).

Convention (pinocchio's ``JointModelFreeFlyer``; :attr:`RobotModel.floating_base`):
q = [p (3), quaternion (x, y, z, w), joints (n)] with p the base origin and the quaternion
the base orientation R in the world; v = [v (3), ω (3), q̇ (n)] the base's linear
velocity (of its origin) and angular velocity in the base frame; a = v̇ likewise (the
time derivative of those base-frame components, a spatial acceleration); τ = [f (3),
m (3), joint torques (n)], the force and moment on the base at its origin, base frame.

The free-flyer chain
--------------------
Take the base frame at one instant and put six joints between it and the world, all at
zero: three prismatic along its x, y and z axes, then three revolute about them through
its origin, the base's own inertia on the last one (:func:`free_flyer_chain`).  The
chain's joint rates give the base exactly the velocity v, so the chain and the floating
robot have the same M, the same generalized forces τ, and the same motion for the same
v and τ; only what the chain calls an acceleration differs, by its velocity products and
by gravity.  With the chain's gravity zero, the chain's q̈ is a + d(q, v) with

    d_lin = ω × v − Rᵀ g     (the base origin's classical acceleration a_lin + ω × v,
                              and gravity as a fictitious base acceleration, Fu 3.3-46)
    d_ang = −(ω_y ω_z, −ω_x ω_z, ω_x ω_y)    (minus the chain's own ω̇ term:
                              revolute x, y, z at zero give ω̇ = q̈ + (ω_y ω_z, −ω_x ω_z, ω_x ω_y))

so ID(q, v, a) = ID_chain(0, q_joints; v; a + d), FD(q, v, τ) = FD_chain(…) − d and
M(q) = M_chain.  Every fixed-base backend thus serves floating robots through
:mod:`dyn_plugin.backends.floating_base`: the recursion is not written again.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from . import joints
from .joints import quaternion_matrix
from .kinematics import PRISMATIC, REVOLUTE, skew
from .model import RobotModel

BASE_Q, BASE_V = 7, 6               # entries of the base in q and in v
CHAIN_NAMES = ("base_x", "base_y", "base_z", "base_rx", "base_ry", "base_rz")


@functools.lru_cache(maxsize=64)
def free_flyer_chain(model: RobotModel) -> RobotModel:
    """The fixed-base model with the six chain joints (:data:`CHAIN_NAMES`) before the
    robot's joints, the base's inertia on the sixth, gravity zero (it enters through
    :func:`acceleration_offset`).  ``model`` must have a floating base."""
    if not model.floating_base:
        raise ValueError(f"model {model.name!r} has a fixed base")
    n, eye, zero = model.n, np.eye(3), np.zeros(3)
    parents = np.concatenate([np.arange(-1, 5), np.where(model.parents < 0, 5, model.parents + 6)])
    chain_link = [np.zeros((3, 3))] * 5 + [model.base_inertia]
    return dataclasses.replace(
        model, floating_base=False,
        joint_names=CHAIN_NAMES + model.joint_names, link_names=CHAIN_NAMES + model.link_names,
        joint_types=(PRISMATIC,) * 3 + (REVOLUTE,) * 3 + model.joint_types, parents=parents,
        joint_rotations=np.concatenate([np.tile(eye, (6, 1, 1)), model.joint_rotations]),
        joint_positions=np.concatenate([np.zeros((6, 3)), model.joint_positions]),
        axes=np.concatenate([eye, eye, model.axes]),
        masses=np.concatenate([np.zeros(5), [model.base_mass], model.masses]),
        coms=np.concatenate([np.zeros((5, 3)), [model.base_com], model.coms]),
        inertias=np.concatenate([chain_link, model.inertias]).reshape(n + 6, 3, 3),
        lower=_chain(model.lower, -np.inf), upper=_chain(model.upper, np.inf),
        velocity_limits=_chain(model.velocity_limits, np.inf), effort_limits=_chain(model.effort_limits, np.inf),
        damping=_chain(model.damping, 0.0), friction=_chain(model.friction, 0.0), armature=_chain(model.armature, 0.0),
        continuous=np.concatenate([[False] * 3 + [True] * 3, model.continuous]),
        gravity=zero, base_mass=0.0, base_com=zero, base_inertia=np.zeros((3, 3)),
        source_urdf=None, source_path=None, base_link="world",
    )


def _chain(values: np.ndarray, base_value: float) -> np.ndarray:
    return np.concatenate([np.full(6, base_value), values])


def base_rotations(q: np.ndarray) -> np.ndarray:
    """R (N, 3, 3), base → world, of configurations q (N, nq) with unit quaternions."""
    return quaternion_matrix(q[:, 3:7])


def unit_quaternions(q: np.ndarray) -> np.ndarray:
    """q (N, nq) with each base quaternion normalised; an InputError for one whose norm is
    not 1 within :data:`~dyn_plugin.joints.UNIT_TOLERANCE` (:func:`dyn_plugin.joints.unit_quaternions`)."""
    return joints.unit_quaternions(q, slice(3, 7), "q's base orientation q[3:7] must be a unit quaternion (x, y, z, w)")


def base_is_valid(q: np.ndarray) -> bool:
    """Whether every base of q (N, nq) has a finite position and a quaternion of norm 1
    within :data:`~dyn_plugin.joints.UNIT_TOLERANCE` (a NaN fails): the check of
    :func:`unit_quaternions` and of finite input, without a copy of q."""
    quaternion = q[:, 3:BASE_Q]
    norms = np.sqrt(np.einsum("ij,ij->i", quaternion, quaternion))
    return bool(np.all(np.abs(norms - 1.0) <= joints.UNIT_TOLERANCE) and np.isfinite(q[:, :3]).all())


def chain_configuration(q: np.ndarray) -> np.ndarray:
    """The chain's joint positions (N, n + 6): zero for the six base joints, then the
    robot's joints (q[:, 7:])."""
    return np.concatenate([np.zeros((len(q), BASE_V)), q[:, BASE_Q:]], axis=1)


def acceleration_offset(model: RobotModel, q: np.ndarray, v: np.ndarray, gravity: bool = True,
                        velocity: bool = True) -> np.ndarray:
    """d (N, n + 6) of the module docstring: the chain's q̈ is a + d.  ``gravity`` and
    ``velocity`` select its two parts (for g(q) alone, or C(q, v) v alone)."""
    d = np.zeros_like(v)
    if velocity:
        w = v[:, 3:6]
        d[:, 0:3] = np.cross(w, v[:, 0:3])
        d[:, 3:6] = np.stack([-w[:, 1] * w[:, 2], w[:, 0] * w[:, 2], -w[:, 0] * w[:, 1]], axis=1)
    if gravity:
        d[:, 0:3] -= np.einsum("nji,j->ni", base_rotations(q), model.gravity)
    return d


def acceleration_offset_derivatives(model: RobotModel, q: np.ndarray, v: np.ndarray) -> tuple:
    """(∂d/∂q, ∂d/∂v) (N, nv, nv) of :func:`acceleration_offset` (both parts), ∂/∂q along
    the tangent of q (base rotation δθ in the base frame, as :func:`dyn_plugin.configuration.integrate`):
    only the base rows are non-zero.  With R → R exp([δθ]×), Rᵀg → Rᵀg + [Rᵀg]× δθ, so
    ∂d_lin/∂δθ = −[Rᵀg]×; ∂d_lin/∂v_lin = [ω]×, ∂d_lin/∂ω = −[v_lin]×; and
    ∂d_ang/∂ω from d_ang = (−ω_y ω_z, ω_x ω_z, −ω_x ω_y)."""
    N, nv = v.shape
    dq, dv = np.zeros((N, nv, nv)), np.zeros((N, nv, nv))
    dq[:, 0:3, 3:6] = -skew(np.einsum("nji,j->ni", base_rotations(q), model.gravity))
    u, w = v[:, 0:3], v[:, 3:6]
    dv[:, 0:3, 0:3] = skew(w)
    dv[:, 0:3, 3:6] = -skew(u)
    wx, wy, wz, zero = w[:, 0], w[:, 1], w[:, 2], np.zeros(N)
    dv[:, 3:6, 3:6] = np.stack([np.stack([zero, -wz, -wy], axis=-1), np.stack([wz, zero, wx], axis=-1),
                                np.stack([-wy, -wx, zero], axis=-1)], axis=1)
    return dq, dv


def random_base_states(rng: np.random.Generator, count: int, speed: float, acceleration: float) -> tuple:
    """Base parts of ``count`` random states: q (count, 7) with the position uniform in a
    1 m cube about the origin and a uniformly random unit quaternion; v and a (count, 6)
    uniform in ±speed and ±acceleration (m/s, rad/s; m/s², rad/s²)."""
    quaternion = rng.normal(size=(count, 4))
    quaternion /= np.linalg.norm(quaternion, axis=1, keepdims=True)
    q = np.concatenate([rng.uniform(-1.0, 1.0, (count, 3)), quaternion], axis=1)
    return q, rng.uniform(-speed, speed, (count, 6)), rng.uniform(-acceleration, acceleration, (count, 6))


def momentum(backend, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The robot's linear and angular momentum (N, 6) in the world frame, the angular part
    about the world origin (kg m/s, kg m²/s): the base rows of M v are the momentum in the
    base frame about the base origin; rotate them into the world and move the moment."""
    if not backend.model.floating_base:
        raise ValueError("momentum is defined here for floating-base models")
    h = np.einsum("nij,nj->ni", backend.mass_matrix(q)[:, :BASE_V, :], v)
    R = base_rotations(q)
    linear = np.einsum("nij,nj->ni", R, h[:, 0:3])
    angular = np.einsum("nij,nj->ni", R, h[:, 3:6]) + np.cross(q[:, 0:3], linear)
    return np.concatenate([linear, angular], axis=1)
