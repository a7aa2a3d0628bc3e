"""Joint friction models: functions of joint velocity (and of the joint reaction wrench
where a model needs it), with their parameters as small validated dataclasses.

Sign convention: a friction torque ``b`` opposes motion and is *added* on the torque side
of inverse dynamics, τ = M q̈ + h + b(q̇); so ``q̇ · b(q̇) ≥ 0`` for non-negative
parameters.  ``sgn(0) = 0`` throughout: at rest these functions give no friction, and the
set-valued stiction at q̇ = 0 is the job of forward dynamics and simulation
(:mod:`dyn_plugin.friction.stiction`).

Sources: R. J. Schilling, *Fundamentals of Robotics: Analysis and Control* (Prentice
Hall, 1990), eq. 6-3-3; Dhanaraj, *Parallel Processing of Manipulator Dynamics
Incorporating Frictional Effects* (M.Eng. thesis, Memorial University, 1990), chapter 3
(as cited in urdf/puma560.toml).

Models
------
* :class:`VelocityFriction` - viscous, asymmetric Coulomb and Schilling's decaying
  static term (Schilling eq. 6-3-3), sharp or smoothed (tanh of width ``smoothing``).
* Dhanaraj's joint (bearing) friction from the joint reaction force f and moment n in the
  joint frame, z along the axis (thesis §3.3, eqs. 3.1-3.5): :func:`journal_bearing`,
  :func:`journal_bearing_pair`, :func:`linear_bearing`, :func:`thrust_bearing`.
* Dhanaraj's transmission (harmonic drive) friction (§3.4, Table 3.2):
  :class:`EfficiencyCurve` and :func:`transmission_input_torque`.

The velocity-friction law itself, b = b_v q̇ + s(q̇) (L(q̇) + τ_B), is written once in
:mod:`.law` (numpy on arrays, numba per joint); this module holds the parameters.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Optional

import numpy as np

from ..arrays import as_batch, real_number
from ..errors import ModelError
from .law import direction, dry_level, friction_torque, parameter_table, sgn  # noqa: F401 (sgn: public here)


def joints_of(joints) -> tuple:
    """``(n, names)`` from a joint count (names None), a robot model or a sequence of joint names."""
    if isinstance(joints, (int, np.integer)) and not isinstance(joints, bool):
        return int(joints), None
    names = getattr(joints, "joint_names", joints)
    if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__"):
        raise ModelError(f"joints must be a joint count, a robot model or a sequence of joint names, got {joints!r}")
    names = tuple(names)
    if not all(isinstance(name, str) for name in names) or len(set(names)) != len(names):
        raise ModelError(f"joint names must be distinct strings, got {names!r}")
    return len(names), names


def joint_label(index: int, names: Optional[tuple]) -> str:
    """How a message names joint ``index``: ``joint 'elbow' (index 2)`` or ``joint index 2``."""
    return f"joint {names[index]!r} (index {index})" if names is not None else f"joint index {index}"


def _per_joint(name: str, value, n: Optional[int], minimum: float = 0.0, strict: bool = False,
               names: Optional[tuple] = None, default=None) -> np.ndarray:
    """One validated value per joint, (n,), from one number, a sequence of n numbers, or a
    dict ``{joint name: value}`` (needs ``names``; joints it leaves out get ``default``,
    one number or (n,), and without a default every joint must be given)."""
    if isinstance(value, Mapping):
        array = _from_names(name, value, n, names, default)
    else:
        try:
            raw = np.array(value, ndmin=1)
        except (TypeError, ValueError):
            raw = np.array([value, None], dtype=object)   # ragged: refused below
        if raw.dtype.kind not in "fiu":                   # text, booleans, complex, None: refused, not parsed
            flat = raw.ravel().tolist()                   # plain Python values, for the message
            index = next((i for i, entry in enumerate(flat) if not _real_number(entry)), None)
            if index is not None:
                where = f" of {joint_label(index, names)}" if raw.shape == (n,) else ""
                raise ModelError(f"friction parameter {name!r}{where} must be a number (one, or one per joint "
                                 f"({n})), got {flat[index]!r}")
        array = raw.astype(float)
    if n is not None and array.shape == (1,):
        array = np.full(n, array[0])
    if array.ndim != 1 or (n is not None and array.shape != (n,)):
        raise ModelError(f"friction parameter {name!r} must be one number or one per joint ({n}), got shape {array.shape}")
    bad = ~np.isfinite(array) | ((array <= minimum) if strict else (array < minimum))
    if bad.any():
        joint = int(np.argmax(bad))
        relation = ">" if strict else ">="
        raise ModelError(f"friction parameter {name!r} of {joint_label(joint, names)} must be finite and {relation} "
                         f"{minimum:g}, got {array[joint]}")
    return array


def _check_names(name: str, value: Mapping, names: Optional[tuple]) -> None:
    """Refuse a dict ``{joint name: value}`` when the joint names are unknown or it names others."""
    if names is None:
        raise ModelError(f"friction parameter {name!r} is given per joint name ({', '.join(map(repr, value))}) but "
                         f"the joint names are not known: pass the robot model or its joint names instead of a "
                         f"joint count (e.g. FrictionModel.create(model, ...)), or give a list in joint order")
    unknown = [key for key in value if key not in names]
    if unknown:
        raise ModelError(f"friction parameter {name!r} names unknown joint(s) {', '.join(map(repr, unknown))}; "
                         f"the robot's joints are {', '.join(map(repr, names))}")


def _from_names(name: str, value: Mapping, n: Optional[int], names: Optional[tuple], default) -> np.ndarray:
    _check_names(name, value, names)
    if default is None:
        missing = [joint for joint in names if joint not in value]
        if missing:
            raise ModelError(f"friction parameter {name!r} has no value for joint(s) {', '.join(map(repr, missing))}; "
                             f"give every joint of {', '.join(map(repr, names))}")
        array = np.zeros(n)
    else:
        array = np.array(np.broadcast_to(np.asarray(default, dtype=float), (n,)))
    for key, entry in value.items():
        index = names.index(key)
        if not _real_number(entry):
            raise ModelError(f"friction parameter {name!r} of {joint_label(index, names)} must be a number, "
                             f"got {entry!r}")
        array[index] = float(entry)
    return array


def _real_number(entry) -> bool:
    """True for a real number (float, int, numpy scalar, Fraction...): not text, bool, complex or None."""
    if entry is None or isinstance(entry, (bool, np.bool_, str, bytes, complex, np.complexfloating)):
        return False
    try:
        float(entry)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def _not_below(key: str, static: np.ndarray, coulomb_key: str, coulomb: np.ndarray, names,
               hint: Optional[str] = None) -> None:
    """Refuse a static (breakaway) level below the Coulomb (sliding) level of its direction."""
    below = static < coulomb
    if np.any(below):
        joint = int(np.argmax(below))
        raise ModelError(f"friction parameter {key!r} (the breakaway level at rest) of {joint_label(joint, names)} is "
                         f"{static[joint]:g}, below its Coulomb level {coulomb_key!r} = {coulomb[joint]:g}: a joint "
                         f"cannot break away at less torque than it slides with, the static level must be >= the "
                         f"Coulomb level ({hint or f'leave {key!r} out for no stiction peak'})")


@dataclasses.dataclass(frozen=True)
class VelocityFriction:
    """Velocity-dependent joint friction, one value per joint (arrays of shape (n,)).

    b(q̇) = b_v q̇ + s(q̇) [b_d + (b_s − b_d) exp(−|q̇|/ε)]    (Schilling eq. 6-3-3)

    with the dynamic (Coulomb) level b_d and the static level b_s taken from the
    ``*_positive`` parameters when q̇ > 0 and the ``*_negative`` ones when q̇ < 0 (an
    asymmetric Coulomb model, as Corke's PUMA), and s = sgn (sharp, ``smoothing = 0``) or
    s = tanh(q̇ / smoothing) (smooth, for optimisation and ODE integration).

    Special cases: viscous only (levels 0), Coulomb only (viscous 0, static = Coulomb).
    Units: viscous N·m·s/rad (N·s/m), levels N·m (N), ``stribeck_velocity`` and
    ``smoothing`` rad/s (m/s).
    """

    viscous: np.ndarray
    coulomb_positive: np.ndarray
    coulomb_negative: np.ndarray
    static_positive: np.ndarray
    static_negative: np.ndarray
    stribeck_velocity: np.ndarray
    smoothing: float = 0.0

    def __post_init__(self):
        for side in ("positive", "negative"):
            _not_below(f"static_{side}", np.asarray(getattr(self, f"static_{side}"), dtype=float),
                       f"coulomb_{side}", np.asarray(getattr(self, f"coulomb_{side}"), dtype=float), None,
                       "VelocityFriction.create defaults the static levels to the Coulomb ones")

    @classmethod
    def create(cls, n, viscous=0.0, coulomb=0.0, coulomb_negative=None, static=None,
               static_negative=None, stribeck_velocity=0.1, smoothing: float = 0.0) -> "VelocityFriction":
        """Validated parameters for ``n`` joints; scalars apply to every joint.

        ``n`` is the joint count, or the robot model (or its joint names): then any
        parameter may also be a dict ``{joint name: value}``, joints left out taking the
        parameter's default.  ``coulomb_negative`` defaults to ``coulomb`` (symmetric),
        ``static`` to ``coulomb`` (no stiction peak) and ``static_negative`` to ``static``
        if given, else to ``coulomb_negative``.  A static level below its Coulomb level (a
        breakaway torque smaller than the sliding one) is refused.
        """
        n, names = joints_of(n)
        if not (real_number(smoothing) and np.isfinite(smoothing) and smoothing >= 0):
            raise ModelError(f"friction smoothing width must be one finite number >= 0, got {smoothing!r}")
        coulomb = _per_joint("coulomb", coulomb, n, names=names, default=0.0)
        negative = _per_joint("coulomb_negative", coulomb if coulomb_negative is None else coulomb_negative, n,
                              names=names, default=coulomb)
        positive_static = _per_joint("static", coulomb if static is None else static, n, names=names, default=coulomb)
        # joints whose static level was given: their static_negative defaults to it, the others' to coulomb_negative
        given = np.zeros(n, bool) if static is None else (
            np.isin(names, list(static)) if isinstance(static, Mapping) else np.ones(n, bool))
        negative_static = _per_joint("static_negative", np.where(given, positive_static, negative)
                                     if static_negative is None else static_negative, n, names=names,
                                     default=np.where(given, positive_static, negative))
        _not_below("static", positive_static, "coulomb", coulomb, names)
        _not_below("static_negative", negative_static, "coulomb_negative", negative, names,
                   None if static_negative is not None else
                   "'static_negative' defaults to 'static': give 'static_negative' explicitly")
        return cls(
            viscous=_per_joint("viscous", viscous, n, names=names, default=0.0),
            coulomb_positive=coulomb,
            coulomb_negative=negative,
            static_positive=positive_static,
            static_negative=negative_static,
            stribeck_velocity=_per_joint("stribeck_velocity", stribeck_velocity, n, strict=True, names=names,
                                         default=0.1),
            smoothing=float(smoothing),
        )

    @property
    def n(self) -> int:
        return len(self.viscous)

    @functools.cached_property
    def table(self) -> np.ndarray:
        """The parameters as the (ROWS, n) table of the compiled law (:func:`parameter_table`)."""
        return parameter_table(self)

    def torque(self, qd: np.ndarray) -> np.ndarray:
        """Friction torque b(q̇), same shape as ``qd`` ((n,) or (N, n))."""
        qd, single = as_batch("qd", qd, self.n)
        torque = friction_torque(qd, self.table)
        return torque[0] if single else torque

    def levels(self, qd: np.ndarray) -> tuple:
        """Dry-friction levels (L⁺, L⁻) ≥ 0 for motion in the + and − direction at speed |q̇|.

        L± = b_d± + (b_s± − b_d±) exp(−|q̇|/ε) (:func:`dry_level`); at rest they are the
        static levels.
        """
        return (dry_level(qd, self.coulomb_positive, self.static_positive, self.stribeck_velocity),
                dry_level(qd, self.coulomb_negative, self.static_negative, self.stribeck_velocity))

    def dry_torque(self, qd: np.ndarray) -> np.ndarray:
        """The Coulomb + static part alone: s(q̇) L(q̇), with the level of the motion's direction."""
        return friction_torque(qd, self.table, viscous=False)

    @property
    def has_dry_friction(self) -> bool:
        return bool(np.any(self.coulomb_positive > 0) or np.any(self.coulomb_negative > 0)
                    or np.any(self.static_positive > 0) or np.any(self.static_negative > 0))

    def breakaway(self, sign: np.ndarray) -> np.ndarray:
        """Static level b_s for a motion starting in ``direction`` (> 0 or < 0), (n,)."""
        return np.where(np.asarray(sign) > 0, self.static_positive, self.static_negative)


# -- Dhanaraj's joint (bearing) friction: magnitudes from the joint reaction wrench ---------


def _xy(v: np.ndarray):
    v = np.asarray(v, dtype=float)
    return v[..., 0], v[..., 1]


def journal_bearing(force: np.ndarray, mu: float, radius: float) -> np.ndarray:
    """|τ_f| = μ r |F_N| with the radial load F_N = √(f_x² + f_y²)  (Dhanaraj eqs. 3.1-3.2)."""
    fx, fy = _xy(force)
    return mu * radius * np.hypot(fx, fy)


def journal_bearing_pair(force: np.ndarray, moment: np.ndarray, mu: float, radius: float, spacing: float,
                         printed: bool = False) -> np.ndarray:
    """Two journal bearings ``spacing`` apart carrying a radial force and a bending moment.

    Statics of the pair gives the bearing loads F_A,B = ½ f⊥ ± (ẑ × n⊥)/d, and
    |τ_f| = μ r (|F_A| + |F_B|): invariant under rotation of the load about the axis.
    ``printed=True`` reproduces Dhanaraj's eq. 3.3 as printed, whose pairing of n_x and n_y
    with f_x, f_y is *not* rotation invariant (turning the load about the axis changes it:
    tests/test_friction_models.py); use it only to compare with the thesis.
    """
    fx, fy = _xy(force)
    nx, ny = _xy(moment)
    half_d = 0.5 * spacing
    if printed:
        return mu * radius / spacing * (np.hypot(half_d * fx - ny, half_d * fy - nx)
                                        + np.hypot(half_d * fx + ny, half_d * fy + nx))
    return mu * radius / spacing * (np.hypot(half_d * fx - ny, half_d * fy + nx)
                                    + np.hypot(half_d * fx + ny, half_d * fy - nx))


def linear_bearing(force: np.ndarray, moment: np.ndarray, mu: float, spacing: float) -> np.ndarray:
    """Prismatic joint on a linear bearing: a force (N)  (Dhanaraj eq. 3.4).

    |f_f| = (μ/d) [|½d f_x − n_y| + |½d f_y − n_x| + |½d f_x + n_y| + |½d f_y + n_x|]
    """
    fx, fy = _xy(force)
    nx, ny = _xy(moment)
    half_d = 0.5 * spacing
    return mu / spacing * (np.abs(half_d * fx - ny) + np.abs(half_d * fy - nx)
                           + np.abs(half_d * fx + ny) + np.abs(half_d * fy + nx))


def thrust_bearing(force: np.ndarray, mu: float, radius: float) -> np.ndarray:
    """|τ_f| = μ r |f_z|, the axial load  (Dhanaraj eq. 3.5, Table 3.1; the text's f_x is a typo)."""
    return mu * radius * np.abs(np.asarray(force, dtype=float)[..., 2])


# -- Dhanaraj's transmission friction ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class EfficiencyCurve:
    """Transmission efficiency η as a function of the load ratio |τ_out| / τ_rated.

    Given as a table (``load_ratio`` strictly increasing, ``efficiency`` in (0, 1]),
    interpolated linearly or by a cubic spline (Dhanaraj §3.4 allows either), and held
    at the end values outside the table.
    """

    load_ratio: np.ndarray
    efficiency: np.ndarray
    kind: str = "linear"

    def __post_init__(self):
        try:
            x, y = (np.asarray(table, dtype=float) for table in (self.load_ratio, self.efficiency))
        except (TypeError, ValueError):
            raise ModelError(f"efficiency curve tables must be numbers, got load_ratio {self.load_ratio!r} and "
                             f"efficiency {self.efficiency!r}") from None
        if x.ndim != 1 or x.shape != y.shape or len(x) < 2:
            raise ModelError(f"efficiency curve needs two 1-D tables of equal length >= 2, got {x.shape} and {y.shape}")
        if not np.all(np.diff(x) > 0):
            raise ModelError(f"efficiency curve: load ratios must be strictly increasing, got {x.tolist()}")
        if not np.all((y > 0) & (y <= 1)):
            raise ModelError(f"efficiency curve: every efficiency must lie in (0, 1], got {y.tolist()}")
        if self.kind not in ("linear", "cubic"):
            raise ModelError(f"efficiency curve kind must be 'linear' or 'cubic', got {self.kind!r}")
        object.__setattr__(self, "load_ratio", x)
        object.__setattr__(self, "efficiency", y)
        if self.kind == "cubic":
            from scipy.interpolate import CubicSpline

            object.__setattr__(self, "_spline", CubicSpline(x, y))

    def __call__(self, ratio: np.ndarray) -> np.ndarray:
        # np.clip's result, without its ~5 µs of Python around a small array
        ratio = np.minimum(np.maximum(np.asarray(ratio, dtype=float), self.load_ratio[0]), self.load_ratio[-1])
        if self.kind == "linear":
            return np.interp(ratio, self.load_ratio, self.efficiency)
        return np.clip(self._spline(ratio), self.efficiency.min(), 1.0)  # a spline may overshoot the table


def transmission_input_torque(tau_out: np.ndarray, qd: np.ndarray, curve: EfficiencyCurve,
                              rated_torque: np.ndarray, breakaway: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    """Input torque τ_in (output side) that delivers τ_out through the transmission.

    Dhanaraj Table 3.2, with η = η(|τ_out| / τ_rated) and the breakaway torque τ_B:

    * driving (τ_out q̇ > 0):      τ_in = τ_out / η + sgn(q̇) τ_B   (cases 1, 2)
    * back-driven (τ_out q̇ < 0):  τ_in = τ_out · η + sgn(q̇) τ_B   (cases 3, 4)

    written as one formula, τ_in = τ_out η^(−s) + d τ_B with d = sgn(q̇) and
    s = d sgn(τ_out).  At q̇ = 0 (undefined in the thesis) s = d = 0: no loss.  With
    ``smoothing > 0``, d = tanh(q̇ / smoothing) and the loss fades in continuously.
    The transmission friction torque is τ_f^T = τ_in − τ_out.
    """
    tau_out = np.asarray(tau_out, dtype=float)
    d = direction(np.asarray(qd, dtype=float), smoothing)
    return tau_out * efficiency_factor(tau_out, d, curve, rated_torque) + d * breakaway


def efficiency_factor(tau_out, d, curve: EfficiencyCurve, rated_torque) -> np.ndarray:
    """η^(−s), s = d sgn(τ_out): 1/η when driving, η when back-driven, 1 at rest."""
    eta = curve(np.abs(tau_out) / rated_torque)
    return eta ** (-d * sgn(tau_out))


INVERSE_STEPS = 100
"""At most this many steps of :func:`_inverse_efficiency` (a few Newton steps suffice; a
bisection step halves a bracket 1/η_min² wide, 10⁴ at η = 1 %)."""


def _inverse_efficiency(tau_in, d, curve: EfficiencyCurve, rated_torque) -> np.ndarray:
    """τ_out with τ_out · efficiency_factor(τ_out, d) = τ_in, one joint, arrays of any shape:
    |τ_out| in the bracket [|τ_in| η_min, |τ_in| / η_min] (the factor lies in [η_min, 1/η_min]),
    by Newton's method on the side of 0 that τ_in is on, bisecting where a step would leave
    the bracket, until the bracket or the residual is at rounding."""
    target, sign = np.abs(tau_in), np.where(tau_in < 0, -1.0, 1.0)
    low, high = target * curve.efficiency.min(), target / curve.efficiency.min()

    def excess(u):
        return u * efficiency_factor(sign * u, d, curve, rated_torque) - target
    u = 0.5 * (low + high)
    for _ in range(INVERSE_STEPS):
        g = excess(u)
        low, high = np.where(g < 0, u, low), np.where(g > 0, u, high)
        if np.all((np.abs(g) <= 4e-16 * target) | (high - low <= 4e-16 * high)):
            break
        h = 1e-7 * np.maximum(u, 1e-300)
        slope = (excess(u + h) - g) / h
        newton = np.where(slope > 0, u - g / np.where(slope > 0, slope, 1.0), -1.0)
        u = np.where((newton > low) & (newton < high), newton, 0.5 * (low + high))
    return sign * u


# -- per-joint parameter sets -------------------------------------------------------------

BEARINGS = ("none", "journal", "journal_pair", "linear", "thrust")


@dataclasses.dataclass(frozen=True)
class BearingFriction:
    """Dhanaraj's joint friction, one bearing per joint (thesis Table 3.1).

    ``kinds[i]`` is one of ``BEARINGS``: ``journal`` (μ r |F_N|), ``journal_pair`` (two
    journals ``spacing`` apart, radial force and bending moment), ``thrust`` (μ r |f_z|),
    ``linear`` (prismatic joints, μ/d Σ|…|, a force) or ``none``.  μ is dimensionless,
    ``radius`` and ``spacing`` in m.  ``printed=True`` uses eq. 3.3 as printed (not
    rotation invariant; see :func:`journal_bearing_pair`).
    """

    kinds: tuple
    mu: np.ndarray
    radius: np.ndarray
    spacing: np.ndarray
    printed: bool = False

    @classmethod
    def create(cls, n, kinds, mu, radius=0.0, spacing=0.0, printed: bool = False) -> "BearingFriction":
        """``n``: the joint count, or the robot model (or its joint names), with which every
        argument may also be a dict ``{joint name: value}`` (joints left out: kind "none",
        numbers 0)."""
        n, names = joints_of(n)
        if isinstance(kinds, Mapping):
            _check_names("bearing kind", kinds, names)
            kinds = tuple(kinds.get(joint, "none") for joint in names)
        if not isinstance(kinds, (str, list, tuple)) or not all(isinstance(k, str) for k in kinds):
            raise ModelError(f"bearing kinds must be one name or one per joint ({n}) among {', '.join(BEARINGS)}, "
                             f"got {kinds!r}")
        if not isinstance(printed, (bool, np.bool_)):
            raise ModelError(f"bearing printed must be true or false, got {printed!r}")
        kinds = (kinds,) * n if isinstance(kinds, str) else tuple(kinds)
        if len(kinds) != n:
            raise ModelError(f"bearing kinds must be one name or one per joint ({n}), got {len(kinds)}")
        unknown = [(i, k) for i, k in enumerate(kinds) if k not in BEARINGS]
        if unknown:
            raise ModelError(f"unknown bearing kind {unknown[0][1]!r} for {joint_label(unknown[0][0], names)}; "
                             f"choose from {', '.join(BEARINGS)}")
        bearing = cls(kinds, _per_joint("bearing mu", mu, n, names=names, default=0.0),
                      _per_joint("bearing radius", radius, n, names=names, default=0.0),
                      _per_joint("bearing spacing", spacing, n, names=names, default=0.0), bool(printed))
        for i, kind in enumerate(kinds):
            if kind in ("journal", "journal_pair", "thrust") and bearing.radius[i] <= 0:
                raise ModelError(f"{joint_label(i, names)}: a {kind} bearing needs a journal radius > 0")
            if kind in ("journal_pair", "linear") and bearing.spacing[i] <= 0:
                raise ModelError(f"{joint_label(i, names)}: a {kind} bearing needs a bearing spacing > 0")
        return bearing

    @property
    def n(self) -> int:
        return len(self.kinds)

    def magnitude(self, force: np.ndarray, moment: np.ndarray) -> np.ndarray:
        """|τ_f^J| (N, n) from the joint reaction force and moment (N, n, 3), joint frames."""
        out = np.zeros(force.shape[:-1])
        kinds = np.array(self.kinds)
        for kind in dict.fromkeys(self.kinds):       # the joints of one kind at once, entry by entry as one by one
            i = np.flatnonzero(kinds == kind)
            f, m, mu, r, d = force[..., i, :], moment[..., i, :], self.mu[i], self.radius[i], self.spacing[i]
            if kind == "journal":
                out[..., i] = journal_bearing(f, mu, r)
            elif kind == "journal_pair":
                out[..., i] = journal_bearing_pair(f, m, mu, r, d, printed=self.printed)
            elif kind == "linear":
                out[..., i] = linear_bearing(f, m, mu, d)
            elif kind == "thrust":
                out[..., i] = thrust_bearing(f, mu, r)
        return out


@dataclasses.dataclass(frozen=True)
class TransmissionFriction:
    """Dhanaraj's transmission friction per joint: efficiency curve, rated and breakaway torque.

    ``curves[i]`` is an :class:`EfficiencyCurve` or ``None`` (η = 1: breakaway only);
    ``rated_torque`` (N·m or N, > 0 where a curve is given) scales the curve's abscissa |τ_out| / τ_rated;
    ``breakaway`` τ_B ≥ 0.
    """

    curves: tuple
    rated_torque: np.ndarray
    breakaway: np.ndarray

    @classmethod
    def create(cls, n, curves, rated_torque, breakaway=0.0) -> "TransmissionFriction":
        """``n``: the joint count, or the robot model (or its joint names), with which every
        argument may also be a dict ``{joint name: value}`` (joints left out: no curve,
        numbers 0)."""
        n, names = joints_of(n)
        if isinstance(curves, Mapping):
            _check_names("efficiency curve", curves, names)
            curves = tuple(curves.get(joint) for joint in names)
        curves = (curves,) * n if curves is None or isinstance(curves, EfficiencyCurve) else tuple(curves)
        if len(curves) != n:
            raise ModelError(f"transmission needs one efficiency curve (or None) per joint ({n}), got {len(curves)}")
        for i, curve in enumerate(curves):
            if curve is not None and not isinstance(curve, EfficiencyCurve):
                raise ModelError(f"{joint_label(i, names)}: efficiency curve must be an EfficiencyCurve or None, "
                                 f"got {curve!r}")
        rated = _per_joint("rated_torque", rated_torque, n, names=names, default=0.0)
        for i, curve in enumerate(curves):
            if curve is not None and rated[i] <= 0:
                raise ModelError(f"{joint_label(i, names)}: an efficiency curve needs a rated torque > 0, got {rated[i]}")
        return cls(curves, rated, _per_joint("breakaway", breakaway, n, names=names, default=0.0))

    @property
    def n(self) -> int:
        return len(self.curves)

    def factor(self, tau_out: np.ndarray, d: np.ndarray) -> np.ndarray:
        """η^(−s) per joint, (N, n) (see :func:`efficiency_factor`)."""
        out = np.ones(np.shape(tau_out))
        for i, curve in enumerate(self.curves):
            if curve is not None:
                out[..., i] = efficiency_factor(tau_out[..., i], d[..., i], curve, self.rated_torque[i])
        return out

    def output_torque(self, tau_in: np.ndarray, d: np.ndarray) -> np.ndarray:
        """τ_out (N, n) with τ_out η^(−s) = ``tau_in`` (without the breakaway), per joint: the
        inverse of :meth:`factor`'s map.  The factor is positive, so sgn τ_out = sgn τ_in, and
        lies in [η_min, 1/η_min]: |τ_out| is bracketed by |τ_in| η_min and |τ_in| / η_min and
        found to rounding (:func:`_inverse_efficiency`)."""
        out = np.array(tau_in, dtype=float)
        for i, curve in enumerate(self.curves):
            if curve is not None:
                out[..., i] = _inverse_efficiency(out[..., i], d[..., i], curve, self.rated_torque[i])
        return out

    def slope(self, tau_out: np.ndarray, d: np.ndarray) -> np.ndarray:
        """∂(τ_out η^(−s))/∂τ_out per joint, (N, n): a difference on τ_out's own side of the
        kink at 0 (slopes 1/η and η meet there; the side of +0 at 0), so that every joint
        takes one branch's slope (a difference across the kink mixes the two)."""
        out = np.ones(np.shape(tau_out))
        for i, curve in enumerate(self.curves):
            if curve is not None:
                x, di = tau_out[..., i], d[..., i]
                h = np.where(x < 0, -1.0, 1.0) * 1e-7 * np.maximum(1.0, np.abs(x))
                y = x + h
                out[..., i] = (y * efficiency_factor(y, di, curve, self.rated_torque[i])
                               - x * efficiency_factor(x, di, curve, self.rated_torque[i])) / h
        return out

    def input_torque(self, tau_out: np.ndarray, qd: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
        """τ_in (N, n) for output torques τ_out and velocities q̇ (N, n): Table 3.2, per joint."""
        d = direction(qd, smoothing)
        return tau_out * self.factor(tau_out, d) + d * self.breakaway
