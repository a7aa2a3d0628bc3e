"""Featherstone's articulated-body algorithm (ABA): O(n) forward dynamics on trees.

Written from Featherstone, *Rigid Body Dynamics Algorithms* (2008), Table 7.1, with
spatial vectors ordered [angular; linear] and expressed in link coordinates:

1. outward:  v_i = ⁱX_λ v_λ + S_i q̇_i,   c_i = v_i ×ₘ S_i q̇_i,   I^A_i = I_i,
             p^A_i = v_i ×* I_i v_i
2. inward:   U_i = I^A_i S_i,  D_i = S_iᵀ U_i,  u_i = τ_i − S_iᵀ p^A_i,
             I^a = I^A_i − U_i U_iᵀ / D_i,  p^a = p^A_i + I^a c_i + U_i u_i / D_i,
             I^A_λ += ⁱX_λᵀ I^a ⁱX_λ,   p^A_λ += ⁱX_λᵀ p^a
3. outward:  a'_i = ⁱX_λ a_λ + c_i,   q̈_i = (u_i − U_iᵀ a'_i) / D_i,   a_i = a'_i + S_i q̈_i

Gravity enters as the base acceleration a_0 = [0; −g], g the model's (the same fictitious
acceleration as in Newton-Euler).  All functions take batches: ``q, qd, tau`` of shape (N, n).
"""

from __future__ import annotations

import numpy as np

from ..arrays import SINGULAR
from ..kinematics import REVOLUTE, cross, link_placements, skew


def motion_subspace(model) -> np.ndarray:
    """S_i (n, 6): [axis; 0] for a revolute joint, [0; axis] for a prismatic one."""
    S = np.zeros((model.n, 6))
    for i, (kind, axis) in enumerate(zip(model.joint_types, model.axes)):
        if kind == REVOLUTE:
            S[i, :3] = axis
        else:
            S[i, 3:] = axis
    return S


def spatial_inertias(model) -> np.ndarray:
    """I_i (n, 6, 6) at the link origin: [[I_c + m c× c×ᵀ, m c×], [m c×ᵀ, m 1]] (Featherstone 2.63)."""
    cx = skew(model.coms)                                           # (n, 3, 3)
    m = model.masses[:, None, None]
    top_left = model.inertias + m * cx @ np.swapaxes(cx, -1, -2)
    return np.block([[top_left, m * cx], [m * np.swapaxes(cx, -1, -2), m * np.eye(3)]])


def plucker_transforms(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """ⁱX_λ (..., 6, 6) for link placements x_λ = R x_i + p: [[E, 0], [−E r×, E]], E = Rᵀ, r = p."""
    E = np.swapaxes(R, -1, -2)
    X = np.zeros(E.shape[:-2] + (6, 6))
    X[..., :3, :3] = X[..., 3:, 3:] = E
    X[..., 3:, :3] = -E @ skew(p)
    return X


def cross_motion(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    """v ×ₘ m for motion vectors (..., 6): [ω × m_ω; ω × m_v + v × m_ω] (Featherstone 2.31)."""
    w, lin = v[..., :3], v[..., 3:]
    return np.concatenate([cross(w, m[..., :3]), cross(w, m[..., 3:]) + cross(lin, m[..., :3])], axis=-1)


def cross_force(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """v ×* f for a force vector f (..., 6): [ω × n + v × f; ω × f] (Featherstone 2.32)."""
    w, lin = v[..., :3], v[..., 3:]
    return np.concatenate([cross(w, f[..., :3]) + cross(lin, f[..., 3:]), cross(w, f[..., 3:])], axis=-1)


def forward_dynamics(model, q, qd, tau, armature=None) -> np.ndarray:
    """Joint accelerations q̈ (N, n) for torques τ, by the articulated-body algorithm.

    ``armature`` (n,): rotor inertias added to the joint-space diagonal, D_i = SᵀIᴬS + a_i
    (pinocchio's ``model.armature``), as if M were M + diag(a).
    """
    N, n = q.shape
    R, p = link_placements(model, q)
    X = plucker_transforms(R, p)                                    # (N, n, 6, 6)
    S = motion_subspace(model)                                      # (n, 6)
    I = spatial_inertias(model)                                     # (n, 6, 6)
    parents = model.parents

    v, c, pA = (np.zeros((N, n, 6)) for _ in range(3))
    IA = np.broadcast_to(I, (N, n, 6, 6)).copy()
    for i in range(n):                                              # pass 1
        v_parent = v[:, parents[i]] if parents[i] >= 0 else np.zeros((N, 6))
        joint_velocity = qd[:, i, None] * S[i]
        v[:, i] = np.einsum("nab,nb->na", X[:, i], v_parent) + joint_velocity
        c[:, i] = cross_motion(v[:, i], joint_velocity)
        pA[:, i] = cross_force(v[:, i], v[:, i] @ I[i].T)

    U = np.zeros((N, n, 6))
    D = np.zeros((N, n))
    u = np.zeros((N, n))
    for i in reversed(range(n)):                                    # pass 2
        U[:, i] = np.einsum("nab,b->na", IA[:, i], S[i])
        D[:, i] = U[:, i] @ S[i] + (0.0 if armature is None else armature[i])
        u[:, i] = tau[:, i] - pA[:, i] @ S[i]
        parent = parents[i]
        if parent >= 0:
            Ia = IA[:, i] - np.einsum("na,nb->nab", U[:, i], U[:, i]) / D[:, i, None, None]
            pa = pA[:, i] + np.einsum("nab,nb->na", Ia, c[:, i]) + U[:, i] * (u[:, i] / D[:, i])[:, None]
            Xt = np.swapaxes(X[:, i], -1, -2)
            IA[:, parent] += Xt @ Ia @ X[:, i]
            pA[:, parent] += np.einsum("nab,nb->na", Xt, pa)

    a = np.zeros((N, n, 6))
    qdd = np.zeros((N, n))
    base_acc = np.concatenate([np.zeros(3), -model.gravity])
    for i in range(n):                                              # pass 3
        a_parent = a[:, parents[i]] if parents[i] >= 0 else np.broadcast_to(base_acc, (N, 6))
        a_prime = np.einsum("nab,nb->na", X[:, i], a_parent) + c[:, i]
        qdd[:, i] = (u[:, i] - np.einsum("na,na->n", U[:, i], a_prime)) / D[:, i]
        a[:, i] = a_prime + qdd[:, i, None] * S[i]
    # the D_i are pivots of M(q)'s factorisation (Featherstone 2008, §6.5): λ_min ≤ min D_i
    # and max D_i ≤ λ_max, so a smaller pivot means M(q) singular to rounding; NaN, refused
    qdd[~(D.min(axis=1, initial=np.inf) > SINGULAR * D.max(axis=1, initial=0.0))] = np.nan
    return qdd
