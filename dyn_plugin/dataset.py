"""Datasets of robot dynamics, chunked, reproducible and resumable, in a Zarr v3 store.

``dp.dataset("puma560", 10**6, out="puma.zarr")`` (this module is callable: ``dp.dataset``
is :func:`dataset`) samples states, computes their dynamics and stores them:

* **states**: q uniform within the joint limits, q̇ in ±2 rad/s, q̈ in ±5 rad/s²
  (:func:`dyn_plugin.sampling.uniform_states`); or with ``trajectories=True`` along
  rest-to-rest quintics between random configurations, 100 samples each, timed so that
  they stay within the same speed and acceleration (:func:`dyn_plugin.sampling.trajectory_states`);
  trajectories never cross a chunk boundary.
* **seeding**: chunk c draws from ``np.random.SeedSequence([seed, robot_id, c])``, robot_id
  being the first 64 bits of the model digest.  Every chunk depends on nothing else, so
  the data are the same bit for bit serially (``client=None``) and on any number of
  workers, in any order, and after any number of interruptions.
* **store** (a Zarr v3 group at ``out``): arrays ``q`` (N, nq) and ``qd qdd tau`` (N, nv)
  float64 (those in ``quantities``; nq = nv = n for one-dof joints on a fixed base, see
  ``RobotModel.nq``), ``tau_friction`` (N, nv) (friction backends: bearing + transmission +
  velocity friction, part of tau), ``M`` (N, nv, nv) with ``mass_matrix=True``, and with
  trajectories ``t`` (N,) s since the trajectory's start and ``trajectory`` (N,) int64
  (chunk c holds trajectories c·⌈chunk/100⌉, ...), all chunked by ``chunk`` states; ``done``
  (chunks,) bool, one Zarr chunk per element, set once the chunk's data are written.
  Attributes: robot, model/URDF/backend digests, backend, friction, seed, chunk,
  states, joint names, the names of q's and v's entries, gravity, library version, ``complete``.
* **resuming**: a rerun computes only chunks whose ``done`` is unset.  A chunk computed
  twice (a retried task) writes the same bytes.  Chunks never written hold zeros, not
  NaN: read ``done`` (or use :func:`read_dataset`, which refuses an incomplete store).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import os
import shutil
import sys
import time
import types
import uuid
from pathlib import Path
from typing import Callable, Optional, Union

import numpy as np

from .cluster import BackendSpec, backend_of, digest_of, interrupts_held, model_digest, require
from .errors import DynPluginError, InputError, argument
from .model import RobotModel
from .sampling import TRAJECTORY_SAMPLES, trajectory_states, uniform_states

FORMAT = "dyn_plugin dataset 1"
QUANTITIES = ("q", "qd", "qdd", "tau")
# what a store must agree on to be resumed rather than refused
IDENTITY = ("robot", "model_digest", "backend", "friction_digest", "seed", "states", "chunk", "trajectories",
            "quantities", "mass_matrix")
TASK_RETRIES = 3
CHUNK = 10_000   # states per chunk unless told (a 6-joint arm's q, qd, qdd, tau: 1.9 MB per chunk)


@dataclasses.dataclass(frozen=True)
class DatasetSummary:
    """What one call did: chunks computed and skipped (done before), seconds, states/s
    (computed states over the seconds of the call)."""

    path: str
    states: int
    chunks: int
    computed: int
    skipped: int
    seconds: float
    states_per_second: float

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """What a chunk task needs besides the backend spec (small: sent with every task)."""

    out: str
    states: int
    chunk: int
    seed: int
    robot_id: int
    trajectories: bool
    quantities: tuple
    mass_matrix: bool
    friction: bool

    @property
    def chunks(self) -> int:
        return -(-self.states // self.chunk)

    def bounds(self, c: int) -> tuple:
        return c * self.chunk, min(self.states, (c + 1) * self.chunk)

    def arrays(self, nq: int, nv: int) -> dict:
        """{name: (shape, chunks, dtype, dimension names)} of every array of the store, for
        a model of nq positions and nv velocities (``RobotModel.nq``, ``nv``: a floating
        base, joints of several degrees of freedom and mimic joints make them differ from n)."""
        rows, per_state = (self.states,), (self.chunk,)
        out = {k: (rows + (nq if k == "q" else nv,), per_state + (nq if k == "q" else nv,), "float64",
                   ("state", "coordinate" if k == "q" else "velocity")) for k in self.quantities}
        if self.friction:
            out["tau_friction"] = (rows + (nv,), per_state + (nv,), "float64", ("state", "velocity"))
        if self.mass_matrix:
            out["M"] = (rows + (nv, nv), per_state + (nv, nv), "float64", ("state", "row", "column"))
        if self.trajectories:
            out["t"] = (rows, per_state, "float64", ("state",))
            out["trajectory"] = (rows, per_state, "int64", ("state",))
        out["done"] = ((self.chunks,), (1,), "bool", ("chunk",))
        return out


# -- the one public function ------------------------------------------------------------------


def dataset(robot, states, *, out, backend: str = "newton_euler", friction=None, chunk: Optional[int] = None,
            seed: int = 0, trajectories: bool = False, quantities=QUANTITIES, mass_matrix: bool = False,
            client=None, overwrite: bool = False, progress: Union[bool, Callable] = True) -> DatasetSummary:
    """Sample ``states`` states of ``robot``, compute their dynamics, store them at ``out``.

    robot : a bundled robot's name, a URDF path or a RobotModel
    states : how many states (N > 0); chunk : states per chunk and task (0 < chunk <= N;
        default: :data:`CHUNK`, or N when N is smaller)
    out : the Zarr v3 store's directory (shared by the workers when they run elsewhere)
    backend : its name; friction : a FrictionModel, a data file, ``"urdf"`` or ``"none"``
        for a friction backend (``newton_euler_friction``...), which then also stores
        ``tau_friction``; None: the backend's default
    seed : int >= 0; trajectories : states along quintics instead of independent ones
    quantities : which of q, qd, qdd, tau to store; mass_matrix : also store M (N, n, n)
    client : a ``distributed.Client`` (:func:`dyn_plugin.cluster.connect`), or None to run
        in this process (the same chunk functions, the same data)
    overwrite : start afresh, replacing the dataset at ``out``; without it a dataset made
        with the same settings is resumed and one made with others refused (a directory
        that is not a dyn_plugin dataset is never replaced)
    progress : a progress bar on a terminal, one line per tenth of the chunks otherwise
        (stderr); False for none; or ``callback(done, total)`` after each chunk

    Returns a :class:`DatasetSummary`.  See the module docstring for the store's layout.
    """
    require("zarr")
    _check_client(client)
    if not isinstance(out, (str, os.PathLike)):
        raise InputError(f"{argument('out')} must be a directory path for the Zarr store, got {out!r}")
    model = _model(robot)
    chunk = min(CHUNK, _count("states", states)) if chunk is None else chunk
    _check_arguments(states, chunk, seed, quantities)
    spec, be = _backend(backend, model, friction)
    with_friction = type(be).can("friction")
    plan = _Plan(str(Path(out).resolve()), int(states), int(chunk), int(seed), int(model_digest(model)[:16], 16),
                 bool(trajectories), tuple(quantities), bool(mass_matrix), with_friction and "tau" in quantities)
    with interrupts_held():    # a Zarr call cut short leaves its asyncio tasks pending (and a store half made)
        group = _open_store(Path(out), _attributes(model, spec, be, plan), plan, (model.nq, model.nv), overwrite)
        pending = [int(c) for c in np.flatnonzero(~group["done"][:])]
    start = time.perf_counter()
    with _progress(progress, len(pending), plan.chunk) as report:
        if client is None:
            for c in pending:
                _run_chunk(c, spec, plan)
                report(c)
        else:
            _run_distributed(client, pending, spec, plan, report)
    seconds = time.perf_counter() - start
    with interrupts_held():
        _finish(group, plan)
    computed = sum(last - first for first, last in map(plan.bounds, pending))
    return DatasetSummary(plan.out, plan.states, plan.chunks, len(pending), plan.chunks - len(pending), seconds,
                          computed / seconds if computed else 0.0)


def read_dataset(out) -> dict:
    """{name: numpy array} of every array of a complete store (loaded into memory), plus
    ``"attributes"`` (a dict);
    :class:`InputError` if the store is not one, or if chunks are missing (naming them)."""
    require("zarr")
    import zarr

    path = Path(out)
    if not (path / "zarr.json").is_file():
        raise InputError(f"{str(path)!r} is not a Zarr store")
    group = zarr.open_group(str(path), mode="r")
    attributes = dict(group.attrs)
    if attributes.get("format") != FORMAT:
        raise InputError(f"{str(path)!r} is not a dyn_plugin dataset")
    missing = np.flatnonzero(~group["done"][:])
    if len(missing):
        raise InputError(f"dataset {str(path)!r} is incomplete: {len(missing)} of {attributes['chunks']} chunks "
                         f"missing (first: {missing[:5].tolist()}); rerun dataset() with the same arguments")
    arrays = {name: group[name][...] for name in attributes["arrays"] if name != "done"}
    return {**arrays, "attributes": attributes}


# -- arguments ---------------------------------------------------------------------------


def _model(robot) -> RobotModel:
    if isinstance(robot, RobotModel):
        return robot
    if not isinstance(robot, (str, os.PathLike)):
        raise InputError(f"robot must be a bundled robot's name, a URDF path or a RobotModel, got {robot!r}")
    from .robots import load_robot

    return load_robot(robot)


def _count(name: str, value) -> int:
    """``value`` as a positive whole number (1e6 accepted), or an InputError naming ``name``."""
    whole = isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and
                                                     np.isfinite(value) and float(value).is_integer())
    if isinstance(value, bool) or not whole or value <= 0:
        raise InputError(f"{argument(name)} must be a positive whole number, got {value!r}")
    return int(value)


def _check_client(client) -> None:
    if client is None:
        return
    require("distributed")
    from distributed import Client

    if not isinstance(client, Client):
        raise InputError(f"client must be a distributed.Client (dyn_plugin.cluster.connect()) or None, "
                         f"got {type(client).__name__}")


def _check_arguments(states, chunk, seed, quantities) -> None:
    states, chunk = _count("states", states), _count("chunk", chunk)
    if chunk > states:
        raise InputError(f"{argument('chunk')} ({chunk} states) must not exceed {argument('states')} ({states})")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"{argument('seed')} must be a non-negative integer, got {seed!r}")
    if isinstance(quantities, str) or not quantities or set(quantities) - set(QUANTITIES) \
            or len(set(quantities)) != len(quantities):
        raise InputError(f"quantities must be distinct names among {', '.join(QUANTITIES)}, got {quantities!r}")


def _backend(name: str, model: RobotModel, friction) -> tuple:
    """(spec, backend), built here first so that errors surface before any task runs and
    generated code is cached on disk before the workers read it.  A friction backend's
    spec carries its resolved FrictionModel (workers need no data file)."""
    from .backends.registry import backends
    from .friction.parameters import resolve_friction

    if name in backends(can=("friction",)):
        friction = resolve_friction(model, friction)
    elif friction is not None:
        label = getattr(friction, "name", friction)
        raise InputError(f"backend {name!r} has no friction model; for {argument('friction', label)} choose "
                         f"{argument('backend')} newton_euler_friction or lagrange_euler_friction")
    spec = BackendSpec.create(name, model, **({} if friction is None else {"friction": friction}))
    return spec, backend_of(spec)


# -- the store --------------------------------------------------------------------------------


def _attributes(model, spec: BackendSpec, be, plan: _Plan) -> dict:
    from ._version import __version__

    friction = be.friction if type(be).can("friction") else None
    urdf = model.source_urdf
    return {
        "format": FORMAT, "robot": model.name, "model_digest": model_digest(model),
        "urdf_digest": hashlib.sha256(urdf.encode("utf-8")).hexdigest() if urdf else None,
        "backend": spec.name, "backend_digest": spec.digest,
        "friction": None if friction is None else {"name": friction.name, "source": friction.source},
        "friction_digest": None if friction is None else digest_of(friction),
        "seed": plan.seed, "states": plan.states, "chunk": plan.chunk, "chunks": plan.chunks,
        "trajectories": plan.trajectories,
        "trajectory_samples": TRAJECTORY_SAMPLES if plan.trajectories else None,
        "quantities": list(plan.quantities), "mass_matrix": plan.mass_matrix,
        "arrays": list(plan.arrays(model.nq, model.nv)), "joint_names": list(model.joint_names),
        "coordinate_names": list(model.configuration_names), "velocity_names": list(model.velocity_names),
        "gravity": [float(g) for g in model.gravity], "robot_id": str(plan.robot_id),
        "seeding": "chunk c: numpy.random.default_rng(numpy.random.SeedSequence([seed, int(robot_id), c]))",
        "units": "SI: rad, m, s, N·m, N, kg·m²", "library_version": __version__, "complete": False,
    }


def _open_store(path: Path, attributes: dict, plan: _Plan, sizes: tuple, overwrite: bool):
    """The store's group, created, resumed (same identity) or replaced (``overwrite``)."""
    import zarr

    if path.exists() and not path.is_dir():
        raise InputError(f"{argument('out')} {str(path)!r} exists and is not a directory")
    if path.is_dir() and any(path.iterdir()):
        old = _existing_attributes(path)
        differ = [k for k in IDENTITY if old.get(k) != _jsonable(attributes[k])]
        if not differ and not overwrite:
            group = zarr.open_group(str(path), mode="r+")
            _check_layout(group, plan, sizes, path)
            return group
        if differ and not overwrite:
            what = "; ".join(f"{k}: {old.get(k)!r} in the store, {attributes[k]!r} asked" for k in differ)
            raise InputError(f"the dataset at {str(path)!r} was made with other settings ({what}); pass "
                             f"{argument('overwrite', True)} to replace it, or choose another {argument('out')}")
        shutil.rmtree(path)
    group = zarr.open_group(str(path), mode="w", zarr_format=3, attributes=attributes)
    for name, (shape, chunks, dtype, dims) in plan.arrays(*sizes).items():
        group.create_array(name, shape=shape, chunks=chunks, dtype=dtype, fill_value=False if dtype == "bool" else 0,
                           dimension_names=dims)
    return group


def _existing_attributes(path: Path) -> dict:
    """The attributes of the dyn_plugin dataset at ``path``; InputError for anything else
    (never replaced, even with overwrite: it may be someone's data)."""
    import zarr

    refuse = f"{argument('out')} {str(path)!r} is a non-empty directory that is not a dyn_plugin dataset; it is left alone"
    if not (path / "zarr.json").is_file():
        raise InputError(refuse)
    try:
        attributes = dict(zarr.open_group(str(path), mode="r").attrs)
    except Exception:            # noqa: BLE001 - any unreadable store is refused the same way
        raise InputError(refuse) from None
    if attributes.get("format") != FORMAT:
        raise InputError(refuse)
    return attributes


def _jsonable(value):
    return list(value) if isinstance(value, tuple) else value


def _check_layout(group, plan: _Plan, sizes: tuple, path: Path) -> None:
    for name, (shape, chunks, _, _) in plan.arrays(*sizes).items():
        array = group.get(name)
        if array is None or tuple(array.shape) != shape or tuple(array.chunks) != chunks:
            raise InputError(f"the dataset at {str(path)!r} is damaged (array {name!r} missing or reshaped); pass "
                             f"{argument('overwrite', True)} to rebuild it")


def _finish(group, plan: _Plan) -> None:
    missing = np.flatnonzero(~group["done"][:])
    if len(missing):
        raise DynPluginError(f"dataset {plan.out!r}: chunks {missing[:5].tolist()} are still missing after the run; "
                             "rerun to complete it")
    group.attrs["complete"] = True


# -- one chunk: the same function serially and on workers --------------------------------------


def _chunk_data(c: int, spec: BackendSpec, plan: _Plan) -> dict:
    """{array name: values} of chunk ``c``, from its own generator."""
    from .arrays import check_finite

    start, stop = plan.bounds(c)
    rng = np.random.default_rng(np.random.SeedSequence([plan.seed, plan.robot_id, c]))
    model = spec.model
    data = {}
    if plan.trajectories:
        q, qd, qdd, data["t"], index = trajectory_states(model, stop - start, rng)
        data["trajectory"] = index + c * -(-plan.chunk // TRAJECTORY_SAMPLES)
    else:
        q, qd, qdd = uniform_states(model, stop - start, rng)
    data.update(q=q, qd=qd, qdd=qdd)
    be = backend_of(spec)
    if "tau" in plan.quantities:
        data["tau"] = be.inverse_dynamics(q, qd, qdd)
    if plan.friction:
        friction = be.inverse_dynamics_breakdown(q, qd, qdd).friction
        data["tau_friction"] = check_finite("tau_friction", friction, model, False, q=q, qd=qd, qdd=qdd)
    if plan.mass_matrix:
        data["M"] = be.mass_matrix(q)
    return {k: v for k, v in data.items() if k not in ("q", "qd", "qdd") or k in plan.quantities}


def _run_chunk(c: int, spec: BackendSpec, plan: _Plan) -> int:
    """Compute chunk ``c`` and write it, then its ``done`` marker; returns its state count.
    Idempotent: the same chunk always writes the same bytes."""
    import zarr

    data = _chunk_data(c, spec, plan)
    start, stop = plan.bounds(c)
    with interrupts_held():    # in this process's main thread: Ctrl-C once the chunk is written
        group = zarr.open_group(plan.out, mode="r+")
        for name, values in data.items():
            if values.shape[1:] != group[name].shape[1:]:     # zarr would write what fits, silently
                raise DynPluginError(f"dataset {plan.out!r}: {name} of chunk {c} has shape {values.shape}, the "
                                     f"store's rows {group[name].shape[1:]}")
            group[name][start:stop] = values
        group["done"][c] = True
    return stop - start


def _identity(value):
    return value


def _run_distributed(client, pending: list, spec: BackendSpec, plan: _Plan, report) -> None:
    """The chunks as tasks (retried on errors; a killed worker's tasks are rescheduled)."""
    from distributed import as_completed

    if not pending:
        return
    # the spec as one task: fetched once per worker, recomputed if the worker holding it dies
    shared = client.submit(_identity, spec, key=f"dyn-plugin-spec-{spec.digest[:16]}-{uuid.uuid4().hex[:8]}")
    run = uuid.uuid4().hex[:12]
    futures = client.map(_run_chunk, pending, spec=shared, plan=plan, retries=TASK_RETRIES,
                         key=[f"dyn-plugin-chunk-{run}-{c}" for c in pending])
    chunk_of, finished = {f.key: c for f, c in zip(futures, pending)}, set()
    try:
        for future in as_completed(futures):
            future.result()                    # raises the chunk's error, as raised on the worker
            finished.add(future.key)
            report(chunk_of[future.key])
    finally:
        client.cancel([f for f in futures if f.key not in finished] + [shared])


# -- progress -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _progress(progress, total: int, chunk: int):
    """``report(chunk index)`` after each chunk: a rich bar on a terminal, else a line on
    stderr per tenth of the chunks (as the validation CLI), or the caller's callback."""
    if callable(progress):
        done = []
        yield lambda c: (done.append(c), progress(len(done), total))
        return
    if not progress or total == 0:
        yield lambda c: None
        return
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True, emoji=False)
    if err.is_terminal:
        with Progress(console=err, transient=True) as bar:
            task = bar.add_task("dataset", total=total)
            yield lambda c: bar.update(task, advance=1)
        return
    start, done, every = time.perf_counter(), [], max(1, total // 10)

    def report(c: int) -> None:
        done.append(c)
        if len(done) % every == 0 or len(done) == total:
            seconds = time.perf_counter() - start
            print(f"dataset: {len(done)}/{total} chunks done ({len(done) * chunk / max(seconds, 1e-9):.3g} states/s, "
                  f"{seconds:.0f} s)", file=sys.stderr, flush=True)
    yield report


# ``dp.dataset(...)``: the package's lazy attribute is this module, which calls dataset().
class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return dataset(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
__signature__ = inspect.signature(dataset)
