"""pybullet's coordinates of a floating base and ours: :class:`PybulletBase`, from the
measurements that :mod:`dyn_plugin.backends.pybullet_backend`'s docstring records (the base
at its inertial frame C, angular-first velocities in C, linear-first forces, pybullet's
stepping of the centre of mass).  Used by the pybullet backend and the drop-in's bodies
(:mod:`dyn_plugin.pybullet_bodies`)."""

from __future__ import annotations

import numpy as np

from .. import floating
from ..joints import quaternion_product
from ..kinematics import skew


def _rotate(R: np.ndarray, x: np.ndarray) -> np.ndarray:
    """R x for rotations (N, 3, 3) and vectors (N, 3)."""
    return np.einsum("nij,nj->ni", R, x)


def _conjugate(quaternion: np.ndarray) -> np.ndarray:
    return quaternion * np.array([-1.0, -1.0, -1.0, 1.0])


class PybulletBase:
    """pybullet's coordinates of a floating base (see the module docstring) and ours.

    ``com`` c (3,) and ``rotation`` R_i (3, 3): the base's inertial frame C in the URDF
    base frame, ``getDynamicsInfo(body, -1)[3:5]``.  Every method takes batches (N, ·)
    whose joint entries (after the base's) pass through unchanged, in whatever order the
    caller keeps them.  Velocities: v = [v_o, ω, q̇] (ours) and u = [ω_C, v_C, q̇]
    (pybullet's, ``T`` below); forces: ours [f, m, τ] at the base origin, base frame,
    and pybullet's inverse-dynamics answer [f_C, m_C, τ] at c in C.
    """

    def __init__(self, com, quaternion):
        self.com = np.array(com, dtype=float)
        self.quaternion = np.array(quaternion, dtype=float)
        self.rotation = floating.base_rotations(np.concatenate([np.zeros(3), self.quaternion])[None])[0]
        Rt, C = self.rotation.T, skew(self.com)
        self.T = np.block([[np.zeros((3, 3)), Rt], [Rt, -Rt @ C]])                   # u = T v
        self.S = np.block([[C @ self.rotation, self.rotation], [self.rotation, np.zeros((3, 3))]])  # v = S u

    @classmethod
    def of_body(cls, pybullet, body: int, client: int) -> "PybulletBase":
        info = pybullet.getDynamicsInfo(body, -1, physicsClientId=client)
        return cls(info[3], info[4])

    # -- velocities, accelerations, forces, mass matrices ------------------------------------

    def velocity(self, v: np.ndarray) -> np.ndarray:
        """u (N, 6 + n) of our v (N, 6 + n)."""
        return np.concatenate([v[:, :6] @ self.T.T, v[:, 6:]], axis=1)

    def velocity_from(self, u: np.ndarray) -> np.ndarray:
        return np.concatenate([u[:, :6] @ self.S.T, u[:, 6:]], axis=1)

    def _classical(self, v: np.ndarray) -> np.ndarray:
        """pybullet's u̇ − T a: the velocity products in the centre of mass's classical
        acceleration, R_iᵀ (ω × v_o + ω × (ω × c)), on the base's linear entries."""
        w = v[:, 3:6]
        out = np.zeros_like(v)
        out[:, 3:6] = (np.cross(w, v[:, 0:3]) + np.cross(w, np.cross(w, self.com))) @ self.rotation
        return out

    def acceleration(self, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """pybullet's u̇ (N, 6 + n) of our acceleration a at velocity v."""
        return self.velocity(a) + self._classical(v)

    def acceleration_from(self, v: np.ndarray, du: np.ndarray) -> np.ndarray:
        return self.velocity_from(du - self._classical(v))

    def force(self, tau: np.ndarray) -> np.ndarray:
        """pybullet's inverse-dynamics answer [f_C, m_C, τ] (N, 6 + n) of our τ: the
        generalized force of u (Sᵀ τ, ordered as u: moment first), base entries swapped."""
        dual = tau[:, :6] @ self.S
        return np.concatenate([dual[:, 3:6], dual[:, 0:3], tau[:, 6:]], axis=1)

    def force_from(self, tau_pb: np.ndarray) -> np.ndarray:
        dual = np.concatenate([tau_pb[:, 3:6], tau_pb[:, 0:3]], axis=1)
        return np.concatenate([dual @ self.T, tau_pb[:, 6:]], axis=1)

    def _congruence(self, M: np.ndarray, A: np.ndarray) -> np.ndarray:
        full = np.eye(M.shape[-1])
        full[:6, :6] = A
        return np.swapaxes(full, -1, -2) @ M @ full

    def mass_matrix(self, M: np.ndarray) -> np.ndarray:
        """pybullet's M (N, 6 + n, 6 + n) (in u) of ours: Sᵀ M S."""
        return self._congruence(M, self.S)

    def mass_matrix_from(self, M_pb: np.ndarray) -> np.ndarray:
        """Ours of pybullet's: Tᵀ M_pb T."""
        return self._congruence(M_pb, self.T)

    # -- poses and world-frame velocities (what pybullet's get/reset functions hold) -----------

    def pose(self, q: np.ndarray) -> tuple:
        """C's position p_c (N, 3) and orientation quaternion (N, 4) (x, y, z, w) of our
        configurations q (N, 7 + n)."""
        R = floating.base_rotations(q)
        return q[:, 0:3] + _rotate(R, np.broadcast_to(self.com, (len(q), 3))), \
            quaternion_product(q[:, 3:7], np.broadcast_to(self.quaternion, (len(q), 4)))

    def configuration_from(self, position, quaternion, joints, near=None) -> np.ndarray:
        """Our q (N, 7 + n) of C's pose (N, 3), (N, 4) and the joints (N, n); with ``near``
        (N, 4), each quaternion's sign is the one closer to it (q and −q are one rotation)."""
        base = quaternion_product(np.asarray(quaternion, dtype=float),
                                            np.broadcast_to(_conjugate(self.quaternion), (len(joints), 4)))
        base /= np.linalg.norm(base, axis=1, keepdims=True)
        if near is not None:
            base *= np.where(np.sum(base * near, axis=1, keepdims=True) < 0, -1.0, 1.0)
        q = np.concatenate([np.zeros((len(base), 3)), base, joints], axis=1)
        q[:, 0:3] = np.asarray(position, dtype=float) - _rotate(floating.base_rotations(q),
                                                               np.broadcast_to(self.com, (len(q), 3)))
        return q

    def world_velocity(self, q: np.ndarray, v: np.ndarray) -> tuple:
        """(v_c, ω) in the world (N, 3) each, as ``getBaseVelocity`` gives them."""
        R, w = floating.base_rotations(q), v[:, 3:6]
        return _rotate(R, v[:, 0:3] + np.cross(w, self.com)), _rotate(R, w)

    def velocity_from_world(self, q: np.ndarray, linear, angular, joint_rates) -> np.ndarray:
        """Our v (N, 6 + n) of ``getBaseVelocity``'s (linear, angular) at configurations q."""
        R = floating.base_rotations(q)
        w = np.einsum("nji,nj->ni", R, angular)
        return np.concatenate([np.einsum("nji,nj->ni", R, linear) - np.cross(w, self.com), w, joint_rates], axis=1)

    def gravity(self, q: np.ndarray, gravity: np.ndarray) -> np.ndarray:
        """The world's gravity (3,) in C (N, 3) at configurations q: (R R_i)ᵀ g."""
        return np.einsum("nji,j->ni", floating.base_rotations(q), gravity) @ self.rotation

    def bullet_step(self, q: np.ndarray, v: np.ndarray, a: np.ndarray, dt: float) -> tuple:
        """pybullet's time step in our coordinates, for the acceleration a (ours, N, 6 + n)
        at (q, v): btMultiBody's semi-implicit Euler on the world velocities of the base's
        centre of mass and angular velocity (p̈_c and ω̇ in the world, joints q̈), then
        p_c⁺ = p_c + dt v_c⁺ and the orientation turned by exp(dt ω⁺) (world axis; Bullet's
        ANGULAR_MOTION_THRESHOLD clamp, |ω| dt > π/4, is not reproduced).  Returns (q⁺, v⁺)."""
        R, w = floating.base_rotations(q), v[:, 3:6]
        linear, angular = self.world_velocity(q, v)
        classical = a[:, 0:3] + np.cross(a[:, 3:6], self.com) + np.cross(w, v[:, 0:3]) \
            + np.cross(w, np.cross(w, self.com))
        linear = linear + dt * _rotate(R, classical)
        angular = angular + dt * _rotate(R, a[:, 3:6])
        joint_rates = v[:, 6:] + dt * a[:, 6:]
        position, quaternion = self.pose(q)
        theta = np.linalg.norm(angular, axis=1, keepdims=True) * dt
        half_sinc = np.where(theta < 1e-8, 0.5 * dt, np.sin(theta / 2) / np.where(theta > 0, theta, 1.0) * dt)
        turn = np.concatenate([half_sinc * angular, np.cos(theta / 2)], axis=1)
        quaternion = quaternion_product(turn, quaternion)
        quaternion /= np.linalg.norm(quaternion, axis=1, keepdims=True)
        q_next = self.configuration_from(position + dt * linear, quaternion, q[:, 7:] + dt * joint_rates,
                                         near=q[:, 3:7])
        return q_next, self.velocity_from_world(q_next, linear, angular, joint_rates)

    def acceleration_of_step(self, q, v, q_next, v_next, dt: float) -> np.ndarray:
        """The acceleration a (ours, N, 6 + n) that :meth:`bullet_step` turned (q, v) into
        (q⁺, v⁺) with: pybullet's one-step acceleration in our coordinates (its
        (v⁺ − v)/dt differs from a by O(dt) on the base's linear entries, the velocity
        being updated in the world at the centre of mass)."""
        R, w = floating.base_rotations(q), v[:, 3:6]
        linear, angular = self.world_velocity(q, v)
        linear_next, angular_next = self.world_velocity(q_next, v_next)
        alpha = np.einsum("nji,nj->ni", R, angular_next - angular) / dt
        classical = np.einsum("nji,nj->ni", R, linear_next - linear) / dt
        a_lin = classical - np.cross(alpha, self.com) - np.cross(w, v[:, 0:3]) - np.cross(w, np.cross(w, self.com))
        return np.concatenate([a_lin, alpha, (v_next[:, 6:] - v[:, 6:]) / dt], axis=1)
