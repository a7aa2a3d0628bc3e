"""pybullet behind the Backend interface, configured as a fair reference.

Loaded in its own DIRECT client with ``useFixedBase`` and ``URDF_USE_INERTIA_FROM_FILE``
(otherwise pybullet recomputes inertia from collision shapes), gravity set, the default
joint motors disabled (a velocity motor with targetVelocity 0 is pybullet's joint friction),
and linear, angular and joint damping zeroed (pybullet Quickstart Guide: loadURDF flags,
setJointMotorControl2, changeDynamics), so that it computes the rigid body alone, as
pinocchio does.  Joints are matched by name.
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

from ..errors import BackendError, PhysicalValidityWarning
from ..urdf import urdf_text
from .base import Backend, batch_args


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


def import_pybullet():
    """pybullet, imported without its build-time banner on stdout."""
    with c_level_output_silenced():
        import pybullet
    return pybullet


def _close(client, tmpdir, pybullet):
    try:
        pybullet.disconnect(physicsClientId=client)
    except Exception:  # already disconnected at interpreter exit
        pass
    tmpdir.cleanup()


class PybulletBackend(Backend):
    """pybullet's calculateInverseDynamics and calculateMassMatrix."""

    name = "pybullet"
    description = "reference: pybullet calculateInverseDynamics / calculateMassMatrix (DIRECT client)"
    kind = "reference"

    def __init__(self, model, gravity=None):
        super().__init__(model, gravity)
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
            with c_level_output_silenced():
                self.body = pybullet.loadURDF(str(self.urdf_path), useFixedBase=True,
                                              flags=pybullet.URDF_USE_INERTIA_FROM_FILE,
                                              physicsClientId=self.client)
        except pybullet.error as exc:
            raise BackendError(f"pybullet cannot load model {self.model.name!r}: {exc}") from None
        configure_reference_body(pybullet, self.body, self.model.gravity, self.client)
        # calculateInverseDynamics applies the world gravity vector in the base link's
        # inertial frame (a pybullet quirk on fixed bases): rotate it so the effect is right.
        base_inertial = pybullet.getDynamicsInfo(self.body, -1, physicsClientId=self.client)[4]
        R = np.array(pybullet.getMatrixFromQuaternion(base_inertial)).reshape(3, 3)
        self._gravity_for_inverse_dynamics = R.T @ self.model.gravity
        pybullet.setGravity(*self._gravity_for_inverse_dynamics, physicsClientId=self.client)
        self._map_joints()
        self._motor_friction = None

    def _urdf_file(self, tmpdir: Path) -> Path:
        """The model's own file when it holds exactly the reference text (meshes resolve),
        else a written copy of :func:`~dyn_plugin.urdf.urdf_text`."""
        text, source = urdf_text(self.model), self.model.source_path
        if source and text == self.model.source_urdf and Path(source).is_file() and \
                Path(source).read_text(errors="replace") == text:
            return Path(source)
        path = tmpdir / "robot.urdf"
        path.write_text(text)
        return path

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

    def _batch_inverse_dynamics(self, q, qd, qdd):
        p, body, cid = self._p, self.body, self.client
        if self.model.n == 0:  # pybullet answers None for a body without degrees of freedom
            return np.zeros_like(q)
        rows = [p.calculateInverseDynamics(body, self._to_pb(a), self._to_pb(b), self._to_pb(c), physicsClientId=cid)
                for a, b, c in zip(q, qd, qdd)]
        return np.array(rows)[:, self._order]

    def _batch_mass_matrix(self, q):
        p, body, cid = self._p, self.body, self.client
        ix = np.ix_(self._order, self._order)
        n = self.model.n
        return np.array([np.reshape(p.calculateMassMatrix(body, self._to_pb(a), physicsClientId=cid), (n, n))[ix]
                         for a in q]).reshape(len(q), n, n)


    # -- stepping: pybullet as the integrator ------------------------------------------

    def _set_state(self, q, qd):
        p, body, cid = self._p, self.body, self.client
        for j, qi, vi in zip(self.joint_indices, q, qd):
            p.resetJointState(body, j, float(qi), float(vi), physicsClientId=cid)

    def _get_state(self):
        states = self._p.getJointStates(self.body, self.joint_indices, physicsClientId=self.client)
        return np.array([s[0] for s in states]), np.array([s[1] for s in states])

    def _step_once(self, tau):
        p, cid = self._p, self.client
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
        Returns ``(q⁺, q̇⁺)`` with the shapes of the inputs.
        """
        (q, qd, tau), single = batch_args(self.model.n, q=q, qd=qd, tau=tau)
        q_next, qd_next = np.empty_like(q), np.empty_like(qd)
        self._stepping(dt, joint_damping, motor_friction)
        try:
            for k in range(len(q)):
                self._set_state(q[k], qd[k])
                self._step_once(tau[k])
                q_next[k], qd_next[k] = self._get_state()
        finally:
            self._done_stepping()
        return (q_next[0], qd_next[0]) if single else (q_next, qd_next)

    def rollout(self, q0, qd0, torque, steps: int, dt: float, joint_damping=None, motor_friction=None):
        """pybullet's own trajectory: ``steps`` steps from (q0, q̇0) with τ = torque(t, q, q̇)
        (and pybullet's friction, as in :meth:`step`).  Returns ``(q, q̇)`` of shape (steps + 1, n).
        """
        n = self.model.n
        q, qd = np.zeros((steps + 1, n)), np.zeros((steps + 1, n))
        q[0], qd[0] = q0, qd0
        self._stepping(dt, joint_damping, motor_friction)
        try:
            self._set_state(q0, qd0)
            for k in range(steps):
                self._step_once(torque(k * dt, q[k], qd[k]))
                q[k + 1], qd[k + 1] = self._get_state()
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
