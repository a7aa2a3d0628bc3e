"""The Newton-Euler derivation of the closed form (:func:`newton_euler`).

τ(q, q̇, q̈) comes from the compiled kernels' own recursion
(:func:`dyn_plugin.compiled.newton_euler._rnea_state`: Fu Table 3.3 with 3.3-57, link moments
about the origin as Khalil's, every joint in its z normal form), run by
:mod:`dyn_plugin.compiled.traced` on the exact trigonometric polynomials of
:mod:`.algebra` instead of floats: one statement of the recursion serves the numeric
kernels and the symbolic derivation.  The model is packed exactly by
:func:`dyn_plugin.compiled.layout.pack` (an exactly unit rational axis gives an exactly
orthogonal z-normal-form rotation), so τ is exact and, reduced to the canonical form,
identical to the Lagrange-Euler route's (:func:`~.closed_form.identical`).

Then M = ∂τ/∂q̈, G = τ(q, 0, 0), C_ij = ½ ∂²τ_i/∂q̇_j², B_i,(jk) = ½ ∂²τ_i/∂q̇_j∂q̇_k.
"""

from __future__ import annotations

import time

import numpy as np
import sympy
from sympy import QQ

from ..compiled import layout
from ..compiled.newton_euler import _project, _rnea_state
from ..compiled.scratch import ROWS
from ..compiled.traced import python_form
from ..kinematics import REVOLUTE
from ..terms import Terms
from .algebra import TrigAlgebra, _algebra
from .closed_form import ClosedForm, _pairs
from .model import SymbolicModel

_STRUCTURE = (layout.PARENT, layout.KIND)      # packed columns that stay plain numbers


def _number_type(alg: TrigAlgebra):
    """The number type the recursion runs on: a ring element of ``alg``, reduced modulo
    sin² + cos² = 1 after every product (so that the polynomials stay small)."""

    def element(x):
        if isinstance(x, Reduced):
            return x.p
        return alg.ring(sympy.Rational(x) if isinstance(x, float) else x)      # 0.0, 2.0: exact

    class Reduced:
        __slots__ = ("p",)

        def __init__(self, p):
            self.p = p

        def __add__(self, other):
            return Reduced(self.p + element(other))

        __radd__ = __add__

        def __sub__(self, other):
            return Reduced(self.p - element(other))

        def __rsub__(self, other):
            return Reduced(element(other) - self.p)

        def __mul__(self, other):
            other = element(other)
            return Reduced(alg.reduce(self.p * other) if other else alg.ring.zero)

        __rmul__ = __mul__

        def __neg__(self):
            return Reduced(-self.p)

    return Reduced


class _Angle:
    """Joint k's angle: the recursion only takes its cosine and sine."""

    def __init__(self, k: int):
        self.k = k


def _exact_packed_model(smodel: SymbolicModel, alg: TrigAlgebra, number) -> np.ndarray:
    """The packed model of :mod:`dyn_plugin.compiled.layout`, every entry exact."""
    P = layout.pack(smodel.parents, smodel.joint_types, smodel.rotations, smodel.positions, smodel.axes,
                    smodel.bodies(), smodel.gravity)
    for (i, column), value in np.ndenumerate(P):
        if column not in _STRUCTURE:
            P[i, column] = number(alg.const(value))
    return P


def joint_torques(smodel: SymbolicModel) -> list:
    """τ (n ring elements of the model's algebra): the kernels' Newton-Euler recursion on
    exact polynomials, every term (:data:`~dyn_plugin.terms.Terms.ALL`)."""
    alg = _algebra(smodel)
    number = _number_type(alg)
    n = smodel.n
    P = _exact_packed_model(smodel, alg, number)
    Q, QD, QDD = (np.empty((1, n), dtype=object) for _ in range(3))
    for k in range(n):
        Q[0, k] = _Angle(k) if smodel.joint_types[k] == REVOLUTE else number(alg.var(smodel.q[k]))
        QD[0, k], QDD[0, k] = number(alg.var(smodel.qd[k])), number(alg.var(smodel.qdd[k]))
    rnea = python_form(_rnea_state, cos=lambda a: number(alg.sin_cos(a.k)[1]),
                       sin=lambda a: number(alg.sin_cos(a.k)[0]))
    W = np.empty((n, ROWS, 3), dtype=object)
    rnea(P, Q, QD, QDD, 0, int(Terms.ALL), W)
    return [python_form(_project)(P, W, i).p for i in range(n)]


def newton_euler(smodel: SymbolicModel) -> "ClosedForm":
    """Closed forms by the Newton-Euler route: τ(q, q̇, q̈) by the link-frame recursion,
    then M = ∂τ/∂q̈, G = τ(q, 0, 0), C_ij = ½ ∂²τ_i/∂q̇_j², B_i,(jk) = ½ ∂²τ_i/∂q̇_j∂q̇_k
    (τ is quadratic in q̇: 2B[q̇q̇] + C[q̇²] is its q̇ part)."""
    start = time.perf_counter()
    alg = _algebra(smodel)
    n = smodel.n
    tau = joint_torques(smodel)
    qd = [alg.var(s) for s in smodel.qd]
    qdd = [alg.var(s) for s in smodel.qdd]
    half = QQ(1, 2)
    M = [[tau[i].diff(qdd[j]) for j in range(n)] for i in range(n)]
    G = [alg.at_zero(t, smodel.qd + smodel.qdd) for t in tau]
    first = [[tau[i].diff(qd[j]) for j in range(n)] for i in range(n)]
    B = [[first[i][j].diff(qd[k]) * half for j, k in _pairs(n)] for i in range(n)]
    C = [[first[i][j].diff(qd[j]) * half for j in range(n)] for i in range(n)]
    return ClosedForm._from_polys(alg, "newton_euler", M, B, C, G, time.perf_counter() - start, tau=tau)
