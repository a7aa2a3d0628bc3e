"""Random joint states: the one sampler that tests, validation and benchmarks share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    q̈ uniform in ±acceleration and τ uniform in ±torque (SI units)."""
    rng = np.random.default_rng(seed)
    lower, upper = position_bounds(model)
    shape = (count, model.n)
    return States(
        q=rng.uniform(lower, upper, shape),
        qd=rng.uniform(-speed, speed, shape),
        qdd=rng.uniform(-acceleration, acceleration, shape),
        tau=rng.uniform(-torque, torque, shape),
    )
