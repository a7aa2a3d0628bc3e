"""Any fixed-base backend on a floating-base robot, through the free-flyer chain.

:func:`dyn_plugin.floating.free_flyer_chain` turns the robot into a fixed-base chain
that moves like it at any one state; the backend runs on that chain and this wrapper maps
the states: the chain's configuration is the joints' (the six base joints at zero), its
velocity is v itself and its acceleration a + d(q, v)
(:func:`~dyn_plugin.floating.acceleration_offset`).  So newton_euler, lagrange_euler,
their friction variants (friction on the robot's joints; the base joints have none) and
any backend registered later serve floating robots with no recursion written again.
:func:`dyn_plugin.get_backend` builds this wrapper for every backend that does not declare
the ``floating_base`` capability itself.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import floating
from ..compiled import NO_SINGLE_STATE_PATH, FreeFlyerKernels
from ..errors import BackendError, ModelError
from ..terms import Terms
from .base import Backend, chain_joint_wrenches, nan_for_overflow, numpy_checked_afterwards
from .entry_point_path import EntryPointPath


# What the chain backend can do that stays true through the state map.  Not kept:
# christoffel (the chain's Christoffel symbols are in its own coordinates, not in the
# base velocity's) and single_state_kernels (compiled for the chain's states).
KEPT_CAPABILITIES = frozenset({"friction", "stepping", "joint_wrenches", "derivatives"})
SHARED_ATTRIBUTES = frozenset({"compiled"})   # the chain backend's, unchanged


def floating_backend(name: str, factory, model, get_backend, **options) -> Backend:
    """Backend ``name`` (registered as ``factory``, a fixed-base backend) for the
    floating-base ``model``, built on the chain by ``get_backend`` (the registry's);
    ``options`` go to it (``gravity=`` is the world's, applied here)."""
    gravity = options.pop("gravity", None)
    model = model if gravity is None else model.with_gravity(gravity)
    chain = floating.free_flyer_chain(model)
    joint_friction = None
    if getattr(factory, "capabilities", frozenset()) >= {"friction"}:
        from ..friction.parameters import resolve_friction

        joint_friction = resolve_friction(model.with_floating_base(False), options.get("friction"),
                                          options.pop("profile", None))
        options["friction"] = _chain_friction(model, chain, joint_friction)
    if options.get("armature") is not None:
        armature = np.broadcast_to(np.asarray(options["armature"], dtype=float), (model.n,))
        options["armature"] = np.concatenate([np.zeros(6), armature])
    backend = floating_class(factory)(model, get_backend(name, chain, **options))
    backend.friction = joint_friction
    return backend


def _chain_friction(model, chain, joints):
    """The robot's joint friction ``joints`` (a FrictionModel of its n joints, as a friction
    backend resolves it for the fixed-base robot) on the chain: the base joints have none."""
    from ..friction.parameters import FrictionModel

    if joints.bearing is not None or joints.transmission is not None:
        raise ModelError(f"robot {model.name!r} has a floating base: its friction {joints.name!r} may hold viscous, "
                         "Coulomb, static and Stribeck friction and armature, not bearing or transmission friction")
    v = joints.velocity
    free = lambda values, base=0.0: np.concatenate([np.full(6, base), np.broadcast_to(values, (model.n,))])  # noqa: E731
    return FrictionModel.create(
        chain, viscous=free(v.viscous), coulomb=free(v.coulomb_positive), coulomb_negative=free(v.coulomb_negative),
        static=free(v.static_positive), static_negative=free(v.static_negative),
        stribeck_velocity=free(v.stribeck_velocity, 1.0), smoothing=v.smoothing, armature=free(joints.armature),
        armature_form=joints.armature_form, name=joints.name, source=joints.source)


@functools.lru_cache(maxsize=None)
def floating_class(chain_class) -> type:
    """The wrapper class for backends of ``chain_class``: same name, kind and (kept)
    capabilities, so that ``type(backend).can(...)`` answers for the wrapped backend."""
    capabilities = frozenset(getattr(chain_class, "capabilities", ())) & KEPT_CAPABILITIES
    return type(f"FloatingBase{getattr(chain_class, '__name__', 'Backend')}", (FloatingBaseBackend,), {
        "name": getattr(chain_class, "name", "custom"), "kind": getattr(chain_class, "kind", "ours"),
        "description": getattr(chain_class, "description", ""), "capabilities": capabilities | {"floating_base"}})


class FloatingBaseBackend(EntryPointPath, Backend):
    """A fixed-base backend (``.chain``, on the free-flyer chain) serving a floating-base
    model: q (nq,), v, a, τ (nv,) in pinocchio's free-flyer convention (see
    :mod:`dyn_plugin.floating`).

    When the chain backend has compiled free-flyer kernels (``free_flyer_kernels(gravity)``,
    :class:`~dyn_plugin.compiled.FreeFlyerKernels`: newton_euler's), the map to the chain is
    done inside them: one state goes straight to their entry points, as
    :class:`~dyn_plugin.backends.newton_euler_backend.NewtonEulerBackend`'s fixed-base
    states do (anything they refuse -- a batch, a bad shape, a quaternion that is not unit,
    a result that is not finite -- takes Backend's validating path, whose errors name the
    problem); a batch gets d(q, v) from a compiled loop and runs the chain's batch kernels
    on the states validated here, except M, whose kernel reads the floating q itself (the
    free-flyer's six joints in closed form) and checks q and M as it goes (Backend._run's
    checking form).  ID and FD batches go to kernels of their own, which read the floating
    states and start the recursions from the base's motion (:mod:`dyn_plugin.compiled.free_flyer_lanes`).
    A chain backend with only the compiled map (``free_flyer_kernels`` giving a
    :class:`~dyn_plugin.compiled.FreeFlyerMap`: the generated code's) gets one state through
    the map's entry points into its own one-state code, and batches through the map's d(q, v)
    and its batch kernels.  Otherwise the map is :mod:`dyn_plugin.floating`'s numpy and the
    chain backend's public methods run it."""

    capabilities = frozenset({"floating_base"})

    def __init__(self, model, chain_backend: Backend):
        super().__init__(model)
        self.chain = chain_backend
        self.friction = None          # a friction backend's FrictionModel of the robot's n joints
        make = getattr(type(chain_backend), "free_flyer_kernels", None)
        self._map = make(chain_backend, model.gravity) if make is not None else None
        self._kernels = self._map if isinstance(self._map, FreeFlyerKernels) else None
        entries = NO_SINGLE_STATE_PATH[:4] if self._map is None else self._map.entry_points
        self._inverse_entry, self._bias_entry, self._forward_entry, self._mass_entry = entries
        self._packed = None if self._map is None else self._map.packed
        self._size, self._square = model.nv, (model.nv, model.nv)
        self._derivative_entries = None if self._map is None else self._map.derivative_entry_points

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model.name!r}, n={self.model.n}, floating base, chain={self.chain!r})"

    def inverse_dynamics_breakdown(self, *args, **kwargs):
        """Not on a floating base: a BackendError (the fixed-base friction backends have it)."""
        raise BackendError(f"inverse_dynamics_breakdown: not on a floating base (robot {self.model.name!r}); "
                           "inverse_dynamics gives the total; the fixed-base robot's backend gives the parts")

    def __getattr__(self, name):
        if name in SHARED_ATTRIBUTES:
            return getattr(self.chain, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- batches: the state map, then the chain backend --------------------------------------

    def _offset(self, q, v, gravity: bool = True, velocity: bool = True):
        """The base entries (N, 6) of d(q, v) (:func:`~dyn_plugin.floating.acceleration_offset`,
        the parts asked for); an InputError for a quaternion that is not unit."""
        if self._map is None:
            return floating.acceleration_offset(self.model, floating.unit_quaternions(q), v, gravity,
                                                velocity)[:, :floating.BASE_V]
        d, unit = self._map.offsets(q, v, velocity=velocity, gravity=gravity)
        if not unit:
            floating.unit_quaternions(q)              # names the state and its norm
        return d

    def _shifted(self, x, d, sign: float = 1.0):
        """x (N, nv) with sign·d added to its base entries (a copy)."""
        out = np.array(x, dtype=float)
        out[:, :floating.BASE_V] += sign * d
        return out

    def _chain_method(self, name: str):
        """The chain backend's ``name`` ("inverse_dynamics", ...) for states validated here: its
        batch kernel itself when the compiled kernels route them (Backend._run checks the
        result here), else its public, validating method (NaN where a state overflows:
        :func:`~dyn_plugin.backends.base.nan_for_overflow`, so that Backend._run names the
        input here)."""
        if self._map is None:
            return functools.partial(nan_for_overflow, self.chain, name)
        return getattr(self.chain, f"_batch_{name}")

    def _kernel_result(self, result, q):
        """The kernels' ``(result, unit)``: the result, or the InputError that names a state
        whose quaternion is not unit."""
        out, unit = result
        if not unit:
            floating.unit_quaternions(q)
        return out

    def _checked_arithmetic(self):
        """The offsets and maps are numpy's where the chain is not compiled: its overflow
        warnings off, since Backend._run checks the result and names the input."""
        return numpy_checked_afterwards()

    def _batch_inverse_dynamics(self, q, qd, qdd):
        if self._kernels is not None:
            return self._kernel_result(self._kernels.torques(q, qd, qdd), q)
        d = self._offset(q, qd)
        return self._chain_method("inverse_dynamics")(floating.chain_configuration(q), qd, self._shifted(qdd, d))

    def _batch_mass_matrix(self, q):
        if self._kernels is not None:
            return self._checked_mass_matrix(q)[0]
        return self._chain_method("mass_matrix")(floating.chain_configuration(floating.unit_quaternions(q)))

    def _checked_mass_matrix(self, q):
        """``(M, fine)`` by the kernels, which check q and M as they compute them (Backend._run's
        checking form: no pass over the arrays before and after); a quaternion that is not
        unit is named here, anything else not finite by Backend._run."""
        M, fine = self._kernels.mass_matrix(q)
        if not fine:
            floating.unit_quaternions(q)
        return M, fine

    def _chain_mass_matrix(self, q):
        """``(M, fine)`` by the chain's checking batch (the generated code's) at the chain's
        positions, which hold the base's six joints at zero, so that M does not depend on
        the base's pose; fine when the chain's inputs and M are finite and every base is
        valid (:func:`~dyn_plugin.floating.base_is_valid`), a quaternion that is not unit
        named here."""
        M, fine = self._chain_checking_mass(floating.chain_configuration(q))
        if floating.base_is_valid(q):
            return M, fine
        floating.unit_quaternions(q)                  # names a finite quaternion that is not unit
        return M, False

    def _checking_batch(self, method):
        if getattr(method, "__func__", None) is not FloatingBaseBackend._batch_mass_matrix \
                or getattr(method, "__self__", None) is not self:
            return None
        if self._kernels is not None:
            return self._checked_mass_matrix
        return self._chain_mass_matrix if self._chain_checking_mass is not None else None

    @functools.cached_property
    def _chain_checking_mass(self):
        """The chain backend's mass matrix batch in its checking form (Backend._checking_batch),
        when the compiled map serves the chain; else None."""
        if self._map is None:
            return None
        return self.chain._checking_batch(self.chain._batch_mass_matrix)

    def _batch_gravity_torques(self, q):
        zero = np.zeros((len(q), self.model.nv))
        return self._rigid_torques(q, zero, gravity=True, velocity=False)

    def _batch_bias_forces(self, q, qd):
        return self._rigid_torques(q, qd, gravity=True, velocity=True)

    def _batch_velocity_terms(self, q, qd):
        return self._rigid_torques(q, qd, gravity=False, velocity=True)

    def _rigid_torques(self, q, v, gravity: bool, velocity: bool):
        """The chain's rigid-body τ at q̈ = d(q, v) (the parts of d asked for): the floating
        robot's bias, gravity or velocity terms.  A friction backend's inverse dynamics
        adds its friction, so there it is the chain's rigid bias plus M_chain d."""
        if self._kernels is not None:           # newton_euler's chain: rigid, no friction
            terms = Terms((Terms.GRAVITY if gravity else 0) | (Terms.VELOCITY if velocity else 0))
            return self._kernel_result(self._kernels.torques(q, v, v, terms), q)
        d = self._shifted(np.zeros(v.shape), self._offset(q, v, gravity=gravity, velocity=velocity))
        qc = floating.chain_configuration(q)
        if not type(self.chain).can("friction"):
            return self._chain_method("inverse_dynamics")(qc, v, d)
        velocity_part = self.chain.bias_forces(qc, v) if velocity else 0.0       # the chain has no gravity
        return velocity_part + np.einsum("nij,nj->ni", self.chain.mass_matrix(qc), d)

    def _batch_forward_dynamics(self, q, qd, tau):
        if self._kernels is not None:
            return self._kernel_result(self._kernels.forward_dynamics(q, qd, tau), q)
        d = self._offset(q, qd)
        return self._shifted(self._chain_method("forward_dynamics")(floating.chain_configuration(q), qd, tau), d, -1.0)

    def _batch_inverse_dynamics_jacobians(self, q, qd, qdd):
        """The chain's Jacobians at its state, its base columns replaced: the robot's τ, in
        base-frame components, depends on the base pose only through gravity, Rᵀg in d
        (:func:`~dyn_plugin.floating.acceleration_offset_derivatives`); and v enters d too."""
        self.chain._require_derivatives()
        qc, acc = floating.chain_configuration(q), self._shifted(qdd, self._offset(q, qd))
        dq, dv, da = self.chain._batch_inverse_dynamics_jacobians(qc, qd, acc)
        if self._map is not None:
            dq, dv = np.require(dq, float, ("C", "W")), np.require(dv, float, ("C", "W"))     # fresh: no copy
            self._map.base_columns(q, qd, da, dq, dv)
            return dq, dv, da
        dd_dq, dd_dv = floating.acceleration_offset_derivatives(self.model, floating.unit_quaternions(q), qd)
        dq = dq.copy()
        dq[:, :, :floating.BASE_V] = 0.0          # the chain's base joints are not the base's coordinates
        return dq + da @ dd_dq, dv + da @ dd_dv, da

    def _batch_inverse_dynamics_derivatives(self, q, qd, qdd):
        return self._batch_inverse_dynamics_jacobians(q, qd, qdd)[:2]

    def joint_wrenches(self, q, qd, qdd, f_ext=None):
        """Force and moment (N, n + 1, 3) on the base (entry 0: what the free-flyer joint
        transmits, base frame, at the base origin, as pinocchio's ``data.f[1]``) and on each
        joint's child link (as the chain backend's ``joint_wrenches``); not under external
        wrenches (``f_ext``: a BackendError)."""
        if f_ext is not None:
            raise BackendError(f"joint_wrenches with f_ext: not on a floating base (robot {self.model.name!r}); the "
                               "external wrenches enter inverse_dynamics(..., f_ext=...) and forward_dynamics")
        wrenches = chain_joint_wrenches(self.chain, self.model)
        (q, qd, qdd), single = self._checked(q=q, qd=qd, qdd=qdd)
        acc = self._shifted(qdd, self._offset(q, qd))
        force, moment = wrenches(floating.chain_configuration(q), qd, acc)
        force, moment = force[:, floating.BASE_V - 1:], moment[:, floating.BASE_V - 1:]
        return (force[0], moment[0]) if single else (force, moment)

    def velocity_step(self, q, qd, tau, dt: float, **options):
        """The chain backend's time step of the velocity: v⁺ = chain's v⁺ − dt d(q, v)
        (d is zero on the joints, so stiction, decided on joint rates, is the same)."""
        (q, qd, tau), single = self._checked(q=q, qd=qd, tau=tau)
        d = self._offset(q, qd)
        out = self._shifted(self.chain.velocity_step(floating.chain_configuration(q), qd, tau, dt, **options), d, -dt)
        return out[0] if single else out

    def _checked(self, **arrays):
        from ..arrays import state_args

        return state_args(self.model, **arrays)
