"""Our dynamics inside pybullet scenes: drop-in functions with pybullet's own signatures.

Swapping pybullet's inverse dynamics for ours is a one-line change::

    import pybullet as p
    from dyn_plugin import pybullet_bridge as dpb

    tau = dpb.calculateInverseDynamics(robot, q, qd, qdd)     # was p.calculateInverseDynamics(...)
    M = dpb.calculateMassMatrix(robot, q)                     # was p.calculateMassMatrix(...)
    g = dpb.calculateGravity(robot, q)                        # pybullet has no equivalent
    qdd = dpb.calculateForwardDynamics(robot, q, qd, tau)

Positions, velocities, accelerations and torques are pybullet's degrees of freedom: its
revolute and prismatic joints in joint-index order (``objPositions`` exactly as pybullet
takes them; lists or numpy arrays).  Results have pybullet's types: a tuple for vectors, a
tuple of tuples for matrices.

The robot model is built from pybullet's own description of the body
(``getJointInfo``, ``getDynamicsInfo``): the same masses, inertias, joint frames and axes
pybullet simulates (so a link without ``<inertial>`` weighs 1 kg here as there), with
fixed joints merged and joints matched by name.  Several bodies and several clients
work; models are cached per (client, body) and rebuilt if the body changes.

Arguments stand in pybullet's positions: ``calculateInverseDynamics(body, q, q̇, q̈, flags,
physicsClientId)`` and ``calculateMassMatrix(body, q, flags, physicsClientId)`` (``flags`` 0;
pybullet's multi-DOF layout, 1, is refused, not misread); ``backend`` is keyword-only.  A
call without ``physicsClientId`` is for the one connected client, and is refused when
several are connected: a ``pybullet_utils.bullet_client.BulletClient`` adds its id only to
pybullet's built-in functions, so after ``pybullet.calculateMassMatrix =
dpb.calculateMassMatrix`` its calls would otherwise answer for another client's body.
:func:`install` puts the drop-ins on the ``pybullet`` module or on a BulletClient (with its id).  Gravity is
the client's (``setGravity``), turned into the base frame with the base's current
orientation.

A body loaded without ``useFixedBase`` (pybullet frees a base of nonzero mass; it fixes
one of mass 0, or any with ``useFixedBase=True``, whose ``getDynamicsInfo(body, -1)``
then reads mass 0) is a floating-base model here, and the functions take and return
what pybullet's own take and return for it (the coordinates are in
:mod:`dyn_plugin.backends.pybullet_backend`): ``calculateMassMatrix(body, joint
positions)`` is (dof + 6)², the base first as [angular, linear velocity] of its inertial
frame; ``calculateInverseDynamics(body, q, u, u̇)`` takes q = [inertial frame's position,
orientation (x, y, z, w), joints] (dof + 7), u and u̇ (dof + 6) and returns [force,
moment on the base at its centre of mass in its inertial frame, joint torques];
``calculateGravity``, ``calculateBiasForces`` and ``calculateForwardDynamics`` follow
calculateInverseDynamics' coordinates (zero acceleration is u̇ = 0).  Gravity is the
client's, in the world.  Where pybullet's own calculateInverseDynamics differs — gravity
on a base turned about more than one axis, which pybullet rotates wrongly — ours is the
physics.  ``calculateCoriolisMatrix``, :class:`DynamicsStepper` and
:class:`FrictionInjector` take fixed-base bodies only.

The backend is ``newton_euler`` unless ``backend=`` names another registered one
(``lagrange_euler``, ``newton_euler_friction`` with the body's URDF ``<dynamics>``, ...).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Optional

import numpy as np

from . import floating
from .backends.registry import get_backend
from .backends.registry import backend_class
from .backends.pybullet_backend import PybulletBase, c_level_output_silenced, configure_reference_body, import_pybullet
from .errors import DynPluginError, InputError, SimulationError, URDFError
from .friction.parameters import load_friction
from .robots import BUNDLED, load_robot
from .urdf import JointElement, LinkElement, load_urdf_string, urdf_document

DEFAULT_BACKEND = "newton_euler"
_REVOLUTE, _PRISMATIC, _FIXED = 0, 1, 4


@dataclasses.dataclass
class BodyDynamics:
    """One pybullet body seen through one of our backends.

    ``model``: the RobotModel built from pybullet's description; ``dof_to_model`` (n,):
    the model index of each pybullet degree of freedom; ``joint_indices``: pybullet joint
    index of each degree of freedom; ``base``: for a floating body (``model.floating_base``)
    the :class:`~dyn_plugin.backends.pybullet_backend.PybulletBase` of pybullet's
    coordinates, else None.
    """

    client: int
    body: int
    model: object
    joint_indices: list
    dof_to_model: np.ndarray
    signature: tuple
    backends: dict = dataclasses.field(default_factory=dict)
    base: Optional[PybulletBase] = None

    @property
    def dof(self) -> int:
        return len(self.joint_indices)

    def backend(self, name: str, gravity: np.ndarray):
        """The backend ``name`` for this body with ``gravity`` (base frame), built once per gravity."""
        key = (name, tuple(gravity))
        if key not in self.backends:
            self.backends[key] = get_backend(name, self.model, gravity=gravity)
        return self.backends[key]

    def to_model(self, values, label: str) -> np.ndarray:
        """pybullet-ordered values (dof,) → model order (n,), with a clear error on a bad length."""
        try:
            array = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"body {self.body}: {label} must be {self.dof} numbers, got {values!r}") from None
        if array.shape != (self.dof,):
            raise InputError(f"body {self.body} ({self.model.name}) has {self.dof} degrees of freedom: {label} "
                             f"must have length {self.dof}, got shape {array.shape}")
        if not np.all(np.isfinite(array)):
            raise InputError(f"body {self.body}: {label} has a non-finite entry (NaN or inf) at "
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
            raise InputError(f"body {self.body}: {label} must be {base + self.dof} numbers, got {values!r}") from None
        if array.shape != (base + self.dof,):
            what = "[base position (3), orientation (x, y, z, w)" if base == 7 else "[base angular (3), linear (3)"
            raise InputError(f"body {self.body} ({self.model.name}) has a floating base and {self.dof} joints: {label} "
                             f"must have length {base + self.dof} ({what}, joints]), got shape {array.shape}")
        if not np.all(np.isfinite(array)):
            raise InputError(f"body {self.body}: {label} has a non-finite entry (NaN or inf) at "
                             f"index {int(np.argmax(~np.isfinite(array)))}")
        if base == 7 and abs(np.linalg.norm(array[3:7]) - 1.0) > floating.UNIT_TOLERANCE:
            raise InputError(f"body {self.body}: {label}[3:7] must be a unit quaternion (x, y, z, w), "
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
        return _vector(np.concatenate([values[0, :6], values[0, 6:][self.dof_to_model]]))


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
    """What the model depends on: names, joint count and every link's inertial data
    (so that ``changeDynamics`` rebuilds it); raises a clear error for a missing body."""
    try:
        info = p.getBodyInfo(body, physicsClientId=client)
        joints = p.getNumJoints(body, physicsClientId=client)
    except p.error as exc:
        raise InputError(f"pybullet body {body} in client {client}: {exc} (no such body, or client not connected)") from None
    inertial = tuple(p.getDynamicsInfo(body, j, physicsClientId=client)[:5] for j in range(-1, joints))
    return info, joints, inertial


def _describe(p, body, client, signature) -> BodyDynamics:
    text = body_urdf(body, client)
    floating_base = signature[2][0][0] != 0   # pybullet fixes a base of mass 0, and only those
    try:
        model = load_urdf_string(text, floating_base=floating_base)
    except URDFError as exc:
        raise InputError(f"pybullet body {body} ({signature[0][1].decode()}) cannot be described: {exc}") from None
    names, indices = [], []
    for j in range(signature[1]):
        info = p.getJointInfo(body, j, physicsClientId=client)
        if info[2] in (_REVOLUTE, _PRISMATIC):
            names.append(info[1].decode())
            indices.append(j)
    dof_to_model = np.array([model.joint_names.index(name) for name in names], dtype=int)
    base = PybulletBase.of_body(p, body, client) if floating_base else None
    return BodyDynamics(client, body, model, indices, dof_to_model, signature, base=base)


def body_urdf(body: int, physicsClientId: Optional[int] = None) -> str:
    """URDF text of a body as pybullet holds it (inertias, frames, axes, limits, dynamics).

    pybullet keeps each link's frame at its centre of mass; the URDF link frame is the
    joint frame, which sits at ``parentFramePos`` in the parent's inertial frame.
    """
    p = import_pybullet()
    client = resolve_client(physicsClientId)
    base_name, robot_name = (s.decode() for s in p.getBodyInfo(body, physicsClientId=client))
    count = p.getNumJoints(body, physicsClientId=client)
    inertial = [_inertial_frame(p, body, j, client) for j in range(-1, count)]
    links = [_link_element(base_name, p.getDynamicsInfo(body, -1, physicsClientId=client), inertial[0])]
    joints = []
    for j in range(count):
        info = p.getJointInfo(body, j, physicsClientId=client)
        kind, parent = info[2], info[16]
        if kind not in (_REVOLUTE, _PRISMATIC, _FIXED):
            raise InputError(f"pybullet body {body} ({robot_name}): joint {info[1].decode()!r} is of pybullet type "
                             f"{kind} (spherical or planar), which our models do not support")
        parent_name = base_name if parent < 0 else p.getJointInfo(body, parent, physicsClientId=client)[12].decode()
        # parentFrameOrn rotates parent-COM vectors into the child's COM frame, and the
        # axis is given in the child's COM frame: undo the child's inertial rotation R_i.
        R_i = inertial[j + 1][:3, :3]
        joint_in_parent_com = _pose(info[14], info[15], p)
        joint_in_parent_com[:3, :3] = joint_in_parent_com[:3, :3].T @ R_i.T
        links.append(_link_element(info[12].decode(), p.getDynamicsInfo(body, j, physicsClientId=client), inertial[j + 1]))
        joints.append(_joint_element(info, parent_name, inertial[parent + 1] @ joint_in_parent_com, R_i @ info[13]))
    return urdf_document(robot_name, links + joints)


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
    if kind == _REVOLUTE and lower > upper:  # pybullet's mark of a joint without limits
        urdf_type = "continuous"
    else:
        urdf_type = "revolute" if kind == _REVOLUTE else "prismatic"
    limited = urdf_type != "continuous"       # pybullet's maxForce/maxVelocity of a continuous joint mean nothing
    return JointElement(name, urdf_type, parent, child, frame, np.asarray(axis, dtype=float), lower, upper,
                        info[10] if limited else None, info[11] if limited else None, info[6], info[7])


def _gravity_in_base(p, bd: BodyDynamics) -> np.ndarray:
    """The client's gravity in the base link's (URDF) frame, from the base's current pose;
    for a floating body, in the world (its model's convention)."""
    params = p.getPhysicsEngineParameters(physicsClientId=bd.client)
    g = np.array([params["gravityAccelerationX"], params["gravityAccelerationY"], params["gravityAccelerationZ"]])
    if bd.base is not None:
        return g
    _, com_orientation = p.getBasePositionAndOrientation(bd.body, physicsClientId=bd.client)
    R_com = np.array(p.getMatrixFromQuaternion(com_orientation)).reshape(3, 3)
    R_inertial = _inertial_frame(p, bd.body, -1, bd.client)[:3, :3]
    return (R_com @ R_inertial.T).T @ g


MAX_CLIENTS = 1024
"""pybullet's MAX_PHYSICS_CLIENTS (pybullet.c): client ids are slots 0 … 1023."""


def connected_clients() -> tuple:
    """Ids of the pybullet clients connected now (a scan of every slot, ~0.3 ms)."""
    p = import_pybullet()
    return tuple(i for i in range(MAX_CLIENTS) if p.isConnected(physicsClientId=i))


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


def _check_flags(flags, function: str) -> None:
    """pybullet's ``flags``: 0, its default layout.  1 (the multi-DOF layout of spherical
    joints and a padded base, pybullet_utils/pd_controller_stable.py) is not supported yet:
    refused rather than read as the default layout (pybullet's own sizes differ: a 7-joint
    fixed arm's flags=1 mass matrix is 14 × 14)."""
    if isinstance(flags, bool) or not isinstance(flags, (int, np.integer)) or flags not in (0, 1):
        raise InputError(f"{function}: flags must be 0 or 1 as in pybullet, got {flags!r}")
    if flags == 1:
        raise InputError(f"{function}: flags=1 (pybullet's multi-DOF layout: base and spherical joints padded) is "
                         "not supported yet; call with flags=0 (one entry per revolute or prismatic joint)")


def _setup(body, client, backend: Optional[str]):
    p = import_pybullet()
    bd = body_dynamics(body, resolve_client(client))
    return bd, bd.backend(backend or DEFAULT_BACKEND, _gravity_in_base(p, bd))


def _vector(values) -> tuple:
    return tuple(float(v) for v in values)


def _matrix(bd: BodyDynamics, M: np.ndarray) -> tuple:
    order = bd.dof_to_model if bd.base is None else np.concatenate([np.arange(6), 6 + bd.dof_to_model])
    return tuple(tuple(float(v) for v in row) for row in M[np.ix_(order, order)])


def _floating_state(bd: BodyDynamics, objPositions, objVelocities) -> tuple:
    """Our (q, v) (1, nq), (1, nv) of pybullet's floating-body positions and velocities u."""
    return bd.to_configuration(objPositions), bd.base.velocity_from(bd.floating_args("objVelocities", objVelocities, 6))


def _fixed_base_only(bd: BodyDynamics, what: str) -> None:
    if bd.base is not None:
        raise InputError(f"{what}: pybullet body {bd.body} ({bd.model.name}) has a floating base (loaded without "
                         f"useFixedBase, base mass {bd.model.base_mass:g} kg); {what} takes fixed-base bodies only. "
                         "For the floating body's dynamics in our convention use dyn_plugin.get_backend(name, "
                         "dyn_plugin.pybullet_bridge.body_dynamics(body).model)")


# -- the drop-in functions (pybullet's names and signatures) ---------------------------------


def calculateInverseDynamics(bodyUniqueId, objPositions, objVelocities, objAccelerations, flags=0,
                             physicsClientId=None, *, backend: Optional[str] = None) -> tuple:
    """Joint torques (tuple of dof floats) for positions, velocities and accelerations, as pybullet's
    (a floating body: dof + 6 generalized forces of dof + 7 positions, dof + 6 velocities and
    accelerations, in pybullet's coordinates; see the module docstring).  Arguments in
    pybullet's positions: ``flags`` (0; see :func:`_check_flags`), then ``physicsClientId``
    (see :func:`resolve_client`)."""
    _check_flags(flags, "calculateInverseDynamics")
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    if bd.base is not None:
        q, v = _floating_state(bd, objPositions, objVelocities)
        a = bd.base.acceleration_from(v, bd.floating_args("objAccelerations", objAccelerations, 6))
        return bd.from_floating(bd.base.force(be.inverse_dynamics(q, v, a)))
    q, qd, qdd = (bd.to_model(v, label) for v, label in ((objPositions, "objPositions"),
                                                        (objVelocities, "objVelocities"),
                                                        (objAccelerations, "objAccelerations")))
    return _vector(bd.from_model(be.inverse_dynamics(q, qd, qdd)))


def calculateMassMatrix(bodyUniqueId, objPositions, flags=0, physicsClientId=None, *,
                        backend: Optional[str] = None) -> tuple:
    """Joint-space mass matrix (dof × dof, tuple of tuples), as pybullet's; (dof + 6)² for a
    floating body, of its joint positions alone (the base's pose does not enter).  Arguments
    in pybullet's positions: ``flags`` (0), then ``physicsClientId``."""
    _check_flags(flags, "calculateMassMatrix")
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    if bd.base is not None:
        q = np.concatenate([floating.neutral(bd.model)[:7], bd.to_model(objPositions, "objPositions")])
        return _matrix(bd, bd.base.mass_matrix(be.mass_matrix(q)[None])[0])
    return _matrix(bd, be.mass_matrix(bd.to_model(objPositions, "objPositions")))


def calculateGravity(bodyUniqueId, objPositions, physicsClientId=None, *, backend: Optional[str] = None) -> tuple:
    """g(q): the torques that hold the body still against the client's gravity."""
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    if bd.base is not None:
        return bd.from_floating(bd.base.force(be.gravity_torques(bd.to_configuration(objPositions))))
    return _vector(bd.from_model(be.gravity_torques(bd.to_model(objPositions, "objPositions"))))


def calculateBiasForces(bodyUniqueId, objPositions, objVelocities, physicsClientId=None, *,
                        backend: Optional[str] = None) -> tuple:
    """C(q, q̇) q̇ + g(q): the torques for zero acceleration."""
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    if bd.base is not None:
        q, v = _floating_state(bd, objPositions, objVelocities)
        a = bd.base.acceleration_from(v, np.zeros_like(v))
        return bd.from_floating(bd.base.force(be.inverse_dynamics(q, v, a)))
    return _vector(bd.from_model(be.bias_forces(bd.to_model(objPositions, "objPositions"),
                                                bd.to_model(objVelocities, "objVelocities"))))


def calculateCoriolisMatrix(bodyUniqueId, objPositions, objVelocities, physicsClientId=None, *,
                            backend: Optional[str] = None) -> tuple:
    """C(q, q̇) in Christoffel form (dof × dof): C q̇ = velocity terms, Ṁ − 2C skew-symmetric.
    Fixed-base bodies only: pybullet's coordinates of a floating base (angular before linear
    in u, linear before angular in τ, classical accelerations) have no such C."""
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    _fixed_base_only(bd, "calculateCoriolisMatrix")
    return _matrix(bd, be.coriolis_matrix(bd.to_model(objPositions, "objPositions"),
                                          bd.to_model(objVelocities, "objVelocities")))


def calculateForwardDynamics(bodyUniqueId, objPositions, objVelocities, objTorques, physicsClientId=None, *,
                             backend: Optional[str] = None) -> tuple:
    """Joint accelerations q̈ produced by torques τ (pybullet has no equivalent); for a floating
    body u̇ (dof + 6) of τ (dof + 6), the inverse of :func:`calculateInverseDynamics`."""
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    if bd.base is not None:
        q, v = _floating_state(bd, objPositions, objVelocities)
        tau = bd.base.force_from(bd.floating_args("objTorques", objTorques, 6))
        return bd.from_floating(bd.base.acceleration(v, be.forward_dynamics(q, v, tau)))
    q, qd, tau = (bd.to_model(v, label) for v, label in ((objPositions, "objPositions"),
                                                        (objVelocities, "objVelocities"), (objTorques, "objTorques")))
    return _vector(bd.from_model(be.forward_dynamics(q, qd, tau)))


DROP_INS = ("calculateInverseDynamics", "calculateMassMatrix", "calculateGravity", "calculateBiasForces",
            "calculateCoriolisMatrix", "calculateForwardDynamics")
"""The functions :func:`install` puts in place (the first two replace pybullet's own)."""


def install(target, backend: Optional[str] = None):
    """Put the drop-ins on ``target``: the ``pybullet`` module, or a
    ``pybullet_utils.bullet_client.BulletClient``, whose calls then reach ours with its own
    client id (a BulletClient adds ``physicsClientId`` to pybullet's built-in functions only,
    so a module-level swap alone cannot know which client a BulletClient call is for).
    ``backend`` names the backend for every call (default ``newton_euler``).  Returns
    ``target``; ``pybullet.calculateMassMatrix(...)`` or ``client.calculateMassMatrix(...)``
    then run ours with pybullet's arguments."""
    import functools

    client = getattr(target, "_client", None)
    for name in DROP_INS:
        bound = {} if client is None else {"physicsClientId": client}
        if backend is not None:
            bound["backend"] = backend
        function = globals()[name]
        setattr(target, name, functools.wraps(function)(functools.partial(function, **bound)) if bound else function)
    return target


__all__ = ["BodyDynamics", "DROP_INS", "DynamicsStepper", "FrictionInjector", "body_dynamics", "body_urdf",
           "c_level_output_silenced", "calculateBiasForces", "calculateCoriolisMatrix", "calculateForwardDynamics",
           "calculateGravity", "calculateInverseDynamics", "calculateMassMatrix", "configure_reference_body",
           "connected_clients", "install", "resolve_client"]


# -- stepping a body with our dynamics, or injecting our friction into pybullet's ------------


def _state(p, bd: BodyDynamics) -> tuple:
    """(q, q̇) of a body in model order."""
    states = p.getJointStates(bd.body, bd.joint_indices, physicsClientId=bd.client)
    return bd.to_model([s[0] for s in states], "positions"), bd.to_model([s[1] for s in states], "velocities")


def _time_step(p, client) -> float:
    return float(p.getPhysicsEngineParameters(physicsClientId=client)["fixedTimeStep"])


def _friction_options(model, backend: str, friction, profile) -> dict:
    """Friction options for a friction backend on a body: as given, or, for a body that is
    one of our bundled robots (same joints and inertial data), its bundled data file."""
    if not backend_class(backend).can("friction"):
        return {}
    if friction is None and model.name in BUNDLED:
        bundled = load_robot(model.name)
        same = bundled.joint_names == model.joint_names and np.allclose(bundled.masses, model.masses) and \
            np.allclose(bundled.inertias, model.inertias)
        if same:
            return {"friction": load_friction(model.name, model, profile)}
    return {"friction": friction, "profile": profile}


class DynamicsStepper:
    """Makes one body of a pybullet scene follow our dynamics.

    Each :meth:`step` advances the body by the client's time step with our forward
    dynamics (semi-implicit Euler, as pybullet, in ``substeps`` equal sub-steps), steps
    the rest of the scene with ``stepSimulation``, and writes the body's new state back.
    Other bodies, rendering, debug lines and collision queries keep working.

    Damping acts implicitly, (M + h D) Δq̇ = h (τ − bias − D q̇) per sub-step h: stable
    for any h, where pybullet's explicit jointDamping diverges once h·λ_max(M⁻¹D) > 2
    (pybullet_data's kuka_iiwa at 1/240 s: 3.6, on its 6e-4 kg·m² last link).  D is

    * with a friction backend: its friction model's viscous friction (by default a bundled
      robot's data file, else the body's URDF ``<dynamics damping>``), plus friction impulses
      for dry friction (stick-slip without chattering); a dynamic law (LuGre, Dahl:
      ``FrictionModel.dynamic``) acts implicitly with its bristle deflections z kept between
      steps in :attr:`friction_state` ((n,) rad, model order; set it to zeros after moving
      the body by hand), stable at 1/240 s for any bristle stiffness
      (:mod:`dyn_plugin.backends.bristle_stepping`);
    * with any other backend: ``damping`` (dof,) N·m·s/rad (N·s/m), pybullet's order; by
      default the body's URDF ``<dynamics damping>`` as ``getJointInfo`` reports it, which
      pybullet's own stepping applies (set by ``changeDynamics(jointDamping=...)``, it is
      invisible to pybullet's API: pass it here).  Without damping a step is exactly
      pybullet's update.

    A step that would give a NaN or infinite state raises :class:`SimulationError` (step,
    time, joint) before anything is written to the scene.

    What it does not do: contacts and constraints acting *on this body* (pybullet's
    collision response to it is overwritten each step; other bodies still bounce off it),
    and pybullet's joint limits, joint-speed cap (100 rad/s by default), link damping and
    motors for it; and floating bodies (loaded without ``useFixedBase``): it refuses them
    with an :class:`~dyn_plugin.errors.InputError` rather than step them as fixed.
    """

    def __init__(self, body: int, backend: str = "newton_euler_friction", physicsClientId: Optional[int] = None,
                 friction=None, profile=None, substeps: int = 1, damping=None, **options):
        """``friction``/``profile`` as for the friction backends; ``substeps`` (int ≥ 1) sub-steps
        per time step; ``damping`` as above (backends without friction only); other
        ``options`` go to the backend."""
        p = import_pybullet()
        self._p = p
        self.dynamics = bd = body_dynamics(body, physicsClientId)
        _fixed_base_only(bd, "DynamicsStepper")
        options.setdefault("gravity", _gravity_in_base(p, bd))
        options.update(_friction_options(bd.model, backend, friction, profile))
        self.backend = get_backend(backend, bd.model, **options)
        self.substeps = _substeps(substeps)
        self.damping = _damping(bd, self.backend, damping)
        law = getattr(getattr(self.backend, "friction", None), "dynamic", None)
        self.friction_state = None if law is None else np.zeros(law.n)
        self.steps, self.time = 0, 0.0
        p.setJointMotorControlArray(body, bd.joint_indices, p.VELOCITY_CONTROL, forces=[0.0] * bd.dof,
                                    physicsClientId=bd.client)

    def step(self, torques, step_scene: bool = True) -> tuple:
        """Apply joint torques (dof,) N·m (N) for one time step; returns the new (q, q̇) as
        tuples in pybullet's order.  ``step_scene=False`` leaves ``stepSimulation`` to the
        caller (call it before :meth:`step` when several steppers share a scene)."""
        p, bd = self._p, self.dynamics
        dt = _time_step(p, bd.client)
        q, qd = _state(p, bd)
        tau = bd.to_model(torques, "torques")
        q_next, qd_next = self._advance(q, qd, tau, dt)
        self.friction_state = self._friction_state_after
        if step_scene:
            p.stepSimulation(physicsClientId=bd.client)
        for j, qi, vi in zip(bd.joint_indices, bd.from_model(q_next), bd.from_model(qd_next)):
            p.resetJointState(bd.body, j, float(qi), float(vi), physicsClientId=bd.client)
        self.steps, self.time = self.steps + 1, self.time + dt
        return _vector(bd.from_model(q_next)), _vector(bd.from_model(qd_next))

    def _advance(self, q, qd, tau, dt) -> tuple:
        """(q, q̇) after ``substeps`` sub-steps of dt / substeps, each checked to be finite; the
        bristle state of a dynamic friction law (else None) after them in
        ``_friction_state_after``, which :meth:`step` keeps once the step has succeeded."""
        h, z = dt / self.substeps, self.friction_state
        for _ in range(self.substeps):
            try:
                qd, z = self._velocity_step(q, qd, z, tau, h)
            except DynPluginError as exc:
                raise SimulationError(f"{self._where(dt)}: {exc}; {self._advice(dt)}") from exc
            q = q + h * qd
            self._check_finite(q, qd, dt)
        self._friction_state_after = z
        return q, qd

    def _velocity_step(self, q, qd, z, tau, h) -> tuple:
        """(q̇, z) after one sub-step h (s): the implicit step of a dynamic friction law, or
        friction impulses and implicit viscous friction, or implicit ``damping``, or (no
        damping) pybullet's explicit update."""
        be = self.backend
        if z is not None:
            return be.state_step(q, qd, z, tau, h)
        if type(be).can("stepping"):
            return be.velocity_step(q, qd, tau, h, viscous="implicit"), None
        if not np.any(self.damping):
            return qd + h * be.forward_dynamics(q, qd, tau), None
        D = np.diag(self.damping)
        return qd + np.linalg.solve(be.mass_matrix(q) + h * D, h * (tau - be.bias_forces(q, qd) - D @ qd)), None

    def _check_finite(self, q, qd, dt) -> None:
        bad = ~(np.isfinite(q) & np.isfinite(qd))
        if bad.any():
            i = int(np.argmax(bad))
            bd = self.dynamics
            joint = bd.joint_indices[int(np.nonzero(bd.dof_to_model == i)[0][0])]
            raise SimulationError(f"{self._where(dt)}: joint {bd.model.joint_names[i]!r} (pybullet joint {joint}) "
                                  f"would get q = {q[i]:.3g}, q̇ = {qd[i]:.3g}; {self._advice(dt)}")

    def _advice(self, dt) -> str:
        return (f"nothing was written to the scene; the time step {dt:g} s in {self.substeps} sub-step(s) is too "
                "large for this body: raise substeps or lower fixedTimeStep")

    def _where(self, dt) -> str:
        bd = self.dynamics
        return (f"DynamicsStepper: body {bd.body} ({bd.model.name}) diverged at step {self.steps + 1} "
                f"(t = {self.time + dt:.6g} s since the stepper started)")


def _substeps(substeps) -> int:
    if isinstance(substeps, bool) or not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise InputError(f"substeps must be an integer >= 1, got {substeps!r}")
    return int(substeps)


def _damping(bd: BodyDynamics, backend, damping) -> np.ndarray:
    """Viscous joint damping (n,) in model order for a backend without friction; zeros
    for a friction backend (whose friction model holds it)."""
    if type(backend).can("stepping"):
        if damping is not None:
            raise InputError(f"{backend.name}: damping= is for backends without friction; a friction backend's "
                             "viscous friction is its damping (pass friction=FrictionModel.create(n, viscous=...))")
        return np.zeros(bd.model.n)
    if damping is None:
        return np.asarray(bd.model.damping, dtype=float).copy()
    values = bd.to_model(damping, "damping")
    if np.any(values < 0):
        raise InputError(f"body {bd.body}: damping must be >= 0 N·m·s/rad, got {list(damping)!r}")
    return values


class FrictionInjector:
    """Our friction model acting on a body that pybullet keeps integrating.

    Call :meth:`apply` with the torques you want on the joints, then ``stepSimulation``.
    The parts act as follows:

    * viscous b_v q̇ → pybullet's ``jointDamping`` (exactly an explicit −b_v q̇);
    * dry friction (Coulomb, Schilling's static term, transmission breakaway) → the velocity
      motor with targetVelocity 0 and force = the level at the current speed: pybullet's
      constraint solver applies it as a velocity-level impulse, so stiction and stopping are
      exact for symmetric levels.  For asymmetric levels the motor uses the level of the
      current direction of motion (at rest: of the direction the applied torque pushes);
    * load-dependent friction (bearings, efficiency) → an explicit torque from the joint
      loads at the previous step's acceleration (a one-step lag).

    Fixed-base bodies only (a floating one is refused with an InputError).
    """

    def __init__(self, body: int, friction=None, physicsClientId: Optional[int] = None, profile=None):
        p = import_pybullet()
        self._p = p
        self.dynamics = bd = body_dynamics(body, physicsClientId)
        _fixed_base_only(bd, "FrictionInjector")
        self.backend = get_backend("newton_euler_friction", bd.model, gravity=_gravity_in_base(p, bd),
                                   **_friction_options(bd.model, "newton_euler_friction", friction, profile))
        self.friction = self.backend.friction
        if self.friction.dynamic is not None:
            raise InputError(f"FrictionInjector: friction model {self.friction.name!r} has a "
                             f"{self.friction.dynamic.law} law, which pybullet's velocity motors and jointDamping "
                             "cannot act out (they have no bristle state): step the body with DynamicsStepper")
        if np.any(self.friction.armature > 0):
            warnings.warn(f"FrictionInjector: pybullet's body has no rotor inertia; the armature of friction "
                          f"model {self.friction.name!r} is not added to it", UserWarning, stacklevel=2)
        for j, c in zip(bd.joint_indices, bd.from_model(self.friction.velocity.viscous)):
            p.changeDynamics(body, j, jointDamping=float(c), physicsClientId=bd.client)
        self._previous = None  # (q̇, t) for the acceleration estimate

    def apply(self, torques) -> None:
        """Set this step's joint torques (dof,) plus our friction; then call stepSimulation."""
        p, bd, be = self._p, self.dynamics, self.backend
        q, qd = _state(p, bd)
        tau = bd.to_model(torques, "torques")
        positive, negative = self.friction.levels(qd)
        frictionless = be.bare.forward_dynamics(q, qd, tau - self.friction.velocity.viscous * qd)
        heading = np.where(qd != 0, qd, frictionless)
        level = np.where(heading > 0, positive, negative)
        extra = self._load_dependent(q, qd)
        p.setJointMotorControlArray(bd.body, bd.joint_indices, p.VELOCITY_CONTROL, targetVelocities=[0.0] * bd.dof,
                                    forces=_vector(bd.from_model(level)), physicsClientId=bd.client)
        p.setJointMotorControlArray(bd.body, bd.joint_indices, p.TORQUE_CONTROL,
                                    forces=_vector(bd.from_model(tau - extra)), physicsClientId=bd.client)

    def _load_dependent(self, q, qd) -> np.ndarray:
        """Bearing friction and efficiency losses at the last step's acceleration."""
        if not self.friction.load_dependent:
            return np.zeros_like(q)
        dt = _time_step(self._p, self.dynamics.client)
        qdd = np.zeros_like(q) if self._previous is None else (qd - self._previous) / dt
        self._previous = qd
        parts = self.backend.inverse_dynamics_breakdown(q, qd, qdd)
        breakaway = 0.0 if self.friction.transmission is None else \
            np.sign(qd) * self.friction.transmission.breakaway
        return parts.bearing + parts.transmission - breakaway
