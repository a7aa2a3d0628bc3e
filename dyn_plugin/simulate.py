"""Time stepping over any backend.

Integrators
-----------
``semi_implicit_euler``  q̇ₖ₊₁ = q̇ₖ + dt q̈(qₖ, q̇ₖ, τₖ);  qₖ₊₁ = qₖ + dt q̇ₖ₊₁ — pybullet's own
                         scheme, so trajectories can be compared with it step for step.
``rk4``                  classic fourth-order Runge-Kutta on (q, q̇); a callable torque is
                         evaluated at every stage, an array torque is held over the step.

A floating base and spherical, planar and floating joints move on their manifolds:
q ⊕ dt v (:func:`dyn_plugin.configuration.integrate`: the SE(3), SO(3) or SE(2) exponential,
quaternions renormalised) in place of q + dt q̇, for both integrators; RK4 runs in the
exponential chart about the step's start (Munthe-Kaas: the chart coordinates ξ have the
rate ξ̇ = v + ½[ξ, v] + [ξ, [ξ, v]]/12, :func:`dyn_plugin.configuration.chart_rate`), so it
keeps its fourth order (``tests/test_simulate_multi_dof.py``: momentum and energy of free
floating trees conserved to round-off).

Friction backends with sharp dry friction (see
:mod:`dyn_plugin.backends.friction_backend`) are stepped with a velocity-level friction
impulse (``backend.velocity_step``): stick-slip without chattering, as pybullet's
velocity motors.  ``qdd[k]`` is then (q̇ₖ₊₁ − q̇ₖ)/dt (the last one, with no step after it,
forward dynamics with stiction).  RK4 needs smooth friction.  Viscous friction acts
explicitly (pybullet's jointDamping) unless ``viscous="implicit"``, which solves
(M + dt D) Δq̇ = dt (τ − bias − D q̇): stable for stiff damping (dt·λ_max(M⁻¹D) > 2, e.g. a
light wrist link), where the explicit step diverges.

A friction model with a dynamic law (LuGre, Dahl; :mod:`dyn_plugin.friction.bristles`)
carries its bristle deflection z (rad per joint) as a state beside (q, q̇), reported as
``Trajectory.friction_state``.  Semi-implicit Euler steps it with
``backend.state_step``: the bristles act implicitly and relax exactly at q̇⁺
(:mod:`dyn_plugin.backends.bristle_stepping`), stable at pybullet's 1/240 s for any
stiffness σ0.  RK4 integrates (q, q̇, z) with ``backend.state_rates``, explicitly: stiff
bristles need a small dt there (σ0 = 1e5 N·m/rad: ~1e-5 s), else the run stops with a
SimulationError.

Nothing is clamped: a joint that leaves its limits is reported (a
:class:`JointLimitWarning`, or an error with ``on_limit="raise"``), and a state that
becomes NaN or infinite (or overflows inside the dynamics) stops the run with a
:class:`SimulationError` naming the step, the time and the joint.  ``dt`` may not exceed
``duration`` (InputError): every run takes at least one full step.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Callable, Optional, Union

import numpy as np

from .arrays import as_batch
from .errors import DynPluginError, InputError, SimulationError
from .configuration import chart_rate, integrate, is_euclidean
from .floating import base_rotations, chain_configuration, free_flyer_chain
from .kinematics import PRISMATIC, REVOLUTE, forward_kinematics
from .mimic import full_configuration, full_model
from .model import gravity_vector
from .multi_dof import expansion

INTEGRATORS = ("semi_implicit_euler", "rk4")


class JointLimitWarning(UserWarning):
    """A joint left its position limits during a simulation (it is not clamped)."""


@dataclasses.dataclass(frozen=True)
class LimitEvent:
    time: float
    joint: str
    position: float
    bound: float


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """A simulated trajectory of T samples (T = steps + 1), SI units.

    t (T,) s;  q (T, nq);  qd, qdd, tau (T, nv) (both n on a fixed base);  kinetic,
    potential (T,) J (of the rigid body: not the bristles' ½ σ0 z²);  limit_events;
    friction_state (T, n) rad: the bristle deflections z of a dynamic friction law, or None.
    ``tau[k]`` is the torque applied from ``t[k]`` (for RK4 with a callable torque, its
    value at the start of the step) and ``qdd[k]`` the acceleration it gives at ``t[k]``.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray
    integrator: str
    dt: float
    limit_events: tuple = ()
    friction_state: Optional[np.ndarray] = None
    robot: str = ""                     # the model's name

    def __repr__(self) -> str:
        """A summary (what ``print`` shows); the arrays are the attributes."""
        samples, energy = len(self.t), self.energy
        extras = "".join([f", {len(self.limit_events)} limit event(s)" if self.limit_events else "",
                          ", friction_state z" if self.friction_state is not None else ""])
        return (f"Trajectory({self.robot or 'robot'}: {samples} samples over {self.t[-1] - self.t[0]:g} s, "
                f"dt {self.dt:g} s, {self.integrator}; nq {self.q.shape[1]}, nv {self.qd.shape[1]}; "
                f"energy {energy[0]:.6g} -> {energy[-1]:.6g} J (relative drift {self.relative_energy_drift():.2e})"
                f"{extras}; arrays t, q, qd, qdd, tau, kinetic, potential)")

    @property
    def energy(self) -> np.ndarray:
        """Total mechanical energy (T,) J: kinetic + potential."""
        return self.kinetic + self.potential

    def relative_energy_drift(self) -> float:
        """max |E(t) − E(0)| / max(|E(0)|, kinetic scale): the conservation figure."""
        scale = max(abs(self.energy[0]), np.max(self.kinetic), 1e-300)
        return float(np.max(np.abs(self.energy - self.energy[0])) / scale)


def potential_energy(model, q: np.ndarray, gravity=None) -> np.ndarray:
    """Gravitational potential energy (N,) J of batch ``q`` (N, nq): −Σ m_i g·p_ci (the
    base link included when it floats, its pose from q; joints of several degrees of freedom
    as their chain of one-dof joints, :func:`dyn_plugin.multi_dof.expansion`)."""
    g = model.gravity if gravity is None else gravity_vector(gravity)
    if model.mimic:                               # every joint's position, then as without mimic joints
        model, q = full_model(model), full_configuration(model, q)
    if model.multi_dof_indices:                   # the chain at the same configuration (massless pose joints)
        chain = expansion(model)
        model, q = chain.chain, chain.configuration(chain.unit(q))
    bodies, joints = (free_flyer_chain(model), chain_configuration(q)) if model.floating_base else (model, q)
    T = forward_kinematics(bodies, joints)
    com = np.einsum("nkij,kj->nki", T[..., :3, :3], bodies.coms) + T[..., :3, 3]
    if model.floating_base:                       # base frame → world
        com = np.einsum("nij,nkj->nki", base_rotations(q), com) + q[:, None, 0:3]
    return -np.einsum("k,nki,i->n", bodies.masses, com, g)


def kinetic_energy(backend, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """½ vᵀ M(q) v (N,) J."""
    return 0.5 * np.einsum("ni,nij,nj->n", qd, backend.mass_matrix(q), qd)


def _torque_function(torque, n: int, steps: int) -> Callable:
    """``torque`` as a function ``(k, t, q, q̇)`` of step k and time t: a callable's value at
    (t, q, q̇); an array (steps, n)'s row k, held over step k, its RK4 stages included (the
    last row after the last step)."""
    if callable(torque):
        def evaluate(k, t, q, qd):
            value = np.asarray(torque(t, q, qd), dtype=float)
            if value.shape != (n,) or not np.all(np.isfinite(value)):
                raise InputError(f"torque callable must return {n} finite numbers, got {value!r} at t={t:g}")
            return value
        return evaluate
    array = np.asarray(torque, dtype=float)
    if array.shape == (n,):
        return lambda k, t, q, qd: array
    if array.shape == (steps, n):
        return lambda k, t, q, qd: array[min(k, steps - 1)]
    raise InputError(f"torque must be a callable (t, q, qd) -> ({n},), an array ({n},) or ({steps}, {n}), "
                     f"got shape {array.shape}")


def simulate(backend, q0, qd0, torque: Union[Callable, np.ndarray], duration: float, dt: float,
             integrator: str = "semi_implicit_euler", on_limit: str = "warn", viscous: str = "explicit",
             friction_state0=None) -> Trajectory:
    """Integrate the dynamics of ``backend`` from (q0, qd0) for ``duration`` seconds.

    Parameters
    ----------
    backend : a :class:`~dyn_plugin.Backend`
    q0, qd0 : (nq,), (nv,) initial positions and velocities (n, n on a fixed base)
    torque : callable ``(t, q, qd) -> (nv,)``, or an array (nv,) held constant, or (steps, nv): row k
        held over step k (every RK4 stage of it)
    duration, dt : s, with 0 < dt ≤ duration (InputError otherwise); ``steps = round(duration / dt)``
    integrator : ``"semi_implicit_euler"`` (pybullet's) or ``"rk4"``
    on_limit : ``"warn"`` (default), ``"raise"`` or ``"ignore"`` when a joint leaves its limits
    viscous : friction backends with semi-implicit Euler: ``"explicit"`` (pybullet's jointDamping,
        default) or ``"implicit"`` (stable for stiff damping; see ``FrictionBackend.velocity_step``)
    friction_state0 : (n,) rad, the initial bristle deflections of a dynamic friction law
        (default 0: relaxed bristles); refused for a backend without one

    Raises :class:`SimulationError` naming the step, the time and the joint if the state
    becomes NaN or infinite (the integration diverged: dt too large for the system).
    """
    model, n = backend.model, backend.model.nv
    _check_options(integrator, on_limit, dt, duration, viscous)
    steps = int(round(duration / dt))
    q0 = _one_state("q0", q0, model.nq, model.configuration_names)
    qd0 = _one_state("qd0", qd0, n, model.velocity_names)
    tau_of = _torque_function(torque, n, steps)
    bristles = _initial_friction_state(backend, friction_state0, steps)
    impulses = _uses_velocity_step(backend, integrator, viscous) and bristles is None
    t = np.arange(steps + 1) * dt
    qd, tau, qdd = (np.zeros((steps + 1, n)) for _ in range(3))
    q = np.zeros((steps + 1, model.nq))
    q[0], qd[0] = q0, qd0
    advance = _advance(model)
    limits = _LimitWatch(model, on_limit)
    divergence = _Divergence(model, t, dt)
    for k in range(steps):
        tau[k] = tau_of(k, t[k], q[k], qd[k])
        if bristles is not None:
            z = bristles
            if integrator == "semi_implicit_euler":
                qd[k + 1], z[k + 1] = divergence.guard(k + 1, backend.state_step, q[k], qd[k], z[k], tau[k], dt)
                qdd[k] = (qd[k + 1] - qd[k]) / dt
                q[k + 1] = advance(q[k], dt * qd[k + 1])
            else:
                qdd[k] = divergence.guard(k + 1, backend.state_rates, q[k], qd[k], z[k], tau[k])[0]
                q[k + 1], qd[k + 1], z[k + 1] = divergence.guard(
                    k + 1, _rk4_bristle_step, backend, functools.partial(tau_of, k), t[k], q[k], qd[k], z[k], dt,
                    lambda qs, vs, zs: divergence.check(k + 1, qs, vs, " in an RK4 stage", z=zs))
            divergence.check(k + 1, q[k + 1], qd[k + 1], z=z[k + 1])
        elif impulses:
            qd[k + 1] = divergence.guard(k + 1, backend.velocity_step, q[k], qd[k], tau[k], dt, viscous=viscous)
            qdd[k] = (qd[k + 1] - qd[k]) / dt
            q[k + 1] = advance(q[k], dt * qd[k + 1])
        else:
            qdd[k] = divergence.guard(k + 1, backend.forward_dynamics, q[k], qd[k], tau[k])
            if integrator == "semi_implicit_euler":
                qd[k + 1] = qd[k] + dt * qdd[k]
                q[k + 1] = advance(q[k], dt * qd[k + 1])
            else:
                q[k + 1], qd[k + 1] = divergence.guard(
                    k + 1, _rk4_step, backend.forward_dynamics, functools.partial(tau_of, k), t[k], q[k], qd[k], qdd[k], dt,
                    lambda qs, vs: divergence.check(k + 1, qs, vs, " in an RK4 stage"), model)
        divergence.check(k + 1, q[k + 1], qd[k + 1])
        limits.check(t[k + 1], q[k + 1])
    tau[steps] = tau_of(steps, t[steps], q[steps], qd[steps])
    if bristles is None:
        qdd[steps] = divergence.guard(steps, backend.forward_dynamics, q[steps], qd[steps], tau[steps])
    else:
        qdd[steps] = divergence.guard(steps, backend.state_rates, q[steps], qd[steps], bristles[steps], tau[steps])[0]
    divergence.check(steps, q[steps], qd[steps], qdd=qdd[steps])
    return Trajectory(t=t, q=q, qd=qd, qdd=qdd, tau=tau, kinetic=kinetic_energy(backend, q, qd),
                      potential=potential_energy(model, q, backend.gravity), integrator=integrator, dt=dt,
                      limit_events=tuple(limits.events), friction_state=bristles, robot=model.name)


def _check_options(integrator, on_limit, dt, duration, viscous) -> None:
    if integrator not in INTEGRATORS:
        raise InputError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
    if on_limit not in ("warn", "raise", "ignore"):
        raise InputError(f"on_limit must be 'warn', 'raise' or 'ignore', got {on_limit!r}")
    if viscous not in ("explicit", "implicit"):
        raise InputError(f"viscous must be 'explicit' or 'implicit', got {viscous!r}")
    if not (dt > 0 and duration > 0 and np.isfinite(dt) and np.isfinite(duration)):
        raise InputError(f"dt and duration must be positive, got dt={dt}, duration={duration}")
    if dt > duration:
        raise InputError(f"time step dt = {dt:g} s is longer than duration = {duration:g} s: not one full step "
                         "fits; use dt <= duration")


def _initial_friction_state(backend, friction_state0, steps: int) -> Optional[np.ndarray]:
    """The (steps + 1, n) bristle deflections with row 0 set, for a backend whose friction
    has a dynamic law; None without one (then ``friction_state0`` must be None)."""
    law = getattr(getattr(backend, "friction", None), "dynamic", None)
    if law is None:
        if friction_state0 is not None:
            raise InputError(f"friction_state0 is the bristle state of a dynamic friction law (LuGre, Dahl); "
                             f"{backend.name} has none")
        return None
    z = np.zeros((steps + 1, law.n))
    if friction_state0 is not None:
        z[0] = _one_state("friction_state0", friction_state0, law.n, backend.model.joint_names)
    return z


def _one_state(name: str, value, n: int, names) -> np.ndarray:
    """One validated state (n,) of ``value`` (n,) or (1, n): a trajectory starts from one
    (a batch of several is refused, not cut to its first row)."""
    array = as_batch(name, value, n, names)[0]
    if len(array) != 1:
        raise InputError(f"{name} must be one state of shape ({n},): simulate integrates one trajectory, got a "
                         f"batch of shape {array.shape} (call simulate once per initial state)")
    return array[0]


def _uses_velocity_step(backend, integrator: str, viscous: str) -> bool:
    """True when steps go through ``backend.velocity_step`` (sharp dry friction, or implicit
    viscous friction); raises for what RK4 cannot integrate."""
    friction = getattr(backend, "friction", None)
    stick_slip = friction is not None and friction.set_valued
    if integrator == "semi_implicit_euler":
        return friction is not None and (stick_slip or viscous == "implicit")
    if stick_slip:
        raise InputError(f"{backend.name}: sharp dry friction is set-valued at q̇ = 0, which {integrator} cannot "
                         "integrate; use integrator='semi_implicit_euler' (friction impulses, stick-slip) or a "
                         "smooth friction model (smoothing > 0)")
    if viscous == "implicit":
        raise InputError("viscous='implicit' is a semi-implicit Euler option; rk4 treats every term explicitly")
    return False


def _advance(model) -> Callable:
    """(q (nq,), Δ (nv,)) -> q ⊕ Δ (:func:`dyn_plugin.configuration.integrate`): q + Δ when
    every coordinate is Euclidean (one-dof joints on a fixed base)."""
    if is_euclidean(model):
        return lambda q, delta: q + delta
    return lambda q, delta: integrate(model, q[None], delta[None])[0]


def _chart_rate(model) -> Callable:
    """(ξ (nv,), v (nv,)) -> ξ̇ (:func:`dyn_plugin.configuration.chart_rate`): v when every
    coordinate is Euclidean."""
    if is_euclidean(model):
        return lambda xi, v: v
    return lambda xi, v: chart_rate(model, xi[None], v[None])[0]


def _rk4_step(fd, tau_of, t, q, qd, qdd, dt, check, model):
    """One classic RK4 step on (ξ, q̇), ξ the chart coordinates of q ⊕ ξ (ξ = q − q₀ on a
    fixed base, where this is RK4 on (q, q̇)); ``check(q, q̇)`` vets every stage state."""
    advance, rate = _advance(model), _chart_rate(model)
    k1x, k1v = qd, qdd
    x2, v2 = 0.5 * dt * k1x, qd + 0.5 * dt * k1v
    q2 = advance(q, x2)
    check(q2, v2)
    k2x, k2v = rate(x2, v2), fd(q2, v2, tau_of(t + 0.5 * dt, q2, v2))
    x3, v3 = 0.5 * dt * k2x, qd + 0.5 * dt * k2v
    q3 = advance(q, x3)
    check(q3, v3)
    k3x, k3v = rate(x3, v3), fd(q3, v3, tau_of(t + 0.5 * dt, q3, v3))
    x4, v4 = dt * k3x, qd + dt * k3v
    q4 = advance(q, x4)
    check(q4, v4)
    k4x, k4v = rate(x4, v4), fd(q4, v4, tau_of(t + dt, q4, v4))
    return (advance(q, dt / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)),
            qd + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v))


def _rk4_bristle_step(backend, tau_of, t, q, qd, z, dt, check):
    """One classic RK4 step on (ξ, q̇, z) of a robot whose friction has a dynamic law, rates
    from ``backend.state_rates``, ξ the chart coordinates of q ⊕ ξ as in :func:`_rk4_step`
    (RK4 on (q, q̇, z) when every coordinate is Euclidean); ``check(q, q̇, z)`` vets every
    stage state."""
    advance, chart = _advance(backend.model), _chart_rate(backend.model)

    def rates(time, xi, vs, zs):
        qs = advance(q, xi)
        check(qs, vs, zs)
        qdd, rate = backend.state_rates(qs, vs, zs, tau_of(time, qs, vs))
        return chart(xi, vs), qdd, rate
    start = (np.zeros_like(qd), qd, z)
    k1 = rates(t, *start)
    k2 = rates(t + 0.5 * dt, *(x + 0.5 * dt * k for x, k in zip(start, k1)))
    k3 = rates(t + 0.5 * dt, *(x + 0.5 * dt * k for x, k in zip(start, k2)))
    k4 = rates(t + dt, *(x + dt * k for x, k in zip(start, k3)))
    xi, qd_next, z_next = (x + dt / 6 * (a + 2 * b + 2 * c + d) for x, a, b, c, d in zip(start, k1, k2, k3, k4))
    return advance(q, xi), qd_next, z_next


class _Divergence:
    """Stops a run whose state became NaN or infinite, saying at which step, when and where."""

    def __init__(self, model, t, dt):
        self.model, self.t, self.dt, self.steps = model, t, dt, len(t) - 1

    def guard(self, k: int, function, *args, **kwargs):
        """``function(*args, **kwargs)`` for step ``k``, a DynPluginError from it (an overflow
        in forward dynamics, a stiction problem fed by one) re-raised as a SimulationError
        that says which step and what to do."""
        try:
            return function(*args, **kwargs)
        except SimulationError:
            raise
        except DynPluginError as exc:
            raise SimulationError(f"{self._at(k)}: {exc}; {self._advice}") from exc

    def check(self, k: int, q, qd, where: str = "", qdd=None, z=None) -> None:
        """Raise SimulationError if q, q̇ (or q̈, or the bristle state z) of step ``k`` (ending
        at t[k]) is not finite."""
        values = [q, qd] if qdd is None else [q, qd, qdd]
        if all(np.isfinite(v).all() for v in values):
            if z is not None and not np.isfinite(z).all():
                i = int(np.argmax(~np.isfinite(z)))
                raise SimulationError(f"{self._at(k)}{where}: the bristle state z of joint "
                                      f"{self.model.joint_names[i]!r} is {z[i]:.3g}; {self._advice}")
            return
        culprit = self._joint_at_fault(values)
        if culprit is not None:
            where += f": joint {culprit}"
        else:
            parts = zip(("q", "q̇", "q̈"), values, (self.model.configuration_names, *[self.model.velocity_names] * 2))
            label, v, names = next((label, v, names) for label, v, names in parts if not np.isfinite(v).all())
            i = int(np.argmax(~np.isfinite(v)))
            where += f": the floating base has {label}[{names[i]}] = {v[i]:.3g}"
        raise SimulationError(f"{self._at(k)}{where}; {self._advice}")

    def _joint_at_fault(self, values: list):
        """The first joint with a value that is not finite in q, q̇ (or q̈) (``values``), in
        words: its name and its entries ("'elbow' has q = nan, q̇ = 3, q̈ = inf"; a joint of
        several degrees of freedom names its kind and gives its entries as lists); None when
        only the floating base's are."""
        for i in self.model.independent_indices:
            q_slice, v_slice = self.model.joint_slices[i]
            parts = [v[q_slice if k == 0 else v_slice] for k, v in enumerate(values)]
            if all(np.isfinite(part).all() for part in parts):
                continue
            name, kind = self.model.joint_names[i], self.model.joint_types[i]
            if kind in (REVOLUTE, PRISMATIC):
                return f"{name!r} has " + ", ".join(f"{label} = {part[0]:.3g}"
                                                    for label, part in zip(("q", "q̇", "q̈"), parts))
            return f"{name!r} ({kind}) has " + ", ".join(
                f"{label} = [{', '.join(f'{x:.3g}' for x in part)}]" for label, part in zip(("q", "q̇", "q̈"), parts))
        return None

    def _at(self, k: int) -> str:
        return f"the integration diverged at step {k} of {self.steps} (t = {self.t[k]:.6g} s)"

    @property
    def _advice(self) -> str:
        return (f"the system is too stiff or too fast for dt = {self.dt:g} s: try a smaller dt "
                "(for stiff viscous friction, viscous='implicit')")


class _LimitWatch:
    """Reports the first excursion of each joint beyond its limits, without clamping.  With
    mimic joints (``model.mimic``) every joint is watched, a follower at its position from
    the reduced q (:func:`dyn_plugin.mimic.full_configuration`); its report names its leader."""

    def __init__(self, model, mode):
        self.model, self.mode, self.events, self.outside = model, mode, [], set()
        self.full = full_model(model) if model.mimic else None     # the joints' positions come from q_full
        coordinates = self.full if model.mimic else model
        joints = [i for i in coordinates.independent_indices   # the one-dof joints (with mimic joints: all of
                  if model.joint_types[i] in (REVOLUTE, PRISMATIC)]  # them, followers included; the others have no limits)
        self.entries = np.array([coordinates.joint_slices[i][0].start for i in joints], dtype=int)   # their entries
        self.lower, self.upper = model.lower[joints], model.upper[joints]
        self.names = tuple(model.joint_names[i] for i in joints)
        leaders = {relation.joint: relation for relation in model.mimic}
        self.notes = tuple(self._follows(leaders[name]) if name in leaders else "" for name in self.names)

    @staticmethod
    def _follows(relation) -> str:
        """What a follower's report adds: whom it follows and how."""
        sign = "-" if relation.offset < 0 else "+"
        return (f" (a mimic joint: it follows {relation.leader!r}, q = {relation.multiplier:g} · "
                f"q[{relation.leader!r}] {sign} {abs(relation.offset):g})")

    def check(self, t, q):
        if self.full is not None:                     # every joint's position
            q = full_configuration(self.model, np.asarray(q)[None])[0]
        q = q[self.entries]
        for i in np.nonzero((q < self.lower) | (q > self.upper))[0]:
            if i in self.outside:
                continue
            self.outside.add(i)
            bound = self.lower[i] if q[i] < self.lower[i] else self.upper[i]
            event = LimitEvent(float(t), self.names[i], float(q[i]), float(bound))
            self.events.append(event)
            message = (f"joint {event.joint!r}{self.notes[i]} left its limits at t = {t:.6g} s: q = {q[i]:.6g}, "
                       f"limit {bound:.6g} (not clamped)")
            if self.mode == "raise":
                raise SimulationError(message)
            if self.mode == "warn":
                warnings.warn(message, JointLimitWarning, stacklevel=4)
        self.outside &= set(np.nonzero((q < self.lower) | (q > self.upper))[0])
