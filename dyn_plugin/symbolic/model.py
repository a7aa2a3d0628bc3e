"""The symbolic model: a :class:`~dyn_plugin.model.RobotModel` with exact numbers
(:mod:`.exact`) and chosen parameters as symbols.

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
from collections.abc import Mapping
from typing import Optional

import numpy as np
import sympy

from ..errors import InputError
from ..kinematics import REVOLUTE
from ..model import RobotModel
from .exact import _exact_array, _exact_expr, exact_axis, exact_rotation

GROUPS = ("masses", "lengths", "coms", "inertias", "gravity")
AXES = "xyz"


@dataclasses.dataclass(frozen=True, eq=False)
class SymbolicModel:
    """A :class:`RobotModel` with exact (rational) numbers and chosen parameters as symbols.

    Per joint / link k (0-based tuples of length n): ``rotations`` (3, 3) and ``positions``
    (3, 1) rest placement of joint k in its parent link's frame; ``axes`` (3, 1);
    ``masses`` (kg); ``coms`` (3, 1) m, link frame; ``inertias`` (3, 3) kg m² about the
    centre of mass, link axes.  ``gravity`` (3, 1) m/s², physical, base frame.
    ``payloads``: extra point masses ``(link index, mass, position (3, 1))`` rigidly fixed
    to a link (the payload M_p of the two-link arm in H. Jack's 1990 thesis, Appendix B
    "Dynamics of two link manipulators").  ``values``: numeric value of every symbol this
    module created (for evaluation), keyed by symbol.
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
             "coms": _exact_array(model.coms),
             # symmetric before the conversion: R I Rᵀ in floats is not, by 1e-17, and its
             # entries made exact one by one gave the two routes' equations different terms of 1e-19
             "inertias": _exact_array(0.5 * (model.inertias + np.swapaxes(model.inertias, 1, 2))),
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
    model.require_fixed_joint_space("symbolic_model")
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
