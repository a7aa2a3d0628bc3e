"""The Backend interface every dynamics engine implements.

Public methods accept one state ``(n,)`` or a batch ``(N, n)`` and return the matching
shape (``(n, n)`` / ``(N, n, n)`` for matrices).  They check shapes and finiteness once,
here, and hand ``(N, n)`` float arrays to the ``_batch_*`` methods a backend implements.

A backend must implement :meth:`Backend._batch_inverse_dynamics` and
:meth:`Backend._batch_mass_matrix`; the rest have correct (if not the fastest) defaults:

* gravity ``g(q) = τ(q, 0, 0)``, bias ``τ(q, q̇, 0)``;
* forward dynamics ``q̈ = M⁻¹(τ − bias)`` by Cholesky (Walker & Orin's method 1);
* the Christoffel Coriolis matrix by polarisation of the velocity terms: with
  ``h(u) = Σ_jk Γ_ijk u_j u_k`` (gravity off), ``C e_j = [h(q̇ + s e_j) − h(q̇ − s e_j)] / 4s``
  is exactly ``Σ_k Γ_ijk q̇_k``, the C for which ``Ṁ − 2C`` is skew-symmetric (evaluated
  at q̇ / max|q̇ₖ| and scaled back, C being linear in q̇, so that it cannot overflow early).

Every backend has the frame kinematics of :mod:`dyn_plugin.frames` (``frame_placement``,
``frame_jacobian``, ``frame_velocity``, ``frame_acceleration``,
``frame_jacobian_time_variation``, validated here); an engine with its own overrides the
``_batch_frame_*`` methods (pinocchio does).

A result that is not finite (float64 overflow, e.g. q̇ = 1e300 squared) is never
returned: every public method raises :class:`~dyn_plugin.errors.NumericalError` naming
the quantity, the state, the joint and the largest input instead.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Optional

import numpy as np

from ..arrays import SINGULAR, _overflow, all_finite, as_batch, batch_args, check_finite, state_args  # noqa: F401 (as_batch, check_finite: re-exported)

__all__ = ["Backend", "CAPABILITIES", "KINDS", "SINGULAR", "as_batch", "batch_args", "chain_joint_wrenches", "check_finite",
           "cholesky_factor", "nan_for_overflow"]
from .. import floating, frames
from ..errors import BackendError, InputError, ModelError, NumericalError
from ..loops import using_workers
from ..model import RobotModel



def cholesky_factor(M: np.ndarray) -> np.ndarray:
    """L (N, n, n) with L Lᵀ = M (N, n, n); raises ``np.linalg.LinAlgError`` where a pivot
    L_jj² is not above SINGULAR × M's largest diagonal entry: M singular (to rounding),
    whose solve would be rounding error magnified 1e13 times or more."""
    L = np.linalg.cholesky(M)
    largest = np.diagonal(M, axis1=-2, axis2=-1).max(axis=-1, keepdims=True, initial=0.0)
    if not np.all(np.diagonal(L, axis1=-2, axis2=-1) ** 2 > SINGULAR * largest):
        raise np.linalg.LinAlgError("a pivot of the mass matrix's Cholesky factorisation is below SINGULAR × its "
                                    "largest diagonal entry")
    return L


def nan_for_overflow(backend, method: str, *arrays):
    """``backend.<method>(*arrays)`` on validated (N, ...) batches, with NaN instead of a
    NumericalError in the states whose result overflows: a backend wrapping ``backend``
    (friction, joints of several degrees of freedom) then reports it in its own terms (its
    method, the state, the input that caused it: :meth:`Backend._run`).  A state whose
    arrays are not finite (the wrapper's own intermediate overflowed: a q̈ from a forward
    solve) is not passed on, whose input check would name an input the caller never gave:
    it is NaN too.  A method returning a tuple (joint wrenches) gets NaN in each part."""
    function = getattr(backend, method)
    try:
        return function(*arrays)
    except (NumericalError, InputError):       # an InputError that a finite state repeats is the caller's
        pass
    finite = np.ones(len(arrays[0]), dtype=bool)
    for a in arrays:
        finite &= np.isfinite(a.reshape(len(a), -1)).all(axis=1)
    rows = []
    for k in range(len(arrays[0])):                  # which states: one at a time (an error path only)
        try:
            rows.append(function(*(a[k:k + 1] for a in arrays)) if finite[k] else None)
        except NumericalError:
            rows.append(None)
    shape = next((r for r in rows if r is not None), None)
    if shape is None:                                # every state overflows: the shapes from the first
        with np.errstate(all="ignore"):
            shape = function(*(np.zeros_like(a[:1]) for a in arrays))
    if isinstance(shape, tuple):
        return tuple(np.concatenate([np.full_like(part, np.nan) if r is None else r[i]
                                     for r in rows]) for i, part in enumerate(shape))
    return np.concatenate([np.full_like(shape, np.nan) if r is None else r for r in rows])


def chain_joint_wrenches(chain, model):
    """``chain.joint_wrenches``, the method a backend of ``model`` built on ``chain`` (its
    free-flyer or expanded chain) answers with; a BackendError when the chain has none."""
    if not hasattr(chain, "joint_wrenches"):
        raise BackendError(f"joint_wrenches: backend {chain.name!r} has none (they are Newton-Euler's: build robot "
                           f"{model.name!r} with dyn_plugin.get_backend('newton_euler', model))")
    return chain.joint_wrenches


KINDS = ("ours", "generated", "reference")
"""What a backend is: ``ours`` (implemented here, validated against the references),
``generated`` (code generated per robot, validated likewise), ``reference`` (pinocchio,
pybullet: what the others are validated against)."""

CAPABILITIES = ("friction", "stepping", "joint_wrenches", "christoffel", "single_state_kernels", "block_kernels",
                "floating_base", "mimic", "multi_dof", "derivatives")
"""What a backend can do beyond the :class:`Backend` interface:

friction        its τ and q̈ include joint friction (``.friction``, ``inverse_dynamics_breakdown``)
stepping        ``velocity_step(q, qd, tau, dt)``: a time step with friction impulses
joint_wrenches  ``joint_wrenches(q, qd, qdd)``: joint reaction forces and moments
christoffel     ``christoffel(q)`` and ``configuration_space(q)`` (h_ikm; ROBMAT's M, B, C, G)
single_state_kernels  ``single_state_kernels()``: its compiled one-state inverse and forward
                dynamics as ``((inverse, forward), data)``, numba dispatchers called as
                ``kernel(data, q, qd, x, out) -> status`` (0 = done), or None when this
                instance has none; the friction wrapper composes them with its law
block_kernels   ``block_kernels()``: its compiled inverse dynamics of part of a batch as
                ``(inverse, data)``, a numba dispatcher called as ``inverse(data, Q, QD, QDD,
                TAU, start, stop)`` (τ of rows start..stop−1), or None when this instance has
                none; the friction wrapper runs its law on each part in the same loop
floating_base   it takes a floating-base model itself (q of nq, v of nv entries); every
                other backend gets one through :mod:`.floating_base`, which runs it on
                the robot's free-flyer chain (:func:`dyn_plugin.get_backend` does this)
mimic           it takes a model with mimic joints itself (reduced coordinates); every other
                backend gets one through :mod:`.mimic_backend`
multi_dof       it takes a model with spherical, planar or floating joints itself
                (:mod:`dyn_plugin.joints`); every other backend gets one through
                :mod:`.multi_dof_backend`, which runs it on their chain of one-dof joints
derivatives     ``inverse_dynamics_derivatives`` and ``forward_dynamics_derivatives``: analytic
                partial derivatives of its τ and q̈ (rigid bodies: the recursion of
                :mod:`dyn_plugin.compiled.derivatives`, the default here; friction backends add
                their law's; pinocchio its own)
"""


# numpy's arithmetic in the readable algorithms, without its overflow warnings: Backend._run
# checks the result and names the input that overflowed (Backend._checked_arithmetic).
numpy_checked_afterwards = functools.partial(np.errstate, over="ignore", invalid="ignore", divide="ignore")


def rotor_armature(armature, model) -> np.ndarray:
    """Rotor inertias (n,) ≥ 0, finite: the model's own (:attr:`RobotModel.armature`) for
    None; one given here replaces a model without armature, never adds to one."""
    if armature is None:
        return np.array(model.armature)
    a = np.asarray(armature, dtype=float)
    if a.shape != (model.n,) or not np.all(np.isfinite(a)) or np.any(a < 0):
        raise InputError(f"armature must be {model.n} finite numbers >= 0 (kg·m², kg for prismatic joints), "
                         f"one per joint of robot {model.name!r}; got {armature!r}")
    if np.any(model.armature) and not np.array_equal(a, model.armature):
        raise InputError(f"model {model.name!r} carries armature {list(model.armature)} already (its "
                         "RobotModel.armature); give armature once")
    return a


class Backend:
    """Dynamics of one robot model.  Subclasses set ``name`` and ``description``, and
    declare what they are (``kind``, one of :data:`KINDS`) and what they can do
    (``capabilities``, a frozenset of :data:`CAPABILITIES`); the registry derives every
    list of backends from these declarations."""

    name = "abstract"
    description = ""
    kind = "ours"
    capabilities: frozenset = frozenset()

    @classmethod
    def can(cls, *capabilities: str) -> bool:
        """True when the backend declares every one of ``capabilities``."""
        return set(capabilities) <= cls.capabilities

    def __init__(self, model: RobotModel, gravity: Optional[np.ndarray] = None):
        if model.mimic and not self.can("mimic"):
            raise ModelError(f"{type(self).__name__} takes models without mimic joints; for robot {model.name!r} build "
                             f"it with dyn_plugin.get_backend({self.name!r}, model), which reduces the coordinates")
        if model.floating_base and not self.can("floating_base"):
            raise ModelError(f"{type(self).__name__} takes fixed-base models; for robot {model.name!r}, which has a "
                             f"floating base, build it with dyn_plugin.get_backend({self.name!r}, model), which runs it "
                             "on the robot's free-flyer chain (dyn_plugin.floating)")
        self.model = model if gravity is None else model.with_gravity(gravity)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model.name!r}, n={self.model.n})"

    @property
    def gravity(self) -> np.ndarray:
        """Physical gravity (3,), m/s², in the base frame."""
        return self.model.gravity

    # -- public surface: shapes in, shapes out -----------------------------------------

    workers: Optional[int] = None
    """Cores for this backend's parallel batch loops (``get_backend(..., workers=2)``); None:
    the process's setting (:func:`dyn_plugin.loops.workers`, every core by default)."""

    def _run(self, method, matrix: bool = False, **arrays):
        checking = self._checking_batch(method)
        args, single = state_args(self.model, finite=checking is None, **arrays)
        if len(args[0]) == 0:            # no states: the answer's shape, from one
            result = self._run(method, matrix, **self._one_state(arrays, args))
            return tuple(part[:0] for part in result) if isinstance(result, tuple) else result[:0]
        call = checking or (lambda *states: (method(*states), False))
        with self._checked_arithmetic():
            if self.workers is None:
                result, finite = call(*args)
            else:
                with using_workers(self.workers):
                    result, finite = call(*args)
        # A NaN never leaves the library as an answer.
        if not finite:
            if checking:
                state_args(self.model, **arrays)                  # names a non-finite input
            for part in result if isinstance(result, tuple) else (result,):
                if not all_finite(part):
                    what = getattr(method, "__name__", "").replace("_batch_", "") or "result"
                    raise _overflow(what, part, self.model, single, dict(zip(arrays, args)))
        if isinstance(result, tuple):
            return tuple(part[0] for part in result) if single else result
        return result[0] if single else result

    def _one_state(self, names, args) -> dict:
        """Arrays of one state in the shapes of the validated batches ``args``: the neutral
        configuration, every other entry 1 (q̇ ≠ 0: dry friction has a derivative there)."""
        return {name: self.model.neutral()[None] if name == "q" else np.ones((1, a.shape[1]))
                for name, a in zip(names, args)}

    def _checked_arithmetic(self):
        """The context :meth:`_run` computes a batch in: where numpy does the arithmetic (the
        readable algorithms), ``np.errstate`` without numpy's overflow and invalid-value
        warnings, since :meth:`_run` checks the result and names the input that overflowed
        (:class:`~dyn_plugin.errors.NumericalError`); compiled code never warns (the default)."""
        return contextlib.nullcontext()

    def _checking_batch(self, method):
        """``method`` (a ``_batch_*`` method) in a form that checks, as it computes, that every
        entry of its inputs and result is finite: a function of the shape-validated states
        returning ``(result, all finite)``, so that :meth:`_run` need not pass over the
        arrays before and after; None where this backend has none (the default)."""
        return None

    def inverse_dynamics(self, q, qd, qdd, f_ext=None):
        """Joint torques/forces τ (N·m or N) for positions q, velocities q̇ and accelerations q̈.

        ``f_ext``: external wrenches, a mapping frame name (``model.frame_names``) ->
        [fx, fy, fz, mx, my, mz] (N, N·m) applied at the frame origin in world-aligned axes,
        (6,) or (N, 6); τ = τ(q, q̇, q̈) − Σ Jᵀ w (:mod:`dyn_plugin.external`)."""
        if f_ext is None or self._no_states(q, f_ext):
            return self._run(self._batch_inverse_dynamics, q=q, qd=qd, qdd=qdd)
        return self._run(self._loaded("inverse_dynamics", f_ext, np.ndim(q) == 1), q=q, qd=qd, qdd=qdd)

    def forward_dynamics(self, q, qd, tau, f_ext=None):
        """Joint accelerations q̈ (rad/s² or m/s²) produced by torques τ (and the external
        wrenches ``f_ext``, as for :meth:`inverse_dynamics`: q̈ = FD(q, q̇, τ + Σ Jᵀ w)).

        Undefined where M(q) is singular (a joint that moves no mass or inertia): a
        :class:`~dyn_plugin.errors.ModelError` names such joints, for every backend."""
        if f_ext is None or self._no_states(q, f_ext):
            return self._run_forward(self._batch_forward_dynamics, q=q, qd=qd, tau=tau)
        return self._run_forward(self._loaded("forward_dynamics", f_ext, np.ndim(q) == 1), q=q, qd=qd, tau=tau)

    def _run_forward(self, method, q, qd, tau):
        """:meth:`_run` for what needs M(q)⁻¹: a singular M is named (ModelError), in this
        backend's joints and states also when a backend it wraps (a free-flyer chain, a rigid
        body under friction, on a subset of the states) refused it first."""
        try:
            return self._run(method, q=q, qd=qd, tau=tau)
        except (NumericalError, ModelError, np.linalg.LinAlgError) as error:
            self._refuse_singular_mass_matrix(q)
            if isinstance(error, np.linalg.LinAlgError):
                raise ModelError(f"forward dynamics of robot {self.model.name!r}: the mass matrix cannot be "
                                 f"factorised ({error})") from None
            raise

    def _no_states(self, q, f_ext) -> bool:
        """Whether ``q`` is a batch of no states, ``f_ext`` validated for it: the answer is
        then the unloaded one's, (0, nv) (:meth:`_run` probes one state for the shape, which
        a (0, 6) wrench would not fit)."""
        if np.ndim(q) != 2 or len(q) != 0:
            return False
        from ..external import validate

        validate(self.model, f_ext, 0, False)
        return True

    def _loaded(self, what: str, f_ext, single: bool):
        """``_batch_<what>`` under the external wrenches ``f_ext`` (validated here against the
        validated batch): a function of the (N, ...) states for :meth:`_run`."""
        from ..external import Load

        method = getattr(self, f"_batch_{what}_loaded")

        def loaded(q, *arrays):
            return method(q, *arrays, Load.of(self.model, q, f_ext, single))

        loaded.__name__ = f"_batch_{what}"
        return loaded

    def _refuse_singular_mass_matrix(self, q) -> None:
        """Raise a ModelError naming the joints that move no mass or inertia if M(q) is
        singular at one of the (validated) states ``q``; return otherwise.  An M that
        overflows is a NumericalError naming the state (not a singular M)."""
        single = state_args(self.model, q=q)[1]
        nv = self.model.nv
        for state, M in enumerate(np.reshape(self.mass_matrix(q), (-1, nv, nv))):
            moments, directions = np.linalg.eigh(M)
            if moments[0] > SINGULAR * max(moments[-1], 1e-300):
                continue
            diagonal = np.diag(M)
            idle = [name for name, m_ii in zip(self.model.velocity_names, diagonal) if m_ii <= SINGULAR * diagonal.max()]
            empty = [link for link, m, I in zip(self.model.link_names, self.model.masses, self.model.inertias)
                     if m == 0 and not I.any()]
            raise ModelError(
                f"forward dynamics of robot {self.model.name!r} is undefined" + ("" if single else f" at state {state}")
                + f": the mass matrix is singular (smallest eigenvalue {moments[0]:.3g}, largest {moments[-1]:.3g})"
                + (f"; joints moving no mass or inertia: {', '.join(map(repr, idle))}" if idle else "")
                + (f"; links without mass or inertia: {', '.join(map(repr, empty))}. Give those links an "
                   "<inertial> (a rotor needs only its inertia), or make their joints fixed" if empty else
                   ": no finite torque defines their acceleration" if idle else
                   f"; this motion of the joints together moves no mass or inertia: {self._motion(directions[:, 0])}"))

    def _motion(self, direction: np.ndarray) -> str:
        """A null direction of M, its main entries by velocity name (the largest 1)."""
        direction = direction / direction[np.argmax(np.abs(direction))]
        main = [k for k in np.argsort(-np.abs(direction)) if abs(direction[k]) >= 0.01]
        return ", ".join(f"{self.model.velocity_names[k]} {direction[k]:+.3g}" for k in main)

    # -- derivatives ----------------------------------------------------------------------

    def inverse_dynamics_derivatives(self, q, qd, qdd):
        """Analytic partial derivatives of :meth:`inverse_dynamics`: ``(∂τ/∂q, ∂τ/∂q̇)``, each
        (nv, nv) or (N, nv, nv), entry [i, j] = ∂τ_i/∂q_j (N·m/rad, N/m, ...; N·m·s/rad, ...).
        ∂τ/∂q̈ is :meth:`mass_matrix`.  Recursive, O(n²) (Carpentier & Mansard 2018; see
        :mod:`dyn_plugin.compiled.derivatives`), equal to pinocchio's
        ``computeRNEADerivatives``.  A floating base is differentiated along the tangent of
        its configuration, as pinocchio does: column j is d/dε τ(q ⊕ ε e_j) with
        :func:`dyn_plugin.configuration.integrate` (nv columns for nq entries of q)."""
        self._require_derivatives()
        return self._run(self._batch_inverse_dynamics_derivatives, q=q, qd=qd, qdd=qdd)

    def forward_dynamics_derivatives(self, q, qd, tau):
        """Analytic partial derivatives of :meth:`forward_dynamics`: ``(∂q̈/∂q, ∂q̈/∂q̇, ∂q̈/∂τ)``,
        each (nv, nv) or (N, nv, nv); ∂q̈/∂τ is M⁻¹ for rigid bodies (armature included).
        From the inverse dynamics' derivatives at q̈ = FD(q, q̇, τ) (implicit functions:
        ∂q̈/∂x = −(∂τ/∂q̈)⁻¹ ∂τ/∂x), equal to pinocchio's ``computeABADerivatives``;
        q as for :meth:`inverse_dynamics_derivatives`."""
        self._require_derivatives()
        return self._run_forward(self._batch_forward_dynamics_derivatives, q=q, qd=qd, tau=tau)

    def _require_derivatives(self) -> None:
        if not self.can("derivatives"):
            raise BackendError(f"backend {self.name!r} has no analytic derivatives; use one that declares them "
                               "(dyn_plugin.backends.registry.backends(can=('derivatives',)) lists them)")

    def regressor(self, q, qd, qdd):
        """The inertial-parameter regressor Y (n, 10 n) or (N, n, 10 n): τ = Y θ (rigid body,
        this backend's gravity; no friction or armature) with θ =
        ``model.inertial_parameters(flat=True)``, pinocchio's ``computeJointTorqueRegressor``
        (:mod:`dyn_plugin.algorithms.regressor`; with joints of several degrees of freedom or
        mimic joints, the sum over the bodies of :mod:`dyn_plugin.body_sums`).  Fixed-base
        models: θ has no place for a floating base's own ten parameters."""
        from ..algorithms.regressor import joint_torque_regressor
        from ..body_sums import joint_torque_regressor as by_bodies

        if self.model.floating_base:
            raise ModelError(f"the regressor of robot {self.model.name!r}: θ = model.inertial_parameters() lists the "
                             "moving links' parameters, not a floating base's; load the robot with a fixed base")
        general = bool(self.model.multi_dof_indices or self.model.mimic)

        def _batch_regressor(q, qd, qdd):
            return (by_bodies if general else joint_torque_regressor)(self.model, q, qd, qdd)

        return self._run(_batch_regressor, q=q, qd=qd, qdd=qdd)

    def mass_matrix(self, q):
        """Joint-space inertia matrix M(q), symmetric positive definite, (n, n) or (N, n, n)."""
        return self._run(self._batch_mass_matrix, q=q)

    def bias_forces(self, q, qd):
        """C(q, q̇) q̇ + g(q): the torque needed for zero acceleration."""
        return self._run(self._batch_bias_forces, q=q, qd=qd)

    def gravity_torques(self, q):
        """g(q): the torque that holds the robot still against gravity."""
        return self._run(self._batch_gravity_torques, q=q)

    def coriolis_matrix(self, q, qd):
        """C(q, q̇) in Christoffel form: C q̇ = velocity terms and Ṁ − 2C skew-symmetric."""
        return self._run(self._batch_coriolis_matrix, q=q, qd=qd)

    # -- frames: every URDF link (model.frame_names); dyn_plugin.frames, or the engine's own --

    def frame_placement(self, q, frame: str):
        """World placement (4, 4) of ``frame`` (one of ``model.frame_names``, m), (N, 4, 4) for a batch."""
        return self._run_frame("frame_placement", frame, None, q=q)

    def frame_jacobian(self, q, frame: str, reference: str = "local_world_aligned"):
        """Frame Jacobian J (6, nv) or (N, 6, nv): rows [linear velocity of the frame origin;
        angular velocity] = J q̇, in ``reference``: ``"local_world_aligned"`` (world axes at
        the frame origin), ``"world"`` (the spatial velocity at the world origin) or
        ``"local"`` (the frame's own axes), pinocchio's ``ReferenceFrame``
        (:mod:`dyn_plugin.frames`)."""
        return self._run_frame("frame_jacobian", frame, reference, q=q)

    def frame_velocity(self, q, qd, frame: str, reference: str = "local_world_aligned"):
        """[v; ω] (6,) or (N, 6) of ``frame`` in ``reference`` (m/s, rad/s): J q̇."""
        return self._run_frame("frame_velocity", frame, reference, q=q, qd=qd)

    def frame_acceleration(self, q, qd, qdd, frame: str, reference: str = "local_world_aligned"):
        """Classical acceleration [a; ω̇] (6,) or (N, 6) of ``frame``'s origin in ``reference``
        (m/s², rad/s²; pinocchio's ``getFrameClassicalAcceleration``)."""
        return self._run_frame("frame_acceleration", frame, reference, q=q, qd=qd, qdd=qdd)

    def frame_jacobian_time_variation(self, q, qd, frame: str, reference: str = "local_world_aligned"):
        """J̇ (6, nv) or (N, 6, nv): the time derivative of :meth:`frame_jacobian` in
        ``reference`` along q̇, so that J q̈ + J̇ q̇ is the derivative of the frame velocity."""
        return self._run_frame("frame_jacobian_time_variation", frame, reference, q=q, qd=qd)

    def _run_frame(self, what: str, frame: str, reference, **arrays):
        """Validate the frame name, the reference and the states (unit base quaternions), run
        ``_batch_<what>`` and refuse a result that is not finite."""
        self.model.frame(frame)                     # an unknown name lists the valid ones
        options = {} if reference is None else {"reference": frames.reference_name(reference)}
        args, single = state_args(self.model, **arrays)
        if len(args[0]) == 0:            # no states: the answer's shape, from one
            return self._run_frame(what, frame, reference, **self._one_state(arrays, args))[:0]
        if self.model.floating_base:
            args[0] = floating.unit_quaternions(args[0])
        result = getattr(self, f"_batch_{what}")(*args, frame, **options)
        if not all_finite(result):
            state = int(np.argwhere(~np.isfinite(result))[0][0])
            raise NumericalError(f"{what} of frame {frame!r} of robot {self.model.name!r} overflowed"
                                 + ("" if single else f" at state {state}") + " although every input is finite "
                                 "(float64 ends near 1.8e308); check the inputs' units and magnitudes")
        return result[0] if single else result

    def _batch_frame_placement(self, q, frame):
        return frames.frame_placement(self.model, q, frame)

    def _batch_frame_jacobian(self, q, frame, reference):
        return frames.frame_jacobian(self.model, q, frame, reference)

    def _batch_frame_velocity(self, q, qd, frame, reference):
        return frames.frame_velocity(self.model, q, qd, frame, reference)

    def _batch_frame_acceleration(self, q, qd, qdd, frame, reference):
        return frames.frame_acceleration(self.model, q, qd, qdd, frame, reference)

    def _batch_frame_jacobian_time_variation(self, q, qd, frame, reference):
        return frames.frame_jacobian_time_variation(self.model, q, qd, frame, reference)

    # -- what a backend implements (batches of shape (N, n)) ----------------------------

    def _batch_inverse_dynamics(self, q, qd, qdd):
        raise NotImplementedError

    def _batch_mass_matrix(self, q):
        raise NotImplementedError

    def _batch_inverse_dynamics_loaded(self, q, qd, qdd, load):
        """τ (N, nv) under the external load ``load`` (:class:`dyn_plugin.external.Load`):
        τ_rigid − Q.  A backend whose τ depends on the load otherwise (friction) overrides it."""
        return self._batch_inverse_dynamics(q, qd, qdd) - load.generalized

    def _batch_forward_dynamics_loaded(self, q, qd, tau, load):
        """q̈ (N, nv) under ``load``: FD(q, q̇, τ + Q)."""
        return self._batch_forward_dynamics(q, qd, tau + load.generalized)

    def _batch_gravity_torques(self, q):
        zero = np.zeros((len(q), self.model.nv))
        return self._batch_inverse_dynamics(q, zero, zero)

    def _batch_bias_forces(self, q, qd):
        return self._batch_inverse_dynamics(q, qd, np.zeros_like(qd))

    def _batch_velocity_terms(self, q, qd):
        """C(q, q̇) q̇ alone (gravity off)."""
        return self._batch_bias_forces(q, qd) - self._batch_gravity_torques(q)

    def _batch_forward_dynamics(self, q, qd, tau):
        L = cholesky_factor(self._batch_mass_matrix(q))
        rhs = tau - self._batch_bias_forces(q, qd)
        y = np.linalg.solve(L, rhs[..., None])
        return np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]

    def _batch_inverse_dynamics_derivatives(self, q, qd, qdd):
        """(∂τ/∂q, ∂τ/∂q̇) (N, n, n) of the rigid bodies of the model: the compiled recursion
        (the armature's a q̈ depends on neither)."""
        return self._rigid_kernels.inverse_dynamics_derivatives(q, qd, qdd)

    def _batch_inverse_dynamics_jacobians(self, q, qd, qdd):
        """(∂τ/∂q, ∂τ/∂q̇, ∂τ/∂q̈) (N, n, n); ∂τ/∂q̈ is the mass matrix for rigid bodies
        (with their armature)."""
        return (*self._batch_inverse_dynamics_derivatives(q, qd, qdd), self._batch_mass_matrix(q))

    def _batch_forward_dynamics_derivatives(self, q, qd, tau):
        """(∂q̈/∂q, ∂q̈/∂q̇, ∂q̈/∂τ) from this backend's forward dynamics and the Jacobians of
        its inverse dynamics there (:meth:`_batch_inverse_dynamics_jacobians`)."""
        from ..compiled import implicit_derivatives

        qdd = self._batch_forward_dynamics(q, qd, tau)
        dq, dv, da = self._batch_inverse_dynamics_jacobians(q, qd, qdd)
        return implicit_derivatives(da, dq, dv)

    @functools.cached_property
    def _rigid_kernels(self):
        """The compiled rigid-body dynamics of this (fixed-base) model."""
        from ..compiled import CompiledDynamics

        return CompiledDynamics(self.model)

    def _batch_coriolis_matrix(self, q, qd):
        """The Christoffel C, ½ ∂h/∂q̇ by polarising the velocity terms h, where every velocity is
        a coordinate's rate; else (a floating base, joints of several degrees of freedom,
        whose angular velocities are not) the sum over the bodies of :mod:`dyn_plugin.coriolis`."""
        if self.model.floating_base or self.model.multi_dof_indices:
            from ..body_sums import coriolis_matrix

            return coriolis_matrix(self.model, floating.unit_quaternions(q) if self.model.floating_base else q, qd)
        # C is linear in q̇: C(q, q̇) = m C(q, q̇/m) with m = max|q̇ₖ|, so the quadratic h is
        # only ever evaluated at |u| ≤ √n and a q̇ whose C is representable cannot overflow.
        N, n = qd.shape
        size = np.abs(qd).max(axis=1)                                       # (N,)
        size = np.where(size > 0, size, 1.0)                                 # q̇ = 0: C = 0 either way
        unit = qd / size[:, None]
        scale = np.maximum(1.0, np.linalg.norm(unit, axis=1))               # (N,)
        step = scale[:, None, None] * np.eye(n)                             # (N, n, n): s e_j
        q_rep = np.repeat(q, n, axis=0)
        plus = self._batch_velocity_terms(q_rep, (unit[:, None, :] + step).reshape(N * n, n))
        minus = self._batch_velocity_terms(q_rep, (unit[:, None, :] - step).reshape(N * n, n))
        columns = (plus - minus).reshape(N, n, n) * (size / (4.0 * scale))[:, None, None]  # [state, j, i]
        return columns.transpose(0, 2, 1)
