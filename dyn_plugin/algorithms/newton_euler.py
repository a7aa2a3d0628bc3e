"""Recursive Newton-Euler inverse dynamics in link frames, on kinematic trees.

Follows Fu, Gonzalez & Lee, *Robotics*, Table 3.3 with the corrected moment equation
(3.3-57) (Luh, Walker & Paul 1980): every vector is expressed in its own link frame.
Our link frame is the joint frame (proximal, as URDF and Craig's modified DH), so the
joint axis is ``z`` of the child frame itself, as in Dhanaraj's Table 2.4.  On a tree
the backward pass sums the wrenches of all children of a link.

Gravity enters as a fictitious base acceleration ``v̇₀ = −g`` (Fu 3.3-46; Problem 3.13),
``g`` the model's (:meth:`~dyn_plugin.model.RobotModel.with_gravity`).  ``terms``
(:class:`~dyn_plugin.terms.Terms`) selects the parts of τ = M q̈ + C q̇ + g: a term left
out is computed as if its input (q̈, q̇ or g) were zero.

All functions take batches: ``q, qd, qdd`` of shape (N, n).
"""

from __future__ import annotations

import numpy as np

from ..kinematics import REVOLUTE, cross, link_placements
from ..terms import Terms, resolve, selected


def _rotate_into_child(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``Rᵀ v`` for a batch: parent-frame vectors (N, 3) into the child frame."""
    return np.einsum("nji,nj->ni", R, v)


def _rotate_into_parent(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``R v`` for a batch: child-frame vectors (N, 3) into the parent frame."""
    return np.einsum("nij,nj->ni", R, v)


def forward_pass(model, q, qd, qdd, terms=Terms.ALL):
    """Angular velocity ω, angular acceleration ω̇ and origin acceleration v̇ of every
    link in its own frame (Fu 3.3-50 to 3.3-52), each of shape (N, n, 3).

    Also returns the link placements ``(R, p)`` from :func:`link_placements`.
    """
    model, terms = resolve(model, terms)
    qd, qdd, gravity = selected(model, terms, qd, qdd)
    N, n = q.shape
    R, p = link_placements(model, q)
    w, wd, vd = (np.zeros((N, n, 3)) for _ in range(3))
    base_acc = np.broadcast_to(-np.asarray(gravity, dtype=float), (N, 3))
    zero = np.zeros((N, 3))
    for i in range(n):
        parent = model.parents[i]
        w_p, wd_p, vd_p = (zero, zero, base_acc) if parent < 0 else (w[:, parent], wd[:, parent], vd[:, parent])
        # acceleration of this joint's origin, still in the parent frame
        origin_acc = vd_p + cross(wd_p, p[:, i]) + cross(w_p, cross(w_p, p[:, i]))
        w_in = _rotate_into_child(R[:, i], w_p)
        wd_in = _rotate_into_child(R[:, i], wd_p)
        vd_in = _rotate_into_child(R[:, i], origin_acc)
        z = model.axes[i]
        z_qd = qd[:, i, None] * z
        z_qdd = qdd[:, i, None] * z
        if model.joint_types[i] == REVOLUTE:
            w[:, i] = w_in + z_qd                                   # 3.3-50
            wd[:, i] = wd_in + z_qdd + cross(w_in, z_qd)         # 3.3-51
            vd[:, i] = vd_in                                        # 3.3-52 (rot)
        else:
            w[:, i] = w_in
            wd[:, i] = wd_in
            vd[:, i] = vd_in + z_qdd + 2.0 * cross(w_in, z_qd)  # 3.3-52 (transl): Coriolis 2ω×ż
    return w, wd, vd, R, p


def joint_wrenches(model, q, qd, qdd, terms=Terms.ALL):
    """Force ``f`` and moment ``n`` that link ``parent(i)`` exerts on link ``i`` at joint
    ``i``'s origin, expressed in joint ``i``'s frame; each of shape (N, n, 3).

    Fu 3.3-53 to 3.3-57: centre-of-mass acceleration, Newton and Euler equations of
    each link, then the backward sum over children.
    """
    model, terms = resolve(model, terms)
    w, wd, vd, R, p = forward_pass(model, q, qd, qdd, terms)
    c = model.coms                                                      # (n, 3)
    I = model.inertias                                                  # (n, 3, 3)
    acc_com = vd + cross(wd, c) + cross(w, cross(w, c))        # 3.3-53
    F = model.masses[:, None] * acc_com                                 # 3.3-54
    Iw = np.einsum("kij,nkj->nki", I, w)
    N_ = np.einsum("kij,nkj->nki", I, wd) + cross(w, Iw)             # 3.3-55
    f = F.copy()
    moment = N_ + cross(c, F)
    for i in reversed(range(model.n)):                                  # children come after parents
        parent = model.parents[i]
        if parent >= 0:
            f_in_parent = _rotate_into_parent(R[:, i], f[:, i])         # 3.3-56
            f[:, parent] += f_in_parent
            moment[:, parent] += _rotate_into_parent(R[:, i], moment[:, i]) + cross(p[:, i], f_in_parent)  # 3.3-57
    return f, moment


def inverse_dynamics(model, q, qd, qdd, terms=Terms.ALL):
    """Joint torques/forces τ (N, n): the projection of the joint wrench on the axis."""
    model, terms = resolve(model, terms)
    f, moment = joint_wrenches(model, q, qd, qdd, terms)
    along_axis = np.where(model.is_revolute[:, None], moment, f)        # (N, n, 3)
    return np.einsum("nkj,kj->nk", along_axis, model.axes)


def mass_matrix(model, q):
    """Joint-space inertia matrix (N, n, n), column k = τ(q, 0, e_k) with the inertia term
    alone (Walker & Orin's method 1; Fu Problems 3.11/3.12).  The composite-rigid-body
    algorithm of :mod:`.composite_rigid_body` is the O(n²) way."""
    N, n = q.shape
    q_rep = np.repeat(q, n, axis=0)
    unit = np.tile(np.eye(n), (N, 1))
    columns = inverse_dynamics(model, q_rep, q_rep, unit, Terms.INERTIA)
    return columns.reshape(N, n, n).transpose(0, 2, 1)
