"""Uncertain friction parameters: what is known of each, and friction models drawn within it.

:class:`Spec` and :class:`Uncertainty` state how well each parameter of :data:`PARAMETERS`
is known; :func:`read_uncertainty` reads them from a friction data file's ``[uncertainty]``
table; :func:`sample_friction` draws :class:`~dyn_plugin.friction.parameters.FrictionModel`
samples within them.  The Monte-Carlo study built on them, its defaults (±20 %, assumed)
and its seeding are described in :mod:`dyn_plugin.studies.friction_monte_carlo`.
"""


from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Optional, Union

import numpy as np

from ..arrays import real_number
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
        text = {"relative": lambda: f"±{_percent(value)}" if real_number(value) else f"relative ±{shown}",
                "absolute": lambda: f"±{shown} (absolute)",
                "range": lambda: f"in [{_short(value[0])}, {_short(value[1])}]"}[self.kind]()
        return f"{text} {self.distribution}{' σ' if self.distribution == 'normal' else ''}"


def _short(value) -> str:
    if real_number(value):
        return f"{float(value):g}"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(_short(v) for v in value) + "]" if hasattr(value, "__iter__") else repr(value)


def _percent(value) -> str:
    return f"{100 * float(value):g} %"


def _as_spec(name: str, value, distribution: str) -> Optional[Spec]:
    if value is None or isinstance(value, Spec):
        return value
    if real_number(value) or (hasattr(value, "__iter__") and not isinstance(value, (str, bytes))):
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
    from ..friction.parameters import friction_file

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
            if not real_number(entry):
                raise ModelError(f"{label} of joint {key!r} must be a number, got {entry!r}")
            out[names.index(key)] = float(entry)
        return out
    if real_number(value):
        return np.full(n, float(value))
    entries = list(value) if hasattr(value, "__iter__") and not isinstance(value, (str, bytes)) else [value]
    bad = next((e for e in entries if not real_number(e)), None)
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
    from ..friction.models import EfficiencyCurve, VelocityFriction

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


def _check_counts(samples, seed, chunk_size) -> tuple:
    for name, value, least in (("samples", samples, 1), ("seed", seed, 0), ("chunk_size", chunk_size, 1)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < least:
            raise InputError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(samples), int(seed), int(chunk_size)


def _coerce_uncertainty(uncertainty) -> Uncertainty:
    if isinstance(uncertainty, Uncertainty):
        return uncertainty
    if isinstance(uncertainty, Mapping):
        return Uncertainty(uncertainty)
    raise ModelError(f"uncertainty must be an Uncertainty, a {{parameter: Spec or relative width}} mapping or None, "
                     f"got {uncertainty!r}")
