"""The closed form of one model's dynamics, and what is computed from it.

:class:`ClosedForm` holds the configuration-space form of Horn & Linge, "Analytical
generation of the dynamical equations for mechanical manipulators" (ROBMAT; The
Mathematica Journal 4(4), 1994), §4.2::

    F = M(q) q̈ + 2 B(q) [q̇q̇] + C(q) [q̇²] + G(q)

M (n, n) inertia matrix; B (n, n(n−1)/2) Coriolis coefficients, column (j, k) for j < k in
the order (1,2), (1,3), ..., (1,n), (2,3), ...; C (n, n) centrifugal coefficients, column j
for q̇_j²; G (n, 1) gravity; F = τ, the joint torques/forces (N·m or N).  B_i,(jk) = h_ijk
and C_ij = h_ijj, h_ikm the Christoffel symbols of the first kind of M (Fu 3.2-33), exactly
as the numeric :func:`dyn_plugin.algorithms.lagrange_euler.configuration_space`.

From a closed form: :func:`canonical` and :func:`identical` (exact comparison, no
numerics), :func:`forward_dynamics` (q̈ in closed form, n ≤ 3, ROBMAT §4.4) and
:class:`NumericDynamics` / :func:`lambdify_closed_form` (numpy functions).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Optional

import numpy as np
import sympy

from ..errors import InputError, ModelError
from .algebra import TrigAlgebra, _algebra
from .model import SymbolicModel

MAX_FD_JOINTS = 3       # closed-form forward dynamics (adjugate / determinant) up to n = 3


def _pairs(n: int) -> list:
    """ROBMAT's order of the Coriolis products q̇_j q̇_k, j < k: (1,2), (1,3), ..., (2,3), ..."""
    return [(j, k) for j in range(n) for k in range(j + 1, n)]


class ClosedForm:
    """M, B, C, G and τ of one model in closed form (sympy), from one route.

    Attributes
    ----------
    route : ``"lagrange_euler"`` or ``"newton_euler"``
    model : the :class:`SymbolicModel`
    M (n, n), B (n, n(n−1)/2), C (n, n), G (n, 1), tau (n, 1) : sympy ImmutableMatrix,
        expanded polynomials in sin q_k, cos q_k (revolute), q_k (prismatic), q̇, q̈ and the
        parameters (built on first access).
    q, qd, qdd : tuples of joint symbols.  ``seconds``: time of the derivation.
    """

    def __init__(self, algebra: TrigAlgebra, route: str, polys: dict, seconds: float):
        self._alg, self.route, self._polys, self.seconds = algebra, route, polys, seconds
        self.model = algebra.smodel

    @classmethod
    def _from_polys(cls, alg, route, M, B, C, G, seconds, tau=None) -> "ClosedForm":
        n = alg.smodel.n
        if tau is None:   # F = M q̈ + 2B[q̇q̇] + C[q̇²] + G  (ROBMAT §4.2)
            qd = [alg.var(s) for s in alg.smodel.qd]
            qdd = [alg.var(s) for s in alg.smodel.qdd]
            tau = [sum((M[i][j] * qdd[j] + C[i][j] * qd[j] ** 2 for j in range(n)), G[i])
                   + sum((B[i][c] * qd[j] * qd[k] * 2 for c, (j, k) in enumerate(_pairs(n))), alg.ring.zero)
                   for i in range(n)]
        polys = {"M": M, "B": B, "C": C, "G": [[g] for g in G], "tau": [[t] for t in tau]}
        return cls(alg, route, polys, seconds)

    q = property(lambda self: self.model.q)
    qd = property(lambda self: self.model.qd)
    qdd = property(lambda self: self.model.qdd)

    @functools.cached_property
    def M(self):
        return self._matrix("M", self.model.n)

    @functools.cached_property
    def B(self):
        return self._matrix("B", len(_pairs(self.model.n)))

    @functools.cached_property
    def C(self):
        return self._matrix("C", self.model.n)

    @functools.cached_property
    def G(self):
        return self._matrix("G", 1)

    @functools.cached_property
    def tau(self):
        return self._matrix("tau", 1)

    def _matrix(self, name: str, cols: int) -> sympy.ImmutableMatrix:
        rows = self._polys[name]
        return sympy.ImmutableMatrix(len(rows), cols, [self._alg.to_expr(p) for row in rows for p in row])

    def velocity_products(self) -> sympy.ImmutableMatrix:
        """ROBMAT's [q̇q̇] (n(n−1)/2, 1): q̇_j q̇_k for j < k in B's column order."""
        return sympy.ImmutableMatrix([self.qd[j] * self.qd[k] for j, k in _pairs(self.model.n)])

    def velocity_squares(self) -> sympy.ImmutableMatrix:
        """ROBMAT's [q̇²] (n, 1)."""
        return sympy.ImmutableMatrix([v ** 2 for v in self.qd])

    def __repr__(self) -> str:
        return f"ClosedForm({self.model.name!r}, route={self.route!r}, n={self.model.n}, {self.seconds:.2f} s)"


def canonical(expr, smodel: SymbolicModel) -> sympy.Expr:
    """``expr`` (a polynomial in sines/cosines of sums of the joint angles, prismatic q, q̇,
    q̈, τ and the model's parameters) in the canonical reduced form: expanded, sums of
    angles expanded, sin² q_k replaced by 1 − cos² q_k.  Two such expressions are equal
    exactly when their canonical forms are identical; ``canonical(a − b, m) == 0`` proves it."""
    alg = _algebra(smodel)
    return alg.to_expr(alg.from_expr(expr))


def identical(a: ClosedForm, b: ClosedForm) -> bool:
    """True when M, B, C, G and τ of two closed forms are identical: each difference of the
    sympy matrices reduces to exactly 0 (:func:`canonical`), no numerics involved."""
    if a.model.n != b.model.n:
        return False
    alg = _algebra(a.model)
    for name in ("M", "B", "C", "G", "tau"):
        A, B = getattr(a, name), getattr(b, name)
        if A.shape != B.shape:
            return False
        if any(alg.from_expr(x - y) for x, y in zip(A, B)):
            return False
    return True


# ============================================================================ forward dynamics
def _adjugate_det(alg: TrigAlgebra, M):
    """Adjugate (n, n) and determinant of a symmetric n ≤ 3 matrix of ring elements."""
    n = len(M)
    if n == 1:
        return [[alg.ring.one]], M[0][0]

    def minor(i, j):
        rows = [r for r in range(n) if r != i]
        cols = [c for c in range(n) if c != j]
        if n == 2:
            return M[rows[0]][cols[0]]
        a, b = rows
        c, d = cols
        return alg.reduce(M[a][c] * M[b][d] - M[a][d] * M[b][c])

    adj = [[minor(j, i) * (-1) ** (i + j) for j in range(n)] for i in range(n)]
    det = alg.reduce(sum((M[0][j] * adj[j][0] for j in range(n)), alg.ring.zero))
    return adj, det


def forward_dynamics(closed_form: ClosedForm, cancel: bool = True) -> sympy.ImmutableMatrix:
    """q̈ = M⁻¹(τ − 2B[q̇q̇] − C[q̇²] − G) in closed form (ROBMAT §4.4), n ≤ 3 joints.

    Computed as adj(M)(τ − bias)/det(M) with τ the symbols ``tau1..taun``; each entry is
    one fraction, with the factors common to numerator and determinant cancelled when
    ``cancel`` (polynomial gcd).  Returns an (n, 1) sympy matrix in q, q̇, τ, parameters.
    """
    n = closed_form.model.n
    if n > MAX_FD_JOINTS:
        raise ModelError(f"closed-form forward dynamics is limited to n <= {MAX_FD_JOINTS} joints "
                         f"(model {closed_form.model.name!r} has {n}): M⁻¹ by cofactors grows too fast; "
                         "use get_backend('newton_euler', model).forward_dynamics for numbers")
    alg, polys = closed_form._alg, closed_form._polys
    M = polys["M"]
    bias = [alg.at_zero(t[0], closed_form.model.qdd) for t in polys["tau"]]     # τ(q, q̇, 0)
    rhs = [alg.var(closed_form.model.tau[i]) - bias[i] for i in range(n)]
    adj, det = _adjugate_det(alg, M)
    out = []
    for i in range(n):
        num = alg.reduce(sum((adj[i][j] * rhs[j] for j in range(n)), alg.ring.zero))
        den = det
        if cancel:
            common = num.gcd(den)
            if not common.is_ground:
                num, den = num.exquo(common), den.exquo(common)
            if sum(c < 0 for c in den.itercoeffs()) * 2 > len(den):   # fewer minus signs below
                num, den = -num, -den
        out.append(alg.to_expr(num) / alg.to_expr(den))
    return sympy.ImmutableMatrix(n, 1, out)


# ============================================================================ numbers out
class NumericDynamics:
    """Numeric functions lambdified from a :class:`ClosedForm` (numpy).

    Each method takes one state (n,) or a batch (N, n) and returns the matching shape:
    ``mass_matrix(q)`` (n, n), ``configuration_space(q)`` -> (M, B, C, G),
    ``gravity_torques(q)`` (n,), ``inverse_dynamics(q, qd, qdd)`` (n,),
    ``forward_dynamics(q, qd, tau)`` (n,) (n ≤ 3; lambdified on first use).
    """

    def __init__(self, closed_form: ClosedForm, values: Optional[Mapping] = None):
        self.closed_form = closed_form
        sm = closed_form.model
        given = dict(sm.values)
        given.update({(sm.symbol(k) if isinstance(k, str) else k): v for k, v in (values or {}).items()})
        missing = [s.name for s in sm.parameters if s not in given]
        if missing:
            raise InputError(f"no numeric value for the parameters {', '.join(missing)}; pass values={{name: number}}")
        self._subs = {s: sympy.Float(given[s], 17) for s in sm.parameters}
        q = list(sm.q)
        self._config = self._lambdify([q], [closed_form.M, closed_form.B, closed_form.C, closed_form.G])
        self._tau = self._lambdify([q, list(sm.qd), list(sm.qdd)], closed_form.tau)
        self._fd = None

    def _lambdify(self, args, exprs):
        exprs = [e.xreplace(self._subs) for e in exprs] if isinstance(exprs, list) else exprs.xreplace(self._subs)
        return sympy.lambdify(args, exprs, modules="numpy", cse=False)

    def _batched(self, fn, *arrays):
        arrays = [np.asarray(a, dtype=float) for a in arrays]
        n = self.closed_form.model.n
        if arrays[0].ndim == 1:
            return fn(*arrays)
        if arrays[0].ndim != 2 or arrays[0].shape[1] != n:
            raise InputError(f"expected states of shape (n,) or (N, n) with n = {n}, got {arrays[0].shape}")
        results = [fn(*row) for row in zip(*arrays)]
        if isinstance(results[0], tuple):
            return tuple(np.array(part) for part in zip(*results))
        return np.array(results)

    def configuration_space(self, q):
        """(M (n, n), B (n, n(n−1)/2), C (n, n), G (n,)) at q."""
        def one(qi):
            M, B, C, G = (np.array(x, dtype=float) for x in self._config(list(qi)))
            return M, B.reshape(len(qi), -1), C, G.ravel()
        return self._batched(one, q)

    def mass_matrix(self, q):
        out = self.configuration_space(q)
        return out[0]

    def gravity_torques(self, q):
        return self.configuration_space(q)[3]

    def inverse_dynamics(self, q, qd, qdd):
        return self._batched(lambda a, b, c: np.array(self._tau(list(a), list(b), list(c)), dtype=float).ravel(),
                             q, qd, qdd)

    def forward_dynamics(self, q, qd, tau):
        if self._fd is None:
            sm = self.closed_form.model
            self._fd = self._lambdify([list(sm.q), list(sm.qd), list(sm.tau)], forward_dynamics(self.closed_form))
        return self._batched(lambda a, b, c: np.array(self._fd(list(a), list(b), list(c)), dtype=float).ravel(),
                             q, qd, tau)


def lambdify_closed_form(closed_form: ClosedForm, values: Optional[Mapping] = None) -> NumericDynamics:
    """Numeric (numpy) functions of a closed form; parameter values default to the model's
    (``SymbolicModel.values``), ``values`` ({symbol or name: number}) adds or overrides."""
    return NumericDynamics(closed_form, values)
