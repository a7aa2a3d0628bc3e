"""Fitting a friction law (:mod:`.laws`) to the measured friction of one joint.

:func:`fit_friction` takes the velocities q̇ (N,) rad/s and friction torques τ (N,) N·m
of one joint (and the sample times t (N,) s, which the dynamic laws need) and returns a
:class:`FrictionFit`: the law's parameters in SI units, the RMS error on the fitted data,
and ``predict`` for other data.

How (so that it works whatever the units and scales of the data, a joint that stays
within ±0.01 rad/s as well as one at 3 rad/s with 10 N·m):

* every parameter is optimised nondimensionalised by the data's scales, the RMS torque T,
  the RMS velocity V and the displacement of one sample Z = V × median step (levels
  over T, viscous coefficients over T/V, stiffnesses over T/Z), the scale-like ones
  (``positive``: v_S, σ0, φ2) as logarithms; the residual is (τ_model − τ)/T;
* scipy.optimize.least_squares (trust-region reflective) with bounds: levels, σ0, σ1 and
  the bristle laws' viscous σ2 ≥ 0, F_S ≥ F_C; φ3, ``offset`` and the static laws'
  viscous slope free (:mod:`.laws` says why);
* seeds from the data: the Coulomb-viscous fit by linear least squares with F_C ≥ 0
  (scipy.optimize.lsq_linear; F_v ≥ 0 too for a bristle law), which the other laws
  contain (F_S = F_C; σ0 large), then a few deterministic restarts over the scale-like
  parameters; LuGre also starts from the fitted Stribeck and Dahl laws, which it contains,
  so that its fit is never worse than Dahl's.  The best restart wins.

What the measured friction of a Franka joint 2 at three speeds showed (the NNFM
comparative data, tests/data/README.md), and so what the laws leave out:

* ``offset=True`` adds a constant τ_0 (N·m) to the law.  It is off by default: the runs
  carry a constant that changes sign from run to run (fitted with Coulomb-viscous:
  −0.17, +0.29, −0.07 N·m), so it belongs to the run (a torque-sensor bias, a model
  error), not to the joint, and a law fitted with it on the slow run predicts the other
  runs worse (RMS 0.544 instead of 0.386 N·m on the middle run).
* The position q is not used.  The runs do show a ripple in q of period ≈ 0.026 rad
  (0.06-0.17 N·m), but a ripple fitted on the slow run moves the RMS of the middle and
  high runs by at most ±0.003 N·m, up or down with the period taken (0.024-0.030 rad:
  its phase does not carry over), and a gravity-like dependence on q fitted there makes
  them worse (0.50 and 0.43 N·m against 0.39 and 0.40 without).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np
from scipy.optimize import least_squares, lsq_linear

from ..errors import InputError, NumericalError, argument
from .laws import FRICTION_LAWS, LAWS, OFFSET, SLOPE, STIFFNESS, TORQUE, VELOCITY, VISCOUS, Law, evaluate

_LOG_BOUND = 60.0          # |log(value/scale)| of a positive parameter: e^60 ~ 1e26, finite
_FLOOR = 1e-9              # the lower bound of a "floor" parameter, in its scale
_TOLERANCE = 1e-10         # least_squares ftol, xtol, gtol
_EVALUATIONS = 400         # least_squares max_nfev per restart


@dataclasses.dataclass(frozen=True)
class FrictionFit:
    """A friction law fitted to one joint's data.

    law : the law's name (:data:`FRICTION_LAWS`)
    params : {name: value}, SI units (:mod:`.laws` lists the names and units)
    rms : RMS of predict − τ on the fitted data, N·m
    samples : how many samples it was fitted on
    undetermined : the parameters the data do not determine (:func:`undetermined`): their
        values are arbitrary, e.g. a Stribeck hump narrower than any sample's speed
    """

    law: str
    params: dict
    rms: float
    samples: int
    undetermined: tuple = ()

    def predict(self, qd, t=None, q=None) -> np.ndarray:
        """The law's friction τ (N,) N·m at the velocities ``qd`` (N,) rad/s; a dynamic law
        needs the times ``t`` (N,) s, strictly increasing, and starts from the steady bristle
        deflection of the first sample.  ``q`` (N,) rad is checked and not used (no law here
        depends on the position)."""
        law = LAWS[self.law]
        qd, t = _checked(law, qd, t=t, q=q)
        return _finite_torque(law, self.params, qd, t)

    def to_dict(self) -> dict:
        """The fit as plain JSON values: law, citation, params, units, rms (N·m), samples,
        undetermined (a list of parameter names)."""
        law = LAWS[self.law]
        units = {p.name: p.unit for p in law.parameters + (OFFSET,) if p.name in self.params}
        return {"law": self.law, "citation": law.citation, "params": dict(self.params), "units": units,
                "rms": self.rms, "samples": self.samples, "undetermined": list(self.undetermined)}


def fit_friction(qd, tau, law: str = "coulomb_viscous", t=None, q=None, offset: bool = False) -> FrictionFit:
    """Fit ``law`` to one joint's friction: ``qd`` (N,) rad/s, ``tau`` (N,) N·m, and for the
    dynamic laws (``dahl``, ``lugre``) ``t`` (N,) s, strictly increasing.  ``q`` (N,) rad is
    checked and not used.  ``offset`` adds a constant τ_0 to the law (see the module's
    docstring for why it is off by default).  One joint at a time: fit the columns of an
    (N, n) log one by one.  Refused (InputError): an unknown law, arrays that are not 1-D,
    lengths that disagree, NaN or inf, fewer than 2 p + 1 samples for p parameters, t missing
    for a dynamic law or not strictly increasing, q̇ zero everywhere, ``offset`` with q̇ of
    one sign only."""
    spec = _law(law)
    qd, t = _checked(spec, qd, t=t, q=q)
    tau = _vector("tau", tau, qd.shape[0])
    if not np.any(qd):
        raise InputError("qd is zero at every sample: a friction law of the velocity cannot be fitted without motion")
    if offset and not (np.any(qd > 0) and np.any(qd < 0)):
        side = "positive" if np.any(qd > 0) else "negative"
        raise InputError(f"{argument('offset', True)} needs motion both ways: q̇ is {side} or zero at every sample, where the "
                         f"law's Coulomb level and a constant offset are the same torque (a fit would trade one "
                         f"for the other without bound); fit without the offset or record both directions")
    _require_two_speeds(spec, qd, offset)
    parameters = spec.parameters + ((OFFSET,) if offset else ())
    if qd.shape[0] < 2 * len(parameters) + 1:
        raise InputError(f"{law} has {len(parameters)} parameters: fitting it needs at least "
                         f"{2 * len(parameters) + 1} samples, got {qd.shape[0]}")
    problem = _Problem(spec, parameters, qd, tau, t)
    x = problem.best_x([problem.to_x(seed) for seed in _seeds(problem)])
    params = problem.params(x)
    rms = root_mean_square(_finite_torque(spec, params, qd, t) - tau)
    return FrictionFit(law, params, rms, int(qd.shape[0]), undetermined(problem, x))


def undetermined_note(fit: dict) -> str:
    """The undetermined parameters of ``fit`` (a :meth:`FrictionFit.to_dict`) with their values
    in a sentence, or "" when there are none."""
    names = fit["undetermined"]
    if not names:
        return ""
    values = ", ".join(f"{name} = {fit['params'][name]:.3g} {fit['units'][name]}" for name in names)
    return (f"{values} {'is' if len(names) == 1 else 'are'} not determined by the data (any other value fits as "
            "well: FrictionFit.undetermined)")


UNSEEN = 1e-6
"""A parameter is undetermined when a unit step of its scaled coordinate moves the predicted
torque by less than UNSEEN times the data's RMS torque (:func:`undetermined`)."""


def undetermined(problem: "_Problem", x: np.ndarray) -> tuple:
    """The names of the parameters that the data do not determine at the fit x, alone or
    together: a step of one unit of the fit's scaled coordinates (a level by the RMS torque
    T, a viscous coefficient by T/V, a positive parameter by a factor e; see the module's
    docstring) that moves the predicted torque by less than UNSEEN T (RMS over the samples).
    Alone: one parameter's step up and, within its bound, down (seen on the Franka joint's
    high-speed run: LuGre with F_S = 310 N·m at v_S = 3e-13 rad/s, a static hump that no
    sample's speed comes near).  Together: a direction of the Jacobian's null space
    (singular values below UNSEEN √N), naming the parameters with a component of 0.1 or
    more in it, each parameter in its own scale (:meth:`_Problem.parameter_change`; seen: a
    Stribeck law on data at two speeds, |q̇| = 0.1 and 0.3 rad/s, fitted exactly by a family
    of four parameters).  A local test: it does not see a value that only a distant change
    of another parameter would make arbitrary."""
    lower, upper = problem.bounds()
    at_fit = problem.residual(x)          # (τ_model − τ)/T: a difference of two is the predictions' over T
    names = set()
    for i, parameter in enumerate(problem.parameters):
        moved = []
        for step in (1.0, -1.0):
            y = x.copy()
            y[i] = np.clip(x[i] + step, lower[i], upper[i])
            if y[i] != x[i]:
                moved.append(root_mean_square(problem.residual(y) - at_fit))
        if moved and max(moved) < UNSEEN:
            names.add(parameter.name)
    _, singular, directions = np.linalg.svd(_jacobian(problem, x, at_fit, lower, upper), full_matrices=False)
    for value, direction in zip(singular, directions):
        if value < UNSEEN * np.sqrt(len(at_fit)):
            change = problem.parameter_change(direction)
            names |= {p.name for p, component in zip(problem.parameters, change) if abs(component) >= 0.1}
    return tuple(p.name for p in problem.parameters if p.name in names)


def _jacobian(problem: "_Problem", x, at_fit, lower, upper, step: float = 1e-6) -> np.ndarray:
    """∂ residual / ∂x (N, p) by forward differences, each step taken inside the bounds."""
    columns = []
    for i in range(len(x)):
        h = step if x[i] + step <= upper[i] else -step
        y = x.copy()
        y[i] = max(x[i] + h, lower[i])
        columns.append((problem.residual(y) - at_fit) / (y[i] - x[i]))
    return np.column_stack(columns)


def _require_two_speeds(spec, qd: np.ndarray, offset: bool) -> None:
    """Refuse a law with a Coulomb level and a viscous slope where every moving sample has
    the same speed |q̇| (or, with an ``offset``, one speed in each direction): there sgn(q̇),
    q̇ (and 1) are linearly dependent (their columns' condition number above 1e8), and a fit
    would trade one for the other without bound (seen: F_C = 1.4e11, F_v = −2.8e12 from
    q̇ = 0.05 rad/s, predicting −1.3e12 N·m at 0.5 rad/s; with an offset, q̇ = +0.1 and −0.3
    rad/s: F_C = 5.5e9, predicting −1.1e10 N·m at 0.5 rad/s)."""
    names = {p.name for p in spec.parameters}
    if not {"coulomb", "viscous"} <= names:
        return
    columns = [np.sign(qd), qd / np.max(np.abs(qd))] + ([np.ones_like(qd)] if offset else [])
    if np.linalg.cond(np.column_stack(columns)) <= 1e8:
        return
    if not offset:
        speed = float(np.max(np.abs(qd)))
        raise InputError(f"q̇ has one speed, |q̇| = {speed:.6g} rad/s, at every moving sample: there the Coulomb "
                         f"level and the viscous slope of {spec.name} give the same torque, and a fit would trade one "
                         "for the other without bound; record the joint at two speeds or more")
    speeds = ", ".join(f"{float(np.max(np.abs(qd[side]))):.6g} rad/s {name}"
                       for side, name in ((qd > 0, "forward"), (qd < 0, "backward")))
    raise InputError(f"q̇ has one speed in each direction ({speeds}): there the Coulomb level, the viscous slope of "
                     f"{spec.name} and the offset give the same torques in many combinations, and a fit would trade "
                     "them without bound; record the joint at two speeds or more in a direction, or fit without "
                     "the offset")


def root_mean_square(x: np.ndarray) -> float:
    """√(mean x²) of a finite array, without overflow for entries near the float range."""
    largest = float(np.max(np.abs(x))) if x.size else 0.0
    return largest * float(np.sqrt(np.mean((x / largest) ** 2))) if largest > 0 else 0.0


# -- the problem, nondimensionalised --------------------------------------------------------

class _Problem:
    """One law on one data set, in nondimensional coordinates x (see the module's docstring)."""

    def __init__(self, law: Law, parameters: tuple, qd, tau, t):
        self.law, self.parameters, self.qd, self.tau, self.t = law, parameters, qd, tau, t
        self.torque_scale = root_mean_square(tau) or 1.0
        self.velocity_scale = root_mean_square(qd)
        step = float(np.median(np.diff(t))) if t is not None else 1.0
        self.angle_scale = self.velocity_scale * step
        units = {TORQUE: self.torque_scale, VELOCITY: self.velocity_scale,
                 VISCOUS: self.torque_scale / self.velocity_scale, STIFFNESS: self.torque_scale / self.angle_scale,
                 SLOPE: 1.0 / self.velocity_scale}
        self.scales = np.array([units[p.scale] for p in parameters])
        if not all(np.isfinite(unit) and unit > 0 for unit in units.values()):      # the seeds use them all
            sampled = f", median sample step {step:.3g} s" if t is not None else ""
            raise InputError(f"the data's scales overflow float64: RMS torque T = {self.torque_scale:.3g} N·m, RMS "
                             f"speed V = {self.velocity_scale:.3g} rad/s{sampled}: T/V or another parameter scale is "
                             "beyond 1e308 or 0; give the data in other units")

    def params(self, x: np.ndarray) -> dict:
        """{name: SI value} at x."""
        values = {}
        for p, xi, scale in zip(self.parameters, x, self.scales):
            if p.bound == "positive":
                values[p.name] = float(scale * np.exp(xi))
            elif p.bound.startswith("above:"):
                values[p.name] = float(values[p.bound[len("above:"):]] + scale * xi)
            else:
                values[p.name] = float(scale * xi)
        return values

    def to_x(self, params: dict) -> np.ndarray:
        """x of ``params`` (the inverse of :meth:`params`), clipped into the bounds."""
        x = []
        for p, scale in zip(self.parameters, self.scales):
            value = params[p.name]
            if p.bound == "positive":
                x.append(np.clip(np.log(max(value, 1e-300) / scale), -_LOG_BOUND, _LOG_BOUND))
            elif p.bound.startswith("above:"):
                x.append(max((value - params[p.bound[len("above:"):]]) / scale, 0.0))
            else:
                x.append(value / scale if p.bound == "free" else max(value / scale, _FLOOR))
        return np.array(x, dtype=float)

    def parameter_change(self, dx: np.ndarray) -> np.ndarray:
        """The change of each parameter, in its own scale (its unit, or its logarithm for a
        positive one), along a change ``dx`` of x: x's coordinate of a parameter bounded
        ``above:`` another is the excess over it, so that one moves with the other (F_S − F_C
        down as F_C goes up leaves F_S where it is)."""
        index = {p.name: i for i, p in enumerate(self.parameters)}
        change = np.array(dx, dtype=float)
        for i, p in enumerate(self.parameters):
            if p.bound.startswith("above:"):
                change[i] += dx[index[p.bound[len("above:"):]]]
        return change

    def bounds(self) -> tuple:
        lower = [{"positive": -_LOG_BOUND, "free": -np.inf, "floor": _FLOOR}.get(p.bound, 0.0)
                 for p in self.parameters]
        upper = [_LOG_BOUND if p.bound == "positive" else np.inf for p in self.parameters]
        return np.array(lower), np.array(upper)

    def residual(self, x: np.ndarray) -> np.ndarray:
        """(τ_model − τ)/T (N,); a parameter set whose torque overflows gets a large finite residual."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            torque = evaluate(self.law, self.params(x), self.qd, self.t)
        residual = (torque - self.tau) / self.torque_scale
        return np.where(np.isfinite(residual), residual, 1e150)

    def cost(self, x: np.ndarray) -> float:
        return float(np.sum(self.residual(x) ** 2))

    def best(self, starts: list) -> dict:
        """The parameters of the best least-squares fit over the starting points ``starts``."""
        return self.params(self.best_x(starts))

    def best_x(self, starts: list) -> np.ndarray:
        """x of the best least-squares fit over the starting points ``starts``."""
        lower, upper = self.bounds()
        best_x, best_cost = None, np.inf
        for x0 in starts:
            x0 = np.clip(x0, lower, upper)
            result = least_squares(self.residual, x0, bounds=(lower, upper), method="trf", ftol=_TOLERANCE,
                                   xtol=_TOLERANCE, gtol=_TOLERANCE, max_nfev=_EVALUATIONS)
            cost = self.cost(result.x)
            if cost < best_cost:
                best_x, best_cost = result.x, cost
        return best_x

    def sub(self, name: str) -> "_Problem":
        """The same data and offset setting for another law (a seed of this one)."""
        law = LAWS[name]
        extra = tuple(p for p in self.parameters if p is OFFSET)
        return _Problem(law, law.parameters + extra, self.qd, self.tau, self.t)


# -- seeds --------------------------------------------------------------------------------

def _coulomb_viscous_seed(problem: _Problem) -> dict:
    """F_C, F_v ≥ 0 (and a free offset) by linear least squares (scipy.optimize.lsq_linear), in scaled columns."""
    T, V = problem.torque_scale, problem.velocity_scale
    columns = [np.sign(problem.qd), problem.qd / V]
    viscous = next((p for p in problem.parameters if p.name == "viscous"), None)
    lower = [0.0, -np.inf if viscous is not None and viscous.bound == "free" else 0.0]
    with_offset = OFFSET in problem.parameters
    if with_offset:
        columns.append(np.ones_like(problem.qd))
        lower.append(-np.inf)
    solution = lsq_linear(np.column_stack(columns), problem.tau / T, bounds=(lower, np.inf), method="bvls").x
    seed = {"coulomb": T * solution[0], "viscous": T / V * solution[1]}
    if with_offset:
        seed["offset"] = T * solution[2]
    return seed


def _seeds(problem: _Problem) -> list:
    """Deterministic starting points of ``problem``'s law (dicts of SI values)."""
    base = _coulomb_viscous_seed(problem)
    T, V, Z = problem.torque_scale, problem.velocity_scale, problem.angle_scale
    level = max(base["coulomb"], 1e-3 * T)     # a positive Coulomb level for the laws that need one
    name = problem.law.name
    if name == "coulomb_viscous":
        return [base]
    if name in ("schilling", "stribeck"):
        return _hump_seeds(problem) + [dict(base, coulomb=c, static=s, stribeck_velocity=v)
                                       for c, s in ((level, level), (0.7 * level, 1.3 * level)) for v in (0.03 * V, 0.3 * V)]
    if name == "sigmoid":
        return [dict(base, phi1=2.0 * (level + base["viscous"] * V), phi2=4.0 / (w * V), phi3=0.0)
                for w in (0.03, 0.3, 3.0)]
    if name == "dahl":
        return [dict(base, coulomb=level, sigma0=level / (k * Z)) for k in (0.1, 3.0, 100.0)]
    return _lugre_seeds(problem)


HUMP_GRID = 31
"""Stribeck velocities tried by :func:`_hump_seeds`, log-spaced from V/100 to 10 V."""


def _hump_seeds(problem: _Problem) -> list:
    """Schilling's and Stribeck's laws at a given v_S are linear in F_C, F_S − F_C ≥ 0, F_v
    (and the offset): their bounded linear least squares (scipy.optimize.lsq_linear) at each
    v_S of a grid, the two best v_S as starts.  A start with F_S = F_C has no gradient in v_S,
    and one at v_S ≪ V none towards a hump at V or above (found: a Stribeck velocity of 1.7 V
    fitted as no hump at all, RMS 1.6e-2 N·m for noise-free data)."""
    T, V = problem.torque_scale, problem.velocity_scale
    law, qd = problem.law, problem.qd
    with_offset = OFFSET in problem.parameters
    fits = []
    for v in V * np.logspace(-2, 1, HUMP_GRID):
        level = dict(coulomb=1.0, static=1.0, stribeck_velocity=v, viscous=0.0)
        hump = evaluate(law, dict(level, static=2.0), qd) - evaluate(law, level, qd)     # sgn(q̇) × the hump's shape
        columns = [np.sign(qd), hump, qd / V] + ([np.ones_like(qd)] if with_offset else [])
        lower = [0.0, 0.0, -np.inf] + ([-np.inf] if with_offset else [])
        solution = lsq_linear(np.column_stack(columns), problem.tau / T, bounds=(lower, np.inf), method="bvls")
        fits.append((solution.cost, v, solution.x))
    seeds = []
    for _, v, x in sorted(fits, key=lambda fit: fit[0])[:2]:
        seed = dict(coulomb=T * x[0], static=T * (x[0] + x[1]), stribeck_velocity=v, viscous=T / V * x[2])
        seeds.append(dict(seed, offset=T * x[3]) if with_offset else seed)
    return seeds


def _lugre_seeds(problem: _Problem) -> list:
    """LuGre from the fitted Dahl law (exactly: F_S = F_C, σ1 = 0) and Stribeck law (with a stiff σ0)."""
    dahl = problem.sub("dahl")
    dahl = dahl.best([dahl.to_x(seed) for seed in _seeds(dahl)])
    stribeck = problem.sub("stribeck")
    stribeck = stribeck.best([stribeck.to_x(seed) for seed in _seeds(stribeck)])
    from_dahl = dict(dahl, static=dahl["coulomb"], stribeck_velocity=problem.velocity_scale, sigma1=0.0)
    # stiff bristles: F_C or, where F_C sits at its floor, F_S reached within a tenth of the angle scale
    stiff = [dict(stribeck, sigma0=stribeck[level] / (0.1 * problem.angle_scale), sigma1=0.0)
             for level in ("coulomb", "static")]
    return [from_dahl, *stiff, dict(stiff[0], sigma0=dahl["sigma0"])]


# -- checks -----------------------------------------------------------------------------------

def _law(name) -> Law:
    if not isinstance(name, str) or name not in LAWS:
        raise InputError(f"unknown friction law {name!r}; the laws are {', '.join(FRICTION_LAWS)}")
    return LAWS[name]


def _vector(name: str, value, length: Optional[int] = None) -> np.ndarray:
    """``value`` as a finite float array (N,), refused (InputError) otherwise."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be real numbers of shape (N,), got {type(value).__name__}") from None
    if array.ndim != 1:
        raise InputError(f"{name} must be one joint's samples, shape (N,), got shape {array.shape}"
                         + ("; fit the columns of an (N, n) log one at a time" if array.ndim == 2 else ""))
    if length is not None and array.shape[0] != length:
        raise InputError(f"{name} has {array.shape[0]} samples but qd has {length}: the lengths must agree")
    bad = ~np.isfinite(array)
    if bad.any():
        raise InputError(f"{name} has a non-finite entry (NaN or inf) at sample {int(np.argmax(bad))}")
    return array


def _checked(law: Law, qd, t=None, q=None) -> tuple:
    """(qd (N,), t (N,) or None) checked for ``law``: t is required by a dynamic law, and
    checked (strictly increasing) whenever given; q only checked."""
    qd = _vector("qd", qd)
    if qd.shape[0] == 0:
        raise InputError("qd is empty: give at least one sample")
    if q is not None:
        _vector("q", q, qd.shape[0])
    if t is None:
        if law.dynamic:
            raise InputError(f"the {law.name} law is dynamic (a bristle state integrated through the samples): "
                             f"it needs the sample times t (N,) s")
        return qd, None
    t = _vector("t", t, qd.shape[0])
    steps = np.diff(t)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0))
        raise InputError(f"t must be strictly increasing, but t[{k + 1}] = {float(t[k + 1])!r} s follows t[{k}] = {float(t[k])!r} s")
    return qd, t


def _finite_torque(law: Law, params: dict, qd, t) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        torque = evaluate(law, params, qd, t)
    if not np.all(np.isfinite(torque)):
        k = int(np.argmax(~np.isfinite(torque)))
        raise NumericalError(f"the {law.name} law with {params} overflowed at sample {k} (q̇ = {float(qd[k])!r} rad/s)")
    return torque
