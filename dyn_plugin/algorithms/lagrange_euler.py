"""Lagrange-Euler dynamics with 4x4 matrices (Uicker; Fu, Gonzalez & Lee §3.2).

O(n⁴) on purpose: its value is the structure it exposes - the inertia matrix D, every
Christoffel coefficient h_ikm and the gravity vector c separately - not speed.

Notation (Fu):  ⁰A_i pose of link i;  Q_j the derivative operator of joint j (3.2-8);
U_ij = ∂⁰A_i/∂q_j (3.2-11);  U_ijk = ∂U_ij/∂q_k (3.2-13);  J_i pseudo-inertia (3.2-18);
D_ik (3.2-31);  h_ikm (3.2-33);  c_i (3.2-34).  τ = D q̈ + h(q, q̇) + c(q)  (3.2-26).

On a tree, "j ≤ i" of a serial chain becomes "joint j is on the path from the base to
link i"; U_ij is zero otherwise.  Our link frame is the joint frame and Q_j commutes with
the joint's own motion, so Fu's ⁰A_{j-1} Q_j ʲ⁻¹A_i equals ⁰A_j Q_j (⁰A_j)⁻¹ ⁰A_i.

All functions take batches: ``q`` of shape (N, n).
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..kinematics import REVOLUTE, forward_kinematics, skew
from ..terms import Terms, as_terms, selected

CHUNK = 256  # states per block, so that U_ijk (N·n³·16 numbers) stays small
BLOCK_BYTES = 256 << 20     # U_ijk of one block at most (fewer states per block for a large n)
STATE_BYTES = 1 << 30       # U_ijk of one state at most: n ≈ 200 (3.5 GB at n = 300)


def require_affordable(model) -> int:
    """The bytes of one state's U_ijk, (n, n, n, 4, 4) float64; ModelError above STATE_BYTES."""
    n = model.n
    per_state = 16 * 8 * n ** 3
    if per_state > STATE_BYTES:
        raise ModelError(f"Lagrange-Euler (O(n⁴) on purpose) of robot {model.name!r}: its n = {n} joints need "
                         f"{per_state / 2 ** 30:.1f} GiB per state for U_ijk; use newton_euler for a robot this large")
    return per_state


def derivative_operator(joint_type: str, axis: np.ndarray) -> np.ndarray:
    """Fu's Q_j (3.2-8a/b) for a joint about/along a unit ``axis`` of its own frame."""
    Q = np.zeros((4, 4))
    if joint_type == REVOLUTE:
        Q[:3, :3] = skew(axis)
    else:
        Q[:3, 3] = axis
    return Q


def pseudo_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """J_i = ∫ r rᵀ dm in the link frame (Fu 3.2-17), from the inertia about the COM.

    J = [[½tr(I_c)·1 − I_c + m s sᵀ, m s], [m sᵀ, m]]  (3.2-18, with the sign of the
    products of inertia and the reference point corrected; see notes warning 8).
    """
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(inertia_com) * np.eye(3) - inertia_com + mass * np.outer(com, com)
    J[:3, 3] = J[3, :3] = mass * com
    J[3, 3] = mass
    return J


def _generators(model, T: np.ndarray) -> np.ndarray:
    """World-frame derivative operators ⁰A_j Q_j (⁰A_j)⁻¹ of every joint, (N, n, 4, 4)."""
    Q = np.array([derivative_operator(t, a) for t, a in zip(model.joint_types, model.axes)]).reshape(model.n, 4, 4)
    return T @ Q @ np.linalg.inv(T)


def _ancestry(model) -> np.ndarray:
    """(n, n) bool: ``on_path[i, j]`` is True when joint j moves link i."""
    on_path = np.zeros((model.n, model.n), dtype=bool)
    for i in range(model.n):
        on_path[i, model.ancestors(i)] = True
    return on_path


def _poses_and_operators(model, q):
    """Link poses ⁰A_i and world operators S_j = ⁰A_j Q_j (⁰A_j)⁻¹, each (N, n, 4, 4)."""
    T = forward_kinematics(model, q)
    return T, _generators(model, T)


def u_matrices(model, T, S):
    """U_ij = S_j ⁰A_i for joints j moving link i, else 0 (3.2-11); (N, n, n, 4, 4)."""
    return np.einsum("njab,nibc->nijac", S, T) * _ancestry(model)[None, :, :, None, None]


def u_second_derivatives(model, T, S):
    """U_ijk = ∂U_ij/∂q_k (3.2-13), shape (N, n, n, n, 4, 4).

    The operator of the joint nearer the link acts first:
    U_ijk = S_j S_k ⁰A_i when k lies between j and link i, S_k S_j ⁰A_i when j does.
    """
    n = model.n
    U2 = np.zeros(T.shape[:1] + (n, n, n, 4, 4))
    for i in range(n):
        path = model.ancestors(i)  # base first: a later entry is nearer link i
        for a, j in enumerate(path):
            for k in path[a:]:      # j nearer the base than (or equal to) k
                U2[:, i, j, k] = U2[:, i, k, j] = S[:, j] @ S[:, k] @ T[:, i]
    return U2


def pseudo_inertias(model) -> np.ndarray:
    """Pseudo-inertia of every link, (n, 4, 4)."""
    return np.array([pseudo_inertia(m, c, I) for m, c, I in zip(model.masses, model.coms, model.inertias)]).reshape(model.n, 4, 4)


def _inertia(U, J) -> np.ndarray:
    """D_ik = Σ_j Tr(U_jk J_j U_jiᵀ) over links j moved by i and k (3.2-31)."""
    return np.einsum("njkab,jbc,njiac->nik", U, J, U)


def _gravity(model, U) -> np.ndarray:
    """c_i = −Σ_j m_j g U_ji ʲr̄_j  (3.2-34), g the model's physical gravity."""
    g = np.append(model.gravity, 0.0)
    first_moments = np.hstack([model.masses[:, None] * model.coms, model.masses[:, None]])  # m_j ʲr̄_j
    return -np.einsum("a,njiab,jb->ni", g, U, first_moments)


def inertia_matrix(model, q) -> np.ndarray:
    """D(q), (N, n, n)  (3.2-31)."""
    return _inertia(u_matrices(model, *_poses_and_operators(model, q)), pseudo_inertias(model))


def gravity_vector(model, q) -> np.ndarray:
    """c(q), (N, n)  (3.2-34)."""
    return _gravity(model, u_matrices(model, *_poses_and_operators(model, q)))


def dynamics_terms(model, q):
    """D (N, n, n), h_ikm (N, n, n, n) and c (N, n), the poses and U computed once.

    h_ikm = Σ_j Tr(U_jkm J_j U_jiᵀ) (3.2-33) are the Christoffel symbols of the first kind
    of D: h_ikm = ½(∂D_ik/∂q_m + ∂D_im/∂q_k − ∂D_km/∂q_i); h_ikm = h_imk and h_iii = 0.
    """
    N, n = q.shape
    per_state = require_affordable(model)
    chunk = max(1, min(CHUNK, BLOCK_BYTES // max(per_state, 1)))
    D, h, c = np.empty((N, n, n)), np.empty((N, n, n, n)), np.empty((N, n))
    J = pseudo_inertias(model)
    for start in range(0, N, chunk):
        block = slice(start, start + chunk)
        T, S = _poses_and_operators(model, q[block])
        U = u_matrices(model, T, S)
        D[block] = _inertia(U, J)
        h[block] = np.einsum("njkmab,jbc,njiac->nikm", u_second_derivatives(model, T, S), J, U)
        c[block] = _gravity(model, U)
    return D, h, c


def christoffel(model, q) -> np.ndarray:
    """h_ikm (3.2-33), (N, n, n, n): h_i(q, q̇) = Σ_km h_ikm q̇_k q̇_m."""
    return dynamics_terms(model.with_gravity(np.zeros(3)), q)[1]


def velocity_terms(model, q, qd) -> np.ndarray:
    """h(q, q̇), (N, n): h_i = Σ_km h_ikm q̇_k q̇_m  (3.2-32)."""
    return np.einsum("nikm,nk,nm->ni", christoffel(model, q), qd, qd)


def coriolis_matrix(model, q, qd) -> np.ndarray:
    """C(q, q̇), (N, n, n) with C_ik = Σ_m h_ikm q̇_m, so C q̇ = h and Ḋ − 2C is skew."""
    return np.einsum("nikm,nm->nik", christoffel(model, q), qd)


def inverse_dynamics(model, q, qd, qdd, terms=Terms.ALL) -> np.ndarray:
    """τ = D q̈ + h + c  (3.2-26), (N, n), with the parts ``terms`` selects."""
    terms = as_terms(terms)
    D, h, c = dynamics_terms(model, q)
    qd, qdd, _ = selected(model, terms, qd, qdd)
    return (np.einsum("nik,nk->ni", D, qdd) + np.einsum("nikm,nk,nm->ni", h, qd, qd)
            + (c if terms & Terms.GRAVITY else 0.0))


def configuration_space(model, q):
    """ROBMAT's configuration-space matrices (Horn & Linge, "ROBMAT: a symbolic package
    for robot dynamics", §4.2).

    F = M q̈ + 2 B [q̇q̇] + C [q̇²] + G with
    M (N, n, n) = D;  B (N, n, n(n−1)/2), column (j, k), j < k ordered (1,2), (1,3), ...,
    (2,3), ...: B_i,(jk) = h_ijk;  C (N, n, n): C_ij = h_ijj;  G (N, n) = c.
    """
    D, h, G = dynamics_terms(model, q)
    pairs = [(j, k) for j in range(model.n) for k in range(j + 1, model.n)]
    B = np.stack([h[:, :, j, k] for j, k in pairs], axis=-1) if pairs else np.zeros(q.shape + (0,))
    C = np.einsum("nijj->nij", h).copy()
    return D, B, C, G
