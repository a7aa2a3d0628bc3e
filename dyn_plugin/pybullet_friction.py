"""Our friction model acting on a body that pybullet keeps integrating
(:class:`FrictionInjector`), and the friction a pybullet body gets by default
(:func:`friction_options`, which :class:`~dyn_plugin.pybullet_bridge.DynamicsStepper`
uses too).

pybullet has two of our laws itself: viscous friction is its ``jointDamping`` (an
explicit −b_v q̇ on a revolute or prismatic joint; it does nothing on a spherical joint),
and Coulomb friction is a velocity motor with targetVelocity 0 whose maximum force is the
level (its constraint solver applies it as a velocity-level impulse: stiction and stopping
are exact).  tests/test_friction_pybullet.py measures both against our friction backends.
"""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np

from .backends.pybullet_backend import import_pybullet
from .backends.registry import backend_class, get_backend
from .errors import InputError, ModelError
from .friction.parameters import load_friction, resolve_friction
from .pybullet_bodies import BodyDynamics, as_tuple, body_dynamics, gravity_in_base, same_body_now
from .pybullet_layout import MultiDofLayout
from .pybullet_state import joint_state, motors_off, read_state, time_step
from .robots import BUNDLED, load_robot


def friction_options(model, backend: str, friction, profile) -> dict:
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


class FrictionInjector:
    """Our friction model acting on a body that pybullet keeps integrating.

    Call :meth:`apply` with the forces you want, then ``stepSimulation`` (every step: pybullet
    clears applied torques and external forces after each).  The parts act as follows:

    * viscous b_v q̇ → pybullet's ``jointDamping`` (exactly an explicit −b_v q̇);
    * dry friction (Coulomb, Schilling's static term, transmission breakaway) → the velocity
      motor with targetVelocity 0 and force = the level at the current speed: pybullet's
      constraint solver applies it as a velocity-level impulse, so stiction and stopping are
      exact for symmetric levels.  For asymmetric levels the motor uses the level of the
      current direction of motion (at rest: of the direction in which the frictionless
      forward dynamics of the whole body, viscous friction included, accelerates the joint);
    * load-dependent friction (bearings, efficiency) → an explicit torque from the joint
      loads at the previous step's acceleration (a one-step lag); fixed-base bodies of
      revolute and prismatic joints only (below).

    A fixed-base body of revolute and prismatic joints takes joint torques (dof,) N·m (N) in
    pybullet's joint order (flags=0) and its friction model is that of a friction backend
    (``newton_euler_friction``: :attr:`backend`).

    A floating body (loaded without ``useFixedBase``) or one with spherical joints takes forces
    in pybullet's multi-DOF layout (:mod:`dyn_plugin.pybullet_layout`, as
    :class:`~dyn_plugin.pybullet_bridge.DynamicsStepper` does): the base's 7 entries are a
    force (N) at its centre of mass and a moment (N·m), both in the world, put on the base
    with ``applyExternalForce``/``applyExternalTorque`` (0 on the padding; a fixed base's are
    all padding), each spherical joint's 4 a torque in its child's frame (then 0), one per
    revolute or prismatic joint.  Friction laws are per one-dof joint, so friction acts on the
    revolute and prismatic joints only and a spherical joint gets none: its default motor
    (pybullet holds it at the identity) is switched off and a friction model that gives one
    any friction or armature is refused (ModelError naming the joint: build it with
    ``FrictionModel.create(model, coulomb={"left_knee": 2.0, ...})``, ``model`` =
    ``injector.dynamics.model``).  The heading at rest comes from :attr:`backend`, the rigid
    ``newton_euler`` backend of the whole body (floating base and spherical joints
    included), and the levels from the friction model's own laws (:attr:`friction`).  Such a
    body takes no bearing or transmission friction (ModelError): the load-dependent laws
    need the joint reaction wrenches of a fixed-base friction backend, which refuses
    spherical joints and floating bases for them (:mod:`dyn_plugin.backends.floating_base`,
    :mod:`dyn_plugin.backends.multi_dof_backend`).  pybullet's solver couples such a body's
    motors and with its default single inner iteration does not converge them: a joint held
    by friction creeps (humanoid, levels 10⁴ N·m: 7e-5 rad/s after 1 s) and the friction
    of a step is off by O(1) in the acceleration; with ``setPhysicsEngineParameter(
    numNonContactInnerIterations=10)`` stiction is exact (≤ 1e-13 rad/s) and a step equals
    DynamicsStepper's with the same friction to O(h²).  The injector warns when the client
    runs fewer (it does not change a scene's solver itself).

    Dynamic laws (LuGre, Dahl) are refused (pybullet's motors have no bristle state: step the
    body with DynamicsStepper); an armature is warned about (pybullet has no rotor inertia).
    """

    def __init__(self, body: int, friction=None, physicsClientId: Optional[int] = None, profile=None):
        """``friction``, ``profile``: as for the friction backends (a FrictionModel of the
        body's model joints, a data file, ``"urdf"``, ``"none"``; by default a bundled robot's
        data file, else the body's URDF ``<dynamics>``)."""
        p = import_pybullet()
        self._p = p
        self.dynamics = bd = body_dynamics(body, physicsClientId)
        gravity = gravity_in_base(p, bd)
        self.layout = MultiDofLayout(bd) if bd.base is not None or bd.spherical else None
        if self.layout is None:
            self.backend = get_backend("newton_euler_friction", bd.model, gravity=gravity,
                                       **friction_options(bd.model, "newton_euler_friction", friction, profile))
            self.friction = self.backend.friction
        else:
            self.backend = bd.backend("newton_euler", gravity)
            self.friction = _joint_friction(bd, friction, profile)
        _check_law(self.friction)
        for j, c in zip(bd.joint_indices, bd.from_model(self.friction.velocity.viscous)):
            p.changeDynamics(body, j, jointDamping=float(c), physicsClientId=bd.client)
        if self.layout is not None:
            _check_solver(p, bd)
            motors_off(p, bd)
            self._entries = np.array([bd.model.joint_slices[k][1].start for k in bd.dof_to_model], dtype=int)
        self._previous = None  # q̇ of the last step, for the acceleration estimate
        self._gravity = gravity

    def _follow_body(self) -> None:
        """Before each step: the body as pybullet holds it now and the client's gravity now
        (``setGravity``, ``changeDynamics`` since the injector was made rebuild the rigid
        backend, with the same friction model; bearing and transmission friction read its
        joint loads); a body of other joints at this id is refused."""
        bd = same_body_now(self.dynamics, "FrictionInjector", "injector")
        gravity = gravity_in_base(self._p, bd)
        if bd is self.dynamics and np.array_equal(gravity, self._gravity):
            return
        self.dynamics, self._gravity = bd, gravity
        self.backend = (get_backend("newton_euler_friction", bd.model, gravity=gravity, friction=self.friction)
                        if self.layout is None else bd.backend("newton_euler", gravity))

    def apply(self, torques) -> None:
        """Set this step's forces plus our friction; then call stepSimulation.  ``torques``:
        joint torques (dof,) of a fixed-base body, or forces in pybullet's multi-DOF layout
        (see the class docstring)."""
        self._follow_body()
        if self.layout is not None:
            return self._apply_whole(torques)
        p, bd, be = self._p, self.dynamics, self.backend
        q, qd = joint_state(p, bd)
        tau = bd.to_model(torques, "torques")

        def frictionless():
            return be.bare.forward_dynamics(q, qd, tau - self.friction.velocity.viscous * qd)
        self._set_motors(self._level(qd, frictionless), tau - self._load_dependent(q, qd))

    def _apply_whole(self, forces) -> None:
        """:meth:`apply` of a floating body or one with spherical joints (multi-DOF layout)."""
        bd, layout = self.dynamics, self.layout
        q, v = read_state(self._p, bd, layout)
        A = layout.velocity_map(q)
        tau = layout.force_from(forces, A, q)[0]
        qd = np.zeros(bd.model.n)
        qd[bd.dof_to_model] = v[0, self._entries]
        driving = tau.copy()
        driving[self._entries] -= bd.from_model(self.friction.velocity.viscous * qd)

        def frictionless():
            out = np.zeros(bd.model.n)
            out[bd.dof_to_model] = self.backend.forward_dynamics(q[0], v[0], driving)[self._entries]
            return out
        self._set_motors(self._level(qd, frictionless), _joint_torques(bd, tau, self._entries))
        self._push_spherical_joints_and_base(tau, np.array(layout.force(tau[None], A)))

    def _push_spherical_joints_and_base(self, tau: np.ndarray, forces: np.ndarray) -> None:
        """Each spherical joint's torque of τ (nv,) (its child frame) and a floating base's
        force and moment of the multi-DOF forces (size,) (world, at its centre of mass)."""
        p, bd = self._p, self.dynamics
        for joint, k in bd.moving:
            if bd.model.joint_types[k] == "spherical":
                moment = [float(x) for x in tau[bd.model.joint_slices[k][1]]]
                p.setJointMotorControlMultiDof(bd.body, joint, p.TORQUE_CONTROL, force=moment,
                                               physicsClientId=bd.client)
        if bd.base is not None and np.any(forces[0:6] != 0):
            centre, _ = p.getBasePositionAndOrientation(bd.body, physicsClientId=bd.client)
            p.applyExternalForce(bd.body, -1, [float(x) for x in forces[0:3]], centre, p.WORLD_FRAME,
                                 physicsClientId=bd.client)
            p.applyExternalTorque(bd.body, -1, [float(x) for x in forces[3:6]], p.WORLD_FRAME,
                                  physicsClientId=bd.client)

    def _level(self, qd: np.ndarray, frictionless) -> np.ndarray:
        """The dry-friction level (n,) of each joint's heading: its direction of motion, at
        rest (|q̇| ≤ RESTING_SPEED) that of its frictionless acceleration (``frictionless()``,
        (n,) rad/s²; computed only when a joint at rest has levels that differ by direction)."""
        positive, negative = self.friction.levels(qd)
        resting = np.abs(qd) <= RESTING_SPEED
        if not np.any(resting & (positive != negative)):
            return np.where(qd > 0, positive, negative)
        heading = np.where(resting, frictionless(), qd)
        return np.where(heading > 0, positive, negative)

    def _set_motors(self, level: np.ndarray, tau: np.ndarray) -> None:
        """Velocity motors at the dry-friction levels and joint torques τ, both (n,) in model
        order, on the revolute and prismatic joints."""
        p, bd = self._p, self.dynamics
        p.setJointMotorControlArray(bd.body, bd.joint_indices, p.VELOCITY_CONTROL, targetVelocities=[0.0] * bd.dof,
                                    forces=as_tuple(bd.from_model(level)), physicsClientId=bd.client)
        p.setJointMotorControlArray(bd.body, bd.joint_indices, p.TORQUE_CONTROL,
                                    forces=as_tuple(bd.from_model(tau)), physicsClientId=bd.client)

    def _load_dependent(self, q, qd) -> np.ndarray:
        """Bearing friction and efficiency losses at the last step's acceleration."""
        if not self.friction.load_dependent:
            return np.zeros_like(q)
        dt = time_step(self._p, self.dynamics.client)
        qdd = np.zeros_like(q) if self._previous is None else (qd - self._previous) / dt
        self._previous = qd
        parts = self.backend.inverse_dynamics_breakdown(q, qd, qdd)
        breakaway = 0.0 if self.friction.transmission is None else \
            np.sign(qd) * self.friction.transmission.breakaway
        return parts.bearing + parts.transmission - breakaway


RESTING_SPEED = 1e-9
"""rad/s (m/s): a joint this slow is at rest for the choice of its dry-friction level.  pybullet's
velocity motor leaves a stopped joint at solver residue (−7.7e-14 rad/s seen on the PUMA-560's
joint 2), whose sign picked the backward level (7.66 N·m where the forward one is 13.59): the
joint slipped, stopped and slipped again, its velocity changing sign on 239 of 240 steps."""


def _joint_torques(bd: BodyDynamics, tau: np.ndarray, entries: np.ndarray) -> np.ndarray:
    """The revolute and prismatic joints' torques (n,) in model order (0 elsewhere) of τ (nv,)."""
    out = np.zeros(bd.model.n)
    out[bd.dof_to_model] = tau[entries]
    return out


def _joint_friction(bd: BodyDynamics, friction, profile):
    """The FrictionModel (the body's n model joints) of a floating body or one with spherical
    joints: velocity friction and armature on its revolute and prismatic joints only."""
    joints = bd.model.with_floating_base(False) if bd.base is not None else bd.model
    options = friction_options(joints, "newton_euler_friction", friction, profile)
    model = resolve_friction(joints, options["friction"], options.get("profile"))
    if model.bearing is not None or model.transmission is not None:
        raise ModelError(f"FrictionInjector: {bd.label} has a floating base or spherical joints; friction model "
                         f"{model.name!r} has bearing or transmission friction, whose loads need the joint reaction "
                         "wrenches of a fixed-base friction backend: give velocity friction (viscous, Coulomb, "
                         "static, Stribeck) only")
    v = model.velocity
    for k in bd.spherical:
        given = {"viscous": v.viscous[k], "coulomb": v.coulomb_positive[k], "coulomb_negative": v.coulomb_negative[k],
                 "static": v.static_positive[k], "static_negative": v.static_negative[k],
                 "armature": model.armature[k]}
        named = next(((key, value) for key, value in given.items() if value != 0), None)
        if named is not None:
            raise ModelError(f"FrictionInjector: friction model {model.name!r} gives spherical joint "
                             f"{bd.model.joint_names[k]!r} of {bd.label} {named[0]} = {named[1]:g}; friction laws "
                             "are per revolute or prismatic joint and a spherical joint gets none: give values for "
                             "those joints only (FrictionModel.create(model, coulomb={joint name: level}))")
    return model


def _check_law(friction) -> None:
    """Refuse a dynamic law; warn about an armature."""
    if friction.dynamic is not None:
        raise InputError(f"FrictionInjector: friction model {friction.name!r} has a {friction.dynamic.law} law, "
                         "which pybullet's velocity motors and jointDamping cannot act out (they have no bristle "
                         "state): step the body with DynamicsStepper")
    if np.any(friction.armature > 0):
        warnings.warn(f"FrictionInjector: pybullet's body has no rotor inertia; the armature of friction "
                      f"model {friction.name!r} is not added to it", UserWarning, stacklevel=3)


MOTOR_ITERATIONS = 10
"""numNonContactInnerIterations at which pybullet's velocity motors on a floating body or one
with spherical joints hold exactly (measured: tests/test_pybullet_friction_whole.py)."""


def _check_solver(p, bd: BodyDynamics) -> None:
    """Warn when pybullet's solver will not converge the motors of a whole body."""
    iterations = p.getPhysicsEngineParameters(physicsClientId=bd.client)["numNonContactInnerIterations"]
    if iterations < MOTOR_ITERATIONS:
        warnings.warn(f"FrictionInjector: {bd.label} has a floating base or spherical joints, whose velocity motors "
                      f"pybullet's solver couples; with numNonContactInnerIterations={iterations} it does not "
                      f"converge them (a joint held by friction creeps, dry friction is off by O(1) in the "
                      f"acceleration): call setPhysicsEngineParameter(numNonContactInnerIterations="
                      f"{MOTOR_ITERATIONS}) on client {bd.client}", UserWarning, stacklevel=3)
