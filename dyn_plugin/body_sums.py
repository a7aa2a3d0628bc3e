"""Joint-space quantities as sums over the bodies, batch-first, in numpy: what holds for any
joints, of one degree of freedom or several, on a fixed or a floating base, from each
body's Jacobian (:mod:`dyn_plugin.frames`).

**The Coriolis matrix.** Where every velocity is the rate of a coordinate (one-dof joints on a
fixed base), the Christoffel C is ½ ∂h/∂q̇ of the velocity terms h (what
:class:`dyn_plugin.Backend` polarises).  A floating base's and a spherical joint's velocities
are angular velocities, not rates of their quaternions: that C still gives C v = h, but
Ṁ − 2C is no longer skew-symmetric.  The factorisation of Echeandia & Wensing (2021,
"Numerical methods to compute the Coriolis matrix and Christoffel symbols for rigid-body
systems", J. Comput. Nonlinear Dyn. 16(9); pinocchio's ``computeCoriolisMatrix``) holds for
any joints:

    C = Σ_b J_bᵀ (I_b J̇_b + B(I_b, v_b) J_b),
    B(I, v) = ½ (v ×* I − I v× + (I v) ×̄),

over the bodies b (a floating model's base, every moving link), with each body's spatial
Jacobian J_b (6, nv) and its time derivative J̇_b at the world origin (``"world"``),
v_b = J_b v its spatial velocity and I_b its spatial inertia there, all in pinocchio's order
[linear; angular].  f ×̄ is the map v ↦ v ×* f.  Then C v = Σ J_bᵀ (I_b J̇_b v + v_b ×* I_b v_b)
= h − g (each body's Newton-Euler equation), and since B + Bᵀ = İ (the rate of I_b in world
axes, v ×* I − I v×), Ṁ − 2C = Σ (J̇ᵀ I J − Jᵀ I J̇) − Σ Jᵀ (B − Bᵀ) J is skew-symmetric.

**The regressor.** Each body's Newton-Euler wrench in its own frame is linear in its ten
inertial parameters θ_b (:meth:`RobotModel.inertial_parameters`: m, m c, the inertia about
the link origin), f_b = A(v_b, a_b) θ_b with its spatial velocity v_b = J_b v and
acceleration a_b = J_b v̇ + J̇_b v + (Rᵀ(−g), 0) in link axes (``"local"``), and
τ = Σ_b J_bᵀ f_b, so Y = [J_1ᵀ A_1, …, J_nᵀ A_n] (pinocchio's ``bodyRegressor`` and
``computeJointTorqueRegressor``).
"""

from __future__ import annotations

import numpy as np

from . import frames
from .kinematics import skew
from .model import RobotModel

__all__ = ["coriolis_matrix", "joint_torque_regressor"]


def coriolis_matrix(model: RobotModel, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """C (N, nv, nv) at validated q (N, nq) (unit quaternions) and v (N, nv): the module
    docstring's sum over the bodies."""
    N, nv = v.shape
    C = np.zeros((N, nv, nv))
    for frame, mass, com, inertia in _bodies(model):
        J = frames.frame_jacobian(model, q, frame, "world")
        J_dot = frames.frame_jacobian_time_variation(model, q, v, frame, "world")
        I = _spatial_inertia(mass, com, inertia, frames.frame_placement(model, q, frame))
        velocity = np.einsum("nij,nj->ni", J, v)
        momentum = np.einsum("nij,nj->ni", I, velocity)
        B = 0.5 * (_force_cross(velocity) @ I - I @ _motion_cross(velocity) + _bar(momentum))
        C += np.swapaxes(J, 1, 2) @ (I @ J_dot + B @ J)
    return C


def joint_torque_regressor(model: RobotModel, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Y (N, nv, 10 n) with τ = Y θ, θ = ``model.inertial_parameters(flat=True)``, at
    validated q (N, nq) and v, a (N, nv) of a fixed-base model (the module docstring)."""
    N, nv = v.shape
    fall = np.concatenate([-model.gravity, np.zeros(3)])
    blocks = []
    for link in model.link_names:
        J = frames.frame_jacobian(model, q, link, "local")
        R = frames.frame_placement(model, q, link)[:, :3, :3]
        velocity = np.einsum("nij,nj->ni", J, v)
        acceleration = np.einsum("nij,nj->ni", J, a) + np.einsum(
            "nij,nj->ni", frames.frame_jacobian_time_variation(model, q, v, link, "local"), v)
        acceleration[:, :3] += np.einsum("nji,j->ni", R, fall[:3])
        blocks.append(np.swapaxes(J, 1, 2) @ _body_regressor(velocity, acceleration))
    return np.concatenate(blocks, axis=2) if blocks else np.zeros((N, nv, 0))


def _body_regressor(v: np.ndarray, a: np.ndarray) -> np.ndarray:
    """A (N, 6, 10) with [f; n] = A θ for a body of spatial velocity v = [u; ω] and
    acceleration a = [a_l; α] in its frame: f = m (a_l + ω × u) + (α× + ω×ω×) m c,
    n = m c × (a_l + ω × u) + I α + ω × I ω (I about the origin, θ in pinocchio's order)."""
    u, w, linear, alpha = v[:, :3], v[:, 3:], a[:, :3], a[:, 3:]
    drift = linear + np.cross(w, u)
    out = np.zeros((len(v), 6, 10))
    out[:, :3, 0] = drift
    out[:, :3, 1:4] = skew(alpha) + skew(w) @ skew(w)
    out[:, 3:, 1:4] = -skew(drift)
    out[:, 3:, 4:] = _inertia_map(alpha) + skew(w) @ _inertia_map(w)
    return out


def _inertia_map(w: np.ndarray) -> np.ndarray:
    """L (N, 3, 6) with I w = L (I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)."""
    x, y, z, zero = w[:, 0], w[:, 1], w[:, 2], np.zeros(len(w))
    return np.stack([np.stack([x, y, zero, z, zero, zero], -1), np.stack([zero, x, y, zero, z, zero], -1),
                     np.stack([zero, zero, zero, x, y, z], -1)], axis=1)


def _bodies(model: RobotModel):
    """(frame, mass, centre of mass (3,), inertia about it (3, 3)), link frame, per body."""
    if model.floating_base:
        yield model.base_link, model.base_mass, model.base_com, model.base_inertia
    yield from zip(model.link_names, model.masses, model.coms, model.inertias)


def _spatial_inertia(mass: float, com: np.ndarray, inertia: np.ndarray, T: np.ndarray) -> np.ndarray:
    """(N, 6, 6) at the world origin, [linear; angular]: [[m 1, −m [c]×], [m [c]×,
    R I_c Rᵀ − m [c]× [c]×]] with c = R com + p the world centre of mass."""
    R, p = T[:, :3, :3], T[:, :3, 3]
    c = skew(np.einsum("nij,j->ni", R, com) + p)
    out = np.empty((len(T), 6, 6))
    out[:, :3, :3] = mass * np.eye(3)
    out[:, :3, 3:] = -mass * c
    out[:, 3:, :3] = mass * c
    out[:, 3:, 3:] = R @ inertia @ np.swapaxes(R, 1, 2) - mass * c @ c
    return out


def _motion_cross(v: np.ndarray) -> np.ndarray:
    """v× (N, 6, 6) for v = [u; ω]: [[ω×, u×], [0, ω×]]."""
    out = np.zeros((len(v), 6, 6))
    u, w = skew(v[:, :3]), skew(v[:, 3:])
    out[:, :3, :3] = out[:, 3:, 3:] = w
    out[:, :3, 3:] = u
    return out


def _force_cross(v: np.ndarray) -> np.ndarray:
    """v×* = −(v×)ᵀ: [[ω×, 0], [u×, ω×]]."""
    return -np.swapaxes(_motion_cross(v), 1, 2)


def _bar(f: np.ndarray) -> np.ndarray:
    """f ×̄ (N, 6, 6) for f = [f; n], the map v ↦ v ×* f: [[0, −f×], [−f×, −n×]]."""
    out = np.zeros((len(f), 6, 6))
    force, moment = skew(f[:, :3]), skew(f[:, 3:])
    out[:, :3, 3:] = out[:, 3:, :3] = -force
    out[:, 3:, 3:] = -moment
    return out
