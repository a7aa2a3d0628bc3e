"""The model re-expressed for code generation, customised per robot.

Every link frame is turned so that its joint axis is z (:func:`_axis_frame`), round-off
is snapped, and with ``regroup=True`` (default) the inertial parameters are regrouped into
base parameters (Khalil & Kleinfinger 1986; Gautier & Khalil 1990): the mass, the first
moment along the axis and ``J_yy`` (moved off ``J_xx`` too) of the link behind a revolute
joint, and the whole rotational inertia of the link behind a prismatic joint, are added to
the parent link.  Those parameters enter the kinetic and potential energy exactly as a body
fixed to the parent would, so every τ is unchanged (to round-off) while more constants
become zero.  A few more choices leave τ unchanged but not the cost (:class:`Choice`):
where on its joint axis a link frame's origin sits (PUMA: on the common normal with the
previous axis, which removes d₂ = 0.2435 m from the recursion), which parameters to
regroup, the form of the gyroscopic term and of two λ entries.  A greedy search
(:func:`_search`) picks, link by link, those with the fewest multiplications + additions
(about 1 s for six joints).  ``regroup=False`` gives the plain recursion on the links' own
parameters.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..kinematics import REVOLUTE, parallel_axis, skew
from .graph import Graph
from .recursion import Link, _id_program
from .version import model_key

ROTATION_SNAP = 1e-14      # |x| or |x ∓ 1| below this in a rest rotation or a unit axis → 0 or ±1
PARAMETER_SNAP = 1e-13     # relative round-off (e.g. 6e-17 m from a URDF rpy) → 0


def _axis_frame(axis: np.ndarray) -> np.ndarray:
    """A rotation ``Q`` with ``Q z = axis`` that keeps the re-framed link data sparse.

    * ±x, ±y, ±z: a signed permutation.  An axis counts as ±e_k only when its OTHER
      components are round-off (below ``ROTATION_SNAP``).  Testing ``|a_k| − 1`` instead
      would be second order: an axis 1e-6 off ±e_k has ``|a_k| = 1 − 5e-13`` and would be
      snapped, an error of 1e-6 in every τ (tests/test_symbolic_cache.py,
      ``test_axis_frame_snaps_only_exact_axes``).
    * any other axis a: ``x = e_h − (e_h·a) a`` normalised and ``y = a × x``, with e_h the
      coordinate axis that a is most nearly orthogonal to (h = argmin |a_h|).  Then y ⊥ e_h
      (``Q[h, 1] = 0`` up to round-off, which :func:`_snap_rotation` removes from the rest
      rotations), and for an axis in a coordinate plane (a_h = 0) ``x = e_h`` exactly, so
      Q has four zeros.  Rest rotations about a coordinate axis, and offsets, centres of
      mass and inertias given along the coordinate axes, keep zeros after re-framing; every
      zero saves a multiplication (often an addition too) in the generated code.

    This is what :func:`dyn_plugin.kinematics.rotation_from_z` (the smallest rotation
    taking z onto a, used by dyn_plugin/compiled/layout.py) lacks, which is why it is not
    used here.  It gives the same Q for ±z (the identity and diag(1, −1, −1)), so the code
    of every bundled robot would stay byte-identical, and the same operation counts for
    the random trees of tests/urdf_factory.py and for chains of random axes (other
    constants only); but its y column ``(−k a_x a_y, s − k a_y², −a_y)`` has no zero for a
    general axis, nor for an axis in the xy plane.  Snapped afterwards, it costs more where
    the data are axis-aligned: in a chain z, a, y (rest rpy (1, 0, 0)), a = (0.6, 0.8, 0)
    or (0.48, 0.6, 0.64) costs 361 instead of 347 multiplications + additions per τ
    (M(q): 253 instead of 241), and an axis 1e-12 off y 351 instead of 340.
    """
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
    and ω̇ rotated into the link (revolute joints; see :func:`.recursion._lambda`).
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
    model.require_fixed_joint_space("customised Newton-Euler code (symbolic, codegen, the operation graphs)",
                                    "the symbolic backends expand the others: dyn_plugin.get_backend('symbolic_numba', model)")
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

