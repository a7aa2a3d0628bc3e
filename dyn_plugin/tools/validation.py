"""The engine behind ``dyn-plugin validate``: sample states, compare backends with the
references, and report the largest errors.

The error measure of one entry is ``|ours − reference| / max(1, |reference|)`` (relative
for large values, absolute for small ones); a quantity passes when its largest such error
over all samples and entries is at most ``rtol``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import time
from importlib import resources
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from ..backends.registry import get_backend
from ..backends.registry import backends as registered_backends
from ..datafile import read_toml
from ..errors import DynPluginError, ModelError
from ..robots import load_robot
from ..sampling import States, random_states

__all__ = ["CHUNK", "KEPT_SETUPS", "MAX_SAMPLES", "MAX_STEPS", "QUANTITIES", "SETTINGS", "STEPPING", "STIFFNESS",
           "TRAJECTORIES", "Comparison", "Report", "Suite", "Task", "chunk_states", "compare_trajectories",
           "list_suites", "load_suite", "model_to_validate", "positive_number_problem", "pybullet_friction",
           "relative_errors", "run", "run_task", "setting_problem", "suite_dir", "tasks", "tolerance_problem",
           "validation_friction", "whole_number_problem"]


def _coriolis_times_velocity(backend, s: States) -> np.ndarray:
    return np.einsum("nij,nj->ni", backend.coriolis_matrix(s.q, s.qd), s.qd)


def _one_step(pybullet_backend, backend, s: States, dt: float):
    """pybullet's one-step acceleration (q̇⁺ − q̇)/dt against ours, for the same (q, q̇, τ).

    A friction backend takes its own time step (friction impulses) from every other state
    put at rest, so that both stiction and sliding are compared; pybullet gets the same
    friction as jointDamping and velocity motors.
    """
    if not type(backend).can("stepping"):
        _, qd_next = pybullet_backend.step(s.q, s.qd, s.tau, dt)
        return backend.forward_dynamics(s.q, s.qd, s.tau), (qd_next - s.qd) / dt
    qd = s.qd.copy()
    qd[1::2] = 0.0
    _, qd_next = pybullet_backend.step(s.q, qd, s.tau, dt, **pybullet_friction(backend.friction))
    return (backend.velocity_step(s.q, qd, s.tau, dt) - qd) / dt, (qd_next - qd) / dt


# dt·λ_max(M⁻¹D) of the validation's viscous friction.  pybullet steps jointDamping
# explicitly, which is stable only below 2; a light wrist with damping drawn in U(0, 2)
# reaches 46 (PUMA-560 at 1 ms), and no backend can then match a diverging reference.
STIFFNESS = 0.5


def validation_friction(model, seed: int, dt: float, q: np.ndarray):
    """Random friction that pybullet reproduces exactly, for validating the friction
    backends: viscous c ~ U(0, 2) N·m·s/rad (jointDamping), scaled down where needed so
    that dt·λ_max(M(q)⁻¹ diag(c)) ≤ STIFFNESS at the configurations ``q`` (N, n), and
    symmetric Coulomb F ~ U(0, 10) N·m (velocity motors), per joint, no armature."""
    from ..friction.parameters import FrictionModel

    rng = np.random.default_rng([seed, model.n])
    viscous, coulomb = rng.uniform(0, 2, model.n), rng.uniform(0, 10, model.n)
    stiffness = dt * _largest_damping_rate(get_backend("newton_euler", model).mass_matrix(q), viscous)
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
TRAJECTORIES = ("traj_zero", "traj_gravity")
STEPPING = {
    "step": "one pybullet step: (q̇⁺ − q̇)/dt against our q̈",
    "traj_zero": "1 s trajectory under zero torque, semi-implicit Euler, q against pybullet's",
    "traj_gravity": "1 s trajectory under gravity compensation τ = g(q), q against pybullet's",
}


# Largest batch of random states (per robot) and trajectory length accepted: the default
# suite uses 1000 states (about 2 minutes) and 1000 steps; 100 times more is hours of work.
MAX_SAMPLES = 100_000
MAX_STEPS = 100_000


def setting_problem(key: str, value) -> Optional[str]:
    """Why ``value`` cannot be the numeric suite setting ``key`` ("must be ..., got ..."),
    or None when it can."""
    return SETTINGS[key](value)


def whole_number_problem(value, lowest: int, highest: Optional[int] = None) -> Optional[str]:
    """Why ``value`` is not a whole number from ``lowest`` to ``highest`` (None: no limit), or None."""
    whole = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if whole and lowest <= value and (highest is None or value <= highest):
        return None
    bounds = f" from {lowest} to {highest}" if highest is not None else f", at least {lowest}"
    return f"must be a whole number{bounds}, got {value!r}"


def positive_number_problem(value) -> Optional[str]:
    """Why ``value`` is not a finite positive number, or None."""
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    try:
        if number and math.isfinite(value) and value > 0:
            return None
    except OverflowError:  # an int too large for a float
        pass
    return f"must be a finite positive number, got {value!r}"


def tolerance_problem(value) -> Optional[str]:
    """Why ``value`` is not a tolerance on the error measure, positive and below 1 (which
    would accept errors of 100 %), or None."""
    problem = positive_number_problem(value)
    if problem is None and value >= 1:
        return f"must be below 1 (an error of 100 %), got {value!r}"
    return problem


# The numeric settings of a suite: why a value is refused ("must be ..."), None when it is valid.
SETTINGS = {
    "samples": lambda value: whole_number_problem(value, 1, MAX_SAMPLES),
    "seed": lambda value: whole_number_problem(value, 0),
    "rtol": tolerance_problem,
    "trajectory_tol": tolerance_problem,
    "dt": positive_number_problem,
    "duration": positive_number_problem,
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
        """Raise :class:`DynPluginError` naming the first setting that cannot be run."""
        for key in ("robots", "backends", "references", "quantities"):
            names = getattr(self, key)
            if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
                raise DynPluginError(f"{key} must be a non-empty list of names, got {names!r}")
        unknown = [q for q in self.quantities if q not in QUANTITIES and q not in STEPPING]
        if unknown:
            raise DynPluginError(f"unknown quantities {unknown}; known: {', '.join([*QUANTITIES, *STEPPING])}")
        stepping = [q for q in self.quantities if q in STEPPING]
        if len(stepping) == len(self.quantities) and "pybullet" not in self.references:
            raise DynPluginError(f"nothing to compare: quantities {stepping} are compared with pybullet only, "
                                 "which is not among the references")
        for key in SETTINGS:
            problem = setting_problem(key, getattr(self, key))
            if problem:
                raise DynPluginError(f"{key} {problem}")
        if stepping and self.dt > self.duration:
            raise DynPluginError(f"dt must be at most the trajectory duration ({self.duration:g} s), got {self.dt:g}")
        if stepping and self.duration / self.dt > MAX_STEPS:
            raise DynPluginError(f"dt must be at least duration / {MAX_STEPS} = {self.duration / MAX_STEPS:g} s "
                                 f"(at most {MAX_STEPS} trajectory steps), got {self.dt:g}")


def suite_dir() -> Path:
    try:
        return Path(str(resources.files("dyn_plugin.suites")))
    except ModuleNotFoundError:  # source tree, not installed
        return Path(__file__).resolve().parents[2] / "validation" / "suites"


def list_suites() -> list:
    return sorted(p.stem for p in suite_dir().glob("*.toml"))


def _selected(key: str, value, path):
    """A suite's ``robots``, ``backends`` or ``references`` as a list of names.  Besides a
    list, ``robots = "bundled"`` (every bundled robot) and, for backends and references, a
    selection from the registry by what backends declare: ``{kind = ["ours", "generated"],
    cannot = ["friction"]}`` (keys kind, can, cannot; see ``registry.backends``)."""
    if key == "robots" and value == "bundled":
        from ..robots import list_robots

        return list_robots()
    if key in ("backends", "references") and isinstance(value, dict):
        unknown = set(value) - {"kind", "can", "cannot"}
        if unknown:
            raise DynPluginError(f"{path}: {key} selects by kind, can and cannot; unknown keys {sorted(unknown)}")
        kind = value.get("kind")
        try:
            return registered_backends(tuple(kind) if isinstance(kind, list) else kind,
                                       can=tuple(value.get("can", ())), cannot=tuple(value.get("cannot", ())))
        except DynPluginError as error:
            raise DynPluginError(f"{path}: {key}: {error}") from None
    return value


def load_suite(name_or_path: str = "default") -> Suite:
    """A suite by name (``default``, ``quick``) or from a TOML file path."""
    path = Path(name_or_path)
    if not path.is_file():
        path = suite_dir() / f"{name_or_path}.toml"
    if not path.is_file():
        raise DynPluginError(f"unknown suite {name_or_path!r}; available: {', '.join(list_suites())}")
    try:
        data = read_toml(path, DynPluginError, "suite file")
    except UnicodeDecodeError:
        raise DynPluginError(f"{path}: not a valid suite file (TOML): not UTF-8 text") from None
    fields = {f.name for f in dataclasses.fields(Suite)}
    unknown = set(data) - fields
    if unknown:
        raise DynPluginError(f"{path}: unknown keys {sorted(unknown)}; known: {sorted(fields)}")
    suite = Suite(**{key: _selected(key, value, path) for key, value in data.items()})
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
        from .._version import __version__

        return {
            "dyn_plugin_version": __version__,
            "suite": dataclasses.asdict(self.suite),
            "passed": self.passed,
            "seconds": round(self.seconds, 3),
            "results": [c.as_dict() for c in self.comparisons],
        }


# States per validation task.  Fixed, so that the states and every result are the same
# whether the tasks run serially or on a Dask cluster of any size.
CHUNK = 250


@dataclasses.dataclass(frozen=True)
class Task:
    """One unit of a validation run: ``count`` of ``robot``'s states from ``start`` (chunk
    ``chunk``), or (chunk -1) its trajectories, which start from its first state."""

    robot: str
    chunk: int
    start: int = 0
    count: int = 0

    @property
    def label(self) -> str:
        if self.chunk < 0:
            return f"{self.robot} / trajectories"
        return f"{self.robot} / states {self.start + 1}-{self.start + self.count}"


def tasks(suite: Suite) -> list:
    """The tasks of a run, in report order: each robot's state chunks, then its trajectories."""
    trajectories = "pybullet" in suite.references and any(q in TRAJECTORIES for q in suite.quantities)
    out = []
    for robot in suite.robots:
        out += [Task(robot, c, start, min(CHUNK, suite.samples - start))
                for c, start in enumerate(range(0, suite.samples, CHUNK))]
        out += [Task(robot, -1)] if trajectories else []
    return out


def run(suite: Suite, progress: Optional[Callable[[str], None]] = None, client=None) -> Report:
    """Compare every backend with every reference on every robot of the suite.

    The work is cut into :func:`tasks`; ``client`` (a ``distributed.Client``) runs them on
    a Dask cluster, None in this process: the results are identical.  ``progress(label)``
    is called after each task.
    """
    suite.check()
    start = time.perf_counter()
    plan = tasks(suite)
    parts = _run_serially(plan, suite, progress) if client is None else _run_on_dask(plan, suite, progress, client)
    return Report(suite, _merge_tasks(parts), time.perf_counter() - start)


def _run_serially(plan: list, suite: Suite, progress) -> list:
    parts = []
    for task in plan:
        parts.append(run_task(task, suite))
        if progress:
            progress(task.label)
    return parts


def _run_on_dask(plan: list, suite: Suite, progress, client) -> list:
    from distributed import as_completed

    futures = client.map(run_task, plan, suite=suite, pure=False)
    label = {future.key: task.label for future, task in zip(futures, plan)}
    for future in as_completed(futures):
        if future.status == "error":
            future.result()  # raises the task's own error (a DynPluginError names robot and backend)
        if progress:
            progress(label[future.key])
    return client.gather(futures)


def run_task(task: Task, suite: Suite) -> list:
    """The comparisons of one task (on a worker, or here)."""
    setup = _setup(suite, task.robot)
    if task.chunk < 0:
        return _trajectory_comparisons(suite, setup)
    return _chunk_comparisons(suite, setup, chunk_states(setup.model, suite.seed, task))


def chunk_states(model, seed: int, task: Task) -> States:
    """The states of ``task``: drawn from (seed, a digest of the robot, chunk), so that a
    chunk's states do not depend on which worker draws them, nor on the other chunks."""
    digest = int.from_bytes(hashlib.sha256(task.robot.encode("utf-8", "surrogatepass")).digest()[:8], "little")
    return random_states(model, task.count, seed=np.random.SeedSequence([seed, digest, task.chunk]))


@dataclasses.dataclass
class _Setup:
    """What every task of one robot needs, built once per process."""

    model: object
    references: dict
    backends: dict     # name -> (backend, quantities compared with the references)
    first: States      # the robot's first chunk of states (trajectories start from its first)


_SETUPS: dict = {}   # the last few robots' setups, most recent last (each holds pybullet clients)
KEPT_SETUPS = 4       # a Dask worker gets the robots' tasks interleaved


def _setup(suite: Suite, robot: str) -> _Setup:
    key = (robot, suite.seed, suite.dt, suite.samples, tuple(suite.backends), tuple(suite.references),
           tuple(suite.quantities))
    setup = _SETUPS.pop(key, None) or _build_setup(suite, robot)
    _SETUPS[key] = setup
    while len(_SETUPS) > KEPT_SETUPS:
        _SETUPS.pop(next(iter(_SETUPS)))
    return setup


def _build_setup(suite: Suite, robot: str) -> _Setup:
    model = model_to_validate(robot)
    plain = [q for q in suite.quantities if q in QUANTITIES]
    first = chunk_states(model, suite.seed, Task(robot, 0, 0, min(CHUNK, suite.samples)))
    backends, with_friction = {}, registered_backends(can=("friction",))
    for name in suite.backends:
        if name in with_friction:  # τ and q̈ include friction: checked by stepping instead
            friction = validation_friction(model, suite.seed, suite.dt, first.q)
            backends[name] = (get_backend(name, model, friction=friction), [q for q in plain if _unchanged_by_friction(q)])
        else:
            backends[name] = (get_backend(name, model), plain)
    return _Setup(model, {ref: get_backend(ref, model) for ref in suite.references}, backends, first)


def _chunk_comparisons(suite: Suite, setup: _Setup, states: States) -> list:
    model, plain = setup.model, [q for q in suite.quantities if q in QUANTITIES]
    reference_values = {ref: _evaluate(model, ref, be, states, plain) for ref, be in setup.references.items()}
    comparisons = []
    for name, (backend, compared) in setup.backends.items():
        ours = _evaluate(model, name, backend, states, compared)
        comparisons += [_comparison(model.name, name, ref, quantity, ours[quantity], values[quantity], suite.rtol)
                        for ref, values in reference_values.items() for quantity in compared]
        if "step" in suite.quantities and "pybullet" in setup.references:  # stepping: against pybullet only
            with _named_singular_mass_matrix(model, name):
                ours, theirs = _one_step(setup.references["pybullet"], backend, states, suite.dt)
            comparisons.append(_comparison(model.name, name, "pybullet", "step", ours, theirs, suite.rtol))
    return comparisons


def _trajectory_comparisons(suite: Suite, setup: _Setup) -> list:
    """Trajectories of every backend against pybullet's, from the robot's first state."""
    q0, qd0, pybullet_backend = setup.first.q[0], setup.first.qd[0], setup.references["pybullet"]
    comparisons = []
    for name, (backend, _) in setup.backends.items():
        controllers = {"traj_zero": lambda t, q, qd: np.zeros(len(q)),
                       "traj_gravity": lambda t, q, qd, backend=backend: backend.gravity_torques(q)}
        for quantity in [q for q in TRAJECTORIES if q in suite.quantities]:
            with _named_singular_mass_matrix(setup.model, name):
                ours, theirs = compare_trajectories(backend, pybullet_backend, q0, qd0, controllers[quantity],
                                                    suite.duration, suite.dt)
            trace = {"t": ours.t, "ours": ours.q, "pybullet": theirs, "growth": _growth(ours.t, ours.q, theirs)}
            comparisons.append(_comparison(setup.model.name, name, "pybullet", quantity, ours.q, theirs,
                                           suite.trajectory_tol, trace))
    return comparisons


def _merge_tasks(parts: list) -> list:
    """The tasks' comparisons of each (robot, backend, reference, quantity) merged into one,
    in the order the tasks first report them."""
    groups: dict = {}
    for comparisons in parts:
        for c in comparisons:
            groups.setdefault((c.robot, c.backend, c.reference, c.quantity), []).append(c)
    return [_merge(group) for group in groups.values()]


def _merge(parts: list) -> "Comparison":
    """Comparisons of one quantity over consecutive chunks as the one comparison over all
    their states (the first largest error wins, as an argmax over all states would)."""
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [p.samples for p in parts])
    worst = int(np.argmax([p.max_rel for p in parts]))
    return dataclasses.replace(parts[worst], samples=int(offsets[-1]), max_abs=max(p.max_abs for p in parts),
                               worst_sample=int(offsets[worst]) + parts[worst].worst_sample,
                               errors=np.concatenate([p.errors for p in parts]))


def model_to_validate(robot: str):
    """The model of ``robot`` (bundled name or URDF path); one without moving joints is refused."""
    model = load_robot(robot)
    if model.n == 0:
        raise ModelError(f"{robot}: robot {model.name!r} has no moving joint (only fixed joints), so there is "
                         "nothing to compare")
    return model


def _evaluate(model, name: str, backend, states: States, quantities: Sequence[str]) -> dict:
    with _named_singular_mass_matrix(model, name):
        return {quantity: QUANTITIES[quantity][0](backend, states) for quantity in quantities}


@contextlib.contextmanager
def _named_singular_mass_matrix(model, backend_name: str):
    """A singular mass matrix (the backends' ModelError, or numpy's LinAlgError from a
    factorisation elsewhere) as a ModelError that names the robot, the backend and, for
    pybullet, what pybullet changed in the model."""
    try:
        yield
    except (np.linalg.LinAlgError, ModelError) as error:
        details = model.pybullet_alterations() if backend_name == "pybullet" else []
        raise ModelError(f"{model.name}: {backend_name} cannot compute the dynamics: {error}"
                         + (f" (pybullet changes the model: {'; '.join(details)})" if details else "")) from None


def compare_trajectories(backend, pybullet_backend, q0, qd0, torque, duration, dt):
    """Our semi-implicit Euler trajectory and pybullet's from the same state under the
    same torque law (and the same friction): ``(Trajectory, q_pybullet (T, n))``."""
    from ..simulate import simulate

    ours = simulate(backend, q0, qd0, torque, duration, dt, on_limit="ignore")
    friction = pybullet_friction(backend.friction) if type(backend).can("stepping") else {}
    theirs, _ = pybullet_backend.rollout(q0, qd0, torque, len(ours.t) - 1, dt, **friction)
    return ours, theirs


def _growth(t, ours, theirs) -> dict:
    """Largest |Δq| up to a few instants, to show how the difference grows."""
    error = np.abs(ours - theirs).max(axis=1)
    marks = [t[-1] * f for f in (0.1, 0.25, 0.5, 1.0)]
    return {f"{mark:.3g}s": float(error[: int(np.searchsorted(t, mark + 1e-12))].max()) for mark in marks}
