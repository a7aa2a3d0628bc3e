"""A friction backend's dynamics with a dynamic friction law (LuGre, Dahl): the bristle
deflection z (rad per joint) is a state, carried beside (q, q̇).

The law (:mod:`dyn_plugin.friction.bristles`) adds the torque F = σ0 z + σ1 ż + σ2 v on the
input side, where the lumped velocity friction b(q̇) acts (:mod:`dyn_plugin.friction.parameters`)::

    J(q) q̈ = τ − (everything but F, as for any friction model) − F(z, q̇),   ż = q̇ − |q̇| z / z_ss(q̇)

(J = M + armature; with bearing or efficiency friction ∂τ_in/∂q̈ at the state, as
:func:`.friction_forward.solve_smooth` returns it).

* :func:`rates` — (q̈, ż) at one state: the ODE, for RK4 and any external integrator.
  The bristles are stiff (σ0 ~ 1e3–1e5 N·m/rad on a joint of inertia ~0.1–10 kg·m²: a
  presliding oscillation at ω = √(σ0/J) ~ 10–1000 rad/s, and a relaxation rate |q̇| σ0/g
  up to 1e5/s), so an explicit integrator needs a small step.
* :func:`implicit_step` — one step of semi-implicit Euler (pybullet's scheme) in which the
  bristles act implicitly: with the free update q̇_f = q̇ + h q̈_f (q̈_f: forward dynamics
  without F), it solves for q̇⁺

      r(q̇⁺) = J (q̇⁺ − q̇_f) + h F̄(z, q̇⁺) = 0,

  F̄ the force averaged over the step with z relaxing *exactly* at q̇⁺
  (:func:`~dyn_plugin.friction.bristles.step`: h F̄ is the exact impulse), by Newton's method
  on the joint velocities, (J + h diag(dF̄/dv)) Δ = r, each step halved until ‖r‖ shrinks —
  the structure of the backend's implicit viscous step, (J + h D) Δq̇ = ..., and of its
  Newton steps for load-dependent friction.  Then z⁺ is the exact step at q̇⁺ and q⁺ = q + h q̇⁺.
  Stable at any h for any σ0 (no explicit coupling of the joint to the bristle
  stiffness); first order in h like semi-implicit Euler.  Newton may fail where the
  Stribeck slope −dF̄/dv exceeds J/h (the implicit equation then has several roots): a
  DynPluginError says so, and a smaller h cures it.
"""

from __future__ import annotations

import numpy as np

from ..errors import DynPluginError
from ..friction import bristles
from . import friction_forward

NEWTON_STEPS = 50
HALVINGS = 40
ROUNDING = 1e-15        # converged: ‖r‖∞ within this fraction of the impulse scale (a few ulps)
STALL = 1e-11           # accepted where no Newton step lowers ‖r‖ any more (rounding) and ‖r‖ is this small


def rates(backend, q, qd, z, tau) -> tuple:
    """(q̈, ż) (N, n) each: forward dynamics with the bristle torque F(z, q̇) moved to the
    right-hand side, and the bristle rate (LuGre eq. (2)); validated (N, n) batches."""
    law = backend.friction.dynamic
    with np.errstate(over="ignore", invalid="ignore"):     # overflow: the caller's check_finite names it
        friction = bristles.force(z, qd, law)
        qdd, _ = friction_forward.solve_smooth(backend, q, qd, tau - friction, need_jacobian=False)
        return qdd, bristles.bristle_rate(z, qd, law)


def implicit_step(backend, q, qd, z, tau, dt: float) -> tuple:
    """(q̇⁺, z⁺) (N, n) each after one step ``dt`` (s) from (q, q̇, z) under τ (see the module)."""
    law = backend.friction.dynamic
    qdd_free, J = friction_forward.solve_smooth(backend, q, qd, tau)
    free = qd + dt * qdd_free
    v = qd.copy()
    residual, slope = _residual(J, free, v, z, dt, law)
    for _ in range(NEWTON_STEPS):
        done = _converged(residual, J, v, free, ROUNDING)
        if done.all():
            return v, bristles.bristle_step(z, v, dt, law)
        matrix = J + dt * slope[:, :, None] * np.eye(v.shape[1])
        step = np.linalg.solve(matrix, residual[..., None])[..., 0]
        step[done] = 0.0
        v, residual, slope, stalled = _halved(J, free, v, z, dt, law, step, residual, slope)
        if stalled.any() and np.all(_converged(residual, J, v, free, STALL)[stalled]):
            done = _converged(residual, J, v, free, ROUNDING) | stalled
            if done.all():   # no step lowers ‖r‖ any more, and it is at rounding level
                return v, bristles.bristle_step(z, v, dt, law)
    worst = int(np.argmax(np.abs(residual).max(axis=1)))
    raise DynPluginError(f"the implicit step of the {law.law} friction did not converge in {NEWTON_STEPS} Newton "
                         f"steps (state {worst}: residual impulse {np.abs(residual[worst]).max():.3g} N·m·s at "
                         f"q̇⁺ = {np.array2string(v[worst], precision=4)}); the Stribeck slope may exceed J/dt: "
                         f"use a smaller dt than {dt:g} s")


def _residual(J, free, v, z, dt, law) -> tuple:
    """r = J (v − q̇_f) + h F̄(z, v) (N, n), N·m·s, and dF̄/dv (N, n)."""
    out = bristles.step(z, v, dt, law)
    return np.einsum("nij,nj->ni", J, v - free) + dt * out.force, out.slope


def _converged(residual, J, v, free, tolerance) -> np.ndarray:
    """(N,) True where ‖r‖∞ ≤ tolerance · (‖J‖ (‖v‖ + ‖q̇_f‖) + 1e-300), the scale of the
    rounding of J (v − q̇_f).  (The force error is r/h: 1e-15 of that scale keeps it at
    rounding level also for h = 1e-5 s.)"""
    scale = np.abs(J).max(axis=(1, 2)) * (np.abs(v).max(axis=1) + np.abs(free).max(axis=1)) + 1e-300
    return np.abs(residual).max(axis=1) <= tolerance * scale


def _halved(J, free, v, z, dt, law, step, residual, slope) -> tuple:
    """v − α Δ with α = 1, ½, ¼, ... per state until ‖r‖₂ shrinks (the |v| kink at v = 0 and
    the Stribeck curvature can make a full step overshoot), and (N,) True where no α did
    (Newton has stalled: those states keep v)."""
    size = np.linalg.norm(residual, axis=1)
    moving = np.abs(step).max(axis=1) > 0
    alpha = np.ones(len(v))
    for _ in range(HALVINGS):
        trial = v - alpha[:, None] * step
        trial_residual, trial_slope = _residual(J, free, trial, z, dt, law)
        worse = (np.linalg.norm(trial_residual, axis=1) >= size) & moving
        if not worse.any():
            return trial, trial_residual, trial_slope, worse
        alpha = np.where(worse, 0.5 * alpha, alpha)
    trial[worse], trial_residual[worse], trial_slope[worse] = v[worse], residual[worse], slope[worse]
    return trial, trial_residual, trial_slope, worse
