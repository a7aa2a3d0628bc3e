"""pybullet bodies seen as our models: which client a call is for, and each body's
:class:`RobotModel` built from pybullet's own description of it (``getJointInfo``,
``getDynamicsInfo``), cached per (client, body).  The drop-in functions, the stepper and
the friction injector that use them are in :mod:`dyn_plugin.pybullet_bridge`.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Optional

import numpy as np

from . import joints
from .backends.registry import get_backend
from .backends.pybullet_backend import import_pybullet
from .backends.pybullet_base import PybulletBase
from .errors import InputError, URDFError
from .urdf import JointElement, LinkElement, load_urdf_string, urdf_document

_REVOLUTE, _PRISMATIC, _SPHERICAL, _PLANAR, _FIXED = 0, 1, 2, 3, 4
BACKENDS_KEPT = 8
"""Backends a body keeps, one per (backend name, gravity in its base frame), the least
recently used dropped first."""


@dataclasses.dataclass
class BodyDynamics:
    """One pybullet body seen through one of our backends.

    ``model``: the RobotModel built from pybullet's description; ``joint_indices``: pybullet
    joint index of each revolute or prismatic joint (pybullet's degrees of freedom for
    ``flags=0``); ``dof_to_model`` (n,): the model joint of each of them; ``moving``: every
    moving joint, spherical ones too, in pybullet's joint order, as (pybullet joint index,
    model joint index); ``inertial_frames`` (links + 1, 4, 4): each link's pybullet frame
    (its centre of mass, ``getDynamicsInfo[3:5]``) in its link frame of ``model``, the base
    first (index = pybullet link index + 1); ``base``: for a floating body
    (``model.floating_base``) the :class:`~dyn_plugin.backends.pybullet_base.PybulletBase`
    of pybullet's coordinates, else None.
    """

    client: int
    body: int
    model: object
    joint_indices: list
    dof_to_model: np.ndarray
    signature: tuple
    backends: dict = dataclasses.field(default_factory=dict)
    base: Optional[PybulletBase] = None
    moving: tuple = ()
    inertial_frames: Optional[np.ndarray] = None

    @property
    def label(self) -> str:
        """How messages name the body: its id, client, URDF robot name and base link (a
        robot name alone can mislead: pybullet_data's laikago.urdf calls itself "plane")."""
        base_name, robot_name = (s.decode() for s in self.signature[0])
        return f"pybullet body {self.body} (robot {robot_name!r}, base link {base_name!r}, client {self.client})"

    @property
    def spherical(self) -> tuple:
        """Model indices of the spherical joints."""
        return tuple(i for i, kind in enumerate(self.model.joint_types) if kind == "spherical")

    def one_dof_only(self, what: str) -> None:
        """Refuse a body with spherical joints in pybullet's one-entry-per-joint layout (flags=0)."""
        if self.spherical:
            names = ", ".join(repr(self.model.joint_names[i]) for i in self.spherical)
            raise InputError(f"{what}: {self.label} has spherical joints ({names}); flags=0 has one entry per "
                             "revolute or prismatic joint and no place for them (pybullet refuses them too): call "
                             "with flags=1, pybullet's multi-DOF layout (see dyn_plugin.pybullet_layout)")

    @property
    def dof(self) -> int:
        return len(self.joint_indices)

    def backend(self, name: str, gravity: np.ndarray):
        """The backend ``name`` for this body with ``gravity`` (base frame), built once per
        gravity and kept for the BACKENDS_KEPT gravities used last (a fixed base that turns
        gives a new gravity each call: each costs a backend's construction, ~1 ms)."""
        key = (name, tuple(gravity))
        backend = self.backends.pop(key, None)
        if backend is None:
            backend = get_backend(name, self.model, gravity=gravity)
            while len(self.backends) >= BACKENDS_KEPT:
                del self.backends[next(iter(self.backends))]      # the least recently used
        self.backends[key] = backend
        return backend

    def to_model(self, values, label: str) -> np.ndarray:
        """pybullet-ordered values (dof,) → model order (n,), with a clear error on a bad length."""
        try:
            array = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{self.label}: {label} must be {self.dof} numbers, got {values!r}") from None
        if array.shape != (self.dof,):
            raise InputError(f"{self.label} has {self.dof} revolute or prismatic joints: {label} "
                             f"must have length {self.dof}, got shape {array.shape}")
        if not np.all(np.isfinite(array)):
            raise InputError(f"{self.label}: {label} has a non-finite entry (NaN or inf) at "
                             f"index {int(np.argmax(~np.isfinite(array)))}")
        out = np.empty(self.dof)
        out[self.dof_to_model] = array
        return out

    def from_model(self, values: np.ndarray) -> np.ndarray:
        return np.asarray(values)[..., self.dof_to_model]

    def floating_args(self, label: str, values, base: int) -> np.ndarray:
        """pybullet's (``base`` + dof,) vector of a floating body (``base`` = 7 for
        positions, 6 otherwise) → (1, base + n), the base's entries first, joints in model
        order; clear errors on a bad length, a non-finite entry or an orientation that is
        not a unit quaternion."""
        try:
            array = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{self.label}: {label} must be {base + self.dof} numbers, got {values!r}") from None
        if array.shape != (base + self.dof,):
            what = "[base position (3), orientation (x, y, z, w)" if base == 7 else "[base angular (3), linear (3)"
            raise InputError(f"{self.label} has a floating base and {self.dof} joints: {label} "
                             f"must have length {base + self.dof} ({what}, joints]), got shape {array.shape}")
        if not np.all(np.isfinite(array)):
            raise InputError(f"{self.label}: {label} has a non-finite entry (NaN or inf) at "
                             f"index {int(np.argmax(~np.isfinite(array)))}")
        if base == 7 and abs(np.linalg.norm(array[3:7]) - 1.0) > joints.UNIT_TOLERANCE:
            raise InputError(f"{self.label}: {label}[3:7] must be a unit quaternion (x, y, z, w), "
                             f"got norm {np.linalg.norm(array[3:7]):.6g}")
        out = np.empty(base + self.dof)
        out[:base] = array[:base]
        out[base + self.dof_to_model] = array[base:]
        return out[None]

    def to_configuration(self, objPositions) -> np.ndarray:
        """Our q (1, nq) of pybullet's floating-body positions (inertial frame's pose, joints)."""
        x = self.floating_args("objPositions", objPositions, 7)
        return self.base.configuration_from(x[:, 0:3], x[:, 3:7], x[:, 7:])

    def from_floating(self, values: np.ndarray) -> tuple:
        """(1, 6 + n) with joints in model order → pybullet's tuple (base, then its dof order)."""
        return as_tuple(np.concatenate([values[0, :6], values[0, 6:][self.dof_to_model]]))


_cache: dict = {}


def body_dynamics(body: int, physicsClientId: Optional[int] = None) -> BodyDynamics:
    """The (cached) :class:`BodyDynamics` of a pybullet body (client: :func:`resolve_client`)."""
    p = import_pybullet()
    physicsClientId = resolve_client(physicsClientId)
    signature = _signature(p, body, physicsClientId)
    cached = _cache.get((physicsClientId, body))
    if cached is None or cached.signature != signature:
        cached = _describe(p, body, physicsClientId, signature)
        _cache[(physicsClientId, body)] = cached
    return cached


def _signature(p, body, client) -> tuple:
    """Everything the model is built from: the names, the joint count, every link's
    inertial data (so that ``changeDynamics`` rebuilds it) and every joint's
    ``getJointInfo`` (type, axis, frame, parent, limits, damping: another body that takes
    this one's id, after ``removeBody`` or a reconnect, differs there even when its names
    and masses are the same); raises a clear error for a missing body."""
    try:
        info = p.getBodyInfo(body, physicsClientId=client)
        joints = p.getNumJoints(body, physicsClientId=client)
    except p.error as exc:
        raise InputError(f"pybullet body {body} in client {client}: {exc} (no such body, or client not connected)") from None
    inertial = tuple(p.getDynamicsInfo(body, j, physicsClientId=client)[:5] for j in range(-1, joints))
    joint_infos = tuple(p.getJointInfo(body, j, physicsClientId=client) for j in range(joints))
    return info, joints, inertial, joint_infos


def _describe(p, body, client, signature) -> BodyDynamics:
    text, inertial = _body_description(p, body, client)
    floating_base = signature[2][0][0] != 0   # pybullet fixes a base of mass 0, and only those
    try:
        model = load_urdf_string(text, floating_base=floating_base)
    except URDFError as exc:
        raise InputError(f"pybullet body {body} ({signature[0][1].decode()}) cannot be described: {exc}") from None
    names, indices, moving = [], [], []
    for j, info in enumerate(signature[3]):
        if info[2] in (_REVOLUTE, _PRISMATIC):
            names.append(info[1].decode())
            indices.append(j)
        if info[2] in (_REVOLUTE, _PRISMATIC, _SPHERICAL):
            moving.append((j, model.joint_names.index(info[1].decode())))
    dof_to_model = np.array([model.joint_names.index(name) for name in names], dtype=int)
    base = PybulletBase.of_body(p, body, client) if floating_base else None
    return BodyDynamics(client, body, model, indices, dof_to_model, signature, base=base, moving=tuple(moving),
                        inertial_frames=np.array(inertial))


def same_body_now(old: BodyDynamics, who: str, noun: str) -> BodyDynamics:
    """The body of ``old`` as pybullet holds it now (``changeDynamics``, a moved fixed base:
    :func:`body_dynamics`), or an InputError when a body of other joints or base has taken
    its id (removed and replaced); ``who`` is the class made for ``old`` ("DynamicsStepper"),
    ``noun`` its short name ("stepper")."""
    bd = body_dynamics(old.body, old.client)
    if bd is not old and (bd.model.joint_names, bd.model.joint_types, bd.base is None) != \
            (old.model.joint_names, old.model.joint_types, old.base is None):
        raise InputError(f"{who}: {bd.label} is not the body this {noun} was made for (its joints or base differ from "
                         f"those of robot {old.model.name!r}: removed and replaced?); make a new {who} for it")
    return bd


def body_urdf(body: int, physicsClientId: Optional[int] = None) -> str:
    """URDF text of a body as pybullet holds it (inertias, frames, axes, limits, dynamics).

    pybullet keeps each link's frame at its centre of mass; the URDF link frame is the
    joint frame, which sits at ``parentFramePos`` in the parent's inertial frame.  The
    child of a spherical joint gets its link frame turned to its inertial frame's axes, so
    that the joint's quaternion and angular velocity are pybullet's own
    (``getJointStateMultiDof``: the child's rotation and angular velocity in that frame).
    """
    p = import_pybullet()
    return _body_description(p, body, resolve_client(physicsClientId))[0]


def _body_description(p, body: int, client: int) -> tuple:
    """(URDF text, inertial frames (links + 1) × (4, 4) in the URDF link frames) of a body."""
    base_name, robot_name = (s.decode() for s in p.getBodyInfo(body, physicsClientId=client))
    count = p.getNumJoints(body, physicsClientId=client)
    infos = [p.getJointInfo(body, j, physicsClientId=client) for j in range(count)]
    inertial = [_inertial_frame(p, body, j, client) for j in range(-1, count)]
    for j, info in enumerate(infos):
        if info[2] == _SPHERICAL:       # link frame along the inertial axes: (R_i^T c, I)
            inertial[j + 1] = _pose(inertial[j + 1][:3, :3].T @ inertial[j + 1][:3, 3], (0.0, 0.0, 0.0, 1.0), p)
    links = [_link_element(base_name, p.getDynamicsInfo(body, -1, physicsClientId=client), inertial[0])]
    joints = []
    for j, info in enumerate(infos):
        kind, parent = info[2], info[16]
        if kind not in (_REVOLUTE, _PRISMATIC, _SPHERICAL, _FIXED):
            raise InputError(f"pybullet body {body} ({robot_name}): joint {info[1].decode()!r} is of pybullet type "
                             f"{kind} (planar), which our models of pybullet bodies do not support")
        parent_name = base_name if parent < 0 else infos[parent][12].decode()
        # parentFrameOrn rotates parent-COM vectors into the child's COM frame, and the
        # axis is given in the child's COM frame: undo the child's inertial rotation R_i.
        R_i = inertial[j + 1][:3, :3]
        joint_in_parent_com = _pose(info[14], info[15], p)
        joint_in_parent_com[:3, :3] = joint_in_parent_com[:3, :3].T @ R_i.T
        links.append(_link_element(info[12].decode(), p.getDynamicsInfo(body, j, physicsClientId=client), inertial[j + 1]))
        joints.append(_joint_element(info, parent_name, inertial[parent + 1] @ joint_in_parent_com, R_i @ info[13]))
    return urdf_document(robot_name, links + joints), inertial


def _pose(position, quaternion, p) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = np.array(p.getMatrixFromQuaternion(quaternion)).reshape(3, 3)
    T[:3, 3] = position
    return T


def _inertial_frame(p, body, link, client) -> np.ndarray:
    info = p.getDynamicsInfo(body, link, physicsClientId=client)
    return _pose(info[3], info[4], p)


def _link_element(name: str, dynamics, inertial_frame: np.ndarray) -> LinkElement:
    """pybullet keeps a diagonal inertia in a rotated inertial frame."""
    return LinkElement(name, dynamics[0], inertial_frame, np.diag(dynamics[2]))


def _joint_element(info, parent: str, frame: np.ndarray, axis: np.ndarray) -> JointElement:
    name, kind, child = info[1].decode(), info[2], info[12].decode()
    lower, upper = info[8], info[9]
    if kind == _FIXED:
        return JointElement(name, "fixed", parent, child, frame)
    if kind == _SPHERICAL:
        return JointElement(name, "spherical", parent, child, frame, np.array([0.0, 0.0, 1.0]))
    if kind == _REVOLUTE and lower > upper:  # pybullet's mark of a joint without limits
        urdf_type = "continuous"
    else:
        urdf_type = "revolute" if kind == _REVOLUTE else "prismatic"
    limited = urdf_type != "continuous"       # pybullet's maxForce/maxVelocity of a continuous joint mean nothing
    return JointElement(name, urdf_type, parent, child, frame, np.asarray(axis, dtype=float), lower, upper,
                        info[10] if limited else None, info[11] if limited else None, info[6], info[7])


def gravity_in_base(p, bd: BodyDynamics) -> np.ndarray:
    """The client's gravity in the base link's (URDF) frame, from the base's current pose;
    for a floating body, in the world (its model's convention)."""
    params = p.getPhysicsEngineParameters(physicsClientId=bd.client)
    g = np.array([params["gravityAccelerationX"], params["gravityAccelerationY"], params["gravityAccelerationZ"]])
    if bd.base is not None:
        return g
    _, com_orientation = p.getBasePositionAndOrientation(bd.body, physicsClientId=bd.client)
    R_com = np.array(p.getMatrixFromQuaternion(com_orientation)).reshape(3, 3)
    R_inertial = bd.inertial_frames[0][:3, :3]       # current: the body's signature holds it
    return (R_com @ R_inertial.T).T @ g


MAX_CLIENTS = 1024
"""pybullet's MAX_PHYSICS_CLIENTS (pybullet.c): client ids are slots 0 … 1023."""


_SLOTS = range(MAX_CLIENTS)


def connected_clients() -> tuple:
    """Ids of the pybullet clients connected now (a scan of every slot, ~50 µs: the loop in
    C, ``map``, takes half the time of one in Python)."""
    return tuple(itertools.compress(_SLOTS, map(import_pybullet().isConnected, _SLOTS)))


def resolve_client(physicsClientId=None) -> int:
    """The client a call is for: ``physicsClientId`` when given; else the one connected client.

    pybullet's own functions default to client 0.  Ours cannot: a
    ``pybullet_utils.bullet_client.BulletClient`` adds ``physicsClientId`` only to pybullet's
    built-in functions, so a drop-in swapped into the ``pybullet`` module and called through
    a BulletClient arrives without it.  Answering for client 0 then would be another
    client's body; so with several clients connected, a call without ``physicsClientId``
    is refused (use :func:`install` on the BulletClient, or pass the id)."""
    if physicsClientId is not None:
        if isinstance(physicsClientId, bool) or not isinstance(physicsClientId, (int, np.integer)):
            raise InputError(f"physicsClientId must be a pybullet client id (int), got {physicsClientId!r}")
        return int(physicsClientId)
    clients = connected_clients()
    if len(clients) == 1:
        return clients[0]
    if not clients:
        raise InputError("no pybullet client is connected (pybullet.connect first)")
    raise InputError(f"{len(clients)} pybullet clients are connected ({', '.join(map(str, clients))}) and the call "
                     "names none: pass physicsClientId=..., or install the drop-ins on each BulletClient with "
                     "dyn_plugin.pybullet_bridge.install(client) (a BulletClient adds its id only to pybullet's "
                     "built-in functions)")


def as_tuple(values) -> tuple:
    """pybullet's type for a vector: a tuple of floats."""
    return tuple(float(v) for v in values)
