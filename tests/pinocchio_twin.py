"""pinocchio's own model of the URDF text a model of ours was read from, and our states in
pinocchio's coordinates (continuous joints as (cos, sin); velocities in its joint order).

:class:`PinocchioTwin` loads the text with pinocchio's URDF parser; :class:`UrdfTwin`
builds the model joint by joint from a plain lxml reading (:func:`pinocchio_model_of_urdf`),
for pybullet's ``type="spherical"``, which urdfdom does not know (and planar joints'
(x, y, cos θ, sin θ) against our (x, y, θ))."""

import numpy as np
import pinocchio as pin
from lxml import etree

from dyn_plugin import floating


class PinocchioTwin:
    """``pm``, ``pd``: pinocchio's model and data of ``xml`` (free-flyer root when ``model``
    has a floating base); ``pin_q``, ``pin_v`` map our q (nq) and v (nv) to pinocchio's."""

    def __init__(self, model, xml):
        self.model = model
        root = (pin.JointModelFreeFlyer(),) if model.floating_base else ()
        self.pm = pin.buildModelFromXML(xml, *root)
        self.pd = self.pm.createData()
        self.joints = [self.pm.joints[self.pm.getJointId(name)] for name in model.joint_names]
        base = floating.BASE_V if model.floating_base else 0
        self.iv = np.array(list(range(base)) + [j.idx_v for j in self.joints], dtype=int)

    def pin_q(self, q):
        base = floating.BASE_Q if self.model.floating_base else 0
        out = np.zeros(self.pm.nq)
        out[:base] = q[:base]
        for value, joint in zip(q[base:], self.joints):
            out[joint.idx_q:joint.idx_q + joint.nq] = (np.cos(value), np.sin(value)) if joint.nq == 2 else value
        return out

    def pin_v(self, v):
        out = np.zeros(self.pm.nv)
        out[self.iv] = v
        return out


# -- a pinocchio model built here from the URDF text, for joints urdfdom does not read ----------

_SIZES = {"revolute": (1, 1), "prismatic": (1, 1), "continuous": (1, 1), "spherical": (4, 3), "planar": (3, 3),
          "floating": (7, 6)}
"""URDF joint type -> (our nq, nv) (dyn_plugin.joints' table, restated: a reading bug shows)."""


def _numbers(element, attribute, default):
    if element is None or element.get(attribute) is None:
        return np.array(default, dtype=float)
    return np.array([float(x) for x in element.get(attribute).split()])


def _placement(element):
    """pin.SE3 of an ``<origin xyz= rpy=>`` (URDF: R = Rz(yaw) Ry(pitch) Rx(roll))."""
    origin = element.find("origin")
    return pin.SE3(pin.rpy.rpyToMatrix(*_numbers(origin, "rpy", (0, 0, 0))), _numbers(origin, "xyz", (0, 0, 0)))


def _inertia(link):
    """pin.Inertia of a ``<link>``'s ``<inertial>`` in the link frame (zero without one)."""
    inertial = link.find("inertial")
    if inertial is None:
        return pin.Inertia.Zero()
    frame = _placement(inertial)
    i = inertial.find("inertia")
    get = lambda key: float(i.get(key, 0.0))                                        # noqa: E731
    I = np.array([[get("ixx"), get("ixy"), get("ixz")], [get("ixy"), get("iyy"), get("iyz")],
                  [get("ixz"), get("iyz"), get("izz")]])
    R = frame.rotation
    return pin.Inertia(float(inertial.find("mass").get("value")), frame.translation, R @ I @ R.T)


def _motion(joint):
    """(pinocchio's joint model of a URDF ``<joint>`` of a moving type, the placement of the
    child link's frame in that joint's frame).  A continuous joint about a unit axis u is
    pinocchio's unbounded revolute joint about z (its python binding takes no axis) in a
    joint frame whose z is u: the child link then sits at Rᵀ, R ẑ = u."""
    kind = joint.get("type")
    if kind in ("spherical", "planar", "floating"):
        return {"spherical": pin.JointModelSpherical, "planar": pin.JointModelPlanar,
                "floating": pin.JointModelFreeFlyer}[kind](), pin.SE3.Identity()
    axis = _numbers(joint.find("axis"), "xyz", (1, 0, 0))
    axis = axis / np.linalg.norm(axis)
    if kind == "continuous":
        return pin.JointModelRUBZ(), pin.SE3(_z_onto(axis), np.zeros(3)).inverse()
    return {"revolute": pin.JointModelRevoluteUnaligned,
            "prismatic": pin.JointModelPrismaticUnaligned}[kind](axis), pin.SE3.Identity()


def _z_onto(u):
    """A rotation R (3, 3) with R ẑ = u (unit): columns e₁, u × e₁, u, e₁ ⟂ u built from the
    coordinate axis least along u (orthonormal to round-off for any u; Eigen's
    ``FromTwoVectors`` loses digits as u nears −ẑ)."""
    e1 = np.cross(u, np.eye(3)[np.argmin(np.abs(u))])
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(u, e1), u])


def pinocchio_model_of_urdf(xml: str, floating_base: bool = False):
    """pinocchio's model of the URDF text ``xml``: :func:`_built`'s."""
    return _built(xml, floating_base)[0]


def _built(xml: str, floating_base: bool = False):
    """(pinocchio's model of the URDF text ``xml`` built here joint by joint (``addJoint``,
    ``appendBodyToJoint``, ``addFrame``) from a plain lxml reading: no code of dyn_plugin,
    and no urdfdom, which does not know pybullet's ``type="spherical"``.  Fixed joints merge
    their child into the body they hang on; every link is a BODY frame; a floating base is a
    free-flyer ``root_joint``.  (Joint order is this walk's; map joints by name.)  And
    {link: (joint id, pin.SE3 of the link frame in that joint's frame)}: the identity but
    for a continuous joint's child (:func:`_motion`) and links merged by fixed joints."""
    root = etree.fromstring(xml.encode())
    links = {link.get("name"): link for link in root.findall("link")}
    children = {}
    for joint in root.findall("joint"):
        children.setdefault(joint.find("parent").get("link"), []).append(joint)
    child_links = {joint.find("child").get("link") for joint in root.findall("joint")}
    (base,) = [name for name in links if name not in child_links]
    pm = pin.Model()
    where = {}                                   # link -> (joint it moves with, placement there)

    def visit(link, jid, placement):
        """Depth first: each subtree's joints contiguous, as pinocchio's algorithms (crba's
        nvSubtree blocks) assume."""
        where[link] = (jid, placement)
        pm.appendBodyToJoint(jid, _inertia(links[link]), placement)
        pm.addFrame(pin.Frame(link, jid, placement, pin.FrameType.BODY), False)
        for joint in children.get(link, []):
            child, origin = joint.find("child").get("link"), placement * _placement(joint)
            if joint.get("type") == "fixed":
                visit(child, jid, origin)
            else:
                motion, link_in_joint = _motion(joint)
                aligned = origin * link_in_joint.inverse()           # the joint frame (its axis: the motion's)
                visit(child, pm.addJoint(jid, motion, aligned, joint.get("name")), link_in_joint)

    root_joint = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root_joint") if floating_base else 0
    visit(base, root_joint, pin.SE3.Identity())
    return pm, where


class UrdfTwin:
    """pinocchio's model of a URDF text built by :func:`pinocchio_model_of_urdf`, and our
    states in its coordinates: ``pin_q``, ``pin_v`` (N, ...) batches, ``ours_v`` back.  The
    layout of our q and v is restated from the URDF's joint types in the order of
    ``model.joint_names`` (a model whose nq or nv differs is refused)."""

    def __init__(self, model, xml: str):
        self.model, self.xml = model, xml
        self.pm, self._links = _built(xml, model.floating_base)
        self.pd = self.pm.createData()
        kinds = {joint.get("name"): joint.get("type") for joint in etree.fromstring(xml.encode()).findall("joint")}
        q_at, v_at = (7, 6) if model.floating_base else (0, 0)
        copy_ours, copy_pin, angle_ours, angle_pin = list(range(q_at)), list(range(q_at)), [], []
        self.iv = list(range(v_at))
        self.jid, self.child = [], {}
        children = {joint.get("name"): joint.find("child").get("link")
                    for joint in etree.fromstring(xml.encode()).findall("joint")}
        for name in model.joint_names:
            kind, (nq, nv) = kinds[name], _SIZES[kinds[name]]
            jid = self.pm.getJointId(name)
            joint = self.pm.joints[jid]
            self.jid.append(jid)
            self.child[jid] = children[name]
            if kind in ("continuous", "planar"):                  # the last entry an angle: (cos, sin)
                copy_ours += range(q_at, q_at + nq - 1)
                copy_pin += range(joint.idx_q, joint.idx_q + nq - 1)
                angle_ours.append(q_at + nq - 1)
                angle_pin.append(joint.idx_q + nq - 1)
            else:
                copy_ours += range(q_at, q_at + nq)
                copy_pin += range(joint.idx_q, joint.idx_q + nq)
            self.iv += range(joint.idx_v, joint.idx_v + nv)
            q_at, v_at = q_at + nq, v_at + nv
        assert (model.nq, model.nv) == (q_at, v_at), f"our model has nq, nv {model.nq, model.nv}; the URDF {q_at, v_at}"
        self.iv = np.array(self.iv, dtype=int)
        self._copy = (np.array(copy_ours, dtype=int), np.array(copy_pin, dtype=int))
        self._angle = (np.array(angle_ours, dtype=int), np.array(angle_pin, dtype=int))

    def wrench(self, jid: int):
        """data.f[jid] (force, moment) in the frame of the joint's child link (pinocchio's joint
        frame is turned for a continuous joint, :func:`_motion`); a root joint's as it is."""
        f = self.pd.f[jid]
        if jid in self.child:
            f = self._links[self.child[jid]][1].actInv(f)
        return f.linear, f.angular

    def pin_q(self, q):
        q = np.asarray(q, dtype=float)
        out = np.zeros(q.shape[:-1] + (self.pm.nq,))
        out[..., self._copy[1]] = q[..., self._copy[0]]
        out[..., self._angle[1]], out[..., self._angle[1] + 1] = np.cos(q[..., self._angle[0]]), np.sin(q[..., self._angle[0]])
        return out

    def pin_v(self, v):
        v = np.asarray(v, dtype=float)
        out = np.zeros(v.shape[:-1] + (self.pm.nv,))
        out[..., self.iv] = v
        return out

    def ours_v(self, x):
        """Our order of a pinocchio velocity-sized vector (..., nv)."""
        return np.asarray(x)[..., self.iv]

    def ours_m(self, x):
        """Our order of the rows and columns of a pinocchio matrix (..., nv, nv)."""
        return np.asarray(x)[..., self.iv[:, None], self.iv[None, :]]
