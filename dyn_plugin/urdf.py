"""URDF in (through urchin) and out.

Reading happens in two steps.  A structural check over the raw XML gives clear errors
that name the element at fault (urchin's own errors are terse, and it silently replaces
a missing ``<inertial>`` by 1 kg and a zero axis by x).  urchin then parses the values.
The kinematic tree is assembled here: fixed joints are merged into their parent link,
and moving joints are ordered depth-first from the root with children sorted by joint
name - the order pinocchio gets from urdfdom, which stores joints in a name-sorted map.
"""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path
from typing import Optional, Union

import numpy as np
from lxml import etree

from .errors import URDFError
from .kinematics import PRISMATIC, REVOLUTE, matrix_to_rpy, parallel_axis
from .model import DEFAULT_GRAVITY, RobotModel, check_link_inertia

MOVING_TYPES = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}
SUPPORTED_TYPES = set(MOVING_TYPES) | {"fixed"}


def load_urdf(path: Union[str, os.PathLike], *, strict: bool = False, gravity=DEFAULT_GRAVITY) -> RobotModel:
    """Build a :class:`RobotModel` from a URDF file.

    Parameters
    ----------
    path : str or path-like
        A fixed-base URDF file.  Meshes are never loaded.
    strict : bool
        Treat a triangle-inequality break as an error (used for bundled robots)
        instead of a :class:`~dyn_plugin.errors.PhysicalValidityWarning`.
    gravity : (3,) array_like, m/s²
        Physical gravity in the base frame.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise URDFError(f"cannot read URDF file {str(path)!r}: {exc.strerror or exc}") from None
    model = load_urdf_string(text, strict=strict, gravity=gravity, source=str(path))
    return dataclasses.replace(model, source_path=str(path.resolve()))


def load_urdf_string(text: str, *, strict: bool = False, gravity=DEFAULT_GRAVITY,
                     source: str = "<string>") -> RobotModel:
    """Build a :class:`RobotModel` from URDF text; see :func:`load_urdf`."""
    root = _parse_xml(text, source)
    _check_structure(root, source)
    robot = _parse_with_urchin(text, source)
    inertial_links = {link.get("name") for link in root.iter("link") if link.find("inertial") is not None}
    return _assemble(robot, inertial_links, text, source, strict, gravity)


# -- structural checks over the raw XML ---------------------------------------------


def _parse_xml(text: str, source: str):
    try:
        root = etree.fromstring(text.encode() if isinstance(text, str) else text)
    except etree.XMLSyntaxError as exc:
        raise URDFError(f"{source}: malformed XML: {exc}") from None
    if root.tag != "robot":
        raise URDFError(f"{source}: the root element is <{root.tag}>, expected <robot>")
    return root


def _check_structure(root, source: str) -> None:
    links = [link.get("name") for link in root.findall("link")]
    for i, name in enumerate(links):
        if not name:
            raise URDFError(f"{source}: <link> number {i + 1} has no name attribute")
    duplicates = {name for name in links if links.count(name) > 1}
    if duplicates:
        raise URDFError(f"{source}: link names used more than once: {sorted(duplicates)}")
    if not links:
        raise URDFError(f"{source}: the robot has no <link>")
    parent_joint = {}
    for joint in root.findall("joint"):
        name = joint.get("name")
        kind = joint.get("type")
        if not name:
            raise URDFError(f"{source}: a <joint> has no name attribute")
        if kind not in SUPPORTED_TYPES:
            raise URDFError(
                f"{source}: joint {name!r} has type {kind!r}; supported types are "
                f"{sorted(SUPPORTED_TYPES)} (fixed-base trees only: no floating or planar joints)"
            )
        for role in ("parent", "child"):
            element = joint.find(role)
            link = None if element is None else element.get("link")
            if link is None:
                raise URDFError(f"{source}: joint {name!r} has no <{role} link=...>")
            if link not in links:
                raise URDFError(f"{source}: joint {name!r} names {role} link {link!r}, which does not exist")
        child = joint.find("child").get("link")
        if child in parent_joint:
            raise URDFError(
                f"{source}: link {child!r} is the child of two joints ({parent_joint[child]!r} and "
                f"{name!r}); a kinematic tree gives each link one parent (closed loops are not supported)"
            )
        parent_joint[child] = name
        if kind in MOVING_TYPES:
            _check_axis(joint, name, source)
    roots = [link for link in links if link not in parent_joint]
    if len(roots) != 1:
        raise URDFError(
            f"{source}: expected exactly one root link (a link that is no joint's child), "
            f"found {roots if roots else 'none: the joints form a loop'}"
        )


def _check_axis(joint, name: str, source: str) -> None:
    axis = joint.find("axis")
    if axis is None:
        return  # URDF default (1, 0, 0)
    try:
        values = np.array([float(v) for v in axis.get("xyz", "1 0 0").split()])
    except ValueError:
        raise URDFError(f"{source}: joint {name!r}: <axis xyz> must be three numbers") from None
    if values.shape != (3,) or not np.all(np.isfinite(values)) or np.linalg.norm(values) < 1e-9:
        raise URDFError(f"{source}: joint {name!r}: <axis xyz={axis.get('xyz')!r}> must be a non-zero 3-vector")


def _parse_with_urchin(text: str, source: str):
    from urchin import URDF  # imported here: it pulls in trimesh, slow to import

    stream = io.BytesIO(text.encode())
    stream.name = source  # urchin resolves mesh paths against it; meshes are never loaded
    try:
        return URDF.load(stream, lazy_load_meshes=True)
    except Exception as exc:  # urchin raises ValueError, KeyError, TypeError...
        raise URDFError(f"{source}: invalid URDF: {type(exc).__name__}: {exc}") from None


# -- assembling the tree ---------------------------------------------------------------


class _Body:
    """Mass, first moment and inertia about the body origin, accumulated over merged links."""

    def __init__(self):
        self.mass = 0.0
        self.first_moment = np.zeros(3)
        self.inertia_at_origin = np.zeros((3, 3))

    def add(self, mass: float, com: np.ndarray, inertia_com: np.ndarray) -> None:
        self.mass += mass
        self.first_moment += mass * com
        self.inertia_at_origin += inertia_com + parallel_axis(mass, com)

    def com_and_inertia(self):
        if self.mass <= 0:
            return np.zeros(3), np.zeros((3, 3))
        com = self.first_moment / self.mass
        return com, self.inertia_at_origin - parallel_axis(self.mass, com)


def _assemble(robot, inertial_links, text, source, strict, gravity) -> RobotModel:
    """Walk the tree from the root: merge fixed children into their moving body, number
    moving joints depth-first.  Links without ``<inertial>`` weigh 0 kg (as in pinocchio)."""
    children = {link.name: [] for link in robot.links}
    for joint in robot.joints:
        children[joint.parent].append(joint)
    for joint_list in children.values():
        joint_list.sort(key=lambda j: j.name)  # urdfdom's name-sorted order, as pinocchio
    link_map = robot.link_map
    base = next(name for name in children if all(j.child != name for j in robot.joints))

    joints, bodies, without_inertial = [], [], []  # joints: (urdf joint, placement, parent body index)

    def visit(link_name: str, body_index: int, X: np.ndarray) -> None:
        """Add link ``link_name``, placed at ``X`` in moving body ``body_index`` (-1: base)."""
        link = link_map[link_name]
        if body_index >= 0 and link_name not in inertial_links:
            without_inertial.append(link_name)
        elif body_index >= 0:
            mass = float(link.inertial.mass)
            inertia = np.asarray(link.inertial.inertia, dtype=float)
            check_link_inertia(link_name, mass, inertia, strict=strict, where=f" in {source}")
            R = X[:3, :3] @ link.inertial.origin[:3, :3]
            com = X[:3, :3] @ link.inertial.origin[:3, 3] + X[:3, 3]
            bodies[body_index].add(mass, com, R @ inertia @ R.T)
        for joint in children[link_name]:
            if joint.joint_type == "fixed":
                visit(joint.child, body_index, X @ joint.origin)
                continue
            joints.append((joint, X @ joint.origin, body_index))
            bodies.append(_Body())
            visit(joint.child, len(joints) - 1, np.eye(4))

    visit(base, -1, np.eye(4))
    model = _model_from_joints(robot.name, joints, bodies, text, gravity, base)
    return dataclasses.replace(model, links_without_inertial=tuple(without_inertial))


def _model_from_joints(name, joints, bodies, text, gravity, base):
    n = len(joints)
    coms, inertias = zip(*(b.com_and_inertia() for b in bodies)) if n else ((), ())
    lower, upper, velocity, effort, damping, friction, continuous = (np.zeros(n) for _ in range(7))
    for i, (joint, _, _) in enumerate(joints):
        limit, dyn = joint.limit, joint.dynamics
        is_continuous = joint.joint_type == "continuous" or limit is None or (
            limit.lower is None and limit.upper is None)
        continuous[i] = joint.joint_type == "continuous"
        lower[i] = -np.inf if is_continuous or limit.lower is None else limit.lower
        upper[i] = np.inf if is_continuous or limit.upper is None else limit.upper
        velocity[i] = np.inf if limit is None or not limit.velocity else limit.velocity
        effort[i] = np.inf if limit is None or not limit.effort else limit.effort
        damping[i] = 0.0 if dyn is None or dyn.damping is None else dyn.damping
        friction[i] = 0.0 if dyn is None or dyn.friction is None else dyn.friction
    return RobotModel(
        name=name,
        joint_names=tuple(j.name for j, _, _ in joints),
        link_names=tuple(j.child for j, _, _ in joints),
        joint_types=tuple(MOVING_TYPES[j.joint_type] for j, _, _ in joints),
        parents=np.array([parent for _, _, parent in joints], dtype=int),
        joint_rotations=np.array([X[:3, :3] for _, X, _ in joints]).reshape(n, 3, 3),
        joint_positions=np.array([X[:3, 3] for _, X, _ in joints]).reshape(n, 3),
        axes=np.array([j.axis for j, _, _ in joints], dtype=float).reshape(n, 3),
        masses=np.array([b.mass for b in bodies]),
        coms=np.array(coms).reshape(n, 3),
        inertias=np.array(inertias).reshape(n, 3, 3),
        lower=lower, upper=upper, velocity_limits=velocity, effort_limits=effort,
        damping=damping, friction=friction, continuous=continuous.astype(bool),
        gravity=np.asarray(gravity, dtype=float), source_urdf=text, base_link=base,
    )


# -- writing ---------------------------------------------------------------------------


def _fmt(values) -> str:
    """Numbers written with repr precision, so that reading them back is exact."""
    return " ".join(repr(float(v) + 0.0) for v in np.atleast_1d(values))  # + 0.0 turns -0.0 into 0.0


def to_urdf(model: RobotModel, comments: Optional[dict] = None) -> str:
    """Write a model as URDF text (inertias full, numbers exact to the last bit).

    ``comments`` optionally maps a joint or link name to a comment written above its
    element (used to carry provenance into the bundled URDF files).
    """
    comments = {key: text.replace("--", "- -") for key, text in (comments or {}).items()}  # XML forbids "--" here
    lines = ['<?xml version="1.0"?>', f'<robot name="{model.name}">']
    if "robot" in comments:
        lines.append(f"  <!-- {comments['robot']} -->")
    lines.append(f'  <link name="{model.base_link}"/>')
    for i in range(model.n):
        lines += _link_xml(model, i, comments.get(model.link_names[i]))
        lines += _joint_xml(model, i, comments.get(model.joint_names[i]))
    lines.append("</robot>")
    return "\n".join(lines) + "\n"


def _link_xml(model: RobotModel, i: int, comment: Optional[str]) -> list:
    I = model.inertias[i]
    out = [f"  <!-- {comment} -->"] if comment else []
    out += [
        f'  <link name="{model.link_names[i]}">',
        "    <inertial>",
        f'      <origin xyz="{_fmt(model.coms[i])}" rpy="0.0 0.0 0.0"/>',
        f'      <mass value="{_fmt(model.masses[i])}"/>',
        f'      <inertia ixx="{_fmt(I[0, 0])}" ixy="{_fmt(I[0, 1])}" ixz="{_fmt(I[0, 2])}" '
        f'iyy="{_fmt(I[1, 1])}" iyz="{_fmt(I[1, 2])}" izz="{_fmt(I[2, 2])}"/>',
        "    </inertial>",
        "  </link>",
    ]
    return out


def _joint_xml(model: RobotModel, i: int, comment: Optional[str]) -> list:
    kind = "continuous" if model.continuous[i] else model.joint_types[i]
    parent = model.base_link if model.parents[i] < 0 else model.link_names[model.parents[i]]
    rpy = matrix_to_rpy(model.joint_rotations[i])
    out = [f"  <!-- {comment} -->"] if comment else []
    out += [
        f'  <joint name="{model.joint_names[i]}" type="{kind}">',
        f'    <parent link="{parent}"/>',
        f'    <child link="{model.link_names[i]}"/>',
        f'    <origin xyz="{_fmt(model.joint_positions[i])}" rpy="{_fmt(rpy)}"/>',
        f'    <axis xyz="{_fmt(model.axes[i])}"/>',
    ]
    limit = [f'effort="{_fmt(model.effort_limits[i])}"', f'velocity="{_fmt(model.velocity_limits[i])}"']
    if not model.continuous[i]:
        limit = [f'lower="{_fmt(model.lower[i])}"', f'upper="{_fmt(model.upper[i])}"'] + limit
    out.append(f'    <limit {" ".join(limit)}/>')
    if model.damping[i] or model.friction[i]:
        out.append(f'    <dynamics damping="{_fmt(model.damping[i])}" friction="{_fmt(model.friction[i])}"/>')
    out.append("  </joint>")
    return out


def write_urdf(model: RobotModel, path: Union[str, os.PathLike], comments: Optional[dict] = None) -> Path:
    """Write :func:`to_urdf` of the model to ``path``; returns the path."""
    path = Path(path)
    path.write_text(to_urdf(model, comments))
    return path


def urdf_text(model: RobotModel) -> str:
    """The URDF a reference engine should load for this model: its source if it has one."""
    return model.source_urdf if model.source_urdf is not None else to_urdf(model)

