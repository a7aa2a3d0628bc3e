"""pinocchio behind the Backend interface: the reference for RNEA, CRBA and ABA.

The model is built from the same URDF text our model came from (or our URDF export of a
DH model), and joints are matched by name.  pinocchio represents a continuous joint by
(cos q, sin q); the conversion happens here.  It ignores URDF ``<dynamics>`` friction.
A floating base is pinocchio's own ``JointModelFreeFlyer`` at the root, whose
convention :attr:`~dyn_plugin.model.RobotModel.floating_base` follows; mimic joints are
pinocchio's own ``mimic=True`` (its ABA does not take them: q̈ comes from its CRBA and
non-linear effects by Cholesky).  Frames are pinocchio's BODY frames of the same names
(``updateFramePlacements``, ``computeFrameJacobian``, ``getFrameVelocity``,
``getFrameClassicalAcceleration``, ``getFrameJacobianTimeVariation``); external wrenches
(``f_ext``) go to its ``rnea`` and ``aba`` as ``fext``, placed by its own frames.

Joints of several degrees of freedom are pinocchio's own: ``planar`` and ``floating`` as its
URDF parser reads them (``JointModelPlanar``, whose configuration is (x, y, cos θ, sin θ)
where ours is (x, y, θ): converted here as for a continuous joint; ``JointModelFreeFlyer``);
``spherical``, which urdfdom does not know, as ``JointModelSpherical`` in the model its
parser builds from the same text with those joints written ``floating``
(:func:`spherical_model`): every placement, inertia (fixed joints merged) and frame is
then the parser's own, and only the joint's motion is set here.  Quaternions (x, y, z, w)
pass through, normalised or refused as everywhere (:func:`dyn_plugin.joints.unit_configuration`).
"""

from __future__ import annotations

import functools

import numpy as np

from .. import floating, mimic
from ..errors import BackendError
from ..joints import FLOATING, KINDS, MULTI_DOF, PLANAR, SPHERICAL, unit_configuration
from ..urdf import urdf_text
from .base import Backend, cholesky_factor


class PinocchioBackend(Backend):
    """pinocchio's rnea / crba / aba / computeCoriolisMatrix, one state at a time."""

    name = "pinocchio"
    description = "reference: pinocchio rnea, crba, aba (loop over states)"
    kind = "reference"
    capabilities = frozenset({"floating_base", "mimic", "multi_dof", "derivatives"})

    def __init__(self, model, gravity=None, armature=None):
        """``armature`` (n,): reflected motor inertia on the diagonal of M (pinocchio's
        ``model.armature``); by default the model's own (:attr:`RobotModel.armature`)."""
        super().__init__(model, gravity)
        import pinocchio as pin

        self._pin = pin
        try:
            self.pin_model = _build(pin, self.model)
        except Exception as exc:  # pinocchio raises RuntimeError/ValueError from C++
            raise BackendError(f"pinocchio cannot load model {self.model.name!r}: {exc}") from None
        self.pin_model.gravity.linear = np.asarray(self.model.gravity, dtype=float)
        self._map_joints()
        armature = _armature(self.model, armature)
        if armature is not None:
            self.pin_model.armature = self.to_pin_v(_armature_per_velocity(self.model, armature))
        self.data = self.pin_model.createData()

    def _map_joints(self):
        """Per entry of our q: pinocchio's index and whether it is an angle pinocchio stores
        as (cos, sin) (a continuous joint, a planar joint's θ); per entry of our v, pinocchio's."""
        pm, model = self.pin_model, self.model
        if pm.nv != model.nv:
            raise BackendError(f"pinocchio sees {pm.nv} degrees of freedom in {model.name!r}, we see {model.nv}")
        base_q, base_v = (floating.BASE_Q, floating.BASE_V) if model.floating_base else (0, 0)
        idx_q, two_q, idx_v = list(range(base_q)), [False] * base_q, list(range(base_v))
        for i in model.independent_indices:
            name, kind = model.joint_names[i], model.joint_types[i]
            jid = pm.getJointId(name)
            if jid >= pm.njoints:
                raise BackendError(f"pinocchio has no joint named {name!r}")
            joint = pm.joints[jid]
            if joint.nv != KINDS[kind].nv:
                raise BackendError(f"pinocchio's joint {name!r} ({joint.shortname()}) has {joint.nv} degrees of "
                                   f"freedom, ours ({kind}) {KINDS[kind].nv}")
            angles = {PLANAR: (2,)}.get(kind, (0,) if joint.nq == 2 else ())
            offset = 0
            for k in range(KINDS[kind].nq):
                idx_q.append(joint.idx_q + offset)
                two_q.append(k in angles)
                offset += 2 if k in angles else 1
            idx_v += range(joint.idx_v, joint.idx_v + joint.nv)
        self._idx_q, self._two_q = np.array(idx_q, dtype=int), np.array(two_q, dtype=bool)
        self._idx_v = np.array(idx_v, dtype=int)

    def to_pin_q(self, q):
        """Our configuration(s) (nq,) or (N, nq) as pinocchio's (angles as (cos, sin))."""
        q = np.asarray(q, dtype=float)
        out = np.zeros(q.shape[:-1] + (self.pin_model.nq,))
        one, two = ~self._two_q, self._two_q
        out[..., self._idx_q[one]] = q[..., one]
        out[..., self._idx_q[two]], out[..., self._idx_q[two] + 1] = np.cos(q[..., two]), np.sin(q[..., two])
        return out

    def to_pin_v(self, v):
        """Our velocity (nv,) or (N, nv) (acceleration, τ) in pinocchio's order."""
        v = np.asarray(v, dtype=float)
        out = np.zeros(v.shape[:-1] + (self.pin_model.nv,))
        out[..., self._idx_v] = v
        return out

    def _pin_q(self, q):
        """pinocchio's configurations (N, nq) of ours (N, nq), quaternions normalised (or
        refused, naming the joint) as by every backend."""
        q = floating.unit_quaternions(q) if self.model.floating_base else q.copy()
        for i in self.model.multi_dof_indices:
            slices = self.model.joint_slices[i]
            q[:, slices[0]] = unit_configuration(self.model.joint_types[i], q[:, slices[0]], self.model.joint_names[i])
        return self.to_pin_q(q)

    def _per_state(self, fn, q, *velocities):
        """fn at each state, of pinocchio's configuration and velocities (our (N, nq), (N, nv) in)."""
        return np.array([fn(*row) for row in zip(self._pin_q(q), *(self.to_pin_v(x) for x in velocities))])

    def _batch_inverse_dynamics(self, q, qd, qdd):
        pin, m, d = self._pin, self.pin_model, self.data
        return self._per_state(lambda a, b, c: pin.rnea(m, d, a, b, c)[self._idx_v], q, qd, qdd)

    def _batch_mass_matrix(self, q):
        pin, m, d = self._pin, self.pin_model, self.data
        ix = np.ix_(self._idx_v, self._idx_v)

        def crba(a):
            M = np.triu(pin.crba(m, d, a))
            return (M + np.triu(M, 1).T)[ix]
        return self._per_state(crba, q)

    def _batch_forward_dynamics(self, q, qd, tau):
        if self.model.mimic:                                    # pinocchio's aba refuses mimic joints
            return super()._batch_forward_dynamics(q, qd, tau)
        cholesky_factor(self._batch_mass_matrix(q))    # refuses a singular M, where aba answers rounding × 1e16
        pin, m, d = self._pin, self.pin_model, self.data
        return self._per_state(lambda a, b, c: pin.aba(m, d, a, b, c)[self._idx_v], q, qd, tau)

    def _batch_gravity_torques(self, q):
        pin, m, d = self._pin, self.pin_model, self.data
        return self._per_state(lambda a: pin.computeGeneralizedGravity(m, d, a)[self._idx_v], q)

    def _batch_bias_forces(self, q, qd):
        pin, m, d = self._pin, self.pin_model, self.data
        return self._per_state(lambda a, b: pin.nonLinearEffects(m, d, a, b)[self._idx_v], q, qd)

    @functools.cached_property
    def _without_mimic(self):
        """This backend for the model without its mimic joints (each joint its own)."""
        return PinocchioBackend(mimic.full_model(self.model))

    def _batch_coriolis_matrix(self, q, qd):
        """pinocchio's C (Ṁ − 2C skew, C q̇ exact); not necessarily the Christoffel C.  With
        mimic joints, Gᵀ C_full G of the model without them (G: :func:`dyn_plugin.mimic.velocity_map`,
        constant, so Ġ = 0): pinocchio 4.1's computeCoriolisMatrix on its mimic=True model
        misses the velocity terms (C q̇ 0.17 off on a three-link arm)."""
        if self.model.mimic:
            G = mimic.velocity_map(self.model)
            full = self._without_mimic._batch_coriolis_matrix(mimic.full_configuration(self.model, q), qd @ G.T)
            return np.einsum("ai,nab,bj->nij", G, full, G)
        pin, m, d = self._pin, self.pin_model, self.data
        ix = np.ix_(self._idx_v, self._idx_v)
        return self._per_state(lambda a, b: pin.computeCoriolisMatrix(m, d, a, b)[ix], q, qd)

    # -- external wrenches: pinocchio's fext ----------------------------------------------------

    def _loaded(self, what: str, f_ext, single: bool):
        """``_batch_<what>`` under ``f_ext`` (validated by :func:`dyn_plugin.external.validate`),
        as pinocchio's rnea / aba with ``fext``: each wrench [f; m] (world-aligned, at the
        frame origin p) a ``pin.Force`` of the frame's joint, in its frame about its origin
        o: Rᵀ f, Rᵀ (m + (p − o) × f) (R, o from ``data.oMi``)."""
        from ..external import validate

        pin, m, d = self._pin, self.pin_model, self.data
        function = {"inverse_dynamics": pin.rnea, "forward_dynamics": pin.aba}[what]
        if self.model.mimic and what == "forward_dynamics":
            return super()._loaded(what, f_ext, single)         # pinocchio's aba refuses mimic joints

        def loaded(q, qd, x):
            wrenches = validate(self.model, f_ext, len(q), single)
            frames = {name: self._frame_id(name) for name in wrenches}

            def one(k, a, b, c):
                pin.forwardKinematics(m, d, a)
                pin.updateFramePlacements(m, d)
                fext = [pin.Force.Zero() for _ in range(m.njoints)]
                for name, w in wrenches.items():
                    joint = m.frames[frames[name]].parentJoint
                    R, o, p = d.oMi[joint].rotation, d.oMi[joint].translation, d.oMf[frames[name]].translation
                    fext[joint] += pin.Force(R.T @ w[k, :3], R.T @ (w[k, 3:] + np.cross(p - o, w[k, :3])))
                return function(m, d, a, b, c, fext)[self._idx_v]
            return np.array([one(k, a, b, c) for k, (a, b, c) in enumerate(zip(
                self._pin_q(q), self.to_pin_v(qd), self.to_pin_v(x)))])

        loaded.__name__ = f"_batch_{what}"
        return loaded

    # -- derivatives: pinocchio's computeRNEADerivatives / computeABADerivatives ------------

    def _batch_inverse_dynamics_derivatives(self, q, qd, qdd):
        pin, m, d = self._pin, self.pin_model, self.data
        ix = np.ix_(self._idx_v, self._idx_v)
        self._refuse_mimic_derivatives()

        def derivatives(a, b, c):
            dq, dv, _ = pin.computeRNEADerivatives(m, d, a, b, c)
            return np.stack([dq[ix], dv[ix]])
        both = self._per_state(derivatives, q, qd, qdd)
        return both[:, 0], both[:, 1]

    def _batch_forward_dynamics_derivatives(self, q, qd, tau):
        pin, m, d = self._pin, self.pin_model, self.data
        ix = np.ix_(self._idx_v, self._idx_v)
        self._refuse_mimic_derivatives()

        def derivatives(a, b, c):
            pin.computeABADerivatives(m, d, a, b, c)
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
            pin.forwardKinematics(m, d, a)
            pin.updateFramePlacements(m, d)
            return d.oMf[fid].homogeneous
        return self._per_state(placement, q)

    def _batch_frame_jacobian(self, q, frame, reference):
        pin, m, d, fid, rf = self._pin, self.pin_model, self.data, self._frame_id(frame), self._reference(reference)
        jacobian = lambda a: pin.computeFrameJacobian(m, d, a, fid, rf).reshape(6, m.nv)  # noqa: E731
        return self._per_state(lambda a: jacobian(a)[:, self._idx_v], q)       # (6,) from pinocchio when nv = 1

    def _batch_frame_velocity(self, q, qd, frame, reference):
        pin, m, d, fid, rf = self._pin, self.pin_model, self.data, self._frame_id(frame), self._reference(reference)

        def velocity(a, b):
            pin.forwardKinematics(m, d, a, b)
            return pin.getFrameVelocity(m, d, fid, rf).vector
        return self._per_state(velocity, q, qd)

    def _batch_frame_acceleration(self, q, qd, qdd, frame, reference):
        pin, m, d, fid, rf = self._pin, self.pin_model, self.data, self._frame_id(frame), self._reference(reference)

        def acceleration(a, b, c):
            pin.forwardKinematics(m, d, a, b, c)
            return pin.getFrameClassicalAcceleration(m, d, fid, rf).vector
        return self._per_state(acceleration, q, qd, qdd)

    def _batch_frame_jacobian_time_variation(self, q, qd, frame, reference):
        if self.model.mimic and reference != "world":
            raise BackendError(f"pinocchio's getFrameJacobianTimeVariation is wrong with mimic joints in {reference!r} "
                               f"(robot {self.model.name!r}: 0.5 to 3 off the rate of its own Jacobian, pinocchio 4.1; "
                               "right in 'world'): use reference='world', or another backend")
        pin, m, d, fid, rf = self._pin, self.pin_model, self.data, self._frame_id(frame), self._reference(reference)

        def rate(a, b):
            pin.computeJointJacobiansTimeVariation(m, d, a, b)
            return pin.getFrameJacobianTimeVariation(m, d, fid, rf).reshape(6, m.nv)[:, self._idx_v]
        return self._per_state(rate, q, qd)


def _build(pin, model):
    """pinocchio's model of ``model``'s URDF text (:func:`dyn_plugin.urdf.urdf_text`): its
    parser's, with a free-flyer root for a floating base, its mimic joints for a model that
    has them, and spherical joints as :func:`spherical_model` makes them."""
    root = (pin.JointModelFreeFlyer(),) if model.floating_base else ()
    spherical = [model.joint_names[i] for i in model.multi_dof_indices if model.joint_types[i] == SPHERICAL]
    text = urdf_text(model)
    if not spherical:
        return pin.buildModelFromXML(text, *root, mimic=bool(model.mimic))
    if model.mimic:
        raise BackendError(f"model {model.name!r}: spherical joints with mimic joints are not built here")
    return spherical_model(pin, pin.buildModelFromXML(_written_floating(text, spherical), *root), spherical)


def _written_floating(text: str, joints) -> str:
    """The URDF ``text`` with the joints named ``joints`` written ``type="floating"``, without
    their ``<limit>`` (pybullet's spherical cone limits ``lower upper twist``, which urdfdom
    would refuse for want of a velocity; no limit enters the dynamics)."""
    from lxml import etree

    from ..urdf.reading import parse_xml

    root, _ = parse_xml(text, "<model source>")
    for element in root.findall("joint"):
        if element.get("name") in joints:
            element.set("type", FLOATING)
            for limit in element.findall("limit"):
                element.remove(limit)
    return etree.tostring(root, encoding="unicode")


def spherical_model(pin, parsed, joints):
    """A copy of pinocchio's model ``parsed`` with the joints named ``joints`` (free-flyers
    there) as ``JointModelSpherical``: the same tree, joint placements, bodies' inertias and
    frames (added in the same order, so their indices and names are the parser's)."""
    model = pin.Model()
    model.name = parsed.name
    for j in range(1, parsed.njoints):
        motion = pin.JointModelSpherical() if parsed.names[j] in joints else parsed.joints[j]
        jid = model.addJoint(parsed.parents[j], motion, parsed.jointPlacements[j], parsed.names[j])
        model.appendBodyToJoint(jid, parsed.inertias[j], pin.SE3.Identity())
    for frame in list(parsed.frames)[1:]:                         # the universe's is there already
        model.addFrame(pin.Frame(frame), False)                     # the joints carry the inertias
    model.gravity = parsed.gravity
    return model


def _armature_per_velocity(model, armature):
    """The independent joints' armature (one each) on their entries of v (nv,): zero on a
    floating base's; a joint of several degrees of freedom takes none (refused)."""
    out = np.zeros(model.nv)
    for i, value in zip(model.independent_indices, armature):
        kind, (_, v) = model.joint_types[i], model.joint_slices[i]
        if kind in MULTI_DOF and value:
            raise BackendError(f"model {model.name!r}: armature on joint {model.joint_names[i]!r} ({kind}); rotor "
                               "inertia is for revolute and prismatic joints")
        out[v] = value
    return out


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
