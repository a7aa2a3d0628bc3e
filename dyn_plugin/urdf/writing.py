"""Writing URDF: the one writer (:func:`urdf_document`), a model as URDF (:func:`to_urdf`),
and the URDF a reference engine loads for a model (:func:`urdf_text`: its source with unit
axes, held joints and payloads written in).  Numbers are written with repr precision, so
that reading them back is exact.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Optional, Union
from xml.sax.saxutils import quoteattr

import numpy as np
from lxml import etree

from ..errors import ModelError
from ..kinematics import joint_motion, make_transform, matrix_to_rpy
from ..model import RobotModel
from .reading import ONE_DOF_TYPES, _axis, _numbers, _origin, parse_xml


def _fmt(values) -> str:
    """Numbers written with repr precision, so that reading them back is exact."""
    return " ".join(repr(float(v) + 0.0) for v in np.atleast_1d(values))  # + 0.0 turns -0.0 into 0.0


@dataclasses.dataclass
class LinkElement:
    """What :func:`urdf_document` writes of a ``<link>``: its name and, unless ``inertia``
    is None, an ``<inertial>`` with ``mass`` (kg), the pose ``inertial_origin`` (4×4) of its
    frame in the link frame and the inertia ``inertia`` (3×3, kg·m²) in that frame."""

    name: str
    mass: float = 0.0
    inertial_origin: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(4))
    inertia: Optional[np.ndarray] = None
    comment: Optional[str] = None


@dataclasses.dataclass
class JointElement:
    """What :func:`urdf_document` writes of a ``<joint>``.  ``kind``: revolute, continuous,
    prismatic or fixed; ``origin`` (4×4) the joint frame in the parent link's frame;
    ``effort``/``velocity`` None for no ``<limit>``; ``lower``/``upper`` are written for
    revolute and prismatic joints; ``<dynamics>`` only where damping or friction is non-zero."""

    name: str
    kind: str
    parent: str
    child: str
    origin: np.ndarray
    axis: Optional[np.ndarray] = None
    lower: float = 0.0
    upper: float = 0.0
    effort: Optional[float] = None
    velocity: Optional[float] = None
    damping: float = 0.0
    friction: float = 0.0
    comment: Optional[str] = None
    mimic: Optional[object] = None      # a dyn_plugin.mimic.Mimic: <mimic joint= multiplier= offset=>


def _comment(text: Optional[str]) -> list:
    return [f"  <!-- {text.replace('--', '- -')} -->"] if text else []      # XML forbids "--" in comments


def _attr(text: str) -> str:
    """A name as a quoted XML attribute value (``&``, ``<``, ``>`` and quotes escaped:
    pybullet takes names such as ``shoulder<1>``)."""
    return quoteattr(str(text))


def _origin_xml(T: np.ndarray) -> str:
    return f'<origin xyz="{_fmt(T[:3, 3])}" rpy="{_fmt(matrix_to_rpy(T[:3, :3]))}"/>'


def _link_element_xml(link: LinkElement) -> list:
    out = _comment(link.comment)
    if link.inertia is None:
        return out + [f'  <link name={_attr(link.name)}/>']
    I = link.inertia
    return out + [
        f'  <link name={_attr(link.name)}>',
        "    <inertial>",
        f"      {_origin_xml(link.inertial_origin)}",
        f'      <mass value="{_fmt(link.mass)}"/>',
        f'      <inertia ixx="{_fmt(I[0, 0])}" ixy="{_fmt(I[0, 1])}" ixz="{_fmt(I[0, 2])}" '
        f'iyy="{_fmt(I[1, 1])}" iyz="{_fmt(I[1, 2])}" izz="{_fmt(I[2, 2])}"/>',
        "    </inertial>",
        "  </link>",
    ]


def _joint_element_xml(joint: JointElement) -> list:
    out = _comment(joint.comment) + [
        f'  <joint name={_attr(joint.name)} type="{joint.kind}">',
        f'    <parent link={_attr(joint.parent)}/>',
        f'    <child link={_attr(joint.child)}/>',
        f"    {_origin_xml(joint.origin)}",
    ]
    if joint.kind != "fixed":
        out.append(f'    <axis xyz="{_fmt(joint.axis)}"/>')
    if joint.kind != "fixed" and joint.effort is not None:
        # urdfdom takes no infinity: no limit is an absent lower/upper and an effort or
        # velocity of 0 (what it means to our reader, and to nothing in the dynamics)
        finite = lambda value: _fmt(value if np.isfinite(value) else 0.0)  # noqa: E731
        limit = [f'effort="{finite(joint.effort)}"', f'velocity="{finite(joint.velocity)}"']
        if joint.kind != "continuous":
            limit = [f'{key}="{_fmt(value)}"' for key, value in (("lower", joint.lower), ("upper", joint.upper))
                     if np.isfinite(value)] + limit
        out.append(f'    <limit {" ".join(limit)}/>')
    if joint.damping or joint.friction:
        out.append(f'    <dynamics damping="{_fmt(joint.damping)}" friction="{_fmt(joint.friction)}"/>')
    if joint.mimic is not None:
        out.append(f'    <mimic joint={_attr(joint.mimic.leader)} multiplier="{_fmt(joint.mimic.multiplier)}" '
                   f'offset="{_fmt(joint.mimic.offset)}"/>')
    return out + ["  </joint>"]


def urdf_document(name: str, elements, comment: Optional[str] = None) -> str:
    """URDF text of a robot from :class:`LinkElement` and :class:`JointElement` records, in
    the order given, numbers exact to the last bit: the one URDF writer (:func:`to_urdf`
    and :func:`dyn_plugin.pybullet_bridge.body_urdf` build their records and call it)."""
    lines = ['<?xml version="1.0"?>', f'<robot name={_attr(name)}>'] + _comment(comment)
    for element in elements:
        lines += _link_element_xml(element) if isinstance(element, LinkElement) else _joint_element_xml(element)
    return "\n".join(lines + ["</robot>"]) + "\n"


def to_urdf(model: RobotModel, comments: Optional[dict] = None) -> str:
    """Write a model as URDF text (inertias full, numbers exact to the last bit).

    ``comments`` optionally maps a joint or link name to a comment written above its
    element, and ``"robot"`` to one below ``<robot>`` (used to carry provenance into the
    bundled URDF files).  A model's armature has no URDF element: it is written in that
    comment, and a model loaded back from the file has none.  Mimic joints keep their
    ``<mimic>``; every frame that is not a link's own (a link merged through fixed joints,
    a payload's) is a massless link on a fixed joint, which the reader merges back.
    """
    comments = dict(comments or {})
    if np.any(model.armature):   # URDF has no element for rotor inertia: recorded, not dropped unseen
        armature = "armature (rotor inertia, kg·m² or kg; no URDF element, not loaded back): " + ", ".join(
            f"{joint} {value!r}" for joint, value in zip(model.joint_names, model.armature.tolist()) if value)
        comments["robot"] = armature if comments.get("robot") is None else f"{comments['robot']} {armature}"
    elements: list = [_base_element(model)]
    mimic = {relation.joint: relation for relation in model.mimic}
    for i in range(model.n):
        elements.append(LinkElement(model.link_names[i], model.masses[i], make_transform(np.eye(3), model.coms[i]),
                                    model.inertias[i], comments.get(model.link_names[i])))
        elements.append(JointElement(
            model.joint_names[i], "continuous" if model.continuous[i] else model.joint_types[i],
            model.base_link if model.parents[i] < 0 else model.link_names[model.parents[i]], model.link_names[i],
            make_transform(model.joint_rotations[i], model.joint_positions[i]), model.axes[i],
            model.lower[i], model.upper[i], model.effort_limits[i], model.velocity_limits[i],
            model.damping[i], model.friction[i], comments.get(model.joint_names[i]), mimic.get(model.joint_names[i])))
    return urdf_document(model.name, elements + _fixed_frames(model), comments.get("robot"))


def _fixed_frames(model: RobotModel) -> list:
    """A massless link on a fixed joint for each frame that is not a link's own."""
    own, joints = {model.base_link, *model.link_names}, set(model.joint_names)
    out = []
    for frame in model.frames:
        if frame.name not in own:
            joint = f"{frame.name}_fixed"
            while joint in joints:
                joint += "_"
            joints.add(joint)
            out += [LinkElement(frame.name), JointElement(joint, "fixed", frame.link, frame.name,
                                                         make_transform(frame.rotation, frame.position))]
    return out


def _base_element(model: RobotModel) -> LinkElement:
    """The base link, with its ``<inertial>`` when it has mass or inertia (a floating base's
    own body, a payload on it, links locked onto it): without it a reference engine would
    load a massless base (pinocchio: 3 kg for 8 of a floating DH robot with a 5 kg payload)."""
    if model.base_mass == 0 and not np.any(model.base_inertia):
        return LinkElement(model.base_link)
    return LinkElement(model.base_link, model.base_mass, make_transform(np.eye(3), model.base_com), model.base_inertia)


def write_urdf(model: RobotModel, path: Union[str, os.PathLike], comments: Optional[dict] = None) -> Path:
    """Write :func:`to_urdf` of the model to ``path``; returns the path."""
    path = Path(path)
    path.write_text(to_urdf(model, comments))
    return path


def urdf_text(model: RobotModel) -> str:
    """The URDF a reference engine should load for this model: its source if it has one
    (meshes and all), with every joint axis written as the unit vector the model uses, each
    held joint (:attr:`RobotModel.held_joints`) fixed at its value and each payload
    (:attr:`RobotModel.payloads`) a link fixed at its frame; a model without a source is
    written by :func:`to_urdf`.

    pinocchio normalises a joint axis when it loads it, pybullet's stepping does not
    (a ``0 0 1e-6`` axis makes it integrate a joint with a scaled-down axis); a source
    whose axes are already unit, with nothing held or added, is returned unchanged."""
    if model.source_urdf is None:
        return to_urdf(model)
    root, _ = parse_xml(model.source_urdf, "<model source>")
    changed = _write_unit_axes(root)
    if model.held_joints:
        _hold_joints(root, model)
    for payload in model.payloads:
        _add_payload(root, payload)
    changed = changed or bool(model.held_joints or model.payloads)
    text = etree.tostring(root, encoding="unicode") if changed else model.source_urdf
    return text if _describes(text, model) else to_urdf(model)


_DYNAMICS = ("joint_names", "joint_types", "parents", "joint_rotations", "joint_positions", "axes", "masses", "coms",
             "inertias", "base_mass", "base_com", "base_inertia")


def _describes(text: str, model: RobotModel) -> bool:
    """Whether ``text`` reads as ``model``'s bodies and joints (names and kinds exactly,
    numbers to 1e-12: an axis the source writes unnormalised is read back unit to the last
    bit or so): not when the model's parameters were changed after it was read
    (``dataclasses.replace``), whose source a reference engine must then not load."""
    import warnings

    from .reading import load_urdf_string

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            read = load_urdf_string(text, floating_base=model.floating_base)
    except Exception:           # a source this reader takes only with the model's own options
        return False
    return all(_same(np.asarray(getattr(read, name)), np.asarray(getattr(model, name))) for name in _DYNAMICS)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        return a.shape == b.shape and np.array_equal(a, b)
    return bool(np.allclose(a, b, rtol=1e-12, atol=1e-15))


def _write_unit_axes(root) -> bool:
    """Every moving joint's ``<axis>`` as the unit vector the model reads; True if one changed."""
    changed = False
    for joint in root.findall("joint"):
        element = joint.find("axis")
        if joint.get("type") not in ONE_DOF_TYPES or element is None:
            continue
        raw = _numbers(element, "xyz", 3, (1.0, 0.0, 0.0), "<model source>")
        unit = _axis(joint, "<model source>")
        if np.abs(raw - unit).max() > 0.0:
            element.set("xyz", _fmt(unit))
            changed = True
    return changed


def _hold_joints(root, model: RobotModel) -> None:
    """Each held joint ``type="fixed"`` at its rest ``<origin>`` composed with its motion at
    the held value (numbers exact to the last bit), without its ``<mimic>``, and without the
    ``<mimic>`` of joints that follow it; the robot takes the model's (locked) name."""
    root.set("name", model.name)
    elements = {element.get("name"): element for element in root.findall("joint")}
    held = dict(model.held_joints)
    missing = sorted(set(held) - set(elements))
    if missing:
        raise ModelError(f"model {model.name!r}: its URDF has no joint {missing[0]!r}; the source_urdf does not "
                         "describe the model")
    for name, value in model.held_joints:
        element = elements[name]
        where = f"joint {name!r}"
        kind = ONE_DOF_TYPES[element.get("type")]
        R, p = joint_motion(kind, _axis(element, where), value)
        X = _origin(element, where) @ make_transform(R, p)
        for child in element.findall("origin") + element.findall("mimic"):
            element.remove(child)
        element.set("type", "fixed")
        etree.SubElement(element, "origin", xyz=_fmt(X[:3, 3]), rpy=_fmt(matrix_to_rpy(X[:3, :3])))
    for element in root.findall("joint"):
        mimic = element.find("mimic")
        if mimic is not None and mimic.get("joint") in held:
            element.remove(mimic)


def _add_payload(root, payload) -> None:
    """A payload (:class:`~dyn_plugin.model.Payload`) as a link fixed at its frame's origin."""
    taken = {element.get("name") for element in root.iter("joint")}
    joint_name, k = f"{payload.name}_joint", 1
    while joint_name in taken:
        joint_name, k = f"{payload.name}_joint_{k}", k + 1
    link = etree.SubElement(root, "link", name=payload.name)
    inertial = etree.SubElement(link, "inertial")
    I = payload.inertia
    etree.SubElement(inertial, "origin", xyz=_fmt(payload.com), rpy="0 0 0")
    etree.SubElement(inertial, "mass", value=_fmt(payload.mass))
    etree.SubElement(inertial, "inertia", ixx=_fmt(I[0, 0]), ixy=_fmt(I[0, 1]), ixz=_fmt(I[0, 2]),
                     iyy=_fmt(I[1, 1]), iyz=_fmt(I[1, 2]), izz=_fmt(I[2, 2]))
    joint = etree.SubElement(root, "joint", name=joint_name, type="fixed")
    etree.SubElement(joint, "parent", link=payload.frame)
    etree.SubElement(joint, "child", link=payload.name)
    etree.SubElement(joint, "origin", xyz="0 0 0", rpy="0 0 0")
