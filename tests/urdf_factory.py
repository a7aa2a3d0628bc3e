"""Random fixed-base URDF trees for the cross-checks against pinocchio.

``random_tree_urdf(rng, n_joints)`` returns the XML text of a kinematic tree with
exactly ``n_joints`` MOVING joints (revolute, continuous, prismatic) plus, when
``fixed=True``, two or three fixed joints:

* a fixed joint in the middle of a chain, with a moving joint right below it
  (moving joints above and below it whenever ``n_joints >= 2``);
* a fixed leaf (a link hanging off the tree by a fixed joint, with no children);
* sometimes (random) one more fixed joint at a random non-leaf place.

Everything a URDF can vary is drawn at random:

* topology: a serial chain (``branched=False``) or a tree whose joints' parents are
  drawn among the earlier links (``branched=True``; at least one link then carries
  two moving child joints when ``n_joints >= 3``);
* joint origins with arbitrary ``xyz`` and ``rpy``;
* joint axes: a random direction or a (possibly negative) coordinate axis, scaled
  by a factor in [0.3, 3] -- NON-UNIT on purpose, the parsers normalise them;
* inertial frames with an offset and a rotation (``rpy``);
* full inertia tensors ``R diag(p) R^T`` whose principal moments ``p`` are those of a
  solid box of random size, so they satisfy the strict triangle inequality and
  load in pybullet without "Bad inertia tensor properties";
* masses in [0.1, 5] kg (every link, the base included, has an inertial);
* limits for revolute and prismatic joints (none for continuous ones);
* optionally (``multi_dof=("spherical", "planar", "floating")`` or some of them; none by
  default, and then the draws are those without the option) joints of several degrees of
  freedom: pybullet's ``spherical``, URDF's ``planar`` (written with ``<axis xyz="0 0 1"/>``,
  the plane's normal) and ``floating``, with neither limits nor a drawn axis.

Joint names are ``<letter>_joint<k>`` where ``k`` is the creation index and the
letters are a random permutation, so the alphabetical order of the names is NOT the
file order; and the ``<link>``/``<joint>`` elements are written in a shuffled order.
(pinocchio orders the children of a link alphabetically by joint name, since
urdfdom keeps joints in a ``std::map``.)  Link names are ``base_link`` and
``link<k>`` (the child of joint ``k``).

The output only depends on the state of ``rng`` (a ``numpy.random.Generator``; an
int seed is accepted too).
"""

from __future__ import annotations

import math
import os
import string
from pathlib import Path

import numpy as np

__all__ = ["MULTI_DOF_TYPES", "random_tree_urdf", "write_urdf", "rpy_to_matrix", "random_inertia", "urdf_from_spec",
           "inertia_from_principal"]

_MOVING_TYPES = ("revolute", "continuous", "prismatic")
MULTI_DOF_TYPES = ("spherical", "planar", "floating")


def _f(x: float) -> str:
    """Shortest text that round-trips to the same double."""
    return repr(float(x))


def _vec(v) -> str:
    return " ".join(_f(x) for x in v)


def rpy_to_matrix(rpy) -> np.ndarray:
    """URDF convention: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def random_inertia(rng: np.random.Generator, mass: float) -> np.ndarray:
    """A physically valid, generally non-diagonal inertia tensor R diag(p) R^T.

    ``p`` are the principal moments of a solid box with sides in [0.05, 0.5] m, so
    p_i + p_j - p_k = mass * d_k^2 / 6 > 0 (strict triangle inequality), with margin.
    """
    a, b, c = rng.uniform(0.05, 0.5, size=3)
    p = mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    R = _random_rotation(rng)
    inertia = R @ np.diag(p) @ R.T
    return 0.5 * (inertia + inertia.T)


def _random_axis(rng: np.random.Generator) -> np.ndarray:
    kind = rng.integers(3)
    if kind == 0:  # a coordinate axis, sign random (pinocchio's RX/RY/RZ-like case)
        axis = np.zeros(3)
        axis[rng.integers(3)] = rng.choice([-1.0, 1.0])
    elif kind == 1:  # in a coordinate plane
        axis = np.zeros(3)
        i, j = rng.choice(3, size=2, replace=False)
        axis[i], axis[j] = rng.uniform(0.3, 1.0) * rng.choice([-1, 1]), rng.uniform(0.3, 1.0) * rng.choice([-1, 1])
    else:  # generic direction
        axis = rng.normal(size=3)
        while np.linalg.norm(axis) < 0.2:
            axis = rng.normal(size=3)
    axis = axis / np.linalg.norm(axis)
    return axis * rng.uniform(0.3, 3.0)  # deliberately non-unit


def _link_xml(rng: np.random.Generator, name: str) -> str:
    mass = rng.uniform(0.1, 5.0)
    inertia = random_inertia(rng, mass)
    xyz = rng.uniform(-0.3, 0.3, size=3)
    rpy = rng.uniform(-math.pi, math.pi, size=3)
    return (
        f'  <link name="{name}">\n'
        f'    <inertial>\n'
        f'      <origin xyz="{_vec(xyz)}" rpy="{_vec(rpy)}"/>\n'
        f'      <mass value="{_f(mass)}"/>\n'
        f'      <inertia ixx="{_f(inertia[0, 0])}" ixy="{_f(inertia[0, 1])}" ixz="{_f(inertia[0, 2])}"'
        f' iyy="{_f(inertia[1, 1])}" iyz="{_f(inertia[1, 2])}" izz="{_f(inertia[2, 2])}"/>\n'
        f'    </inertial>\n'
        f'  </link>\n'
    )


def _joint_xml(rng: np.random.Generator, name: str, jtype: str, parent: str, child: str) -> str:
    xyz = rng.uniform(-0.5, 0.5, size=3)
    rpy = rng.uniform(-math.pi, math.pi, size=3)
    lines = [
        f'  <joint name="{name}" type="{jtype}">',
        f'    <parent link="{parent}"/>',
        f'    <child link="{child}"/>',
        f'    <origin xyz="{_vec(xyz)}" rpy="{_vec(rpy)}"/>',
    ]
    if jtype in _MOVING_TYPES:
        lines.append(f'    <axis xyz="{_vec(_random_axis(rng))}"/>')
    elif jtype == "planar":
        lines.append('    <axis xyz="0 0 1"/>')
    if jtype == "revolute":
        lo, hi = -rng.uniform(0.2, math.pi), rng.uniform(0.2, math.pi)
        lines.append(f'    <limit lower="{_f(lo)}" upper="{_f(hi)}" effort="{_f(rng.uniform(10, 200))}" velocity="{_f(rng.uniform(1, 5))}"/>')
    elif jtype == "prismatic":
        lo, hi = -rng.uniform(0.05, 0.5), rng.uniform(0.05, 0.5)
        lines.append(f'    <limit lower="{_f(lo)}" upper="{_f(hi)}" effort="{_f(rng.uniform(10, 200))}" velocity="{_f(rng.uniform(0.1, 1))}"/>')
    lines.append('  </joint>\n')
    return "\n".join(lines)


def _letters(rng: np.random.Generator, k: int) -> list[str]:
    pool = list(string.ascii_lowercase)
    if k > len(pool):
        pool = [a + b for a in string.ascii_lowercase for b in string.ascii_lowercase]
    perm = rng.permutation(len(pool))[:k]
    return [pool[i] for i in perm]


def random_tree_urdf(
    rng,
    n_joints: int = 6,
    *,
    branched: bool = True,
    prismatic: bool = True,
    fixed: bool = True,
    continuous: bool = True,
    multi_dof: tuple = (),
    name: str = "random_tree",
) -> str:
    """XML text of a random fixed-base URDF tree with ``n_joints`` moving joints.

    See the module docstring for what is randomised.  ``branched=False`` gives a serial
    chain (the fixed leaf, if any, then hangs off the last link).  ``prismatic`` /
    ``continuous`` enable those joint types (revolute is always enabled; each enabled
    type appears at least once when ``n_joints`` allows).  ``fixed`` adds the fixed
    joints described above.  ``multi_dof``: joint types of several degrees of freedom
    (some of :data:`MULTI_DOF_TYPES`) enabled as well, each appearing at least once when
    ``n_joints`` allows.
    """
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    if n_joints < 1:
        raise ValueError("n_joints must be >= 1")

    # --- moving joint types -------------------------------------------------------
    enabled = ["revolute"] + (["continuous"] if continuous else []) + (["prismatic"] if prismatic else [])
    unknown = set(multi_dof) - set(MULTI_DOF_TYPES)
    if unknown:
        raise ValueError(f"multi_dof takes some of {MULTI_DOF_TYPES}, got {sorted(unknown)}")
    enabled += list(multi_dof)
    types = [enabled[i] for i in rng.integers(len(enabled), size=n_joints)]
    if n_joints >= len(enabled):  # make sure every enabled type shows up
        slots = rng.choice(n_joints, size=len(enabled), replace=False)
        for slot, t in zip(slots, enabled):
            types[slot] = t

    # --- joint sequence in creation order: ("moving", type) / ("fixed_mid"|"fixed_leaf"|"fixed_extra")
    seq: list[tuple[str, str]] = [("moving", t) for t in types]
    if fixed:
        k = int(rng.integers(1, n_joints)) if n_joints >= 2 else 0
        seq.insert(k, ("fixed_mid", "fixed"))  # the moving joint now at k+1 hangs below it
        if rng.random() < 0.5:  # an extra fixed joint, not a leaf (the next joint hangs below it)
            k2 = int(rng.integers(0, len(seq)))
            seq.insert(k2, ("fixed_extra", "fixed"))
        if branched:  # anywhere, except right after a fixed joint (that one keeps its child)
            positions = [k for k in range(1, len(seq) + 1) if seq[k - 1][0] == "moving"]
            k3 = positions[int(rng.integers(len(positions)))]
        else:
            k3 = len(seq)
        seq.insert(k3, ("fixed_leaf", "fixed"))

    # --- parents ---------------------------------------------------------------------
    links = ["base_link"]
    leaf_links: set[str] = set()
    below_moving: set[str] = set()  # links with a moving joint on their path to the root
    joints = []  # (kind, type, parent, child)
    chain_end = "base_link"
    for idx, (kind, jtype) in enumerate(seq):
        child = f"link{idx}"
        prev_kind = seq[idx - 1][0] if idx > 0 else None
        if prev_kind in ("fixed_mid", "fixed_extra"):
            parent = joints[-1][3]  # hang below that fixed joint
        elif not branched:
            parent = chain_end
        else:
            eligible = [l for l in links if l not in leaf_links]
            next_kind = seq[idx + 1][0] if idx + 1 < len(seq) else None
            mid = kind == "fixed_mid" or (kind == "fixed_extra" and next_kind == "fixed_mid")
            if mid and any(l in below_moving for l in eligible):
                eligible = [l for l in eligible if l in below_moving]  # a moving joint above it
            parent = eligible[int(rng.integers(len(eligible)))]
        joints.append([kind, jtype, parent, child])
        links.append(child)
        if kind == "moving" or parent in below_moving:
            below_moving.add(child)
        if kind == "fixed_leaf":
            leaf_links.add(child)
        else:
            chain_end = child

    if branched and n_joints >= 3:
        _ensure_branching(rng, joints)

    # --- names and XML -------------------------------------------------------------
    letters = _letters(rng, len(joints))
    joint_names = [f"{letters[i]}_joint{i}" for i in range(len(joints))]
    link_blocks = [_link_xml(rng, l) for l in links]
    joint_blocks = [
        _joint_xml(rng, joint_names[i], jtype, parent, child)
        for i, (kind, jtype, parent, child) in enumerate(joints)
    ]
    order_links = rng.permutation(len(link_blocks))
    order_joints = rng.permutation(len(joint_blocks))
    body = "".join(link_blocks[i] for i in order_links) + "".join(joint_blocks[i] for i in order_joints)
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}</robot>\n'


def _ensure_branching(rng: np.random.Generator, joints: list) -> None:
    """Make sure some link carries two moving child joints (re-parent one joint)."""
    moving_parents = [j[2] for j in joints if j[0] == "moving"]
    if len(set(moving_parents)) < len(moving_parents):
        return
    # candidates: moving joints not forced below a fixed joint, not the first moving one
    first_moving = next(i for i, j in enumerate(joints) if j[0] == "moving")
    forced = {i for i in range(1, len(joints)) if joints[i - 1][0] in ("fixed_mid", "fixed_extra")}
    cands = [i for i, j in enumerate(joints) if j[0] == "moving" and i > first_moving and i not in forced]
    if not cands:
        return
    i = cands[int(rng.integers(len(cands)))]
    earlier = [k for k in range(i) if joints[k][0] == "moving"]
    joints[i][2] = joints[earlier[int(rng.integers(len(earlier)))]][2]


def write_urdf(tmp_path, xml: str, name: str = "robot.urdf") -> Path:
    """Write ``xml`` to ``tmp_path / name`` and return the path."""
    path = Path(os.fspath(tmp_path)) / name
    path.write_text(xml)
    return path


# -- explicit trees (used by the hypothesis strategies of test_properties.py) ---------------


def inertia_from_principal(moments, rotation) -> np.ndarray:
    """``R diag(moments) R^T``, made exactly symmetric (a (3, 3) array)."""
    R = np.asarray(rotation, dtype=float)
    inertia = R @ np.diag(np.asarray(moments, dtype=float)) @ R.T
    return 0.5 * (inertia + inertia.T)


def urdf_from_spec(spec: dict) -> str:
    """XML text of a tree described explicitly, every number written exactly (repr).

    ``spec`` holds

    * ``name``: the robot's name;
    * ``links``: a list of dicts ``{"name", "inertial"}`` where ``inertial`` is ``None``
      (no ``<inertial>`` element) or ``{"xyz", "rpy", "mass", "inertia"}`` (inertia a
      symmetric (3, 3) array-like about the centre of mass, in the inertial frame);
    * ``joints``: a list of dicts ``{"name", "type", "parent", "child", "xyz", "rpy",
      "axis", "limit"}`` with ``axis`` a 3-vector or ``None`` (no ``<axis>``) and ``limit``
      ``None`` or a dict of some of ``lower``, ``upper``, ``effort``, ``velocity``;
    * optionally ``link_order`` / ``joint_order``: permutations in which the elements are
      written (default: as listed).
    """
    link_blocks = []
    for link in spec["links"]:
        inertial = link.get("inertial")
        if inertial is None:
            link_blocks.append(f'  <link name="{link["name"]}"/>\n')
            continue
        I = np.asarray(inertial["inertia"], dtype=float)
        link_blocks.append(
            f'  <link name="{link["name"]}">\n'
            f'    <inertial>\n'
            f'      <origin xyz="{_vec(inertial["xyz"])}" rpy="{_vec(inertial["rpy"])}"/>\n'
            f'      <mass value="{_f(inertial["mass"])}"/>\n'
            f'      <inertia ixx="{_f(I[0, 0])}" ixy="{_f(I[0, 1])}" ixz="{_f(I[0, 2])}"'
            f' iyy="{_f(I[1, 1])}" iyz="{_f(I[1, 2])}" izz="{_f(I[2, 2])}"/>\n'
            f'    </inertial>\n'
            f'  </link>\n'
        )
    joint_blocks = []
    for joint in spec["joints"]:
        lines = [
            f'  <joint name="{joint["name"]}" type="{joint["type"]}">',
            f'    <parent link="{joint["parent"]}"/>',
            f'    <child link="{joint["child"]}"/>',
            f'    <origin xyz="{_vec(joint["xyz"])}" rpy="{_vec(joint["rpy"])}"/>',
        ]
        if joint.get("axis") is not None:
            lines.append(f'    <axis xyz="{_vec(joint["axis"])}"/>')
        if joint.get("limit") is not None:
            attrs = " ".join(f'{key}="{_f(value)}"' for key, value in joint["limit"].items())
            lines.append(f'    <limit {attrs}/>')
        lines.append('  </joint>\n')
        joint_blocks.append("\n".join(lines))
    link_order = spec.get("link_order") or range(len(link_blocks))
    joint_order = spec.get("joint_order") or range(len(joint_blocks))
    body = "".join(link_blocks[i] for i in link_order) + "".join(joint_blocks[i] for i in joint_order)
    return f'<?xml version="1.0"?>\n<robot name="{spec.get("name", "spec_tree")}">\n{body}</robot>\n'
