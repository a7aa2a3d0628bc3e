"""Rotations, homogeneous transforms and joint motion: the one implementation every
algorithm shares.

Conventions
-----------
* A transform ``T`` (4x4) or pair ``(R, p)`` maps coordinates in a child frame to its
  parent: ``x_parent = R @ x_child + p``.
* URDF ``rpy`` is fixed-axis roll-pitch-yaw: ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``.
* Joint motion is expressed in the joint frame: a revolute joint rotates by ``q`` about
  its unit axis, a prismatic joint translates by ``q`` along it.
* Batched helpers take leading batch dimensions ``(...)`` and broadcast.
"""

from __future__ import annotations

import numpy as np

REVOLUTE = "revolute"
PRISMATIC = "prismatic"


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrix ``[v]x`` with ``skew(v) @ w == cross(v, w)``; shape (..., 3, 3).
    Numbers become floats; an object array (exact numbers, symbols) keeps its entries."""
    v = np.asarray(v)
    v = v if v.dtype == object else v.astype(float)
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    zero = np.zeros_like(x)
    return np.stack(
        [np.stack([zero, -z, y], -1), np.stack([z, zero, -x], -1), np.stack([-y, x, zero], -1)],
        axis=-2,
    )


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product over the last axis (broadcasting), several times faster than
    ``np.cross`` on the small arrays of a recursion."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def rot_x(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def matrix_to_rpy(R: np.ndarray) -> np.ndarray:
    """URDF roll-pitch-yaw of ``R = Rz(yaw) Ry(pitch) Rx(roll)`` (pitch in [-pi/2, pi/2];
    roll = 0 at gimbal lock)."""
    R = np.asarray(R, dtype=float)
    pitch = np.arctan2(-R[2, 0], np.hypot(R[0, 0], R[1, 0]))
    if np.hypot(R[0, 0], R[1, 0]) < 1e-12:  # gimbal lock: put all of the z rotation in yaw
        return np.array([0.0, pitch, np.arctan2(-R[0, 1], R[1, 1])])
    return np.array([np.arctan2(R[2, 1], R[2, 2]), pitch, np.arctan2(R[1, 0], R[0, 0])])


def make_transform(R: np.ndarray, p) -> np.ndarray:
    """4x4 homogeneous transform from a rotation and a translation."""
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


def axis_rotation(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotation by ``angle`` (shape (...)) about the unit ``axis`` (3,), Rodrigues' formula.

    Returns shape (..., 3, 3).
    """
    angle = np.asarray(angle, dtype=float)
    K = skew(axis)
    s = np.sin(angle)[..., None, None]
    c = np.cos(angle)[..., None, None]
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def rotation_from_z(axis: np.ndarray) -> np.ndarray:
    """A rotation R with R ẑ = axis (a unit 3-vector); (3, 3).

    The columns are an orthonormal basis completed from the axis a.  With s = ±1 the sign
    of a_z (+1 for a_z = 0) and k = 1 / (s + a_z), a denominator never below 1:

        R = [[1 − s k a_x²,  −k a_x a_y,      a_x],
             [−s k a_x a_y,  s − k a_y²,      a_y],
             [−s a_x,        −a_y,            a_z]]

    For a_z ≥ 0 this is the smallest rotation taking ẑ onto a (Rodrigues' formula), the
    identity for ẑ; for a_z < 0 it is the smallest rotation onto a composed with a half
    turn about x, diag(1, −1, −1) for −ẑ.  No branch divides by 1 + a_z, so every axis on
    the sphere, −ẑ's neighbourhood included, gives R to machine precision.  The same
    formula on exact numbers (sympy rationals) gives an exactly orthogonal R.
    """
    x, y, z = (v if isinstance(v, float) else _number(v) for v in axis)
    s = 1 if z >= 0 else -1
    k = 1 / (s + z)
    return np.array([[1 - s * k * x * x, -k * x * y, x],
                     [-s * k * x * y, s - k * y * y, y],
                     [-s * x, -y, z]])


def _number(v):
    """A float for numpy's numbers; any other number type (an exact rational, a symbol)
    unchanged, so that rotation_from_z of an exactly unit axis is exactly orthogonal."""
    return float(v) if isinstance(v, (int, np.number)) else v


def joint_motion(joint_type: str, axis: np.ndarray, q: np.ndarray):
    """Motion of a joint frame by its coordinate ``q`` (shape (...)).

    Returns ``(R, p)`` of shapes (..., 3, 3) and (..., 3): the moved frame in the joint's
    rest frame.
    """
    q = np.asarray(q, dtype=float)
    if joint_type == REVOLUTE:
        return axis_rotation(axis, q), np.zeros(q.shape + (3,))
    return np.broadcast_to(np.eye(3), q.shape + (3, 3)), q[..., None] * axis


def link_placements(model, q: np.ndarray):
    """Placement of each link relative to its parent link at configuration ``q``.

    ``q`` has shape (N, n).  Returns ``(R, p)`` with shapes (N, n, 3, 3) and (N, n, 3):
    ``x_parent = R[:, i] @ x_i + p[:, i]`` for link i (the child of joint i).
    """
    model.require_fixed_joint_space("link_placements")
    N, n = q.shape
    R = np.empty((N, n, 3, 3))
    p = np.empty((N, n, 3))
    for i in range(n):
        Rj, pj = joint_motion(model.joint_types[i], model.axes[i], q[:, i])
        R0, p0 = model.joint_rotations[i], model.joint_positions[i]
        R[:, i] = R0 @ Rj
        p[:, i] = p0 + pj @ R0.T
    return R, p


def forward_kinematics(model, q: np.ndarray) -> np.ndarray:
    """World (base) pose of every link, shape (N, n, 4, 4), for ``q`` of shape (N, n)."""
    R, p = link_placements(model, q)
    N, n = q.shape
    T = np.zeros((N, n, 4, 4))
    T[..., 3, 3] = 1.0
    for i in range(n):
        parent = model.parents[i]
        if parent < 0:
            T[:, i, :3, :3] = R[:, i]
            T[:, i, :3, 3] = p[:, i]
        else:
            T[:, i, :3, :3] = T[:, parent, :3, :3] @ R[:, i]
            T[:, i, :3, 3] = T[:, parent, :3, 3] + np.einsum("nij,nj->ni", T[:, parent, :3, :3], p[:, i])
    return T


def parallel_axis(mass, offset) -> np.ndarray:
    """Inertia of point masses ``mass`` (...) at ``offset`` (..., 3) about the origin
    (Steiner term), (..., 3, 3): m (|c|² 1 − c cᵀ) = m [c]× [c]×ᵀ.

    Formed as [c]× [c]×ᵀ, whose diagonal is the sum of the other two squares (c_y² + c_z²,
    ...): |c|² − c_x² would cancel to rounding noise when c lies along x (a 1 kg link 1 m
    out along an axis tilted 1e-9 has 1e-18 kg·m² about it, not 1e-16 of noise)."""
    c = skew(offset)
    mass = np.asarray(mass)
    mass = mass if mass.dtype == object else mass.astype(float)
    return mass[..., None, None] * (c @ np.swapaxes(c, -1, -2))


class BodySum:
    """Mass, first moment and inertia about the body origin, accumulated over the links
    merged into one rigid body (fixed joints in the URDF reader, held joints in
    :mod:`dyn_plugin.locking`): exact sums, whatever the order."""

    def __init__(self):
        self.mass = 0.0
        self.first_moment = np.zeros(3)
        self.inertia_at_origin = np.zeros((3, 3))

    def add(self, mass: float, com: np.ndarray, inertia_com: np.ndarray) -> None:
        self.mass += mass
        self.first_moment += mass * com
        self.inertia_at_origin += inertia_com + parallel_axis(mass, com)

    def com_and_inertia(self):
        """Centre of mass and inertia about it.  A massless body (a rotor-like link of a
        DH-derived model) has no centre of mass; its rotational inertia is kept, placed at
        the body origin (with no mass, the parallel-axis terms of every merged link vanish,
        so the inertia about any point is the same)."""
        if self.mass <= 0:
            return np.zeros(3), self.inertia_at_origin.copy()
        com = self.first_moment / self.mass
        return com, self.inertia_at_origin - parallel_axis(self.mass, com)
