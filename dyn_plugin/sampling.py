"""Random joint states: the one sampler that tests, validation and benchmarks share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .configuration import difference, integrate, is_euclidean
from .joints import KINDS, random_configurations
from .model import RobotModel

UNBOUNDED_REVOLUTE = np.pi   # rad: range for continuous joints
UNBOUNDED_PRISMATIC = 1.0    # m: range for prismatic joints without limits


@dataclass(frozen=True)
class States:
    """A batch of joint states, each array of shape (N, n)."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray

    def __len__(self) -> int:
        return len(self.q)


def position_bounds(model: RobotModel):
    """Finite (lower, upper) sampling bounds: the joint limits, or a default range."""
    default = np.where(model.is_revolute, UNBOUNDED_REVOLUTE, UNBOUNDED_PRISMATIC)
    lower = np.where(np.isfinite(model.lower), model.lower, -default)
    upper = np.where(np.isfinite(model.upper), model.upper, default)
    return lower, upper


def random_states(model: RobotModel, count: int, seed=0, speed: float = 2.0,
                  acceleration: float = 5.0, torque: float = 10.0) -> States:
    """``count`` states with q uniform within the joint limits, q̇ uniform in ±speed,
    q̈ uniform in ±acceleration and τ uniform in ±torque (SI units).  A floating base
    gets :func:`dyn_plugin.floating.random_base_states` before the joints (q (count, nq),
    the others (count, nv))."""
    rng = np.random.default_rng(seed)
    q, qd, qdd = uniform_states(model, count, rng, speed, acceleration)
    return States(q=q, qd=qd, qdd=qdd, tau=rng.uniform(-torque, torque, (count, model.nv)))


def uniform_states(model: RobotModel, count: int, rng: np.random.Generator, speed: float = 2.0,
                   acceleration: float = 5.0) -> tuple:
    """``count`` independent states drawn from ``rng``: q uniform within
    :func:`position_bounds` (rad or m), q̇ uniform in ±speed (rad/s or m/s), q̈ uniform in
    ±acceleration (rad/s² or m/s²).  Returns q (count, nq), q̇ and q̈ (count, nv): the
    independent joints (all but mimic joints), after a floating base's part (drawn after
    the joints').

    The draws come in the order of :func:`random_states` (q, then q̇, then q̈).
    """
    lower, upper = (bound[model.independent_indices] for bound in position_bounds(model))   # mimic joints follow
    if model.multi_dof_indices:
        joints = _multi_dof_states(model, count, rng, speed, acceleration)
    else:
        shape = (count, len(lower))
        joints = (rng.uniform(lower, upper, shape), rng.uniform(-speed, speed, shape),
                  rng.uniform(-acceleration, acceleration, shape))
    if not model.floating_base:
        return joints
    from .floating import random_base_states

    base = random_base_states(rng, count, speed, acceleration)
    return tuple(np.concatenate([b, j], axis=1) for b, j in zip(base, joints))


def _multi_dof_states(model: RobotModel, count: int, rng: np.random.Generator, speed: float,
                      acceleration: float) -> tuple:
    """The joints' part of :func:`uniform_states` for a model with joints of several degrees
    of freedom: each joint's configuration from :func:`dyn_plugin.joints.random_configurations`
    (one-dof joints within :func:`position_bounds`), in joint order; then q̇ and q̈."""
    lower, upper = position_bounds(model)
    q = [random_configurations(model.joint_types[i], rng, count, lower[i], upper[i])
         for i in model.independent_indices]
    nv = sum(KINDS[model.joint_types[i]].nv for i in model.independent_indices)
    return (np.concatenate(q, axis=1).reshape(count, -1), rng.uniform(-speed, speed, (count, nv)),
            rng.uniform(-acceleration, acceleration, (count, nv)))


TRAJECTORY_SAMPLES = 100   # samples per rest-to-rest trajectory in trajectory_states


def trajectory_states(model: RobotModel, count: int, rng: np.random.Generator, speed: float = 2.0,
                      acceleration: float = 5.0, samples: int = TRAJECTORY_SAMPLES) -> tuple:
    """``count`` states along rest-to-rest quintics between random configurations.

    The states are cut into ⌈count / samples⌉ trajectories of (as nearly as possible) equal
    length.  Each goes from q_a to q_b, drawn within :func:`position_bounds`, as
    q(t) = q_a + (q_b − q_a) s(t), s(t) = 10σ³ − 15σ⁴ + 6σ⁵, σ = t/T (the quintic of
    :func:`dyn_plugin.studies.friction_study.reference_trajectory`), sampled at equally spaced
    t ∈ [0, T] (both ends included, so each starts and ends at rest).  T (s) is the
    shortest duration whose peak speed 1.875|Δq|/T and peak acceleration 5.7735|Δq|/T²
    stay within ``speed`` and ``acceleration`` on every joint, so the states cover the
    ranges of :func:`uniform_states`; q never leaves the bounds (the quintic is monotone).

    A floating base or a joint of several degrees of freedom moves along the geodesic of
    its group instead, q(t) = q_a ⊕ s(t) Δ with Δ = q_b ⊖ q_a (:mod:`dyn_plugin.configuration`,
    pinocchio's ``integrate``/``difference``; q_a, q_b drawn as :func:`uniform_states` draws
    configurations): its velocity (a body twist) is exactly ṡΔ and its acceleration s̈Δ,
    the one-dof joints' formula above.  Mimic joints follow their leaders (no columns).

    Returns q (count, nq), q̇, q̈ (count, nv), t (count,) s since the trajectory's start and
    trajectory (count,) int, the index of each state's trajectory (0, 1, ...).
    """
    pieces = [part for part in np.array_split(np.arange(count), -(-count // samples)) if len(part)] if count else []
    q, qd, qdd, t, index = [], [], [], [], []
    for k, part in enumerate(pieces):
        start, end = _configuration_pair(model, rng)
        travel = end - start if is_euclidean(model) else difference(model, start[None], end[None])[0]
        size = float(np.abs(travel).max())
        duration = max(1.875 * size / speed, np.sqrt(10.0 / np.sqrt(3.0) * size / acceleration), 1e-3)
        times = np.linspace(0.0, duration, len(part))
        q_k, qd_k, qdd_k = quintic(times, duration, np.zeros(model.nv), travel)    # q_k: (q_b ⊖ q_a) s(t)
        q.append(start + q_k if is_euclidean(model) else integrate(model, np.repeat(start[None], len(part), 0), q_k))
        qd.append(qd_k)
        qdd.append(qdd_k)
        t.append(times)
        index.append(np.full(len(part), k))
    if not pieces:
        return (np.empty((0, model.nq)), np.empty((0, model.nv)), np.empty((0, model.nv)), np.empty(0),
                np.empty(0, dtype=int))
    return np.concatenate(q), np.concatenate(qd), np.concatenate(qdd), np.concatenate(t), np.concatenate(index)


def _configuration_pair(model: RobotModel, rng: np.random.Generator) -> tuple:
    """Two configurations (nq,) within :func:`position_bounds`: uniform on one-dof joints
    (the independent ones), else as :func:`uniform_states` draws them."""
    if is_euclidean(model):
        lower, upper = (bound[model.independent_indices] for bound in position_bounds(model))
        return rng.uniform(lower, upper), rng.uniform(lower, upper)
    pair = uniform_states(model, 2, rng)[0]
    return pair[0], pair[1]


def quintic(t: np.ndarray, duration: float, start: np.ndarray, travel: np.ndarray) -> tuple:
    """Rest-to-rest quintic q(t) = start + travel (10s³ − 15s⁴ + 6s⁵), s = t/duration, and
    its q̇ and q̈: each (T, n) for t (T,) s and start, travel (n,)."""
    s = np.asarray(t, dtype=float) / duration
    shape = 10 * s**3 - 15 * s**4 + 6 * s**5
    rate = (30 * s**2 - 60 * s**3 + 30 * s**4) / duration
    curvature = (60 * s - 180 * s**2 + 120 * s**3) / duration**2
    return start + np.outer(shape, travel), np.outer(rate, travel), np.outer(curvature, travel)
