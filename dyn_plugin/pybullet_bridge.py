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
physicsClientId)`` and ``calculateMassMatrix(body, q, flags, physicsClientId)`` (``flags`` 0,
one entry per revolute or prismatic joint, or 1, pybullet's multi-DOF layout:
:mod:`dyn_plugin.pybullet_layout`); ``backend`` is keyword-only.  A
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
physics.  Two more places where pybullet's own step is not the physics of its description,
measured in tests/test_pybullet_drop_in.py: a joint axis written with a length other than 1
(URDF means its direction; pybullet's poses and calculateInverseDynamics take it so, ours
too, but its link velocities and its step scale with the length: a pendulum on axis
"0 0 2" falls at half the physical rate), and a link whose inertia pybullet zeroed for
breaking the triangle inequality ("Bad inertia tensor properties") on a spherical joint:
the mass matrix is then singular, pybullet's step answers anyway, ours refuses the forward
dynamics (ModelError).  ``calculateCoriolisMatrix`` takes a floating body with ``flags=1``;
:class:`DynamicsStepper` steps floating bodies and spherical joints in the multi-DOF layout
(on the configuration manifold); :class:`FrictionInjector` (:mod:`dyn_plugin.pybullet_friction`)
puts our friction on their revolute and prismatic joints while pybullet integrates them.

The backend is ``newton_euler`` unless ``backend=`` names another registered one
(``lagrange_euler``, ``newton_euler_friction`` with the body's URDF ``<dynamics>``, ...).
"""

from __future__ import annotations

import inspect
from typing import Optional

import numpy as np

from .backends.registry import get_backend
from .backends.pybullet_backend import c_level_output_silenced, configure_reference_body, import_pybullet
from .errors import DynPluginError, InputError, SimulationError
from .pybullet_jacobian import calculateJacobian
from .configuration import integrate
from .pybullet_layout import MultiDofLayout
from .pybullet_friction import FrictionInjector, friction_options
from .pybullet_state import check_finite, joint_state, layout_state, motors_off, read_state, time_step, write_state
from .pybullet_bodies import (BodyDynamics, as_tuple, body_dynamics, body_urdf, connected_clients,
                              gravity_in_base, resolve_client, same_body_now)

DEFAULT_BACKEND = "newton_euler"


def _multi_dof(flags, function: str) -> bool:
    """pybullet's ``flags``: 0, its one-entry-per-joint layout, or 1, its multi-DOF layout
    (:mod:`dyn_plugin.pybullet_layout`); True for 1."""
    if isinstance(flags, bool) or not isinstance(flags, (int, np.integer)) or flags not in (0, 1):
        raise InputError(f"{function}: flags must be 0 (one entry per revolute or prismatic joint) or 1 (pybullet's "
                         f"multi-DOF layout: base and spherical joints padded), as in pybullet, got {flags!r}")
    return flags == 1


def _setup(body, client, backend: Optional[str]):
    p = import_pybullet()
    bd = body_dynamics(body, resolve_client(client))
    return bd, bd.backend(backend or DEFAULT_BACKEND, gravity_in_base(p, bd))


def _matrix(bd: BodyDynamics, M: np.ndarray) -> tuple:
    order = bd.dof_to_model if bd.base is None else np.concatenate([np.arange(6), 6 + bd.dof_to_model])
    return tuple(tuple(float(v) for v in row) for row in M[np.ix_(order, order)])


def _floating_state(bd: BodyDynamics, objPositions, objVelocities) -> tuple:
    """Our (q, v) (1, nq), (1, nv) of pybullet's floating-body positions and velocities u."""
    return bd.to_configuration(objPositions), bd.base.velocity_from(bd.floating_args("objVelocities", objVelocities, 6))


def _multi_dof_state(bd: BodyDynamics, objPositions, objVelocities) -> tuple:
    """(layout, q (1, nq), v (1, nv), A) of pybullet's flags=1 positions and velocities."""
    layout = MultiDofLayout(bd)
    q = layout.configuration(objPositions)
    v, A = layout.velocity(q, objVelocities)
    return layout, q, v, A


def _fixed_base_only(bd: BodyDynamics, what: str, hint: str = "it takes fixed-base bodies only") -> None:
    if bd.base is not None:
        raise InputError(f"{what}: {bd.label} has a floating base (loaded without useFixedBase, base mass "
                         f"{bd.model.base_mass:g} kg); {hint}")


# -- the drop-in functions (pybullet's names and signatures) ---------------------------------


def calculateInverseDynamics(bodyUniqueId, objPositions, objVelocities, objAccelerations, flags=0,
                             physicsClientId=None, *, backend: Optional[str] = None) -> tuple:
    """Joint torques (tuple of dof floats) for positions, velocities and accelerations, as pybullet's
    (a floating body: dof + 6 generalized forces of dof + 7 positions, dof + 6 velocities and
    accelerations, in pybullet's coordinates; see the module docstring).  ``flags=1``: every
    argument and the answer in pybullet's multi-DOF layout (:mod:`dyn_plugin.pybullet_layout`;
    the accelerations are used, where pybullet's own flags=1 ignores them).  Arguments in
    pybullet's positions: ``flags``, then ``physicsClientId`` (see :func:`resolve_client`)."""
    multi = _multi_dof(flags, "calculateInverseDynamics")
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    if multi:
        layout, q, v, A = _multi_dof_state(bd, objPositions, objVelocities)
        return layout.force(be.inverse_dynamics(q, v, layout.acceleration(q, v, objAccelerations, A)), A)
    bd.one_dof_only("calculateInverseDynamics")
    if bd.base is not None:
        q, v = _floating_state(bd, objPositions, objVelocities)
        a = bd.base.acceleration_from(v, bd.floating_args("objAccelerations", objAccelerations, 6))
        return bd.from_floating(bd.base.force(be.inverse_dynamics(q, v, a)))
    q, qd, qdd = (bd.to_model(v, label) for v, label in ((objPositions, "objPositions"),
                                                        (objVelocities, "objVelocities"),
                                                        (objAccelerations, "objAccelerations")))
    return as_tuple(bd.from_model(be.inverse_dynamics(q, qd, qdd)))


def calculateMassMatrix(bodyUniqueId, objPositions, flags=0, physicsClientId=None, *,
                        backend: Optional[str] = None) -> tuple:
    """Joint-space mass matrix (dof × dof, tuple of tuples), as pybullet's.  A floating body's
    is (dof + 6)² in pybullet's u, of its joint positions (dof) or of its dof + 7 positions as
    calculateInverseDynamics takes them (the base's pose does not enter; pybullet's own reads
    such a base pose as joint angles).  ``flags=1``: pybullet's multi-DOF layout
    (:mod:`dyn_plugin.pybullet_layout`: ½ uᵀ M u is the body's kinetic energy).  Arguments
    in pybullet's positions: ``flags``, then ``physicsClientId``."""
    multi = _multi_dof(flags, "calculateMassMatrix")
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    if multi:
        layout = MultiDofLayout(bd)
        q = layout.configuration(objPositions)
        return layout.mass_matrix(be.mass_matrix(q)[0], layout.velocity_map(q))
    bd.one_dof_only("calculateMassMatrix")
    if bd.base is not None:
        joints = bd.to_model(objPositions, "objPositions") if np.shape(objPositions) == (bd.dof,) else \
            bd.to_configuration(objPositions)[0, 7:]
        q = np.concatenate([bd.model.neutral()[:7], joints])
        return _matrix(bd, bd.base.mass_matrix(be.mass_matrix(q)[None])[0])
    return _matrix(bd, be.mass_matrix(bd.to_model(objPositions, "objPositions")))


def calculateGravity(bodyUniqueId, objPositions, physicsClientId=None, *, flags=0,
                     backend: Optional[str] = None) -> tuple:
    """g(q): the torques that hold the body still against the client's gravity (``flags=1``:
    in pybullet's multi-DOF layout)."""
    if _multi_dof(flags, "calculateGravity"):
        layout = MultiDofLayout(body_dynamics(bodyUniqueId, resolve_client(physicsClientId)))
        zeros = [0.0] * layout.size
        return calculateInverseDynamics(bodyUniqueId, objPositions, zeros, zeros, 1, physicsClientId, backend=backend)
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    bd.one_dof_only("calculateGravity")
    if bd.base is not None:
        return bd.from_floating(bd.base.force(be.gravity_torques(bd.to_configuration(objPositions))))
    return as_tuple(bd.from_model(be.gravity_torques(bd.to_model(objPositions, "objPositions"))))


def calculateBiasForces(bodyUniqueId, objPositions, objVelocities, physicsClientId=None, *, flags=0,
                        backend: Optional[str] = None) -> tuple:
    """C(q, q̇) q̇ + g(q): the torques for zero acceleration (``flags=1``: zero u̇ in pybullet's
    multi-DOF layout)."""
    if _multi_dof(flags, "calculateBiasForces"):
        zeros = [0.0] * MultiDofLayout(body_dynamics(bodyUniqueId, resolve_client(physicsClientId))).size
        return calculateInverseDynamics(bodyUniqueId, objPositions, objVelocities, zeros, 1, physicsClientId,
                                        backend=backend)
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    bd.one_dof_only("calculateBiasForces")
    if bd.base is not None:
        q, v = _floating_state(bd, objPositions, objVelocities)
        a = bd.base.acceleration_from(v, np.zeros_like(v))
        return bd.from_floating(bd.base.force(be.inverse_dynamics(q, v, a)))
    return as_tuple(bd.from_model(be.bias_forces(bd.to_model(objPositions, "objPositions"),
                                                bd.to_model(objVelocities, "objVelocities"))))


def calculateCoriolisMatrix(bodyUniqueId, objPositions, objVelocities, physicsClientId=None, *, flags=0,
                            backend: Optional[str] = None) -> tuple:
    """C(q, q̇) in Christoffel form (dof × dof): C q̇ = velocity terms, Ṁ − 2C skew-symmetric.
    ``flags=1`` (any body, floating or with spherical joints): C_u = Aᵀ (C A + M Ȧ) in
    pybullet's multi-DOF layout u (v = A u, :mod:`dyn_plugin.pybullet_layout`), for which
    C_u u is the velocity terms and Ṁ_u − 2 C_u = Aᵀ (Ṁ − 2C) A + (ȦᵀMA − AᵀMȦ) is
    skew-symmetric.  ``flags=0`` takes fixed-base bodies only: pybullet's flags=0
    coordinates of a floating base (classical accelerations) have no such C."""
    multi = _multi_dof(flags, "calculateCoriolisMatrix")
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    if multi:
        layout, q, v, A = _multi_dof_state(bd, objPositions, objVelocities)
        C = A.T @ (be.coriolis_matrix(q, v)[0] @ A + be.mass_matrix(q)[0] @ layout.velocity_map_rate(q, v))
        return tuple(tuple(float(x) for x in row) for row in C)
    bd.one_dof_only("calculateCoriolisMatrix")
    _fixed_base_only(bd, "calculateCoriolisMatrix", "pybullet's flags=0 coordinates of a floating base (angular before "
                     "linear velocity, classical accelerations) have no Christoffel C: call with flags=1 (pybullet's "
                     "multi-DOF layout, dyn_plugin.pybullet_layout)")
    return _matrix(bd, be.coriolis_matrix(bd.to_model(objPositions, "objPositions"),
                                          bd.to_model(objVelocities, "objVelocities")))


def calculateForwardDynamics(bodyUniqueId, objPositions, objVelocities, objTorques, physicsClientId=None, *,
                             flags=0, backend: Optional[str] = None) -> tuple:
    """Joint accelerations q̈ produced by torques τ (pybullet has no equivalent); for a floating
    body u̇ (dof + 6) of τ (dof + 6), the inverse of :func:`calculateInverseDynamics`; with
    ``flags=1`` u̇ of forces in pybullet's multi-DOF layout (0 on the padding)."""
    multi = _multi_dof(flags, "calculateForwardDynamics")
    bd, be = _setup(bodyUniqueId, physicsClientId, backend)
    if multi:
        layout, q, v, A = _multi_dof_state(bd, objPositions, objVelocities)
        a = be.forward_dynamics(q, v, layout.force_from(objTorques, A, q))
        return layout.acceleration_from(q, v, a, A)
    bd.one_dof_only("calculateForwardDynamics")
    if bd.base is not None:
        q, v = _floating_state(bd, objPositions, objVelocities)
        tau = bd.base.force_from(bd.floating_args("objTorques", objTorques, 6))
        return bd.from_floating(bd.base.acceleration(v, be.forward_dynamics(q, v, tau)))
    q, qd, tau = (bd.to_model(v, label) for v, label in ((objPositions, "objPositions"),
                                                        (objVelocities, "objVelocities"), (objTorques, "objTorques")))
    return as_tuple(bd.from_model(be.forward_dynamics(q, qd, tau)))


DROP_INS = ("calculateInverseDynamics", "calculateMassMatrix", "calculateJacobian", "calculateGravity",
            "calculateBiasForces", "calculateCoriolisMatrix", "calculateForwardDynamics")
"""The functions :func:`install` puts in place (the first three replace pybullet's own)."""


def install(target, backend: Optional[str] = None):
    """Put the drop-ins on ``target``: the ``pybullet`` module, or a
    ``pybullet_utils.bullet_client.BulletClient``, whose calls then reach ours with its own
    client id (a BulletClient adds ``physicsClientId`` to pybullet's built-in functions only,
    so a module-level swap alone cannot know which client a BulletClient call is for).
    ``backend`` names the backend for every call (default ``newton_euler``).  Returns
    ``target``; ``pybullet.calculateMassMatrix(...)`` or ``client.calculateMassMatrix(...)``
    then run ours with pybullet's arguments."""
    for name in DROP_INS:
        function = globals()[name]
        chosen = backend if backend is not None and "backend" in inspect.signature(function).parameters else None
        if chosen is None and not hasattr(target, "_client"):       # calculateJacobian is kinematics: no backend
            setattr(target, name, function)
        else:
            setattr(target, name, _bound(function, target, chosen))
    return target


def _bound(function, target, backend: Optional[str]):
    """``function`` with ``backend`` and, for a BulletClient ``target``, its client id as it
    is at each call (``disconnect`` makes it −1: the call is then refused, as pybullet's own
    methods refuse it, rather than answered for a client that took the old id)."""
    import functools

    @functools.wraps(function)
    def call(*args, **kwargs):
        bound = {} if backend is None else {"backend": backend}
        if hasattr(target, "_client"):
            bound["physicsClientId"] = target._client
        return function(*args, **{**bound, **kwargs})

    return call


__all__ = ["BodyDynamics", "DROP_INS", "DynamicsStepper", "FrictionInjector", "body_dynamics", "body_urdf",
           "c_level_output_silenced", "calculateBiasForces", "calculateCoriolisMatrix", "calculateForwardDynamics",
           "calculateGravity", "calculateInverseDynamics", "calculateJacobian", "calculateMassMatrix", "configure_reference_body",
           "connected_clients", "install", "resolve_client", "step_together"]


# -- stepping a body with our dynamics, or injecting our friction into pybullet's ------------


STEPPABLE = 1e150
"""The largest |q| and |q̇| a stepper writes into a scene: pybullet squares velocities (its
Coriolis and kinetic terms), which overflow float64 beyond 1e154."""


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

    A floating body (loaded without ``useFixedBase``) or one with spherical joints is
    stepped whole, in pybullet's multi-DOF layout (:mod:`dyn_plugin.pybullet_layout`, what
    ``calculateMassMatrix(..., flags=1)`` takes): :meth:`step` takes the forces in that
    layout (base 7 entries, 4 per spherical joint, 0 on the padding; what
    ``PDControllerStableMultiDof.computePD`` returns) and returns positions and velocities
    in it; the velocity step is the same, then q⁺ = q ⊕ h q̇⁺ on the configuration manifold
    (:func:`dyn_plugin.configuration.integrate`: the base and each spherical joint along the
    exponential of its body velocity), and the base pose, its world velocities and each
    joint's state are written back.  Friction and damping act on the revolute and prismatic
    joints only (friction laws are per one-dof joint); a body with spherical joints is
    stepped by ``newton_euler`` unless ``backend`` names another rigid-body backend (a
    friction backend is refused for it).

    What it does not do: contacts and constraints acting *on this body* (pybullet's
    collision response to it is overwritten each step — a floating body falls through the
    floor; other bodies still bounce off it), and pybullet's joint limits, joint-speed cap
    (100 rad/s by default), link damping and motors for it.
    """

    def __init__(self, body: int, backend: Optional[str] = None, physicsClientId: Optional[int] = None,
                 friction=None, profile=None, substeps: int = 1, damping=None, **options):
        """``backend``: by default ``newton_euler_friction`` (``newton_euler`` for a body with
        spherical joints); ``friction``/``profile`` as for the friction backends; ``substeps``
        (int ≥ 1) sub-steps per time step; ``damping`` as above (backends without friction
        only); other ``options`` go to the backend."""
        p = import_pybullet()
        self._p = p
        bd = body_dynamics(body, physicsClientId)
        self._choices = (backend or ("newton_euler" if bd.spherical else "newton_euler_friction"), friction, profile,
                         damping, options)
        self.substeps = _substeps(substeps)
        self._build(bd, options.get("gravity"))
        law = getattr(getattr(self.backend, "friction", None), "dynamic", None)
        self.friction_state = None if law is None else np.zeros(law.n)
        self.steps, self.time = 0, 0.0
        motors_off(p, bd)

    def _build(self, bd: BodyDynamics, gravity) -> None:
        """The backend, layout and damping for ``bd`` under ``gravity`` (None: the client's,
        in the base frame)."""
        name, friction, profile, damping, options = self._choices
        self.dynamics, self._gravity = bd, (gravity_in_base(self._p, bd) if gravity is None else gravity)
        self.layout = MultiDofLayout(bd) if bd.base is not None or bd.spherical else None
        options = {**options, "gravity": self._gravity, **friction_options(bd.model, name, friction, profile)}
        self.backend = get_backend(name, bd.model, **options)
        self.damping = _damping(bd, self.backend, damping, self.layout is not None)
        law = getattr(getattr(self.backend, "friction", None), "dynamic", None)
        if law is not None and self.layout is not None:
            raise InputError(f"DynamicsStepper: {bd.label} has a floating base or spherical joints; friction model "
                             f"{self.backend.friction.name!r} has a {law.law} law, whose implicit step is written for "
                             "fixed-base bodies of revolute and prismatic joints: use a law without bristles")

    def _follow_body(self) -> None:
        """Before each step: the body as pybullet holds it now and the client's gravity now
        (``setGravity``, ``changeDynamics``, a fixed base moved by
        ``resetBasePositionAndOrientation`` since the stepper was made rebuild the backend,
        as the drop-in functions do); a body of other joints at this id is refused."""
        bd = same_body_now(self.dynamics, "DynamicsStepper", "stepper")
        gravity = self._choices[4].get("gravity")
        if gravity is None:
            gravity = gravity_in_base(self._p, bd)
        if bd is not self.dynamics or not np.array_equal(gravity, self._gravity):
            self._build(bd, gravity)

    def step(self, torques, step_scene: bool = True) -> tuple:
        """Apply joint torques (dof,) N·m (N) for one time step — for a floating body or one
        with spherical joints, forces in pybullet's multi-DOF layout (see the class
        docstring); returns the new (positions, velocities) as tuples in the same layout.
        ``step_scene=False`` leaves ``stepSimulation`` out, for a scene with nothing else
        to step.  Several steppers in one scene: :func:`step_together` (each of them
        reading its body before the scene's step and writing it after; a stepper that
        reads a body the scene has already stepped steps it twice)."""
        write = self._prepared(torques)
        if step_scene:
            self._p.stepSimulation(physicsClientId=self.dynamics.client)
        return write()

    def _prepared(self, torques):
        """The body's next state from its state now: a function that writes it to the scene
        and returns it (:meth:`step`'s answer)."""
        self._follow_body()
        p, bd = self._p, self.dynamics
        dt = time_step(p, bd.client)
        if self.layout is not None:
            return self._prepared_whole(p, torques, dt)
        q, qd = joint_state(p, bd)
        tau = bd.to_model(torques, "torques")
        q_next, qd_next = self._advance(q, qd, tau, dt)
        self.friction_state = self._friction_state_after

        def write() -> tuple:
            for j, qi, vi in zip(bd.joint_indices, bd.from_model(q_next), bd.from_model(qd_next)):
                p.resetJointState(bd.body, j, float(qi), float(vi), physicsClientId=bd.client)
            self.steps, self.time = self.steps + 1, self.time + dt
            return as_tuple(bd.from_model(q_next)), as_tuple(bd.from_model(qd_next))
        return write

    def _prepared_whole(self, p, forces, dt: float):
        """:meth:`_prepared` of a floating body or one with spherical joints (multi-DOF layout)."""
        bd, layout = self.dynamics, self.layout
        q, v = read_state(p, bd, layout)
        tau = layout.force_from(forces, layout.velocity_map(q), q)
        q_next, v_next = (x[None] for x in self._advance(q[0], v[0], tau[0], dt))

        def write() -> tuple:
            write_state(p, bd, layout, q_next, v_next)
            self.steps, self.time = self.steps + 1, self.time + dt
            return layout_state(p, bd, layout, q_next, v_next)
        return write

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
            q = q + h * qd if self.layout is None else integrate(self.dynamics.model, q[None], h * qd[None])[0]
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
        """A state pybullet can step: finite, and no entry beyond STEPPABLE (a torque of 1e300
        N·m gave q̇ = 1.4e297 rad/s, written into the scene, which pybullet's next step
        made NaN in every joint and the base's pose)."""
        if self.layout is not None:
            check_finite(self.dynamics.model, q[None], qd[None], self._where(dt), self._advice(dt))
            largest = max(np.abs(q).max(), np.abs(qd).max())
            if largest > STEPPABLE:
                raise SimulationError(f"{self._where(dt)}: the body's state would reach {largest:.3g} (pybullet steps "
                                      f"states up to {STEPPABLE:g}); {self._advice(dt)}")
            return
        bad = ~(np.abs(q) <= STEPPABLE) | ~(np.abs(qd) <= STEPPABLE)      # NaN and inf too
        if bad.any():
            i = int(np.argmax(bad))
            bd = self.dynamics
            joint = bd.joint_indices[int(np.nonzero(bd.dof_to_model == i)[0][0])]
            raise SimulationError(f"{self._where(dt)}: joint {bd.model.joint_names[i]!r} (pybullet joint {joint}) "
                                  f"would get q = {q[i]:.3g}, q̇ = {qd[i]:.3g} (pybullet steps states up to "
                                  f"{STEPPABLE:g}); {self._advice(dt)}")

    def _advice(self, dt) -> str:
        return (f"nothing was written to the scene; the time step {dt:g} s in {self.substeps} sub-step(s) is too "
                "large for this body: raise substeps or lower fixedTimeStep")

    def _where(self, dt) -> str:
        bd = self.dynamics
        return (f"DynamicsStepper: body {bd.body} ({bd.model.name}) diverged at step {self.steps + 1} "
                f"(t = {self.time + dt:.6g} s since the stepper started)")


def step_together(steppers, torques) -> list:
    """One time step of a scene with several :class:`DynamicsStepper` bodies: every body's
    next state from its state before the step (``torques``: one entry per stepper, as
    :meth:`DynamicsStepper.step` takes them), the scene stepped once, then every body
    written.  Returns each stepper's (positions, velocities).  A stepper's own
    ``step()`` after the scene's step read a body pybullet had already moved: two PUMA-560s
    in one scene ended 2.2 rad from one stepped alone after 0.25 s."""
    steppers = list(steppers)
    torques = list(torques)
    if len(torques) != len(steppers):
        raise InputError(f"step_together needs one torque vector per stepper: {len(steppers)} steppers, "
                         f"{len(torques)} torque vectors")
    clients = {stepper.dynamics.client for stepper in steppers}
    if len(clients) > 1:
        raise InputError(f"step_together steps one scene: these steppers are in clients {sorted(clients)}")
    if not steppers:
        return []
    writes = [stepper._prepared(tau) for stepper, tau in zip(steppers, torques)]
    steppers[0]._p.stepSimulation(physicsClientId=clients.pop())
    return [write() for write in writes]


def _substeps(substeps) -> int:
    if isinstance(substeps, bool) or not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise InputError(f"substeps must be an integer >= 1, got {substeps!r}")
    return int(substeps)


def _damping(bd: BodyDynamics, backend, damping, whole: bool) -> np.ndarray:
    """Viscous joint damping for a backend without friction: (n,) in model order, or with
    ``whole`` (a floating body, spherical joints) (nv,) on the model's velocity entries (each
    revolute or prismatic joint's; 0 on the base's and a spherical joint's); zeros for a
    friction backend (whose friction model holds it)."""
    size = bd.model.nv if whole else bd.model.n
    if type(backend).can("stepping"):
        if damping is not None:
            raise InputError(f"{backend.name}: damping= is for backends without friction; a friction backend's "
                             "viscous friction is its damping (pass friction=FrictionModel.create(n, viscous=...))")
        return np.zeros(size)
    if damping is None:
        values = np.asarray(bd.model.damping, dtype=float)
        values = values[bd.dof_to_model] if whole else values.copy()
    else:
        values = _pybullet_order(bd, damping, "damping") if whole else bd.to_model(damping, "damping")
        if np.any(values < 0):
            raise InputError(f"body {bd.body}: damping must be >= 0 N·m·s/rad, got {list(damping)!r}")
    if not whole:
        return values
    out = np.zeros(size)
    out[[bd.model.joint_slices[k][1].start for k in bd.dof_to_model]] = values
    return out


def _pybullet_order(bd: BodyDynamics, values, label: str) -> np.ndarray:
    """(dof,) finite values, one per revolute or prismatic joint in pybullet's order."""
    array = np.asarray(values, dtype=float)
    if array.shape != (bd.dof,) or not np.all(np.isfinite(array)):
        raise InputError(f"{bd.label} has {bd.dof} revolute or prismatic joints: {label} must be {bd.dof} finite "
                         f"numbers in pybullet's joint order, got {values!r}")
    return array
