"""Our rigid-body backends with joint friction and reflected motor inertia.

``newton_euler_friction`` and ``lagrange_euler_friction`` wrap ``newton_euler`` and
``lagrange_euler`` with a :class:`~dyn_plugin.friction.parameters.FrictionModel`::

    be = dp.get_backend("newton_euler_friction", model)                  # bundled data / URDF
    be = dp.get_backend("newton_euler_friction", model, profile="dhanaraj")
    be = dp.get_backend("lagrange_euler_friction", model, friction=FrictionModel.create(...))

Inverse dynamics follows Dhanaraj's flow chart (thesis Fig. 3.10): the frictionless
Newton-Euler pass gives τ and the joint reaction wrenches, which friction does not change
(Gogoussis & Donath); bearing friction comes from those wrenches, then the transmission,
then the lumped velocity friction (see :mod:`dyn_plugin.friction.parameters`).
:meth:`FrictionBackend.inverse_dynamics_breakdown` returns every column of his Table 3.5.

Forward dynamics with dry friction is set-valued at q̇ᵢ = 0.  Here a joint at rest gets
the stiction torque of maximum dissipation (:mod:`dyn_plugin.friction.stiction`): it stays
at rest while the torque it needs is within its static level (Coulomb/static level plus
the transmission breakaway τ_B), and starts against that level otherwise.  Load-dependent
friction (bearings, efficiency) acts on sliding joints; the equation it makes implicit in
q̈ is solved by Newton's method.  :meth:`FrictionBackend.velocity_step` is the time step
:func:`~dyn_plugin.simulate` uses: a velocity-level friction impulse, as pybullet's
velocity motors apply it, so sliding joints stop exactly instead of chattering.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional

import numpy as np

from ..algorithms import articulated_body as aba
from ..compiled import NO_SINGLE_STATE_PATH, CompiledDynamics
from ..algorithms import newton_euler as ne
from ..errors import DynPluginError, InputError
from ..friction.models import direction
from ..kinematics import rotation_from_z
from ..friction.parameters import FrictionModel, resolve_friction
from ..friction.stiction import solve_box_qp, sticking
from .base import Backend, batch_args, check_finite
from .ours import LagrangeEulerBackend, NewtonEulerBackend, SingleStateFastPath


@dataclasses.dataclass(frozen=True)
class TorqueBreakdown:
    """Inverse dynamics split by cause, each (n,) or (N, n), N·m (N for prismatic joints).

    rigid_body   frictionless rigid-body torque (Dhanaraj's "basic dynamic torque"), no armature
    armature     what the reflected motor inertia adds
    bearing      joint (bearing) friction τ_f^J
    transmission transmission friction τ_f^T = τ_in − τ_out (efficiency and breakaway)
    velocity     lumped viscous + Coulomb + static friction b(q̇), on the input side
    """

    rigid_body: np.ndarray
    armature: np.ndarray
    bearing: np.ndarray
    transmission: np.ndarray
    velocity: np.ndarray

    @property
    def output(self) -> np.ndarray:
        """τ_out, the torque at the joint: rigid body + armature + bearing friction."""
        return self.rigid_body + self.armature + self.bearing

    @property
    def friction(self) -> np.ndarray:
        """All friction: bearing + transmission + velocity friction."""
        return self.bearing + self.transmission + self.velocity

    @property
    def input(self) -> np.ndarray:
        """τ_in, the torque the actuator supplies (what inverse_dynamics returns)."""
        return self.output + self.transmission + self.velocity

    def single(self) -> "TorqueBreakdown":
        return TorqueBreakdown(*(getattr(self, f.name)[0] for f in dataclasses.fields(self)))


class FrictionBackend(SingleStateFastPath, Backend):
    """A rigid-body backend of ours plus a friction model.  Subclasses set ``rigid_class``.

    Options: ``friction`` (a FrictionModel, a data file, ``"urdf"`` or ``"none"``; by
    default a bundled robot's data file, else the URDF ``<dynamics>``), ``profile``
    (a profile of the data file) and ``gravity``.
    """

    rigid_class = NewtonEulerBackend

    def __init__(self, model, friction=None, profile: Optional[str] = None, gravity=None):
        super().__init__(model, gravity)
        self.friction: FrictionModel = resolve_friction(self.model, friction, profile)
        self.bare = self.rigid_class(self.model)
        self.rigid = self.rigid_class(self._model_with_armature_in_links()) if self._link_armature else self.bare
        # Compiled paths (newton_euler only): the rigid body with diagonal armature, and the same
        # with the load-independent friction folded in (load-dependent friction needs the wrenches
        # and Newton's method, and stays in numpy).
        self._rigid_fast = self._with_friction_fast = None
        if isinstance(self.rigid, NewtonEulerBackend) and self.rigid.compiled:
            self._rigid_fast = CompiledDynamics(self.rigid.model, self.gravity, self._diagonal_armature)
            if not self.friction.load_dependent:
                self._with_friction_fast = CompiledDynamics(self.rigid.model, self.gravity, self._diagonal_armature,
                                                            self.friction)
        fast = self._with_friction_fast
        self._single = fast.single if fast else NO_SINGLE_STATE_PATH

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model.name!r}, n={self.model.n}, friction={self.friction.name!r})"

    @property
    def _link_armature(self) -> bool:
        return self.friction.armature_form == "link" and bool(np.any(self.friction.armature > 0))

    @property
    def _diagonal_armature(self) -> np.ndarray:
        return self.friction.armature if self.friction.armature_form == "diagonal" else np.zeros(self.model.n)

    def _model_with_armature_in_links(self):
        """The model with I_motor a aa^T added to each link's inertia (a: the joint axis).

        A rotor's inertia about its own axis, with no mass, is the same about any point,
        so it adds to the inertia about the centre of mass unchanged.  It may break the
        triangle inequality of the link's tensor (the thesis's PUMA does): that is what the
        thesis computes, so no validity check is made here.
        """
        m = self.model
        a = np.where(m.is_revolute, self.friction.armature, 0.0)
        added = a[:, None, None] * np.einsum("ni,nj->nij", m.axes, m.axes)
        return dataclasses.replace(m, inertias=m.inertias + added, source_urdf=None, source_path=None)

    # -- rigid-body quantities (armature included; no friction) ------------------------

    # one state without load-dependent friction: the compiled kernel (SingleStateFastPath);
    # the bias is the rigid body's, without friction
    def bias_forces(self, q, qd):
        return self.rigid.bias_forces(q, qd)

    def _batch_mass_matrix(self, q):
        if self._rigid_fast is not None:
            return self._rigid_fast.mass_matrix(q)
        return self.rigid._batch_mass_matrix(q) + np.diag(self._diagonal_armature)

    def _batch_gravity_torques(self, q):
        return self.rigid._batch_gravity_torques(q)

    def _batch_bias_forces(self, q, qd):
        return self.rigid._batch_bias_forces(q, qd)

    def _batch_velocity_terms(self, q, qd):
        return self.rigid._batch_velocity_terms(q, qd)

    def _batch_coriolis_matrix(self, q, qd):
        return self.rigid._batch_coriolis_matrix(q, qd)

    # -- inverse dynamics ----------------------------------------------------------------

    def joint_wrenches(self, q, qd, qdd):
        """Joint reaction force and moment (n, 3) each, joint frames (see NewtonEulerBackend);
        friction does not change them (Gogoussis & Donath)."""
        (q, qd, qdd), single = batch_args(self.model.n, self.model.joint_names, q=q, qd=qd, qdd=qdd)
        f, moment = check_finite("joint_wrenches", self._wrenches(q, qd, qdd), self.model, single, q=q, qd=qd, qdd=qdd)
        return (f[0], moment[0]) if single else (f, moment)

    def _wrenches(self, q, qd, qdd):
        if isinstance(self.rigid, NewtonEulerBackend):
            return self.rigid._joint_wrenches(q, qd, qdd)
        return ne.joint_wrenches(self.rigid.model, q, qd, qdd)

    def inverse_dynamics_breakdown(self, q, qd, qdd) -> TorqueBreakdown:
        """Input torque split into rigid body, armature, bearing, transmission and velocity
        friction (Dhanaraj Table 3.5's columns); ``.input`` is :meth:`inverse_dynamics`."""
        (q, qd, qdd), single = batch_args(self.model.n, self.model.joint_names, q=q, qd=qd, qdd=qdd)
        parts = self._breakdown(q, qd, qdd)
        check_finite("inverse_dynamics_breakdown", tuple(vars(parts).values()), self.model, single, q=q, qd=qd, qdd=qdd)
        return parts.single() if single else parts

    def _batch_inverse_dynamics(self, q, qd, qdd):
        if self._with_friction_fast is not None:
            return self._with_friction_fast.inverse_dynamics(q, qd, qdd)
        return self._breakdown(q, qd, qdd).input

    def _breakdown(self, q, qd, qdd) -> TorqueBreakdown:
        d = direction(qd, self.friction.smoothing)
        rigid_body = self.bare._batch_inverse_dynamics(q, qd, qdd)
        with_armature = (rigid_body + self._diagonal_armature * qdd if self.rigid is self.bare
                         else self._rigid_torque(q, qd, qdd))
        bearing = self._bearing(q, qd, qdd, d)
        tau_out = with_armature + bearing
        transmission = self._through_transmission(tau_out, d) - tau_out + d * self._breakaway
        return TorqueBreakdown(rigid_body, with_armature - rigid_body, bearing, transmission,
                               self.friction.velocity.torque(qd))

    def _rigid_torque(self, q, qd, qdd):
        return self.rigid._batch_inverse_dynamics(q, qd, qdd) + self._diagonal_armature * qdd

    def _bearing(self, q, qd, qdd, d):
        bearing = self.friction.bearing
        if bearing is None or not np.any(d):
            return np.zeros_like(q)
        f, moment = self._wrenches(q, qd, qdd)
        # Dhanaraj's formulas read the load in a frame whose z is the joint axis.
        to_axis = self._axis_frames
        return d * bearing.magnitude(np.einsum("nji,Nnj->Nni", to_axis, f), np.einsum("nji,Nnj->Nni", to_axis, moment))

    @functools.cached_property
    def _axis_frames(self) -> np.ndarray:
        """(n, 3, 3) rotations from each joint frame to one whose z is the joint axis
        (:func:`~dyn_plugin.kinematics.rotation_from_z`: the identity for z axes), so that
        the rotation-invariant journal-pair form, and the others for z-axis joints, are as printed."""
        frames = np.empty((self.model.n, 3, 3))
        for i, axis in enumerate(self.model.axes):
            frames[i] = rotation_from_z(axis)
        return frames

    def _through_transmission(self, tau_out, d):
        transmission = self.friction.transmission
        return tau_out if transmission is None else tau_out * transmission.factor(tau_out, d)

    @property
    def _breakaway(self):
        transmission = self.friction.transmission
        return 0.0 if transmission is None else transmission.breakaway

    # -- forward dynamics ------------------------------------------------------------------

    def _smooth_input(self, q, qd, qdd, d):
        """τ_in without its dry-friction levels: transmission(τ_out) + viscous q̇."""
        tau_out = self._rigid_torque(q, qd, qdd) + self._bearing(q, qd, qdd, d)
        return self._through_transmission(tau_out, d) + self.friction.velocity.viscous * qd

    def _dry_levels(self, qd):
        """(L⁺, L⁻) (N, n) and the dry torque d L of the current motion."""
        positive, negative = self.friction.levels(qd)
        d = direction(qd, self.friction.smoothing)
        return positive, negative, d * np.where(qd > 0, positive, negative)

    def _solve_smooth(self, q, qd, rhs, need_jacobian: bool = True):
        """q̈ with _smooth_input(q̈) = rhs, and the Jacobian J = ∂τ_in/∂q̈ (N, n, n) (or None)."""
        qdd = self._rigid_forward_dynamics(q, qd, rhs - self.friction.velocity.viscous * qd)
        if not self.friction.load_dependent:
            return qdd, (self._batch_mass_matrix(q) if need_jacobian else None)
        d = direction(qd, self.friction.smoothing)
        scale = np.maximum(1.0, np.abs(rhs).max(axis=1))
        residual = self._smooth_input(q, qd, qdd, d) - rhs
        for _ in range(50):
            J = self._jacobian(q, qd, qdd, d, residual + rhs)
            if np.all(np.abs(residual).max(axis=1) <= 1e-12 * scale):
                return qdd, J
            qdd, residual = self._newton_step(q, qd, qdd, d, rhs, residual, J)
        raise DynPluginError("forward dynamics with load-dependent friction did not converge in 50 Newton steps "
                             f"(largest residual {np.abs(residual).max():.3g} N·m)")

    def _newton_step(self, q, qd, qdd, d, rhs, residual, J):
        """One Newton step, halved per state until the residual shrinks: the efficiency
        kink at τ_out = 0 (slopes 1/η and η) otherwise traps plain Newton in a 2-cycle."""
        step = np.linalg.solve(J, residual[..., None])[..., 0]
        size = np.abs(residual).max(axis=1)
        alpha = np.ones(len(q))
        for _ in range(30):
            trial = qdd - alpha[:, None] * step
            trial_residual = self._smooth_input(q, qd, trial, d) - rhs
            worse = np.abs(trial_residual).max(axis=1) >= size
            if not worse.any():
                break
            alpha = np.where(worse, 0.5 * alpha, alpha)
        return trial, trial_residual

    def _rigid_forward_dynamics(self, q, qd, tau):
        """q̈ of the rigid body with armature: ABA for newton_euler, Cholesky of M + diag(a) otherwise."""
        if self._rigid_fast is not None:
            return self._rigid_fast.forward_dynamics(q, qd, tau)[0]
        if isinstance(self.rigid, NewtonEulerBackend):
            return aba.forward_dynamics(self.rigid.model, q, qd, tau, self._diagonal_armature)
        return Backend._batch_forward_dynamics(self, q, qd, tau)

    def _jacobian(self, q, qd, qdd, d, value):
        """Forward differences of _smooth_input in q̈, (N, n, n)."""
        N, n = q.shape
        h = 1e-7 * np.maximum(1.0, np.abs(qdd))                                     # (N, n)
        shifted = qdd[:, None, :] + h[:, :, None] * np.eye(n)                        # (N, j, n)
        rep = lambda x: np.repeat(x, n, axis=0)  # noqa: E731
        plus = self._smooth_input(rep(q), rep(qd), shifted.reshape(N * n, n), rep(d)).reshape(N, n, n)
        return ((plus - value[:, None, :]) / h[:, :, None]).transpose(0, 2, 1)     # [state, i, j]

    def _batch_forward_dynamics(self, q, qd, tau):
        if self._with_friction_fast is not None:
            qdd, stuck = self._with_friction_fast.forward_dynamics(q, qd, tau)
            if stuck.any():                                   # joints at rest: stiction, below
                qdd[stuck] = self._forward_with_stiction(q[stuck], qd[stuck], tau[stuck])
            return qdd
        return self._forward_with_stiction(q, qd, tau)

    def _forward_with_stiction(self, q, qd, tau):
        positive, negative, dry = self._dry_levels(qd)
        at_rest = (qd == 0) & ((positive > 0) | (negative > 0)) & self.friction.set_valued
        qdd, J = self._solve_smooth(q, qd, tau - dry, need_jacobian=bool(at_rest.any()))
        if at_rest.any():
            for k in np.nonzero(at_rest.any(axis=1))[0]:
                qdd[k] = self._stiction(q[k], qd[k], tau[k] - dry[k], qdd[k], J[k], at_rest[k],
                                        positive[k], negative[k])
        return qdd

    def _stiction(self, q, qd, rhs, qdd, J, rest, positive, negative):
        """q̈ of one state with stiction torques λ on the joints at rest (maximum dissipation)."""
        lam = np.zeros(int(rest.sum()))
        for _ in range(50):
            W = np.linalg.inv(J)[np.ix_(rest, rest)]
            step = solve_box_qp(W, qdd[rest], -positive[rest] - lam, negative[rest] - lam)
            lam = lam + step
            pushed = rhs.copy()
            pushed[rest] += lam
            solved, J = self._solve_smooth(q[None], qd[None], pushed[None])
            qdd, J = solved[0], J[0]
            if np.abs(step).max(initial=0.0) <= 1e-13 * max(1.0, np.abs(lam).max(initial=0.0)):
                held = np.nonzero(rest)[0][sticking(lam, -positive[rest], negative[rest])]
                qdd[held] = 0.0
                return qdd
        raise DynPluginError("stiction at the joints at rest did not converge")

    def velocity_step(self, q, qd, tau, dt: float, viscous: str = "explicit") -> np.ndarray:
        """q̇ after one semi-implicit Euler step of ``dt`` (s) from (q, q̇) under τ, (n,) or (N, n).

        Dry friction acts as the impulse λ, |λᵢ| ≤ Lᵢ dt, that removes the most kinetic
        energy (pybullet's velocity motor with targetVelocity 0 and force L): a joint at
        rest stays there while the impulse suffices, and a sliding joint that would reverse
        within the step stops exactly at zero.  Load-dependent friction acts explicitly.

        ``viscous``: ``"explicit"`` (default) applies −D q̇ at the start of the step, exactly
        as pybullet's jointDamping; it is stable only while dt·λ_max(M⁻¹D) < 2, which a
        light link with real damping breaks (1e-3 kg·m² with 0.5 N·m·s/rad at 1/240 s).
        ``"implicit"`` solves (M + dt D) Δq̇ = dt (τ − bias − D q̇) + λ: unconditionally stable,
        never reverses a joint by damping alone, first-order accurate like the explicit form.
        With load-dependent friction M is ∂τ_in/∂q̈ at the step (a linearly implicit step).
        """
        (q, qd, tau), single = batch_args(self.model.n, self.model.joint_names, q=q, qd=qd, tau=tau)
        if not (np.isfinite(dt) and dt > 0):
            raise InputError(f"time step dt must be positive and finite, got {dt}")
        if viscous not in ("explicit", "implicit"):
            raise InputError(f"viscous must be 'explicit' or 'implicit', got {viscous!r}")
        implicit = viscous == "implicit" and bool(np.any(self.friction.velocity.viscous != 0))
        if not (self.friction.set_valued or implicit):
            after = qd + dt * self._batch_forward_dynamics(q, qd, tau)
        else:
            after = self._impulse_step(q, qd, tau, dt, implicit)
        check_finite("velocity_step", after, self.model, single, q=q, qd=qd, tau=tau)
        return after[0] if single else after

    def _impulse_step(self, q, qd, tau, dt, implicit: bool) -> np.ndarray:
        """Batch q̇⁺ (N, n): the free step (viscous implicit or not), then the dry impulses."""
        positive, negative, dry = self._dry_levels(qd)
        set_valued = self.friction.set_valued
        qdd_free, J = self._solve_smooth(q, qd, tau if set_valued else tau - dry)
        if implicit:   # (J + dt D)(q̇⁺ − q̇) = dt J q̈_free = dt (τ − bias − D q̇)
            W = np.linalg.inv(J + dt * np.diag(self.friction.velocity.viscous))
            after = qd + dt * np.einsum("nij,njk,nk->ni", W, J, qdd_free)
        else:
            W = np.linalg.inv(J)
            after = qd + dt * qdd_free
        if set_valued:
            for k in range(len(q)):
                lower, upper = -positive[k] * dt, negative[k] * dt
                impulse = solve_box_qp(W[k], after[k], lower, upper)
                after[k] += W[k] @ impulse
                after[k, sticking(impulse, lower, upper)] = 0.0
        return after


class NewtonEulerFrictionBackend(FrictionBackend):
    name = "newton_euler_friction"
    description = "newton_euler + joint friction (viscous, Coulomb, Schilling, Dhanaraj bearing/transmission) and armature"
    capabilities = frozenset({'stepping', 'joint_wrenches', 'friction'})
    rigid_class = NewtonEulerBackend


class LagrangeEulerFrictionBackend(FrictionBackend):
    name = "lagrange_euler_friction"
    description = "lagrange_euler + the same friction and armature (joint wrenches for bearings from Newton-Euler)"
    capabilities = frozenset({'stepping', 'joint_wrenches', 'friction'})
    rigid_class = LagrangeEulerBackend
