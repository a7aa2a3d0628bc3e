"""Closed-form (symbolic) dynamics of any :class:`~dyn_plugin.model.RobotModel`, two ways.

The configuration-space form of Horn & Linge's ROBMAT (seed 003 §4.2)::

    F = M(q) q̈ + 2 B(q) [q̇q̇] + C(q) [q̇²] + G(q)

M (n, n) inertia matrix; B (n, n(n−1)/2) Coriolis coefficients, column (j, k) for j < k in
the order (1,2), (1,3), ..., (1,n), (2,3), ...; C (n, n) centrifugal coefficients, column j
for q̇_j²; G (n, 1) gravity; F = τ, the joint torques/forces (N·m or N).  B_i,(jk) = h_ijk and C_ij = h_ijj, h_ikm the Christoffel symbols
of the first kind of M (Fu 3.2-33), exactly as the numeric
:func:`dyn_plugin.algorithms.lagrange_euler.configuration_space`.

Two independent derivations, each returning a :class:`ClosedForm`:

* :func:`lagrange_euler` -- energy and Jacobians (Schilling 6-2-15: M = Σ_k m_k A_kᵀA_k +
  B_kᵀ D_k B_k; gravity 6-4-7), Christoffel symbols from ∂M/∂q (Fu 3.2-33);
* :func:`newton_euler` -- the recursion of :mod:`dyn_plugin.algorithms.newton_euler` (Fu
  Table 3.3 with 3.3-57) run on symbols; then M = ∂τ/∂q̈, G = τ(q, 0, 0),
  C_ij = ½ ∂²τ_i/∂q̇_j², B_i,(jk) = ½ ∂²τ_i/∂q̇_j∂q̇_k.

:func:`identical` shows that the two agree (difference reduced to exactly 0).

How the algebra stays exact and fast
------------------------------------
Everything is computed in a polynomial ring over the rationals whose generators are
sin q_i and cos q_i (revolute joints), q_i (prismatic joints), q̇_i, q̈_i, τ_i and the
parameter symbols; every product is reduced modulo sin² q_i + cos² q_i = 1 (sin² → 1 − cos²).
That reduced form is canonical (a polynomial at most linear in each sin q_i), so equal
closed forms are equal polynomials -- no ``trigsimp`` is ever needed, and a 6-DoF arm takes
seconds.  The results are sympy expressions in ``sin(q1)``, ``cos(q2)``, ... fully expanded
(sums of angles appear as products: sin(q1 + q2) -> sin q1 cos q2 + cos q1 sin q2).

Numbers
-------
Numeric model data become exact rationals (no sympy Floats): values within 1e-12 of 0 are
exact zeros; any other float becomes the shortest decimal within 1e-14 relative
(0.5390000000000001 -> 539/1000, 2.5099999999999993 -> 251/100).  Joint rotations become
exactly orthogonal rational matrices through their rationalized quaternion
(:func:`exact_rotation`) and axes exactly unit rational vectors (:func:`exact_axis`), with
the rpy round-off snapped (cos(π/2) = 6e-17 -> 0): rotations by multiples of 90° (every
bundled robot) come out with entries exactly 0 and ±1, other angles within about 1e-16,
and both derivations stay identical for any tree.

Parameter symbols (:func:`symbolic_model`, 1-based link/joint numbers k)
------------------------------------------------------------------------
masses    ``m{k}`` (positive)
lengths   non-zero entries of joint k's offset in its parent link p's frame (p = 0: base):
          ``l{p}`` if the offset has one non-zero entry, else ``l{p}x``, ``l{p}y``, ``l{p}z``
          (``l{p}_{k}...`` when link p carries several joints); positive, the sign of the
          entry is kept outside (PUMA joint 4 at (−0.0203, −0.4331, 0): (−l3x, −l3y, 0)).
coms      non-zero entries of link k's centre of mass: ``c{k}x``, ``c{k}y``, ``c{k}z`` (real).
inertias  non-zero entries of link k's inertia about its centre of mass: ``I{k}xx``,
          ``I{k}yy``, ``I{k}zz`` (positive), ``I{k}xy``, ``I{k}xz``, ``I{k}yz`` (real).
gravity   one non-zero entry: ``g`` (positive; (0, 0, −9.81) -> (0, 0, −g)); else
          ``gx``, ``gy``, ``gz``.
Zero entries stay exact zeros (structure is kept); pass explicit arrays to choose otherwise.
A symbolic length does not move a centre of mass: link frames are proximal (at the joint),
so a link's centre of mass does not depend on the offset of the next joint.

Joint variables: ``q{k}``, ``qd{k}`` (q̇), ``qdd{k}`` (q̈), ``tau{k}`` (applied force, in
forward dynamics); all real.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import time
from collections.abc import Mapping
from typing import Optional

import numpy as np
import sympy
from sympy import QQ
from sympy.polys.rings import PolyElement
from sympy.polys.rings import ring as poly_ring
from sympy.printing.pretty.pretty import PrettyPrinter
from sympy.printing.pretty.stringpict import prettyForm, stringPict
from sympy.simplify.fu import TR10i

from ..errors import InputError, ModelError
from ..kinematics import REVOLUTE
from ..model import RobotModel

GROUPS = ("masses", "lengths", "coms", "inertias", "gravity")
SNAP = 1e-12            # |x| below this is exactly 0 (and |x| − 1 for rotations and axes)
DECIMAL_RTOL = 1e-14    # a float becomes the shortest decimal this close to it
MAX_FD_JOINTS = 3       # closed-form forward dynamics (adjugate / determinant) up to n = 3
AXES = "xyz"

__all__ = [
    "GROUPS", "SymbolicModel", "ClosedForm", "NumericDynamics", "symbolic_model", "lagrange_euler",
    "newton_euler", "identical", "canonical", "forward_dynamics", "lambdify_closed_form",
    "format_equations", "exact_number", "exact_rotation", "exact_axis", "compact",
]


# ============================================================================ numbers
def exact_number(x: float, unit: bool = False, rtol: float = DECIMAL_RTOL) -> sympy.Rational:
    """The exact rational that stands for the float ``x``: 0 within 1e-12, ±1 within 1e-12
    when ``unit``, else the shortest decimal within ``rtol`` relative (module docstring)."""
    x = float(x)
    if not math.isfinite(x):
        raise InputError(f"parameter value must be finite, got {x!r}")
    if abs(x) < SNAP:
        return sympy.Integer(0)
    if unit and abs(abs(x) - 1.0) < SNAP:
        return sympy.Integer(1 if x > 0 else -1)
    for digits in range(1, 18):
        text = f"{x:.{digits}g}"
        if abs(float(text) - x) <= rtol * abs(x):
            return sympy.Rational(text)
    return sympy.Rational(x)  # unreachable: 17 digits round-trip any double


def _quaternion(R: np.ndarray) -> np.ndarray:
    """(w, x, y, z) of a rotation matrix, scaled so that its largest component is 1
    (Shepperd's method: divide by the largest of the four)."""
    t = np.trace(R)
    candidates = [1 + t, 1 + 2 * R[0, 0] - t, 1 + 2 * R[1, 1] - t, 1 + 2 * R[2, 2] - t]   # 4·(w², x², y², z²)
    k = int(np.argmax(candidates))
    off = {0: (R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]),
           1: (R[2, 1] - R[1, 2], R[0, 1] + R[1, 0], R[0, 2] + R[2, 0]),
           2: (R[0, 2] - R[2, 0], R[0, 1] + R[1, 0], R[1, 2] + R[2, 1]),
           3: (R[1, 0] - R[0, 1], R[0, 2] + R[2, 0], R[1, 2] + R[2, 1])}[k]
    big = candidates[k]
    others = iter(off)
    quat = np.array([big if i == k else next(others) for i in range(4)])
    return quat / np.abs(quat).max()


def exact_rotation(R) -> sympy.ImmutableMatrix:
    """An exactly orthogonal rational matrix for the rotation ``R`` (3, 3): its quaternion,
    scaled to a largest component of 1 and rationalized, through the Euler-Rodrigues formula
    R = (w² − |v|²)1 + 2vvᵀ + 2w[v]× over w² + |v|².  Multiples of 90° come out as exact
    0/±1 entries; other angles exact to about 1e-16, so both derivations stay identical."""
    R = np.asarray(R, dtype=float)
    w, x, y, z = (exact_number(c, unit=True, rtol=1e-16) for c in _quaternion(R))
    v = sympy.Matrix([x, y, z])
    K = sympy.Matrix([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    norm = w ** 2 + x ** 2 + y ** 2 + z ** 2
    exact = ((w ** 2 - x ** 2 - y ** 2 - z ** 2) * sympy.eye(3) + 2 * v * v.T + 2 * w * K) / norm
    if np.abs(np.array(exact, dtype=float) - R).max() > 1e-9:
        raise InputError(f"joint rotation is not a rotation matrix (orthonormal, det +1): {R.tolist()}")
    return sympy.ImmutableMatrix(exact)


def exact_axis(a) -> sympy.ImmutableMatrix:
    """An exactly unit rational vector (3, 1) for the unit axis ``a``: a rational point of
    the sphere by inverse stereographic projection (from the pole away from ``a``)."""
    a = np.asarray(a, dtype=float)
    sign = -1 if a[2] < 0 else 1
    b = sign * a                                      # b_z >= 0: project from (0, 0, -1)
    u, v = (exact_number(c / (1 + b[2]), unit=True, rtol=1e-16) for c in b[:2])
    d = 1 + u ** 2 + v ** 2
    return sympy.ImmutableMatrix([sign * 2 * u / d, sign * 2 * v / d, sign * (1 - u ** 2 - v ** 2) / d])


def _exact_expr(value, what: str) -> sympy.Expr:
    """A user-supplied parameter (number or sympy expression) with its floats made exact."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        return exact_number(value)
    try:
        expr = sympy.sympify(value)
    except (sympy.SympifyError, TypeError) as exc:
        raise InputError(f"{what}: cannot read {value!r} as a number or sympy expression ({exc})") from None
    return expr.xreplace({f: exact_number(f) for f in expr.atoms(sympy.Float)})


# ============================================================================ the symbolic model
@dataclasses.dataclass(frozen=True, eq=False)
class SymbolicModel:
    """A :class:`RobotModel` with exact (rational) numbers and chosen parameters as symbols.

    Per joint / link k (0-based tuples of length n): ``rotations`` (3, 3) and ``positions``
    (3, 1) rest placement of joint k in its parent link's frame; ``axes`` (3, 1);
    ``masses`` (kg); ``coms`` (3, 1) m, link frame; ``inertias`` (3, 3) kg m² about the
    centre of mass, link axes.  ``gravity`` (3, 1) m/s², physical, base frame.
    ``payloads``: extra point masses ``(link index, mass, position (3, 1))`` rigidly fixed
    to a link (Jack's payload m_p, seed 000).  ``values``: numeric value of every symbol
    this module created (for evaluation), keyed by symbol.
    """

    name: str
    joint_types: tuple
    parents: tuple
    rotations: tuple
    positions: tuple
    axes: tuple
    masses: tuple
    coms: tuple
    inertias: tuple
    gravity: sympy.ImmutableMatrix
    payloads: tuple
    values: dict
    q: tuple
    qd: tuple
    qdd: tuple
    tau: tuple

    @property
    def n(self) -> int:
        return len(self.joint_types)

    def ancestors(self, k: int) -> list:
        """Joints from the base to joint ``k`` (0-based, ``k`` included), base first."""
        path = []
        while k >= 0:
            path.append(k)
            k = self.parents[k]
        return path[::-1]

    def bodies(self) -> list:
        """Rigid bodies as ``(link, mass, com (3, 1), inertia about com (3, 3))``: every
        link's own body, then the payloads (point masses, zero inertia)."""
        own = [(k, self.masses[k], self.coms[k], self.inertias[k]) for k in range(self.n)]
        return own + [(k, m, p, sympy.zeros(3, 3)) for k, m, p in self.payloads]

    @property
    def parameters(self) -> tuple:
        """Every parameter symbol, sorted by name."""
        exprs = [*self.masses, *self.gravity] + [e for grp in (self.positions, self.coms, self.inertias)
                                                 for mat in grp for e in mat]
        exprs += [e for _, m, p in self.payloads for e in (m, *p)]
        free = set().union(*(sympy.sympify(e).free_symbols for e in exprs)) if exprs else set()
        return tuple(sorted(free, key=lambda s: s.name))

    def symbol(self, name: str) -> sympy.Symbol:
        """The parameter or joint symbol called ``name`` (``"m1"``, ``"q2"``, ...)."""
        for s in (*self.parameters, *self.q, *self.qd, *self.qdd, *self.tau):
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.parameters)
        raise InputError(f"model {self.name!r} has no symbol {name!r}; parameters: {known or 'none'}")

    def __repr__(self) -> str:
        kinds = "".join("R" if t == REVOLUTE else "P" for t in self.joint_types)
        params = ", ".join(s.name for s in self.parameters) or "none"
        return f"SymbolicModel({self.name!r}, n={self.n}, joints={kinds}, symbols: {params})"


def _parse_groups(symbols) -> dict:
    """``symbols`` (name, names, ``"all"`` or mapping) -> {group: True | explicit values}."""
    if symbols is None:
        return {}
    if isinstance(symbols, str):
        symbols = GROUPS if symbols == "all" else (symbols,)
    items = symbols.items() if isinstance(symbols, Mapping) else ((name, True) for name in symbols)
    spec = {}
    for name, value in items:
        if name == "all" and value is True:
            spec.update({g: True for g in GROUPS})
            continue
        if name not in GROUPS:
            raise InputError(f"unknown symbol group {name!r}; valid groups: {', '.join(GROUPS)} (or 'all')")
        if value is not False and value is not None:
            spec[name] = value
    return spec


def _explicit(group: str, value, shape: tuple) -> np.ndarray:
    """A user's explicit array for a group, as an object array of exact sympy expressions."""
    arr = np.empty(shape, dtype=object)
    try:
        given = np.array(value, dtype=object)
    except (TypeError, ValueError) as exc:
        raise InputError(f"symbols[{group!r}]: cannot read the array ({exc})") from None
    if given.shape != shape:
        raise InputError(f"{group} must have shape {shape}, got {given.shape}")
    for idx in np.ndindex(shape):
        arr[idx] = _exact_expr(given[idx], f"symbols[{group!r}]{list(idx)}")
    return arr


def _exact_array(values, unit: bool = False) -> np.ndarray:
    """Numeric array -> object array of exact rationals."""
    values = np.asarray(values, dtype=float)
    out = np.empty(values.shape, dtype=object)
    for idx in np.ndindex(values.shape):
        out[idx] = exact_number(values[idx], unit=unit)
    return out


def _signed_symbol(value, name: str, values: dict) -> sympy.Expr:
    """sign(value)·s with a positive symbol s named ``name``; records |value|."""
    s = sympy.Symbol(name, positive=True)
    values[s] = abs(float(value))
    return s if value > 0 else -s


def _real_symbol(value, name: str, values: dict, positive: bool = False) -> sympy.Symbol:
    s = sympy.Symbol(name, positive=True) if positive else sympy.Symbol(name, real=True)
    values[s] = float(value)
    return s


def _length_symbols(model: RobotModel, exact: np.ndarray, values: dict) -> np.ndarray:
    """Joint offsets with their non-zero entries as l{p}, l{p}x, ... (module docstring)."""
    out = exact.copy()
    for k in range(model.n):
        p = int(model.parents[k]) + 1
        siblings = sum(1 for j in range(model.n) if model.parents[j] == model.parents[k])
        stem = f"l{p}" if siblings == 1 else f"l{p}_{k + 1}"
        nonzero = [a for a in range(3) if exact[k, a] != 0]
        for a in nonzero:
            name = stem if len(nonzero) == 1 else stem + AXES[a]
            out[k, a] = _signed_symbol(exact[k, a], name, values)
    return out


def _com_symbols(exact: np.ndarray, values: dict) -> np.ndarray:
    out = exact.copy()
    for k, a in np.ndindex(exact.shape):
        if exact[k, a] != 0:
            out[k, a] = _real_symbol(exact[k, a], f"c{k + 1}{AXES[a]}", values)
    return out


def _inertia_symbols(exact: np.ndarray, values: dict) -> np.ndarray:
    out = exact.copy()
    for k, a, b in np.ndindex(exact.shape):
        if a <= b and exact[k, a, b] != 0:
            s = _real_symbol(exact[k, a, b], f"I{k + 1}{AXES[a]}{AXES[b]}", values, positive=a == b)
            out[k, a, b] = out[k, b, a] = s
    return out


def _gravity_symbols(exact: np.ndarray, values: dict) -> np.ndarray:
    out = exact.copy()
    nonzero = [a for a in range(3) if exact[a] != 0]
    for a in nonzero:
        out[a] = (_signed_symbol(exact[a], "g", values) if len(nonzero) == 1
                  else _real_symbol(exact[a], f"g{AXES[a]}", values))
    return out


def _group_arrays(model: RobotModel, spec: dict, values: dict) -> dict:
    """The five parameter groups as exact object arrays, symbols where ``spec`` asks."""
    exact = {"masses": _exact_array(model.masses), "lengths": _exact_array(model.joint_positions),
             "coms": _exact_array(model.coms), "inertias": _exact_array(model.inertias),
             "gravity": _exact_array(model.gravity)}
    makers = {
        "masses": lambda e: np.array([_real_symbol(v, f"m{k + 1}", values, positive=True) if v != 0 else v
                                      for k, v in enumerate(e)], dtype=object),
        "lengths": lambda e: _length_symbols(model, e, values),
        "coms": lambda e: _com_symbols(e, values),
        "inertias": lambda e: _inertia_symbols(e, values),
        "gravity": lambda e: _gravity_symbols(e, values),
    }
    for group, choice in spec.items():
        exact[group] = makers[group](exact[group]) if choice is True else _explicit(group, choice, exact[group].shape)
    return exact


def _payloads(model: RobotModel, payloads) -> tuple:
    """``[(link index or name, mass, position)]`` -> exact ``(index, mass, (3, 1))`` tuples."""
    out = []
    for entry in payloads or ():
        try:
            link, mass, position = entry
        except (TypeError, ValueError):
            raise InputError(f"a payload is (link, mass, position (3,)), got {entry!r}") from None
        if isinstance(link, str):
            if link not in model.link_names:
                raise InputError(f"payload link {link!r} is not a link of {model.name!r}: "
                                 f"{', '.join(model.link_names)}")
            link = model.link_names.index(link)
        if not isinstance(link, (int, np.integer)) or not 0 <= link < model.n:
            raise InputError(f"payload link must be a link name or an index in [0, {model.n}), got {link!r}")
        pos = _explicit("payload position", position, (3,))
        out.append((int(link), _exact_expr(mass, "payload mass"), sympy.ImmutableMatrix(3, 1, list(pos))))
    return tuple(out)


def symbolic_model(model: RobotModel, symbols=(), payloads=(), name: Optional[str] = None) -> SymbolicModel:
    """A :class:`SymbolicModel` of ``model`` with the chosen parameter groups as symbols.

    Parameters
    ----------
    model : RobotModel (any fixed-base tree; revolute and prismatic joints)
    symbols : which parameters become symbols (names in the module docstring):
        a group name, several (``("masses", "lengths")``), ``"all"``, or a mapping
        ``{group: True | array}``; an array (numbers or sympy expressions, polynomial in
        their symbols) replaces the group outright: masses (n,), lengths (n, 3) (joint
        offsets), coms (n, 3), inertias (n, 3, 3), gravity (3,).
        Groups: ``masses``, ``lengths``, ``coms``, ``inertias``, ``gravity``.
    payloads : point masses rigidly fixed to links, ``[(link name or index, mass, (x, y, z))]``
        (position in the link frame); masses and positions may be symbols.
    """
    if not isinstance(model, RobotModel):
        raise InputError(f"symbolic_model needs a RobotModel, got {type(model).__name__}")
    spec = _parse_groups(symbols)
    values: dict = {}
    groups = _group_arrays(model, spec, values)
    n = model.n
    joint = [sympy.symbols(f"{stem}1:{n + 1}", real=True) if n else () for stem in ("q", "qd", "qdd", "tau")]
    smodel = SymbolicModel(
        name=name or model.name, joint_types=tuple(model.joint_types), parents=tuple(int(p) for p in model.parents),
        rotations=tuple(exact_rotation(r) for r in model.joint_rotations),
        positions=tuple(sympy.ImmutableMatrix(3, 1, list(p)) for p in groups["lengths"]),
        axes=tuple(exact_axis(a) for a in model.axes),
        masses=tuple(groups["masses"]), coms=tuple(sympy.ImmutableMatrix(3, 1, list(c)) for c in groups["coms"]),
        inertias=tuple(sympy.ImmutableMatrix(I) for I in groups["inertias"]),
        gravity=sympy.ImmutableMatrix(3, 1, list(groups["gravity"])),
        payloads=_payloads(model, payloads), values=values,
        q=tuple(joint[0]), qd=tuple(joint[1]), qdd=tuple(joint[2]), tau=tuple(joint[3]),
    )
    _check_parameters(smodel)
    return smodel


def _check_parameters(smodel: SymbolicModel) -> None:
    """Parameters may not depend on the joint variables."""
    joint_symbols = set(smodel.q + smodel.qd + smodel.qdd + smodel.tau)
    clash = joint_symbols & set(smodel.parameters)
    if clash:
        names = ", ".join(sorted(s.name for s in clash))
        raise InputError(f"parameters of {smodel.name!r} use the joint-variable symbols {names}; "
                         "parameters must be constants")


# ============================================================================ trig-polynomial algebra
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
    K = sympy.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
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


# ============================================================================ Lagrange-Euler
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


def _pairs(n: int) -> list:
    """ROBMAT's order of the Coriolis products q̇_j q̇_k, j < k: (1,2), (1,3), ..., (2,3), ..."""
    return [(j, k) for j in range(n) for k in range(j + 1, n)]


# ============================================================================ Newton-Euler
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


# ============================================================================ results
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


# ============================================================================ text for people
def compact(expr):
    """``expr`` (or a matrix) with products of sines and cosines contracted into sines and
    cosines of sums of angles (sympy's ``TR10i``; cos q2 cos q3 − sin q2 sin q3 -> cos(q2 + q3)).
    For reading only: cheap on 6-DoF arms, where ``trigsimp`` can take minutes."""
    if isinstance(expr, sympy.MatrixBase):
        return expr.applyfunc(compact)
    if not expr.has(sympy.sin, sympy.cos):
        return expr
    # TR10i pairs terms, O(terms²): contract each group of terms with the same parameter
    # monomial apart (only those can combine), which keeps 6-DoF symbolic arms fast
    groups: dict = {}
    for term in sympy.Add.make_args(sympy.expand(expr)):
        number, rest = term.as_coeff_Mul()
        factors = sympy.Mul.make_args(rest)
        key = sympy.Mul(*[f for f in factors if not f.has(sympy.sin, sympy.cos)])
        trig = sympy.Mul(*[f for f in factors if f.has(sympy.sin, sympy.cos)])
        groups.setdefault(key, []).append(number * trig)
    return sympy.Add(*[key * t for key, terms in groups.items()
                       for t in sympy.Add.make_args(TR10i(sympy.Add(*terms)))])


def _abbreviation(fn, latex: bool):
    """Fu's shorthand S2 = sin q2, C23 = cos(q2 + q3), C1-2 = cos(q1 − q2); None if the
    argument is not a sum of joint angles with coefficients ±1."""
    coeffs = fn.args[0].as_coefficients_dict()
    if not coeffs or any(abs(c) != 1 or not (isinstance(v, sympy.Symbol) and v.name[:1] == "q")
                         for v, c in coeffs.items()):
        return None
    terms = sorted(coeffs.items(), key=lambda vc: (vc[1] < 0, int(vc[0].name[1:])))
    index = "".join(("-" if c < 0 else "") + v.name[1:] for v, c in terms)
    letter = "S" if isinstance(fn, sympy.sin) else "C"
    return sympy.Symbol(f"{letter}_{{{index}}}" if latex else f"{letter}{index}")


def _abbreviate(expr, latex: bool, legend: dict):
    """Replace sin/cos of joint-angle sums by their shorthand symbols, noting them in ``legend``."""
    table = {}
    for fn in expr.atoms(sympy.sin, sympy.cos):
        short = _abbreviation(fn, latex)
        if short is not None:
            table[fn] = short
            legend[short] = fn
    return expr.xreplace(table)


def _decimal_looking(r: sympy.Rational, all_numeric: bool) -> bool:
    """Numbers from data (terminating decimals such as 87/5 = 17.4, long denominators) as
    opposed to the small fractions of mechanics (1/2, 1/3, 1/4, 1/12) in symbolic models."""
    if all_numeric:
        return r.q != 1
    q = int(r.q)
    while q % 2 == 0:
        q //= 2
    while q % 5 == 0:
        q //= 5
    return r.q > 1000 or (q == 1 and r.q not in (1, 2, 4))


def _short_float(r: sympy.Rational, digits: int) -> sympy.Float:
    """``r`` rounded to ``digits`` significant digits, printed without trailing zeros."""
    text = f"{float(r):.{digits}g}"
    mantissa = text.split("e")[0].replace("-", "").replace(".", "").lstrip("0").rstrip("0")
    return sympy.Float(text, max(1, len(mantissa)))


def _display(expr, all_numeric: bool, digits: int = 6) -> sympy.Expr:
    """Numbers from data shown as decimals of ``digits`` significant digits."""
    decimals = {r: _short_float(r, digits) for r in expr.atoms(sympy.Rational) if _decimal_looking(r, all_numeric)}
    return expr.xreplace(decimals) if decimals else expr


def _pretty_wrapped(label: str, expr, width: int = 100) -> str:
    """sympy's unicode pretty print of ``label = expr``, wrapped between terms (never inside one)."""
    printer = PrettyPrinter({"use_unicode": True, "wrap_line": False})
    line = prettyForm(label + " = ")
    lines, indent = [], " " * len(label + " = ")
    for position, term in enumerate(expr.as_ordered_terms()):
        negative = term.could_extract_minus_sign()
        form = printer._print(-term if negative else term)
        sign = ("-" if negative else "") if position == 0 else (" - " if negative else " + ")
        piece = prettyForm(*stringPict.next(prettyForm(sign), form))
        if position and line.width() + piece.width() > width:
            lines.append(line)
            line = prettyForm(indent)
        line = prettyForm(*stringPict.next(line, piece))
    lines.append(line)
    return "\n".join("\n".join(row.rstrip() for row in form.picture) for form in lines)


def _entry_lines(name: str, matrix, latex: bool, legend: dict, symmetric: bool = False,
                 all_numeric: bool = False) -> list:
    """``name[i,j] = expr`` for the non-zero entries (upper triangle when symmetric)."""
    lines = []
    for i in range(matrix.rows):
        for j in range(matrix.cols):
            if (symmetric and j < i) or matrix[i, j] == 0:
                continue
            expr = _abbreviate(_display(compact(matrix[i, j]), all_numeric), latex, legend)
            vector = name == "G"
            if latex:
                label = f"{name}_{{{i + 1}}}" if vector else f"{name}_{{{i + 1}{j + 1}}}"
                lines.append(f"{label} &= {sympy.latex(expr)} \\\\")
            else:
                label = f"{name}[{i + 1}]" if vector else f"{name}[{i + 1},{j + 1}]"
                lines.append(_pretty_wrapped(label, expr))
    return lines or ([f"\\text{{all entries of }} {name} &= 0 \\\\"] if latex else [f"all entries of {name} are 0"])


def format_equations(model, latex: bool = False, symbols=(), route: str = "newton_euler") -> str:
    """The configuration-space equations M, B, C, G of ``model`` as text for people.

    ``model``: a RobotModel, a SymbolicModel, or a bundled robot name / URDF path.
    ``latex``: LaTeX (an ``align*`` block per matrix) instead of sympy's unicode pretty print.
    ``symbols``: parameter groups to keep symbolic (see :func:`symbolic_model`).
    ``route``: ``"newton_euler"`` (default) or ``"lagrange_euler"``; the result is the same.
    Only non-zero entries are printed, M's upper triangle only (M is symmetric); sums of
    angles are contracted (:func:`compact`) and written as Fu's S2, C23 (a legend follows);
    numbers from numeric data are shown with 6 significant digits.
    """
    if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        from ..robots import load_robot   # lazy: keeps this module free of file I/O at import
        model = load_robot(model)
    smodel = model if isinstance(model, SymbolicModel) else symbolic_model(model, symbols)
    derive = {"newton_euler": newton_euler, "lagrange_euler": lagrange_euler}.get(route)
    if derive is None:
        raise InputError(f"unknown route {route!r}; use 'newton_euler' or 'lagrange_euler'")
    return _assemble(derive(smodel), latex)


def _header(cf: ClosedForm, latex: bool) -> list:
    sm = cf.model
    kinds = " ".join("R" if t == REVOLUTE else "P" for t in sm.joint_types)
    pairs = ", ".join(f"qd{j + 1}*qd{k + 1}" for j, k in _pairs(sm.n)) or "none"
    params = ", ".join(f"{s.name} = {sm.values[s]:g}" if s in sm.values else s.name for s in sm.parameters)
    joints = f"{sm.n} joint{'s' if sm.n != 1 else ''}"
    lines = [f"Equations of motion of {sm.name} ({joints}: {kinds}), {cf.route.replace('_', '-')} route",
             "F = M(q) qdd + 2 B(q) [qd qd] + C(q) [qd^2] + G(q)   (Horn & Linge, ROBMAT §4.2)",
             f"[qd qd] = ({pairs});  [qd^2] = ({', '.join(f'qd{k + 1}^2' for k in range(sm.n))})",
             f"parameters: {params or 'all numeric (SI units)'}"]
    return [f"% {line}" for line in lines] if latex else lines


def _legend(legend: dict, latex: bool) -> str:
    items = sorted(legend.items(), key=lambda kv: (len(kv[0].name), kv[0].name))
    if latex:
        return "% where " + ", ".join(f"${sympy.latex(k)} = {sympy.latex(v)}$" for k, v in items)
    return "where " + ", ".join(f"{k.name} = {v}" for k, v in items)


def _assemble(cf: ClosedForm, latex: bool) -> str:
    out, legend = _header(cf, latex), {}
    parts = (("M", cf.M, True, "M(q), symmetric: entries on and above the diagonal"),
             ("B", cf.B, False, "B(q), Coriolis coefficients, columns in [qd qd] order"),
             ("C", cf.C, False, "C(q), centrifugal coefficients, columns qd1^2 ... qdn^2"),
             ("G", cf.G, False, "G(q), gravity"))
    for name, matrix, symmetric, title in parts:
        body = _entry_lines(name, matrix, latex, legend, symmetric, all_numeric=not cf.model.parameters)
        if latex:
            out += ["", f"% {title}", "\\begin{align*}", *body, "\\end{align*}"]
        else:
            out += ["", f"{title}:", *body]
    if legend:
        out += ["", _legend(legend, latex)]
    return "\n".join(out) + "\n"
