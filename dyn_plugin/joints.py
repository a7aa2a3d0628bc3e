"""Joint types as data: what each kind of joint is, written once for every algorithm.

A joint of the tree moves its child link relative to its parent; its configuration has
``nq`` numbers and its velocity ``nv``.  Besides the one-degree-of-freedom revolute
(continuous too) and prismatic joints, three multi-degree-of-freedom joints, with
pinocchio's conventions (``JointModelSpherical``, ``JointModelPlanar``,
``JointModelFreeFlyer``; velocities in the child frame, motion subspace S constant there
and no velocity-product term c_J):

=========  ==  ==  ===========================================  =====================================
kind       nq  nv  configuration                                velocity (child frame)
=========  ==  ==  ===========================================  =====================================
spherical   4   3  unit quaternion (x, y, z, w), as pinocchio    angular ω (3)
planar      3   3  x, y (m) in the joint frame's x-y plane, θ   linear v_x, v_y (2), angular ω_z
                   (rad) about its z axis: the *angle* form      (pinocchio's nq is 4: cos θ, sin θ;
                   (as for a continuous joint)                   converted at the pinocchio boundary)
floating    7   6  position (3, m) and unit quaternion (x, y,    linear v (3) of the child origin,
                   z, w): URDF ``floating``, anywhere            angular ω (3)
=========  ==  ==  ===========================================  =====================================

The expanded chain
------------------
Every recursion of this package is written for one-degree-of-freedom joints.  A
multi-degree-of-freedom joint is, at any one state, exactly a short chain of them
(:func:`dyn_plugin.joint_groups.expanded_chain`): *pose* joints (revolute or prismatic,
massless, never moving: their values place the child, :func:`pose_values`) followed by
*motion* joints at zero along the columns of S (:data:`KINDS`' ``motion``; the last one
carries the child link).  At zero, the motion joints' rates are the joint's velocity v
itself, and their accelerations are a + d(v) (:func:`velocity_offset`), d the chain's own
velocity products, as for the free-flyer chain of a floating base
(:mod:`dyn_plugin.floating`).  The pose joints are Z-Y-X rotations (and x, y, z
translations); their rates being zero, the Euler angles' singularity never enters.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .errors import InputError
from .kinematics import PRISMATIC, REVOLUTE

SPHERICAL, PLANAR, FLOATING = "spherical", "planar", "floating"
MULTI_DOF = (SPHERICAL, PLANAR, FLOATING)
UNIT_TOLERANCE = 1e-6               # |‖quaternion‖ − 1| normalised silently; more is an error

_X, _Y, _Z = np.eye(3)


@dataclasses.dataclass(frozen=True)
class JointKind:
    """One kind of joint.  ``q_names``/``v_names``: suffixes of its entries of q and v;
    ``pose``/``motion``: the one-degree-of-freedom joints (type, unit axis in their frame)
    of its expanded chain (see the module docstring); ``neutral``: pinocchio's neutral
    configuration."""

    name: str
    q_names: tuple
    v_names: tuple
    pose: tuple
    motion: tuple
    neutral: tuple

    @property
    def nq(self) -> int:
        return len(self.q_names)

    @property
    def nv(self) -> int:
        return len(self.v_names)


_ZYX = ((REVOLUTE, _Z), (REVOLUTE, _Y), (REVOLUTE, _X))
_XYZ_SLIDE = ((PRISMATIC, _X), (PRISMATIC, _Y), (PRISMATIC, _Z))
_XYZ_TURN = ((REVOLUTE, _X), (REVOLUTE, _Y), (REVOLUTE, _Z))

KINDS = {
    REVOLUTE: JointKind(REVOLUTE, ("",), ("",), (), ((REVOLUTE, _Z),), (0.0,)),
    PRISMATIC: JointKind(PRISMATIC, ("",), ("",), (), ((PRISMATIC, _Z),), (0.0,)),
    SPHERICAL: JointKind(SPHERICAL, (".qx", ".qy", ".qz", ".qw"), (".wx", ".wy", ".wz"), _ZYX, _XYZ_TURN,
                         (0.0, 0.0, 0.0, 1.0)),
    PLANAR: JointKind(PLANAR, (".x", ".y", ".theta"), (".vx", ".vy", ".wz"),
                      ((PRISMATIC, _X), (PRISMATIC, _Y), (REVOLUTE, _Z)),
                      ((PRISMATIC, _X), (PRISMATIC, _Y), (REVOLUTE, _Z)), (0.0, 0.0, 0.0)),
    FLOATING: JointKind(FLOATING, (".x", ".y", ".z", ".qx", ".qy", ".qz", ".qw"),
                        (".vx", ".vy", ".vz", ".wx", ".wy", ".wz"), _XYZ_SLIDE + _ZYX, _XYZ_SLIDE + _XYZ_TURN,
                        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)),
}
"""Every joint kind by name (revolute stands for continuous too)."""


def quaternion_index(kind: str):
    """The slice of a joint's configuration holding its quaternion, or None."""
    return {SPHERICAL: slice(0, 4), FLOATING: slice(3, 7)}.get(kind)


# -- rotations ---------------------------------------------------------------------------------

def quaternion_matrix(quaternion: np.ndarray) -> np.ndarray:
    """R (N, 3, 3) of unit quaternions (N, 4) stored (x, y, z, w)."""
    x, y, z, w = np.moveaxis(quaternion, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], axis=-1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], axis=-1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], axis=-1),
    ], axis=-2)


def quaternion_product(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    """p ⊗ r for quaternions (N, 4) stored (x, y, z, w)."""
    pv, pw, rv, rw = p[:, :3], p[:, 3:], r[:, :3], r[:, 3:]
    return np.concatenate([pw * rv + rw * pv + np.cross(pv, rv), pw * rw - np.sum(pv * rv, axis=1, keepdims=True)],
                          axis=1)


def zyx_angles(R: np.ndarray) -> np.ndarray:
    """(a, b, c) (N, 3) with R = Rz(a) Ry(b) Rx(c), for rotations R (N, 3, 3).

    b and c are read from R's last row; a from R Rx(c)ᵀ Ry(b)ᵀ, a rotation about z up to
    round-off.  Near b = ±π/2, where c is ill-determined, the error in c is a rotation about
    an axis that Ry(b) turns onto z, and a absorbs it: R is rebuilt to round-off for every
    rotation (``tests/test_joints.py``)."""
    b = np.arctan2(-R[:, 2, 0], np.hypot(R[:, 2, 1], R[:, 2, 2]))
    c = np.arctan2(R[:, 2, 1], R[:, 2, 2])
    cb, sb, cc, sc = np.cos(b), np.sin(b), np.cos(c), np.sin(c)
    # Rz(a)'s first column, R Rx(c)ᵀ Ry(b)ᵀ x̂ = cb R x̂ + sb sc R ŷ + sb cc R ẑ: its x and y rows
    m00 = cb * R[:, 0, 0] + sb * (sc * R[:, 0, 1] + cc * R[:, 0, 2])
    m10 = cb * R[:, 1, 0] + sb * (sc * R[:, 1, 1] + cc * R[:, 1, 2])
    return np.stack([np.arctan2(m10, m00), b, c], axis=1)


# -- configurations -----------------------------------------------------------------------------

def unit_configuration(kind: str, q: np.ndarray, joint: str) -> np.ndarray:
    """q (N, nq) of one joint with its quaternion (if any) normalised; an InputError naming
    the joint for a quaternion whose norm is not 1 within :data:`UNIT_TOLERANCE` (the same
    rule as for a floating base's, :func:`dyn_plugin.floating.unit_quaternions`)."""
    where = quaternion_index(kind)
    if where is None:
        return q
    return unit_quaternions(q, where, f"joint {joint!r} ({kind}) takes a unit quaternion (x, y, z, w) in q")


def unit_quaternions(q: np.ndarray, where: slice, what: str) -> np.ndarray:
    """A copy of q (N, ...) with the quaternions q[:, where] normalised, or an InputError
    ``"<what>; state k has norm ..."`` for the first whose norm is not 1 within
    :data:`UNIT_TOLERANCE` (a rotation is not defined by it)."""
    norms = np.linalg.norm(q[:, where], axis=1)
    bad = np.abs(norms - 1.0) > UNIT_TOLERANCE
    if np.any(bad):
        k = int(np.argmax(bad))
        raise InputError(f"{what}; state {k} has norm {norms[k]:.12g} (1 within {UNIT_TOLERANCE:g} is normalised)")
    q = q.copy()
    q[:, where] /= norms[:, None]
    return q


def pose_values(kind: str, q: np.ndarray) -> np.ndarray:
    """The values (N, len(pose)) of a joint's pose joints for its configurations q (N, nq)
    (unit quaternions): angles Z-Y-X of its rotation, after x, y, z of a floating joint's
    position; a planar joint's own x, y, θ."""
    if kind == SPHERICAL:
        return zyx_angles(quaternion_matrix(q))
    if kind == FLOATING:
        return np.concatenate([q[:, 0:3], zyx_angles(quaternion_matrix(q[:, 3:7]))], axis=1)
    return q.copy()                                  # planar, and nothing for a 1-dof joint (no pose joints)


def placement(kind: str, q: np.ndarray) -> tuple:
    """(R (N, 3, 3), p (N, 3)) of the child frame in the joint frame for a multi-dof
    joint's configurations q (N, nq) (unit quaternions)."""
    N = len(q)
    if kind == SPHERICAL:
        return quaternion_matrix(q), np.zeros((N, 3))
    if kind == FLOATING:
        return quaternion_matrix(q[:, 3:7]), q[:, 0:3].copy()
    c, s, zero, one = np.cos(q[:, 2]), np.sin(q[:, 2]), np.zeros(N), np.ones(N)
    R = np.stack([np.stack([c, -s, zero], -1), np.stack([s, c, zero], -1), np.stack([zero, zero, one], -1)], -2)
    return R, np.stack([q[:, 0], q[:, 1], zero], axis=1)


def velocity_offset(kind: str, v: np.ndarray) -> np.ndarray:
    """d (N, nv): the motion joints' accelerations are a + d for the joint's velocity v and
    acceleration a (N, nv).  With S_k the motion joints' unit axes (spatial, child frame)
    and the chain at zero, the chain's relative acceleration is Σ S_k q̈_k + Σ_{m<k}
    (S_m q̇_m) × (S_k q̇_k) (Featherstone 2008, eq. 3.38 summed along the chain), the joint's
    S a; so d = −Sᵀ Σ_{m<k} (S_m v_m) × (S_k v_k) (S's columns are orthonormal and the sum
    lies in their span)."""
    axes = motion_axes(kind)                                  # (nv, 6)
    motions = v[:, :, None] * axes[None]                      # (N, nv, 6): S_k v_k
    total = np.zeros((len(v), 6), dtype=np.result_type(v, float))
    before = np.zeros_like(total)
    for k in range(len(axes)):
        total += motion_cross(before, motions[:, k])
        before += motions[:, k]
    return -total @ axes.T


def motion_axes(kind: str) -> np.ndarray:
    """S (nv, 6): each motion joint's unit axis as a spatial motion (linear, angular)."""
    rows = []
    for joint_type, axis in KINDS[kind].motion:
        rows.append(np.concatenate([axis, np.zeros(3)]) if joint_type == PRISMATIC else
                    np.concatenate([np.zeros(3), axis]))
    return np.array(rows)


def motion_cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a × b of spatial motions (N, 6) ordered (linear, angular) (Featherstone's crm)."""
    return np.concatenate([np.cross(a[:, 3:], b[:, :3]) + np.cross(a[:, :3], b[:, 3:]),
                           np.cross(a[:, 3:], b[:, 3:])], axis=1)


# -- moving on the manifold -------------------------------------------------------------------

def integrate(kind: str, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """q ⊕ v (N, nq): the configuration reached from q (N, nq) with the constant velocity v
    (N, nv) for unit time, as pinocchio's ``integrate``: q + v for a one-dof joint; along the
    exponential of the body twist for the others (SO(3) spherical, SE(2) planar, SE(3)
    floating), quaternions renormalised; the sign of the quaternion is pinocchio's: q ⊗ exp(v)
    on SO(3), on SE(3) the one in q's hemisphere (a step turning less than π never flips)."""
    if kind in (REVOLUTE, PRISMATIC):
        return q + v
    if kind == SPHERICAL:
        return _normalised(quaternion_product(q, _exp_so3(v)))
    if kind == FLOATING:
        rotation, translation = exp_se3(v[:, 0:3], v[:, 3:6])
        out = q.copy()
        out[:, 0:3] += np.einsum("nij,nj->ni", quaternion_matrix(q[:, 3:7]), translation)
        out[:, 3:7] = _turned(q[:, 3:7], rotation)
        return out
    return _integrate_planar(q, v)


def _turned(quaternion: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """quaternion ⊗ rotation (N, 4), normalised, its sign that of a positive dot product with
    ``quaternion`` (pinocchio's ``integrate`` on SE(3))."""
    out = _normalised(quaternion_product(quaternion, rotation))
    return np.where(np.sum(out * quaternion, axis=1, keepdims=True) < 0, -out, out)


def _integrate_planar(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """SE(2): θ' = θ + ω; the position moves by R(θ) V(ω) (v_x, v_y) with
    V(ω) = [[sin ω/ω, −(1 − cos ω)/ω], [(1 − cos ω)/ω, sin ω/ω]] (series below 1e-4; 1 − cos ω as
    2 sin²(ω/2), free of cancellation)."""
    w = v[:, 2]
    small = np.abs(w) < 1e-4
    t = np.where(small, 1.0, w)
    s = np.where(small, 1 - w ** 2 / 6, np.sin(t) / t)
    c = np.where(small, w / 2 - w ** 3 / 24, 2 * np.sin(t / 2) ** 2 / t)
    local = np.stack([s * v[:, 0] - c * v[:, 1], c * v[:, 0] + s * v[:, 1]], axis=1)
    ct, st = np.cos(q[:, 2]), np.sin(q[:, 2])
    out = q.copy()
    out[:, 0] += ct * local[:, 0] - st * local[:, 1]
    out[:, 1] += st * local[:, 0] + ct * local[:, 1]
    out[:, 2] += w
    return out


def _normalised(quaternion: np.ndarray) -> np.ndarray:
    return quaternion / np.linalg.norm(quaternion, axis=1, keepdims=True)


def _exp_so3(angular: np.ndarray) -> np.ndarray:
    """exp of rotation vectors φ (N, 3) as quaternions (N, 4) (x, y, z, w)."""
    theta = np.linalg.norm(angular, axis=1)
    small = theta < 1e-4
    t = np.where(small, 1.0, theta)
    half_sinc = np.where(small, 0.5 - theta ** 2 / 48, np.sin(t / 2) / t)          # sin(θ/2)/θ
    return np.concatenate([half_sinc[:, None] * angular, np.cos(theta / 2)[:, None]], axis=1)


def exp_se3(linear: np.ndarray, angular: np.ndarray) -> tuple:
    """exp of the body twists (linear (N, 3), angular φ (N, 3)): the rotation as a
    quaternion (N, 4) (x, y, z, w) and the translation V(φ) linear, with
    V = 1 + (1 − cos θ)/θ² [φ]× + (θ − sin θ)/θ³ [φ]×² (θ = |φ|; series below 1e-4; 1 − cos θ
    as 2 sin²(θ/2), free of cancellation)."""
    theta = np.linalg.norm(angular, axis=1)
    small = theta < 1e-4
    t = np.where(small, 1.0, theta)
    a = np.where(small, 0.5 - theta ** 2 / 24, 2 * (np.sin(t / 2) / t) ** 2)
    b = np.where(small, 1 / 6 - theta ** 2 / 120, (t - np.sin(t)) / t ** 3)
    once = np.cross(angular, linear)
    translation = linear + a[:, None] * once + b[:, None] * np.cross(angular, once)
    return _exp_so3(angular), translation


def difference(kind: str, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """q₁ ⊖ q₀ (N, nv): the velocity v that :func:`integrate` takes from q₀ to q₁ (N, nq)
    in unit time, as pinocchio's ``difference``: q₁ − q₀ for a one-dof joint; for the others
    the logarithm of the relative displacement q₀⁻¹ q₁ in the child frame of q₀ (SO(3),
    SE(2), SE(3)), its rotation angle in [0, π] (so q₀ ⊕ (q₁ ⊖ q₀) = q₁ as a rotation; a
    planar angle is reached modulo 2π)."""
    if kind in (REVOLUTE, PRISMATIC):
        return q1 - q0
    if kind == SPHERICAL:
        return _log_so3(_relative_rotation(q0, q1))
    if kind == FLOATING:
        angular = _log_so3(_relative_rotation(q0[:, 3:7], q1[:, 3:7]))
        moved = np.einsum("nji,nj->ni", quaternion_matrix(q0[:, 3:7]), q1[:, 0:3] - q0[:, 0:3])
        return np.concatenate([_log_translation(angular, moved), angular], axis=1)
    return _difference_planar(q0, q1)


def _relative_rotation(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    """p⁻¹ ⊗ r (N, 4) of unit quaternions, sign chosen with w ≥ 0 (the shorter rotation)."""
    conjugate = np.concatenate([-p[:, :3], p[:, 3:]], axis=1)
    relative = quaternion_product(conjugate, r)
    return np.where(relative[:, 3:] < 0, -relative, relative)


def _log_so3(quaternion: np.ndarray) -> np.ndarray:
    """The rotation vector φ (N, 3) of unit quaternions (N, 4) with w ≥ 0: θ = 2 atan2(|u|, w)
    ∈ [0, π] about u/|u| (u the vector part), φ = (θ/|u|) u, θ/|u| = (2/w)(1 − |u|²/(3w²)) +
    O(|u|⁴) below |u| = 1e-4 (atan's series)."""
    u, w = quaternion[:, :3], quaternion[:, 3]
    s = np.linalg.norm(u, axis=1)
    small = s < 1e-4
    theta = 2 * np.arctan2(s, w)
    factor = np.where(small, 2 / np.where(small, w, 1.0) * (1 - s ** 2 / (3 * np.where(small, w, 1.0) ** 2)),
                      theta / np.where(small, 1.0, s))
    return factor[:, None] * u


def _log_translation(angular: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """ρ (N, 3) with V(φ) ρ = translation (V of :func:`exp_se3`): V⁻¹ = 1 − ½[φ]× + c [φ]×²,
    c = (1 − (θ/2) cot(θ/2))/θ² (series 1/12 + θ²/720 below θ = 1e-4), θ = |φ| ≤ π."""
    theta = np.linalg.norm(angular, axis=1)
    small = theta < 1e-4
    t = np.where(small, 1.0, theta)
    c = np.where(small, 1 / 12 + theta ** 2 / 720, (1 - 0.5 * t / np.tan(t / 2)) / t ** 2)
    once = np.cross(angular, translation)
    return translation - 0.5 * once + c[:, None] * np.cross(angular, once)


def _difference_planar(q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """SE(2)'s logarithm: ω the angle θ₁ − θ₀ wrapped into [−π, π]; (v_x, v_y) =
    V(ω)⁻¹ R(θ₀)ᵀ (p₁ − p₀) with V(ω)⁻¹ = [[α, ω/2], [−ω/2, α]], α = (ω/2) cot(ω/2)
    (series 1 − ω²/12 below 1e-4), V of :func:`_integrate_planar`."""
    w = np.arctan2(np.sin(q1[:, 2] - q0[:, 2]), np.cos(q1[:, 2] - q0[:, 2]))
    small = np.abs(w) < 1e-4
    t = np.where(small, 1.0, w)
    alpha = np.where(small, 1 - w ** 2 / 12, 0.5 * t / np.tan(t / 2))
    ct, st = np.cos(q0[:, 2]), np.sin(q0[:, 2])
    dx, dy = q1[:, 0] - q0[:, 0], q1[:, 1] - q0[:, 1]
    x, y = ct * dx + st * dy, -st * dx + ct * dy
    return np.stack([alpha * x + 0.5 * w * y, -0.5 * w * x + alpha * y, w], axis=1)


def chart_rate(kind: str, xi: np.ndarray, v: np.ndarray) -> np.ndarray:
    """ξ̇ (N, nv) for the configuration q₀ ⊕ ξ moving with the velocity v (N, nv): v for a
    one-dof joint; for the others, through the inverse of the exponential's differential,
    dexp⁻¹ = 1 + ½ ad_ξ + ad_ξ²/12 (+ terms of order |ξ|⁴ |v| that an RK4 step, with |ξ| of
    order dt, does not see; Iserles et al., Acta Numerica 2000, §2.3), with ad the Lie
    bracket of the joint's group (SO(3), SE(2), SE(3): :func:`motion_cross` restricted to S)."""
    if kind in (REVOLUTE, PRISMATIC):
        return v
    S = motion_axes(kind)
    bracket = lambda a, b: motion_cross(a @ S, b @ S) @ S.T            # noqa: E731
    once = bracket(xi, v)
    return v + 0.5 * once + bracket(xi, once) / 12.0


def random_configurations(kind: str, rng: np.random.Generator, count: int, lower: float, upper: float) -> np.ndarray:
    """``count`` configurations (count, nq): a one-dof joint's uniform in [lower, upper]; a
    quaternion uniform on SO(3) (normalised Gaussian); positions uniform in ±1 m; a planar
    angle uniform in ±π."""
    if kind in (REVOLUTE, PRISMATIC):
        return rng.uniform(lower, upper, (count, 1))
    if kind == PLANAR:
        return np.concatenate([rng.uniform(-1.0, 1.0, (count, 2)), rng.uniform(-np.pi, np.pi, (count, 1))], axis=1)
    quaternion = _normalised(rng.normal(size=(count, 4)))
    if kind == SPHERICAL:
        return quaternion
    return np.concatenate([rng.uniform(-1.0, 1.0, (count, 3)), quaternion], axis=1)
