"""Friction along a trajectory: Dhanaraj's PUMA-560 case study (thesis ch. 3) in spirit.

The thesis drives a 3-DOF PUMA along a 2 s, 201-sample straight line and tabulates the
torques at t = 0.6 s (Table 3.5): basic dynamic torque, joint friction, total at the
joint, transmission friction, total input.  Its trajectory file is not published, so
:func:`reference_trajectory` uses a rest-to-rest quintic in joint space of the same
duration and sampling, with joint 1 moving up, joint 2 down, joint 3 up, ... (the
velocity signs of Table 3.5 at 0.6 s).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import InputError
from ..sampling import quintic

THESIS_DURATION, TABLE_TIME = 2.0, 0.6      # s: the thesis's trajectory, and Table 3.5's time in it


def table_time(duration: float) -> float:
    """When to tabulate the torques in a trajectory of ``duration`` s: Table 3.5's 0.6 s, or
    in a shorter one the same share of it (0.3 × duration)."""
    return TABLE_TIME if duration >= TABLE_TIME else TABLE_TIME / THESIS_DURATION * duration


COLUMNS = (  # (label, how to get it from a TorqueBreakdown): Table 3.5's columns, plus ours
    ("rigid body", lambda b: b.rigid_body),
    ("armature", lambda b: b.armature),
    ("joint friction", lambda b: b.bearing),
    ("total at joint", lambda b: b.output),
    ("transmission", lambda b: b.transmission),
    ("velocity friction", lambda b: b.velocity),
    ("total input", lambda b: b.input),
)


def reference_trajectory(model, duration: float = 2.0, samples: int = 201, amplitude: float = 0.3):
    """Rest-to-rest quintic q(t) = q_a + (q_b − q_a)(10s³ − 15s⁴ + 6s⁵), s = t/duration.

    Each joint travels ``amplitude`` × its range (revolute joints without limits: 2π)
    about the middle of its range, alternately up and down.  Returns t (T,), q, q̇, q̈ (T, n).
    """
    if not (duration > 0 and samples >= 2 and 0 < amplitude <= 0.5):
        raise InputError(f"need duration > 0, samples >= 2 and 0 < amplitude <= 0.5, got "
                         f"{duration}, {samples}, {amplitude}")
    lower, upper = np.array(model.lower), np.array(model.upper)
    unbounded = ~(np.isfinite(lower) & np.isfinite(upper))
    middle = np.where(unbounded, 0.0, 0.5 * (lower + upper))
    span = np.where(unbounded, 2 * np.pi, upper - lower)
    sign = np.where(np.arange(model.n) % 2 == 0, 1.0, -1.0)
    start, travel = middle - 0.5 * amplitude * span * sign, amplitude * span * sign
    t = np.linspace(0.0, duration, samples)
    return (t, *quintic(t, duration, start, travel))


@dataclasses.dataclass(frozen=True)
class FrictionStudy:
    """Inverse dynamics with friction along a trajectory: every column at every sample.

    t (T,) s; q, qd, qdd (T, n); ``parts`` a TorqueBreakdown of (T, n) arrays.
    """

    robot: str
    backend: str
    friction: str
    joint_names: tuple
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    parts: object

    def index(self, time: float) -> int:
        return int(np.argmin(np.abs(self.t - time)))

    def table_at(self, time: float) -> dict:
        """{column label: (n,) torques} at the sample nearest ``time`` (Table 3.5's layout)."""
        k = self.index(time)
        return {label: get(self.parts)[k] for label, get in COLUMNS}

    @property
    def basic(self) -> np.ndarray:
        """Rigid body + armature (T, n): Dhanaraj's basic dynamic torque with the motor inertia."""
        return self.parts.rigid_body + self.parts.armature

    def dissipated_energy(self) -> np.ndarray:
        """∫ q̇ · (all friction) dt per joint (n,), J: ≥ 0 for dissipative friction."""
        return _integrate(self.t, self.qd * self.parts.friction)

    def friction_share(self) -> np.ndarray:
        """Friction's share of the input torque per joint (n,), in [0, 1]:
        mean |friction| / (mean |friction| + mean |rigid body + armature|)."""
        friction, basic = np.abs(self.parts.friction).mean(axis=0), np.abs(self.basic).mean(axis=0)
        total = friction + basic
        return np.divide(friction, total, out=np.zeros_like(total), where=total > 0)

    def as_dict(self, time: float) -> dict:
        return {"robot": self.robot, "backend": self.backend, "friction": self.friction,
                "joints": list(self.joint_names), "time": float(self.t[self.index(time)]),
                "table": {k: v.tolist() for k, v in self.table_at(time).items()},
                "dissipated_energy_J": self.dissipated_energy().tolist(),
                "friction_share": self.friction_share().tolist(),
                "peak_friction": np.abs(self.parts.friction).max(axis=0).tolist()}


def _integrate(t, values):
    return np.sum(0.5 * (values[1:] + values[:-1]) * np.diff(t)[:, None], axis=0)


def run_study(backend, duration: float = 2.0, samples: int = 201, amplitude: float = 0.3) -> FrictionStudy:
    """Evaluate ``backend.inverse_dynamics_breakdown`` along :func:`reference_trajectory`."""
    if not type(backend).can("friction"):
        raise InputError(f"backend {backend.name!r} has no friction: use newton_euler_friction or "
                         "lagrange_euler_friction")
    model = backend.model
    t, q, qd, qdd = reference_trajectory(model, duration, samples, amplitude)
    parts = backend.inverse_dynamics_breakdown(q, qd, qdd)
    return FrictionStudy(model.name, backend.name, backend.friction.name, model.joint_names, t, q, qd, qdd, parts)


def plot_study(study: FrictionStudy, path, mark: Optional[float] = None) -> Path:
    """One panel per joint: rigid body (+ armature), each friction part and the input torque."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(study.joint_names)
    cols = 3 if n > 4 else n
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), sharex=True, squeeze=False)
    p = study.parts
    curves = (("rigid body + armature", study.basic, "0.35", "-"),
              ("joint (bearing) friction", p.bearing, "tab:orange", "-"),
              ("transmission friction", p.transmission, "tab:red", "-"),
              ("velocity friction", p.velocity, "tab:purple", "-"),
              ("total input", p.input, "tab:blue", "--"))
    share = study.friction_share()
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.axis("off")
            continue
        for label, values, color, style in curves:
            if np.any(values[:, i]):
                ax.plot(study.t, values[:, i], style, color=color, lw=1.4, label=label)
        if mark is not None:
            ax.axvline(study.t[study.index(mark)], color="0.6", lw=0.8, ls=":")
        ax.axhline(0.0, color="0.8", lw=0.6)
        ax.set_title(f"{study.joint_names[i]}: friction share {100 * share[i]:.0f} %", fontsize=9)
        ax.set_ylabel("N·m" if np.ptp(study.q[:, i]) else "N·m / N")
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("t [s]")
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.suptitle(f"{study.robot}: input torque by cause along a rest-to-rest trajectory "
                 f"({study.backend}, friction '{study.friction}')", fontsize=11)
    return save_figure(fig, path)


def save_figure(fig, path) -> Path:
    """Write a friction figure (legend along its bottom edge, title on top) to ``path``,
    creating the folder, and close it; returns the path."""
    import matplotlib.pyplot as plt

    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
