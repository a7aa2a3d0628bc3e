"""The Lagrange-Euler derivation of the closed form (:func:`lagrange_euler`): energy and
Jacobians (Schilling 6-2-15: M = Σ_k m_k A_kᵀA_k + B_kᵀ D_k B_k; gravity 6-4-7),
Christoffel symbols from ∂M/∂q (Fu 3.2-33)."""

from __future__ import annotations

import itertools
import time

from sympy import QQ

from ..kinematics import REVOLUTE
from .algebra import TrigAlgebra, _add, _algebra, _link_placement
from .closed_form import ClosedForm, _pairs
from .model import SymbolicModel


def _world_poses(alg: TrigAlgebra, placements):
    """⁰R_k and ⁰o_k of every link (world rotation, origin), built base outward."""
    sm, R0, o0 = alg.smodel, [], []
    for k, (R, p) in enumerate(placements):
        parent = sm.parents[k]
        if parent < 0:
            R0.append(R)
            o0.append(p)
        else:
            R0.append(alg.mm(R0[parent], R))
            o0.append(_add(o0[parent], alg.mv(R0[parent], p)))
    return R0, o0


def _angular_jacobians(alg: TrigAlgebra, placements) -> list:
    """Angular-velocity Jacobian of every link in its own frame: ``J[k][j]`` (3-list) is
    the axis of joint j seen from link k for revolute j moving k, else absent (zero)."""
    sm, J = alg.smodel, []
    for k, (R, _) in enumerate(placements):
        parent = sm.parents[k]
        columns = {} if parent < 0 else {j: alg.mtv(R, col) for j, col in J[parent].items()}
        if sm.joint_types[k] == REVOLUTE:
            columns[k] = alg.vec(sm.axes[k])
        J.append(columns)
    return J


def _body_terms(alg: TrigAlgebra, body, R0, o0, Jw):
    """One body's contribution to M (Schilling 6-2-15) and to G (6-4-7).

    M += m A_cᵀ A_c + B_kᵀ I_c B_k with A_c = ∂r_c/∂q (world, by differentiation) and B_k
    the link-frame angular Jacobian; G_j −= m gᵀ ∂r_c/∂q_j (V = −Σ m gᵀ r_c, g physical).
    """
    sm = alg.smodel
    k, mass, com, inertia = body
    n, m = sm.n, alg.const(mass)
    r_c = _add(o0[k], alg.mv(R0[k], alg.vec(com)))
    movers = sm.ancestors(k)
    A = {j: [alg.diff_q(x, j) for x in r_c] for j in movers}
    I = alg.mat(inertia)
    Iw = {j: alg.mv(I, col) for j, col in Jw[k].items()}
    g = alg.vec(sm.gravity)
    M = [[alg.ring.zero] * n for _ in range(n)]
    for a, b in itertools.product(movers, movers):
        if a <= b:
            term = alg.dot(A[a], A[b]) * m
            if a in Jw[k] and b in Jw[k]:
                term += alg.dot(Jw[k][a], Iw[b])
            M[a][b] = M[b][a] = alg.reduce(term)
    G = [alg.ring.zero] * n
    for j in movers:
        G[j] = -alg.reduce(alg.dot(g, A[j]) * m)
    return M, G


def _christoffel(alg: TrigAlgebra, M) -> list:
    """h_ijk = ½(∂M_ij/∂q_k + ∂M_ik/∂q_j − ∂M_jk/∂q_i) (Fu 3.2-33 as Christoffel symbols)."""
    n = alg.smodel.n
    dM = [[[alg.diff_q(M[i][j], k) for k in range(n)] for j in range(n)] for i in range(n)]
    half = QQ(1, 2)
    return [[[(dM[i][j][k] + dM[i][k][j] - dM[j][k][i]) * half for k in range(n)] for j in range(n)]
            for i in range(n)]


def lagrange_euler(smodel: SymbolicModel) -> "ClosedForm":
    """Closed forms by the Lagrange-Euler route: M from the kinetic energy with Jacobians
    (Schilling 6-2-15), G from the potential (6-4-7), B and C from the Christoffel symbols
    of M (Fu 3.2-33; ROBMAT §4.2), τ = M q̈ + 2B[q̇q̇] + C[q̇²] + G."""
    start = time.perf_counter()
    alg = _algebra(smodel)
    n = smodel.n
    placements = [_link_placement(alg, k) for k in range(n)]
    R0, o0 = _world_poses(alg, placements)
    Jw = _angular_jacobians(alg, placements)
    M = [[alg.ring.zero] * n for _ in range(n)]
    G = [alg.ring.zero] * n
    for body in smodel.bodies():
        Mb, Gb = _body_terms(alg, body, R0, o0, Jw)
        M = [[M[i][j] + Mb[i][j] for j in range(n)] for i in range(n)]
        G = [G[i] + Gb[i] for i in range(n)]
    h = _christoffel(alg, M)
    B = [[h[i][j][k] for j, k in _pairs(n)] for i in range(n)]
    C = [[h[i][j][j] for j in range(n)] for i in range(n)]
    return ClosedForm._from_polys(alg, "lagrange_euler", M, B, C, G, time.perf_counter() - start)

