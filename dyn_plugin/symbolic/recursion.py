"""The customised Newton-Euler recursion over the expression DAG, and the programs built
from it (τ; M(q); the bias and M together).

Formulation (per link i, every vector in its own frame; the link frame is the joint
frame, re-oriented by a constant rotation so that the joint axis is z, see
:func:`~dyn_plugin.symbolic.customise.prepare`):

* forward: ``ω_i = Rᵀω_p + q̇ z``; ``ω̇_i = Rᵀω̇_p + q̈ z + q̇ (ω'_y, −ω'_x, 0)`` with
  ``ω' = Rᵀω_p`` (Dhanaraj Table 2.4 steps 1-2); ``v̇_i = Rᵀ(v̇_p + λ_p P_i)``
  (+ ``q̈ z + 2q̇ (ω_y, −ω_x, 0)`` for a prismatic joint), with Dhanaraj's
  acceleration-difference matrix ``λ = [ω̇]× + [ω]×²`` (his eq. 2.27, Khalil's U), and
  ``v̇_0 = −g`` (the physical gravity of the model);
* link wrench from the first moment ``MS = m c`` and the inertia ``J`` about the link
  origin (Khalil & Kleinfinger 1987): ``F = m v̇ + λ MS``,
  ``N = J ω̇ + ω×(Jω) + MS × v̇``; the gyroscopic term ``ω×(Jω)`` is Dhanaraj's eq. 2.41
  (``(D_x k_x, D_y k_y, D_z k_z)`` plus the products-of-inertia part), so that it shares
  the products ``k = (ω_yω_z, ω_zω_x, ω_xω_y)`` and the squares with λ;
* backward: ``f_i = F_i + Σ_c R_c f_c``; ``n_i = N_i + Σ_c (R_c n_c + P_c × R_c f_c)``;
  ``τ_i = n_i·z`` (revolute) or ``f_i·z`` (prismatic).

A :class:`~dyn_plugin.terms.Terms` value selects the terms of τ: without ``VELOCITY`` the
joint velocities, without ``INERTIA`` the accelerations are taken as 0, and without
``GRAVITY`` the base does not accelerate (v̇₀ = 0 instead of −g); the gravity itself is the
model's, read once by :func:`~dyn_plugin.symbolic.customise.prepare`.

Why this recursion is not the compiled kernels' (:mod:`dyn_plugin.compiled.newton_euler`,
which the symbolic derivation shares): run over this same graph, with the same constant
folding and shared subexpressions, the kernels' generic recursion costs PUMA-560
291 multiplications + 211 additions per τ, Stanford 233 + 163, SCARA 35 + 26; this
customised one 184 + 140, 131 + 95 and 23 + 16 (240 + 198 without the regrouped base
parameters).  The λ form, the gyroscopic form and the per-link choices are what the
generated code's speed is made of, so the generator keeps its own statement, and
``tests/test_routes.py`` holds it and the kernels to pinocchio on every feature.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..terms import Terms
from .graph import Graph, _const_mat, _const_vec, _cross, _matvec, _vadd, _vscale


@dataclasses.dataclass
class Link:
    """One link in z-axis-aligned frames, as the recursion reads it (made by
    :func:`~dyn_plugin.symbolic.customise.prepare`): ``x_parent = R Rz(q) x + P``
    (revolute) or ``x_parent = R x + P + q R z`` (prismatic).

    ``mass`` kg; ``ms`` (3,) first moment m·c, kg·m; ``J`` (3, 3) inertia about the link
    origin, kg·m² (Khalil's parameters).
    """

    parent: int
    revolute: bool
    R: np.ndarray
    P: np.ndarray
    mass: float
    ms: np.ndarray
    J: np.ndarray
    gyro: str = "lambda"
    lam: str = "plain"


class _Joint:
    """Joint i's symbols: position, velocity, acceleration nodes and cos/sin."""

    def __init__(self, g: Graph, link: Link, q, qd, qdd, label: str):
        self.q, self.qd, self.qdd = q, qd, qdd
        self.link = link
        if link.revolute:
            self.c, self.s = g.cos(q), g.sin(q)
            g.name(self.c, f"c{label}")
            g.name(self.s, f"s{label}")

    def to_child(self, g, v):
        """``(R Rz(q))ᵀ v``: a parent-frame vector in the child frame."""
        u = _matvec(g, _const_mat(g, self.link.R.T), v)
        if not self.link.revolute:
            return u
        c, s = self.c, self.s
        return (g.add(g.mul(c, u[0]), g.mul(s, u[1])), g.sub(g.mul(c, u[1]), g.mul(s, u[0])), u[2])

    def to_parent(self, g, v):
        """``R Rz(q) v``: a child-frame vector in the parent frame."""
        if self.link.revolute:
            c, s = self.c, self.s
            v = (g.sub(g.mul(c, v[0]), g.mul(s, v[1])), g.add(g.mul(s, v[0]), g.mul(c, v[1])), v[2])
        return _matvec(g, _const_mat(g, self.link.R), v)

    def origin(self, g):
        """Origin of the child frame in the parent frame, P (+ q R z if prismatic)."""
        P = _const_vec(g, self.link.P)
        if self.link.revolute:
            return P
        return _vadd(g, P, _vscale(g, self.q, _const_vec(g, self.link.R[:, 2])))


def _products(g, w):
    """The squares and products of ω's components, ``(xx, yy, zz, xy, xz, yz)``: λ and the
    gyroscopic moment both use them (hash-consing builds them once)."""
    x, y, z = w
    return g.mul(x, x), g.mul(y, y), g.mul(z, z), g.mul(x, y), g.mul(x, z), g.mul(y, z)


def _lambda(g, w, wd, prime=None):
    """Dhanaraj's acceleration-difference matrix λ = [ω̇]× + [ω]×² (eq. 2.27; Khalil's U):
    ``λ r = ω̇×r + ω×(ω×r)``.

    ``prime = (ω', ω̇')``, the parent's ω and ω̇ rotated into a revolute link: then
    ``λ₁₃ = ω'_x ω'_z + ω̇'_y`` and ``λ₂₃ = ω'_y ω'_z − ω̇'_x``, because the q̇ terms of
    ``ω_z = ω'_z + q̇`` and of the Coriolis part of ω̇ cancel (cheaper when ω'_z = 0).
    """
    ax, ay, az = wd
    xx, yy, zz, xy, xz, yz = _products(g, w)
    l13, l23 = g.add(xz, ay), g.sub(yz, ax)
    if prime is not None:
        (px, py, pz), (pax, pay, _) = prime
        l13, l23 = g.add(g.mul(px, pz), pay), g.sub(g.mul(py, pz), pax)
    return ((g.neg(g.add(yy, zz)), g.sub(xy, az), l13),
            (g.add(xy, az), g.neg(g.add(xx, zz)), l23),
            (g.sub(xz, ay), g.add(yz, ax), g.neg(g.add(xx, yy))))


def _gyroscopic(g, w, J, form: str = "lambda"):
    """ω × (J ω) by Dhanaraj's eq. 2.41: ``(D_x k_x, D_y k_y, D_z k_z)`` with
    ``D = (J_zz−J_yy, J_xx−J_zz, J_yy−J_xx)``, ``k = (ω_yω_z, ω_zω_x, ω_xω_y)``, plus a
    matrix of squares and products times ``(J_yz, J_xz, J_xy)``.  The products and
    squares are those of λ, so they are shared.  ``form="cross"``: ``ω × (Jω)`` as
    written, which can be cheaper for a full J."""
    if form == "cross":
        return _cross(g, w, _matvec(g, _const_mat(g, J), w))
    xx, yy, zz, xy, xz, yz = _products(g, w)
    D = _const_vec(g, [J[2, 2] - J[1, 1], J[0, 0] - J[2, 2], J[1, 1] - J[0, 0]])
    diagonal = (g.mul(D[0], yz), g.mul(D[1], xz), g.mul(D[2], xy))
    products = _const_vec(g, [J[1, 2], J[0, 2], J[0, 1]])
    M = ((g.sub(yy, zz), xy, g.neg(xz)),
         (g.neg(xy), g.sub(zz, xx), yz),
         (xz, g.neg(yz), g.sub(xx, yy)))
    return _vadd(g, diagonal, _matvec(g, M, products))


def _newton_euler(g: Graph, links, joints, base_acc, terms: Terms = Terms.ALL):
    """τ nodes (list of n) of the customised recursion for the terms ``terms`` selects
    (module docstring); ``base_acc`` is v̇₀ = −g, used only with ``Terms.GRAVITY``."""
    n = len(links)
    zero = (g.ZERO,) * 3
    w, wd, vd, lam = [None] * n, [None] * n, [None] * n, [None] * n
    for i, (link, jt) in enumerate(zip(links, joints)):
        label = str(i + 1)
        qd = jt.qd if terms & Terms.VELOCITY else g.ZERO
        qdd = jt.qdd if terms & Terms.INERTIA else g.ZERO
        if link.parent < 0:
            wp, wdp, lamp = zero, zero, None
            vdp = _const_vec(g, base_acc) if terms & Terms.GRAVITY else zero
        else:
            wp, wdp, vdp, lamp = w[link.parent], wd[link.parent], vd[link.parent], lam[link.parent]
        origin_acc = vdp if lamp is None else _vadd(g, vdp, _matvec(g, lamp, jt.origin(g)))
        w_in, wd_in, vd_in = jt.to_child(g, wp), jt.to_child(g, wdp), jt.to_child(g, origin_acc)
        if link.revolute:                                   # Dhanaraj Table 2.4, steps 1-3
            w[i] = (w_in[0], w_in[1], g.add(w_in[2], qd))
            wd[i] = (g.add(wd_in[0], g.mul(qd, w_in[1])), g.sub(wd_in[1], g.mul(qd, w_in[0])),
                     g.add(wd_in[2], qdd))
            vd[i] = vd_in
        else:                                               # Coriolis 2 ω × q̇ z
            w[i], wd[i] = w_in, wd_in
            qd2 = g.add(qd, qd)
            vd[i] = (g.add(vd_in[0], g.mul(qd2, w_in[1])), g.sub(vd_in[1], g.mul(qd2, w_in[0])),
                     g.add(vd_in[2], qdd))
        prime = (w_in, wd_in) if link.revolute and link.lam == "prime" else None
        lam[i] = _lambda(g, w[i], wd[i], prime)
        g.name_vec(w[i], f"w{label}")
        g.name_vec(wd[i], f"wd{label}")
        g.name_vec(vd[i], f"vd{label}")
        for r in range(3):
            for c in range(3):
                g.name(lam[i][r][c], f"L{label}_{r + 1}{c + 1}")
    return _backward(g, links, joints, w, wd, vd, lam)


def _backward(g, links, joints, w, wd, vd, lam):
    """Link wrenches (Khalil's F, N) and the backward sum over children; τ nodes."""
    n = len(links)
    f, moment = [None] * n, [None] * n
    for i, link in enumerate(links):
        ms, J = _const_vec(g, link.ms), _const_mat(g, link.J)
        f[i] = _vadd(g, _vscale(g, g.const(link.mass), vd[i]), _matvec(g, lam[i], ms))
        moment[i] = _vadd(g, _vadd(g, _matvec(g, J, wd[i]), _gyroscopic(g, w[i], link.J, link.gyro)),
                          _cross(g, ms, vd[i]))
        g.name_vec(f[i], f"F{i + 1}")
        g.name_vec(moment[i], f"N{i + 1}")
    tau = [None] * n
    for i in reversed(range(n)):
        link, jt = links[i], joints[i]
        g.name_vec(f[i], f"f{i + 1}")
        g.name_vec(moment[i], f"n{i + 1}")
        tau[i] = moment[i][2] if link.revolute else f[i][2]
        if link.parent >= 0:
            p = link.parent
            f_par = jt.to_parent(g, f[i])
            g.name_vec(f_par, f"fp{i + 1}")
            f[p] = _vadd(g, f[p], f_par)
            moment[p] = _vadd(g, moment[p], _vadd(g, jt.to_parent(g, moment[i]),
                                                  _cross(g, jt.origin(g), f_par)))
    return tau


# -- programs: the DAG plus its outputs --------------------------------------------------

@dataclasses.dataclass
class _Program:
    """Outputs ``(array, index, node)`` of one generated function over a shared graph."""

    graph: Graph
    outputs: list

    def reachable(self) -> list:
        """Nodes that feed an output, in creation (= topological) order."""
        g, seen, stack = self.graph, set(), [node for _, _, node in self.outputs]
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(g.args[node])
        return sorted(seen)

    def counts(self) -> dict:
        ops = [self.graph.op[node] for node in self.reachable()]
        return {"multiplications": ops.count("*"),
                "additions": ops.count("+") + ops.count("-"),
                "trig": ops.count("sin") + ops.count("cos")}


def _symbols(g, links, q=None, qd=None, qdd=None):
    joints = []
    for i, link in enumerate(links):
        k = str(i + 1)
        joints.append(_Joint(g, link, g.var(f"q{k}") if q is None else q[i],
                             g.var(f"qd{k}") if qd is None else qd[i],
                             g.var(f"qdd{k}") if qdd is None else qdd[i], k))
    return joints


def _id_program(g, links, base_acc, terms: Terms = Terms.ALL) -> _Program:
    """τ(q, q̇, q̈) with the terms ``terms`` selects (default: all, gravity included)."""
    joints = _symbols(g, links)
    tau = _newton_euler(g, links, joints, base_acc, terms)
    return _Program(g, [("tau", (i,), node) for i, node in enumerate(tau)])


def _mass_matrix_columns(g, links, q, names: bool) -> list:
    """Outputs ``("M", (i, k), node)`` of M(q), column k = τ(q, 0, e_k) with the inertia
    term alone (Walker & Orin's method 1), in one DAG so that the columns share trig and
    rotations; only the entries on and below the diagonal are computed, the rest
    mirrored.  ``names``: the entries are called ``M{i}_{k}`` in the source."""
    n = len(links)
    outputs = []
    zero = [g.ZERO] * n
    for k in range(n):
        unit = [g.const(1.0 if i == k else 0.0) for i in range(n)]
        tau = _newton_euler(g, links, _symbols(g, links, q, zero, unit), None, Terms.INERTIA)
        for i in range(k, n):
            if names:
                g.name(tau[i], f"M{i + 1}_{k + 1}")
            outputs.append(("M", (i, k), tau[i]))
            if i != k:
                outputs.append(("M", (k, i), tau[i]))
    return outputs


def _mass_matrix_program(g, links) -> _Program:
    """M(q) (:func:`_mass_matrix_columns`)."""
    q = [g.var(f"q{i + 1}") for i in range(len(links))]
    return _Program(g, _mass_matrix_columns(g, links, q, names=True))


def _bias_and_mass_program(g, links, base_acc) -> _Program:
    """The bias τ(q, q̇, 0) and M(q) in one DAG (forward dynamics needs both, and they
    share the trig and the rotations)."""
    n = len(links)
    q = [g.var(f"q{i + 1}") for i in range(n)]
    qd = [g.var(f"qd{i + 1}") for i in range(n)]
    zero = [g.ZERO] * n
    bias = _newton_euler(g, links, _symbols(g, links, q, qd, zero), base_acc, Terms.BIAS)
    outputs = [("bias", (i,), node) for i, node in enumerate(bias)]
    return _Program(g, outputs + _mass_matrix_columns(g, links, q, names=False))
