"""Customised inverse-dynamics code for one robot: Python/NumPy, numba and C (issue #7).

The recursive Newton-Euler algorithm is run once, at generation time, over a small
expression DAG instead of numbers (Dhanaraj 1990, §2.4; Khalil, Kleinfinger & Gautier
1986).  Every model constant is known then, so

* multiplications by 0 and 1 and additions of 0 disappear, constant products are folded
  and a sign change is pushed outwards until an addition absorbs it (constant folding);
* identical subexpressions are built once (hash-consing, with commutative operands in a
  canonical order), e.g. ``ω_xω_y`` is shared by the λ matrix and the gyroscopic moment;
* only what feeds τ is emitted (dead-code elimination): at each joint only the axis
  component of the wrench is used, the full wrench only where it propagates to a parent.

The result is printed as straight-line code, one statement per named quantity.

Formulation (per link i, every vector in its own frame; the link frame is the joint
frame, re-oriented by a constant rotation so that the joint axis is z, see
:func:`prepare`):

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

With ``regroup=True`` (default) the inertial parameters are first regrouped into base
parameters (Khalil & Kleinfinger 1986; Gautier & Khalil 1990): the mass, the first moment
along the axis and ``J_yy`` (moved off ``J_xx`` too) of the link behind a revolute joint,
and the whole rotational inertia of the link behind a prismatic joint, are added to the
parent link.  Those parameters enter the kinetic and potential energy exactly as a body
fixed to the parent would, so every τ is unchanged (to round-off) while more constants
become zero.  A few more choices leave τ unchanged but not the cost (:class:`Choice`):
where on its joint axis a link frame's origin sits (PUMA: on the common normal with the
previous axis, which removes d₂ = 0.2435 m from the recursion), which parameters to
regroup, the form of the gyroscopic term and of two λ entries.  A greedy search picks,
link by link, those with the fewest multiplications + additions (about 1 s for six
joints).  ``regroup=False`` gives the plain recursion on the links' own parameters.

Operation counts (``counts`` of :class:`GeneratedCode`, :func:`operation_counts`), per
evaluation of τ for one state, gravity included:

* ``multiplications``: every product of two numbers, also by a model constant;
* ``additions``: every addition or subtraction;
* ``trig``: the sine and cosine calls (one each per revolute joint whose angle matters),
  counted apart from the above;
* free: sign changes (unary minus), reading inputs, storing outputs, and the model
  constants, which are folded into literals at generation time (the Macsyma count of
  seed 000 likewise leaves out its constant pre-computation).

Each counted operation appears exactly once in the emitted source as one binary
``*``, ``+``, ``-`` or one ``sin``/``cos`` call (the tests count them).

Function names
--------------
``ident`` is the robot name made a C identifier (:func:`c_identifier`).

* ``python``: ``inverse_dynamics(q, qd, qdd)`` vectorised over the batch: arrays (N, n)
  → τ (N, n), or one state (n,) → (n,); with ``mass_matrix=True`` also
  ``mass_matrix(q)`` → (N, n, n) or (n, n).  Inputs of another shape, or not finite,
  raise ``dyn_plugin.errors.InputError`` (``ValueError`` where dyn_plugin is not
  installed).
* ``numba``: the same names and shapes, ``@njit`` loops over the batch (read-only
  inputs are copied); also ``forward_dynamics`` and ``bias_forces``.
* ``c``: ``void <ident>_inverse_dynamics(const double *q, const double *qd,
  const double *qdd, double *tau)`` for one state (arrays of n doubles) and
  ``void <ident>_inverse_dynamics_batch(long N, const double *q, ...)`` for N states stored
  row by row; with ``mass_matrix=True`` also ``<ident>_mass_matrix(const double *q,
  double *M)`` (M row-major n×n) and ``<ident>_mass_matrix_batch(long N, ...)``.

Units are SI: rad, rad/s, rad/s² or m, m/s, m/s²; τ in N·m or N; M in kg·m² (or kg).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Optional

import numpy as np

from ..kinematics import REVOLUTE, parallel_axis, skew

GENERATOR_VERSION = "12"
LANGS = ("python", "numba", "c")

ROTATION_SNAP = 1e-14      # |x| or |x ∓ 1| below this in a rest rotation or a unit axis → 0 or ±1
PARAMETER_SNAP = 1e-13     # relative round-off (e.g. 6e-17 m from a URDF rpy) → 0

__all__ = ["GENERATOR_VERSION", "LANGS", "GeneratedCode", "generate", "operation_counts",
           "model_key", "c_identifier", "prepare"]


# ----------------------------------------------------------------------------------------
# expression DAG with constant folding and hash-consing
# ----------------------------------------------------------------------------------------

class Graph:
    """Expression DAG; nodes are ints.

    Operations: ``const``, ``var``, ``+``, ``-``, ``*``, ``neg``, ``sin``, ``cos``.  Each
    constructor folds constants and returns an existing node for an identical
    expression.  Canonical forms keep sign changes out of products and sums: ``neg`` is
    only ever the outermost operation of an expression, so it never costs anything.
    """

    def __init__(self):
        self.op, self.args, self.value = [], [], []
        self.names: dict = {}
        self._table: dict = {}
        self._used_names: set = set()
        self.ZERO = self.const(0.0)

    # -- construction -------------------------------------------------------------------

    def _node(self, op, args=(), value=None) -> int:
        key = (op, args, value)
        node = self._table.get(key)
        if node is None:
            node = len(self.op)
            self.op.append(op)
            self.args.append(args)
            self.value.append(value)
            self._table[key] = node
        return node

    def const(self, x: float) -> int:
        x = float(x)
        return self._node("const", (), 0.0 if x == 0.0 else x)

    def var(self, name: str) -> int:
        return self._node("var", (), name)

    def is_const(self, a: int, value: Optional[float] = None) -> bool:
        return self.op[a] == "const" and (value is None or self.value[a] == value)

    def _neg_arg(self, a: int):
        return self.args[a][0] if self.op[a] == "neg" else None

    def neg(self, a: int) -> int:
        if self.op[a] == "const":
            return self.const(-self.value[a])
        if self.op[a] == "neg":
            return self.args[a][0]
        return self._node("neg", (a,))

    def mul(self, a: int, b: int) -> int:
        if self.is_const(b):
            a, b = b, a
        if self.is_const(a):
            v = self.value[a]
            if self.is_const(b):
                return self.const(v * self.value[b])
            if v == 0.0:
                return self.ZERO
            if v == 1.0:
                return b
            if v < 0.0 or self.op[b] == "neg":     # −c·x = −(c·x): the sign moves out
                inner = self.mul(self.const(abs(v)), self.neg(b) if self.op[b] == "neg" else b)
                return inner if (v < 0.0) == (self.op[b] == "neg") else self.neg(inner)
            if self.op[b] == "*" and self.is_const(self.args[b][0]):   # c·(d·x) = (cd)·x
                return self.mul(self.const(v * self.value[self.args[b][0]]), self.args[b][1])
            return self._node("*", (a, b))
        na, nb = self._neg_arg(a), self._neg_arg(b)
        if na is not None or nb is not None:
            inner = self.mul(a if na is None else na, b if nb is None else nb)
            return inner if (na is None) == (nb is None) else self.neg(inner)
        return self._node("*", (min(a, b), max(a, b)))

    def add(self, a: int, b: int) -> int:
        if self.is_const(a) and self.is_const(b):
            return self.const(self.value[a] + self.value[b])
        if self.is_const(a, 0.0):
            return b
        if self.is_const(b, 0.0):
            return a
        na, nb = self._neg_arg(a), self._neg_arg(b)
        if na is not None and nb is not None:
            return self.neg(self.add(na, nb))
        if nb is not None:
            return self.sub(a, nb)
        if na is not None:
            return self.sub(b, na)
        if self.is_const(b) and self.value[b] < 0:
            return self.sub(a, self.const(-self.value[b]))
        if self.is_const(a) and self.value[a] < 0:
            return self.sub(b, self.const(-self.value[a]))
        return self._node("+", (min(a, b), max(a, b)))

    def sub(self, a: int, b: int) -> int:
        if self.is_const(a) and self.is_const(b):
            return self.const(self.value[a] - self.value[b])
        if self.is_const(b, 0.0):
            return a
        if self.is_const(a, 0.0):
            return self.neg(b)
        if a == b:
            return self.ZERO
        na, nb = self._neg_arg(a), self._neg_arg(b)
        if nb is not None:
            return self.add(a, nb)
        if na is not None:
            return self.neg(self.add(na, b))
        if self.is_const(b) and self.value[b] < 0:
            return self.add(a, self.const(-self.value[b]))
        if self.is_const(a) and self.value[a] < 0:
            return self.neg(self.add(self.const(-self.value[a]), b))
        if a > b:                                   # canonical order: b − a = −(a − b)
            return self.neg(self._node("-", (b, a)))
        return self._node("-", (a, b))

    def sin(self, a: int) -> int:
        return self._node("sin", (a,))

    def cos(self, a: int) -> int:
        return self._node("cos", (a,))

    # -- naming (readability of the emitted code) -----------------------------------------

    def name(self, node: int, name: str) -> None:
        """Give a computed node a variable name, unless it has one or is a leaf (a sign
        change names its operand ``<name>_neg``)."""
        if self.op[node] == "neg":
            node, name = self.args[node][0], name + "_neg"
        if self.op[node] in ("const", "var") or node in self.names:
            return
        unique, k = name, 2
        while unique in self._used_names:
            unique, k = f"{name}_{k}", k + 1
        self._used_names.add(unique)
        self.names[node] = unique

    def name_vec(self, vec, prefix: str) -> None:
        for node, axis in zip(vec, "xyz"):
            self.name(node, prefix + axis)


# -- 3-vectors of nodes ---------------------------------------------------------------------

def _vadd(g, a, b):
    return tuple(g.add(x, y) for x, y in zip(a, b))


def _vscale(g, s, v):
    return tuple(g.mul(s, x) for x in v)


def _dot(g, row, v):
    total = g.ZERO
    for a, b in zip(row, v):
        total = g.add(total, g.mul(a, b))
    return total


def _matvec(g, M, v):
    """``M v`` for a 3×3 tuple of nodes."""
    return tuple(_dot(g, row, v) for row in M)


def _const_mat(g, M):
    return tuple(tuple(g.const(x) for x in row) for row in np.asarray(M))


def _const_vec(g, v):
    return tuple(g.const(x) for x in np.asarray(v))


def _cross(g, a, b):
    return (g.sub(g.mul(a[1], b[2]), g.mul(a[2], b[1])),
            g.sub(g.mul(a[2], b[0]), g.mul(a[0], b[2])),
            g.sub(g.mul(a[0], b[1]), g.mul(a[1], b[0])))


# ----------------------------------------------------------------------------------------
# the model, re-expressed for generation
# ----------------------------------------------------------------------------------------

@dataclasses.dataclass
class Link:
    """One link in z-axis-aligned frames: ``x_parent = R Rz(q) x + P`` (revolute) or
    ``x_parent = R x + P + q R z`` (prismatic).

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


def _axis_frame(axis: np.ndarray) -> np.ndarray:
    """A rotation ``Q`` with ``Q z = axis``: a signed permutation for ±x, ±y, ±z (so that
    sparse data stay sparse), otherwise an orthonormal completion.

    An axis counts as ±e_k only when its OTHER components are round-off (below
    ``ROTATION_SNAP``).  Testing ``|a_k| − 1`` instead would be second order: an axis
    1e-6 off ±e_k has ``|a_k| = 1 − 5e-13`` and would be snapped, an error of 1e-6 in
    every τ (issue #18)."""
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    k = int(np.argmax(np.abs(axis)))
    if np.all(np.abs(np.delete(axis, k)) < ROTATION_SNAP):
        s = float(np.sign(axis[k]))
        eye = np.eye(3)
        # columns (images of x, y, z) = (e_{k+1}, s e_{k+2}, s e_k): a proper rotation
        return np.column_stack([eye[(k + 1) % 3], s * eye[(k + 2) % 3], s * eye[k]])
    helper = np.eye(3)[int(np.argmin(np.abs(axis)))]
    x = helper - (helper @ axis) * axis
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(axis, x), axis])


def _snap_rotation(R: np.ndarray) -> np.ndarray:
    R = np.array(R, dtype=float)
    for target in (0.0, 1.0, -1.0):
        R[np.abs(R - target) < ROTATION_SNAP] = target
    return R


def _snap_small(x: np.ndarray, scale: float) -> np.ndarray:
    x = np.array(x, dtype=float)
    x[np.abs(x) < PARAMETER_SNAP * scale] = 0.0
    return x


@dataclasses.dataclass(frozen=True)
class Choice:
    """Free choices for one link that leave τ unchanged but change the operation count.

    ``shift``: the link frame's origin is moved by ``shift`` (m) along the joint axis
    (any point of a revolute axis is a fixed point of the joint motion; a prismatic
    joint only translates); ``moves``: parameters regrouped into the parent
    (:func:`_regroup`); ``gyro``: ``"lambda"`` (Dhanaraj eq. 2.41) or ``"cross"``
    (``ω×(Jω)``); ``lam``: ``"plain"`` or ``"prime"``, λ₁₃ and λ₂₃ from the parent's ω
    and ω̇ rotated into the link (revolute joints; see :func:`_lambda`).
    """

    shift: float = 0.0
    moves: frozenset = frozenset()
    gyro: str = "lambda"
    lam: str = "plain"


def prepare(model, regroup: bool = True):
    """The model's links as :class:`Link` records and the base acceleration ``v̇₀ = −g``.

    Every link frame is turned by a constant ``Q_i`` (:func:`_axis_frame`) so that its
    joint axis is z; τ does not depend on this choice.  Rest rotations are snapped
    (|x| < 1e-14 → 0, |x ∓ 1| < 1e-14 → ±1: round-off such as cos(π/2) = 6e-17, never a
    real tilt that would move τ by more than 1e-14) and round-off in lengths and inertias
    (below 1e-13 of the largest value of its kind) is set to zero.  With ``regroup``
    the inertial parameters are regrouped (:func:`_regroup`) and, per link, the free
    choices of :class:`Choice` that give the fewest operations are found by a greedy
    search (:func:`_search`).
    """
    key = model_key(model, "", regroup)
    if key not in _PREPARED:
        raw, base_acc = _raw_links(model)
        choices = _search(raw, base_acc) if regroup else [Choice()] * len(raw)
        if len(_PREPARED) >= 64:
            _PREPARED.clear()
        _PREPARED[key] = (_variant(raw, choices), base_acc)
    return _PREPARED[key]


_PREPARED: dict = {}   # model key -> prepare()'s result (the search takes ~1 s for n = 6)


def _raw_links(model):
    """Links in z-axis frames with their own (not regrouped) parameters; ``v̇₀ = −g``."""
    Q = [_axis_frame(a) for a in model.axes]
    length_scale = max(1.0, float(np.abs(model.joint_positions).max(initial=0.0)))
    links = []
    for i in range(model.n):
        parent = int(model.parents[i])
        Qp = np.eye(3) if parent < 0 else Q[parent]
        c = Q[i].T @ model.coms[i]
        Ic = Q[i].T @ model.inertias[i] @ Q[i]
        m = float(model.masses[i])
        links.append(Link(
            parent=parent, revolute=model.joint_types[i] == REVOLUTE,
            R=_snap_rotation(Qp.T @ model.joint_rotations[i] @ Q[i]),
            P=_snap_small(Qp.T @ model.joint_positions[i], length_scale),
            mass=m, ms=m * c, J=Ic + parallel_axis(m, c)))
    gravity = np.asarray(model.gravity, dtype=float)
    return links, _snap_small(-gravity, float(np.abs(gravity).max(initial=0.0)))


def _variant(raw, choices):
    """Copies of the links ``raw`` with the :class:`Choice` of each applied: origin
    shifts, regrouping, formula forms; round-off snapped."""
    links = [dataclasses.replace(link, P=link.P.copy(), ms=link.ms.copy(), J=link.J.copy()) for link in raw]
    for i, choice in enumerate(choices):
        if choice.shift:
            _shift_origin(links, i, choice.shift)
    _regroup(links, [choice.moves for choice in choices])
    for link, choice in zip(links, choices):
        link.ms = _snap_small(link.ms, float(np.abs(link.ms).max(initial=0.0)))
        about_axis = link.J[2, 2]  # a sum of non-negative terms, never round-off: it alone can keep M regular
        link.J = _snap_small(0.5 * (link.J + link.J.T), float(np.abs(link.J).max(initial=0.0)))
        link.J[2, 2] = about_axis
        link.gyro, link.lam = choice.gyro, choice.lam
    return links


def _shift_origin(links, i: int, shift: float) -> None:
    """Move link i's frame origin by ``shift`` along its z (joint) axis: its placement,
    its children's placements and its inertial parameters follow."""
    link = links[i]
    d = np.array([0.0, 0.0, shift])
    link.P = link.P + link.R @ d
    for child in links:
        if child.parent == i:
            child.P = child.P - d
    # the same body about the new origin: first moment MS − m d, inertia by eq. of _move_to_parent
    moved = Link(parent=-1, revolute=True, R=np.eye(3), P=np.zeros(3), mass=0.0,
                 ms=np.zeros(3), J=np.zeros((3, 3)))
    _move_to_parent(moved, np.eye(3), -d, link.mass, link.ms, link.J)
    link.ms, link.J = moved.ms, moved.J


def _move_to_parent(parent: Link, R, P, mass, ms, J) -> None:
    """Add a body fixed to ``parent`` (mass, first moment ``ms`` and inertia ``J`` about
    its own origin, placed at ``(R, P)``) to the parent's origin-based parameters:
    ``J' = R J Rᵀ + m(|P|²1 − PPᵀ) + 2(P·s)1 − P sᵀ − s Pᵀ`` with ``s = R ms``, the shift
    terms formed as [P]×[P]×ᵀ and [P]×[s]×ᵀ + [s]×[P]×ᵀ (no cancelling diagonal, see
    :func:`~dyn_plugin.kinematics.parallel_axis`)."""
    s = R @ ms
    cross_terms = skew(P) @ skew(s).T
    parent.J = parent.J + R @ J @ R.T + parallel_axis(mass, P) + cross_terms + cross_terms.T
    parent.ms = parent.ms + mass * P + s
    parent.mass += mass


REVOLUTE_MOVES = ("m", "mz", "yy")
PRISMATIC_MOVES = ("J",)


def _regroup(links, moves) -> None:
    """Regroup inertial parameters into base parameters (Khalil & Kleinfinger 1986;
    Gautier & Khalil 1990), leaves first; ``moves[i]`` is the set of parameters of link
    i to move to its parent.

    Behind a revolute joint (axis z) the mass m (``"m"``), the first moment MZ (``"mz"``)
    and ``J_yy·diag(1, 1, 0)`` (``"yy"``, leaving ``J_xx − J_yy`` and ``J_yy = 0``) give
    kinetic and potential energies that depend neither on q nor on q̇ of that joint, so
    each acts as a body fixed to the parent at the joint's rest placement.  Behind a
    prismatic joint the rotational inertia J (``"J"``) only sees the parent's ω.
    """
    for i in reversed(range(len(links))):
        link = links[i]
        if link.parent < 0:
            continue
        parent, move = links[link.parent], moves[i]
        if link.revolute:
            yy = link.J[1, 1] if "yy" in move else 0.0
            mass = link.mass if "m" in move else 0.0
            mz = link.ms[2] if "mz" in move else 0.0
            _move_to_parent(parent, link.R, link.P, mass, np.array([0.0, 0.0, mz]), np.diag([yy, yy, 0.0]))
            link.mass -= mass
            link.ms = link.ms - np.array([0.0, 0.0, mz])
            link.J = link.J - np.diag([yy, yy, 0.0])
        elif "J" in move:
            _move_to_parent(parent, link.R, np.zeros(3), 0.0, np.zeros(3), link.J)
            link.J = np.zeros((3, 3))


def _cost(raw, choices, base_acc) -> tuple:
    counts = _id_program(Graph(), _variant(raw, choices), base_acc).counts()
    return counts["multiplications"] + counts["additions"], counts["multiplications"], counts["trig"]


def _alternatives(raw, choices, i: int) -> list:
    """Choices for link i that differ from the current one in one respect."""
    link, now = raw[i], choices[i]
    out = []
    if link.parent >= 0:
        for item in (REVOLUTE_MOVES if link.revolute else PRISMATIC_MOVES):
            out.append(dataclasses.replace(now, moves=now.moves ^ {item}))
    out.append(dataclasses.replace(now, gyro="cross" if now.gyro == "lambda" else "lambda"))
    if link.revolute:
        out.append(dataclasses.replace(now, lam="prime" if now.lam == "plain" else "plain"))
    # origin shifts that zero a coordinate of this link's placement or of a child's
    axis = link.R[:, 2]    # only when the axis is a coordinate axis of the parent: shifts stay link-sized
    shifts = {0.0} | {-link.P[k] / axis[k] for k in range(3) if abs(axis[k]) == 1.0 and link.P[k] != 0.0}
    shifts |= {c.P[2] for c in raw if c.parent == i and c.P[2] != 0.0}
    out += [dataclasses.replace(now, shift=float(d)) for d in sorted(shifts) if d != now.shift]
    return out


def _search(raw, base_acc) -> list:
    """Greedy descent over the :class:`Choice` of every link, minimising multiplications
    + additions (then multiplications): starts from the full regrouping and takes, one
    link at a time, the best alternative while one helps."""
    choices = [Choice(moves=frozenset(REVOLUTE_MOVES if link.revolute else PRISMATIC_MOVES)
                      if link.parent >= 0 else frozenset()) for link in raw]
    best = _cost(raw, choices, base_acc)
    improved = True
    while improved:
        improved = False
        for i in range(len(raw)):
            for alternative in _alternatives(raw, choices, i):
                trial = choices[:i] + [alternative] + choices[i + 1:]
                cost = _cost(raw, trial, base_acc)
                if cost < best:
                    best, choices, improved = cost, trial, True
    return choices


# ----------------------------------------------------------------------------------------
# the Newton-Euler recursion over the DAG
# ----------------------------------------------------------------------------------------

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


def _lambda(g, w, wd, prime=None):
    """Dhanaraj's acceleration-difference matrix λ = [ω̇]× + [ω]×² (eq. 2.27; Khalil's U):
    ``λ r = ω̇×r + ω×(ω×r)``.

    ``prime = (ω', ω̇')``, the parent's ω and ω̇ rotated into a revolute link: then
    ``λ₁₃ = ω'_x ω'_z + ω̇'_y`` and ``λ₂₃ = ω'_y ω'_z − ω̇'_x``, because the q̇ terms of
    ``ω_z = ω'_z + q̇`` and of the Coriolis part of ω̇ cancel (cheaper when ω'_z = 0).
    """
    x, y, z = w
    ax, ay, az = wd
    xx, yy, zz = g.mul(x, x), g.mul(y, y), g.mul(z, z)
    xy, xz, yz = g.mul(x, y), g.mul(x, z), g.mul(y, z)
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
    x, y, z = w
    xx, yy, zz = g.mul(x, x), g.mul(y, y), g.mul(z, z)
    xy, xz, yz = g.mul(x, y), g.mul(x, z), g.mul(y, z)
    D = _const_vec(g, [J[2, 2] - J[1, 1], J[0, 0] - J[2, 2], J[1, 1] - J[0, 0]])
    diagonal = (g.mul(D[0], yz), g.mul(D[1], xz), g.mul(D[2], xy))
    products = _const_vec(g, [J[1, 2], J[0, 2], J[0, 1]])
    M = ((g.sub(yy, zz), xy, g.neg(xz)),
         (g.neg(xy), g.sub(zz, xx), yz),
         (xz, g.neg(yz), g.sub(xx, yy)))
    return _vadd(g, diagonal, _matvec(g, M, products))


def _newton_euler(g: Graph, links, joints, base_acc, gravity: bool = True):
    """τ nodes (list of n) of the customised recursion; see the module docstring."""
    n = len(links)
    zero = (g.ZERO,) * 3
    w, wd, vd, lam = [None] * n, [None] * n, [None] * n, [None] * n
    for i, (link, jt) in enumerate(zip(links, joints)):
        label = str(i + 1)
        if link.parent < 0:
            wp, wdp, lamp = zero, zero, None
            vdp = _const_vec(g, base_acc) if gravity else zero
        else:
            wp, wdp, vdp, lamp = w[link.parent], wd[link.parent], vd[link.parent], lam[link.parent]
        origin_acc = vdp if lamp is None else _vadd(g, vdp, _matvec(g, lamp, jt.origin(g)))
        w_in, wd_in, vd_in = jt.to_child(g, wp), jt.to_child(g, wdp), jt.to_child(g, origin_acc)
        if link.revolute:                                   # Dhanaraj Table 2.4, steps 1-3
            w[i] = (w_in[0], w_in[1], g.add(w_in[2], jt.qd))
            wd[i] = (g.add(wd_in[0], g.mul(jt.qd, w_in[1])), g.sub(wd_in[1], g.mul(jt.qd, w_in[0])),
                     g.add(wd_in[2], jt.qdd))
            vd[i] = vd_in
        else:                                               # Coriolis 2 ω × q̇ z
            w[i], wd[i] = w_in, wd_in
            qd2 = g.add(jt.qd, jt.qd)
            vd[i] = (g.add(vd_in[0], g.mul(qd2, w_in[1])), g.sub(vd_in[1], g.mul(qd2, w_in[0])),
                     g.add(vd_in[2], jt.qdd))
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


# ----------------------------------------------------------------------------------------
# programs: the DAG plus its outputs
# ----------------------------------------------------------------------------------------

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


def _id_program(g, links, base_acc) -> _Program:
    joints = _symbols(g, links)
    tau = _newton_euler(g, links, joints, base_acc)
    return _Program(g, [("tau", (i,), node) for i, node in enumerate(tau)])


def _mass_matrix_program(g, links) -> _Program:
    """M(q) column by column, τ(q, 0, e_k) with gravity off (Walker & Orin's method 1),
    in one DAG so that the columns share trig and rotations; only the entries on and
    below the diagonal are computed, the rest mirrored."""
    n = len(links)
    outputs = []
    zero = [g.ZERO] * n
    q = [g.var(f"q{i + 1}") for i in range(n)]
    for k in range(n):
        unit = [g.const(1.0 if i == k else 0.0) for i in range(n)]
        tau = _newton_euler(g, links, _symbols(g, links, q, zero, unit), None, gravity=False)
        for i in range(k, n):
            g.name(tau[i], f"M{i + 1}_{k + 1}")
            outputs.append(("M", (i, k), tau[i]))
            if i != k:
                outputs.append(("M", (k, i), tau[i]))
    return _Program(g, outputs)


def _bias_and_mass_program(g, links, base_acc) -> _Program:
    """The bias τ(q, q̇, 0) and M(q) in one DAG (forward dynamics needs both, and they
    share the trig and the rotations)."""
    n = len(links)
    q = [g.var(f"q{i + 1}") for i in range(n)]
    qd = [g.var(f"qd{i + 1}") for i in range(n)]
    zero = [g.ZERO] * n
    bias = _newton_euler(g, links, _symbols(g, links, q, qd, zero), base_acc)
    outputs = [("bias", (i,), node) for i, node in enumerate(bias)]
    for k in range(n):
        unit = [g.const(1.0 if i == k else 0.0) for i in range(n)]
        tau = _newton_euler(g, links, _symbols(g, links, q, zero, unit), None, gravity=False)
        for i in range(k, n):
            outputs.append(("M", (i, k), tau[i]))
            if i != k:
                outputs.append(("M", (k, i), tau[i]))
    return _Program(g, outputs)


# ----------------------------------------------------------------------------------------
# printing
# ----------------------------------------------------------------------------------------

_PREC = {"+": 1, "-": 1, "*": 2, "neg": 3}


class _Printer:
    """Straight-line statements for one program: a node gets a variable when it is named,
    used twice or more, or a trig call; other nodes are written inline where used."""

    def __init__(self, program: _Program, lang: str):
        self.g, self.lang = program.graph, lang
        self.nodes = program.reachable()
        uses: dict = {}
        for node in self.nodes:
            for a in self.g.args[node]:
                uses[a] = uses.get(a, 0) + 1
        for _, _, node in program.outputs:
            uses[node] = uses.get(node, 0) + 1
        self.var_name: dict = {}
        counter = 0
        for node in self.nodes:
            op = self.g.op[node]
            if op in ("const", "var", "neg"):
                continue
            if node in self.g.names or uses.get(node, 0) > 1 or op in ("sin", "cos"):
                name = self.g.names.get(node)
                if name is None:
                    counter += 1
                    name = f"t{counter}"
                self.var_name[node] = name

    def literal(self, x: float) -> str:
        text = repr(float(x))
        return text if self.lang != "c" or "e" in text or "." in text else text + ".0"

    def expr(self, node: int, top: bool = False) -> str:
        """Text of ``node`` (its variable, or the expression inline)."""
        g = self.g
        op = g.op[node]
        if not top and node in self.var_name:
            return self.var_name[node]
        if op == "const":
            text = self.literal(g.value[node])
            return f"({text})" if g.value[node] < 0 and not top else text
        if op == "var":
            return g.value[node]
        if op in ("sin", "cos"):
            prefix = "" if self.lang == "c" else ("math." if self.lang == "numba" else "np.")
            return f"{prefix}{op}({self.expr(g.args[node][0])})"
        if op == "neg":
            inner = self.expr(g.args[node][0])
            text = "-" + (inner if self._prec(g.args[node][0]) >= 3 else f"({inner})")
            return text if top else f"({text})"
        a, b = g.args[node]
        left, right = self.expr(a), self.expr(b)
        if self._prec(a) < _PREC[op]:
            left = f"({left})"
        if self._prec(b) <= _PREC[op]:
            right = f"({right})"
        return f"{left} {op} {right}" if op != "*" else f"{left}*{right}"

    def output(self, node: int) -> str:
        """Text of an output: its variable if it has one, else the expression."""
        return self.var_name.get(node) or self.expr(node, top=True)

    def _prec(self, node: int) -> int:
        if node in self.var_name:
            return 4
        op = self.g.op[node]
        if op == "const" and self.g.value[node] < 0:
            return 4                     # printed in parentheses
        return _PREC.get(op, 4)

    def assignments(self) -> list:
        """``(name, expression)`` for every variable, in dependency order."""
        return [(self.var_name[node], self.expr(node, top=True)) for node in self.nodes
                if node in self.var_name]

    def inputs(self) -> list:
        """``(variable, array, column)`` of the inputs the program reads."""
        out = []
        for node in self.nodes:
            if self.g.op[node] == "var":
                name = self.g.value[node]
                array, index = re.fullmatch(r"([a-z]+)(\d+)", name).groups()
                out.append((name, array, int(index) - 1))
        order = {"q": 0, "qd": 1, "qdd": 2}
        return sorted(out, key=lambda t: (order[t[1]], t[2]))


def c_identifier(name: str) -> str:
    """The robot name as a C identifier (letters, digits, ``_``; not starting with a digit)."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII) or "robot"
    return ident if not ident[0].isdigit() else "robot_" + ident


_AS_STATES = '''
def _as_states(*arrays):
    """The arrays as (N, N_JOINTS) float64 (C-contiguous, writable) and whether they were
    one state of shape (N_JOINTS,); all must have the same shape, and be finite."""
    arrays = [np.require(a, np.float64, ("C", "W")) for a in arrays]
    shape = arrays[0].shape
    if len(shape) not in (1, 2) or shape[-1] != N_JOINTS or any(a.shape != shape for a in arrays):
        raise InputError(f"inputs must all have shape ({N_JOINTS},) or (N, {N_JOINTS}); got "
                         + ", ".join(str(a.shape) for a in arrays))
    for a in arrays:
        if not np.isfinite(a).all():
            raise InputError("inputs must be finite (no NaN or infinity)")
    return [a if a.ndim == 2 else a[None] for a in arrays], len(shape) == 1
'''

_IMPORT_INPUT_ERROR = ["try:", "    from dyn_plugin.errors import InputError",
                       "except ImportError:      # the generated code used without dyn_plugin",
                       "    InputError = ValueError"]


def _emit_python(printer, function, args, result, outputs, shape, docstring) -> str:
    """A NumPy function vectorised over the batch; one state (n,) gives a result without
    the batch axis."""
    lines = [f"def {function}({', '.join(args)}):", f'    """{docstring}"""',
             f"    ({', '.join(args)},), single = _as_states({', '.join(args)})",
             f"    {result} = np.empty({shape})"]
    lines += [f"    {name} = {array}[:, {col}]" for name, array, col in printer.inputs()]
    lines += [f"    {name} = {text}" for name, text in printer.assignments()]
    lines += [f"    {array}[:, {', '.join(map(str, index))}] = {printer.output(node)}" for array, index, node in outputs]
    lines.append(f"    return {result}[0] if single else {result}")
    return "\n".join(lines) + "\n"


NUMBA_OPTIONS = 'cache=True, error_model="numpy", fastmath={"contract"}'
_NUMBA_TYPES = {1: "float64[::1]", 2: "float64[:, ::1]"}


def _emit_numba_state(printer, function, args, results, outputs, n) -> str:
    """One state, typed: ``function(*args, *results) -> status`` (0; 1 wrong length; 2 a
    non-finite input; 4 a result that is not finite, float64 overflow, as the compiled
    kernels' NOT_FINITE_RESULT), so a caller can fall back to its validating path.
    ``results`` are (name, ndim) pairs: (n,) vectors or (n, n) matrices."""
    names = [name for name, _ in results]
    types = ", ".join([_NUMBA_TYPES[1]] * len(args) + [_NUMBA_TYPES[ndim] for _, ndim in results])
    lengths = " or ".join(f"{a}.shape[0] != {n}" for a in args + names)
    finite = " and ".join(f"math.isfinite({a}[i])" for a in args)
    lines = [f'@njit("int64({types})", {NUMBA_OPTIONS})',
             f"def {function}({', '.join(args + names)}):",
             f'    """One state into {", ".join(names)}; returns 0, or 1 (a length is not {n}) / 2 (non-finite input)."""',
             f"    if {lengths}:", "        return 1", f"    for i in range({n}):",
             f"        if not ({finite}):", "            return 2"]
    lines += [f"    {name} = {array}[{col}]" for name, array, col in printer.inputs()]
    lines += [f"    {name} = {text}" for name, text in printer.assignments()]
    lines += [f"    {array}[{', '.join(map(str, index))}] = {printer.output(node)}" for array, index, node in outputs]
    lines += _finite_result(results, n) + ["    return 0"]
    return "\n".join(lines) + "\n"


def _finite_result(results, n) -> list:
    """Lines returning status 4 when a result has a non-finite entry (a sum with one is NaN
    or inf; a finite result whose sum overflows is told apart by the caller).  A matrix is
    summed row by row into independent partial sums, short chains of additions instead of
    one long one.  Written as loops of ``+=``: not operations of the dynamics, so the
    operation counts leave them out."""
    lines = ["    total = 0.0"]
    for name, ndim in results:
        if ndim == 2:
            lines += [f"    for i in range({n}):", "        row = 0.0", f"        for j in range({n}):",
                      f"            row += {name}[i, j]", "        total += row"]
        else:
            lines += [f"    for i in range({n}):", f"        total += {name}[i]"]
    return lines + ["    if not math.isfinite(total):", "        return 4"]


def _emit_numba_entry(function, args, result, shape) -> list:
    """The Python entry point of a batch function: checks and converts the inputs
    (:data:`_AS_STATES`), runs the serial or the parallel loop (by batch size, as
    dyn_plugin.compiled does) and refuses a batch in which a state failed."""
    return [
        f"def {function}({', '.join(args)}):",
        f'    """{function.replace("_", " ").capitalize()}: inputs (N, n), or (n,) for one state."""',
        f"    ({', '.join(args)},), single = _as_states({', '.join(args)})",
        f"    {result} = np.empty({shape})",
        f"    status = np.zeros({args[0]}.shape[0], np.int64)",
        f"    loop = _{function}_parallel if {args[0]}.shape[0] >= PARALLEL_FROM else _{function}_serial",
        f"    loop({', '.join(args)}, {result}, status)",
        "    refused = np.flatnonzero((status == 1) | (status == 2))  # 4, a non-finite result, is returned as is",
        "    if refused.size:",
        '        raise InputError(f"{function}: state {int(refused[0])} was refused (status "'
        '\n                         f"{int(status[refused[0]])})")'.replace("{function}", function),
        f"    return {result}[0] if single else {result}"]


def _emit_numba_batch(function, state, args, result, shape) -> str:
    """A batch of states: a serial and a parallel loop over the per-state function (each
    state's status into ``status``), and the entry point."""
    rows = ", ".join(f"{a}[k]" for a in args + [result])
    loops = []
    for kind, decorator, loop in (("serial", f"@njit({NUMBA_OPTIONS})", "range"),
                                  ("parallel", f"@njit(parallel=True, {NUMBA_OPTIONS})", "prange")):
        loops += [decorator, f"def _{function}_{kind}({', '.join(args)}, {result}, status):",
                  f"    for k in {loop}({args[0]}.shape[0]):", f"        status[k] = {state}({rows})", ""]
    return "\n".join(loops + _emit_numba_entry(function, args, result, shape)) + "\n"


def _numba_forward_dynamics(n) -> str:
    """q̈ = M⁻¹ (τ − τ(q, q̇, 0)) from the generated τ and M, solved by Cholesky; the batch
    loops allocate their scratch once per chunk of states."""
    chunk = 64
    return "\n".join([
        f'@njit("int64(float64[::1], float64[::1], float64[::1])", {NUMBA_OPTIONS})',
        "def bias_forces_state(q, qd, tau):",
        '    """C(q, q̇) q̇ + g(q) of one state into tau; status as inverse_dynamics_state."""',
        "    return inverse_dynamics_state(q, qd, np.zeros(q.shape[0]), tau)",
        "",
        f"@njit({NUMBA_OPTIONS})",
        "def _forward_dynamics_core(q, qd, tau, qdd, M, rhs, zero):",
        "    status = bias_and_mass_state(q, qd, rhs, M)",
        f"    if status == 0 and (tau.shape[0] != {n} or qdd.shape[0] != {n}):",
        "        status = 1",
        "    if status != 0:",
        "        return status",
        f"    for i in range({n}):",
        "        if not math.isfinite(tau[i]):",
        "            return 2",
        "        rhs[i] = tau[i] - rhs[i]",
        "    spd_solve(M, rhs, qdd)",
        *_finite_result([("qdd", 1)], n),
        "    return 0",
        "",
        f'@njit("int64(float64[::1], float64[::1], float64[::1], float64[::1])", {NUMBA_OPTIONS})',
        "def forward_dynamics_state(q, qd, tau, qdd):",
        '    """q̈ of one state into qdd (M q̈ = τ − bias, Cholesky); status as inverse_dynamics_state."""',
        f"    return _forward_dynamics_core(q, qd, tau, qdd, np.empty(({n}, {n})), np.empty({n}), np.zeros({n}))",
        "",
    ] + [line for kind, loop in (("serial", "range"), ("parallel", "prange")) for line in (
        f"@njit({'parallel=True, ' if loop == 'prange' else ''}{NUMBA_OPTIONS})",
        f"def _forward_dynamics_{kind}(q, qd, tau, qdd, status):",
        f"    for c in {loop}((q.shape[0] + {chunk - 1}) // {chunk}):",
        f"        M, rhs, zero = np.empty(({n}, {n})), np.empty({n}), np.zeros({n})",
        f"        for k in range(c * {chunk}, min(q.shape[0], (c + 1) * {chunk})):",
        "            status[k] = _forward_dynamics_core(q[k], qd[k], tau[k], qdd[k], M, rhs, zero)",
        "")] + _emit_numba_entry("forward_dynamics", ["q", "qd", "tau"], "qdd", "q.shape") + [""])


def _emit_c(printer, function, args, result, outputs, n_out, n) -> str:
    """One state, then a batch wrapper over N states stored row by row."""
    params = ", ".join([f"const double *{a}" for a in args] + [f"double *{result}"])
    lines = [f"void {function}({params})", "{"]
    for name, array, col in printer.inputs():
        lines.append(f"    const double {name} = {array}[{col}];")
    for name, text in printer.assignments():
        lines.append(f"    const double {name} = {text};")
    for array, index, node in outputs:
        flat = index[0] if len(index) == 1 else index[0] * n + index[1]
        lines.append(f"    {array}[{flat}] = {printer.output(node)};")
    call = ", ".join([f"{a} + {n}*k" for a in args] + [f"{result} + {n_out}*k"])
    lines += ["}", "", f"void {function}_batch(long N, {params})", "{",
              "    for (long k = 0; k < N; ++k)", f"        {function}({call});", "}"]
    return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True)
class GeneratedCode:
    """Generated source for one robot.

    ``source`` (str) is the whole file; ``counts`` the operations per evaluation of τ
    (``multiplications``, ``additions``, ``trig``; rules in the module docstring);
    ``mass_matrix_counts`` the same for M(q) when it was generated, else None;
    ``functions`` maps ``"inverse_dynamics"`` (and ``"mass_matrix"``) to the function
    names in ``source``; ``key`` identifies model + generator (:func:`model_key`).
    """

    robot: str
    lang: str
    source: str
    counts: dict
    functions: dict
    mass_matrix_counts: Optional[dict] = None
    key: str = ""


def _counts_text(counts: dict) -> str:
    return f"{counts['multiplications']} multiplications, {counts['additions']} additions, {counts['trig']} sin/cos"


def _header(model, lang, counts, mm_counts, key, comment) -> list:
    kinds = "".join("R" if t == REVOLUTE else "P" for t in model.joint_types)
    lines = [f"Customised inverse dynamics of robot {model.name!r} ({model.n} joints, {kinds}),",
             f"gravity {tuple(float(x) for x in model.gravity)} m/s^2, language {lang}.",
             f"Generated by dyn_plugin.symbolic.codegen version {GENERATOR_VERSION}: Newton-Euler",
             "(Dhanaraj's lambda matrix, Khalil's base parameters) over an expression DAG with",
             "constant folding, shared subexpressions and dead-code elimination.",
             f"Per evaluation of tau: {_counts_text(counts)} (sign changes free).",
             ]
    if mm_counts is not None:
        lines.append(f"Per evaluation of M(q): {_counts_text(mm_counts)}.")
    lines.append(f"Model key: {key}. Do not edit: regenerate instead.")
    return [f"{comment} {line}" for line in lines]


def generate(model, lang: str = "python", *, mass_matrix: bool = False,
             regroup: bool = True) -> GeneratedCode:
    """Customised straight-line inverse dynamics (and optionally M(q)) for ``model``.

    ``lang``: ``"python"`` (NumPy, vectorised over a batch), ``"numba"`` (``@njit`` loop
    over the batch) or ``"c"``.  See the module docstring for the function names,
    shapes and the counting rules.
    """
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    links, base_acc = prepare(model, regroup)
    g = Graph()
    id_program = _id_program(g, links, base_acc)
    mm_program = _mass_matrix_program(Graph(), links) if mass_matrix else None
    counts = id_program.counts()
    mm_counts = mm_program.counts() if mm_program else None
    key = model_key(model, lang, regroup)
    n = model.n
    ident = c_identifier(model.name)
    comment = "//" if lang == "c" else "#"
    parts = ["\n".join(_header(model, lang, counts, mm_counts, key, comment)), ""]
    if lang == "c":
        functions = {"inverse_dynamics": f"{ident}_inverse_dynamics"}
        parts += ["#include <math.h>", "",
                  _emit_c(_Printer(id_program, "c"), functions["inverse_dynamics"], ["q", "qd", "qdd"],
                          "tau", id_program.outputs, n, n)]
        if mm_program:
            functions["mass_matrix"] = f"{ident}_mass_matrix"
            parts.append(_emit_c(_Printer(mm_program, "c"), functions["mass_matrix"], ["q"],
                                 "M", mm_program.outputs, n * n, n))
    elif lang == "numba":
        functions = {"inverse_dynamics": "inverse_dynamics"}
        parts += ["import math", "import numpy as np", "from numba import njit, prange", "",
                  "from dyn_plugin.compiled.kernels import PARALLEL_FROM, spd_solve",
                  "from dyn_plugin.errors import InputError", "",
                  f"ROBOT = {model.name!r}", f"N_JOINTS = {n}", f"GENERATOR_KEY = {key!r}", f"COUNTS = {counts!r}",
                  _AS_STATES,
                  _emit_numba_state(_Printer(id_program, lang), "inverse_dynamics_state", ["q", "qd", "qdd"],
                                    [("tau", 1)], id_program.outputs, n),
                  _emit_numba_batch("inverse_dynamics", "inverse_dynamics_state", ["q", "qd", "qdd"], "tau", "q.shape")]
        if mm_program:
            functions.update(mass_matrix="mass_matrix", forward_dynamics="forward_dynamics", bias_forces="bias_forces")
            fd_program = _bias_and_mass_program(Graph(), links, base_acc)
            parts += [_emit_numba_state(_Printer(mm_program, lang), "mass_matrix_state", ["q"], [("M", 2)],
                                        mm_program.outputs, n),
                      _emit_numba_state(_Printer(fd_program, lang), "bias_and_mass_state", ["q", "qd"],
                                        [("bias", 1), ("M", 2)], fd_program.outputs, n),
                      _emit_numba_batch("mass_matrix", "mass_matrix_state", ["q"], "M", f"(q.shape[0], {n}, {n})"),
                      _numba_forward_dynamics(n),
                      _emit_numba_batch("bias_forces", "bias_forces_state", ["q", "qd"], "tau", "q.shape")]
    else:
        functions = {"inverse_dynamics": "inverse_dynamics"}
        parts += ["import numpy as np", "", *_IMPORT_INPUT_ERROR, "", f"ROBOT = {model.name!r}",
                  f"N_JOINTS = {n}", f"GENERATOR_KEY = {key!r}", f"COUNTS = {counts!r}", _AS_STATES]
        parts.append(_emit_python(
            _Printer(id_program, lang), "inverse_dynamics", ["q", "qd", "qdd"], "tau", id_program.outputs,
            "q.shape", f"Joint torques/forces tau (N, {n}) for q, qd, qdd of shape (N, {n}); ({n},) for one state."))
        if mm_program:
            functions["mass_matrix"] = "mass_matrix"
            parts.append(_emit_python(
                _Printer(mm_program, lang), "mass_matrix", ["q"], "M", mm_program.outputs,
                f"(q.shape[0], {n}, {n})", f"Joint-space inertia matrix M (N, {n}, {n}) for q (N, {n}); ({n}, {n}) for q ({n},)."))
    source = "\n".join(parts)
    return GeneratedCode(robot=model.name, lang=lang, source=source, counts=counts,
                         functions=functions, mass_matrix_counts=mm_counts, key=key)


def operation_counts(model, regroup: bool = True) -> dict:
    """Operations per evaluation of τ (gravity included) of the customised code:
    ``{"multiplications", "additions", "trig"}``; rules in the module docstring."""
    links, base_acc = prepare(model, regroup)
    return _id_program(Graph(), links, base_acc).counts()


def model_key(model, lang: str = "", regroup: bool = True) -> str:
    """SHA-256 (hex) of every model parameter the dynamics depend on, the generator
    version, the language and the options: the on-disk cache key."""
    h = hashlib.sha256()
    for item in (GENERATOR_VERSION, lang, str(regroup), model.name, "|".join(model.joint_types)):
        h.update(item.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    for array in (model.parents, model.joint_rotations, model.joint_positions, model.axes,
                  model.masses, model.coms, model.inertias, model.gravity):
        h.update(np.ascontiguousarray(array, dtype=float).tobytes())
    return h.hexdigest()
