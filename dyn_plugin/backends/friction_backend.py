"""Joint friction and reflected motor inertia (armature) as a wrapper over any backend.

A :class:`FrictionBackend` wraps a rigid-body backend built from the registry by name and
adds a :class:`~dyn_plugin.friction.parameters.FrictionModel` to it::

    be = dp.get_backend("newton_euler_friction", model)                  # bundled data / URDF
    be = dp.get_backend("newton_euler_friction", model, profile="dhanaraj")
    be = dp.get_backend("lagrange_euler_friction", model, friction=FrictionModel.create(...))
    be = dp.with_friction("pinocchio", model, profile="dhanaraj")        # friction on any backend
    be = dp.get_backend("newton_euler_friction", model, rigid="pinocchio")   # the same

``newton_euler_friction`` and ``lagrange_euler_friction`` are the wrapper over
``newton_euler`` and ``lagrange_euler``; ``rigid=`` (or :func:`with_friction`) puts it on
any registered backend without friction (``pinocchio``, ``symbolic_numba``, a third
party's), and other options go to that backend's factory (``compiled=False``,
``lang=...``).  A wrapper's ``name`` is ``<rigid>_friction`` (registered only for the two
above: rebuild another with ``rigid=``); ``rigid`` is the wrapped backend, ``bare`` the
same backend without armature.

The wrapper uses only the rigid backend's public methods (inverse and forward dynamics,
mass matrix, bias, gravity, Coriolis) and one declared capability, ``joint_wrenches``,
which bearing friction needs.  A rigid backend that does not declare it (pinocchio, the
generated ones) gets its wrenches from the first registered backend that does and has
no friction (``registry.backends(can=("joint_wrenches",), cannot=("friction",))``:
``newton_euler``), built on the same model; the backends are validated against each
other, so the wrenches belong to the same dynamics.

Armature (:attr:`FrictionModel.armature_form`):

* ``"link"`` (Dhanaraj adds I_motor to the link's I_zz): the rigid backend is built on the
  model whose link inertias carry I_motor a aᵀ (a the joint axis), so every method of it
  includes the rotor, its gyroscopic and coupling terms;
* ``"diagonal"`` (pinocchio's ``model.armature``): a rigid backend whose factory takes
  ``armature=`` (pinocchio's does; found from its signature) gets it and includes it
  everywhere.  For any other the wrapper adds it: τ gains diag(a) q̈, M gains diag(a), and
  forward dynamics solves (M + diag a) q̈ = τ − bias − friction by Cholesky with the rigid
  backend's M and bias.  Without an armature added here, forward dynamics is the rigid
  backend's own (e.g. the articulated-body algorithm) with the friction moved to the
  right-hand side.

Inverse dynamics follows Dhanaraj's flow chart (thesis Fig. 3.10; the thesis is cited in
full in :mod:`dyn_plugin.friction.models`): the frictionless rigid-body torque and the
joint reaction wrenches, which friction does not change (Gogoussis & Donath, as the thesis
cites them); bearing friction comes from those wrenches, then the transmission,
then the lumped velocity friction (see :mod:`dyn_plugin.friction.parameters`).
:meth:`FrictionBackend.inverse_dynamics_breakdown` returns every column of his Table 3.5.

Forward dynamics with dry friction is set-valued at q̇ᵢ = 0.  Here a joint at rest gets
the stiction torque of maximum dissipation (:mod:`dyn_plugin.friction.stiction`): it stays
at rest while the torque it needs is within its static level (Coulomb/static level plus
the transmission breakaway τ_B), and starts against that level otherwise.  Load-dependent
friction (bearings, efficiency) acts on sliding joints; the equation it makes implicit in
q̈ is solved by Newton's method (both in :mod:`.friction_forward`).
:meth:`FrictionBackend.velocity_step` is the time step :func:`~dyn_plugin.simulate` uses: a
velocity-level friction impulse, as pybullet's velocity motors apply it, so sliding joints
stop exactly instead of chattering.

One state without load-dependent friction takes a short path: one compiled call that
composes the rigid backend's one-state kernel with the velocity-friction law
(:func:`dyn_plugin.friction.law.fused`) when the rigid backend declares
``single_state_kernels`` (``newton_euler``: as fast as the rigid backend alone), else the
rigid backend's own one-state call followed by the compiled law; a batch's inverse
dynamics likewise runs in one loop when it declares ``block_kernels``.

A dynamic friction law (LuGre, Dahl: ``FrictionModel.dynamic``) has a state, the bristle
deflection z (:mod:`dyn_plugin.friction.bristles`).  :meth:`FrictionBackend.state_step`
advances (q̇, z) by one implicit step and :meth:`FrictionBackend.state_rates` gives (q̈, ż)
(:mod:`.bristle_stepping`); :func:`dyn_plugin.simulate` and the pybullet ``DynamicsStepper``
carry z through them.  The stateless calls (inverse and forward dynamics, their
derivatives, the breakdown) cannot know z: they use the law's *steady state*
g(q̇) sgn(q̇) + σ2 q̇ (LuGre eq. (5); at q̇ = 0 stiction up to F_S), which is what the law
gives in steady sliding and only then; ``velocity_step`` refuses such a model.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional

import numpy as np

from ..errors import BackendError, DynPluginError, InputError
from ..external import Load
from ..friction import bristles, law
from ..friction.law import direction
from ..friction.parameters import FrictionModel, resolve_friction
from ..kinematics import rotation_from_z
from ..arrays import contiguous
from . import bristle_stepping, friction_forward, friction_jacobians
from .base import Backend, batch_args, check_finite, nan_for_overflow
from .registry import backend_class, backends, declared, get_backend, takes_armature


_empty = np.empty            # one global lookup instead of two, on the one-state paths


def _entry_of(kernel):
    from ..compiled.borrowed import entry_of     # numba is imported on first use only

    return entry_of(kernel)


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


@functools.lru_cache(maxsize=None)
def _solver():
    """The compiled (M + diag d)⁻¹ b solvers: (batch, one state).  Imported on first use, so
    that importing this module (``dp.with_friction``) does not import numba."""
    from ..compiled import entry_points, shifted_spd_solve

    return shifted_spd_solve, entry_points.single("shifted_spd_solve")


class FrictionBackend(Backend):
    """A registered rigid-body backend plus a friction model.

    Options: ``friction`` (a FrictionModel, a data file, ``"urdf"`` or ``"none"``; by
    default a bundled robot's data file, else the URDF ``<dynamics>``), ``profile`` (a
    profile of the data file), ``gravity``, ``rigid`` (the name of the registered backend
    to wrap; by default the class's ``default_rigid``) and any option of that backend.
    """

    name = "friction"
    description = "a registered rigid-body backend + joint friction and armature"
    kind = "ours"
    capabilities = frozenset({"friction", "stepping", "joint_wrenches", "derivatives"})
    default_rigid = "newton_euler"

    def __init__(self, model, friction=None, profile: Optional[str] = None, gravity=None,
                 rigid: Optional[str] = None, **rigid_options):
        super().__init__(model, gravity)
        self.friction: FrictionModel = resolve_friction(self.model, friction, profile)
        rigid = self.default_rigid if rigid is None else rigid
        if not isinstance(rigid, str):
            raise BackendError(f"rigid must be the name of a registered backend (e.g. 'pinocchio'), got {rigid!r}")
        if "friction" in declared(rigid)[1]:
            raise BackendError(f"backend {rigid!r} has friction of its own: wrap a rigid-body backend, one of "
                               f"{', '.join(backends(cannot=('friction',)))}")
        self.rigid_name = rigid
        self.name = f"{rigid}_friction"
        self._rigid_options = dict(rigid_options)
        n = self.model.n
        armature = self.friction.armature
        if np.any(armature) and np.any(self.model.armature):
            raise InputError(f"model {self.model.name!r} carries armature (rotor inertia, e.g. a DH table's "
                             f"motor_inertia) and friction model {self.friction.name!r} adds armature too: "
                             "give it once (a friction model without armature, or a model without it)")
        # Where the armature goes: into the links ("link"), to the rigid backend's own
        # armature= ("diagonal", when its factory takes one), or added here (diagonal a).
        self._native_armature = (self.friction.armature_form == "diagonal" and bool(np.any(armature != 0))
                                 and takes_armature(backend_class(rigid)) and "armature" not in rigid_options)
        if self._link_armature:
            self.rigid = get_backend(rigid, self._model_with_armature_in_links(), **rigid_options)
        elif self._native_armature:
            self.rigid = get_backend(rigid, self.model, armature=armature, **rigid_options)
        else:
            self.rigid = get_backend(rigid, self.model, **rigid_options)
        added = self.friction.armature_form == "diagonal" and not self._native_armature
        self._armature = np.array(armature if added else np.zeros(n), dtype=float)
        self._diagonal = bool(np.any(self._armature != 0))
        self._armature_matrix = np.diag(self._armature)
        # the compiled law: velocity friction, breakaway and the armature added here
        self._table = law.parameter_table(self.friction.velocity, self.friction.breakaway, self._armature)
        # one state without load-dependent friction takes the short path (law.single)
        self._short = not self.friction.load_dependent and self.friction.dynamic is None
        # stateless calls take a dynamic law's steady state, sharp at q̇ = 0 (stiction up to F_S)
        self._set_valued = self.friction.set_valued or self.friction.dynamic is not None
        self._zeros = np.zeros(n)
        if self._short:
            self._added, self._removed = law.single("added"), law.single("removed")
            self._solve_one = _solver()[1] if self._diagonal else None
        # one state in one compiled call: the law composed with the rigid backend's kernels
        found = (self.rigid.single_state_kernels() if self._short and not self._diagonal
                 and type(self.rigid).can("single_state_kernels") else None)
        # past numba's dispatcher, which spent ~0.2 µs typing the six arguments: the entry points
        # refuse anything but float64 vectors themselves (compiled.borrowed); each attribute
        # below is one lookup on the one-state paths (model.n is a property, ~60 ns)
        self._fused = found is not None
        if self._fused:
            self._fused_inverse = _entry_of(law.fused("inverse_dynamics", found[0][0]))
            self._fused_forward = _entry_of(law.fused("forward_dynamics", found[0][1]))
            self._fused_data, self._n = found[1], n
        # a batch's inverse dynamics in one loop: the law on each part as the rigid kernel ends it
        block = self.rigid.block_kernels() if self._short and type(self.rigid).can("block_kernels") else None
        self._fused_batch = None if block is None else functools.partial(law.fused_batch(block[0]), block[1])

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.model.name!r}, n={self.model.n}, friction={self.friction.name!r}, "
                f"rigid={self.rigid_name!r})")

    @property
    def compiled(self) -> bool:
        """False when the wrapped backend runs its numpy reference (``compiled=False``)."""
        return getattr(self.rigid, "compiled", True) is not False

    @functools.cached_property
    def bare(self) -> Backend:
        """The rigid backend without the armature: ``rigid`` itself, unless the armature
        is in the links or in its own ``armature=`` (then the same backend without it)."""
        if not (self._link_armature or self._native_armature):
            return self.rigid
        return get_backend(self.rigid_name, self.model, **self._rigid_options)

    @property
    def _link_armature(self) -> bool:
        return self.friction.armature_form == "link" and bool(np.any(self.friction.armature > 0))

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

    @functools.cached_property
    def _wrench_source(self) -> Backend:
        """The backend whose ``joint_wrenches`` bearing friction reads: the rigid backend if
        it declares them, else the first registered one that does (and has no friction),
        on the rigid backend's model."""
        if "joint_wrenches" in declared(self.rigid_name)[1]:
            return self.rigid
        sources = backends(can=("joint_wrenches",), cannot=("friction",))
        if not sources:
            raise BackendError(f"backend {self.rigid_name!r} has no joint wrenches and no registered backend "
                               "declares them: bearing friction cannot be computed")
        return get_backend(sources[0], self.rigid.model)

    # -- rigid-body quantities (armature included; no friction) ------------------------

    def mass_matrix(self, q):
        M = self.rigid.mass_matrix(q)
        return M + self._armature_matrix if self._diagonal else M

    def bias_forces(self, q, qd):
        return self.rigid.bias_forces(q, qd)

    def _batch_mass_matrix(self, q):
        M = nan_for_overflow(self.rigid, "mass_matrix", q)
        return M + self._armature_matrix if self._diagonal else M

    def _batch_gravity_torques(self, q):
        return nan_for_overflow(self.rigid, "gravity_torques", q)

    def _batch_bias_forces(self, q, qd):
        return nan_for_overflow(self.rigid, "bias_forces", q, qd)

    def _batch_coriolis_matrix(self, q, qd):
        return nan_for_overflow(self.rigid, "coriolis_matrix", q, qd)

    # -- inverse dynamics ----------------------------------------------------------------

    def inverse_dynamics(self, q, qd, qdd, f_ext=None):
        if f_ext is not None:                                # external wrenches: the validating path
            return super().inverse_dynamics(q, qd, qdd, f_ext)
        if self._fused:                                      # one state, one compiled call
            tau = _empty(self._n)
            try:
                if self._fused_inverse(self._fused_data, self._table, q, qd, qdd, tau) == 0:     # law.OK
                    return tau
            except TypeError:                                # not float64 vectors (a batch): the validating path
                pass
            return super().inverse_dynamics(q, qd, qdd)
        if self._short and getattr(q, "ndim", 0) == 1:      # one state: the rigid body's τ, then friction
            try:
                tau = self.rigid.inverse_dynamics(q, qd, qdd)    # a new array: friction is added in place
                if self._added(self._table, qd, qdd, tau, tau) == law.OK:
                    return tau
            except (TypeError, DynPluginError):              # the validating path names the problem
                pass
        return super().inverse_dynamics(q, qd, qdd)

    def _batch_inverse_dynamics(self, q, qd, qdd):
        if self._fused_batch is not None:                    # the rigid body and the law in one loop
            q, qd, qdd = contiguous(q, qd, qdd)
            tau = _empty(q.shape)
            self._fused_batch(self._table, q, qd, qdd, tau)
            return tau
        if self._short:                                      # friction added in place: τ is a new array
            tau = nan_for_overflow(self.rigid, "inverse_dynamics", q, qd, qdd)
            law.compiled().added(self._table, *contiguous(qd, qdd, tau), tau)
            return tau
        return self._breakdown(q, qd, qdd).input

    def _batch_inverse_dynamics_loaded(self, q, qd, qdd, load):
        """τ_in under external wrenches: the rigid body's τ − Q, and the friction of the
        joint wrenches the load changes (bearings) and of the output torque (transmission)."""
        if self._short:                                      # friction does not read the load
            return self._batch_inverse_dynamics(q, qd, qdd) - load.generalized
        return self._breakdown(q, qd, qdd, load).input

    def joint_wrenches(self, q, qd, qdd, f_ext=None):
        """Joint reaction force and moment (n, 3) each, joint frames (see NewtonEulerBackend),
        of the rigid body with the armature in the links if it is there; friction does not
        change them (Gogoussis & Donath).  External wrenches ``f_ext`` (as for
        :meth:`inverse_dynamics`) add what they load each joint with
        (:func:`dyn_plugin.external.joint_wrench_offsets`)."""
        if f_ext is None:
            return self._wrench_source.joint_wrenches(q, qd, qdd)
        (q, qd, qdd), single = batch_args(self.model.n, self.model.joint_names, q=q, qd=qd, qdd=qdd)
        f, moment = self._loaded_wrenches(q, qd, qdd, Load.of(self.model, q, f_ext, single))
        check_finite("joint_wrenches", (f, moment), self.model, single, q=q, qd=qd, qdd=qdd)
        return (f[0], moment[0]) if single else (f, moment)

    def _loaded_wrenches(self, q, qd, qdd, load=None):
        f, moment = nan_for_overflow(self._wrench_source, "joint_wrenches", q, qd, qdd)
        if load is None:
            return f, moment
        df, dn = load.offsets
        return f + df, moment + dn

    def inverse_dynamics_breakdown(self, q, qd, qdd, f_ext=None) -> TorqueBreakdown:
        """Input torque split into rigid body, armature, bearing, transmission and velocity
        friction (Dhanaraj Table 3.5's columns); ``.input`` is :meth:`inverse_dynamics`.
        With external wrenches ``f_ext`` the rigid-body column includes their −Jᵀ w."""
        (q, qd, qdd), single = batch_args(self.model.n, self.model.joint_names, q=q, qd=qd, qdd=qdd)
        load = None if f_ext is None else Load.of(self.model, q, f_ext, single)
        parts = self._breakdown(q, qd, qdd, load)
        check_finite("inverse_dynamics_breakdown", tuple(vars(parts).values()), self.model, single, q=q, qd=qd, qdd=qdd)
        return parts.single() if single else parts

    def _breakdown(self, q, qd, qdd, load=None) -> TorqueBreakdown:
        d = direction(qd, self.friction.smoothing)
        rigid_body = nan_for_overflow(self.bare, "inverse_dynamics", q, qd, qdd)
        if load is not None:
            rigid_body = rigid_body - load.generalized
        with_armature = (rigid_body + self._armature * qdd if self.bare is self.rigid
                         else self._rigid_torque(q, qd, qdd, load))
        bearing = self._bearing(q, qd, qdd, d, load)
        tau_out = with_armature + bearing
        transmission = self._through_transmission(tau_out, d) - tau_out + d * self._breakaway
        velocity = self.friction.velocity.torque(qd)
        if self.friction.dynamic is not None:                # stateless: the law's steady state
            velocity = velocity + bristles.steady_state_force(qd, self.friction.dynamic)
        return TorqueBreakdown(rigid_body, with_armature - rigid_body, bearing, transmission, velocity)

    def _rigid_torque(self, q, qd, qdd, load=None):
        tau = nan_for_overflow(self.rigid, "inverse_dynamics", q, qd, qdd) + self._armature * qdd
        return tau if load is None else tau - load.generalized

    def _bearing(self, q, qd, qdd, d, load=None):
        bearing = self.friction.bearing
        if bearing is None or not np.any(d):
            return np.zeros_like(q)
        return d * bearing.magnitude(*self._axis_wrenches(q, qd, qdd, load))

    def _axis_wrenches(self, q, qd, qdd, load=None):
        """The joint force and moment (N, n, 3) each in the axis frames: Dhanaraj's formulas
        read the load in a frame whose z is the joint axis."""
        f, moment = self._loaded_wrenches(q, qd, qdd, load)
        to_axis = self._axis_frames
        return np.einsum("nji,Nnj->Nni", to_axis, f), np.einsum("nji,Nnj->Nni", to_axis, moment)

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

    def _transmission_slope(self, tau_out, d):
        """∂τ_in/∂τ_out per joint (N, n), one side of the efficiency's kink (1 without curves)."""
        transmission = self.friction.transmission
        return np.ones_like(tau_out) if transmission is None else transmission.slope(tau_out, d)

    def _output_torque(self, tau_in, d):
        """τ_out that the transmission turns into ``tau_in`` (its inverse, joint by joint)."""
        transmission = self.friction.transmission
        return tau_in if transmission is None else transmission.output_torque(tau_in, d)

    @property
    def _breakaway(self):
        transmission = self.friction.transmission
        return 0.0 if transmission is None else transmission.breakaway

    # -- derivatives: the chain rule through _breakdown (dyn_plugin/backends/friction_jacobians.py)

    def _batch_inverse_dynamics_derivatives(self, q, qd, qdd):
        return self._batch_inverse_dynamics_jacobians(q, qd, qdd)[:2]

    def _batch_inverse_dynamics_jacobians(self, q, qd, qdd):
        """(∂τ_in/∂q, ∂τ_in/∂q̇, ∂τ_in/∂q̈) of :meth:`_breakdown`'s input torque, (N, n, n) each
        (the chain rule: dyn_plugin/backends/friction_jacobians.py)."""
        self.rigid._require_derivatives()
        rigid = nan_for_overflow(self.rigid, "inverse_dynamics_derivatives", q, qd, qdd)
        return friction_jacobians.input_torque_jacobians(self, q, qd, qdd, rigid)

    @functools.cached_property
    def _wrench_kernels(self):
        """The compiled recursion of the joint wrenches' model, for their derivatives."""
        from ..compiled import CompiledDynamics

        return CompiledDynamics(self._wrench_source.model)

    # -- forward dynamics ------------------------------------------------------------------

    def forward_dynamics(self, q, qd, tau, f_ext=None):
        if f_ext is not None:                                # external wrenches: the validating path
            return super().forward_dynamics(q, qd, tau, f_ext)
        if self._fused:                                      # one state, one compiled call
            qdd = _empty(self._n)
            try:
                if self._fused_forward(self._fused_data, self._table, q, qd, tau, qdd) == 0:     # law.OK
                    return qdd
            except TypeError:                                # not float64 vectors (a batch): the validating path
                pass
            return super().forward_dynamics(q, qd, tau)
        if self._short and getattr(q, "ndim", 0) == 1:      # one state, sliding or without dry friction
            try:
                if not self._diagonal:
                    rhs = np.empty(len(self._zeros))
                    if self._removed(self._table, qd, tau, self._zeros, rhs) == law.OK:
                        return self.rigid.forward_dynamics(q, qd, rhs)
                else:                                        # (M + diag a)⁻¹ (τ − bias − b), in place
                    M, rhs = self.rigid.mass_matrix(q), self.rigid.bias_forces(q, qd)
                    if self._removed(self._table, qd, tau, rhs, rhs) == law.OK \
                            and self._solve_one(M, self._armature, rhs, rhs) == law.OK:
                        return rhs
            except (TypeError, DynPluginError):              # the validating path names the problem
                pass
        return super().forward_dynamics(q, qd, tau)

    def _batch_forward_dynamics_loaded(self, q, qd, tau, load):
        """q̈ under external wrenches: τ + Q without load-dependent friction, else the
        implicit friction solved with the loaded joint wrenches (as without a load)."""
        if self._short:
            return self._batch_forward_dynamics(q, qd, tau + load.generalized)
        return friction_forward.forward_with_stiction(self, q, qd, tau, load)

    def _batch_forward_dynamics(self, q, qd, tau):
        if not self._short:
            return friction_forward.forward_with_stiction(self, q, qd, tau)
        rhs, at_rest = np.empty(q.shape), np.empty(len(q), dtype=bool)
        law.compiled().removed(self._table, *contiguous(qd, tau), rhs, at_rest)
        if not at_rest.any():
            return self._rigid_forward_dynamics(q, qd, rhs)
        qdd = np.empty(q.shape)
        sliding = ~at_rest
        if sliding.any():
            qdd[sliding] = self._rigid_forward_dynamics(q[sliding], qd[sliding], rhs[sliding])
        qdd[at_rest] = friction_forward.forward_with_stiction(self, q[at_rest], qd[at_rest], tau[at_rest])
        return qdd

    def _rigid_forward_dynamics(self, q, qd, tau):
        """q̈ (N, n) of the rigid body with armature: the rigid backend's forward dynamics, or
        (M + diag a)⁻¹ (τ − bias) with its M and bias for diagonal armature."""
        if not self._diagonal:
            return nan_for_overflow(self.rigid, "forward_dynamics", q, qd, tau)
        return _solver()[0](nan_for_overflow(self.rigid, "mass_matrix", q), self._armature,
                            tau - nan_for_overflow(self.rigid, "bias_forces", q, qd))

    def velocity_step(self, q, qd, tau, dt: float, viscous: str = "explicit") -> np.ndarray:
        """q̇ after one semi-implicit Euler step of ``dt`` (s) from (q, q̇) under τ, (n,) or (N, n).

        Dry friction acts as the impulse λ, |λᵢ| ≤ Lᵢ dt, that removes the most kinetic
        energy (pybullet's velocity motor with targetVelocity 0 and force L): a joint at
        rest stays there while the impulse suffices, and a sliding joint that would reverse
        within the step stops exactly at zero.  Load-dependent friction (bearings, efficiency)
        acts at the step's own acceleration: with every joint sliding, q̇⁺ = q̇ + dt q̈ of
        :meth:`forward_dynamics` (explicit viscous friction).

        ``viscous``: ``"explicit"`` (default) applies −D q̇ at the start of the step, exactly
        as pybullet's jointDamping; it is stable only while dt·λ_max(M⁻¹D) < 2, which a
        light link with real damping breaks (1e-3 kg·m² with 0.5 N·m·s/rad at 1/240 s).
        ``"implicit"`` solves (M + dt D) Δq̇ = dt (τ − bias − D q̇) + λ: unconditionally stable,
        never reverses a joint by damping alone, first-order accurate like the explicit form.
        With load-dependent friction M is ∂τ_in/∂q̈, and the step is solved by Newton's method.

        A model with a dynamic law (LuGre, Dahl) is refused: its step needs the bristle state,
        :meth:`state_step`.
        """
        if self.friction.dynamic is not None:
            raise InputError(f"{self.name}: friction model {self.friction.name!r} has a {self.friction.dynamic.law} "
                             "law, whose bristle state z a velocity step would lose: use state_step(q, qd, z, tau, "
                             "dt) -> (qd_next, z_next), or dyn_plugin.simulate, which carries z")
        (q, qd, tau), single = batch_args(self.model.n, self.model.joint_names, q=q, qd=qd, tau=tau)
        if not (np.isfinite(dt) and dt > 0):
            raise InputError(f"time step dt must be positive and finite, got {dt}")
        if viscous not in ("explicit", "implicit"):
            raise InputError(f"viscous must be 'explicit' or 'implicit', got {viscous!r}")
        implicit = viscous == "implicit" and bool(np.any(self.friction.velocity.viscous != 0))
        if not (self.friction.set_valued or implicit):
            after = qd + dt * self._batch_forward_dynamics(q, qd, tau)
        else:
            after = friction_forward.impulse_step(self, q, qd, tau, dt, implicit)
        check_finite("velocity_step", after, self.model, single, q=q, qd=qd, tau=tau)
        return after[0] if single else after


    # -- a dynamic law's state: dyn_plugin/backends/bristle_stepping.py -----------------------

    def state_step(self, q, qd, z, tau, dt: float) -> tuple:
        """(q̇⁺, z⁺) after one semi-implicit Euler step of ``dt`` (s) from (q, q̇) and the bristle
        deflection z (rad) of the model's dynamic law, (n,) or (N, n) each; the bristles act
        implicitly and relax exactly (:func:`.bristle_stepping.implicit_step`), stable at any
        dt.  q⁺ = q + dt q̇⁺ is the caller's, as after :meth:`velocity_step`."""
        (q, qd, z, tau), single = self._state_args(q=q, qd=qd, z=z, tau=tau)
        if not (np.isfinite(dt) and dt > 0):
            raise InputError(f"time step dt must be positive and finite, got {dt}")
        after, z_after = bristle_stepping.implicit_step(self, q, qd, z, tau, dt)
        check_finite("state_step", (after, z_after), self.model, single, q=q, qd=qd, z=z, tau=tau)
        return (after[0], z_after[0]) if single else (after, z_after)

    def state_rates(self, q, qd, z, tau) -> tuple:
        """(q̈, ż) at (q, q̇, z) under τ, (n,) or (N, n) each: the ODE of the rigid body with the
        dynamic law's torque F = σ0 z + σ1 ż + σ2 q̇ (:func:`.bristle_stepping.rates`)."""
        (q, qd, z, tau), single = self._state_args(q=q, qd=qd, z=z, tau=tau)
        qdd, rate = bristle_stepping.rates(self, q, qd, z, tau)
        check_finite("state_rates", (qdd, rate), self.model, single, q=q, qd=qd, z=z, tau=tau)
        return (qdd[0], rate[0]) if single else (qdd, rate)

    def _state_args(self, **arrays) -> tuple:
        if self.friction.dynamic is None:
            raise InputError(f"{self.name}: friction model {self.friction.name!r} has no dynamic law (no bristle "
                             "state): use velocity_step / forward_dynamics")
        return batch_args(self.model.n, self.model.joint_names, **arrays)


class NewtonEulerFrictionBackend(FrictionBackend):
    name = "newton_euler_friction"
    description = "newton_euler + joint friction (viscous, Coulomb, Schilling, Dhanaraj bearing/transmission) and armature"
    default_rigid = "newton_euler"


class LagrangeEulerFrictionBackend(FrictionBackend):
    name = "lagrange_euler_friction"
    description = "lagrange_euler + the same friction and armature (joint wrenches for bearings from Newton-Euler)"
    default_rigid = "lagrange_euler"


def with_friction(rigid: str, model, friction=None, profile: Optional[str] = None, gravity=None,
                  **rigid_options) -> FrictionBackend:
    """Backend ``rigid`` (a registered name: ``"pinocchio"``, ``"symbolic_numba"``, ...) for
    ``model`` with joint friction and armature: a :class:`FrictionBackend` named
    ``<rigid>_friction``.  ``friction``, ``profile`` and ``gravity`` as for
    ``newton_euler_friction``; ``rigid_options`` go to the rigid backend's factory."""
    return FrictionBackend(model, friction, profile, gravity, rigid=rigid, **rigid_options)
