"""pybullet's multi-DOF layout (``flags=1``) of a body's state, and ours.

pybullet's own multi-DOF clients (``pybullet_utils/pd_controller_stable.py``,
``PDControllerStableMultiDof.computePD``) build their arguments as follows, and
``calculateMassMatrix(body, positions, flags=1)`` / ``calculateInverseDynamics(body,
positions, velocities, accelerations, flags=1)`` take them so:

==========================  ===========================================  ================================
entries                     positions                                    velocities u (and u̇)
==========================  ===========================================  ================================
base: 7                     position (3, m) and orientation (x, y, z,    linear velocity of the centre of
                            w) of the base's centre-of-mass frame in     mass (3, m/s) and angular
                            the world (``getBasePositionAndOrientation``) velocity (3, rad/s), both in the
                                                                         world (``getBaseVelocity``), 0
each spherical joint: 4     the child's rotation as a unit quaternion    the child's angular velocity
                            (x, y, z, w) (``getJointStateMultiDof``)     relative to its parent, in the
                                                                         child's inertial frame (3), 0
each revolute or            the joint's position (rad or m)              its rate
prismatic joint: 1
==========================  ===========================================  ================================

joints in pybullet's joint-index order; fixed joints have no entries.  The padding entries
(the base's 7th velocity, each spherical joint's 4th) carry nothing: velocities are 0 there,
the mass matrix has 1 on their diagonal and 0 elsewhere in their rows and columns (pybullet
writes 1 on the diagonal where its matrix has 0: ``PhysicsServerCommandProcessor.cpp``,
``processCalculateMassMatrixCommand``), and the forces there are 0.  A fixed base keeps its
7 entries as padding (positions ignored, velocities 0).  u̇ is the time derivative of u
(the world-frame classical acceleration of the base's centre of mass and its angular
acceleration in the world; a spherical joint's relative angular acceleration in the child
frame).

With v = A(q) u our velocity (:mod:`dyn_plugin.floating`, :mod:`dyn_plugin.joints`), the
mass matrix is Aᵀ M A (so ½ uᵀ M_pb u is the body's kinetic energy), the inverse dynamics
Aᵀ τ(q, v, A u̇ + Ȧ u) (the generalized force whose power on u is τ's on v), and
forward dynamics its inverse.  pybullet's own ``flags=1`` inverse dynamics ignores the
accelerations passed (it solves at zero acceleration:
``processInverseDynamicsCommand``); ours takes them.
"""

from __future__ import annotations

import numpy as np

from . import floating
from .errors import InputError
from .joints import UNIT_TOLERANCE
from .kinematics import skew

BASE_ENTRIES = 7


class MultiDofLayout:
    """pybullet's flags=1 layout of one body (:class:`dyn_plugin.pybullet_bodies.BodyDynamics`).

    ``size``: the number of entries of positions, velocities and forces; ``padding``: the
    indices that carry nothing."""

    def __init__(self, bd):
        self.bd = bd
        model = bd.model
        self.entries = []             # (model joint, offset in the layout, kind)
        offset, padding = BASE_ENTRIES, list(range(BASE_ENTRIES) if bd.base is None else [6])
        for _, k in bd.moving:
            kind = model.joint_types[k]
            self.entries.append((k, offset, kind))
            if kind == "spherical":
                padding.append(offset + 3)
            offset += 4 if kind == "spherical" else 1
        self.size, self.padding = offset, np.array(padding, dtype=int)

    def _vector(self, values, label: str) -> np.ndarray:
        try:
            array = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{self.bd.label}: {label} must be {self.size} numbers, got {values!r}") from None
        if array.shape != (self.size,):
            raise InputError(f"{self.bd.label}: {label} in pybullet's multi-DOF layout (flags=1) must have length "
                             f"{self.size} (base 7, 4 per spherical joint, 1 per revolute or prismatic joint), got "
                             f"shape {array.shape}")
        if not np.all(np.isfinite(array)):
            raise InputError(f"{self.bd.label}: {label} has a non-finite entry (NaN or inf) at index "
                             f"{int(np.argmax(~np.isfinite(array)))}")
        return array

    def configuration(self, positions) -> np.ndarray:
        """Our q (1, nq) of pybullet's flags=1 positions; unit quaternions checked by joint."""
        x = self._vector(positions, "objPositions")
        bd, model = self.bd, self.bd.model
        joints = np.array(model.neutral()[BASE_ENTRIES:] if bd.base is not None else model.neutral())
        shift = BASE_ENTRIES if bd.base is not None else 0
        for k, offset, kind in self.entries:
            q_slice = model.joint_slices[k][0]
            width = q_slice.stop - q_slice.start
            value = x[offset:offset + width]
            if kind == "spherical" and abs(np.linalg.norm(value) - 1.0) > UNIT_TOLERANCE:
                raise InputError(f"{bd.label}: objPositions[{offset}:{offset + 4}], spherical joint "
                                 f"{model.joint_names[k]!r}, must be a unit quaternion (x, y, z, w); its norm "
                                 f"is {np.linalg.norm(value):.6g}")
            joints[q_slice.start - shift:q_slice.stop - shift] = value / np.linalg.norm(value) \
                if kind == "spherical" else value
        if bd.base is None:
            return joints[None]
        if abs(np.linalg.norm(x[3:7]) - 1.0) > UNIT_TOLERANCE:
            raise InputError(f"{bd.label}: objPositions[3:7], the base orientation, must be a unit quaternion "
                             f"(x, y, z, w); its norm is {np.linalg.norm(x[3:7]):.6g}")
        return bd.base.configuration_from(x[None, 0:3], x[None, 3:7], joints[None])

    def velocity_map(self, q: np.ndarray) -> np.ndarray:
        """A (nv, size) with v = A u at the configuration q (1, nq): on a floating base
        ω_b = Rᵀ ω and v_o = Rᵀ v_c + c × ω_b (R the base link's rotation, c its centre of
        mass in the base frame); identity on each joint's entries."""
        bd, model = self.bd, self.bd.model
        A = np.zeros((model.nv, self.size))
        if bd.base is not None:
            Rt = floating.base_rotations(q)[0].T
            A[0:3, 0:3], A[0:3, 3:6], A[3:6, 3:6] = Rt, skew(bd.base.com) @ Rt, Rt
        for k, offset, kind in self.entries:
            v_slice = model.joint_slices[k][1]
            A[v_slice, offset:offset + v_slice.stop - v_slice.start] = np.eye(v_slice.stop - v_slice.start)
        return A

    def velocity(self, q: np.ndarray, velocities, label: str = "objVelocities") -> tuple:
        """(v (1, nv), A) of pybullet's flags=1 velocities u at q; padding entries must be 0."""
        u = self._vector(velocities, label)
        self._check_padding(u, label)
        A = self.velocity_map(q)
        return (A @ u)[None], A

    def positions(self, q: np.ndarray) -> tuple:
        """pybullet's flags=1 positions (size,) of our q (1, nq), the inverse of
        :meth:`configuration`: the base's centre-of-mass pose (a fixed base: zeros), each
        joint's entries (a spherical one's quaternion, then 0)."""
        bd, out = self.bd, np.zeros(self.size)
        if bd.base is not None:
            position, quaternion = bd.base.pose(q)
            out[0:3], out[3:7] = position[0], quaternion[0]
        for k, offset, _ in self.entries:
            q_slice = self.bd.model.joint_slices[k][0]
            out[offset:offset + q_slice.stop - q_slice.start] = q[0, q_slice]
        return tuple(float(x) for x in out)

    def velocities(self, q: np.ndarray, v: np.ndarray) -> tuple:
        """pybullet's flags=1 velocities u (size,) of our v (1, nv) at q (1, nq), the inverse
        of :meth:`velocity`: the base's world velocities (``getBaseVelocity``), each joint's
        rates; 0 on the padding."""
        bd, out = self.bd, np.zeros(self.size)
        if bd.base is not None:
            linear, angular = bd.base.world_velocity(q, v)
            out[0:3], out[3:6] = linear[0], angular[0]
        for k, offset, _ in self.entries:
            v_slice = self.bd.model.joint_slices[k][1]
            out[offset:offset + v_slice.stop - v_slice.start] = v[0, v_slice]
        return tuple(float(x) for x in out)

    def velocity_map_rate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Ȧ (nv, size) at (q, v) (1, nq), (1, nv): d/dt Rᵀ = −[ω_b]× Rᵀ on a floating base's
        blocks of A; 0 elsewhere (the joints' blocks are constant)."""
        rate = np.zeros((self.bd.model.nv, self.size))
        if self.bd.base is not None:
            turn = -skew(v[0, 3:6]) @ floating.base_rotations(q)[0].T
            rate[0:3, 0:3], rate[0:3, 3:6], rate[3:6, 3:6] = turn, skew(self.bd.base.com) @ turn, turn
        return rate

    def _drift(self, v: np.ndarray) -> np.ndarray:
        """Ȧ u (1, nv) at v = A u: −ω_b × (Rᵀ v_c) on a floating base's linear entries
        (Rᵀ v_c = v_o + ω_b × c, the centre of mass's velocity in the base frame)."""
        drift = np.zeros_like(v)
        if self.bd.base is not None:
            w = v[0, 3:6]
            drift[0, 0:3] = -np.cross(w, v[0, 0:3] + np.cross(w, self.bd.base.com))
        return drift

    def acceleration(self, q: np.ndarray, v: np.ndarray, accelerations, A: np.ndarray) -> np.ndarray:
        """Our a (1, nv) = A u̇ + Ȧ u of pybullet's flags=1 accelerations u̇ at (q, v)."""
        du = self._vector(accelerations, "objAccelerations")
        self._check_padding(du, "objAccelerations")
        return (A @ du)[None] + self._drift(v)

    def acceleration_from(self, q: np.ndarray, v: np.ndarray, a: np.ndarray, A: np.ndarray) -> tuple:
        """pybullet's flags=1 u̇ (size,) of our a (1, nv): A u̇ = a − Ȧ u, 0 on the padding."""
        real = np.setdiff1d(np.arange(self.size), self.padding)
        du = np.zeros(self.size)
        du[real] = np.linalg.solve(A[:, real], (a - self._drift(v))[0])
        return tuple(float(x) for x in du)

    def force(self, tau: np.ndarray, A: np.ndarray) -> tuple:
        """pybullet's flags=1 forces Aᵀ τ (size,) of our τ (1, nv): 0 on the padding."""
        return tuple(float(x) for x in A.T @ tau[0])

    def force_from(self, forces, A: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Our τ (1, nv) of pybullet's flags=1 forces f with f = Aᵀ τ (A's columns of the
        real entries are independent: τ = A⁺ᵀ f restricted to them)."""
        f = self._vector(forces, "objTorques")
        self._check_padding(f, "objTorques")
        real = np.setdiff1d(np.arange(self.size), self.padding)
        return np.linalg.solve(A[:, real].T, f[real])[None]

    def mass_matrix(self, M: np.ndarray, A: np.ndarray) -> tuple:
        """pybullet's flags=1 mass matrix Aᵀ M A (size, size) with 1 on the padding's diagonal."""
        out = A.T @ M @ A
        out[self.padding, self.padding] = 1.0
        return tuple(tuple(float(x) for x in row) for row in out)

    def _check_padding(self, values: np.ndarray, label: str) -> None:
        bad = self.padding[values[self.padding] != 0]
        if len(bad):
            raise InputError(f"{self.bd.label}: {label}[{int(bad[0])}] is a padding entry of pybullet's multi-DOF "
                             f"layout (flags=1; a fixed base's 7 entries, a floating base's 7th, each spherical "
                             f"joint's 4th) and must be 0, got {values[bad[0]]!r}")
