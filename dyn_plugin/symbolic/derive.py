"""Closed-form (symbolic) dynamics of any :class:`~dyn_plugin.model.RobotModel`, two ways.

The configuration-space form of Horn & Linge, "Analytical generation of the dynamical
equations for mechanical manipulators" (ROBMAT; The Mathematica Journal 4(4), 1994), §4.2::

    F = M(q) q̈ + 2 B(q) [q̇q̇] + C(q) [q̇²] + G(q)

(M, B, C, G as in :mod:`.closed_form`), derived by two independent routes, each returning a
:class:`ClosedForm`:

* :func:`lagrange_euler` -- energy and Jacobians (Schilling 6-2-15: M = Σ_k m_k A_kᵀA_k +
  B_kᵀ D_k B_k; gravity 6-4-7), Christoffel symbols from ∂M/∂q (Fu 3.2-33);
* :func:`newton_euler` -- the recursion of :mod:`dyn_plugin.algorithms.newton_euler` (Fu
  Table 3.3 with 3.3-57) run on symbols; then M = ∂τ/∂q̈, G = τ(q, 0, 0),
  C_ij = ½ ∂²τ_i/∂q̇_j², B_i,(jk) = ½ ∂²τ_i/∂q̇_j∂q̇_k.

:func:`identical` shows that the two agree (difference reduced to exactly 0).

This module gathers the names of the package's parts, one concern each:

* :mod:`.exact` -- model floats as exact rationals, exact rotations and axes;
* :mod:`.model` -- :class:`SymbolicModel`, :func:`symbolic_model` and the parameter symbols;
* :mod:`.algebra` -- :class:`TrigAlgebra`, the canonical trigonometric polynomials;
* :mod:`.lagrange_derivation`, :mod:`.newton_derivation` -- the two routes;
* :mod:`.closed_form` -- :class:`ClosedForm`, :func:`canonical`, :func:`identical`,
  :func:`forward_dynamics`, :class:`NumericDynamics`;
* :mod:`.printing` -- :func:`compact` and the layout of the equations;

and :func:`format_equations`, which picks a route and prints its closed form.
"""

from __future__ import annotations

from ..errors import InputError
from ..model import RobotModel

from .algebra import TrigAlgebra
from .closed_form import (MAX_FD_JOINTS, ClosedForm, NumericDynamics, canonical, forward_dynamics, identical,
                          lambdify_closed_form)
from .exact import DECIMAL_RTOL, SNAP, exact_axis, exact_number, exact_rotation
from .lagrange_derivation import lagrange_euler
from .model import AXES, GROUPS, SymbolicModel, symbolic_model
from .newton_derivation import newton_euler
from .printing import _assemble, compact

__all__ = [
    "GROUPS", "SymbolicModel", "ClosedForm", "NumericDynamics", "symbolic_model", "lagrange_euler",
    "newton_euler", "identical", "canonical", "forward_dynamics", "lambdify_closed_form",
    "format_equations", "exact_number", "exact_rotation", "exact_axis", "compact",
    # constants and the algebra, for readers of the parts
    "AXES", "DECIMAL_RTOL", "MAX_FD_JOINTS", "SNAP", "TrigAlgebra",
]


def format_equations(model, latex: bool = False, symbols=(), route: str = "newton_euler") -> str:
    """The configuration-space equations M, B, C, G of ``model`` as text for people.

    ``model``: a RobotModel (``dp.load_robot(name)``) or a SymbolicModel.
    ``latex``: LaTeX (an ``align*`` block per matrix) instead of sympy's unicode pretty print.
    ``symbols``: parameter groups to keep symbolic (see :func:`symbolic_model`).
    ``route``: ``"newton_euler"`` (default) or ``"lagrange_euler"``; the result is the same.
    Only non-zero entries are printed, M's upper triangle only (M is symmetric); sums of
    angles are contracted (:func:`compact`) and written as Fu's S2, C23 (a legend follows);
    numbers from numeric data are shown with 6 significant digits.
    """
    if not isinstance(model, (RobotModel, SymbolicModel)):
        raise InputError(f"format_equations takes a RobotModel (dp.load_robot(name)) or a SymbolicModel, "
                         f"got {model!r}")
    smodel = model if isinstance(model, SymbolicModel) else symbolic_model(model, symbols)
    derive = {"newton_euler": newton_euler, "lagrange_euler": lagrange_euler}.get(route)
    if derive is None:
        raise InputError(f"unknown route {route!r}; use 'newton_euler' or 'lagrange_euler'")
    return _assemble(derive(smodel), latex)
