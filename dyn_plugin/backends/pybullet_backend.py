"""pybullet behind the Backend interface, configured as a fair reference.

Loaded in its own DIRECT client with ``URDF_USE_INERTIA_FROM_FILE`` (otherwise pybullet
recomputes inertia from collision shapes), gravity set, the default joint motors disabled
(a velocity motor with targetVelocity 0 is pybullet's joint friction), and linear, angular
and joint damping zeroed (pybullet Quickstart Guide: loadURDF flags,
setJointMotorControl2, changeDynamics), so that it computes the rigid body alone, as
pinocchio does.  Joints are matched by name.  A fixed-base model is loaded with
``useFixedBase``; a floating-base one without it, and :class:`PybulletBase` converts
between pybullet's coordinates of the free base and ours (:mod:`dyn_plugin.floating`).

pybullet's floating base, as measured here (pybullet 3.2.7, bullet3 at 6c888f4, 2025-01)
--------------------------------------------------------------------------------------
pybullet keeps the base at its *inertial frame* C: origin at the base link's centre of
mass c, axes R_i, the pose ``getDynamicsInfo(body, -1)[3:5]`` in the URDF base frame
(the base link alone: links fixed to it are links of their own).  With R the URDF base
frame's orientation (ours), p_o its origin, v = [v_o, ω] our base velocity (base frame):

* ``getBasePositionAndOrientation`` / ``resetBasePositionAndOrientation``: p_c = p_o + R c
  and the orientation R R_i of C (not the URDF frame; ``loadURDF(basePosition=...)`` alone
  places the URDF frame);
* ``getBaseVelocity`` / ``resetBaseVelocity``: the world-frame velocity of the base's
  centre of mass R (v_o + ω × c), and the world-frame angular velocity R ω;
* ``calculateMassMatrix(body, joint positions (n))``: (n + 6)², the base block first in
  u = [R_iᵀ ω, R_iᵀ (v_o + ω × c)], *angular first*, both in C (Bullet's
  ``MultiBodyTree`` FLOATING joint; the base pose does not enter);  u = T v with
  T = [[0, R_iᵀ], [R_iᵀ, −R_iᵀ[c]×]] on the base, so M_ours = Tᵀ M_pb T;
* ``calculateInverseDynamics(body, q (n + 7), u (n + 6), u̇ (n + 6))``: q = [p_c,
  quaternion of R R_i, joints], u as above, u̇ = [R_iᵀ ω̇, the *classical* acceleration of
  the centre of mass in C: R_iᵀ (a_lin + ω × v_o + ω̇ × c + ω × (ω × c))] (not the time
  derivative of u's components), and the answer is [force (3), moment (3) at c in C,
  joint torques] — *linear first*, unlike u: pybullet swaps the base entries of the
  output only (PhysicsServerCommandProcessor::processInverseDynamicsCommand);
* its gravity on a floating base is wrong away from rotations about one axis: the
  quaternion becomes Euler angles (roll x, pitch y, yaw z) with R = R_z R_y R_x, but the
  tree rebuilds the rotation as (R_x R_y R_z)ᵀ for world → base (MultiBodyTreeImpl.cpp,
  FLOATING), so the gravity it applies is (R_x R_y R_z)ᵀ g instead of (R_z R_y R_x)ᵀ g
  (measured: equal to that formula to round-off).  Here every call therefore passes the
  identity orientation with the gravity set to its value in C, (R R_i)ᵀ g: exact;
* stepping (btMultiBody): semi-implicit Euler on the *world-frame* velocity of the base's
  centre of mass and the world angular velocity (v_c⁺ = v_c + dt p̈_c, ω⁺ = ω + dt ω̇),
  then p_c⁺ = p_c + dt v_c⁺ (a straight line) and the orientation by the exponential of
  dt ω⁺ (btMultiBody::stepPositionsMultiDof).  The rotation, the angular velocity and
  the joints follow exactly our scheme (v⁺ = v + dt FD, q⁺ = integrate(q, dt v⁺)); the
  base's translation differs by O(dt²) a step (a straight line of the centre of mass
  against the SE(3) exponential's helix of the base origin): :meth:`PybulletBase.bullet_step`
  is pybullet's scheme in our coordinates.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
import weakref
from pathlib import Path

import numpy as np

from .. import floating
from ..arrays import state_args
from ..errors import BackendError, ModelError, PhysicalValidityWarning
from ..urdf import urdf_text
from .base import Backend
from .pybullet_base import PybulletBase


@contextlib.contextmanager
def c_level_output_silenced():
    """Silence what C code prints on file descriptors 1 and 2 (pybullet's build banner,
    its b3Warning lines); Python-level output is unaffected outside the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [devnull]:
            os.close(fd)


MAX_DEGREE_OF_FREEDOM = 128
"""pybullet's limit on a body's positions and links (MAX_DEGREE_OF_FREEDOM, MAX_NUM_LINKS in
its SharedMemoryPublic.h): beyond it, state queries fail and inverse dynamics is wrong."""


def import_pybullet():
    """pybullet, imported without its build-time banner on stdout (once: the drop-ins call
    this at every call, and silencing the output costs four system calls)."""
    module = sys.modules.get("pybullet")
    if module is None:
        with c_level_output_silenced():
            import pybullet as module
    return module


def _close(client, tmpdir, pybullet):
    try:
        pybullet.disconnect(physicsClientId=client)
    except Exception:  # already disconnected at interpreter exit
        pass
    tmpdir.cleanup()


def _without_geometry(text: str) -> str:
    """URDF ``text`` without its ``<visual>`` and ``<collision>`` elements (unchanged if it has none)."""
    from ..urdf.reading import parse_xml

    root, _ = parse_xml(text, "<pybullet's copy>")
    shapes = [element for element in root.iter("visual", "collision") if element.getparent().tag == "link"]
    for element in shapes:
        element.getparent().remove(element)
    if not shapes:
        return text
    from lxml import etree

    return etree.tostring(root, encoding="unicode")


class PybulletBackend(Backend):
    """pybullet's calculateInverseDynamics and calculateMassMatrix, and its stepping.

    A floating-base model is served natively (capability ``floating_base``): q, v, a and τ
    in our convention (:mod:`dyn_plugin.floating`), converted to and from pybullet's by
    :class:`PybulletBase` (its coordinates, and its one wrong term, gravity on a turned
    base, in the module docstring).  The body floats in an empty world: no plane, no
    contacts; gravity is the model's (world frame).
    """

    name = "pybullet"
    description = "reference: pybullet calculateInverseDynamics / calculateMassMatrix (DIRECT client)"
    kind = "reference"
    capabilities = frozenset({"floating_base"})

    def __init__(self, model, gravity=None):
        super().__init__(model, gravity)
        if model.multi_dof_indices:
            i = model.multi_dof_indices[0]
            raise ModelError(f"the pybullet backend maps states joint by joint with one-dof joints only; joint "
                             f"{model.joint_names[i]!r} of robot {model.name!r} is {model.joint_types[i]}: compare such "
                             "a robot with pinocchio")
        for note in model.pybullet_alterations():
            warnings.warn(f"{model.name}: {note}; pybullet results will differ from the model",
                          PhysicalValidityWarning, stacklevel=3)
        pybullet = import_pybullet()
        self._p = pybullet
        self.client = pybullet.connect(pybullet.DIRECT)
        tmpdir = tempfile.TemporaryDirectory(prefix="dyn_plugin_pb_")
        weakref.finalize(self, _close, self.client, tmpdir, pybullet)
        self.urdf_path = self._urdf_file(Path(tmpdir.name))
        try:
            self.body = self._load(self.urdf_path)
        except pybullet.error as exc:
            if self.urdf_path == self._geometry_free(Path(tmpdir.name)):
                raise BackendError(f"pybullet cannot load model {self.model.name!r}: {exc}") from None
            try:                       # the model's own file names meshes that are not there
                self.urdf_path = self._geometry_free(Path(tmpdir.name))
                self.body = self._load(self.urdf_path)
            except pybullet.error as again:
                raise BackendError(f"pybullet cannot load model {self.model.name!r}: {again}") from None
        self._refuse_too_many_joints()
        configure_reference_body(pybullet, self.body, self.model.gravity, self.client)
        self.base = self._floating_base() if self.model.floating_base else None
        self._gravity_for_inverse_dynamics = None     # a floating base sets it per state
        if self.base is None:
            # calculateInverseDynamics applies the world gravity vector in the base link's
            # inertial frame (a pybullet quirk on fixed bases): rotate it so the effect is right.
            base_inertial = pybullet.getDynamicsInfo(self.body, -1, physicsClientId=self.client)[4]
            R = np.array(pybullet.getMatrixFromQuaternion(base_inertial)).reshape(3, 3)
            self._gravity_for_inverse_dynamics = R.T @ self.model.gravity
            pybullet.setGravity(*self._gravity_for_inverse_dynamics, physicsClientId=self.client)
        self._map_joints()
        self._motor_friction = None

    def _refuse_too_many_joints(self) -> None:
        """pybullet's commands carry at most MAX_DEGREE_OF_FREEDOM positions and links: a body
        of 128 links has no joint state (getJointState fails), and a floating one of 123
        joints (130 positions) gets inverse dynamics 0.34 off, silently."""
        links = self._p.getNumJoints(self.body, physicsClientId=self.client)
        positions = self.model.n + (7 if self.model.floating_base else 0)
        if links >= MAX_DEGREE_OF_FREEDOM or positions > MAX_DEGREE_OF_FREEDOM:
            raise BackendError(f"pybullet takes at most {MAX_DEGREE_OF_FREEDOM - 1} links and {MAX_DEGREE_OF_FREEDOM} "
                               f"positions per body (its MAX_DEGREE_OF_FREEDOM): model {self.model.name!r} has "
                               f"{links} links and {positions} positions; compare it with pinocchio")

    def _floating_base(self) -> PybulletBase:
        """The loaded body's :class:`PybulletBase`, after checking that pybullet frees it
        (it fixes a base of mass 0 even without useFixedBase) and weighs what the model
        does (it gives a link without <inertial> 1 kg), and with sleeping off (a slow
        free body would otherwise be frozen after a while)."""
        p, body, cid = self._p, self.body, self.client
        masses = [p.getDynamicsInfo(body, j, physicsClientId=cid)[0]
                  for j in range(-1, p.getNumJoints(body, physicsClientId=cid))]
        if masses[0] == 0:
            raise BackendError(f"pybullet cannot float model {self.model.name!r}: its base link "
                               f"{self.model.base_link!r} has mass 0, and pybullet fixes such a base to the world")
        if not np.isclose(sum(masses), self.model.total_mass(), rtol=1e-9, atol=0):
            warnings.warn(f"{self.model.name}: pybullet's body weighs {sum(masses):.9g} kg, the model "
                          f"{self.model.total_mass():.9g} kg (a link without <inertial>?); pybullet results will "
                          "differ from the model", PhysicalValidityWarning, stacklevel=4)
        p.changeDynamics(body, -1, activationState=p.ACTIVATION_STATE_DISABLE_SLEEPING, physicsClientId=cid)
        return PybulletBase.of_body(p, body, cid)

    def _urdf_file(self, tmpdir: Path) -> Path:
        """The model's own file when it holds exactly the reference text (meshes resolve),
        else a written copy of :func:`~dyn_plugin.urdf.urdf_text` without ``<visual>`` and
        ``<collision>`` elements: pybullet looks for a mesh next to the file it loads and
        refuses the whole file when one is missing (a locked or payload-carrying Panda:
        "Cannot load URDF file"), while its dynamics read only the ``<inertial>`` elements
        (``URDF_USE_INERTIA_FROM_FILE``) of a body alone in an empty world."""
        text, source = urdf_text(self.model), self.model.source_path
        if source and text == self.model.source_urdf and Path(source).is_file() and \
                Path(source).read_text(errors="replace") == text:
            return Path(source)
        return self._geometry_free(tmpdir)

    def _geometry_free(self, tmpdir: Path) -> Path:
        """The copy of :func:`~dyn_plugin.urdf.urdf_text` without geometry (see :meth:`_urdf_file`),
        written once: also what a model's own file becomes when its meshes are missing."""
        path = tmpdir / "robot.urdf"
        if not path.is_file():
            path.write_text(_without_geometry(urdf_text(self.model)))
        return path

    def _load(self, path: Path) -> int:
        p = self._p
        with c_level_output_silenced():
            return p.loadURDF(str(path), useFixedBase=not self.model.floating_base,
                              flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=self.client)

    def _map_joints(self):
        p, body, cid = self._p, self.body, self.client
        dof_names, dof_joints = [], []  # pybullet's DoF order: non-fixed joints by joint index
        for j in range(p.getNumJoints(body, physicsClientId=cid)):
            info = p.getJointInfo(body, j, physicsClientId=cid)
            if info[2] in (p.JOINT_REVOLUTE, p.JOINT_PRISMATIC):
                dof_names.append(info[1].decode())
                dof_joints.append(j)
        if sorted(dof_names) != sorted(self.model.joint_names):
            raise BackendError(f"pybullet's joints {dof_names} differ from the model's {list(self.model.joint_names)}")
        self._order = np.array([dof_names.index(name) for name in self.model.joint_names], dtype=int)  # ours -> theirs
        self.joint_indices = [dof_joints[k] for k in self._order]  # pybullet joint index of each of ours

    def _to_pb(self, x):
        out = np.empty(len(x))
        out[self._order] = x
        return out.tolist()

    def _base_and_joints(self, x):
        """A velocity-like vector (6 + n,) to pybullet's order: the base's 6, then its joints."""
        return [float(v) for v in x[:6]] + self._to_pb(x[6:])

    def _from_pb(self, rows: np.ndarray) -> np.ndarray:
        """pybullet's (N, 6 + n) rows (base first) to our joint order."""
        return np.concatenate([rows[:, :6], rows[:, 6:][:, self._order]], axis=1)

    def _batch_inverse_dynamics(self, q, qd, qdd):
        p, body, cid = self._p, self.body, self.client
        if self.base is not None:
            return self._floating_inverse_dynamics(q, qd, qdd)
        if self.model.n == 0:  # pybullet answers None for a body without degrees of freedom
            return np.zeros_like(q)
        rows = [p.calculateInverseDynamics(body, self._to_pb(a), self._to_pb(b), self._to_pb(c), physicsClientId=cid)
                for a, b, c in zip(q, qd, qdd)]
        return np.array(rows)[:, self._order]

    def _floating_inverse_dynamics(self, q, v, a):
        """pybullet's inverse dynamics of the free body at the identity orientation, with
        the gravity set to its value in the base's inertial frame (pybullet's own rotation
        of gravity is wrong, see the module docstring; the base's pose enters nowhere else)."""
        p, body, cid, base = self._p, self.body, self.client, self.base
        q = floating.unit_quaternions(q)
        u, du, gravity = base.velocity(v), base.acceleration(v, a), base.gravity(q, self.model.gravity)
        at_rest = [0.0] * 6 + [1.0]
        rows = []
        for k in range(len(q)):
            p.setGravity(*gravity[k], physicsClientId=cid)
            rows.append(p.calculateInverseDynamics(body, at_rest + self._to_pb(q[k, 7:]), self._base_and_joints(u[k]),
                                                   self._base_and_joints(du[k]), physicsClientId=cid))
        return base.force_from(self._from_pb(np.array(rows)))

    def _batch_gravity_torques(self, q):
        zero = np.zeros((len(q), self.model.nv))     # Backend's default takes zeros_like(q): nq wide on a floating base
        return self._batch_inverse_dynamics(q, zero, zero)

    def _batch_bias_forces(self, q, qd):
        return self._batch_inverse_dynamics(q, qd, np.zeros_like(qd))

    def _batch_mass_matrix(self, q):
        p, body, cid = self._p, self.body, self.client
        n, nv = self.model.n, self.model.nv
        if self.base is not None:    # pybullet takes the joint positions only: M does not depend on the base's pose
            order = np.concatenate([np.arange(6), 6 + self._order])
            M = np.array([np.reshape(p.calculateMassMatrix(body, self._to_pb(a[7:]), physicsClientId=cid), (nv, nv))
                          for a in q]).reshape(len(q), nv, nv)
            return self.base.mass_matrix_from(M[:, order][:, :, order])
        ix = np.ix_(self._order, self._order)
        return np.array([np.reshape(p.calculateMassMatrix(body, self._to_pb(a), physicsClientId=cid), (n, n))[ix]
                         for a in q]).reshape(len(q), n, n)

    # -- stepping: pybullet as the integrator ------------------------------------------

    def _set_state(self, q, qd):
        p, body, cid = self._p, self.body, self.client
        if self.base is not None:
            position, orientation = self.base.pose(q[None])
            linear, angular = self.base.world_velocity(q[None], qd[None])
            p.resetBasePositionAndOrientation(body, position[0].tolist(), orientation[0].tolist(), physicsClientId=cid)
            p.resetBaseVelocity(body, linear[0].tolist(), angular[0].tolist(), physicsClientId=cid)
            q, qd = q[7:], qd[6:]
        for j, qi, vi in zip(self.joint_indices, q, qd):
            p.resetJointState(body, j, float(qi), float(vi), physicsClientId=cid)

    def _get_state(self, near=None):
        """(q, q̇) now; a floating base's quaternion with the sign closer to ``near`` (nq,)."""
        p, body, cid = self._p, self.body, self.client
        states = p.getJointStates(body, self.joint_indices, physicsClientId=cid) if self.model.n else []
        q, qd = np.array([s[0] for s in states]), np.array([s[1] for s in states])
        if self.base is None:
            return q, qd
        position, orientation = p.getBasePositionAndOrientation(body, physicsClientId=cid)
        linear, angular = p.getBaseVelocity(body, physicsClientId=cid)
        q = self.base.configuration_from(np.array([position]), np.array([orientation]), q[None],
                                         near=None if near is None else near[None, 3:7])
        return q[0], self.base.velocity_from_world(q, np.array([linear]), np.array([angular]), qd[None])[0]

    def _step_once(self, tau, q=None):
        """One stepSimulation under τ; a floating base's wrench τ[:6] (at its origin, base
        frame) is applied as a world-frame force at the origin and a torque, at state q."""
        p, cid = self._p, self.client
        if self.base is not None:
            R = floating.base_rotations(q[None])[0]
            if np.any(tau[:6]):
                p.applyExternalForce(self.body, -1, (R @ tau[0:3]).tolist(), q[0:3].tolist(), p.WORLD_FRAME,
                                     physicsClientId=cid)
                p.applyExternalTorque(self.body, -1, (R @ tau[3:6]).tolist(), p.WORLD_FRAME, physicsClientId=cid)
            tau = tau[6:]
        if self._motor_friction is not None:
            p.setJointMotorControlArray(self.body, self.joint_indices, p.VELOCITY_CONTROL,
                                        targetVelocities=[0.0] * self.model.n,
                                        forces=self._motor_friction.tolist(), physicsClientId=cid)
        p.setJointMotorControlArray(self.body, self.joint_indices, p.TORQUE_CONTROL, forces=[float(t) for t in tau],
                                    physicsClientId=cid)
        p.stepSimulation(physicsClientId=cid)

    def _stepping(self, dt, joint_damping=None, motor_friction=None):
        """Set up the client for stepping: physical gravity, time step ``dt``, and
        pybullet's own joint friction when asked (see :meth:`step`)."""
        p, cid = self._p, self.client
        p.setPhysicsEngineParameter(fixedTimeStep=float(dt), numSubSteps=0, physicsClientId=cid)
        p.setGravity(*self.model.gravity, physicsClientId=cid)
        if joint_damping is not None:
            for j, c in zip(self.joint_indices, self._per_joint("joint_damping", joint_damping)):
                p.changeDynamics(self.body, j, jointDamping=float(c), physicsClientId=cid)
        self._motor_friction = None if motor_friction is None else self._per_joint("motor_friction", motor_friction)
        if self._motor_friction is not None:
            # The motors are constraint rows of pybullet's iterative solver: solve them to
            # convergence, so that the step is the exact maximum-dissipation impulse.
            p.setPhysicsEngineParameter(numSolverIterations=SOLVER_ITERATIONS,
                                        numNonContactInnerIterations=SOLVER_ITERATIONS, physicsClientId=cid)

    def _per_joint(self, name, values):
        values = np.broadcast_to(np.asarray(values, dtype=float), (self.model.n,))
        if np.any(values < 0) or not np.all(np.isfinite(values)):
            raise BackendError(f"pybullet {name} must be finite and >= 0 per joint, got {values.tolist()}")
        return np.array(values)

    def _done_stepping(self):
        p, cid = self._p, self.client
        if self._gravity_for_inverse_dynamics is not None:
            p.setGravity(*self._gravity_for_inverse_dynamics, physicsClientId=cid)
        for j in self.joint_indices:
            p.changeDynamics(self.body, j, jointDamping=0.0, physicsClientId=cid)
        p.setJointMotorControlArray(self.body, self.joint_indices, p.VELOCITY_CONTROL,
                                    forces=[0.0] * self.model.n, physicsClientId=cid)
        p.setPhysicsEngineParameter(numSolverIterations=50, numNonContactInnerIterations=1, physicsClientId=cid)
        self._motor_friction = None

    def step(self, q, qd, tau, dt: float, joint_damping=None, motor_friction=None):
        """One pybullet step of ``dt`` from each state under TORQUE_CONTROL τ.

        pybullet integrates semi-implicitly: q̇⁺ = q̇ + dt q̈(q, q̇, τ), q⁺ = q + dt q̇⁺.
        With pybullet's own friction (pybullet Quickstart Guide: changeDynamics jointDamping,
        setJointMotorControl2 VELOCITY_CONTROL): ``joint_damping`` c (n,) — an explicit
        viscous torque −c q̇ before the step; ``motor_friction`` F (n,) — a velocity motor
        with targetVelocity 0 and maximum force F, i.e. Coulomb friction with stiction
        applied as a velocity-level impulse (it sticks while |τ| ≤ F and stops a joint
        exactly when the step would cross zero).
        A floating base: q (nq,), q̇ = v and τ (nv,) in our convention, the base's wrench
        τ[:6] applied with applyExternalForce/Torque; pybullet's scheme for the base (in
        the world, at its centre of mass) is :meth:`PybulletBase.bullet_step`.
        Returns ``(q⁺, q̇⁺)`` with the shapes of the inputs.
        """
        (q, qd, tau), single = state_args(self.model, q=q, qd=qd, tau=tau)
        if self.base is not None:
            q = floating.unit_quaternions(q)
        q_next, qd_next = np.empty_like(q), np.empty_like(qd)
        self._stepping(dt, joint_damping, motor_friction)
        try:
            for k in range(len(q)):
                self._set_state(q[k], qd[k])
                self._step_once(tau[k], q[k])
                q_next[k], qd_next[k] = self._get_state(near=q[k])
        finally:
            self._done_stepping()
        return (q_next[0], qd_next[0]) if single else (q_next, qd_next)

    def step_acceleration(self, q, qd, q_next, qd_next, dt: float) -> np.ndarray:
        """The acceleration (N, nv) that a :meth:`step` from (q, q̇) to (q⁺, q̇⁺) applied:
        (q̇⁺ − q̇)/dt, or on a floating base :meth:`PybulletBase.acceleration_of_step`
        (pybullet updates the base's velocity in the world, at its centre of mass)."""
        if self.base is None:
            return (qd_next - qd) / dt
        return self.base.acceleration_of_step(q, qd, q_next, qd_next, dt)

    def advance(self, q, qd, qdd, dt: float) -> tuple:
        """(q⁺, q̇⁺) (N, nq), (N, nv): pybullet's semi-implicit Euler step for the
        accelerations q̈ (ours, any backend's): q̇⁺ = q̇ + dt q̈, q⁺ = q + dt q̇⁺ on a fixed
        base; :meth:`PybulletBase.bullet_step` on a floating one (whose base translation
        differs from :func:`dyn_plugin.configuration.integrate`'s by O(dt²) per step)."""
        if self.base is None:
            qd_next = qd + dt * qdd
            return q + dt * qd_next, qd_next
        return self.base.bullet_step(q, qd, qdd, dt)

    def rollout(self, q0, qd0, torque, steps: int, dt: float, joint_damping=None, motor_friction=None):
        """pybullet's own trajectory: ``steps`` steps from (q0, q̇0) with τ = torque(t, q, q̇)
        (and pybullet's friction, as in :meth:`step`).  Returns ``(q, q̇)`` of shape
        (steps + 1, nq) and (steps + 1, nv) (both n on a fixed base).
        """
        (q0, qd0), _ = state_args(self.model, q=q0, qd=qd0)
        if self.base is not None:
            q0 = floating.unit_quaternions(q0)
        q, qd = np.zeros((steps + 1, self.model.nq)), np.zeros((steps + 1, self.model.nv))
        q[0], qd[0] = q0[0], qd0[0]
        self._stepping(dt, joint_damping, motor_friction)
        try:
            self._set_state(q[0], qd[0])
            for k in range(steps):
                self._step_once(np.asarray(torque(k * dt, q[k], qd[k]), dtype=float), q[k])
                q[k + 1], qd[k + 1] = self._get_state(near=q[k])
        finally:
            self._done_stepping()
        return q, qd


SOLVER_ITERATIONS = 1000  # pybullet's default 50 (and 1 inner iteration) leaves coupled motors unconverged
MAX_JOINT_VELOCITY = 1e6  # rad/s or m/s: pybullet clamps joint speeds to 100 by default
UNREACHABLE_LIMIT = 1e6   # rad or m: joint limits pushed out of reach


def configure_reference_body(pybullet, body, gravity, client):
    """Make a loaded body a fair reference: gravity set, motors off, every damping zero,
    no clamping of joint speeds (pybullet's default cap of 100 rad/s is not physics), and
    no active joint-limit constraints (rigid-body dynamics has none; our simulator reports
    limit crossings instead).  pybullet cannot remove a URDF limit, so it is widened out of
    reach, and joint damping zeroed, each in a call of its own: pybullet ignores both when
    they come in the same call as maxJointVelocity (bullet3 #4133; kuka_iiwa's URDF damping
    0.5 stayed in force and its first step was off by a factor 600)."""
    pybullet.setGravity(*np.asarray(gravity, dtype=float), physicsClientId=client)
    for j in range(-1, pybullet.getNumJoints(body, physicsClientId=client)):
        pybullet.changeDynamics(body, j, linearDamping=0.0, angularDamping=0.0,
                                maxJointVelocity=MAX_JOINT_VELOCITY, physicsClientId=client)
        if j >= 0:
            pybullet.changeDynamics(body, j, jointDamping=0.0, physicsClientId=client)
            pybullet.changeDynamics(body, j, jointLowerLimit=-UNREACHABLE_LIMIT, jointUpperLimit=UNREACHABLE_LIMIT,
                                    physicsClientId=client)
        if j >= 0:
            pybullet.setJointMotorControl2(body, j, pybullet.VELOCITY_CONTROL, force=0.0, physicsClientId=client)
