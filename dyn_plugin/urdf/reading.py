"""Reading URDF.

Reading is our own, over lxml, and looks only at what the dynamics use: the links and
their ``<inertial>``, the joints with their ``<origin>``, ``<axis>``, ``<limit>`` and
``<dynamics>``.  Everything else (visuals, meshes, textures, transmissions, sensors,
gazebo tags) is ignored, as urdfdom ignores it, while every number that is read is
checked: a malformed or non-finite value is an error that names the element.  The
kinematic tree is assembled here: fixed joints are merged into their parent link, and
moving joints are ordered depth-first from the root with children sorted by joint name -
the order pinocchio gets from urdfdom, which stores joints in a name-sorted map.  The walk
is iterative and linear in the number of links.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from pathlib import Path
from typing import Optional, Union

import numpy as np
from lxml import etree

from ..errors import ModelError, URDFError, URDFWarning, argument
from ..kinematics import PRISMATIC, REVOLUTE, BodySum, make_transform, rot_x, rot_y, rot_z
from ..joints import FLOATING, PLANAR, SPHERICAL
from ..mimic import Mimic
from ..mimic import resolve as resolve_mimic
from ..model import DEFAULT_GRAVITY, Frame, RobotModel, check_link_inertia, gravity_vector, non_psd_problem

ONE_DOF_TYPES = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}
_Z = np.array([0.0, 0.0, 1.0])
MOVING_TYPES = {**ONE_DOF_TYPES, "spherical": SPHERICAL, "planar": PLANAR, "floating": FLOATING}
"""URDF joint types and what they are; ``spherical`` is pybullet's dialect (its humanoids),
``planar`` and ``floating`` are URDF's own (pinocchio's JointModelPlanar, JointModelFreeFlyer)."""
SUPPORTED_TYPES = set(MOVING_TYPES) | {"fixed"}


def load_urdf(path: Union[str, os.PathLike], *, strict: bool = False, gravity=DEFAULT_GRAVITY,
              floating_base: bool = False, mimic: bool = False, locked=()) -> RobotModel:
    """Build a :class:`RobotModel` from a URDF file.

    Parameters
    ----------
    path : str or path-like
        A URDF file, in any encoding its XML declaration names (UTF-8 if none).
        Meshes are never loaded.
    strict : bool
        Treat a triangle-inequality break as an error (used for bundled robots)
        instead of a :class:`~dyn_plugin.errors.PhysicalValidityWarning`.
    gravity : (3,) array_like, m/s²
        Physical gravity in the base frame (in the world frame with a floating base).
    floating_base : bool
        The root link floats freely (pinocchio's free-flyer root joint; see
        :attr:`RobotModel.floating_base`); default False, fixed to the world, as
        pinocchio's ``buildModelFromUrdf``.
    mimic : bool
        ``<mimic>`` joints follow their leader (reduced coordinates, pinocchio's
        ``mimic=True``; see :mod:`dyn_plugin.mimic`); by default they are independent
        degrees of freedom, with a :class:`~dyn_plugin.errors.URDFWarning` naming them.
    locked : names of joints the caller holds fixed next (:func:`dyn_plugin.load_robot`'s
        ``lock``, :func:`dyn_plugin.locking.lock_joints`): such a mimic joint is not warned about.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise URDFError(f"cannot read URDF file {str(path)!r}: {exc.strerror or exc}") from None
    model = load_urdf_string(data, strict=strict, gravity=gravity, source=str(path), floating_base=floating_base,
                             mimic=mimic, locked=locked)
    return dataclasses.replace(model, source_path=str(path.resolve()))


def load_urdf_string(text: Union[str, bytes], *, strict: bool = False, gravity=DEFAULT_GRAVITY,
                     source: str = "<string>", floating_base: bool = False, mimic: bool = False,
                     locked=()) -> RobotModel:
    """Build a :class:`RobotModel` from URDF text (str, or bytes in the encoding the XML
    declaration names); see :func:`load_urdf`."""
    root, text = parse_xml(text, source)
    links = read_links(root, source)
    joints = _read_joints(root, links, source)
    base = _find_root(links, joints, source)
    model = _assemble(root.get("name") or "robot", base, links, joints, text, source, strict, gravity)
    relations = _read_mimics(root, source, numbers=mimic)
    if relations and mimic:
        model = dataclasses.replace(model, mimic=resolve_mimic(model.joint_names, relations, f"{source}: "))
    unlocked = [relation for relation in relations if relation.joint not in set(locked)]
    if unlocked and not mimic:
        _warn_about_mimic_joints(unlocked, model.joint_names, source)
    return model.with_floating_base(floating_base)


# -- reading the XML ---------------------------------------------------------------------

_XML_DECLARATION = re.compile(rb"^\s*<\?xml[^>]*\?>")
_VERSION = re.compile(rb"""version\s*=\s*["'][^"']*["']""")


def parse_xml(text: Union[str, bytes], source: str):
    """The ``<robot>`` element and the document as text (what the reference engines load).

    An XML declaration with a version other than 1.0 (``<?xml version="0.0"?>`` occurs in
    the wild; urdfdom ignores it) is read as 1.0, and blank lines before it are dropped."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if isinstance(text, str):  # already decoded: the declaration's encoding no longer applies
        data = _XML_DECLARATION.sub(b"", data, count=1)
    declaration = _XML_DECLARATION.match(data)
    if declaration and declaration.group().strip() != declaration.group():  # blank lines before it
        data = data[:declaration.end()].lstrip() + data[declaration.end():]
        declaration = _XML_DECLARATION.match(data)
    if declaration and not re.search(rb"""version\s*=\s*["']1\.\d+["']""", declaration.group()):
        data = data[:declaration.start()] + _VERSION.sub(b'version="1.0"', declaration.group()) + data[declaration.end():]
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise URDFError(f"{source}: malformed XML: {exc}") from None
    if root.tag != "robot":
        raise URDFError(f"{source}: the root element is <{root.tag}>, expected <robot>")
    if isinstance(text, str):
        return root, text
    try:
        return root, data.decode(root.getroottree().docinfo.encoding or "utf-8")
    except (UnicodeDecodeError, LookupError):   # read by lxml in an encoding the file does not declare (UTF-16 with a BOM)
        return root, etree.tostring(root.getroottree(), encoding="unicode")


def _numbers(element, attribute: str, count: int, default, where: str, unbounded: float = 0.0) -> np.ndarray:
    """``count`` finite numbers from ``element``'s ``attribute`` (``default`` if absent).

    ``unbounded`` (+1 or -1) also admits that one infinity, written as a word (``inf``), for
    a limit that is no limit; a number that overflows (``1e999``) is an error everywhere."""
    raw = element.get(attribute)
    if raw is None:
        if default is None:
            raise URDFError(f"{where}: <{element.tag}> has no {attribute} attribute")
        return np.array(default, dtype=float)
    try:
        values = np.array([float(v) for v in raw.split()], dtype=float)
    except ValueError:
        values = None
    plural = "a number" if count == 1 else f"{count} numbers"
    if values is None or values.shape != (count,):
        xacro = " (xacro's ${...}: expand the file first, `xacro robot.urdf.xacro > robot.urdf`)" if "${" in raw else ""
        raise URDFError(f"{where}: <{element.tag} {attribute}={raw!r}> must be {plural}{xacro}")
    spelled_infinite = np.array([v.lstrip("+-").lower() in ("inf", "infinity") for v in raw.split()])
    if not np.all(np.isfinite(values) | ((values == unbounded * np.inf) & spelled_infinite)):
        allowed = {1.0: " or inf (no limit)", -1.0: " or -inf (no limit)"}.get(unbounded, "")
        raise URDFError(f"{where}: <{element.tag} {attribute}={raw!r}> must be finite{allowed} "
                        "(NaN, and numbers beyond ±1.8e308 such as 1e999, describe no robot)")
    return values


def _origin(parent, where: str) -> np.ndarray:
    """The 4x4 transform of ``parent``'s ``<origin xyz rpy>`` (identity if absent)."""
    origin = parent.find("origin")
    if origin is None:
        return np.eye(4)
    xyz = _numbers(origin, "xyz", 3, (0.0, 0.0, 0.0), where)
    roll, pitch, yaw = _numbers(origin, "rpy", 3, (0.0, 0.0, 0.0), where)
    return make_transform(rot_z(yaw) @ rot_y(pitch) @ rot_x(roll), xyz)


@dataclasses.dataclass(frozen=True)
class _Inertial:
    """A link's ``<inertial>``: mass (kg), inertia about the CoM (kg m²) and the pose of
    the CoM frame in the link frame."""
    mass: float
    inertia: np.ndarray
    frame: np.ndarray


def read_links(root, source: str) -> dict:
    """Link name -> :class:`_Inertial` or None (no ``<inertial>``), in document order."""
    links = {}
    for number, link in enumerate(root.findall("link"), start=1):
        name = link.get("name")
        if not name:
            raise URDFError(f"{source}: <link> number {number} has no name attribute")
        if name in links:
            raise URDFError(f"{source}: link name {name!r} is used more than once")
        inertial = link.find("inertial")
        links[name] = None if inertial is None else _read_inertial(inertial, f"{source}: link {name!r}")
    if not links:
        raise URDFError(f"{source}: the robot has no <link>")
    return links


def _read_inertial(inertial, where: str) -> _Inertial:
    mass, inertia = inertial.find("mass"), inertial.find("inertia")
    if mass is None or inertia is None:
        raise URDFError(f"{where}: <inertial> needs a <mass value> and an <inertia ixx ixy ixz iyy iyz izz>")
    (m,) = _numbers(mass, "value", 1, None, where)
    xx, xy, xz, yy, yz, zz = (_numbers(inertia, key, 1, None, where)[0]
                              for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    return _Inertial(float(m), I, _origin(inertial, where))


@dataclasses.dataclass(frozen=True)
class _Joint:
    """A URDF joint as the dynamics see it (limits: ``None`` where the URDF gives none)."""
    name: str
    kind: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    lower: Optional[float] = None
    upper: Optional[float] = None
    velocity: float = 0.0
    effort: float = 0.0
    damping: float = 0.0
    friction: float = 0.0


def _read_joints(root, links: dict, source: str) -> list:
    joints, parent_joint = [], {}
    for joint in root.findall("joint"):
        name, kind = joint.get("name"), joint.get("type")
        if not name:
            raise URDFError(f"{source}: a <joint> has no name attribute")
        if name in parent_joint.values():
            raise URDFError(f"{source}: joint name {name!r} is used more than once")
        where = f"{source}: joint {name!r}"
        if kind not in SUPPORTED_TYPES:
            raise URDFError(f"{where} has type {kind!r}; supported types are {sorted(SUPPORTED_TYPES)}")
        parent, child = (_link_of(joint, role, links, where) for role in ("parent", "child"))
        if child in parent_joint:
            raise URDFError(f"{source}: link {child!r} is the child of two joints ({parent_joint[child]!r} and "
                            f"{name!r}); a kinematic tree gives each link one parent (closed loops are not supported)")
        parent_joint[child] = name
        if kind in ONE_DOF_TYPES or kind == "fixed":          # a fixed joint's limits and dynamics are read, unused
            axis = _axis(joint, where) if kind in ONE_DOF_TYPES else np.array([1.0, 0.0, 0.0])
            joints.append(_Joint(name, kind, parent, child, _origin(joint, where), axis, **_limit(joint, where),
                                 **_dynamics(joint, where)))
        else:
            joints.append(_several_dof_joint(joint, name, kind, parent, child, where))
    return joints


def _several_dof_joint(joint, name: str, kind: str, parent: str, child: str, where: str) -> "_Joint":
    """A spherical, planar or floating joint: no axis (a planar joint moves in its frame's x-y
    plane, as pinocchio's JointModelPlanar: an ``<axis>`` other than z is refused rather than
    ignored as pinocchio does), no limits, no ``<dynamics>`` (refused: it would be one number
    for several degrees of freedom)."""
    if kind == "planar" and joint.find("axis") is not None and np.abs(_axis(joint, where) - _Z).max() > 1e-12:
        raise URDFError(f"{where} (planar) has <axis xyz={joint.find('axis').get('xyz')!r}>; a planar joint moves in "
                        "its frame's x-y plane (axis 0 0 1, pinocchio's JointModelPlanar): rotate its <origin> instead")
    dynamics = _dynamics(joint, where)
    if any(dynamics.values()):
        raise URDFError(f"{where} ({kind}) has <dynamics> damping or friction: one number for a joint of several "
                        "degrees of freedom is not supported")
    return _Joint(name, kind, parent, child, _origin(joint, where), _Z.copy())


def _read_mimics(root, source: str, numbers: bool) -> tuple:
    """The ``<mimic joint= multiplier= offset=>`` of the moving joints, as :class:`Mimic`;
    multiplier and offset are read (and checked) only with ``numbers`` (else 1 and 0: the
    joints stay independent and the numbers play no part)."""
    relations = []
    for joint in root.findall("joint"):
        element = joint.find("mimic")
        if element is None or joint.get("type") not in MOVING_TYPES:
            continue
        where = f"{source}: joint {joint.get('name')!r}"
        if joint.get("type") not in ONE_DOF_TYPES:
            raise URDFError(f"{where} ({joint.get('type')}) has <mimic>: only revolute and prismatic joints mimic")
        if not element.get("joint"):
            raise URDFError(f"{where}: <mimic> has no joint attribute")
        multiplier = _numbers(element, "multiplier", 1, (1.0,), where)[0] if numbers else 1.0
        offset = _numbers(element, "offset", 1, (0.0,), where)[0] if numbers else 0.0
        relations.append(Mimic(joint.get("name"), element.get("joint"), float(multiplier), float(offset)))
    return tuple(relations)


def _warn_about_mimic_joints(relations, joint_names, source: str) -> None:
    """One warning naming every ``<mimic>`` joint (and any that mimics a missing joint)."""
    pairs = ", ".join(f"{r.joint!r} follows {r.leader!r}" + ("" if r.leader in joint_names else " (no such joint)")
                      for r in relations)
    warnings.warn(f"{source}: mimic joints are kept as independent degrees of freedom: {pairs} (load with "
                  f"{argument('mimic', True)} for reduced coordinates, as pinocchio's mimic=True)", URDFWarning,
                  stacklevel=4)


def _link_of(joint, role: str, links: dict, where: str) -> str:
    element = joint.find(role)
    link = None if element is None else element.get("link")
    if link is None:
        raise URDFError(f"{where} has no <{role} link=...>")
    if link not in links:
        raise URDFError(f"{where} names {role} link {link!r}, which does not exist")
    return link


def _axis(joint, where: str) -> np.ndarray:
    """The unit joint axis: ``<axis xyz>`` normalised (as pinocchio does), (1, 0, 0) if absent.

    Any non-zero finite vector is normalised exactly (it is scaled by its largest component
    first, so that even 1e-300 loses no precision); a zero vector is refused."""
    element = joint.find("axis")
    if element is None:
        return np.array([1.0, 0.0, 0.0])
    axis = _numbers(element, "xyz", 3, (1.0, 0.0, 0.0), where)
    scale = np.abs(axis).max()
    if scale == 0.0:
        raise URDFError(f"{where}: <axis xyz={element.get('xyz')!r}> must be a non-zero 3-vector")
    axis = axis / scale
    return axis / np.linalg.norm(axis)


def _limit(joint, where: str) -> dict:
    """Joint limits; ``None`` for an absent lower or upper, 0 for an absent velocity or effort
    (URDF: no limit)."""
    element = joint.find("limit")
    if element is None:
        return {}
    signs = {"lower": -1.0, "upper": 1.0, "velocity": 1.0, "effort": 1.0}
    limits = {key: _numbers(element, key, 1, (np.nan,), where, unbounded=sign)[0] for key, sign in signs.items()}
    for key in ("velocity", "effort"):
        if limits[key] < 0:
            raise URDFError(f"{where}: <limit {key}={element.get(key)!r}> must be >= 0 (0 or absent: no limit)")
    return {key: None if np.isnan(value) and key in ("lower", "upper") else 0.0 if np.isnan(value) else float(value)
            for key, value in limits.items()}


def _dynamics(joint, where: str) -> dict:
    element = joint.find("dynamics")
    if element is None:
        return {}
    values = {key: float(_numbers(element, key, 1, (0.0,), where)[0]) for key in ("damping", "friction")}
    for key, value in values.items():
        if value < 0:
            raise URDFError(f"{where}: <dynamics {key}={element.get(key)!r}> must be >= 0 (it dissipates energy)")
    return values


def _find_root(links: dict, joints: list, source: str) -> str:
    children = {joint.child for joint in joints}
    roots = [link for link in links if link not in children]
    if len(roots) != 1:
        raise URDFError(f"{source}: expected exactly one root link (a link that is no joint's child), "
                        f"found {roots if roots else 'none: the joints form a loop'}")
    return roots[0]


# -- assembling the tree ---------------------------------------------------------------


def _assemble(name, base, links, joints, text, source, strict, gravity) -> RobotModel:
    """Walk the tree from the root: merge fixed children into their moving body, number
    moving joints depth-first.  Links without ``<inertial>`` weigh 0 kg (as in pinocchio).
    Every link becomes a :class:`~dyn_plugin.model.Frame` of its body, at its placement there
    (``model.frames``, in the order of the walk).

    The walk keeps its own stack (a chain of any length, no recursion limit); a stack
    entry is ``(joint that leads to the link or None, link, body index, placement of the
    link in that body)``, and children are pushed in reverse name order so that they are
    taken in name order, as a recursive depth-first walk would."""
    children = {link: [] for link in links}
    for joint in joints:
        children[joint.parent].append(joint)
    moving, parts = [], []      # moving: (joint, placement in parent body, parent body); parts: (body, link, X)
    stack = [(None, base, -1, np.eye(4))]
    while stack:
        joint, link, body, X = stack.pop()
        if joint is not None and joint.kind != "fixed":
            moving.append((joint, X, body))
            body, X = len(moving) - 1, np.eye(4)
        parts.append((body, link, X))
        for child_joint in sorted(children[link], key=lambda j: j.name, reverse=True):
            stack.append((child_joint, child_joint.child, body, X @ child_joint.origin))
    if len(parts) < len(links):
        raise URDFError(f"{source}: links {sorted(set(links) - _reached(base, children))} are not connected to the "
                        f"root link {base!r} (their joints form a loop)")
    bodies, root = [BodySum() for _ in moving], BodySum()              # root: the base and the links fixed to it
    without_inertial, base_without_inertial = [], []              # (the latter move only with a floating base)
    sizes = np.bincount([body + 1 for body, _, _ in parts], minlength=len(moving) + 1)   # URDF links per body
    for body, link, X in parts:
        _add_inertial(bodies[body] if body >= 0 else root, links[link], link, X, f" in {source}", strict,
                      without_inertial if body >= 0 else base_without_inertial, welded=body < 0 or sizes[body + 1] > 1)
    for k, body in enumerate(bodies):
        problem = (non_psd_problem(body.com_and_inertia()[1], np.abs(body.inertia_at_origin).max())
                   if sizes[k + 1] > 1 else None)
        if problem:
            welded = [link for b, link, _ in parts if b == k]
            raise ModelError(f"{source}: the rigid body of links {welded} (welded by fixed joints): {problem}")
    model = _model_from_joints(name, moving, bodies, text, gravity, base)
    base_com, base_inertia = root.com_and_inertia()
    frames = tuple(Frame(link, base if body < 0 else moving[body][0].child, X[:3, :3], X[:3, 3])
                   for body, link, X in parts)                   # every link, at its origin in its body
    return dataclasses.replace(model, links_without_inertial=tuple(without_inertial),
                               base_links_without_inertial=tuple(base_without_inertial), base_mass=root.mass,
                               base_com=base_com, base_inertia=base_inertia, frames=frames)


def _reached(base: str, children: dict) -> set:
    """Names of the links reached from ``base`` (for the error message only)."""
    seen, stack = set(), [base]
    while stack:
        link = stack.pop()
        seen.add(link)
        stack.extend(joint.child for joint in children[link])
    return seen


def _add_inertial(body: BodySum, inertial: Optional[_Inertial], link: str, X: np.ndarray, where: str,
                  strict: bool, without_inertial: list, welded: bool) -> None:
    """Add a link's inertial data, placed at ``X`` in the body's frame (``welded``: the body
    has other links, or is the base; see :func:`check_link_inertia`)."""
    if inertial is None:
        without_inertial.append(link)
        return
    check_link_inertia(link, inertial.mass, inertial.inertia, strict=strict, where=where, welded=welded)
    R = X[:3, :3] @ inertial.frame[:3, :3]
    com = X[:3, :3] @ inertial.frame[:3, 3] + X[:3, 3]
    body.add(inertial.mass, com, R @ inertial.inertia @ R.T)


def _model_from_joints(name, joints, bodies, text, gravity, base):
    n = len(joints)
    coms, inertias = zip(*(b.com_and_inertia() for b in bodies)) if n else ((), ())
    lower, upper, velocity, effort, damping, friction, continuous = (np.zeros(n) for _ in range(7))
    for i, (joint, _, _) in enumerate(joints):
        unbounded = joint.kind == "continuous" or (joint.lower is None and joint.upper is None) or (
            joint.lower is not None and joint.upper is not None and joint.lower > joint.upper)  # Bullet: no limit
        continuous[i] = joint.kind == "continuous"
        lower[i] = -np.inf if unbounded or joint.lower is None else joint.lower
        upper[i] = np.inf if unbounded or joint.upper is None else joint.upper
        velocity[i] = joint.velocity or np.inf
        effort[i] = joint.effort or np.inf
        damping[i], friction[i] = joint.damping, joint.friction
    return RobotModel(
        name=name,
        joint_names=tuple(j.name for j, _, _ in joints),
        link_names=tuple(j.child for j, _, _ in joints),
        joint_types=tuple(MOVING_TYPES[j.kind] for j, _, _ in joints),
        parents=np.array([parent for _, _, parent in joints], dtype=int),
        joint_rotations=np.array([X[:3, :3] for _, X, _ in joints]).reshape(n, 3, 3),
        joint_positions=np.array([X[:3, 3] for _, X, _ in joints]).reshape(n, 3),
        axes=np.array([j.axis for j, _, _ in joints], dtype=float).reshape(n, 3),
        masses=np.array([b.mass for b in bodies]),
        coms=np.array(coms).reshape(n, 3),
        inertias=np.array(inertias).reshape(n, 3, 3),
        lower=lower, upper=upper, velocity_limits=velocity, effort_limits=effort,
        damping=damping, friction=friction, continuous=continuous.astype(bool),
        gravity=gravity_vector(gravity), source_urdf=text, base_link=base,
    )
