"""The engine behind ``dyn-plugin validate``: sample states, compare backends with the
references, and report the largest errors.

The error measure of one entry is ``|ours − reference| / max(1, |reference|)`` (relative
for large values, absolute for small ones); a quantity passes when its largest such error
over all samples and entries is at most ``rtol``.
"""

from __future__ import annotations

import dataclasses
import time
from importlib import resources
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from .backends import get_backend
from .backends.registry import WITH_FRICTION
from .datafile import read_toml
from .errors import DynPluginError
from .robots import load_robot
from .sampling import States, random_states


def _coriolis_times_velocity(backend, s: States) -> np.ndarray:
    return np.einsum("nij,nj->ni", backend.coriolis_matrix(s.q, s.qd), s.qd)


def _one_step(pybullet_backend, backend, s: States, dt: float):
    """pybullet's one-step acceleration (q̇⁺ − q̇)/dt against ours, for the same (q, q̇, τ).

    A friction backend takes its own time step (friction impulses) from every other state
    put at rest, so that both stiction and sliding are compared; pybullet gets the same
    friction as jointDamping and velocity motors.
    """
    if not hasattr(backend, "velocity_step"):
        _, qd_next = pybullet_backend.step(s.q, s.qd, s.tau, dt)
        return backend.forward_dynamics(s.q, s.qd, s.tau), (qd_next - s.qd) / dt
    qd = s.qd.copy()
    qd[1::2] = 0.0
    _, qd_next = pybullet_backend.step(s.q, qd, s.tau, dt, **pybullet_friction(backend.friction))
    return (backend.velocity_step(s.q, qd, s.tau, dt) - qd) / dt, (qd_next - qd) / dt


def validation_friction(model, seed: int):
    """Random friction that pybullet reproduces exactly, for validating the friction
    backends: viscous c ~ U(0, 2) N·m·s/rad (jointDamping) and symmetric Coulomb
    F ~ U(0, 10) N·m (velocity motors), per joint, no armature."""
    from .friction.parameters import FrictionModel

    rng = np.random.default_rng([seed, model.n])
    return FrictionModel.create(model.n, viscous=rng.uniform(0, 2, model.n), coulomb=rng.uniform(0, 10, model.n),
                                name="validation", source=f"random, seed {seed}")


def pybullet_friction(friction) -> dict:
    """The pybullet stepping options equal to a viscous + symmetric Coulomb FrictionModel."""
    return {"joint_damping": friction.velocity.viscous, "motor_friction": friction.velocity.coulomb_positive}


def _unchanged_by_friction(quantity: str) -> bool:
    return quantity in ("M", "bias", "gravity", "Cqd")


# Quantities every reference can compute through the Backend interface.
QUANTITIES: dict = {
    "tau": (lambda be, s: be.inverse_dynamics(s.q, s.qd, s.qdd), "inverse dynamics τ(q, q̇, q̈)"),
    "M": (lambda be, s: be.mass_matrix(s.q), "mass matrix M(q)"),
    "bias": (lambda be, s: be.bias_forces(s.q, s.qd), "bias forces C(q, q̇) q̇ + g(q)"),
    "gravity": (lambda be, s: be.gravity_torques(s.q), "gravity torques g(q)"),
    "Cqd": (_coriolis_times_velocity, "Coriolis matrix times velocity C(q, q̇) q̇"),
    "qdd": (lambda be, s: be.forward_dynamics(s.q, s.qd, s.tau), "forward dynamics q̈(q, q̇, τ)"),
}
# Quantities that need pybullet as the integrator (compared only against the pybullet reference).
STEPPING = {
    "step": "one pybullet step: (q̇⁺ − q̇)/dt against our q̈",
    "traj_zero": "1 s trajectory under zero torque, semi-implicit Euler, q against pybullet's",
    "traj_gravity": "1 s trajectory under gravity compensation τ = g(q), q against pybullet's",
}


@dataclasses.dataclass
class Suite:
    """What to compare; loaded from a TOML file in ``validation/suites``."""

    robots: list
    backends: list
    references: list
    quantities: list
    samples: int = 200
    seed: int = 0
    rtol: float = 1e-9
    dt: float = 1e-3
    duration: float = 1.0
    trajectory_tol: float = 1e-8
    description: str = ""
    name: str = "custom"

    def check(self) -> None:
        unknown = [q for q in self.quantities if q not in QUANTITIES and q not in STEPPING]
        if unknown:
            raise DynPluginError(f"unknown quantities {unknown}; known: {', '.join([*QUANTITIES, *STEPPING])}")
        if self.samples < 1:
            raise DynPluginError(f"samples must be at least 1, got {self.samples}")
        for key in ("rtol", "dt", "duration", "trajectory_tol"):
            if not getattr(self, key) > 0:
                raise DynPluginError(f"{key} must be positive, got {getattr(self, key)}")


def suite_dir() -> Path:
    try:
        return Path(str(resources.files("dyn_plugin.suites")))
    except ModuleNotFoundError:  # source tree, not installed
        return Path(__file__).resolve().parent.parent / "validation" / "suites"


def list_suites() -> list:
    return sorted(p.stem for p in suite_dir().glob("*.toml"))


def load_suite(name_or_path: str = "default") -> Suite:
    """A suite by name (``default``, ``quick``) or from a TOML file path."""
    path = Path(name_or_path)
    if not path.is_file():
        path = suite_dir() / f"{name_or_path}.toml"
    if not path.is_file():
        raise DynPluginError(f"unknown suite {name_or_path!r}; available: {', '.join(list_suites())}")
    data = read_toml(path, DynPluginError, "suite file")
    fields = {f.name for f in dataclasses.fields(Suite)}
    unknown = set(data) - fields
    if unknown:
        raise DynPluginError(f"{path}: unknown keys {sorted(unknown)}; known: {sorted(fields)}")
    suite = Suite(**data)
    if suite.name == "custom":
        suite.name = path.stem
    suite.check()
    return suite


@dataclasses.dataclass
class Comparison:
    """The largest error of one quantity of one backend against one reference."""

    robot: str
    backend: str
    reference: str
    quantity: str
    samples: int
    max_abs: float
    max_rel: float
    worst_sample: int
    worst_entry: tuple
    rtol: float
    errors: np.ndarray = dataclasses.field(default=None, repr=False)  # per sample, for plots
    trace: dict = dataclasses.field(default=None, repr=False)         # trajectories, for plots

    @property
    def passed(self) -> bool:
        return bool(self.max_rel <= self.rtol)

    def as_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("errors", "trace")}
        out["worst_entry"] = list(self.worst_entry)
        out["passed"] = self.passed
        if self.trace is not None:
            out["error_growth"] = self.trace["growth"]
        return out


def relative_errors(ours: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """|ours − ref| / max(1, |ref|) elementwise; NaN counts as infinitely wrong."""
    ours, reference = np.asarray(ours, dtype=float), np.asarray(reference, dtype=float)
    rel = np.abs(ours - reference) / np.maximum(1.0, np.abs(reference))
    return np.where(np.isnan(rel), np.inf, rel)


def _comparison(robot, backend, reference, quantity, ours, ref, tol, trace=None) -> "Comparison":
    rel = relative_errors(ours, ref)
    worst = np.unravel_index(int(np.argmax(rel)), rel.shape)
    diff = np.abs(np.asarray(ours, dtype=float) - np.asarray(ref, dtype=float))
    return Comparison(robot=robot, backend=backend, reference=reference, quantity=quantity, samples=len(rel),
                      max_abs=float(np.max(np.where(np.isnan(diff), np.inf, diff))), max_rel=float(rel.max()),
                      worst_sample=int(worst[0]), worst_entry=tuple(int(i) for i in worst[1:]), rtol=tol,
                      errors=rel.reshape(len(rel), -1).max(axis=1), trace=trace)


@dataclasses.dataclass
class Report:
    suite: Suite
    comparisons: list
    seconds: float

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    def failures(self) -> list:
        return [c for c in self.comparisons if not c.passed]

    def as_dict(self) -> dict:
        from . import __version__

        return {
            "dyn_plugin_version": __version__,
            "suite": dataclasses.asdict(self.suite),
            "passed": self.passed,
            "seconds": round(self.seconds, 3),
            "results": [c.as_dict() for c in self.comparisons],
        }


def run(suite: Suite, progress: Optional[Callable[[str], None]] = None) -> Report:
    """Compare every backend with every reference on every robot of the suite.

    ``progress(label)`` is called after each robot x backend pair is done.
    """
    suite.check()
    start = time.perf_counter()
    comparisons = []
    plain = [q for q in suite.quantities if q in QUANTITIES]
    stepping = [q for q in suite.quantities if q in STEPPING]
    for robot in suite.robots:
        model = load_robot(robot)
        states = random_states(model, suite.samples, seed=suite.seed)
        references = {ref: get_backend(ref, model) for ref in suite.references}
        reference_values = {ref: _evaluate(be, states, plain) for ref, be in references.items()}
        for backend_name in suite.backends:
            backend, compared = get_backend(backend_name, model), plain
            if backend_name in WITH_FRICTION:  # τ and q̈ include friction: checked by stepping instead
                backend = get_backend(backend_name, model, friction=validation_friction(model, suite.seed))
                compared = [q for q in plain if _unchanged_by_friction(q)]
            ours = _evaluate(backend, states, compared)
            for ref, values in reference_values.items():
                for quantity in compared:
                    comparisons.append(_comparison(model.name, backend_name, ref, quantity, ours[quantity],
                                                   values[quantity], suite.rtol))
            if stepping and "pybullet" in references:
                comparisons += _stepping_comparisons(suite, model.name, backend_name, backend,
                                                     references["pybullet"], states, stepping)
            if progress:
                progress(f"{robot} / {backend_name}")
    return Report(suite, comparisons, time.perf_counter() - start)


def _evaluate(backend, states: States, quantities: Sequence[str]) -> dict:
    return {name: QUANTITIES[name][0](backend, states) for name in quantities}


def _stepping_comparisons(suite, robot, backend_name, backend, pybullet_backend, states, quantities) -> list:
    out = []
    if "step" in quantities:
        ours, theirs = _one_step(pybullet_backend, backend, states, suite.dt)
        out.append(_comparison(robot, backend_name, "pybullet", "step", ours, theirs, suite.rtol))
    controllers = {"traj_zero": lambda t, q, qd: np.zeros(len(q)),
                   "traj_gravity": lambda t, q, qd: backend.gravity_torques(q)}
    for quantity in [q for q in quantities if q in controllers]:
        ours, theirs = compare_trajectories(backend, pybullet_backend, states.q[0], states.qd[0],
                                            controllers[quantity], suite.duration, suite.dt)
        trace = {"t": ours.t, "ours": ours.q, "pybullet": theirs, "growth": _growth(ours.t, ours.q, theirs)}
        out.append(_comparison(robot, backend_name, "pybullet", quantity, ours.q, theirs, suite.trajectory_tol, trace))
    return out


def compare_trajectories(backend, pybullet_backend, q0, qd0, torque, duration, dt):
    """Our semi-implicit Euler trajectory and pybullet's from the same state under the
    same torque law (and the same friction): ``(Trajectory, q_pybullet (T, n))``."""
    from .simulate import simulate

    ours = simulate(backend, q0, qd0, torque, duration, dt, on_limit="ignore")
    friction = pybullet_friction(backend.friction) if hasattr(backend, "velocity_step") else {}
    theirs, _ = pybullet_backend.rollout(q0, qd0, torque, len(ours.t) - 1, dt, **friction)
    return ours, theirs


def _growth(t, ours, theirs) -> dict:
    """Largest |Δq| up to a few instants, to show how the difference grows."""
    error = np.abs(ours - theirs).max(axis=1)
    marks = [t[-1] * f for f in (0.1, 0.25, 0.5, 1.0)]
    return {f"{mark:.3g}s": float(error[: int(np.searchsorted(t, mark + 1e-12))].max()) for mark in marks}
