"""pybullet's stepping, as ``dyn-plugin validate`` compares it (quantities ``step``,
``traj_zero``, ``traj_gravity``): one step and trajectories of our backends in pybullet's
scheme against pybullet's own, with the friction pybullet reproduces
(:func:`validation_friction`, :func:`pybullet_friction`).
"""

from __future__ import annotations

import types
from typing import Callable

import numpy as np

from ...backends.registry import get_backend
from ...sampling import States
from .suite import Suite

__all__ = ["STIFFNESS", "compare_trajectories", "error_growth", "one_step", "our_trajectory", "pybullet_friction",
           "step_only", "torque_law", "trajectory", "validation_friction"]


def one_step(pybullet_backend, backend, s: States, dt: float):
    """pybullet's one-step acceleration (q̇⁺ − q̇)/dt against ours, for the same (q, q̇, τ).

    A friction backend takes its own time step (friction impulses) from every other state
    put at rest, so that both stiction and sliding are compared; pybullet gets the same
    friction as jointDamping and velocity motors.
    """
    ours, qd = _our_step(backend, s, dt)
    friction = pybullet_friction(backend.friction) if type(backend).can("stepping") else {}
    q_next, qd_next = pybullet_backend.step(s.q, qd, s.tau, dt, **friction)
    return ours, pybullet_backend.step_acceleration(s.q, qd, q_next, qd_next, dt)


def step_only(backend, states: States, dt: float) -> np.ndarray:
    """``backend``'s side of :func:`one_step` alone (N, nv): the experiment whose floor
    pinocchio's twin of a friction backend predicts."""
    return _our_step(backend, states, dt)[0]


def _our_step(backend, s: States, dt: float) -> tuple:
    """``backend``'s side of :func:`one_step` and the q̇ it starts from: q̈, or for a
    friction backend (q̇⁺ − q̇)/dt of its own step."""
    if not type(backend).can("stepping"):
        return backend.forward_dynamics(s.q, s.qd, s.tau), s.qd
    qd = s.qd.copy()
    qd[1::2, qd.shape[1] - backend.model.n:] = 0.0          # the joints at rest (a floating base keeps moving)
    return (backend.velocity_step(s.q, qd, s.tau, dt) - qd) / dt, qd


# dt·λ_max(M⁻¹D) of the validation's viscous friction.  pybullet steps jointDamping
# explicitly, which is stable only below 2; a light wrist with damping drawn in U(0, 2)
# reaches 46 (PUMA-560 at 1 ms), and no backend can then match a diverging reference.
STIFFNESS = 0.5


def validation_friction(model, seed: int, dt: float, q: np.ndarray):
    """Random friction that pybullet reproduces exactly, for validating the friction
    backends: viscous c ~ U(0, 2) N·m·s/rad (jointDamping), scaled down where needed so
    that dt·λ_max(M(q)⁻¹ diag(c)) ≤ STIFFNESS at the configurations ``q`` (N, n), and
    symmetric Coulomb F ~ U(0, 10) N·m (velocity motors), per joint, no armature."""
    from ...friction.parameters import FrictionModel

    rng = np.random.default_rng([seed, model.n])
    viscous, coulomb = rng.uniform(0, 2, model.n), rng.uniform(0, 10, model.n)
    joints = slice(model.nv - model.n, None)              # M's joint block (after a floating base's 6)
    M = get_backend("newton_euler", model).mass_matrix(q)[:, joints, joints]
    stiffness = dt * _largest_damping_rate(M, viscous)
    if stiffness > STIFFNESS:
        viscous = viscous * (STIFFNESS / stiffness)
    return FrictionModel.create(model.n, viscous=viscous, coulomb=coulomb, name="validation",
                                source=f"random, seed {seed}" + (f", viscous scaled by {STIFFNESS / stiffness:.3g} "
                                                                 f"for dt = {dt:g} s" if stiffness > STIFFNESS else ""))


def _largest_damping_rate(M: np.ndarray, viscous: np.ndarray) -> float:
    """max over states of λ_max(M⁻¹ D), D = diag(viscous), 1/s: the eigenvalues of
    L⁻¹ D L⁻ᵀ with M = L Lᵀ (symmetric, so eigvalsh)."""
    L_inv = np.linalg.inv(np.linalg.cholesky(M))
    return float(np.linalg.eigvalsh(L_inv @ (viscous[:, None] * np.swapaxes(L_inv, -1, -2))).max(initial=0.0))


def pybullet_friction(friction) -> dict:
    """The pybullet stepping options equal to a viscous + symmetric Coulomb FrictionModel."""
    return {"joint_damping": friction.velocity.viscous, "motor_friction": friction.velocity.coulomb_positive}


def torque_law(quantity: str, backend) -> Callable:
    """τ(t, q, q̇) of a trajectory case: zero, or ``backend``'s gravity compensation."""
    if quantity == "traj_zero":
        return lambda t, q, qd: np.zeros(len(qd))
    return lambda t, q, qd: backend.gravity_torques(q)


def trajectory(backend, q0, qd0, quantity: str, suite: Suite, pybullet_backend) -> np.ndarray:
    """q (T, nq) of ``backend``'s trajectory in pybullet's scheme, a case of :data:`.plan.TRAJECTORIES`."""
    return our_trajectory(backend, pybullet_backend, q0, qd0, torque_law(quantity, backend), suite.duration,
                          suite.dt).q


def compare_trajectories(backend, pybullet_backend, q0, qd0, torque, duration, dt):
    """``backend``'s trajectory and pybullet's from the same state under the same torque
    law (and the same friction), both in pybullet's scheme (:func:`our_trajectory`):
    ``(ours (.t (T,), .q (T, nq)), q_pybullet (T, nq))``."""
    ours = our_trajectory(backend, pybullet_backend, q0, qd0, torque, duration, dt)
    friction = pybullet_friction(backend.friction) if type(backend).can("stepping") else {}
    theirs, _ = pybullet_backend.rollout(q0, qd0, torque, len(ours.t) - 1, dt, **friction)
    return ours, theirs


def our_trajectory(backend, pybullet_backend, q0, qd0, torque, duration, dt):
    """``backend``'s dynamics integrated by pybullet's scheme, with ``.t`` (T,) s and ``.q``
    (T, nq).  On a fixed base that is :func:`dyn_plugin.simulate.simulate`'s semi-implicit
    Euler (with the friction backends' impulse steps: its Trajectory); on a floating base
    ``pybullet_backend.advance``
    (pybullet moves the base's centre of mass on a straight line: its translation differs
    from simulate's SE(3) step by O(dt) over a second, which is the integrator, not the
    dynamics)."""
    from ...simulate import simulate

    if not backend.model.floating_base:
        return simulate(backend, q0, qd0, torque, duration, dt, on_limit="ignore")
    steps = int(round(duration / dt))
    q, qd = np.zeros((steps + 1, backend.model.nq)), np.zeros((steps + 1, backend.model.nv))
    q[0], qd[0] = q0, qd0
    stepping = type(backend).can("stepping")
    for k in range(steps):
        tau = torque(k * dt, q[k], qd[k])
        qdd = ((backend.velocity_step(q[k], qd[k], tau, dt) - qd[k]) / dt if stepping
               else backend.forward_dynamics(q[k], qd[k], tau))
        (q[k + 1],), (qd[k + 1],) = pybullet_backend.advance(q[k:k + 1], qd[k:k + 1], qdd[None], dt)
    return types.SimpleNamespace(t=np.arange(steps + 1) * dt, q=q, qd=qd)


def error_growth(t, ours, theirs) -> dict:
    """Largest |Δq| up to a few instants, to show how the difference grows."""
    error = np.abs(ours - theirs).max(axis=1)
    marks = [t[-1] * f for f in (0.1, 0.25, 0.5, 1.0)]
    return {f"{mark:.3g}s": float(error[: int(np.searchsorted(t, mark + 1e-12))].max()) for mark in marks}
