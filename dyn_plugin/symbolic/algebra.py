"""The trigonometric polynomial algebra of the symbolic derivations, and the link
placements built in it.

How the algebra stays exact and fast
------------------------------------
Everything is computed in a polynomial ring over the rationals whose generators are
sin q_i and cos q_i (revolute joints), q_i (prismatic joints), q̇_i, q̈_i, τ_i and the
parameter symbols; every product is reduced modulo sin² q_i + cos² q_i = 1 (sin² → 1 − cos²).
That reduced form is canonical (a polynomial at most linear in each sin q_i), so equal
closed forms are equal polynomials -- no ``trigsimp`` is ever needed, and a 6-DoF arm takes
seconds.  The results are sympy expressions in ``sin(q1)``, ``cos(q2)``, ... fully expanded
(sums of angles appear as products: sin(q1 + q2) -> sin q1 cos q2 + cos q1 sin q2).
"""

from __future__ import annotations

import functools

import sympy
from sympy import QQ
from sympy.polys.rings import PolyElement
from sympy.polys.rings import ring as poly_ring

from ..errors import InputError
from ..kinematics import REVOLUTE
from .exact import exact_number, skew
from .model import SymbolicModel


class TrigAlgebra:
    """Polynomials in sin q_i, cos q_i (revolute), q_i (prismatic), q̇, q̈, τ and the
    parameters, over QQ, kept reduced modulo sin² q_i + cos² q_i = 1 (a canonical form).

    Ring elements are sympy ``PolyElement`` (dicts monomial -> rational).
    """

    def __init__(self, smodel: SymbolicModel):
        self.smodel = smodel
        gens, self.joint_gens = [], []
        for k, kind in enumerate(smodel.joint_types):
            if kind == REVOLUTE:
                pair = (sympy.Dummy(f"s{k + 1}"), sympy.Dummy(f"c{k + 1}"))
                self.joint_gens.append(pair)
                gens += pair
            else:
                self.joint_gens.append((smodel.q[k],))
                gens.append(smodel.q[k])
        gens += [*smodel.qd, *smodel.qdd, *smodel.tau, *smodel.parameters]
        self.symbols = gens
        self.ring, *elements = poly_ring(gens, QQ) if gens else poly_ring("_unused", QQ)
        self.gen = dict(zip(gens, elements))
        index = {s: i for i, s in enumerate(gens)}
        self.pairs = [(index[g[0]], index[g[1]]) for g in self.joint_gens if len(g) == 2]
        self.to_trig = {}
        for k, g in enumerate(self.joint_gens):
            if len(g) == 2:
                self.to_trig[g[0]] = sympy.sin(smodel.q[k])
                self.to_trig[g[1]] = sympy.cos(smodel.q[k])
        self.from_trig = {v: k for k, v in self.to_trig.items()}

    # -- construction and conversion ------------------------------------------------
    def const(self, expr) -> PolyElement:
        """A constant or parameter expression (polynomial in the parameters) as an element."""
        try:
            return self.ring.from_expr(sympy.sympify(expr)) if expr != 0 else self.ring.zero
        except (ValueError, sympy.PolynomialError, sympy.CoercionFailed) as exc:
            raise InputError(f"parameter {expr!r} must be a polynomial in its symbols with rational "
                             f"numbers ({exc})") from None

    def var(self, symbol) -> PolyElement:
        return self.gen[symbol]

    def sin_cos(self, k: int):
        """(sin q_k, cos q_k) of revolute joint k as ring elements."""
        s, c = self.joint_gens[k]
        return self.gen[s], self.gen[c]

    def to_expr(self, p) -> sympy.Expr:
        """Ring element -> sympy expression in sin(q_k), cos(q_k), q, q̇, ... (expanded)."""
        return p.as_expr().xreplace(self.to_trig) if p else sympy.Integer(0)

    def from_expr(self, expr) -> PolyElement:
        """Any polynomial in sines and cosines of sums of joint angles (and the ring's
        other symbols) -> reduced ring element; raises InputError if it is not one."""
        expr = sympy.expand_trig(sympy.sympify(expr))
        expr = expr.xreplace({f: exact_number(f) for f in expr.atoms(sympy.Float)}).xreplace(self.from_trig)
        stray = expr.free_symbols - set(self.symbols)
        if stray:
            raise InputError(f"expression has symbols outside the model: {sorted(s.name for s in stray)} "
                             "(or an angle inside a function other than sin/cos of sums)")
        try:
            return self.reduce(self.ring.from_expr(expr))
        except (ValueError, sympy.PolynomialError, sympy.CoercionFailed) as exc:
            raise InputError(f"not a polynomial in sin/cos of the joint angles: {exc}") from None

    # -- the canonical form -----------------------------------------------------------
    def reduce(self, p):
        """Rewrite sin² q_k as 1 − cos² q_k until every sine has degree ≤ 1."""
        if not self.pairs or all(m[s] < 2 for m in p.itermonoms() for s, _ in self.pairs):
            return p
        out, stack = {}, list(p.items())
        while stack:
            monom, coeff = stack.pop()
            for s, c in self.pairs:
                if monom[s] >= 2:
                    lower = list(monom)
                    lower[s] -= 2
                    stack.append((tuple(lower), coeff))      # s^e = s^(e-2) (1 - c^2)
                    lower[c] += 2
                    stack.append((tuple(lower), -coeff))
                    break
            else:
                out[monom] = out.get(monom, QQ.zero) + coeff
        return self.ring.from_dict({m: v for m, v in out.items() if v})

    def diff_q(self, p, k: int):
        """∂p/∂q_k: d sin = cos dq, d cos = −sin dq (revolute), or ∂/∂q_k (prismatic)."""
        g = self.joint_gens[k]
        if len(g) == 1:
            return p.diff(self.gen[g[0]])
        s, c = self.gen[g[0]], self.gen[g[1]]
        return self.reduce(p.diff(s) * c - p.diff(c) * s)

    def at_zero(self, p, symbols):
        """p with the generators ``symbols`` set to 0 (the terms free of them)."""
        idx = [self.symbols.index(s) for s in symbols]
        return self.ring.from_dict({m: v for m, v in p.items() if not any(m[i] for i in idx)})

    # -- 3-vectors and 3x3 matrices as lists, reduced after every product -------------
    def vec(self, column) -> list:
        return [self.const(e) for e in column]

    def mat(self, matrix) -> list:
        return [[self.const(matrix[i, j]) for j in range(3)] for i in range(3)]

    def mv(self, A, v) -> list:
        return [self.reduce(sum((A[i][j] * v[j] for j in range(3)), self.ring.zero)) for i in range(3)]

    def mtv(self, A, v) -> list:
        """Aᵀ v."""
        return [self.reduce(sum((A[j][i] * v[j] for j in range(3)), self.ring.zero)) for i in range(3)]

    def mm(self, A, B) -> list:
        return [[self.reduce(sum((A[i][k] * B[k][j] for k in range(3)), self.ring.zero)) for j in range(3)]
                for i in range(3)]

    def cross(self, a, b) -> list:
        return [self.reduce(a[1] * b[2] - a[2] * b[1]), self.reduce(a[2] * b[0] - a[0] * b[2]),
                self.reduce(a[0] * b[1] - a[1] * b[0])]

    def dot(self, a, b):
        return self.reduce(sum((x * y for x, y in zip(a, b)), self.ring.zero))


@functools.lru_cache(maxsize=16)
def _algebra(smodel: SymbolicModel) -> TrigAlgebra:
    """One algebra per model (SymbolicModel hashes by identity), so that both routes'
    results live in the same ring."""
    return TrigAlgebra(smodel)


def _add(a, b) -> list:
    return [x + y for x, y in zip(a, b)]


def _scale(v, s) -> list:
    return [x * s for x in v]


# ============================================================================ kinematics
def _joint_rotation(alg: TrigAlgebra, k: int) -> list:
    """Rotation of joint k by q_k about its axis a, Rodrigues: 1 + sin q [a]× + (1 − cos q)[a]×²."""
    sm = alg.smodel
    if sm.joint_types[k] != REVOLUTE:
        return alg.mat(sympy.eye(3))
    a = sm.axes[k]
    K = skew(a)
    K2 = K * K
    s, c = alg.sin_cos(k)
    one = alg.ring.one
    return [[alg.const(int(i == j)) + s * alg.const(K[i, j]) + (one - c) * alg.const(K2[i, j])
             for j in range(3)] for i in range(3)]


def _link_placement(alg: TrigAlgebra, k: int):
    """(R, p): link k's frame in its parent's frame, ``x_parent = R x_k + p`` (as
    :func:`dyn_plugin.kinematics.link_placements`)."""
    sm = alg.smodel
    rest = alg.mat(sm.rotations[k])
    R = alg.mm(rest, _joint_rotation(alg, k))
    p = alg.vec(sm.positions[k])
    if sm.joint_types[k] != REVOLUTE:   # prismatic: the frame slides by q_k along its axis
        p = _add(p, _scale(alg.mv(rest, alg.vec(sm.axes[k])), alg.var(sm.q[k])))
    return R, p
