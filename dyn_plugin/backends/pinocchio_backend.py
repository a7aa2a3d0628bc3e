"""pinocchio behind the Backend interface: the reference for RNEA, CRBA and ABA.

The model is built from the same URDF text our model came from (or our URDF export of a
DH model), and joints are matched by name.  pinocchio represents a continuous joint by
(cos q, sin q); the conversion happens here.  It ignores URDF ``<dynamics>`` friction.
A floating base is pinocchio's own ``JointModelFreeFlyer`` at the root, whose
convention :attr:`~dyn_plugin.model.RobotModel.floating_base` follows; mimic joints are
pinocchio's own ``mimic=True`` (its ABA does not take them: q̈ comes from its CRBA and
non-linear effects by Cholesky).  Frames are pinocchio's BODY frames of the same names
(``updateFramePlacements``, ``computeFrameJacobian``, ``getFrameVelocity``,
``getFrameClassicalAcceleration``, ``getFrameJacobianTimeVariation``).
"""

from __future__ import annotations

import numpy as np

from ..errors import BackendError
from ..urdf import urdf_text
from .base import Backend


class PinocchioBackend(Backend):
    """pinocchio's rnea / crba / aba / computeCoriolisMatrix, one state at a time."""

    name = "pinocchio"
    description = "reference: pinocchio rnea, crba, aba (loop over states)"
    kind = "reference"
    capabilities = frozenset({"floating_base", "mimic", "derivatives"})

    def __init__(self, model, gravity=None, armature=None):
        """``armature`` (n,): reflected motor inertia on the diagonal of M (pinocchio's
        ``model.armature``); by default the model's own (:attr:`RobotModel.armature`)."""
        super().__init__(model, gravity)
        import pinocchio as pin

        self._pin = pin
        try:
            root = (pin.JointModelFreeFlyer(),) if self.model.floating_base else ()
            self.pin_model = pin.buildModelFromXML(urdf_text(self.model), *root, mimic=bool(self.model.mimic))
        except Exception as exc:  # pinocchio raises RuntimeError/ValueError from C++
            raise BackendError(f"pinocchio cannot load model {self.model.name!r}: {exc}") from None
        self.pin_model.gravity.linear = np.asarray(self.model.gravity, dtype=float)
        self._map_joints()
        armature = _armature(self.model, armature)
        if armature is not None:
            joints = len(self.model.independent_joints)
            self.pin_model.armature = self.to_pin_v(np.concatenate([np.zeros(self.model.nv - joints), armature]))
        self.data = self.pin_model.createData()

    def _map_joints(self):
        pm = self.pin_model
        if pm.nv != self.model.nv:
            raise BackendError(f"pinocchio sees {pm.nv} degrees of freedom in {self.model.name!r}, we see {self.model.nv}")
        joints = len(self.model.independent_joints)
        base = self.model.nq - joints                # the free-flyer's 7 entries of q (6 of v) come first
        self._idx_q, self._idx_v, self._two_q = list(range(base)), list(range(self.model.nv - joints)), [False] * base
        for name in self.model.independent_joints:
            jid = pm.getJointId(name)
            if jid >= pm.njoints:
                raise BackendError(f"pinocchio has no joint named {name!r}")
            self._idx_q.append(pm.joints[jid].idx_q)
            self._idx_v.append(pm.joints[jid].idx_v)
            self._two_q.append(pm.joints[jid].nq == 2)
        self._idx_v = np.array(self._idx_v, dtype=int)

    def to_pin_q(self, q):
        """Our configuration (nq,) as pinocchio's configuration vector."""
        out = np.zeros(self.pin_model.nq)
        for value, iq, two in zip(q, self._idx_q, self._two_q):
            if two:
                out[iq], out[iq + 1] = np.cos(value), np.sin(value)
            else:
                out[iq] = value
        return out

    def to_pin_v(self, v):
        out = np.zeros(self.pin_model.nv)
        out[self._idx_v] = v
        return out

    def _per_state(self, fn, *arrays):
        return np.array([fn(*row) for row in zip(*arrays)])

    def _batch_inverse_dynamics(self, q, qd, qdd):
        pin, m, d = self._pin, self.pin_model, self.data
        return self._per_state(
            lambda a, b, c: pin.rnea(m, d, self.to_pin_q(a), self.to_pin_v(b), self.to_pin_v(c))[self._idx_v],
            q, qd, qdd)

    def _batch_mass_matrix(self, q):
        pin, m, d = self._pin, self.pin_model, self.data
        ix = np.ix_(self._idx_v, self._idx_v)

        def crba(a):
            M = np.triu(pin.crba(m, d, self.to_pin_q(a)))
            return (M + np.triu(M, 1).T)[ix]
        return self._per_state(crba, q)

    def _batch_forward_dynamics(self, q, qd, tau):
        if self.model.mimic:                                    # pinocchio's aba refuses mimic joints
            return super()._batch_forward_dynamics(q, qd, tau)
        pin, m, d = self._pin, self.pin_model, self.data
        return self._per_state(
            lambda a, b, c: pin.aba(m, d, self.to_pin_q(a), self.to_pin_v(b), self.to_pin_v(c))[self._idx_v],
            q, qd, tau)

    def _batch_gravity_torques(self, q):
        pin, m, d = self._pin, self.pin_model, self.data
        return self._per_state(lambda a: pin.computeGeneralizedGravity(m, d, self.to_pin_q(a))[self._idx_v], q)

    def _batch_bias_forces(self, q, qd):
        pin, m, d = self._pin, self.pin_model, self.data
        return self._per_state(
            lambda a, b: pin.nonLinearEffects(m, d, self.to_pin_q(a), self.to_pin_v(b))[self._idx_v], q, qd)

    def _batch_coriolis_matrix(self, q, qd):
        """pinocchio's C (Ṁ − 2C skew, C q̇ exact); not necessarily the Christoffel C."""
        pin, m, d = self._pin, self.pin_model, self.data
        ix = np.ix_(self._idx_v, self._idx_v)
        return self._per_state(
            lambda a, b: pin.computeCoriolisMatrix(m, d, self.to_pin_q(a), self.to_pin_v(b))[ix], q, qd)

    # -- derivatives: pinocchio's computeRNEADerivatives / computeABADerivatives ------------

    def _batch_inverse_dynamics_derivatives(self, q, qd, qdd):
        pin, m, d = self._pin, self.pin_model, self.data
        ix = np.ix_(self._idx_v, self._idx_v)
        self._refuse_mimic_derivatives()

        def derivatives(a, b, c):
            dq, dv, _ = pin.computeRNEADerivatives(m, d, self.to_pin_q(a), self.to_pin_v(b), self.to_pin_v(c))
            return np.stack([dq[ix], dv[ix]])
        both = self._per_state(derivatives, q, qd, qdd)
        return both[:, 0], both[:, 1]

    def _batch_forward_dynamics_derivatives(self, q, qd, tau):
        pin, m, d = self._pin, self.pin_model, self.data
        ix = np.ix_(self._idx_v, self._idx_v)
        self._refuse_mimic_derivatives()

        def derivatives(a, b, c):
            pin.computeABADerivatives(m, d, self.to_pin_q(a), self.to_pin_v(b), self.to_pin_v(c))
            inverse = np.triu(d.Minv)
            return np.stack([d.ddq_dq[ix], d.ddq_dv[ix], (inverse + np.triu(inverse, 1).T)[ix]])
        three = self._per_state(derivatives, q, qd, tau)
        return three[:, 0], three[:, 1], three[:, 2]

    def _refuse_mimic_derivatives(self) -> None:
        if self.model.mimic:
            raise BackendError(f"pinocchio's derivative algorithms do not take mimic joints (robot {self.model.name!r}); "
                               "use dyn_plugin.get_backend('newton_euler', model) for their derivatives")

    # -- frames: pinocchio's own, for the comparison with dyn_plugin.frames ----------------

    def _frame_id(self, frame: str) -> int:
        """pinocchio's index of the BODY frame named ``frame`` (a URDF link)."""
        if not self.pin_model.existFrame(frame, self._pin.BODY):
            raise BackendError(f"pinocchio's model of {self.model.name!r} has no link frame {frame!r}")
        return self.pin_model.getFrameId(frame, self._pin.BODY)

    def _reference(self, reference: str):
        pin = self._pin
        return {"world": pin.WORLD, "local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}[reference]

    def _batch_frame_placement(self, q, frame):
        pin, m, d, fid = self._pin, self.pin_model, self.data, self._frame_id(frame)

        def placement(a):
            pin.forwardKinematics(m, d, self.to_pin_q(a))
            pin.updateFramePlacements(m, d)
            return d.oMf[fid].homogeneous
        return self._per_state(placement, q)

    def _batch_frame_jacobian(self, q, frame, reference):
        pin, m, d, fid, rf = self._pin, self.pin_model, self.data, self._frame_id(frame), self._reference(reference)
        jacobian = lambda a: pin.computeFrameJacobian(m, d, self.to_pin_q(a), fid, rf).reshape(6, m.nv)  # noqa: E731
        return self._per_state(lambda a: jacobian(a)[:, self._idx_v], q)       # (6,) from pinocchio when nv = 1

    def _batch_frame_velocity(self, q, qd, frame, reference):
        pin, m, d, fid, rf = self._pin, self.pin_model, self.data, self._frame_id(frame), self._reference(reference)

        def velocity(a, b):
            pin.forwardKinematics(m, d, self.to_pin_q(a), self.to_pin_v(b))
            return pin.getFrameVelocity(m, d, fid, rf).vector
        return self._per_state(velocity, q, qd)

    def _batch_frame_acceleration(self, q, qd, qdd, frame, reference):
        pin, m, d, fid, rf = self._pin, self.pin_model, self.data, self._frame_id(frame), self._reference(reference)

        def acceleration(a, b, c):
            pin.forwardKinematics(m, d, self.to_pin_q(a), self.to_pin_v(b), self.to_pin_v(c))
            return pin.getFrameClassicalAcceleration(m, d, fid, rf).vector
        return self._per_state(acceleration, q, qd, qdd)

    def _batch_frame_jacobian_time_variation(self, q, qd, frame, reference):
        pin, m, d, fid, rf = self._pin, self.pin_model, self.data, self._frame_id(frame), self._reference(reference)

        def rate(a, b):
            pin.computeJointJacobiansTimeVariation(m, d, self.to_pin_q(a), self.to_pin_v(b))
            return pin.getFrameJacobianTimeVariation(m, d, fid, rf).reshape(6, m.nv)[:, self._idx_v]
        return self._per_state(rate, q, qd)


def _armature(model, armature):
    """The independent joints' armature (given, else the model's), None when all zero; a
    mimic follower's armature has no place in pinocchio's reduced model and is refused."""
    if armature is None:
        if not np.any(model.armature):
            return None
        followers = [name for name, value in zip(model.joint_names, model.armature)
                     if value and name not in model.independent_joints]
        if followers:
            raise BackendError(f"model {model.name!r}: armature on mimic joint(s) {', '.join(followers)}; "
                               "pinocchio's mimic joints take none")
        return model.armature[model.independent_indices]
    if np.any(model.armature):
        raise BackendError(f"model {model.name!r} carries armature already (RobotModel.armature); give it once")
    return np.broadcast_to(np.asarray(armature, dtype=float), (len(model.independent_joints),))
