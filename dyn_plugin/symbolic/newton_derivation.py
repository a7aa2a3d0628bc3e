"""The Newton-Euler derivation of the closed form (:func:`newton_euler`): the recursion of
:mod:`dyn_plugin.algorithms.newton_euler` (Fu Table 3.3 with 3.3-57) run on the
trigonometric polynomials of :mod:`.algebra`; then M = ∂τ/∂q̈, G = τ(q, 0, 0),
C_ij = ½ ∂²τ_i/∂q̇_j², B_i,(jk) = ½ ∂²τ_i/∂q̇_j∂q̇_k."""

from __future__ import annotations

import time

from sympy import QQ

from ..kinematics import REVOLUTE
from .algebra import TrigAlgebra, _add, _algebra, _link_placement, _scale
from .closed_form import ClosedForm, _pairs
from .model import SymbolicModel


def _ne_forward(alg: TrigAlgebra, placements):
    """ω, ω̇, v̇ (origin) of every link in its own frame (Fu 3.3-50 to 3.3-52), as
    :func:`dyn_plugin.algorithms.newton_euler.forward_pass`; gravity as the base
    acceleration v̇₀ = −g (Fu 3.3-46)."""
    sm, zero = alg.smodel, alg.ring.zero
    base = ([zero] * 3, [zero] * 3, [-x for x in alg.vec(sm.gravity)])
    w, wd, vd = [], [], []
    for k, (R, p) in enumerate(placements):
        parent = sm.parents[k]
        w_p, wd_p, vd_p = base if parent < 0 else (w[parent], wd[parent], vd[parent])
        origin_acc = _add(_add(vd_p, alg.cross(wd_p, p)), alg.cross(w_p, alg.cross(w_p, p)))
        w_in, wd_in, vd_in = alg.mtv(R, w_p), alg.mtv(R, wd_p), alg.mtv(R, origin_acc)
        z = alg.vec(sm.axes[k])
        z_qd, z_qdd = _scale(z, alg.var(sm.qd[k])), _scale(z, alg.var(sm.qdd[k]))
        if sm.joint_types[k] == REVOLUTE:
            w.append(_add(w_in, z_qd))                                            # 3.3-50
            wd.append(_add(_add(wd_in, z_qdd), alg.cross(w_in, z_qd)))            # 3.3-51
            vd.append(vd_in)                                                      # 3.3-52
        else:
            w.append(w_in)
            wd.append(wd_in)
            vd.append(_add(_add(vd_in, z_qdd), _scale(alg.cross(w_in, z_qd), 2)))  # 2ω×ż Coriolis
    return w, wd, vd


def _ne_link_wrenches(alg: TrigAlgebra, w, wd, vd):
    """Net force F and moment about the link origin of every link's bodies (Fu 3.3-53
    to 3.3-55): F = m a_c, a_c = v̇ + ω̇×c + ω×(ω×c); moment = I_c ω̇ + ω×(I_c ω) + c×F."""
    n = alg.smodel.n
    f = [[alg.ring.zero] * 3 for _ in range(n)]
    moment = [[alg.ring.zero] * 3 for _ in range(n)]
    for k, mass, com, inertia in alg.smodel.bodies():
        c, I, m = alg.vec(com), alg.mat(inertia), alg.const(mass)
        a_c = _add(_add(vd[k], alg.cross(wd[k], c)), alg.cross(w[k], alg.cross(w[k], c)))   # 3.3-53
        F = [alg.reduce(x * m) for x in a_c]                                                 # 3.3-54
        N = _add(alg.mv(I, wd[k]), alg.cross(w[k], alg.mv(I, w[k])))                         # 3.3-55
        f[k] = _add(f[k], F)
        moment[k] = _add(moment[k], _add(N, alg.cross(c, F)))
    return f, moment


def _ne_torques(alg: TrigAlgebra, placements) -> list:
    """τ (n ring elements): backward pass (Fu 3.3-56, 3.3-57), projection on the axes."""
    sm = alg.smodel
    w, wd, vd = _ne_forward(alg, placements)
    f, moment = _ne_link_wrenches(alg, w, wd, vd)
    for k in reversed(range(sm.n)):                      # children come after parents
        parent = sm.parents[k]
        if parent >= 0:
            R, p = placements[k]
            f_in_parent = alg.mv(R, f[k])                                                   # 3.3-56
            f[parent] = _add(f[parent], f_in_parent)
            moment[parent] = _add(moment[parent], _add(alg.mv(R, moment[k]), alg.cross(p, f_in_parent)))  # 3.3-57
    return [alg.dot(alg.vec(sm.axes[k]), moment[k] if sm.joint_types[k] == REVOLUTE else f[k])
            for k in range(sm.n)]


def newton_euler(smodel: SymbolicModel) -> "ClosedForm":
    """Closed forms by the Newton-Euler route: τ(q, q̇, q̈) by the link-frame recursion,
    then M = ∂τ/∂q̈, G = τ(q, 0, 0), C_ij = ½ ∂²τ_i/∂q̇_j², B_i,(jk) = ½ ∂²τ_i/∂q̇_j∂q̇_k
    (τ is quadratic in q̇: 2B[q̇q̇] + C[q̇²] is its q̇ part)."""
    start = time.perf_counter()
    alg = _algebra(smodel)
    n = smodel.n
    tau = _ne_torques(alg, [_link_placement(alg, k) for k in range(n)])
    qd = [alg.var(s) for s in smodel.qd]
    qdd = [alg.var(s) for s in smodel.qdd]
    half = QQ(1, 2)
    M = [[tau[i].diff(qdd[j]) for j in range(n)] for i in range(n)]
    G = [alg.at_zero(t, smodel.qd + smodel.qdd) for t in tau]
    first = [[tau[i].diff(qd[j]) for j in range(n)] for i in range(n)]
    B = [[first[i][j].diff(qd[k]) * half for j, k in _pairs(n)] for i in range(n)]
    C = [[first[i][j].diff(qd[j]) * half for j in range(n)] for i in range(n)]
    return ClosedForm._from_polys(alg, "newton_euler", M, B, C, G, time.perf_counter() - start, tau=tau)
