"""Forward dynamics and the velocity step of a :class:`~.friction_backend.FrictionBackend`
where friction is implicit in q̈ or set-valued: functions of the backend (the wrapper's
short paths, and the friction-free parts they call, are in dyn_plugin/backends/friction_backend.py).

* Load-dependent friction (bearings read the joint wrenches, the transmission the output
  torque, both functions of q̈) makes τ_in(q̈) = τ implicit: :func:`solve_smooth` inverts the
  transmission joint by joint (τ_out from τ_in), then solves τ_out(q̈) = rigid body + bearings
  by Newton's method on q̈, each step halved until the residual shrinks.  Its Jacobian
  ∂τ_in/∂q̈ = diag(∂τ_in/∂τ_out) ∂τ_out/∂q̈, the first on one side of the efficiency's kink,
  the second M + diag a, or by forward differences with bearings.
* Dry friction is set-valued at q̇ᵢ = 0: :func:`forward_with_stiction` gives a joint at rest
  the stiction torque of maximum dissipation (:mod:`dyn_plugin.friction.stiction`): it
  stays at rest while the torque it needs is within its static level, and starts against
  that level otherwise.
* :func:`impulse_step` is the velocity step ``FrictionBackend.velocity_step`` takes: the
  free step, then the dry-friction impulse |λᵢ| ≤ Lᵢ dt that removes the most kinetic
  energy (pybullet's velocity motor with targetVelocity 0), so sliding joints stop exactly;
  with load-dependent friction the step is solved again at the impulses until they settle.

Every function takes validated (N, n) batches (N states of n joints); torques N·m (N for
prismatic joints), q̈ rad/s² (m/s²).
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import DynPluginError
from ..friction import bristles
from ..friction.law import direction
from ..friction.stiction import solve_box_qp, sticking


def dry_levels(backend, qd):
    """(L⁺, L⁻) (N, n) and the dry torque d L of the current motion (with a dynamic law:
    its steady state, levels g(q̇), torque g(q̇) sgn(q̇) + σ2 q̇)."""
    positive, negative = backend.friction.levels(qd)
    dry = backend.friction.dry_torque(qd)
    dynamic = backend.friction.dynamic
    if dynamic is not None:
        level = bristles.stribeck_level(qd, dynamic)
        positive, negative, dry = positive + level, negative + level, dry + bristles.steady_state_force(qd, dynamic)
    return positive, negative, dry


def forward_with_stiction(backend, q, qd, tau, load=None):
    """q̈ (N, n) of validated (N, n) batches: friction solved with the rigid body
    (:func:`solve_smooth`), then stiction on the joints at rest (:func:`_stiction`)."""
    positive, negative, dry = dry_levels(backend, qd)
    at_rest = (qd == 0) & ((positive > 0) | (negative > 0)) & backend._set_valued
    qdd, J = solve_smooth(backend, q, qd, tau - dry, need_jacobian=bool(at_rest.any()), load=load)
    if at_rest.any():
        for k in np.nonzero(at_rest.any(axis=1))[0]:
            qdd[k] = _stiction(backend, q[k], qd[k], tau[k] - dry[k], qdd[k], J[k], at_rest[k],
                           positive[k], negative[k], None if load is None else load.take([k]))
    return qdd


def _stiction(backend, q, qd, rhs, qdd, J, rest, positive, negative, load=None):
    """q̈ of one state with stiction torques λ on the joints at rest (maximum dissipation),
    λ settled to 1e-13 of the state's torques (:func:`_torque_scale`), where their rounding
    is: a bound absolute in λ (≈ 1 N·m) left a PUMA-560 state with torques of 1e3 N·m
    stepping λ by ±1.2e-13 for ever."""
    lam = np.zeros(int(rest.sum()))
    scale = _torque_scale(backend, q[None], qd[None], rhs[None], load)[0]
    for _ in range(50):
        W = np.linalg.inv(J)[np.ix_(rest, rest)]
        step = solve_box_qp(W, qdd[rest], -positive[rest] - lam, negative[rest] - lam)
        lam = lam + step
        pushed = rhs.copy()
        pushed[rest] += lam
        solved, J = solve_smooth(backend, q[None], qd[None], pushed[None], load=load)
        qdd, J = solved[0], J[0]
        if np.abs(step).max(initial=0.0) <= 1e-13 * max(scale, np.abs(lam).max(initial=0.0)):
            held = np.nonzero(rest)[0][sticking(lam, -positive[rest], negative[rest])]
            qdd[held] = 0.0
            return qdd
    raise DynPluginError("stiction at the joints at rest did not converge")


def impulse_step(backend, q, qd, tau, dt, implicit: bool) -> np.ndarray:
    """Batch q̇⁺ (N, n): the free step (viscous implicit or not), then the dry impulses, with
    the smooth friction at the step's own acceleration (:func:`_with_impulses`)."""
    positive, negative, dry = dry_levels(backend, qd)
    set_valued = backend.friction.set_valued
    damping = dt * backend.friction.velocity.viscous * implicit          # (n,): dt D, or 0
    rhs = tau if set_valued else tau - dry
    qdd, J = _step_acceleration(backend, q, qd, rhs, damping)
    after = qd + dt * qdd
    if set_valued:
        for k in range(len(q)):
            after[k] = _with_impulses(backend, q[k], qd[k], rhs[k], dt, damping, qdd[k], J[k],
                                      -positive[k] * dt, negative[k] * dt)
    return after


def _step_acceleration(backend, q, qd, rhs, damping, qdd=None):
    """(q̈, J) (N, n), (N, n, n) with τ_in(q̈) + damping·q̈ = rhs (τ_in without its dry levels,
    damping = dt D for a viscous term implicit in q̇⁺ = q̇ + dt q̈, else 0) and J its Jacobian
    ∂τ_in/∂q̈ + diag(damping).  Linear in q̈ without load-dependent friction: solved at once;
    with it, Newton's method from the explicit solution (or ``qdd``)."""
    free, J = solve_smooth(backend, q, qd, rhs)
    J = J + np.diag(damping)
    if not np.any(damping):
        return free, J
    implicit = np.einsum("nij,njk,nk->ni", np.linalg.inv(J), J - np.diag(damping), free)   # (M + dt D) q̈ = M q̈_free
    if not backend.friction.load_dependent:
        return implicit, J
    qdd = implicit if qdd is None else qdd
    d = direction(qd, backend.friction.smoothing)
    scale = _torque_scale(backend, q, qd, rhs)
    for _ in range(50):
        residual = _smooth_input(backend, q, qd, qdd, d) + damping * qdd - rhs
        if np.all(np.abs(residual).max(axis=1) <= 1e-12 * scale):
            return qdd, J
        qdd = qdd - np.linalg.solve(J, residual[..., None])[..., 0]
        J = _input_jacobian(backend, q, qd, qdd, d) + np.diag(damping)
    raise DynPluginError("an implicit viscous step with load-dependent friction did not converge in 50 Newton "
                         f"steps (largest residual {np.abs(residual).max():.3g} N·m)")


def _with_impulses(backend, q, qd, rhs, dt, damping, qdd, J, lower, upper):
    """q̇⁺ (n,) of one state with the dry impulses λ, lower ≤ λ ≤ upper, of maximum dissipation:
    the box problem on the step's linearisation W = J⁻¹, then the step solved again exactly
    at rhs + λ/dt, until λ settles (once, without load-dependent friction: J is M + dt D).
    The smooth friction is so at the step's acceleration, as forward dynamics has it (a single
    linearisation at the free step left q̈ ~6 rad/s² off for the PUMA-560 with Dhanaraj's
    profile, whatever dt)."""
    impulse = np.zeros_like(qd)
    after = qd + dt * qdd
    for _ in range(50):
        W = np.linalg.inv(J)
        step = solve_box_qp(W, after, lower - impulse, upper - impulse)
        impulse = impulse + step
        if not backend.friction.load_dependent:
            after = after + W @ step
            break
        solved, Js = _step_acceleration(backend, q[None], qd[None], (rhs + impulse / dt)[None], damping, qdd[None])
        qdd, J = solved[0], Js[0]
        after = qd + dt * qdd
        if np.abs(step).max(initial=0.0) <= 1e-13 * max(1.0, np.abs(impulse).max(initial=0.0)):
            break
    else:
        raise DynPluginError("the dry-friction impulses of a velocity step did not converge")
    after[sticking(impulse, lower, upper)] = 0.0
    return after


def solve_smooth(backend, q, qd, rhs, need_jacobian: bool = True, load=None):
    """q̈ with _smooth_input(q̈) = rhs, and the Jacobian J = ∂τ_in/∂q̈ (N, n, n) (or None).

    The transmission is inverted first, joint by joint (τ_out from τ_in, exactly:
    ``TransmissionFriction.output_torque``); what remains, τ_out(q̈) = rigid body + bearings,
    is smooth away from a zero bearing load, and without bearings is the rigid body's own
    forward dynamics.  (Newton's method on τ_in(q̈) itself met the efficiency's kink at
    τ_out = 0, slopes 1/η and η, wherever the solution lies there: a free swing, τ = 0.)"""
    start = rhs - backend.friction.velocity.viscous * qd
    if not backend.friction.load_dependent:
        qdd = backend._rigid_forward_dynamics(q, qd, start if load is None else start + load.generalized)
        return qdd, (backend._batch_mass_matrix(q) if need_jacobian else None)
    d = direction(qd, backend.friction.smoothing)
    target = backend._output_torque(start, d)
    qdd = backend._rigid_forward_dynamics(q, qd, target if load is None else target + load.generalized)
    if backend.friction.bearing is not None:
        qdd = _with_bearings(backend, q, qd, qdd, d, target, load)
    return qdd, (_input_jacobian(backend, q, qd, qdd, d, load) if need_jacobian else None)


def _input_jacobian(backend, q, qd, qdd, d, load=None):
    """∂τ_in/∂q̈ (N, n, n) at q̈ (load-dependent friction) = diag(∂τ_in/∂τ_out) ∂τ_out/∂q̈: the
    transmission's slope on one side of its kink, and M + diag a, or with bearings forward
    differences of τ_out."""
    tau_out = _output_torque(backend, q, qd, qdd, d, load)
    inertia = backend._batch_mass_matrix(q) if backend.friction.bearing is None else \
        _jacobian(functools.partial(_output_torque, backend), q, qd, qdd, d, tau_out, load)
    return backend._transmission_slope(tau_out, d)[..., None] * inertia


def _output_torque(backend, q, qd, qdd, d, load=None):
    """τ_out: the rigid body's τ and the bearings' friction (under the external ``load``)."""
    return backend._rigid_torque(q, qd, qdd, load) + backend._bearing(q, qd, qdd, d, load)


def _with_bearings(backend, q, qd, qdd, d, target, load=None):
    """q̈ with _output_torque(q̈) = target, by Newton's method from the rigid body's q̈."""
    scale = _torque_scale(backend, q, qd, target, load)
    residual = _output_torque(backend, q, qd, qdd, d, load) - target
    for _ in range(50):
        if np.all(np.abs(residual).max(axis=1) <= 1e-12 * scale):
            return qdd
        J = _jacobian(functools.partial(_output_torque, backend), q, qd, qdd, d, residual + target, load)
        qdd, residual = _newton_step(backend, q, qd, qdd, d, target, residual, J, load)
    raise DynPluginError("forward dynamics with bearing friction did not converge in 50 Newton steps "
                         f"(largest residual {np.abs(residual).max():.3g} N·m)")


def _torque_scale(backend, q, qd, target, load=None):
    """(N,): the size of the torques the residual sums, max(1, |target|, |τ(q, q̇, 0)|), to
    which its rounding is relative (gravity and inertia may cancel in it)."""
    bias = backend._rigid_torque(q, qd, np.zeros_like(qd), load)
    return np.maximum(1.0, np.maximum(np.abs(target).max(axis=1), np.abs(bias).max(axis=1)))


def _smooth_input(backend, q, qd, qdd, d, load=None):
    """τ_in without its dry-friction levels: transmission(τ_out) + viscous q̇ (under the
    external ``load``, a :class:`~dyn_plugin.external.Load`, or None)."""
    return backend._through_transmission(_output_torque(backend, q, qd, qdd, d, load), d) \
        + backend.friction.velocity.viscous * qd


def _newton_step(backend, q, qd, qdd, d, target, residual, J, load=None):
    """One Newton step on _output_torque(q̈) = target, halved per state until the residual
    shrinks (a bearing's load passing near zero)."""
    step = np.linalg.solve(J, residual[..., None])[..., 0]
    size = np.abs(residual).max(axis=1)
    alpha = np.ones(len(q))
    for _ in range(30):
        trial = qdd - alpha[:, None] * step
        trial_residual = _output_torque(backend, q, qd, trial, d, load) - target
        worse = np.abs(trial_residual).max(axis=1) >= size
        if not worse.any():
            break
        alpha = np.where(worse, 0.5 * alpha, alpha)
    return trial, trial_residual


def _jacobian(function, q, qd, qdd, d, value, load=None):
    """Forward differences in q̈ of ``function(q, q̇, q̈, d, load)`` (N, n), whose value at q̈
    is ``value``: (N, n, n), [state, i, j] = ∂f_i/∂q̈_j."""
    N, n = q.shape
    h = 1e-7 * np.maximum(1.0, np.abs(qdd))                                     # (N, n)
    shifted = qdd[:, None, :] + h[:, :, None] * np.eye(n)                        # (N, j, n)
    rep = lambda x: np.repeat(x, n, axis=0)  # noqa: E731
    repeated = None if load is None else load.take(np.repeat(np.arange(N), n))
    plus = function(rep(q), rep(qd), shifted.reshape(N * n, n), rep(d), repeated).reshape(N, n, n)
    return ((plus - value[:, None, :]) / h[:, :, None]).transpose(0, 2, 1)     # [state, i, j]


