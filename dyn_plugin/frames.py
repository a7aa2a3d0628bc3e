"""Frames: the placement, Jacobian, velocity, classical acceleration and J̇ of any frame
of a model (:attr:`RobotModel.frame_names`: every URDF link), batch-first, in numpy.

The one statement, in the world-aligned frame at the frame's origin p (pinocchio's
``LOCAL_WORLD_ALIGNED``): column k of the Jacobian J (6, nv), rows [linear; angular], is
the velocity the frame gets from unit rate of degree of freedom k (the geometric
Jacobian of Siciliano, Sciavicco, Villani & Oriolo 2009, eq. 3.30):

    revolute about the unit axis z through the point o:   [z × (p − o); z]
    prismatic along z:                                     [z; 0]

over the joints on the path from the root to the frame's body; every other column is 0.
Its time derivative J̇ differentiates each column with the axis fixed in its body,
ż = ω × z (ω: that body's angular velocity), and with ȯ the velocity of the axis point and
ṗ = J_lin q̇ the frame origin's (eq. 3.30 differentiated column by column):

    revolute:   [ż × (p − o) + z × (ṗ − ȯ); ż]        prismatic:   [ż; 0]

A floating base (pinocchio's free-flyer, :mod:`dyn_plugin.floating`) adds six columns:
its velocity v = (u, ω_b) is given in the base frame, so its axes are the base axes
R_b e_k, fixed in the base: prismatic along them for u, revolute about them through the
base origin for ω_b.  Mimic joints (:mod:`dyn_plugin.mimic`) are every joint's columns
mapped by the constant G: J = J_full G, J̇ = J̇_full G.  Spherical, planar and floating joints
are their chains of one-dof joints (:mod:`dyn_plugin.multi_dof`): J the chain's columns of
their motion joints, J̇ the same corrected (:func:`frame_jacobian_time_variation`).

The other references are maps of that one (pinocchio's ``ReferenceFrame``; the velocity
field of a rigid body, v_x = v_p + ω × (x − p), moves the reference point):

* ``"world"`` (``WORLD``): the spatial velocity at the world origin, [v_p − ω × p; ω] =
  [v_p + p × ω; ω], so J_world = [J_lin + p × J_ang; J_ang] and
  J̇_world = [J̇_lin + ṗ × J_ang + p × J̇_ang; J̇_ang];
* ``"local"`` (``LOCAL``): the components in the frame's own axes, Rᵀ [v_p; ω], so
  J_local = Rᵀ J and J̇_local = Rᵀ (J̇ − ω × J) (from Ṙ = [ω]× R).

The classical acceleration of the frame origin (pinocchio's
``getFrameClassicalAcceleration``) is [a_p; ω̇] = J q̈ + J̇ q̇ world-aligned, Rᵀ of it in
``"local"``, and in ``"world"`` the acceleration of the body point at the world origin,
[a_p − ω̇ × p − ω × (ω × p); ω̇] (the rigid body's acceleration field
a_x = a_p + ω̇ × (x − p) + ω × (ω × (x − p)) at x = 0).

Inputs are validated batches: q (N, nq) with unit base quaternions, q̇ and q̈ (N, nv)
(:meth:`dyn_plugin.backends.base.Backend.frame_jacobian` and its siblings validate them).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from . import floating, mimic, multi_dof
from .errors import InputError
from .kinematics import PRISMATIC, REVOLUTE, cross, forward_kinematics
from .model import RobotModel

REFERENCES = ("local_world_aligned", "world", "local")
"""pinocchio's ``LOCAL_WORLD_ALIGNED`` (the default here), ``WORLD`` and ``LOCAL``."""


def reference_name(reference) -> str:
    """One of :data:`REFERENCES` from that name in any case, or from pinocchio's
    ``ReferenceFrame`` value (whose ``.name`` is ``"WORLD"``...); an InputError otherwise."""
    name = getattr(reference, "name", reference)
    if isinstance(name, str) and name.lower() in REFERENCES:
        return name.lower()
    raise InputError(f"reference must be one of {', '.join(map(repr, REFERENCES))} (pinocchio's ReferenceFrame "
                     f"LOCAL_WORLD_ALIGNED, WORLD, LOCAL), got {reference!r}")


# -- the model-level API: validated batches in, batches out ------------------------------

def frame_placement(model: RobotModel, q: np.ndarray, frame: str) -> np.ndarray:
    """World placement (N, 4, 4) of ``frame`` at configurations q (N, nq); metres."""
    space = _space(model, q)
    _, R, p, _ = _frame_links(space.model, space.q, frame)
    T = np.zeros((len(q), 4, 4))
    T[:, :3, :3], T[:, :3, 3], T[:, 3, 3] = R, p, 1.0
    return T


def frame_jacobian(model: RobotModel, q: np.ndarray, frame: str, reference: str = "local_world_aligned") -> np.ndarray:
    """J (N, 6, nv): [linear velocity of the frame origin; angular velocity] = J q̇, in ``reference``."""
    space = _space(model, q)
    R, p, J, _ = _world_aligned(space.model, space.q, None, frame)
    return _jacobian_in(reference_name(reference), R, p, J) @ space.G


def frame_velocity(model: RobotModel, q: np.ndarray, qd: np.ndarray, frame: str,
                   reference: str = "local_world_aligned") -> np.ndarray:
    """[v; ω] (N, 6) of the frame (m/s, rad/s), in ``reference`` (``"world"``: v of the
    body point at the world origin)."""
    return (frame_jacobian(model, q, frame, reference) @ qd[:, :, None])[:, :, 0]


def frame_jacobian_time_variation(model: RobotModel, q: np.ndarray, qd: np.ndarray, frame: str,
                                  reference: str = "local_world_aligned") -> np.ndarray:
    """J̇ (N, 6, nv) = d/dt of :func:`frame_jacobian` in ``reference`` along the velocity q̇ (N, nv).

    For a joint of several degrees of freedom, the columns of its chain's motion joints turn
    with them where the joint's own stay fixed in its child frame: J̇ = J̇_chain − J_chain Ė
    on its columns (:meth:`dyn_plugin.multi_dof.Expansion.rate_changes`)."""
    space = _space(model, q)
    v = space.velocity(qd)
    reference = reference_name(reference)
    R, p, J, dJ = _world_aligned(space.model, space.q, v, frame)
    rate = _rate_in(reference, R, p, J, dJ, v) @ space.C
    if space.expansion is not None:
        J = _jacobian_in(reference, R, p, J)
        e, full_v = space.expansion, qd @ space.mimic_G.T
        for g, change in zip(e.groups, e.rate_changes(full_v)):
            rate[:, :, g.v] -= J[:, :, e.base[1] + g.motion] @ change
    return rate @ space.mimic_G


def frame_acceleration(model: RobotModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, frame: str,
                       reference: str = "local_world_aligned") -> np.ndarray:
    """Classical acceleration [a; ω̇] (N, 6) of the frame origin (m/s², rad/s²), in ``reference``
    (module docstring; pinocchio's ``getFrameClassicalAcceleration``)."""
    space = _space(model, q)
    v, a = space.velocity(qd), space.acceleration(qd, qdd)
    R, p, J, dJ = _world_aligned(space.model, space.q, v, frame)
    acc = np.einsum("nij,nj->ni", J, a) + np.einsum("nij,nj->ni", dJ, v)
    reference = reference_name(reference)
    if reference == "local":
        return _rotate_back(R, acc[:, :, None])[:, :, 0]
    if reference == "world":
        w, dw = np.einsum("nij,nj->ni", J[:, 3:], v), acc[:, 3:]
        acc[:, :3] -= cross(dw, p) + cross(w, cross(w, p))
    return acc


# -- the one statement ----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Space:
    """Where the one statement runs: ``model`` with one-dof, independent joints only, its
    configurations ``q``; ``mimic_G`` (nv_full, nv) maps the velocity to every joint's
    (:mod:`dyn_plugin.mimic`), ``C`` (nv_chain, nv_full) every joint's to the chain of joints
    of several degrees of freedom (:mod:`dyn_plugin.multi_dof`); ``G = C mimic_G``."""

    model: RobotModel
    q: np.ndarray
    mimic_G: np.ndarray
    C: np.ndarray
    expansion: object

    @property
    def G(self) -> np.ndarray:
        return self.C @ self.mimic_G

    def velocity(self, qd: np.ndarray) -> np.ndarray:
        return qd @ self.G.T

    def acceleration(self, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """The chain's q̈: mapped, plus the motion joints' d(v) (:meth:`~dyn_plugin.multi_dof.Expansion.acceleration`)."""
        if self.expansion is None:
            return qdd @ self.G.T
        return self.expansion.acceleration(qd @ self.mimic_G.T, qdd @ self.mimic_G.T)


def _space(model: RobotModel, q: np.ndarray) -> _Space:
    """The :class:`_Space` of a model at configurations q (N, nq); joint quaternions normalised."""
    full, qf, G = _full(model, q)
    if not full.multi_dof_indices:
        return _Space(full, qf, G, np.eye(full.nv), None)
    e = multi_dof.expansion(full)
    C = np.zeros((e.chain.nv, full.nv))
    C[e.columns, np.arange(full.nv)] = 1.0
    return _Space(e.chain, e.configuration(e.unit(qf)), G, C, e)


def _full(model: RobotModel, q: np.ndarray) -> tuple:
    """(model with every joint independent, its configurations (N, nq_full), G (nv_full, nv)):
    the model itself and the identity without mimic joints."""
    if not model.mimic:
        return model, q, np.eye(model.nv)
    return mimic.full_model(model), mimic.full_configuration(model, q), mimic.velocity_map(model)


@functools.lru_cache(maxsize=64)
def _fixed(model: RobotModel) -> RobotModel:
    """The model with its base fixed: the joints' kinematics relative to the base."""
    return model.with_floating_base(False)


def _base(model: RobotModel, q: np.ndarray) -> tuple:
    """The base's world rotation (N, 3, 3), position (N, 3) and the joints' q (N, n)."""
    if not model.floating_base:
        return np.broadcast_to(np.eye(3), (len(q), 3, 3)), np.zeros((len(q), 3)), q
    return floating.base_rotations(q), q[:, :3], q[:, floating.BASE_Q:]


def _links(model: RobotModel, q: np.ndarray, path: list) -> tuple:
    """World rotations (N, k, 3, 3) and origins (N, k, 3) of the links ``path`` (joint
    indices), and the base's rotation (N, 3, 3) and position (N, 3)."""
    base_R, base_p, joints = _base(model, q)
    T = forward_kinematics(_fixed(model), joints)[:, path]          # in the base frame
    R = np.einsum("nij,nkjl->nkil", base_R, T[..., :3, :3])
    return R, base_p[:, None] + np.einsum("nij,nkj->nki", base_R, T[..., :3, 3]), base_R, base_p


def _frame_links(model: RobotModel, q: np.ndarray, frame: str) -> tuple:
    """The joints from the root to ``frame``'s body (a list, root first), the frame's world
    rotation R (N, 3, 3) and origin p (N, 3), and :func:`_links` of that path (a model
    without mimic joints)."""
    body, Rf, pf = model.frame(frame)
    path = model.ancestors(body) if body >= 0 else []
    links = _links(model, q, path)
    R_links, origins, base_R, base_p = links
    R_body, p_body = (R_links[:, -1], origins[:, -1]) if path else (base_R, base_p)
    return path, R_body @ Rf, p_body + R_body @ pf, links


def _world_aligned(model: RobotModel, q: np.ndarray, qd, frame: str) -> tuple:
    """R (N, 3, 3), p (N, 3), J and, with velocities qd (N, nv), J̇ (N, 6, nv), world-aligned
    at the frame origin (module docstring), on a model without mimic joints."""
    path, R, p, links = _frame_links(model, q, frame)
    dofs = list(_dofs(model, qd, path, *links))
    J = np.zeros((len(q), 6, model.nv))
    for column, kind, z, o, _, _ in dofs:
        J[:, :, column] = _column(kind, z, o, p)
    if qd is None:
        return R, p, J, None
    p_dot = np.einsum("nij,nj->ni", J[:, :3], qd)
    dJ = np.zeros_like(J)
    for column, kind, z, o, z_dot, o_dot in dofs:
        dJ[:, :, column] = _column_rate(kind, z, o, z_dot, o_dot, p, p_dot)
    return R, p, J, dJ


def _dofs(model, qd, path, R_links, origins, base_R, base_p):
    """(column, kind, axis z (N, 3), axis point o (N, 3), ż, ȯ) of every degree of freedom
    moving the frame: the base's six (floating), then the joints of ``path``; ż and ȯ are
    None without velocities qd.  The recursion carries the angular velocity ω of the body
    reached so far and the velocity of its point at the last origin, moved to the next
    origin by v_x = v_p + ω × (x − p): ż = ω × z for an axis fixed in that body."""
    N = len(base_p)
    w, ref, v_ref = np.zeros((N, 3)), base_p, np.zeros((N, 3))
    first = 0
    if model.floating_base:
        first = floating.BASE_V
        if qd is not None:
            w, v_ref = np.einsum("nij,nj->ni", base_R, qd[:, 3:6]), np.einsum("nij,nj->ni", base_R, qd[:, 0:3])
        for k in range(6):
            z = base_R[:, :, k % 3]
            rates = (None, None) if qd is None else (cross(w, z), v_ref)
            yield (k, PRISMATIC if k < 3 else REVOLUTE, z, base_p) + rates
    for k, j in enumerate(path):
        z, o = R_links[:, k] @ model.axes[j], origins[:, k]
        if qd is None:
            yield first + j, model.joint_types[j], z, o, None, None
            continue
        v_o = v_ref + cross(w, o - ref)                            # the parent's point at o
        yield first + j, model.joint_types[j], z, o, cross(w, z), v_o
        rate = qd[:, first + j, None] * z
        w, ref, v_ref = (w + rate, o, v_o) if model.joint_types[j] == REVOLUTE else (w, o, v_o + rate)


def _column(kind: str, z: np.ndarray, o: np.ndarray, p: np.ndarray) -> np.ndarray:
    """(N, 6): [z × (p − o); z] for a revolute axis, [z; 0] for a prismatic one."""
    if kind == REVOLUTE:
        return np.concatenate([cross(z, p - o), z], axis=1)
    return np.concatenate([z, np.zeros_like(z)], axis=1)


def _column_rate(kind, z, o, z_dot, o_dot, p, p_dot) -> np.ndarray:
    """(N, 6): the time derivative of :func:`_column`."""
    if kind == REVOLUTE:
        return np.concatenate([cross(z_dot, p - o) + cross(z, p_dot - o_dot), z_dot], axis=1)
    return np.concatenate([z_dot, np.zeros_like(z)], axis=1)


# -- the references ------------------------------------------------------------------------

def _jacobian_in(reference: str, R: np.ndarray, p: np.ndarray, J: np.ndarray) -> np.ndarray:
    """World-aligned columns J (N, 6, k) at the frame origin p, in ``reference``."""
    if reference == "local":
        return _rotate_back(R, J)
    if reference == "world":
        J = J.copy()
        J[:, :3] += _cross_columns(p, J[:, 3:])
    return J


def _rate_in(reference: str, R, p, J, dJ, qd) -> np.ndarray:
    """J̇ (N, 6, nv) in ``reference`` from the world-aligned J and J̇ along q̇ (module docstring)."""
    if reference == "local":
        w = np.einsum("nij,nj->ni", J[:, 3:], qd)
        return _rotate_back(R, dJ - np.concatenate([_cross_columns(w, J[:, :3]), _cross_columns(w, J[:, 3:])], axis=1))
    if reference == "world":
        p_dot = np.einsum("nij,nj->ni", J[:, :3], qd)
        dJ = dJ.copy()
        dJ[:, :3] += _cross_columns(p_dot, J[:, 3:]) + _cross_columns(p, dJ[:, 3:])
    return dJ


def _cross_columns(a: np.ndarray, B: np.ndarray) -> np.ndarray:
    """a × each column of B: a (N, 3), B (N, 3, k) -> (N, 3, k)."""
    return np.swapaxes(cross(a[:, None, :], np.swapaxes(B, 1, 2)), 1, 2)


def _rotate_back(R: np.ndarray, M: np.ndarray) -> np.ndarray:
    """Rᵀ applied to both 3-row halves of M (N, 6, k): world-aligned to local components."""
    Rt = np.swapaxes(R, 1, 2)
    return np.concatenate([Rt @ M[:, :3], Rt @ M[:, 3:]], axis=1)
