"""The engine behind ``dyn-plugin validate``: sample states, compare backends with the
references, and report the largest errors.

The error measure of one entry is ``|ours − reference| / max(1, |reference|)`` (relative
for large values, absolute for small ones); a quantity passes when its largest such error
over all samples and entries is at most ``rtol``.

Before pybullet judges a backend, pybullet is held to pinocchio on the same states (or the
same trajectory) for the same quantity: that reference disagreement is the *floor*.  Where
it exceeds the tolerance, a comparison against pybullet passes when its error is at most
tolerance + floor and the backend is within the tolerance of what pinocchio predicts for
the same experiment (see :class:`Comparison`); :func:`pybullet_differences` says why the
references disagree where it can tell.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import math
import os
import time
import types
import warnings
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from ..backends.registry import backends as registered_backends
from ..backends.registry import get_backend, list_backends
from ..datafile import read_toml
from ..errors import BackendError, DynPluginError, InputError, ModelError, argument, arguments_spelled
from ..robots import load_robot
from ..sampling import States, random_states
from . import plan
from .bristle_validation import BRISTLES
from .plan import DERIVATIVES, QUANTITIES, STEPPING, TRAJECTORIES

__all__ = ["CHUNK", "DERIVATIVES", "KEPT_SETUPS", "MAX_SAMPLES", "MAX_STEPS", "QUANTITIES", "SETTINGS", "STEPPING", "STIFFNESS",
           "TRAJECTORIES", "Comparison", "Report", "Suite", "Task", "bullet_diagonalize", "chunk_states",
           "compare_trajectories", "list_suites", "load_suite", "model_to_validate", "positive_number_problem",
           "pybullet_differences", "pybullet_dropped_inertia", "pybullet_friction", "relative_errors", "run",
           "run_task", "setting_problem", "suite_dir", "tasks", "tolerance_problem", "validation_friction",
           "whole_number_problem"]


def _one_step(pybullet_backend, backend, s: States, dt: float):
    """pybullet's one-step acceleration (q̇⁺ − q̇)/dt against ours, for the same (q, q̇, τ).

    A friction backend takes its own time step (friction impulses) from every other state
    put at rest, so that both stiction and sliding are compared; pybullet gets the same
    friction as jointDamping and velocity motors.
    """
    ours, qd = _our_step(backend, s, dt)
    friction = pybullet_friction(backend.friction) if type(backend).can("stepping") else {}
    q_next, qd_next = pybullet_backend.step(s.q, qd, s.tau, dt, **friction)
    return ours, pybullet_backend.step_acceleration(s.q, qd, q_next, qd_next, dt)


def _step_only(backend, states: States, dt: float) -> np.ndarray:
    return _our_step(backend, states, dt)[0]


def _our_step(backend, s: States, dt: float) -> tuple:
    """``backend``'s side of :func:`_one_step` and the q̇ it starts from: q̈, or for a
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
    from ..friction.parameters import FrictionModel

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
    floating_base: bool = False     # every robot's root link floats (pinocchio's free-flyer)
    mimic: bool = False             # <mimic> joints follow their leaders (reduced coordinates)
    lock: dict = dataclasses.field(default_factory=dict)   # joints held fixed, {name: rad or m}, in every robot
    description: str = ""
    name: str = "custom"

    def model(self, robot: str):
        """The model of ``robot`` as this suite validates it (:func:`model_to_validate`)."""
        return model_to_validate(robot, floating_base=self.floating_base, mimic=self.mimic, lock=self.lock)

    def check(self) -> None:
        """Raise :class:`DynPluginError` naming the first setting that cannot be run, as
        :func:`~dyn_plugin.errors.argument` spells it (a suite file's key, or the option
        that set it on the command line)."""
        for key, kind, valid in (("floating_base", bool, "true or false"), ("mimic", bool, "true or false"),
                                 ("lock", dict, "a table {joint = value (rad or m)}"),
                                 ("description", str, "text"), ("name", str, "text")):
            if not isinstance(getattr(self, key), kind):
                raise DynPluginError(f"{argument(key)} must be {valid}, got {getattr(self, key)!r}")
        for key, besides in (("robots", ', "bundled" or "zoo"'), ("backends", _SELECTION), ("references", _SELECTION),
                             ("quantities", "")):
            names = getattr(self, key)
            if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
                raise DynPluginError(f"{argument(key)} must be a non-empty list of names{besides}, got {names!r}")
        known = [*QUANTITIES, *DERIVATIVES, *STEPPING, *BRISTLES]
        unknown = [q for q in self.quantities if q not in known]
        if unknown:
            raise DynPluginError(f"{argument('quantities')}: unknown {', '.join(map(repr, unknown))}; known: "
                                 f"{', '.join(known)}")
        self._check_backend_names()
        stepping = [q for q in self.quantities if q in STEPPING]
        if len(stepping) == len(self.quantities) and "pybullet" not in self.references:
            raise DynPluginError(f"nothing to compare: {argument('quantities')} {', '.join(stepping)} are compared "
                                 f"with pybullet only, which is not among the {argument('references')}")
        for key in SETTINGS:
            problem = setting_problem(key, getattr(self, key))
            if problem:
                raise DynPluginError(f"{argument(key)} {problem}")
        if stepping and self.dt > self.duration:
            raise DynPluginError(f"{argument('dt')} must be at most the trajectory {argument('duration')} "
                                 f"({self.duration:g} s), got {self.dt:g}")
        if stepping and self.duration / self.dt > MAX_STEPS:
            raise DynPluginError(f"{argument('dt')} must be at least {argument('duration')} / {MAX_STEPS} = "
                                 f"{self.duration / MAX_STEPS:g} s (at most {MAX_STEPS} trajectory steps), "
                                 f"got {self.dt:g}")

    def _check_backend_names(self) -> None:
        """BackendError naming the first backend or reference that is not registered, with
        the registered ones of its kind."""
        available = list_backends()
        for key, kind in (("backends", ("ours", "generated")), ("references", "reference")):
            unknown = [name for name in getattr(self, key) if name not in available]
            if unknown:
                raise BackendError(f"{argument(key)}: unknown backend {unknown[0]!r}; {key}: "
                                   f"{', '.join(registered_backends(kind))} (or any other registered backend)")


_SELECTION = " or a selection {kind = ..., can = [...], cannot = [...]}"


def suite_dir() -> Path:
    return Path(__file__).resolve().parent / "suites"   # dyn_plugin/tools/suites (validation/suites links to it)


def list_suites() -> list:
    return sorted(p.stem for p in suite_dir().glob("*.toml"))


def _selected(key: str, value):
    """A suite's ``robots``, ``backends`` or ``references`` as a list of names.  Besides a
    list, ``robots = "bundled"`` (every bundled robot), ``robots = "zoo"`` (:mod:`.zoo`) and, for backends and references, a
    selection from the registry by what backends declare: ``{kind = ["ours", "generated"],
    cannot = ["friction"]}`` (keys kind, can, cannot, each a name or a list of names; see
    ``registry.backends``)."""
    if key == "robots" and value == "bundled":
        from ..robots import list_robots

        return list_robots()
    if key == "robots" and value == "zoo":  # every URDF of example-robot-data and pybullet_data
        from .zoo_files import robots

        return robots()
    if key in ("backends", "references") and isinstance(value, dict):
        unknown = set(value) - {"kind", "can", "cannot"}
        if unknown:
            raise DynPluginError(f"{key} selects by kind, can and cannot; unknown keys {sorted(unknown)}")
        kind, can, cannot = (_names(f"{key}.{part}", value.get(part, ())) for part in ("kind", "can", "cannot"))
        try:
            return registered_backends(kind or None, can=can, cannot=cannot)
        except DynPluginError as error:
            raise DynPluginError(f"{key}: {error}") from None
    return value


def _names(key: str, value) -> tuple:
    """``value``, a name or a list of names, as a tuple; DynPluginError naming ``key`` otherwise."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
        raise DynPluginError(f"{key} must be a name or a list of names, got {value!r}")
    return tuple(names)


REQUIRED = ("robots", "backends", "references", "quantities")   # what a suite file must give


def load_suite(name_or_path: str = "default") -> Suite:
    """A suite by name (``default``, ``quick``) or from a TOML file path.  Anything
    else, or a file that is not a valid suite, is a DynPluginError naming the file and
    what is wrong with it."""
    path = _suite_file(name_or_path)
    data = read_toml(path, DynPluginError, "suite file")
    fields = [f.name for f in dataclasses.fields(Suite)]
    unknown = set(data) - set(fields)
    if unknown:
        raise DynPluginError(f"{path}: unknown keys {sorted(unknown)}; known: {', '.join(fields)}")
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        raise DynPluginError(f"{path}: missing {', '.join(missing)} (a suite names its {', '.join(REQUIRED)})")
    with arguments_spelled(None):   # the file's own keys, whoever reads it
        try:
            suite = Suite(**{key: _selected(key, value) for key, value in data.items()})
            if suite.name == "custom":
                suite.name = path.stem
            suite.check()
        except DynPluginError as error:
            raise type(error)(f"{path}: {error}") from None
    return suite


def _suite_file(name_or_path) -> Path:
    """The TOML file of a bundled suite's name or of a path; DynPluginError for a folder,
    a missing file or an unknown name."""
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise DynPluginError(f"a suite is a name ({', '.join(list_suites())}) or a TOML file, got {name_or_path!r}")
    path = Path(name_or_path)
    if path.is_dir():
        raise DynPluginError(f"suite {str(path)!r} is a folder; give a suite file (TOML) or one of "
                             f"{', '.join(list_suites())}")
    if path.is_file():
        return path
    bundled = suite_dir() / f"{name_or_path}.toml"
    if bundled.is_file():
        return bundled
    if path.suffix or len(path.parts) > 1:
        raise DynPluginError(f"suite file {str(path)!r} does not exist")
    raise DynPluginError(f"unknown suite {str(name_or_path)!r}; available: {', '.join(list_suites())} "
                         "(or a TOML file)")


@dataclasses.dataclass
class Comparison:
    """The largest error of one quantity of one backend against one reference.

    Against pybullet it carries ``floor``, pybullet's own largest error against pinocchio on
    the same states (or trajectory), rigid body alone.  Where the floor exceeds the tolerance
    the comparison passes at ``max_rel <= rtol + floor``: the triangle inequality
    |ours − pybullet| <= |ours − pinocchio| + |pinocchio − pybullet| bounds the error of a
    backend that agrees with pinocchio by exactly that.  What keeps it honest is the first
    term: ``pinocchio_error``, the backend's largest error against pinocchio's prediction of
    the same experiment (pinocchio's values; for a friction backend the same friction law
    over pinocchio), computed wherever ``max_rel`` exceeds ``rtol``, must be within ``rtol``.
    """

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
    floor: Optional[float] = None             # pybullet vs pinocchio, same states (against pybullet only)
    pinocchio_error: Optional[float] = None   # ours vs pinocchio's prediction, where max_rel > rtol

    @property
    def floor_applies(self) -> bool:
        """True when the references disagree beyond the tolerance on this quantity."""
        return self.floor is not None and self.floor > self.rtol

    @property
    def passed(self) -> bool:
        if self.max_rel <= self.rtol:
            return True
        return bool(self.floor_applies and self.max_rel <= self.rtol + self.floor
                    and self.pinocchio_error is not None and self.pinocchio_error <= self.rtol)

    @property
    def within_floor(self) -> bool:
        """Passed only because the references disagree: above the tolerance, within the floor."""
        return self.passed and self.max_rel > self.rtol

    def as_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("errors", "trace")}
        if not self.floor_applies:  # shown only where pybullet and pinocchio disagree
            del out["floor"]
        if self.pinocchio_error is None:
            del out["pinocchio_error"]
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


def _comparison(robot, backend, reference, quantity, ours, ref, tol, trace=None, floor=None) -> "Comparison":
    """``floor``, against pybullet: ``(disagreement, predicted)``, the references' own
    disagreement and pinocchio's prediction of ``ours`` (an array, or a callable run only
    when ``ours`` misses ``tol``)."""
    rel = relative_errors(ours, ref)
    worst = np.unravel_index(int(np.argmax(rel)), rel.shape)
    diff = np.abs(np.asarray(ours, dtype=float) - np.asarray(ref, dtype=float))
    c = Comparison(robot=robot, backend=backend, reference=reference, quantity=quantity, samples=len(rel),
                   max_abs=float(np.max(np.where(np.isnan(diff), np.inf, diff))), max_rel=float(rel.max()),
                   worst_sample=int(worst[0]), worst_entry=tuple(int(i) for i in worst[1:]), rtol=tol,
                   errors=rel.reshape(len(rel), -1).max(axis=1), trace=trace)
    if floor is not None:
        c.floor, predicted = float(floor[0]), floor[1]
        if c.max_rel > tol:
            c.pinocchio_error = float(relative_errors(ours, predicted() if callable(predicted) else predicted).max())
    return c


@dataclasses.dataclass
class Report:
    """The comparisons of a run; ``notes``: per robot whose references disagree, why
    (:func:`pybullet_differences`; empty: not diagnosed); ``skips``: what the suite names and
    a backend was not asked for (:class:`.plan.Skip`), which fails nothing."""

    suite: Suite
    comparisons: list
    seconds: float
    notes: dict = dataclasses.field(default_factory=dict)
    skips: list = dataclasses.field(default_factory=list)

    def skip_lines(self) -> list:
        """The skips in words, one line per reason (:func:`.plan.skip_lines`)."""
        robots = dict.fromkeys([*(c.robot for c in self.comparisons), *(s.robot for s in self.skips)])
        return plan.skip_lines(self.skips, list(robots))

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    def failures(self) -> list:
        return [c for c in self.comparisons if not c.passed]

    def disagreements(self) -> list:
        """``(robot, quantity, floor, friction)`` where the references disagree beyond the
        tolerance, in report order; ``friction``: the floor of the friction backends'
        experiments (:func:`_floor`).  The backends of a robot share each floor."""
        friction = set(registered_backends(can=("friction",)))
        found = {(c.robot, c.quantity, c.backend in friction and c.quantity in STEPPING): c.floor
                 for c in self.comparisons if c.floor_applies}
        return [(robot, quantity, floor, with_friction) for (robot, quantity, with_friction), floor in found.items()]

    def disagreement_lines(self) -> list:
        """The disagreements in words, and why, one line each."""
        lines = [f"{robot}: reference disagreement: pybullet vs pinocchio {floor:.1e} on {quantity}; judged against "
                 "that floor" if not friction else
                 f"{robot}: reference disagreement with friction: {floor:.1e} on {quantity} (pinocchio and our "
                 "friction law, on pybullet's rigid body vs the model's); judged against that floor"
                 for robot, quantity, floor, friction in self.disagreements()]
        for robot in dict.fromkeys(robot for robot, *_ in self.disagreements()):
            lines += [f"{robot}: why: {note}" for note in self.notes.get(robot, [])] or [
                f"{robot}: why: not diagnosed (no known pybullet alteration of this model)"]
        return lines

    def as_dict(self) -> dict:
        from .._version import __version__

        out = {
            "dyn_plugin_version": __version__,
            "suite": dataclasses.asdict(self.suite),
            "passed": self.passed,
            "seconds": round(self.seconds, 3),
            "results": [c.as_dict() for c in self.comparisons],
            "skipped": [s.as_dict() for s in self.skips],
        }
        if self.disagreements():
            out["reference_disagreement"] = self.disagreement_lines()
        return out


# States per validation task.  Fixed, so that the states and every result are the same
# whether the tasks run serially or on a Dask cluster of any size.
CHUNK = 250


BRISTLE_CHUNK = -2     # the Task.chunk of a robot's dynamic-friction checks


@dataclasses.dataclass(frozen=True)
class Task:
    """One unit of a validation run: ``count`` of ``robot``'s states from ``start`` (chunk
    ``chunk``), or (chunk -1) its trajectories, which start from its first state, or (chunk
    -2) its dynamic-friction checks (:mod:`.bristle_validation`), from the same state."""

    robot: str
    chunk: int
    start: int = 0
    count: int = 0

    @property
    def label(self) -> str:
        if self.chunk == BRISTLE_CHUNK:
            return f"{self.robot} / dynamic friction"
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
        out += [Task(robot, BRISTLE_CHUNK)] if any(q in BRISTLES for q in suite.quantities) else []
    return out


def run(suite: Suite, progress: Optional[Callable[[str], None]] = None, client=None) -> Report:
    """Compare every backend with every reference on every robot of the suite.

    The work is cut into :func:`tasks`; ``client`` (a ``distributed.Client``) runs them on
    a Dask cluster, None in this process: the results are identical.  ``progress(label)``
    is called after each task.
    """
    suite.check()
    start = time.perf_counter()
    work = tasks(suite)
    parts = _run_serially(work, suite, progress) if client is None else _run_on_dask(work, suite, progress, client)
    comparisons = _merge_tasks([found for found, _ in parts])
    report = Report(suite, comparisons, 0.0, skips=list(dict.fromkeys(s for _, skips in parts for s in skips)))
    if not comparisons:     # "0 comparisons, all passed" would pass a suite that checks nothing
        raise InputError(f"the suite compares nothing: backends {', '.join(suite.backends)} against "
                         f"{', '.join(suite.references)} on {', '.join(suite.quantities)} give no comparison ("
                         + "; ".join(report.skip_lines()) + "); choose other quantities, references or backends")
    report.seconds, report.notes = time.perf_counter() - start, _notes(suite, comparisons)
    return report


def _notes(suite: Suite, comparisons: list) -> dict:
    """:func:`pybullet_differences` of each robot whose references disagree."""
    floored = {c.robot for c in comparisons if c.floor_applies}
    with warnings.catch_warnings():  # loaded again: its warnings were shown
        warnings.simplefilter("ignore")
        models = [suite.model(robot) for robot in suite.robots] if floored else []
    return {model.name: pybullet_differences(model) for model in models if model.name in floored}


def _run_serially(work: list, suite: Suite, progress) -> list:
    parts = []
    for task in work:
        parts.append(run_task(task, suite))
        if progress:
            progress(task.label)
    return parts


def _run_on_dask(work: list, suite: Suite, progress, client) -> list:
    from distributed import as_completed

    futures = client.map(run_task, work, suite=suite, pure=False)
    label = {future.key: task.label for future, task in zip(futures, work)}
    for future in as_completed(futures):
        if future.status == "error":
            future.result()  # raises the task's own error (a DynPluginError names robot and backend)
        if progress:
            progress(label[future.key])
    return client.gather(futures)


def run_task(task: Task, suite: Suite) -> tuple:
    """``(comparisons, skips)`` of one task (on a worker, or here); the robot's skips
    (:class:`.plan.Skip`) come with its first chunk of states."""
    if task.chunk == BRISTLE_CHUNK:                  # no references to set up: physical oracles
        from . import bristle_validation

        model = suite.model(task.robot)
        first = chunk_states(model, suite.seed, Task(task.robot, 0, 0, min(CHUNK, suite.samples)))
        return bristle_validation.comparisons(suite, model, suite.backends, first.q[0], first.qd[0]), []
    setup = _setup(suite, task.robot)
    return _comparisons_of(task, suite, setup), setup.skips if task.chunk == 0 else []


def _comparisons_of(task: Task, suite: Suite, setup: "_Setup") -> list:
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
    backends: dict     # name -> (backend, the quantities it is asked for: plan.asked)
    first: States      # the robot's first chunk of states (trajectories start from its first)
    pinocchio: object  # pinocchio, for the floor of the comparisons against pybullet (None without them)
    skips: list        # plan.Skip: what the backends are not asked for, and the robots their factories refuse
    built: dict = dataclasses.field(default_factory=dict)   # what _pinocchio_twin builds, once


_SETUPS: dict = {}   # the last few robots' setups, most recent last (each holds pybullet clients)
KEPT_SETUPS = 4       # a Dask worker gets the robots' tasks interleaved


def _setup(suite: Suite, robot: str) -> _Setup:
    key = (robot, suite.seed, suite.dt, suite.samples, tuple(suite.backends), tuple(suite.references),
           tuple(suite.quantities), suite.floating_base, suite.mimic, tuple(suite.lock.items()))
    setup = _SETUPS.pop(key, None) or _build_setup(suite, robot)
    _SETUPS[key] = setup
    while len(_SETUPS) > KEPT_SETUPS:
        _SETUPS.pop(next(iter(_SETUPS)))
    return setup


def _build_setup(suite: Suite, robot: str) -> _Setup:
    model = suite.model(robot)
    first = chunk_states(model, suite.seed, Task(robot, 0, 0, min(CHUNK, suite.samples)))
    backends, skips = {}, []
    for name in suite.backends:
        backend, refused = _suite_backend(name, model, suite, first)
        if refused is not None:              # a model it cannot take: listed, and the others go on
            skips += plan.refusal(suite, model.name, name, refused)
            continue
        quantities, skipped = plan.asked(suite, model, name, type(backend))
        backends[name], skips = (backend, quantities), skips + skipped
    references = {ref: get_backend(ref, model) for ref in suite.references}
    compared_with_pinocchio = "pybullet" in references or any(q in DERIVATIVES for q in suite.quantities)
    pinocchio = (references.get("pinocchio") or get_backend("pinocchio", model)) if compared_with_pinocchio else None
    return _Setup(model, references, backends, first, pinocchio, skips)


def _suite_backend(name: str, model, suite: Suite, first: States) -> tuple:
    """``(backend, None)``: backend ``name`` for ``model``, with friction that pybullet
    reproduces where it declares ``friction``; or ``(None, error)``, its factory's refusal of
    the model (a DynPluginError).  Any other exception of the factory is a bug: a
    BackendError naming the backend and the robot."""
    try:
        if name not in registered_backends(can=("friction",)):
            return get_backend(name, model), None
        return get_backend(name, model, friction=validation_friction(model, suite.seed, suite.dt, first.q)), None
    except DynPluginError as refusal:
        return None, refusal
    except Exception as error:
        raise BackendError(f"backend {name!r} failed to build for robot {model.name!r}: {type(error).__name__}: "
                           f"{error}") from error


def _pinocchio_twin(setup: _Setup, name: str, pybullets: bool = False):
    """What pinocchio predicts in place of backend ``name``: pinocchio itself, or for a
    friction backend the same friction over pinocchio's rigid body (``rigid="pinocchio"``);
    ``pybullets``: the latter on the rigid body pybullet simulates (:func:`pybullet_model`;
    None where no change of pybullet's is known)."""
    backend = setup.backends[name][0]
    if not type(backend).can("stepping"):
        return setup.pinocchio
    if (name, pybullets) not in setup.built:
        if pybullets and "pybullet_model" not in setup.built:
            setup.built["pybullet_model"] = pybullet_model(setup.model)
        model = setup.built["pybullet_model"] if pybullets else setup.model
        setup.built[name, pybullets] = None if model is None else get_backend(name, model, friction=backend.friction,
                                                                                rigid="pinocchio")
    return setup.built[name, pybullets]


def _floor(setup: _Setup, name: str, rigid: float, tol: float, experiment: Callable) -> float:
    """The references' disagreement on backend ``name``'s experiment: ``rigid`` (pybullet's
    against pinocchio's, rigid body alone), unless the backend has friction and ``rigid``
    exceeds ``tol``.  Its experiment then runs our friction law, which no reference shares:
    the floor is what pybullet's changes to the rigid body change in it,
    ``experiment(twin)`` against ``experiment(twin on pybullet's rigid body)``
    (:func:`_pinocchio_twin`); 0 where those changes are not known (judged at ``tol``)."""
    if rigid <= tol or not type(setup.backends[name][0]).can("stepping"):
        return rigid
    pybullets = _pinocchio_twin(setup, name, pybullets=True)
    if pybullets is None:
        return 0.0
    return float(relative_errors(experiment(_pinocchio_twin(setup, name)), experiment(pybullets)).max())


def _state_floors(suite: Suite, setup: _Setup, states: States, values: dict) -> dict:
    """Per quantity ``(floor, pinocchio's values)``, and the floor of ``step``: pybullet's
    largest error against pinocchio on these states, rigid body alone (``step``: pinocchio's
    q̈ against pybullet's (q̇⁺ − q̇)/dt); {} without pybullet among the references."""
    if setup.pinocchio is None or "pybullet" not in values:
        return {}
    plain = [q for q in suite.quantities if q in QUANTITIES]
    pinocchio = values.get("pinocchio") or _evaluate(setup.model, "pinocchio", setup.pinocchio, states, plain)
    floors = {q: (relative_errors(pinocchio[q], values["pybullet"][q]).max(), pinocchio[q]) for q in plain}
    if "step" in suite.quantities:
        with _named_singular_mass_matrix(setup.model, "pinocchio"):
            predicted, stepped = _one_step(setup.references["pybullet"], setup.pinocchio, states, suite.dt)
        floors["step"] = relative_errors(predicted, stepped).max()
    return floors


def _chunk_comparisons(suite: Suite, setup: _Setup, states: States) -> list:
    model, plain = setup.model, [q for q in suite.quantities if q in QUANTITIES]
    reference_values = {ref: _evaluate(model, ref, be, states, plain) for ref, be in setup.references.items()}
    floors = _state_floors(suite, setup, states, reference_values)
    comparisons = []
    for name, (backend, asked) in setup.backends.items():
        compared = [q for q in asked if q in QUANTITIES]
        ours = _evaluate(model, name, backend, states, compared)
        comparisons += [_comparison(model.name, name, ref, quantity, ours[quantity], values[quantity], suite.rtol,
                                    floor=floors[quantity] if ref == "pybullet" else None)
                        for ref, values in reference_values.items() for quantity in compared]
        if "step" in asked:                          # stepping: against pybullet only
            with _named_singular_mass_matrix(model, name):
                ours, theirs = _one_step(setup.references["pybullet"], backend, states, suite.dt)
            experiment = functools.partial(_step_only, states=states, dt=suite.dt)
            floor = _floor(setup, name, floors["step"], suite.rtol, experiment)
            comparisons.append(_comparison(model.name, name, "pybullet", "step", ours, theirs, suite.rtol,
                                           floor=(floor, functools.partial(experiment, _pinocchio_twin(setup, name)))))
        comparisons += _derivative_comparisons(suite, setup, name, states)
    return comparisons


def _derivative_comparisons(suite: Suite, setup: _Setup, name: str, states: States) -> list:
    """Backend ``name``'s :data:`DERIVATIVES` against pinocchio's (its friction, if any, over
    pinocchio's rigid body: :func:`_pinocchio_twin`), each state's matrices divided by
    max(1, their largest entry) first: M⁻¹ of a robot whose M has a condition number κ
    carries an error ~κ ε relative to its largest entry, which entry-by-entry scaling
    would charge in full to its small entries (PUMA-560: κ ~ 1e5)."""
    backend, asked = setup.backends[name]
    quantities = [q for q in asked if q in DERIVATIVES]      # with pinocchio among the references (plan.asked)
    if not quantities:
        return []
    twin = _pinocchio_twin(setup, name) if type(backend).can("stepping") else setup.references["pinocchio"]
    out = []
    for quantity in quantities:
        with _named_singular_mass_matrix(setup.model, name):
            ours, theirs = DERIVATIVES[quantity][0](backend, states), DERIVATIVES[quantity][0](twin, states)
        scale = np.maximum(1.0, np.abs(theirs).max(axis=(1, 2)))[:, None, None]
        out.append(_comparison(setup.model.name, name, "pinocchio", quantity, ours / scale, theirs / scale,
                               suite.rtol))
    return out


def _torque_law(quantity: str, backend) -> Callable:
    """τ(t, q, q̇) of a trajectory case: zero, or ``backend``'s gravity compensation."""
    if quantity == "traj_zero":
        return lambda t, q, qd: np.zeros(len(qd))
    return lambda t, q, qd: backend.gravity_torques(q)


def _trajectory(backend, q0, qd0, quantity: str, suite: Suite, pybullet_backend) -> np.ndarray:
    """q (T, nq) of ``backend``'s trajectory in pybullet's scheme, a case of :data:`TRAJECTORIES`."""
    return our_trajectory(backend, pybullet_backend, q0, qd0, _torque_law(quantity, backend), suite.duration,
                          suite.dt).q


def _trajectory_comparisons(suite: Suite, setup: _Setup) -> list:
    """Trajectories of every backend against pybullet's, from the robot's first state;
    the floor: pinocchio's semi-implicit Euler trajectory against pybullet's rollout."""
    q0, qd0, pybullet_backend = setup.first.q[0], setup.first.qd[0], setup.references["pybullet"]
    cases, floors = [q for q in TRAJECTORIES if q in suite.quantities], {}
    for quantity in cases:
        with _named_singular_mass_matrix(setup.model, "pinocchio"):
            predicted, theirs = compare_trajectories(setup.pinocchio, pybullet_backend, q0, qd0,
                                                     _torque_law(quantity, setup.pinocchio), suite.duration, suite.dt)
        floors[quantity] = relative_errors(predicted.q, theirs).max()
    comparisons = []
    for name, (backend, asked) in setup.backends.items():
        for quantity in (q for q in cases if q in asked):
            with _named_singular_mass_matrix(setup.model, name):
                ours, theirs = compare_trajectories(backend, pybullet_backend, q0, qd0, _torque_law(quantity, backend),
                                                    suite.duration, suite.dt)
            trace = {"t": ours.t, "ours": ours.q, "pybullet": theirs, "growth": _growth(ours.t, ours.q, theirs)}
            experiment = functools.partial(_trajectory, q0=q0, qd0=qd0, quantity=quantity, suite=suite,
                                           pybullet_backend=pybullet_backend)
            floor = _floor(setup, name, floors[quantity], suite.trajectory_tol, experiment)
            comparisons.append(_comparison(setup.model.name, name, "pybullet", quantity, ours.q, theirs,
                                           suite.trajectory_tol, trace,
                                           floor=(floor, functools.partial(experiment, _pinocchio_twin(setup, name)))))
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
    floors, pinocchio = [p.floor for p in parts if p.floor is not None], [p.pinocchio_error for p in parts
                                                                           if p.pinocchio_error is not None]
    return dataclasses.replace(parts[worst], samples=int(offsets[-1]), max_abs=max(p.max_abs for p in parts),
                               worst_sample=int(offsets[worst]) + parts[worst].worst_sample,
                               errors=np.concatenate([p.errors for p in parts]), floor=max(floors, default=None),
                               pinocchio_error=max(pinocchio, default=None))


def model_to_validate(robot: str, floating_base: bool = False, mimic: bool = False, lock=None):
    """The model of ``robot`` (bundled name or URDF path; ``floating_base``, ``mimic`` and
    ``lock`` as :func:`~dyn_plugin.robots.load_robot`'s); one without moving joints is refused."""
    model = load_robot(robot, floating_base=floating_base, mimic=mimic, lock=lock or None)
    if model.nv == 0:
        raise ModelError(f"{robot}: robot {model.name!r} has no moving joint (only fixed joints) and a fixed base, "
                         "so there is nothing to compare")
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
    from ..simulate import simulate

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


def _growth(t, ours, theirs) -> dict:
    """Largest |Δq| up to a few instants, to show how the difference grows."""
    error = np.abs(ours - theirs).max(axis=1)
    marks = [t[-1] * f for f in (0.1, 0.25, 0.5, 1.0)]
    return {f"{mark:.3g}s": float(error[: int(np.searchsorted(t, mark + 1e-12))].max()) for mark in marks}


def bullet_diagonalize(inertia: np.ndarray, threshold: float = 1e-6, max_steps: int = 30) -> tuple:
    """``(rotation, moments)`` with inertia ≈ rotation diag(moments) rotationᵀ, as pybullet
    computes them: Bullet's Jacobi method (``btMatrix3x3::diagonalize``, LinearMath/
    btMatrix3x3.h), with the arguments of ``BulletURDFImporter::getMassAndInertia2``
    (threshold 1e-6, 30 steps).  It stops one rotation after every off-diagonal entry is
    below ``threshold`` × the trace, and pybullet keeps only the diagonal: what remains
    off it is dropped."""
    m, rotation, eps = np.array(inertia, dtype=float), np.eye(3), np.finfo(float).eps
    step = max_steps
    while step > 0:
        p, q, r = max(((0, 1, 2), (0, 2, 1), (1, 2, 0)), key=lambda pqr: abs(m[pqr[0], pqr[1]]))  # first of the largest
        largest, t = abs(m[p, q]), threshold * np.abs(np.diag(m)).sum()
        if largest <= t:
            if largest <= eps * t:
                break
            step = 1
        mpq = m[p, q]
        theta = (m[q, q] - m[p, p]) / (2 * mpq)
        theta2 = theta * theta
        if theta2 * theta2 < 10 / eps:
            t = 1 / (theta + np.sqrt(1 + theta2)) if theta >= 0 else 1 / (theta - np.sqrt(1 + theta2))
            cos = 1 / np.sqrt(1 + t * t)
        else:  # nearly diagonal
            t = 1 / (theta * (2 + 0.5 / theta2))
            cos = 1 - 0.5 * t * t
        sin = cos * t
        m[p, q] = m[q, p] = 0.0
        m[p, p], m[q, q] = m[p, p] - t * mpq, m[q, q] + t * mpq
        m[r, p], m[r, q] = cos * m[r, p] - sin * m[r, q], cos * m[r, q] + sin * m[r, p]
        m[p, r], m[q, r] = m[r, p], m[r, q]
        column_p, column_q = rotation[:, p].copy(), rotation[:, q].copy()
        rotation[:, p], rotation[:, q] = cos * column_p - sin * column_q, cos * column_q + sin * column_p
        step -= 1
    return rotation, np.diag(m).copy()


def pybullet_dropped_inertia(model, relative: float = 1e-12) -> dict:
    """Moving URDF link -> ``(dropped, largest)``: what pybullet drops off the diagonal of
    the link's ``<inertia>`` (kg·m², the largest entry of the remainder of
    :func:`bullet_diagonalize`) and the inertia's largest entry, where the first exceeds
    ``relative`` × the second (round-off is 1e-16); largest first.  An inertia with one
    off-diagonal term is diagonalised exactly (one rotation); with more, within 1e-6 of its
    trace only (Panda's panda_link1: 5.8e-9 of 0.71 kg·m²)."""
    from ..urdf import _parse_xml, _read_links, urdf_text

    root, _ = _parse_xml(urdf_text(model), model.name)
    fixed = {j.find("child").get("link"): j.find("parent").get("link") for j in root.findall("joint")
             if j.get("type") == "fixed" and j.find("child") is not None and j.find("parent") is not None}
    found = {}
    for link, inertial in _read_links(root, model.name).items():
        top = link
        while top in fixed:
            top = fixed[top]
        if inertial is None or (top == model.base_link and not model.floating_base):  # a fixed base moves nothing
            continue
        rotation, moments = bullet_diagonalize(inertial.inertia)
        dropped = float(np.abs(rotation @ np.diag(moments) @ rotation.T - inertial.inertia).max())
        if dropped > relative * np.abs(inertial.inertia).max():
            found[link] = (dropped, float(np.abs(inertial.inertia).max()))
    return dict(sorted(found.items(), key=lambda item: -item[1][0]))


def pybullet_differences(model) -> list:
    """Why pybullet's dynamics of ``model`` differ from pinocchio's, one sentence each:
    ``model.pybullet_alterations()`` and :func:`pybullet_dropped_inertia`."""
    dropped = pybullet_dropped_inertia(model)
    return list(model.pybullet_alterations()) + ([
        "pybullet diagonalises a link inertia with off-diagonal terms (Bullet's Jacobi method, stopping at 1e-6 of "
        "the trace) and drops what is left off the diagonal: " + ", ".join(
            f"link {link!r} {d:.1e} kg·m² (entries up to {top:.2g})" for link, (d, top) in dropped.items())]
        if dropped else [])


def pybullet_model(model):
    """``model`` with the link inertias pybullet simulates, each ``<inertia>`` replaced by
    rotation diag(moments) rotationᵀ of :func:`bullet_diagonalize`; None when that changes
    none.  (Panda, 250 states: pinocchio's q̈ on this model is pybullet's to 3e-13, on the
    URDF's to 6e-8.)"""
    from lxml import etree

    from ..urdf import _parse_xml, load_urdf_string, urdf_text

    root, _ = _parse_xml(urdf_text(model), model.name)
    keys, changed = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), False
    for element in root.iterfind("link/inertial/inertia"):
        xx, xy, xz, yy, yz, zz = (float(element.get(key)) for key in keys)
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        rotation, moments = bullet_diagonalize(inertia)
        simulated = rotation @ np.diag(moments) @ rotation.T
        if not np.array_equal(simulated, inertia):
            changed = True
            for key, (i, j) in zip(keys, ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
                element.set(key, repr(float(simulated[i, j])))
    if not changed:
        return None
    with warnings.catch_warnings():  # the model's own warnings were shown
        warnings.simplefilter("ignore")
        return load_urdf_string(etree.tostring(root, encoding="unicode"), gravity=model.gravity, source=model.name,
                                floating_base=model.floating_base, mimic=bool(model.mimic))
