"""Scale out on Dask: a cluster in one call, and the dynamics over dask arrays.

>>> import dyn_plugin as dp, dyn_plugin.cluster as dpc
>>> client = dpc.connect()                          # a LocalCluster: one process per core
>>> be = dp.get_backend("newton_euler", dp.load_robot("puma560"))
>>> tau = dpc.inverse_dynamics(be, Q, QD, QDD)      # lazy (N, nv) dask array; Q... dask or numpy
>>> tau.compute()                                   # equal bit for bit to be.inverse_dynamics

Workers never receive a backend object (compiled kernels do not travel): they receive a
:class:`BackendSpec` — the backend's name, the model and the factory options (e.g. the
friction model) — once, as one node of the graph, and build the backend from it once per
process (:func:`backend_of`, a cache keyed by the spec's digest).  Generated code
(``symbolic*`` backends) is read from its on-disk cache by that one build.

Requires the ``[dask]`` extra (``pip install "dyn_plugin[dask]"``); ``import dyn_plugin``
never imports dask, and this module imports it only when a function needs it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import logging
import os
import pickle
import signal
import socket
import threading
from typing import Callable, Optional

import numpy as np

from .arrays import real_number
from .errors import BackendError, ClusterError, DynPluginError, InputError
from .model import RobotModel

__all__ = ["BackendSpec", "ClusterError", "backend_of", "bias_forces", "cache_info", "close", "connect",
           "forward_dynamics", "gravity_torques", "interrupts_held", "inverse_dynamics", "mass_matrix", "model_digest"]

DASHBOARD_PORT = 8787


def require(*modules: str) -> None:
    """Import ``modules`` or raise an ImportError saying how to install the [dask] extra."""
    for module in modules:
        try:
            __import__(module)
        except ImportError as exc:
            raise ImportError(f"dyn_plugin's Dask features need {module!r}, which is not installed ({exc}); "
                              "install them with: pip install 'dyn_plugin[dask]'") from None


# -- digests -----------------------------------------------------------------------------


def _feed(h, value) -> None:
    """Add ``value`` to hash ``h`` canonically: arrays by dtype, shape and bytes; dataclasses
    field by field; containers item by item; anything else by its pickle."""
    if isinstance(value, np.ndarray):
        h.update(f"array {value.dtype.str} {value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(f"dataclass {type(value).__module__}.{type(value).__qualname__}".encode())
        for field in dataclasses.fields(value):
            h.update(field.name.encode())
            _feed(h, getattr(value, field.name))
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__} {len(value)}".encode())
        for item in value:
            _feed(h, item)
    elif isinstance(value, dict):
        h.update(f"dict {len(value)}".encode())
        for key in sorted(value, key=repr):
            _feed(h, key)
            _feed(h, value[key])
    elif value is None or isinstance(value, (bool, int, float, str, bytes, np.generic)):
        h.update(f"{type(value).__name__} {value!r}".encode("utf-8", "surrogatepass"))
    else:
        h.update(pickle.dumps(value, protocol=4))
    h.update(b"\0")


def digest_of(*values) -> str:
    """SHA-256 (hex) of ``values``, the same in every process and on every run."""
    h = hashlib.sha256()
    for value in values:
        _feed(h, value)
    return h.hexdigest()


_NOT_PHYSICS = ("source_urdf", "source_path")


def model_digest(model: RobotModel) -> str:
    """SHA-256 (hex) of everything in ``model`` but the text and path it was read from:
    names, tree, inertias, limits, URDF <dynamics> and gravity.  Two models with the same
    digest give the same dynamics and the same sampled states."""
    return digest_of(*((f.name, getattr(model, f.name)) for f in dataclasses.fields(model)
                       if f.name not in _NOT_PHYSICS))


# -- what the workers receive ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class BackendSpec:
    """What a process needs to build a backend: a small, picklable recipe.

    name : the registered backend name (``dp.list_backends()``)
    model : the RobotModel, gravity included
    options : sorted ((keyword, value), ...) for the factory, e.g. (("friction", FrictionModel),)
    factory : the factory itself when the name was registered at run time in this process
        (worker processes would not know it); None for built-in and entry-point backends
    digest : SHA-256 (hex) of all of the above; equality and hashing use it alone

    Make one with :meth:`create` or :meth:`of`.
    """

    name: str
    model: RobotModel
    options: tuple = ()
    factory: Optional[Callable] = None
    digest: str = ""

    @classmethod
    def create(cls, name: str, model: RobotModel, **options) -> "BackendSpec":
        """The spec of ``dp.get_backend(name, model, **options)``."""
        if not isinstance(name, str):
            raise InputError(f"backend name must be a string, got {name!r}")
        if not isinstance(model, RobotModel):
            raise InputError(f"model must be a RobotModel (dp.load_robot(...)), got {type(model).__name__}")
        from .backends.registry import list_backends

        if name not in list_backends():
            raise BackendError(f"unknown backend {name!r}; available: {', '.join(list_backends())}")
        items = tuple(sorted(options.items()))
        factory = _runtime_factory(name)
        factory_id = None if factory is None else f"{factory.__module__}.{getattr(factory, '__qualname__', factory)}"
        digest = digest_of(name, model_digest(model), items, factory_id)
        return cls(name, model, items, factory, digest)

    @classmethod
    def of(cls, backend) -> "BackendSpec":
        """The spec of a built backend (its name, its model with gravity, its friction
        model, ``compiled=False`` for the numpy reference), or ``backend`` if it is a spec.
        Other factory options are not recovered: pass a spec from :meth:`create` for those."""
        if isinstance(backend, BackendSpec):
            return backend
        from .backends.base import Backend

        if not isinstance(backend, Backend):
            raise InputError(f"expected a backend (dp.get_backend(...)) or a BackendSpec, got {type(backend).__name__}")
        options = {}
        if type(backend).can("friction") and getattr(backend, "friction", None) is not None:
            options["friction"] = backend.friction
        if getattr(backend, "compiled", True) is False:
            options["compiled"] = False
        return cls.create(backend.name, backend.model, **options)

    def __hash__(self) -> int:
        return hash(self.digest)

    def __eq__(self, other) -> bool:
        return isinstance(other, BackendSpec) and other.digest == self.digest

    def __repr__(self) -> str:
        return f"BackendSpec({self.name!r}, {self.model.name!r}, digest={self.digest[:12]})"

    def build(self):
        """A new backend from this spec (see :func:`backend_of` for the cached one)."""
        from .backends.registry import get_backend

        if self.factory is not None:
            return self.factory(self.model, **dict(self.options))
        return get_backend(self.name, self.model, **dict(self.options))


def _runtime_factory(name: str) -> Optional[Callable]:
    """The factory of ``name`` if it was registered at run time with a callable (so other
    processes cannot find it by name), else None."""
    from .backends import registry

    registry._load_entry_points()
    target = registry._factories.get(name)
    return target if callable(target) and name not in registry._BUILTIN else None


_BUILD_LOCK = threading.Lock()


@functools.lru_cache(maxsize=8)
def _build(spec: BackendSpec):
    return spec.build()


def backend_of(spec) -> object:
    """The backend of ``spec`` (a BackendSpec, or a backend), built once per process and
    cached by the spec's digest (eight at most); thread-safe."""
    spec = BackendSpec.of(spec)
    with _BUILD_LOCK:
        return _build(spec)


def cache_info():
    """``functools`` cache statistics of :func:`backend_of` in this process: ``misses``
    is the number of backends built (run it on workers with ``client.run(cache_info)``)."""
    return _build.cache_info()


# -- a cluster --------------------------------------------------------------------------


def connect(address: Optional[str] = None, workers: Optional[int] = None, timeout: float = 10.0,
            quiet: bool = False):
    """A ``distributed.Client``.

    address : None for a new LocalCluster on this machine: ``workers`` processes (default:
        every core) of one thread each, on the loopback interface, with the dashboard on
        127.0.0.1:8787 (disabled when that port is taken).  Each worker's numba kernels get
        cores // workers threads (at least 1).  Otherwise a scheduler's address
        (``"tcp://host:8786"``), reached within ``timeout`` seconds or :class:`ClusterError`.
    quiet : print nothing: no dashboard link, and of distributed's own log (a new local
        cluster's) only errors, not its warnings (of tasks cancelled by an interrupt, of an
        event loop held up by numba compiling...).
    """
    if not (real_number(timeout) and np.isfinite(timeout) and timeout > 0):
        raise InputError(f"timeout must be a positive number of seconds, got {timeout!r}")
    require("distributed")
    if address is None:
        client, dashboard = _local_client(workers, logging.ERROR if quiet else logging.WARNING)
    else:
        if workers is not None:
            raise InputError("workers= applies to a new local cluster; a scheduler at an address has its own workers")
        client, dashboard = _remote_client(address, timeout), None
    if not quiet:
        print(_describe(client, dashboard), flush=True)
    return client


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _local_client(workers, log_level: int):
    from distributed import Client, LocalCluster

    cores = os.cpu_count() or 1
    if workers is None:
        workers = cores
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise InputError(f"workers must be a positive integer, got {workers!r}")
    workers = int(workers)
    dashboard = _port_free("127.0.0.1", DASHBOARD_PORT)
    # a taken port: no dashboard, and the scheduler's small HTTP server (health checks) on any free port
    where = f"127.0.0.1:{DASHBOARD_PORT}" if dashboard else "127.0.0.1:0"
    client = None
    try:
        with interrupts_held() as held:   # a cluster stopped while its processes start cannot be closed cleanly
            try:
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=where, scheduler_kwargs={"dashboard": dashboard},
                                       env={"NUMBA_NUM_THREADS": str(max(1, cores // workers))},
                                       preload=[__name__], silence_logs=log_level)
            except Exception:
                if held:              # a terminal's Ctrl-C reached the worker processes as they started
                    raise KeyboardInterrupt from None
                raise
            try:
                client = Client(cluster)
            except BaseException:
                cluster.close()
                raise
    except KeyboardInterrupt:         # held until the cluster was up: close it first
        if client is not None:
            close(client, quiet=True)
        raise
    return client, dashboard


def dask_setup(worker) -> None:
    """distributed's preload hook, run in each worker process of :func:`connect`'s local
    cluster as it starts: the worker ignores Ctrl-C (SIGINT, which a terminal sends to
    every process of the group), so that this process alone answers it, cancelling the
    tasks and closing the cluster, instead of every worker printing its own traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def close(client, quiet: bool = False) -> None:
    """Close ``client`` and the local cluster it runs on, if it started one, Ctrl-C held
    meanwhile.  ``quiet``: after an interrupt, without the shutdown reports of
    distributed's and asyncio's loggers for this process (tasks cancelled and destroyed
    mid-run: what an interrupt means, not something wrong)."""
    if quiet:
        for name in ("distributed", "asyncio"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    with interrupts_held():
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def interrupts_held():
    """Ctrl-C (SIGINT) waits until the block is done, then raises KeyboardInterrupt: for
    work that an interrupt would leave half done (a cluster starting, a Zarr write whose
    asyncio tasks would be destroyed pending).  Yields the list of signals held so far.
    Signals reach the main thread only; elsewhere the block runs as it is."""
    held: list = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


def _remote_client(address, timeout: float):
    from distributed import Client

    if not isinstance(address, str) or not address.strip():
        raise InputError(f"address must be a scheduler address such as 'tcp://host:8786', got {address!r}")
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address!r} within {timeout:g} s ({exc}); "
                           "is the scheduler running (dask scheduler) and the address right?") from None
    except (ValueError, TypeError) as exc:
        raise InputError(f"{address!r} is not a scheduler address ({exc}); use e.g. 'tcp://host:8786'") from None


def _describe(client, dashboard) -> str:
    workers = len(client.scheduler_info(n_workers=-1).get("workers", {}))
    line = f"dask: {workers} worker(s) at {client.scheduler.address}"
    if dashboard is False:
        return line + f"; dashboard disabled (port {DASHBOARD_PORT} is taken)"
    link = client.dashboard_link
    if importlib.util.find_spec("bokeh") is None:
        return line + f"; dashboard at {link} needs bokeh (pip install bokeh)"
    return line + f"; dashboard: {link}"


# -- dynamics over dask arrays ---------------------------------------------------------------


def _as_dask(name: str, value, n: int):
    """``value`` ((N, n), dask or numpy) as a float dask array whose last axis is one chunk."""
    import dask.array as da

    if not isinstance(value, da.Array):
        array = np.asarray(value)
        if array.dtype.kind not in "fiu":
            raise InputError(f"{name} must be real numbers of shape (N, {n}), got dtype {array.dtype}")
        value = da.from_array(array, chunks=("auto", -1))
    if value.ndim != 2 or value.shape[1] != n:
        raise InputError(f"{name} must have shape (N, {n}), got {value.shape}")
    if value.dtype.kind not in "fiu":
        raise InputError(f"{name} must be real numbers of shape (N, {n}), got dtype {value.dtype}")
    return value.astype(float).rechunk({1: -1})


def _width(model: RobotModel, name: str) -> int:
    """Columns of argument ``name``: nq for the configuration q, nv for q̇, q̈ and τ
    (a floating base, mimic joints or joints of several degrees of freedom make them
    differ from each other and from the joint count n)."""
    return model.nq if name == "q" else model.nv


def _inputs(spec: BackendSpec, **arrays):
    """The inputs as dask arrays sharing the first one's state chunks: q (N, nq), the
    others (N, nv)."""
    out = [_as_dask(name, value, _width(spec.model, name)) for name, value in arrays.items()]
    sizes = {a.shape[0] for a in out}
    if len(sizes) > 1:
        shapes = ", ".join(f"{name} {a.shape}" for name, a in zip(arrays, out))
        raise InputError(f"batch sizes differ: {shapes}; all arguments must have the same N")
    states = out[0].chunks[0]     # the state axis only: q has nq columns, the others nv
    return [a if a.chunks[0] == states else a.rechunk({0: states}) for a in out]


def _block(spec, *arrays, method: str, block_info=None):
    """One chunk: ``backend_of(spec).method(*arrays)``; errors name the chunk's states."""
    try:
        return getattr(backend_of(spec), method)(*arrays)
    except DynPluginError as exc:
        start, stop = block_info[None]["array-location"][0] if block_info else (0, len(arrays[0]))
        where = f"in the chunk of states {start} to {stop - 1} (its states count from {start})"
        raise type(exc)(f"{where}: {exc}") from None


def _lazy(backend, method: str, matrix: bool = False, **arrays):
    require("dask")
    import dask
    import dask.array as da

    spec = BackendSpec.of(backend)
    inputs = _inputs(spec, **arrays)
    nv = spec.model.nv
    # the spec is one node of the graph: sent to a worker once, not once per task
    node = dask.delayed(spec, name=f"dyn-plugin-spec-{spec.digest[:16]}", pure=True)
    states = inputs[0].chunks[0]
    extra = dict(new_axis=2, chunks=(states, (nv,), (nv,))) if matrix else dict(chunks=(states, (nv,)))
    name = f"{method.replace('_', '-')}-{dask.base.tokenize(spec.digest, method, *inputs)}"
    return da.map_blocks(functools.partial(_block, method=method), node, *inputs, dtype=float, name=name,
                         meta=np.empty((0,) * (3 if matrix else 2)), **extra)


def inverse_dynamics(backend, q, qd, qdd):
    """Lazy τ (N, nv), N·m or N, of ``backend`` (a backend or a :class:`BackendSpec`) for
    q (N, nq) (rad or m; a floating base's quaternion included), q̇ (rad/s or m/s) and q̈
    (rad/s² or m/s²), each (N, nv): dask arrays (rechunked so that the coordinate axis is
    one chunk and the state chunks follow q's) or numpy arrays (embedded in the graph: for
    big data, make the arrays on the workers).
    Computed, it equals ``backend.inverse_dynamics(q, qd, qdd)`` bit for bit; an error in a
    chunk (e.g. NaN input) is raised with the chunk's states named."""
    return _lazy(backend, "inverse_dynamics", q=q, qd=qd, qdd=qdd)


def forward_dynamics(backend, q, qd, tau):
    """Lazy q̈ (N, nv), rad/s² or m/s², for q (N, nq), q̇ and torques τ (N, nv) (see
    :func:`inverse_dynamics`)."""
    return _lazy(backend, "forward_dynamics", q=q, qd=qd, tau=tau)


def mass_matrix(backend, q):
    """Lazy M(q) (N, nv, nv), kg·m² (kg for prismatic joints), for q (N, nq)."""
    return _lazy(backend, "mass_matrix", matrix=True, q=q)


def gravity_torques(backend, q):
    """Lazy g(q) (N, nv), N·m or N, for q (N, nq)."""
    return _lazy(backend, "gravity_torques", q=q)


def bias_forces(backend, q, qd):
    """Lazy C(q, q̇) q̇ + g(q) (N, nv), N·m or N, for q (N, nq) and q̇ (N, nv)."""
    return _lazy(backend, "bias_forces", q=q, qd=qd)
