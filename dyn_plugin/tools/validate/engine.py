"""The engine behind ``dyn-plugin validate``: sample states, compare backends with the
references (:mod:`.compare`), and report the largest errors.

A run is cut into :class:`Task` s (a robot's chunks of states, its trajectories, its
dynamic-friction checks), each run here or on a Dask worker with the same results; what a
robot's tasks share (its model, backends, references and the plan of what each backend is
asked, :mod:`.plan`) is built once per process.  The suite is :mod:`.suite`'s, pybullet's
stepping :mod:`.trajectories`', the dynamic-friction checks :mod:`.bristles`'; why pybullet
disagrees with pinocchio is :mod:`dyn_plugin.backends.pybullet_diagnostics`'.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import time
import warnings
from typing import Callable, Optional, Sequence

import numpy as np

from ...backends.pybullet_diagnostics import pybullet_differences, pybullet_model
from ...backends.registry import backends as registered_backends
from ...backends.registry import get_backend
from ...errors import BackendError, DynPluginError, InputError, ModelError
from ...sampling import States, random_states
from . import bristles, plan
from .compare import Report, comparison, merge_tasks, relative_errors
from .plan import BRISTLES, DERIVATIVES, QUANTITIES, TRAJECTORIES
from .suite import Suite
from .trajectories import compare_trajectories, error_growth, one_step, step_only, torque_law, trajectory, \
    validation_friction

__all__ = ["BRISTLE_CHUNK", "CHUNK", "KEPT_SETUPS", "Task", "chunk_states", "run", "run_task", "tasks"]


# States per validation task.  Fixed, so that the states and every result are the same
# whether the tasks run serially or on a Dask cluster of any size.
CHUNK = 250


BRISTLE_CHUNK = -2     # the Task.chunk of a robot's dynamic-friction checks


@dataclasses.dataclass(frozen=True)
class Task:
    """One unit of a validation run: ``count`` of ``robot``'s states from ``start`` (chunk
    ``chunk``), or (chunk -1) its trajectories, which start from its first state, or (chunk
    -2) its dynamic-friction checks (:mod:`.bristles`), from the same state."""

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
    comparisons = merge_tasks([found for found, _ in parts])
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
        model = suite.model(task.robot)
        first = chunk_states(model, suite.seed, Task(task.robot, 0, 0, min(CHUNK, suite.samples)))
        return bristles.comparisons(suite, model, suite.backends, first.q[0], first.qd[0]), []
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
    references, skips = {}, []
    for name in suite.references:            # a reference that cannot take the model: the others go on
        reference, refused = _built(name, model, get_backend, name, model)
        if refused is None:
            references[name] = reference
        else:
            skips += plan.refusal(suite, model.name, name, refused)
    backends = {}
    for name in suite.backends:
        backend, refused = _suite_backend(name, model, suite, first)
        if refused is not None:              # a model it cannot take: listed, and the others go on
            skips += plan.refusal(suite, model.name, name, refused)
            continue
        quantities, skipped = plan.asked(suite, model, name, type(backend), references=tuple(references))
        backends[name], skips = (backend, quantities), skips + skipped
    compared_with_pinocchio = "pybullet" in references or any(q in DERIVATIVES for q in suite.quantities)
    pinocchio = (references.get("pinocchio") or get_backend("pinocchio", model)) if compared_with_pinocchio else None
    return _Setup(model, references, backends, first, pinocchio, skips)


def _built(name: str, model, factory, *args, **options) -> tuple:
    """``(factory(*args, **options), None)``, or ``(None, error)`` for the factory's refusal of
    the model (a DynPluginError).  Any other exception is a bug: a BackendError naming
    backend ``name`` and the robot."""
    try:
        return factory(*args, **options), None
    except DynPluginError as refusal:
        return None, refusal
    except Exception as error:
        raise BackendError(f"backend {name!r} failed to build for robot {model.name!r}: {type(error).__name__}: "
                           f"{error}") from error


def _suite_backend(name: str, model, suite: Suite, first: States) -> tuple:
    """``(backend, None)``: backend ``name`` for ``model``, with friction that pybullet
    reproduces where it declares ``friction``; or ``(None, error)``, its factory's refusal of
    the model (:func:`_built`)."""
    if name not in registered_backends(can=("friction",)):
        return _built(name, model, get_backend, name, model)
    return _built(name, model, lambda: get_backend(name, model, friction=validation_friction(model, suite.seed,
                                                                                              suite.dt, first.q)))


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
            predicted, stepped = one_step(setup.references["pybullet"], setup.pinocchio, states, suite.dt)
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
        comparisons += [comparison(model.name, name, ref, quantity, ours[quantity], values[quantity], suite.rtol,
                                   floor=floors[quantity] if ref == "pybullet" else None)
                        for ref, values in reference_values.items() for quantity in compared]
        if "step" in asked:                          # stepping: against pybullet only
            with _named_singular_mass_matrix(model, name):
                ours, theirs = one_step(setup.references["pybullet"], backend, states, suite.dt)
            experiment = functools.partial(step_only, states=states, dt=suite.dt)
            floor = _floor(setup, name, floors["step"], suite.rtol, experiment)
            comparisons.append(comparison(model.name, name, "pybullet", "step", ours, theirs, suite.rtol,
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
        out.append(comparison(setup.model.name, name, "pinocchio", quantity, ours / scale, theirs / scale,
                              suite.rtol))
    return out


def _trajectory_comparisons(suite: Suite, setup: _Setup) -> list:
    """Trajectories of every backend against pybullet's, from the robot's first state;
    the floor: pinocchio's semi-implicit Euler trajectory against pybullet's rollout.  None
    when pybullet refused the robot (:func:`_build_setup` lists the skip)."""
    if "pybullet" not in setup.references:
        return []
    q0, qd0, pybullet_backend = setup.first.q[0], setup.first.qd[0], setup.references["pybullet"]
    cases, floors = [q for q in TRAJECTORIES if q in suite.quantities], {}
    for quantity in cases:
        with _named_singular_mass_matrix(setup.model, "pinocchio"):
            predicted, theirs = compare_trajectories(setup.pinocchio, pybullet_backend, q0, qd0,
                                                     torque_law(quantity, setup.pinocchio), suite.duration, suite.dt)
        floors[quantity] = relative_errors(predicted.q, theirs).max()
    comparisons = []
    for name, (backend, asked) in setup.backends.items():
        for quantity in (q for q in cases if q in asked):
            with _named_singular_mass_matrix(setup.model, name):
                ours, theirs = compare_trajectories(backend, pybullet_backend, q0, qd0, torque_law(quantity, backend),
                                                    suite.duration, suite.dt)
            trace = {"t": ours.t, "ours": ours.q, "pybullet": theirs, "growth": error_growth(ours.t, ours.q, theirs)}
            experiment = functools.partial(trajectory, q0=q0, qd0=qd0, quantity=quantity, suite=suite,
                                           pybullet_backend=pybullet_backend)
            floor = _floor(setup, name, floors[quantity], suite.trajectory_tol, experiment)
            comparisons.append(comparison(setup.model.name, name, "pybullet", quantity, ours.q, theirs,
                                          suite.trajectory_tol, trace,
                                          floor=(floor, functools.partial(experiment, _pinocchio_twin(setup, name)))))
    return comparisons


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
