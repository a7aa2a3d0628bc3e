"""Monte-Carlo friction study: how far the friction torque along a trajectory moves when
the friction parameters are only known within stated uncertainties (issue #17).

:func:`friction_envelope` draws K friction parameter sets around a nominal
:class:`~dyn_plugin.friction.parameters.FrictionModel`, evaluates a friction backend's
torque breakdown along a trajectory for each, and returns the envelope (percentiles,
mean, standard deviation, extremes) of the friction torque per joint and time::

    from dyn_plugin.friction.monte_carlo import Uncertainty, friction_envelope, plot_envelope

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
client given to :func:`friction_envelope` (:func:`dyn_plugin.dask.connect`) is only called.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Optional, Union

import numpy as np

from ..errors import InputError, ModelError

# -- the uncertain parameters ------------------------------------------------------------

PARAMETERS = ("viscous", "coulomb", "coulomb_negative", "static", "static_negative", "stribeck_velocity",
              "bearing_mu", "breakaway", "efficiency", "rated_torque")
"""Parameters an uncertainty may name, in the order their random numbers are drawn.

viscous            b_v, N·m·s/rad (N·s/m)            velocity friction
coulomb            Coulomb level for q̇ > 0, N·m (N)
coulomb_negative   Coulomb level for q̇ < 0           follows ``coulomb`` unless stated
static             static (breakaway) level, q̇ > 0   follows ``coulomb`` unless stated; ≥ Coulomb
static_negative    static level, q̇ < 0               follows ``static`` if stated, else ``coulomb_negative``
stribeck_velocity  ε of exp(−|q̇|/ε), rad/s (m/s), > 0
bearing_mu         Dhanaraj's bearing friction coefficient μ (dimensionless)
breakaway          transmission breakaway torque τ_B, N·m (N)
efficiency         a factor on the joint's whole efficiency table (nominal 1), every η kept in (0, 1]
rated_torque       the rated torque scaling the efficiency curve's abscissa, > 0 (not in the default)
"""

LEADERS = {"coulomb_negative": "coulomb", "static": "coulomb", "static_negative": ("static", "coulomb_negative")}
DEFAULTED = tuple(p for p in PARAMETERS if p != "rated_torque")    # what a ``default`` spec covers
STRICTLY_POSITIVE = ("stribeck_velocity", "efficiency", "rated_torque")
DISTRIBUTIONS = ("uniform", "normal")
DEFAULT_RELATIVE = 0.2
_TINY = 1e-300        # a strictly positive lower bound that a draw can reach only with probability ~0


def _number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


@dataclasses.dataclass(frozen=True)
class Spec:
    """The uncertainty of one friction parameter, for every joint.

    Exactly one of
      relative : half-width as a fraction of the nominal value (0.2: ±20 %);
      absolute : half-width in the parameter's unit (2.0: ±2 N·m for a Coulomb level);
      range    : (lower, upper) absolute values (centre (lower + upper)/2, half-width
                 (upper − lower)/2; the centre need not be the nominal value).
    Each value is one number, one per joint (sequence), or ``{joint name: value}`` (joints
    left out: exact).  ``distribution``: ``"uniform"`` over centre ± half-width, or
    ``"normal"`` with mean the centre and standard deviation the half-width; both
    truncated at the parameter's physical bounds.  ``source``: where the numbers come from.
    """

    relative: object = None
    absolute: object = None
    range: object = None
    distribution: str = "uniform"
    source: str = ""

    def __post_init__(self):
        given = [k for k in ("relative", "absolute", "range") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ModelError(f"an uncertainty Spec needs exactly one of relative, absolute, range; got "
                             f"{', '.join(given) or 'none'}")
        if self.distribution not in DISTRIBUTIONS:
            raise ModelError(f"uncertainty distribution must be one of {', '.join(DISTRIBUTIONS)}, "
                             f"got {self.distribution!r}")
        if self.range is not None and (isinstance(self.range, (str, bytes, Mapping))
                                       or not hasattr(self.range, "__len__") or len(self.range) != 2):
            raise ModelError(f"uncertainty range must be a pair (lower, upper), each one number or one per joint, "
                             f"got {self.range!r}")

    @property
    def kind(self) -> str:
        return next(k for k in ("relative", "absolute", "range") if getattr(self, k) is not None)

    def describe(self) -> str:
        value = getattr(self, self.kind)
        shown = _short(value)
        text = {"relative": lambda: f"±{_percent(value)}" if _number(value) else f"relative ±{shown}",
                "absolute": lambda: f"±{shown} (absolute)",
                "range": lambda: f"in [{_short(value[0])}, {_short(value[1])}]"}[self.kind]()
        return f"{text} {self.distribution}{' σ' if self.distribution == 'normal' else ''}"


def _short(value) -> str:
    if _number(value):
        return f"{float(value):g}"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(_short(v) for v in value) + "]" if hasattr(value, "__iter__") else repr(value)


def _percent(value) -> str:
    return f"{100 * float(value):g} %"


def _as_spec(name: str, value, distribution: str) -> Optional[Spec]:
    if value is None or isinstance(value, Spec):
        return value
    if _number(value) or (hasattr(value, "__iter__") and not isinstance(value, (str, bytes))):
        return Spec(relative=value, distribution=distribution)
    raise ModelError(f"uncertainty of {name!r} must be a Spec or a relative half-width (a number, one per joint, "
                     f"or {{joint: number}}), got {value!r}")


@dataclasses.dataclass(frozen=True)
class Uncertainty:
    """Stated uncertainties of friction parameters: ``{parameter: Spec}``.

    ``Uncertainty(viscous=0.1, coulomb=Spec(absolute=2.0, distribution="normal"))``: a plain
    number (or per-joint list / dict) is a relative half-width with ``distribution``.
    Parameters not named are exact, unless ``default`` (a Spec or relative half-width) is
    given: it then covers every parameter of :data:`DEFAULTED` not named (followers
    follow their leader instead, see the module docs).  Names outside :data:`PARAMETERS`
    are refused.  ``source`` says where the numbers come from.
    """

    specs: Mapping = dataclasses.field(default_factory=dict)
    default: Optional[Spec] = None
    source: str = ""

    def __init__(self, specs: Optional[Mapping] = None, *, default=None, distribution: str = "uniform",
                 source: str = "", **parameters):
        if distribution not in DISTRIBUTIONS:
            raise ModelError(f"uncertainty distribution must be one of {', '.join(DISTRIBUTIONS)}, "
                             f"got {distribution!r}")
        merged = dict(specs or {})
        twice = set(merged) & set(parameters)
        if twice:
            raise ModelError(f"uncertainty of {sorted(twice)} given twice (in specs and as keywords)")
        merged.update(parameters)
        unknown = [k for k in merged if k not in PARAMETERS]
        if unknown:
            raise ModelError(f"unknown friction parameter(s) {', '.join(map(repr, unknown))} in the uncertainty; "
                             f"known: {', '.join(PARAMETERS)}")
        object.__setattr__(self, "specs", {k: _as_spec(k, merged[k], distribution) for k in PARAMETERS
                                           if k in merged and merged[k] is not None})
        object.__setattr__(self, "default", _as_spec("default", default, distribution))
        object.__setattr__(self, "source", str(source))

    @classmethod
    def none(cls) -> "Uncertainty":
        """No uncertainty: every sample is the nominal model."""
        return cls(source="exact")

    def stated(self, parameter: str) -> Optional[Spec]:
        return self.specs.get(parameter)

    def describe(self) -> str:
        """One line: what is uncertain and how (the plot title and the CLI use it)."""
        parts = [f"{k} {s.describe()}" for k, s in self.specs.items()]
        if self.default is not None:
            parts.append(f"{'every other' if parts else 'every'} coefficient {self.default.describe()}")
        return "; ".join(parts) if parts else "none (exact)"

    def as_dict(self) -> dict:
        def spec(s):
            value = getattr(s, s.kind)
            value = np.asarray(value).tolist() if not isinstance(value, Mapping) else dict(value)
            return {s.kind: value, "distribution": s.distribution, "source": s.source}
        return {"parameters": {k: spec(s) for k, s in self.specs.items()},
                "default": None if self.default is None else spec(self.default), "source": self.source,
                "description": self.describe()}


DEFAULT_UNCERTAINTY = Uncertainty(
    default=DEFAULT_RELATIVE,
    source="ASSUMED (no source): ±20 % uniform on every friction coefficient; no bundled data file states a spread")
"""What ``uncertainty=None`` means when the friction data has no ``[uncertainty]`` table."""


# -- reading an [uncertainty] table of a friction data file --------------------------------

_TABLE_KEYS = {"source", "distribution", "default", "profiles"}
_SPEC_KEYS = {"relative", "absolute", "range", "distribution", "source"}


def read_uncertainty(source: Union[str, os.PathLike], profile: Optional[str] = None) -> Optional[Uncertainty]:
    """The ``[uncertainty]`` table of a friction data file (or a bundled robot's name), for
    ``profile`` (default: the file's ``default_profile``); None if the file has none.

    Layout (top level of the file, beside ``[profiles.*]``, which :func:`load_friction`
    ignores)::

        [uncertainty]
        source = "where the numbers come from"        # required: provenance
        distribution = "uniform"                       # default of the entries (or "normal")
        default = 0.2                                  # optional: every coefficient not named
        viscous = 0.1                                  # relative half-width (one, or one per joint)
        coulomb = { absolute = [2.0, 1.0, 0.5, 0.05, 0.05, 0.05], source = "..." }
        breakaway = { range = [[5.5, 4.8, 2.2, 0, 0, 0], [7.1, 6.2, 3.0, 0, 0, 0]], distribution = "normal" }

        [uncertainty.profiles.dhanaraj]                # this profile only; overrides the table above
        bearing_mu = { range = [0.05, 0.15], source = "..." }
    """
    from ..datafile import read_toml
    from .parameters import friction_file

    bundled = friction_file(str(source))
    path = bundled if bundled is not None else Path(source)
    if not path.is_file():
        raise ModelError(f"friction data file {str(path)!r} does not exist")
    data = read_toml(path, ModelError, "friction data file")
    table = data.get("uncertainty")
    if table is None:
        return None
    where = f"friction data file {path.name}, [uncertainty]"
    if not isinstance(table, Mapping):
        raise ModelError(f"{where} must be a table")
    name = profile or data.get("default_profile")
    overrides = table.get("profiles", {})
    if not isinstance(overrides, Mapping):
        raise ModelError(f"{where}.profiles must be a table of profile names")
    unknown_profiles = set(overrides) - set(data.get("profiles", {}))
    if unknown_profiles:
        raise ModelError(f"{where}.profiles names unknown profile(s) {sorted(unknown_profiles)}; "
                         f"profiles: {', '.join(data.get('profiles', {})) or 'none'}")
    merged = {k: v for k, v in table.items() if k != "profiles"}
    override = overrides.get(name, {})
    merged.update(override)
    try:
        return _from_table(merged, where + (f" (profile {name!r})" if override else ""))
    except ModelError as exc:
        if str(exc).startswith(where):
            raise
        raise ModelError(f"{where}: {exc}") from None


def _from_table(table: Mapping, where: str) -> Uncertainty:
    unknown = set(table) - _TABLE_KEYS - set(PARAMETERS)
    if unknown:
        raise ModelError(f"{where}: unknown entries {sorted(unknown)}; friction parameters: {', '.join(PARAMETERS)}; "
                         f"other keys: {', '.join(sorted(_TABLE_KEYS))}")
    if not str(table.get("source", "")).strip():
        raise ModelError(f"{where}: needs a 'source' saying where its numbers come from (or that they are assumed)")
    distribution = table.get("distribution", "uniform")

    def spec(key, value):
        if isinstance(value, Mapping):
            extra = set(value) - _SPEC_KEYS
            if extra:
                raise ModelError(f"{where}, {key}: unknown entries {sorted(extra)}; known: {sorted(_SPEC_KEYS)}")
            return Spec(**{"distribution": distribution, **value})
        return _as_spec(key, value, distribution)

    specs = {k: spec(k, v) for k, v in table.items() if k in PARAMETERS}
    default = table.get("default")
    return Uncertainty(specs, default=None if default is None else spec("default", default),
                       distribution=distribution, source=str(table["source"]))


# -- turning specs into per-joint sampling plans --------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Plan:
    """How one parameter is drawn: per joint (n,) centre, half-width, bounds; ``draw`` is the
    index in PARAMETERS of the random numbers it uses (its own, or its leader's)."""

    parameter: str
    draw: int
    distribution: str
    centre: np.ndarray
    width: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def _nominal(friction, parameter: str) -> Optional[np.ndarray]:
    """The parameter's nominal values (n,), or None when the friction model lacks that part."""
    v, bearing, trans = friction.velocity, friction.bearing, friction.transmission
    curves = None if trans is None else np.array([c is not None for c in trans.curves])
    return {
        "viscous": lambda: v.viscous, "coulomb": lambda: v.coulomb_positive,
        "coulomb_negative": lambda: v.coulomb_negative, "static": lambda: v.static_positive,
        "static_negative": lambda: v.static_negative, "stribeck_velocity": lambda: v.stribeck_velocity,
        "bearing_mu": lambda: None if bearing is None else bearing.mu,
        "breakaway": lambda: None if trans is None else trans.breakaway,
        "efficiency": lambda: None if trans is None or not curves.any() else curves.astype(float),
        "rated_torque": lambda: None if trans is None or not curves.any() else np.where(curves, trans.rated_torque, 0),
    }[parameter]()


def _upper_bound(friction, parameter: str, n: int) -> np.ndarray:
    if parameter == "efficiency":
        return np.array([1.0 / c.efficiency.max() if c is not None else np.inf
                         for c in friction.transmission.curves])
    return np.full(n, np.inf)


def _per_joint_values(label: str, value, names: tuple) -> np.ndarray:
    """(n,) floats from one number, n numbers, or {joint name: number} (others 0)."""
    n = len(names)
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ModelError(f"{label} names unknown joint(s) {', '.join(map(repr, unknown))}; "
                             f"the robot's joints are {', '.join(map(repr, names))}")
        out = np.zeros(n)
        for key, entry in value.items():
            if not _number(entry):
                raise ModelError(f"{label} of joint {key!r} must be a number, got {entry!r}")
            out[names.index(key)] = float(entry)
        return out
    if _number(value):
        return np.full(n, float(value))
    entries = list(value) if hasattr(value, "__iter__") and not isinstance(value, (str, bytes)) else [value]
    bad = next((e for e in entries if not _number(e)), None)
    if bad is not None or len(entries) != n:
        raise ModelError(f"{label} must be one number, one per joint ({n}: {', '.join(names)}) or "
                         f"{{joint: number}}, got {value!r}")
    return np.array(entries, dtype=float)


def _check_widths(label: str, values: np.ndarray, names: tuple) -> None:
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        j = int(np.argmax(bad))
        raise ModelError(f"{label} of joint {names[j]!r} must be a finite width >= 0, got {values[j]:g}")


def _plan_of(parameter: str, spec: Spec, nominal: np.ndarray, draw: int, friction, names: tuple) -> _Plan:
    label = f"uncertainty of {parameter!r}"
    n = len(names)
    lower = np.full(n, _TINY if parameter in STRICTLY_POSITIVE else 0.0)
    upper = _upper_bound(friction, parameter, n)
    value = getattr(spec, spec.kind)
    if spec.kind == "range":
        lo = _per_joint_values(f"{label} (range lower end)", value[0], names)
        hi = _per_joint_values(f"{label} (range upper end)", value[1], names)
        if isinstance(value[0], Mapping) or isinstance(value[1], Mapping):   # joints left out: exact
            given = set(value[0] if isinstance(value[0], Mapping) else names) & \
                set(value[1] if isinstance(value[1], Mapping) else names)
            keep = np.array([name not in given for name in names])
            lo, hi = np.where(keep, nominal, lo), np.where(keep, nominal, hi)
        for j in range(n):
            if not (np.isfinite(lo[j]) and np.isfinite(hi[j]) and lo[j] <= hi[j]):
                raise ModelError(f"{label} for joint {names[j]!r}: range [{lo[j]:g}, {hi[j]:g}] must be finite with "
                                 f"lower <= upper")
            if lo[j] < 0 or hi[j] > upper[j]:
                raise ModelError(f"{label} for joint {names[j]!r}: range [{lo[j]:g}, {hi[j]:g}] leaves the physical "
                                 f"bounds [0, {upper[j]:g}] of {parameter!r}")
        centre, width = 0.5 * (lo + hi), 0.5 * (hi - lo)
    else:
        widths = _per_joint_values(label, value, names)
        _check_widths(label, widths, names)
        centre = nominal.astype(float)
        width = widths * np.abs(centre) if spec.kind == "relative" else widths
    for j in np.nonzero(width > 0)[0]:
        if _mass_inside(spec.distribution, centre[j], width[j], lower[j], upper[j]) <= 1e-12:
            raise ModelError(f"{label} for joint {names[j]!r}: {spec.distribution} about {centre[j]:g} "
                             f"(half-width {width[j]:g}) lies outside the physical bounds "
                             f"[{lower[j]:g}, {upper[j]:g}]")
    return _Plan(parameter, draw, spec.distribution, centre, width, lower, upper)


def _mass_inside(distribution, centre, width, lower, upper) -> float:
    if distribution == "uniform":
        return (min(centre + width, upper) - max(centre - width, lower)) / (2 * width)
    from scipy.special import ndtr

    return float(ndtr((upper - centre) / width) - ndtr((lower - centre) / width))


def _plans(friction, uncertainty: Uncertainty) -> dict:
    """{parameter: _Plan} for every parameter the model has (exact ones with zero width)."""
    names = friction.joint_names or tuple(f"joint index {i}" for i in range(friction.n))
    absent = [p for p in uncertainty.specs if _nominal(friction, p) is None]
    if absent:
        part = {"bearing_mu": "bearing friction", "breakaway": "transmission friction",
                "efficiency": "an efficiency curve", "rated_torque": "an efficiency curve"}
        raise ModelError(f"friction model {friction.name!r} has no {part[absent[0]]}: the uncertainty of "
                         f"{absent[0]!r} cannot apply to it")
    plans, specs = {}, {}
    for index, parameter in enumerate(PARAMETERS):
        nominal = _nominal(friction, parameter)
        if nominal is None:
            continue
        spec, draw = uncertainty.stated(parameter), index
        if spec is None and parameter in LEADERS:
            leaders = LEADERS[parameter]
            leader = (leaders[0] if uncertainty.stated(leaders[0]) is not None else leaders[1]) \
                if isinstance(leaders, tuple) else leaders
            if leader in specs and specs[leader].kind != "range":
                spec, draw = specs[leader], plans[leader].draw             # the same draw, on its own nominal
            elif leader in specs:
                spec = None                                                 # a range belongs to its level only
        elif spec is None and parameter in DEFAULTED:
            spec = uncertainty.default
        if spec is None:
            spec = Spec(absolute=0.0)
        specs[parameter] = spec
        plans[parameter] = _plan_of(parameter, spec, nominal, draw, friction, names)
    return plans


def _draw(plan: _Plan, u: np.ndarray) -> np.ndarray:
    """Values (k, n) from uniform numbers u (k, n) in [0, 1) by the truncated inverse CDF;
    exactly the centre where the width is 0."""
    c, w, lo, hi = plan.centre, plan.width, plan.lower, plan.upper
    exact = w == 0
    safe = np.where(exact, 1.0, w)
    if plan.distribution == "uniform":
        a, b = np.maximum(c - w, lo), np.minimum(c + w, hi)
        values = a + u * (b - a)
    else:
        from scipy.special import ndtr, ndtri

        pa, pb = ndtr((lo - c) / safe), ndtr((hi - c) / safe)
        values = c + safe * ndtri(pa + u * (pb - pa))
    return np.where(exact, c, np.clip(values, lo, hi))


# -- sampled friction models ----------------------------------------------------------------


def _sampled_models(friction, plans: dict, u: np.ndarray) -> list:
    """One FrictionModel per row of u (k, len(PARAMETERS), n)."""
    from .models import EfficiencyCurve, VelocityFriction

    drawn = {p: _draw(plan, u[:, plan.draw, :]) for p, plan in plans.items()}
    # static >= Coulomb in every sample: a static level drawn below its sampled Coulomb level is raised to it
    drawn["static"] = np.maximum(drawn["static"], drawn["coulomb"])
    drawn["static_negative"] = np.maximum(drawn["static_negative"], drawn["coulomb_negative"])
    models = []
    for k in range(u.shape[0]):
        velocity = VelocityFriction(drawn["viscous"][k], drawn["coulomb"][k], drawn["coulomb_negative"][k],
                                    drawn["static"][k], drawn["static_negative"][k], drawn["stribeck_velocity"][k],
                                    friction.velocity.smoothing)
        bearing, transmission = friction.bearing, friction.transmission
        if bearing is not None:
            bearing = dataclasses.replace(bearing, mu=drawn["bearing_mu"][k])
        if transmission is not None:
            curves = transmission.curves
            if "efficiency" in drawn:
                curves = tuple(None if c is None else
                               c if drawn["efficiency"][k, j] == 1.0 else
                               EfficiencyCurve(c.load_ratio, np.minimum(c.efficiency * drawn["efficiency"][k, j], 1.0),
                                               c.kind)
                               for j, c in enumerate(curves))
            rated = (np.where([c is not None for c in curves], drawn["rated_torque"][k], transmission.rated_torque)
                     if "rated_torque" in drawn else transmission.rated_torque)
            transmission = dataclasses.replace(transmission, curves=curves, breakaway=drawn["breakaway"][k],
                                               rated_torque=rated)
        models.append(dataclasses.replace(friction, velocity=velocity, bearing=bearing, transmission=transmission))
    return models


def _chunks(samples: int, chunk_size: int) -> list:
    return [min(chunk_size, samples - start) for start in range(0, samples, chunk_size)]


def _chunk_models(friction, plans: dict, seed: int, chunk: int, count: int) -> list:
    rng = np.random.default_rng(np.random.SeedSequence([seed, chunk]))
    return _sampled_models(friction, plans, rng.random((count, len(PARAMETERS), friction.n)))


def sample_friction(friction, uncertainty: Optional[Uncertainty] = None, samples: int = 256, seed: int = 0,
                    chunk_size: int = 32) -> list:
    """The K sampled :class:`FrictionModel` s that :func:`friction_envelope` evaluates (same
    seed and chunk size: the same models, in order).  ``uncertainty=None``: DEFAULT_UNCERTAINTY."""
    samples, seed, chunk_size = _check_counts(samples, seed, chunk_size)
    plans = _plans(friction, DEFAULT_UNCERTAINTY if uncertainty is None else _coerce_uncertainty(uncertainty))
    out = []
    for chunk, count in enumerate(_chunks(samples, chunk_size)):
        out.extend(_chunk_models(friction, plans, seed, chunk, count))
    return out


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
    from ..backends import get_backend

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


def _check_counts(samples, seed, chunk_size) -> tuple:
    for name, value, least in (("samples", samples, 1), ("seed", seed, 0), ("chunk_size", chunk_size, 1)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < least:
            raise InputError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(samples), int(seed), int(chunk_size)


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
    from .study import reference_trajectory

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


def _coerce_uncertainty(uncertainty) -> Uncertainty:
    if isinstance(uncertainty, Uncertainty):
        return uncertainty
    if isinstance(uncertainty, Mapping):
        return Uncertainty(uncertainty)
    raise ModelError(f"uncertainty must be an Uncertainty, a {{parameter: Spec or relative width}} mapping or None, "
                     f"got {uncertainty!r}")


def _data_file(model, friction) -> Optional[Path]:
    """The friction data file ``resolve_friction`` reads for these arguments, if any."""
    from ..robots import BUNDLED, robot_path
    from .parameters import FrictionModel, friction_file

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
    from ..backends import get_backend
    from ..backends.registry import WITH_FRICTION

    samples, seed, chunk_size = _check_counts(samples, seed, chunk_size)
    levels = _check_levels(percentiles)
    if profile is not None and not isinstance(profile, str):
        raise InputError(f"profile is the friction data file's profile name (e.g. 'corke'); pass the motion as "
                         f"trajectory=(t, q, qd, qdd), got profile={type(profile).__name__}")
    if backend not in WITH_FRICTION:
        raise InputError(f"backend must be one with friction: {', '.join(WITH_FRICTION)}; got {backend!r}")
    if gravity is not None:
        model = model.with_gravity(gravity)
    t, q, qd, qdd = _check_trajectory(model, trajectory)
    nominal_backend = get_backend(backend, model, friction=friction, profile=profile)
    nominal_friction = nominal_backend.friction
    if uncertainty is None:
        source = _data_file(model, friction)
        uncertainty = (read_uncertainty(source, profile or nominal_friction.name) if source is not None else None) \
            or DEFAULT_UNCERTAINTY
    uncertainty = _coerce_uncertainty(uncertainty)
    plans = _plans(nominal_friction, uncertainty)
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
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
