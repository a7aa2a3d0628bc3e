"""Monte-Carlo friction study: how far the friction torque along a trajectory moves when
the friction parameters are only known within stated uncertainties.

:func:`friction_envelope` draws K friction parameter sets around a nominal
:class:`~dyn_plugin.friction.parameters.FrictionModel`, evaluates a friction backend's
torque breakdown along a trajectory for each, and returns the envelope (percentiles,
mean, standard deviation, extremes) of the friction torque per joint and time::

    from dyn_plugin.studies.friction_monte_carlo import Uncertainty, friction_envelope, plot_envelope

    model = dp.load_robot("puma560")
    env = friction_envelope(model, samples=256)                      # bundled data, ±20 % (below)
    env = friction_envelope(model, "puma560", Uncertainty(viscous=0.1, coulomb=Spec(absolute=2.0)),
                            samples=256, client=distributed.Client(...))   # same numbers, on dask
    plot_envelope(env, "envelope.png")

**Friction torque** is what friction adds to the actuator torque, the backend's
:class:`~dyn_plugin.backends.friction_backend.TorqueBreakdown` ``.friction``:
bearing (joint) friction + transmission friction (efficiency and breakaway) + velocity
friction (viscous, Coulomb, static), all at the actuator input, N·m (N for prismatic
joints).  The rigid-body and armature torques do not depend on the friction parameters.

**Uncertainties** (:class:`Uncertainty`, :class:`Spec`) are stated per parameter of
:data:`PARAMETERS` as a relative half-width, an absolute half-width or an absolute range,
uniform or normal (then the half-width is one standard deviation), per joint if wished.
Draws are truncated at physical bounds (conditioned, by the inverse CDF: no negative
coefficient, a positive Stribeck velocity, efficiencies in (0, 1]); a static level drawn
below its sampled Coulomb level is raised to it (that joint then has no stiction peak),
so static ≥ Coulomb holds in every sample.  The second level of a pair (``coulomb_negative``,
``static``, ``static_negative``) when not stated itself *follows* its leader: the same
draw, the same kind and width, on its own nominal value — one relative factor moves
both Coulomb levels and the static levels of a joint together (a joint slides one way
at a time, so the pointwise envelope does not depend on how the two directions
correlate), and a model without a stiction peak keeps none.

**Defaults.**  With ``uncertainty=None`` the friction data file's ``[uncertainty]``
table is used (:func:`read_uncertainty`); when there is none, :data:`DEFAULT_UNCERTAINTY`:
**±20 %, uniform, on every friction coefficient** (viscous, both Coulomb levels and the
static levels following them, Stribeck velocity, bearing μ, transmission breakaway,
efficiency curve).  That number is an ASSUMPTION, with no source: none of the bundled
data files states a spread, and the PUMA-560's two bundled profiles (Corke's lumped
viscous/Coulomb model; Dhanaraj's bearing/transmission model after Armstrong 1988)
describe different terms, so their difference is not the uncertainty of one parameter.
A cited spread belongs in the data file's ``[uncertainty]`` table (Corke &
Armstrong-Hélouvry, "A search for consensus among model parameters reported for the
PUMA 560 robot", ICRA 1994, compare reported PUMA-560 parameters and would be the source
to read).  Parameters that are zero stay zero under a relative width (no friction is
invented); the rated torque, bearing geometry, armature and smoothing stay exact unless
stated (they are ratings, geometry or numerical choices, not friction coefficients).

**Reproducibility.**  Samples are drawn in chunks of ``chunk_size``; chunk c uses
``np.random.default_rng(np.random.SeedSequence([seed, c]))``, and draws one uniform
number per (sample, parameter of :data:`PARAMETERS`, joint) whether or not the parameter
is uncertain, so the result depends on (seed, chunk_size, K) only: identical serially
and on any dask cluster, and adding an uncertainty to one parameter does not change the
draws of the others.

``import dyn_plugin`` does not import this module, and this module never imports dask: a
client given to :func:`friction_envelope` (:func:`dyn_plugin.cluster.connect`) is only called.
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import InputError, ModelError
from .friction_uncertainty import (DEFAULT_UNCERTAINTY, PARAMETERS, Spec, Uncertainty, _check_counts, _chunk_models,
                                   _chunks, _coerce_uncertainty, _plans, read_uncertainty, sample_friction)

# The study's whole surface, the uncertainty statements included (defined in .friction_uncertainty).
__all__ = ["DEFAULT_UNCERTAINTY", "FrictionEnvelope", "PARAMETERS", "Spec", "Uncertainty", "friction_envelope",
           "plot_envelope", "read_uncertainty", "sample_friction"]


# -- the envelope ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FrictionEnvelope:
    """Friction torque along a trajectory: nominal, and its distribution over K samples.

    t (T,) s; qd (T, n) rad/s (m/s); nominal, mean, std, minimum, maximum (T, n) N·m (N
    for prismatic joints); levels (P,) percent; percentiles (P, T, n), ``percentiles[i]``
    the ``levels[i]``-th percentile (numpy's linear interpolation) at every time and joint.
    std is the population standard deviation (ddof 0).  Friction torque: bearing +
    transmission + velocity friction at the actuator input (``TorqueBreakdown.friction``).
    """

    robot: str
    backend: str
    friction: str
    uncertainty: Uncertainty
    samples: int
    seed: int
    chunk_size: int
    joint_names: tuple
    joint_types: tuple
    t: np.ndarray
    qd: np.ndarray
    nominal: np.ndarray
    levels: np.ndarray
    percentiles: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray

    def percentile(self, level: float) -> np.ndarray:
        """The ``level``-th percentile (T, n); it must be one of ``levels``."""
        hits = np.nonzero(self.levels == level)[0]
        if not len(hits):
            computed = ", ".join(f"{p:g}" for p in self.levels)
            raise InputError(f"percentile {level:g} was not computed; levels: {computed}")
        return self.percentiles[hits[0]]

    def as_dict(self) -> dict:
        return {"robot": self.robot, "backend": self.backend, "friction": self.friction,
                "uncertainty": self.uncertainty.as_dict(), "samples": self.samples, "seed": self.seed,
                "chunk_size": self.chunk_size, "joints": list(self.joint_names), "t": self.t.tolist(),
                "nominal": self.nominal.tolist(), "levels": self.levels.tolist(),
                "percentiles": self.percentiles.tolist(), "mean": self.mean.tolist(), "std": self.std.tolist(),
                "minimum": self.minimum.tolist(), "maximum": self.maximum.tolist()}


@dataclasses.dataclass(frozen=True)
class _Job:
    """What a worker needs: small and picklable (a RobotModel is plain numpy; no backend)."""

    token: str
    model: object
    backend: str
    friction: object
    plans: dict
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    seed: int


_WORKER_CACHE: dict = {}     # per process: job token -> nominal backend (the first chunk builds it)


def _backend_for(job: _Job):
    from ..backends.registry import get_backend

    if job.token not in _WORKER_CACHE:
        while len(_WORKER_CACHE) >= 4:
            _WORKER_CACHE.pop(next(iter(_WORKER_CACHE)))
        _WORKER_CACHE[job.token] = get_backend(job.backend, job.model, friction=job.friction)
    return _WORKER_CACHE[job.token]


def _chunk_torques(job: _Job, chunk: int, count: int) -> np.ndarray:
    """Friction torque (count, T, n) of chunk ``chunk``'s samples (runs on a worker or here)."""
    nominal = _backend_for(job)
    out = np.empty((count, *job.q.shape))
    for k, friction in enumerate(_chunk_models(job.friction, job.plans, job.seed, chunk, count)):
        backend = type(nominal)(nominal.model, friction=friction)        # cheap: the kernels are compiled once
        out[k] = backend.inverse_dynamics_breakdown(job.q, job.qd, job.qdd).friction
    return out


def _check_levels(percentiles) -> np.ndarray:
    try:
        levels = np.array(percentiles, dtype=float, ndmin=1)
    except (TypeError, ValueError):
        raise InputError(f"percentiles must be numbers in [0, 100], got {percentiles!r}") from None
    if levels.ndim != 1 or not len(levels) or not np.all(np.isfinite(levels)) or \
            np.any((levels < 0) | (levels > 100)):
        raise InputError(f"percentiles must be one or more numbers in [0, 100], got {percentiles!r}")
    return levels


def _check_trajectory(model, trajectory) -> tuple:
    from .friction_study import reference_trajectory

    if trajectory is None:
        return reference_trajectory(model)
    if all(hasattr(trajectory, a) for a in ("t", "q", "qd", "qdd")):
        trajectory = (trajectory.t, trajectory.q, trajectory.qd, trajectory.qdd)
    if isinstance(trajectory, (str, bytes)) or not hasattr(trajectory, "__len__") or len(trajectory) != 4:
        raise InputError("trajectory must be (t, q, qd, qdd) or have .t .q .qd .qdd (e.g. a FrictionStudy or a "
                         f"simulate() Trajectory), got {type(trajectory).__name__}")
    arrays = []
    for name, value in zip(("t", "q", "qd", "qdd"), trajectory):
        try:
            array = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"trajectory {name} must be numbers") from None
        if not np.all(np.isfinite(array)):
            raise InputError(f"trajectory {name} has NaN or infinite entries")
        arrays.append(array)
    t, q, qd, qdd = arrays
    T = len(t) if t.ndim == 1 else -1
    for name, array in (("q", q), ("qd", qd), ("qdd", qdd)):
        if t.ndim != 1 or array.shape != (T, model.n):
            raise InputError(f"trajectory: t must be (T,) and {name} (T, n) = ({T}, {model.n}) for robot "
                             f"{model.name!r}; got t {t.shape}, {name} {array.shape}")
    if T < 1:
        raise InputError("trajectory needs at least one sample")
    return t, q, qd, qdd


def _data_file(model, friction) -> Optional[Path]:
    """The friction data file ``resolve_friction`` reads for these arguments, if any."""
    from ..robots import BUNDLED, robot_path
    from ..friction.parameters import FrictionModel, friction_file

    if isinstance(friction, FrictionModel) or friction in ("urdf", "none"):
        return None
    if friction is None:
        if model.source_path is None:
            return None
        source = Path(model.source_path).resolve()
        name = next((b for b in BUNDLED if robot_path(b).resolve() == source), None)
        return None if name is None else friction_file(name)
    return friction_file(str(friction)) or Path(friction)


def friction_envelope(model, friction=None, uncertainty=None, samples: int = 256, seed: int = 0,
                      trajectory=None, percentiles=(5, 50, 95), client=None, *, profile: Optional[str] = None,
                      backend: str = "newton_euler_friction", gravity=None,
                      chunk_size: int = 32) -> FrictionEnvelope:
    """Percentiles of the friction torque along a trajectory over K friction parameter samples.

    model : RobotModel.
    friction : as for a friction backend: a FrictionModel, a data file, ``"urdf"``, ``"none"``,
        or None (a bundled robot's data file, else the URDF ``<dynamics>``); ``profile``: the
        data file's profile (``corke``, ``dhanaraj`` for the PUMA-560).
    uncertainty : an :class:`Uncertainty` (or ``{parameter: Spec or relative width}``); None:
        the data file's ``[uncertainty]`` table, else :data:`DEFAULT_UNCERTAINTY` (±20 %).
    samples : K >= 1;  seed : integer >= 0;  chunk_size : samples per chunk (task).
    trajectory : (t (T,), q, q̇, q̈ (T, n)) or an object with those attributes; None: the
        friction study's reference trajectory (2 s rest-to-rest quintic, 201 samples).
    percentiles : levels in [0, 100], (P,).
    client : None (serial, here) or a dask ``distributed.Client``: chunks are submitted to
        its workers (the model, nominal friction and trajectory are scattered once; each
        worker process builds its backend once).  The result is identical either way.
    backend : a friction backend (``newton_euler_friction``, ``lagrange_euler_friction``).
    gravity : (3,) m/s², default the model's.

    Returns a :class:`FrictionEnvelope`.  Memory: the K × T × n sample torques are held
    for the percentiles (K = 10⁴, T = 201, n = 6: 97 MB).
    """
    from ..backends.registry import backends, get_backend

    samples, seed, chunk_size = _check_counts(samples, seed, chunk_size)
    levels = _check_levels(percentiles)
    if profile is not None and not isinstance(profile, str):
        raise InputError(f"profile is the friction data file's profile name (e.g. 'corke'); pass the motion as "
                         f"trajectory=(t, q, qd, qdd), got profile={type(profile).__name__}")
    with_friction = backends(can=("friction",))
    if backend not in with_friction:
        raise InputError(f"backend must be one with friction: {', '.join(with_friction)}; got {backend!r}")
    if gravity is not None:
        model = model.with_gravity(gravity)
    t, q, qd, qdd = _check_trajectory(model, trajectory)
    nominal_backend = get_backend(backend, model, friction=friction, profile=profile)
    nominal_friction = nominal_backend.friction
    source = None
    if uncertainty is None:
        source = _data_file(model, friction)
        uncertainty = (read_uncertainty(source, profile or nominal_friction.name) if source is not None else None) \
            or DEFAULT_UNCERTAINTY
    uncertainty = _coerce_uncertainty(uncertainty)
    try:
        plans = _plans(nominal_friction, uncertainty)
    except ModelError as exc:     # the file's [uncertainty] does not fit the robot: name the file
        if source is None:
            raise
        raise ModelError(f"friction data file {source.name}, [uncertainty]: {exc}") from None
    nominal = nominal_backend.inverse_dynamics_breakdown(q, qd, qdd).friction

    job = _Job(uuid.uuid4().hex, nominal_backend.model, backend, nominal_friction, plans, q, qd, qdd, seed)
    counts = _chunks(samples, chunk_size)
    if client is None:
        _WORKER_CACHE[job.token] = nominal_backend
        try:
            parts = [_chunk_torques(job, chunk, count) for chunk, count in enumerate(counts)]
        finally:
            _WORKER_CACHE.pop(job.token, None)
    else:
        shared = client.scatter(job, broadcast=True, hash=False)
        futures = [client.submit(_chunk_torques, shared, chunk, count, key=f"friction-envelope-{job.token}-{chunk}")
                   for chunk, count in enumerate(counts)]
        parts = client.gather(futures)
    torques = np.concatenate(parts, axis=0)                                   # (K, T, n)
    return FrictionEnvelope(
        robot=model.name, backend=backend, friction=nominal_friction.name, uncertainty=uncertainty,
        samples=samples, seed=seed, chunk_size=chunk_size, joint_names=tuple(model.joint_names),
        joint_types=tuple(model.joint_types), t=t, qd=qd, nominal=nominal, levels=levels,
        percentiles=np.percentile(torques, levels, axis=0), mean=torques.mean(axis=0), std=torques.std(axis=0),
        minimum=torques.min(axis=0), maximum=torques.max(axis=0))


# -- the plot ------------------------------------------------------------------------------------


def plot_envelope(result: FrictionEnvelope, path) -> Path:
    """PNG (or any matplotlib format): one panel per joint with the nominal friction torque,
    the band between the lowest and highest percentile computed (5-95 % by default,
    shaded) and the median (if 50 was computed).  Returns the path written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(result.joint_names)
    cols = 3 if n > 4 else n
    rows = int(math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.1 * rows), sharex=True, squeeze=False)
    low, high = int(np.argmin(result.levels)), int(np.argmax(result.levels))
    median = np.nonzero(result.levels == 50)[0]
    band = f"{result.levels[low]:g}-{result.levels[high]:g} % band"
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.axis("off")
            continue
        ax.fill_between(result.t, result.percentiles[low][:, i], result.percentiles[high][:, i],
                        color="tab:orange", alpha=0.35, lw=0, label=band)
        if len(median):
            ax.plot(result.t, result.percentiles[median[0]][:, i], color="tab:red", lw=1.2, ls="--", label="median")
        ax.plot(result.t, result.nominal[:, i], color="black", lw=1.2, label="nominal")
        ax.axhline(0.0, color="0.8", lw=0.6)
        silent = not (np.any(result.nominal[:, i]) or np.any(result.maximum[:, i]) or np.any(result.minimum[:, i]))
        ax.set_title(result.joint_names[i] + (" (no friction)" if silent else ""), fontsize=9)
        unit = "N" if result.joint_types[i] == "prismatic" else "N·m"
        ax.set_ylabel(f"τ_friction [{unit}]")
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("t [s]")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    description = result.uncertainty.describe()
    if result.uncertainty.source.startswith("ASSUMED"):
        description += " (assumed)"
    if len(description) > 120:
        description = description[:117] + "..."
    fig.suptitle(f"{result.robot}, friction '{result.friction}': friction torque over K = {result.samples} samples\n"
                 f"uncertainty: {description}", fontsize=10)
    from .friction_study import save_figure

    return save_figure(fig, path)
