"""The Newton-Euler recursion as a graph of 3-flop subtasks (Dhanaraj 1990, thesis ch. 4).

Every link contributes the 43 subtasks of **Table 4.1** (T1-T25 forward, T26-T43
backward), each 3 floating-point operations, with Table 4.1's precedences: a forward
subtask marked "p" needs its PARENT link's subtask, a backward subtask marked "s" needs
the subtask of its CHILD link (the succeeding link of a chain).  Removed, as in
**Table 4.2**: nine subtasks of a prismatic joint (its R has only zeros and ones, its ω
and α are the parent's rotated), nineteen of a link on the base (ω₀ = α₀ = 0), eight of a
leaf link (no outboard force or moment).  A removed subtask passes its inputs on
(:func:`.dag.without`): the leaf's f = F, so its parent's T30 needs the leaf's T26.
Behind a prismatic joint, k, ω² and λ (T7-T11) are the parent's permuted (thesis Eqs.
2.34-2.39), so their users need the parent's T7-T11.  Fixed bases only (ω₀ = α₀ = 0): a
floating base, mimic joints or a model without moving joints are refused (ModelError).

Modes:

* ``"general"``: Table 4.2 only, the thesis's general arm (231 subtasks for six revolute
  joints, §4.3.1).
* ``"customised"``: also the sparsity eliminations of **Tables 4.4-4.6**, derived from the
  model, never listed by hand: the zero coordinates of each link's centre of mass s_i and
  of each offset p (frame i's origin in its parent's frame, plus q_i·z for a prismatic
  joint, whose sliding offset is p's variable part), in the frames of
  :func:`dyn_plugin.symbolic.customise.prepare` (``regroup=False``: joint axes along z,
  round-off snapped).  Per Table 4.5, z zero coordinates of a vector remove the first 2z of
  its six subtasks λ·v (T12-T17 for p, T20-T25 for s) and the first z of its three cross
  product subtasks (T33-T35 for p, T36-T38 for s).  A constant rotation that is not a
  signed permutation (an axis neither parallel nor perpendicular to its parent's) costs
  ceil(flops/3) more subtasks at each of its five uses (ω, α, a forward; f, n backward);
  Eqs. 4.3-4.4, and so the general mode, assume it is free.
* ``"full"``: all 43 subtasks of every link (Table 4.1 alone); with :func:`.dag.subgraph`
  it rebuilds a printed task list (Table 4.7's 156) to schedule the thesis's own graph.

Which printed table is followed where they disagree (thesis §8 item 12 of the notes):

* T12-T17 compute λ_{i-1} p_{i-1} (Table 4.1: they need T9-T11 of the previous link), so
  their zeros are those of the offset INTO link i.  Table 4.6 counts them with p_i, the
  offset out of link i; the two differ for the Stanford arm's boom (link 3): p_2 =
  (0, −q₃, 0) is not zero, so 316 and 317 stay.
* Link 5's centre of mass is (0, −0.0566, 0) in Table 2.7 and in ``urdf/stanford.toml``;
  Table 4.4 marks its z non-zero.  The model's zero is used: 520-523, 536, 537 go.
* Table 4.7 (the printed Stanford layering, 156 subtasks) keeps 120, 121, 126, 127, 233
  and drops 119, 128, 129 against Tables 4.2 and 4.6.  The rules are followed, not that
  table; with them the bundled Stanford arm has 153 subtasks (Tables 4.2 + 4.6 as
  printed give 154; validation/schedules.md accounts for every difference).

Trees: a link with k > 1 children gets, per child after the first, the ten subtasks its
outboard wrench costs (R f: 2, adding it to F: 1, p × f: 3, R n: 2, p × f + R n: 1, adding
that to s × F: 1), so T32 and T41-T43 keep Table 4.1's meaning and cost.

Friction (thesis Table 3.3, flow chart Fig. 3.10): ``friction=True`` adds, per joint, the bearing friction
(revolute 15 M + 5 A = 7 subtasks, prismatic 10 M + 7 A = 6) from the joint's wrench
f_i, n_i and τ_i, then the transmission friction from τ_out (linear interpolation of the
efficiency curve 2 M + 2 A = 2 subtasks; cubic spline 5 M + 4 A = 3).

Task codes: ``link * base + number``, base 100 (523 = link 5, T23, as in the thesis),
unique for any number of links; base 1000 only when a link needs subtask numbers above 99
(many children or constant-rotation subtasks).  Numbers: 1-43 Table 4.1; 44-50 bearing friction;
51-53 transmission friction; from 54: per extra child ten, then the constant-rotation
subtasks.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import InputError, ModelError
from .dag import BACKWARD, FORWARD, FRICTION, Task, TaskGraph, without

MODES = ("general", "customised", "full")

FRICTION_OPERATIONS = {   # Table 3.3, per joint: (multiplications, additions)
    ("bearing", True): (15, 5), ("bearing", False): (10, 7),            # revolute (Eq. 3.3), prismatic (Eq. 3.4)
    ("transmission", "linear"): (2, 2), ("transmission", "spline"): (5, 4),   # efficiency curve interpolation
}


def _subtasks(operations) -> int:
    """3-flop subtasks for an operation count (multiplications, additions)."""
    return math.ceil(sum(operations) / 3)


BEARING_FRICTION = {revolute: _subtasks(FRICTION_OPERATIONS[("bearing", revolute)]) for revolute in (True, False)}
TRANSMISSION = {curve: _subtasks(FRICTION_OPERATIONS[("transmission", curve)]) for curve in ("linear", "spline")}


@dataclasses.dataclass(frozen=True)
class Subtask:
    """One row of Table 4.1: ``same`` / ``parent`` / ``child``: numbers of the subtasks it
    needs on its own link, on the previous (parent) link, on the succeeding (child) link."""

    number: int
    label: str
    same: tuple = ()
    parent: tuple = ()
    child: tuple = ()

    @property
    def phase(self) -> str:
        return FORWARD if self.number <= 25 else BACKWARD


def _rows():
    """Table 4.1 with the OCR repairs of the notes: T4/T5 need T6^p (printed "T_0^p"),
    T20-T22 compute λ_i s_i (printed "{g}_i"), T41-T43 need T33 to T40."""
    xyz = "xyz"
    rows = [Subtask(1, "ω_x of R_iᵀ ω_{i-1}", parent=(1, 2, 3)),
            Subtask(2, "ω_y of R_iᵀ ω_{i-1}", parent=(1, 2, 3)),
            Subtask(3, "ω_z = ω'_z + q̇; c = (q̇ω_y, −q̇ω_x, q̈)", (1, 2)),
            Subtask(4, "α'_x of R_iᵀ α_{i-1}", parent=(6,)), Subtask(5, "α'_y of R_iᵀ α_{i-1}", parent=(6,)),
            Subtask(6, "α = α' + c", (3, 4, 5)), Subtask(7, "k = (ω_yω_z, ω_zω_x, ω_xω_y)", (1, 2, 3)),
            Subtask(8, "ω_x², ω_y², ω_z²", (1, 2, 3)), Subtask(9, "λ11, λ22, λ33", (8,)),
            Subtask(10, "λ21, λ13, λ32 = k + α", (6, 7)), Subtask(11, "λ23, λ31, λ12 = k − α", (6, 7))]
    rows += [Subtask(12 + m, f"(λ_{{i-1}} p_{{i-1}})_{c} products", parent=(9, 10, 11)) for m, c in enumerate(xyz)]
    rows += [Subtask(15 + m, f"a''_{c} = a_{{i-1}} + λ p", (12, 13, 14), (18, 19)) for m, c in enumerate(xyz)]
    rows += [Subtask(18, "a_x of R_iᵀ a''", (15, 16, 17)), Subtask(19, "a_y of R_iᵀ a''", (15, 16, 17))]
    rows += [Subtask(20 + m, f"(λ_i s_i)_{c} products", (9, 10, 11)) for m, c in enumerate(xyz)]
    rows += [Subtask(23 + m, f"a_c{c} = a + λ s", (18, 19, 20, 21, 22)) for m, c in enumerate(xyz)]
    rows += [Subtask(26, "F = m a_c", (23, 24, 25))]
    rows += [Subtask(27 + m, f"N_{c} = I α + D k", (6, 7)) for m, c in enumerate(xyz)]
    rows += [Subtask(30, "f_x of R_{i+1} f_{i+1}", child=(32,)), Subtask(31, "f_y of R_{i+1} f_{i+1}", child=(32,)),
             Subtask(32, "f = F + R f_{i+1}", (26, 30, 31))]
    rows += [Subtask(33 + m, f"(p_i × f)_{c}", (30, 31)) for m, c in enumerate(xyz)]
    rows += [Subtask(36 + m, f"(s_i × F)_{c}", (26,)) for m, c in enumerate(xyz)]
    rows += [Subtask(39, "n_x of R_{i+1} n_{i+1}", child=(41, 42, 43)),
             Subtask(40, "n_y of R_{i+1} n_{i+1}", child=(41, 42, 43))]
    rows += [Subtask(41 + m, f"n_{c} = N + p×f + s×F + R n", (27, 28, 29, *range(33, 41))) for m, c in enumerate(xyz)]
    return {row.number: row for row in rows}


SUBTASKS = _rows()
"""Table 4.1: subtask number -> :class:`Subtask`."""

PRISMATIC_ELIMINATED = frozenset({1, 2, 4, 5, 7, 8, 9, 10, 11})                  # Table 4.2
FIRST_LINK_ELIMINATED = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 26, 27})
LAST_LINK_ELIMINATED = frozenset({30, 31, 32, 33, 34, 35, 39, 40})
FIRST_EXTRA = 54                           # numbers 44-53: friction


@dataclasses.dataclass(frozen=True)
class LinkData:
    """What the decomposition reads of one link: its parent (-1: the base), children, joint
    type, and for the customised mode the sparsity of its vectors and rotation."""

    parent: int
    children: tuple
    revolute: bool
    offset_zeros: int = 0      # zero coordinates of p into this link (incl. q·z of a prismatic joint)
    com_zeros: int = 0         # zero coordinates of s_i (first moment m s_i)
    rotation_subtasks: int = 0  # extra subtasks per use of its constant rotation (0: signed permutation)


def newton_euler_graph(model, mode: str = "customised", friction: bool = False,
                       transmission: str = "linear") -> TaskGraph:
    """The task graph of one inverse-dynamics evaluation of ``model`` (Table 4.1).

    ``mode``: ``"general"`` (Table 4.2), ``"customised"`` (also Tables 4.4-4.6 from the
    model's zeros) or ``"full"`` (all 43 subtasks of every link, nothing removed);
    ``friction``: add Table 3.3's friction subtasks per joint, with the ``transmission``
    efficiency curve ``"linear"`` or ``"spline"``.  See the module docstring for the codes
    and for where printed tables are not followed.  A removed subtask's successors need its
    predecessors instead (:func:`.dag.without`), which never lets a task run before an input.
    """
    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if transmission not in TRANSMISSION:
        raise InputError(f"transmission must be one of {', '.join(TRANSMISSION)}; got {transmission!r}")
    model.require_fixed_joint_space("Dhanaraj's task graph (one link per one-dof joint)", "")
    links = link_data(model, customised=mode == "customised")
    tasks, removed, labels = {}, set(), {}
    for k in range(len(links)):
        _add_link(tasks, labels, removed, links, k, mode, friction, transmission)
    kept = without(tasks, removed)
    base = 100 if max(number for _, number in kept) < 100 else 10 ** len(str(max(number for _, number in kept)))
    code = {key: (key[0] + 1) * base + key[1] for key in kept}
    order = sorted(kept, key=code.__getitem__)
    info = {code[key]: Task(code[key], key[0] + 1, key[1], labels[key][0], labels[key][1]) for key in order}
    parents = {k + 1: link.parent + 1 for k, link in enumerate(links)}
    return TaskGraph({code[key]: sorted(code[p] for p in kept[key]) for key in order},
                     name=f"{model.name} ({mode}{', friction' if friction else ''})", flops_per_task=3,
                     info=info, notes=_notes(model, mode),
                     meta={"parents": parents, "nominal_layers": stacked_layers(info, parents)})


def _local_layers(phase: str) -> dict:
    """Subtask number -> its layer in one link's layered graph (Figs. 4.7, 4.8): as early
    as Table 4.1 allows when the previous link's layers start two earlier (forward) and the
    succeeding link's backward layers two earlier (backward); forward 6, backward 3 layers."""
    rows = [row for row in SUBTASKS.values() if row.phase == phase]
    layer = {row.number: 1 for row in rows}
    for _ in range(len(rows)):
        for row in rows:
            outer = row.parent if phase == FORWARD else row.child
            inputs = [layer[m] for m in row.same if m in layer] + [layer[m] - 2 for m in outer]
            layer[row.number] = max(1, 1 + max(inputs, default=0))
    return layer


LOCAL_LAYERS = {**_local_layers(FORWARD), **_local_layers(BACKWARD)}
"""Subtask number -> layer within its link's forward (1-6) or backward (1-3) layered graph."""


def stacked_layers(info: dict, parents: dict) -> dict:
    """Task -> its layer in Dhanaraj's stacking of the links' layered graphs (§4.3.1,
    Fig. 4.9, Tables 4.3 and 4.7): link i's forward layers start two after its parent's
    (a link on the base runs alongside its child's first layers: ASAP, no entry here), its
    backward layers after its own forward ones and two after each child's.  ``info``: task ->
    :class:`.dag.Task`; ``parents``: link -> parent link (0: the base).  Only Table 4.1
    subtasks have entries; :func:`.scheduling.layer_numbers` puts each task no earlier than
    after its predecessors (the stacking ignores removed subtasks and the extra ones)."""
    forward = {}
    for link in sorted(parents):
        parent = parents[link]
        forward[link] = -2 if parent == 0 else 0 if parents[parent] == 0 else forward[parent] + 2
    backward = {}
    for link in sorted(parents, reverse=True):
        children = [c for c in parents if parents[c] == link]
        backward[link] = max([forward[link] + 6] + [backward[c] + 2 for c in children])
    out = {}
    for task, described in info.items():
        if described.number in LOCAL_LAYERS and not (described.phase == FORWARD and parents[described.link] == 0):
            offset = forward if described.phase == FORWARD else backward
            out[task] = offset[described.link] + LOCAL_LAYERS[described.number]
    return out


def link_data(model, customised: bool) -> list:
    """:class:`LinkData` per link of a fixed-base model with moving joints; the sparsity
    from :func:`~dyn_plugin.symbolic.customise.prepare` (``regroup=False``) when ``customised``."""
    _check_supported(model)
    parents = [int(p) for p in model.parents]
    children = [tuple(c for c in range(model.n) if parents[c] == k) for k in range(model.n)]
    revolute = [t == "revolute" for t in model.joint_types]
    if not customised:
        return [LinkData(parents[k], children[k], revolute[k]) for k in range(model.n)]
    from ..symbolic.customise import prepare

    prepared, _ = prepare(model, regroup=False)
    out = []
    for k, link in enumerate(prepared):
        offset = (link.P != 0) | ((not link.revolute) & (link.R[:, 2] != 0))
        out.append(LinkData(parents[k], children[k], revolute[k], int(3 - offset.sum()), int(3 - (link.ms != 0).sum()),
                            math.ceil(rotation_flops(link.R) / 3)))
    return out


def rotation_flops(R) -> int:
    """Flops of R·v for a constant R: per row, a multiplication for each entry other than
    0 and ±1 and an addition fewer than its non-zero entries (0 for a signed permutation)."""
    R = np.asarray(R, dtype=float)
    nonzero = R != 0
    products = nonzero & (np.abs(R) != 1)
    return int(products.sum() + sum(max(0, int(row.sum()) - 1) for row in nonzero))


def _check_supported(model) -> None:
    if getattr(model, "floating_base", False):
        raise ModelError(f"model {model.name!r} has a floating base: the task graph of Dhanaraj's Table 4.1 is "
                         "for a fixed base (ω₀ = α₀ = 0); load it with floating_base=False")
    if getattr(model, "mimic", ()):
        raise ModelError(f"model {model.name!r} has mimic joints: the task graph covers independent joints only; "
                         "load it with mimic=False")
    require_moving_joint(model)


def require_moving_joint(model) -> None:
    """A ModelError for a model without moving joints: there is no recursion to schedule."""
    if model.n == 0:
        raise ModelError(f"model {model.name!r} has no moving joint: there is no recursion to schedule")


def _eliminated(links, k: int, mode: str) -> set:
    """Table 4.2 for link k, and in the customised mode Tables 4.5-4.6 from its zeros."""
    link = links[k]
    out = set()
    if mode == "full":
        return out
    if not link.revolute:
        out |= PRISMATIC_ELIMINATED
    if link.parent < 0:
        out |= FIRST_LINK_ELIMINATED
    if not link.children:
        out |= LAST_LINK_ELIMINATED
    if mode == "customised":
        out |= set(range(12, 12 + 2 * link.offset_zeros)) | set(range(20, 20 + 2 * link.com_zeros))
        out |= set(range(36, 36 + link.com_zeros))
        if link.children:
            out |= set(range(33, 33 + links[link.children[0]].offset_zeros))
    return out


def _add_link(tasks, labels, removed, links, k, mode, friction, transmission) -> None:
    """Link k's subtasks (keys (k, number)) into ``tasks`` with their predecessors; its
    eliminated ones into ``removed``."""
    link = links[k]
    first = link.children[0] if link.children else None
    for row in SUBTASKS.values():
        preds = {(k, m) for m in row.same}
        preds |= {(link.parent, m) for m in row.parent} if link.parent >= 0 else set()
        preds |= {(first, m) for m in row.child} if first is not None else set()
        tasks[(k, row.number)] = preds
        labels[(k, row.number)] = (row.phase, row.label)
    if not link.revolute:
        _copy_parent_lambda(tasks, k, link.parent)
    removed |= {(k, m) for m in _eliminated(links, k, mode)}
    number = FIRST_EXTRA
    for j, child in enumerate(link.children[1:]):
        _add_child(tasks, labels, removed, links, k, child, number, j == 0, mode)
        number += 10
    if mode == "customised":
        _add_rotations(tasks, labels, links, k, number)
    if friction:
        _add_friction(tasks, labels, k, link.revolute, transmission)


def _copy_parent_lambda(tasks, k, parent) -> None:
    """Behind a prismatic joint k, ω_k is the parent's ω rotated by a constant (0, ±1)
    matrix, so k, ω² and λ (T7-T11, removed by Table 4.2) are the parent's, permuted (thesis
    Eqs. 2.34-2.39): whoever needs them needs the parent's T7, T8 and T9-T11.  Table 4.1's
    predecessors (T1-T3 of link k) would let λ_k s_k run before λ of the parent exists."""
    sources = {7: (7,), 8: (8,), 9: (9, 10, 11), 10: (9, 10, 11), 11: (9, 10, 11)}
    for number, numbers in sources.items():
        tasks[(k, number)] = {(parent, m) for m in numbers} if parent >= 0 else set()


def _add_child(tasks, labels, removed, links, k, child, n0, first_extra, mode) -> None:
    """The ten subtasks (numbers n0..n0+9) of a child after link k's first (trees)."""
    new = {n0: ({(child, 32)}, "f_x of R_c f_c"), n0 + 1: ({(child, 32)}, "f_y of R_c f_c"),
           n0 + 2: ({(k, 26) if first_extra else (k, n0 - 8), (k, n0), (k, n0 + 1)}, "F + R_c f_c")}
    new |= {n0 + 3 + m: ({(k, n0), (k, n0 + 1)}, f"(p_c × f_c)_{c}") for m, c in enumerate("xyz")}
    new |= {n0 + 6 + m: ({(child, 41), (child, 42), (child, 43)}, f"n_{c} of R_c n_c") for m, c in enumerate("xy")}
    new[n0 + 8] = ({(k, n0 + 3), (k, n0 + 4), (k, n0 + 5), (k, n0 + 6), (k, n0 + 7)}, "p_c × f_c + R_c n_c")
    sxf = {(k, 36), (k, 37), (k, 38)} if first_extra else {(k, n0 - 1)}
    new[n0 + 9] = (sxf | {(k, n0 + 8)}, "s × F + p_c × f_c + R_c n_c")
    for number, (preds, label) in new.items():
        tasks[(k, number)] = preds
        labels[(k, number)] = (BACKWARD, label)
    tasks[(k, 32)] = (tasks[(k, 32)] - {(k, 26), (k, n0 - 8)}) | {(k, n0 + 2)}
    for m in (41, 42, 43):
        tasks[(k, m)] = (tasks[(k, m)] - {(k, 36), (k, 37), (k, 38), (k, n0 - 1)}) | {(k, n0 + 9)}
    if mode == "customised":
        removed |= {(k, n0 + 3 + m) for m in range(links[child].offset_zeros)}


def _add_rotations(tasks, labels, links, k, number) -> None:
    """Customised mode: subtasks for the constant part of rotations that are not signed
    permutations, between the producers and the consumers of each rotated vector."""
    link = links[k]
    sites = []
    if link.parent >= 0 and link.rotation_subtasks:
        p = link.parent
        sites += [(link.rotation_subtasks, FORWARD, "ω", {(p, 1), (p, 2), (p, 3)}, {(k, 1), (k, 2)}),
                  (link.rotation_subtasks, FORWARD, "α", {(p, 6)}, {(k, 4), (k, 5)}),
                  (link.rotation_subtasks, FORWARD, "a", {(k, 15), (k, 16), (k, 17)}, {(k, 18), (k, 19)})]
    for j, child in enumerate(link.children):
        if links[child].rotation_subtasks:
            n0 = FIRST_EXTRA + 10 * (j - 1)
            f, n = ((30, 31), (39, 40)) if j == 0 else ((n0, n0 + 1), (n0 + 6, n0 + 7))
            count = links[child].rotation_subtasks
            sites += [(count, BACKWARD, f"f of child {child + 1}", {(k, m) for m in f}, None),
                      (count, BACKWARD, f"n of child {child + 1}", {(k, m) for m in n}, None)]
    for count, phase, what, producers, consumers in sites:
        if consumers is None:
            consumers = {key for key, preds in tasks.items() if key[0] == k and preds & producers}
        new = [(k, number + m) for m in range(count)]
        number += count
        for key in new:
            tasks[key] = set(producers)
            labels[key] = (phase, f"constant rotation of {what} (not a signed permutation)")
        for key in consumers:
            tasks[key] = (tasks[key] - producers) | set(new)


def _add_friction(tasks, labels, k, revolute, transmission) -> None:
    """Table 3.3 per joint: bearing friction from f_i, n_i (Eq. 3.3 revolute, 3.4
    prismatic) as two bearing-load subtasks, two sums, then a chain ending in
    τ_out = τ + τ_f^J; then the transmission friction (Table 3.2) from τ_out."""
    wrench = {(k, 32), (k, 41), (k, 42)}
    tau = (k, 43) if revolute else (k, 32)
    count = BEARING_FRICTION[revolute]
    chain = {44: wrench, 45: wrench, 46: {(k, 44), (k, 45)}, 47: {(k, 44), (k, 45)}, 48: {(k, 46), (k, 47)}}
    chain |= {m: {(k, m - 1)} for m in range(49, 44 + count)}
    chain[43 + count] = chain[43 + count] | {tau}
    for m in range(TRANSMISSION[transmission]):
        chain[51 + m] = {(k, 43 + count if m == 0 else 50 + m)}
    for number, preds in chain.items():
        tasks[(k, number)] = preds
        kind = "bearing friction τ_f^J (Table 3.3)" if number < 51 else "transmission friction τ_f^T (Table 3.3)"
        labels[(k, number)] = (FRICTION, kind + (", τ_out = τ + τ_f^J" if number == 43 + count else ""))


def _notes(model, mode: str) -> list:
    """What the decomposition assumes of this model and does not count (products of inertia)."""
    if mode != "customised":
        return []
    from ..kinematics import parallel_axis
    from ..symbolic.customise import prepare

    notes = []
    for k, link in enumerate(prepare(model, regroup=False)[0]):
        com = link.ms / link.mass if link.mass else np.zeros(3)
        about_com = link.J - parallel_axis(link.mass, com)
        off = about_com - np.diag(np.diag(about_com))
        if np.abs(off).max() > 1e-12 * max(1e-300, np.abs(about_com).max()):
            notes.append(f"link {k + 1} ({model.link_names[k]}): products of inertia in its frame; T27-T29 count "
                         "a diagonal inertia (thesis Eqs. 4.11-4.13), so N_i costs more than counted")
    return notes
