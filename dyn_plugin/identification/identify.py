"""Least-squares identification of the base inertial parameters and the linear friction
parameters from a recorded trajectory: :func:`identify`.

Model: τ = Y_b(q, q̇, q̈) β + F(q, q̇, q̈) φ + e, with Y_b the base regressor
(:mod:`.base`), F the friction columns (:mod:`.friction`) and e the measurement noise.
The fit is weighted least squares: each joint's own equations fitted alone (ordinary least
squares on its N rows) give its residual standard deviation σ_j, and the rows of joint j
are then weighted by 1/σ_j (M. Gautier, P. Poignet, "Extended Kalman filtering and weighted
least squares dynamic identification of robot", Control Engineering Practice 9(12), 2001:
joints with torques of very different sizes get comparable weight).  A joint's σ_j from
a fit of all the joints at once would be the leakage of the largest joints' errors into
the shared parameters: a wrist whose torques are 1e-6 of the base's was then weighted
50× too little and predicted worse than by zero (simulated TIAGo arm, noise-free log;
:func:`joint_noise`).  Standard
errors are σ̂ √diag((AᵀA)⁻¹) of the weighted problem, σ̂² its residual variance per degree
of freedom; for a prepared :class:`~.log.Log`, whose low-passed noise is correlated over
the filter's settling time, those of :func:`parameter_covariance`.

Physical consistency, least squares (the default): enforced — non-negative friction
parameters (bounded least squares, ``scipy.optimize.lsq_linear``).  Checked and reported,
not enforced — a completion of the standard parameters: θ = θ_nom + E⁺ (β̂ − E θ_nom), the
standard parameters closest to the nominal ones that reproduce β̂, with a positive-definite
pseudo-inertia per link (Wensing, Kim & Slotine 2018; :func:`.physical.is_consistent`).

``physical=True``: the standard parameters themselves are fitted, every link's
pseudo-inertia constrained positive definite (a semidefinite program,
:mod:`.physical`); β̂ = E θ̂ is reported in the same base + friction terms.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from ..arrays import batch_args
from ..errors import InputError, ModelError
from .base import DEFAULT_TOLERANCE, BaseParameters, base_parameters
from .friction import friction_columns, friction_terms
from .log import Log, settling_time
from .physical import MARGIN, distance_to_nominal, fit_consistent, is_consistent, standard_model
from ..algorithms.regressor import joint_torque_regressor

MAX_CONDITION = 1e8
"""A column-scaled base regressor with a larger condition number is rank deficient."""


@dataclasses.dataclass
class IdentificationResult:
    """What :func:`identify` found.

    names, values, std_errors : every identified parameter (base inertial, then friction)
    base : the :class:`BaseParameters` (``base.formulas()``: what each β means)
    condition_number : of the weighted regressor with unit-norm columns (the excitation)
    sigma : (n,) residual standard deviation per joint (N·m or N)
    measured, predicted : (N, n) torques
    at_bound : names of friction parameters held at 0 by the bounds
    standard : (n, 10) the standard parameters: fitted (``physical``) or a completion (see the module)
    consistency : per link, whether ``standard`` is a rigid body (:func:`.physical.is_consistent`)
    distance_to_nominal : {link: d, "total": d} of ``standard`` from the nominal parameters
        (relative Frobenius distance of scaled pseudo-inertias, :func:`.physical.distance_to_nominal`)
    method : "least squares" or "physical"; solver : the conic solver of ``physical``
    residual_cost : ``physical``: the relative increase of the weighted residual over the
        best consistent fit that pulling the unidentifiable parameters to nominal cost (:mod:`.physical`)
    loads : the rigid-body model whose joint wrenches load the ``"load"`` columns (None
        without them); loads_from : "given" or how the first pass found it
    """

    model_name: str
    names: tuple
    values: np.ndarray
    std_errors: np.ndarray
    base: BaseParameters
    friction_names: tuple
    condition_number: float
    sigma: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    at_bound: tuple
    standard: np.ndarray
    consistency: dict
    link_names: tuple
    _columns: object = dataclasses.field(repr=False, default=None)
    distance_to_nominal: dict = dataclasses.field(default_factory=dict)
    method: str = "least squares"
    solver: str = ""
    residual_cost: float = 0.0
    _model: object = dataclasses.field(repr=False, default=None)
    loads: object = dataclasses.field(repr=False, default=None)
    loads_from: str = ""

    @property
    def inertial(self) -> np.ndarray:
        """β̂ (r,): the base inertial parameters."""
        return self.values[:self.base.rank]

    @property
    def friction(self) -> dict:
        """{name: value} of the friction parameters."""
        return dict(zip(self.friction_names, self.values[self.base.rank:]))

    def parameter(self, name: str) -> tuple:
        """(value, standard error) of one parameter by name."""
        if name not in self.names:
            raise InputError(f"no identified parameter {name!r}; they are: {', '.join(self.names)}")
        k = self.names.index(name)
        return float(self.values[k]), float(self.std_errors[k])

    def predict(self, q, qd, qdd, direction=None) -> np.ndarray:
        """τ (N, n) the identified model predicts for other states (N, n); ``direction``
        (N, n): a filtered log's low-passed sgn(q̇) (:attr:`.log.Log.direction`) to predict
        its low-passed torques, None: the torques themselves (sgn(q̇))."""
        return self._columns(q, qd, qdd, direction) @ self.values

    @property
    def relative_rms_error(self) -> float:
        """RMS(measured − predicted) / RMS(measured)."""
        return float(np.sqrt(np.mean((self.measured - self.predicted) ** 2) / np.mean(self.measured ** 2)))

    def to_model(self):
        """The identified robot: a RobotModel on the original kinematics with the masses,
        centres of mass and inertias (about the centre of mass) of :attr:`standard` (friction
        not included); write it with ``dp.write_urdf``.  Refused (ModelError) when a link
        of :attr:`standard` is not a rigid body."""
        bad = [link for link, ok in self.consistency.items() if not ok]
        if bad:
            raise ModelError(f"cannot make a robot model of the identified {self.model_name!r}: the standard parameters "
                             f"are not a rigid body (pseudo-inertia not positive definite) for {', '.join(bad)}; "
                             "identify with physical=True (CLI: --physical) to fit consistent parameters")
        return standard_model(self._model, self.standard)

    def to_dict(self) -> dict:
        """Plain data (JSON-ready)."""
        return {"robot": self.model_name, "condition_number": self.condition_number,
                "relative_rms_error": self.relative_rms_error, "sigma": self.sigma.tolist(),
                "parameters": [{"name": n, "value": float(v), "std_error": float(s)}
                               for n, v, s in zip(self.names, self.values, self.std_errors)],
                "base_formulas": self.base.formulas(), "at_bound": list(self.at_bound),
                "consistency": self.consistency, "method": self.method, "solver": self.solver,
                "residual_cost": self.residual_cost,
                "standard": {"names": list(self.base.names), "values": self.standard.ravel().tolist()},
                "distance_to_nominal": self.distance_to_nominal,
                **({"loads_from": self.loads_from} if self.loads is not None else {})}

    def report(self) -> str:
        lines = [f"identification of {self.model_name!r}: {self.base.rank} base inertial + "
                 f"{len(self.friction_names)} friction parameters from {self.measured.shape[0]} samples",
                 f"condition number of the (column-scaled) excitation: {self.condition_number:.4g}",
                 f"torque residual: {100 * self.relative_rms_error:.3g} % RMS; per joint σ = "
                 + ", ".join(f"{s:.3g}" for s in self.sigma),
                 f"{'parameter':<16} {'value':>13} {'std error':>11} {'rel.':>8}"]
        for name, value, error in zip(self.names, self.values, self.std_errors):
            relative = abs(error / value) if value != 0 else np.inf
            flag = "  (at bound 0)" if name in self.at_bound else ""
            lines.append(f"{name:<16} {value:13.6g} {error:11.3g} {100 * relative:7.2g}%{flag}")
        bad = [link for link, ok in self.consistency.items() if not ok]
        how = (f"enforced ({self.solver}): every pseudo-inertia ⪰ {MARGIN:g} in nominal units, friction ≥ 0; "
               f"residual +{100 * self.residual_cost:.2g} % over the best consistent fit for nearness to nominal"
               if self.method == "physical" else
               "enforced: friction ≥ 0; checked: completion nearest the nominal parameters")
        lines.append(f"physical consistency ({how}): " + ("every link has m > 0 and a positive-definite "
                                                           "pseudo-inertia" if not bad else
                                                           "not consistent for " + ", ".join(bad)))
        if self.distance_to_nominal:
            lines.append("distance to nominal (relative Frobenius, scaled pseudo-inertia): total "
                         f"{self.distance_to_nominal['total']:.3g}; "
                         + ", ".join(f"{link} {self.distance_to_nominal[link]:.3g}" for link in self.link_names))
        if self.loads is not None:
            lines.append(f"load columns: joint wrenches of {self.loads_from}")
        lines.append("base parameters (regrouping):")
        lines += ["  " + line for line in self.base.formulas(4)]
        return "\n".join(lines)

    __str__ = report


def _states(model, q, qd, qdd, tau, dt):
    if qd is None or qdd is None:
        if dt is None:
            raise InputError("give qd and qdd, or the sample time dt to differentiate (filtered) q")
        if not (np.isscalar(dt) and np.isfinite(dt) and dt > 0):
            raise InputError(f"dt must be a positive time step (s), got {dt!r}")
        q_array = np.asarray(q, dtype=float)
        if q_array.ndim != 2 or len(q_array) < 3:
            raise InputError(f"differentiating q needs a trajectory of shape (N ≥ 3, {model.n}), got {q_array.shape}")
        qd = np.gradient(q_array, dt, axis=0) if qd is None else qd
        qdd = np.gradient(np.asarray(qd, dtype=float), dt, axis=0) if qdd is None else qdd
    for name, value in (("q", q), ("qd", qd), ("qdd", qdd), ("tau", tau)):
        shape = np.shape(value)
        if len(shape) != 2 or shape[1] != model.n:
            raise InputError(f"{name} must be a trajectory of shape (N, {model.n}) (one row per sample, one column "
                             f"per joint of {model.name!r}), got shape {shape}")
    (q, qd, qdd, tau), _ = batch_args(model.n, model.joint_names, q=q, qd=qd, qdd=qdd, tau=tau)
    return q, qd, qdd, tau


def identify(model, q, qd=None, qdd=None, tau=None, *, friction=("viscous", "coulomb"), bearing=None,
             nominal=None, smoothing: float = 0.0, dt: Optional[float] = None, weighted: bool = True,
             bounded: bool = True, tolerance: float = DEFAULT_TOLERANCE,
             max_condition: float = MAX_CONDITION, physical: bool = False, loads=None,
             direction=None) -> IdentificationResult:
    """Fit the base inertial parameters and the friction parameters of ``model`` to a
    recorded trajectory by (weighted, bounded) least squares.

    q, qd, qdd, tau : (N, n) positions, velocities, accelerations and measured torques;
        qd and qdd may be None with ``dt`` (s): then they are central differences of q
        (filter q first).  Or ``q`` a prepared :class:`~.log.Log` alone (``dp.prepare_log``):
        its states, torques and ``direction``.
    direction : (N, n) the low-passed sgn(q̇) of low-passed torques (a Log's), used in the
        dry-friction and load columns instead of sgn(q̇) (:mod:`.friction`, :mod:`.log`).
    friction : the friction terms to identify (see :mod:`dyn_plugin.identification.friction`):
        a sequence or comma-separated string of "viscous", "coulomb", "armature", "bearing",
        "load"; True = viscous + coulomb; None = rigid body only.
    bearing : the bearing geometry for "bearing" (a FrictionModel or BearingFriction; its μ
        is ignored); nominal : the rigid-body model giving the joint reaction wrenches of the
        load-dependent bearing term, the reference of the consistency check and the parameters
        ``physical`` pulls the unidentifiable ones to (default ``model``).
    smoothing : tanh width of sgn(q̇) in the dry-friction columns (0: sgn).
    weighted : per-joint weighting (:func:`joint_noise`); bounded : friction parameters ≥ 0.
    max_condition : a larger condition number of the column-scaled regressor is refused
        as a rank-deficient excitation (InputError naming the worst-determined parameters).
    physical : fit the standard parameters under the rigid-body constraints, nearest the
        nominal ones (:mod:`.physical`; the same weights); std_errors are then those of the
        unconstrained problem at the estimate.
    loads : for "load", the rigid-body model (same joints) whose joint reaction wrenches load
        the joints; None: two passes, the first without "load" (least squares, or physical if
        asked or if the least-squares completion is not a rigid body), its identified robot
        (``to_model()``) loads the second.
    """
    model.require_fixed_joint_space("identification")
    correlated = 1
    if isinstance(q, Log):
        if not (qd is None and qdd is None and tau is None and direction is None):
            raise InputError("give identify a prepared Log alone, or the arrays q, qd, qdd, tau (and direction)")
        correlated = max(1, int(math.ceil(settling_time(q.cutoff) * q.rate)))
        q, qd, qdd, tau, direction = q.q, q.qd, q.qdd, q.tau, q.direction
    if tau is None:
        raise InputError("identify needs the measured torques tau (N, n)")
    q, qd, qdd, tau = _states(model, q, qd, qdd, tau, dt)
    terms = friction_terms(friction)
    options = dict(bearing=bearing, nominal=nominal, smoothing=smoothing, weighted=weighted, bounded=bounded,
                   tolerance=tolerance, max_condition=max_condition, direction=direction)
    loads, loads_from = _loads(model, (q, qd, qdd, tau), terms, physical, loads, options)
    nominal = model if nominal is None else nominal
    base = base_parameters(model, tolerance=tolerance)

    def columns(q_, qd_, qdd_, direction_=None):
        (q_, qd_, qdd_), _ = batch_args(model.n, model.joint_names, q=q_, qd=qd_, qdd=qdd_)
        Y = base.regressor(joint_torque_regressor(model, q_, qd_, qdd_))
        F, _ = friction_columns(model, q_, qd_, qdd_, terms, bearing, nominal, smoothing, loads, direction_)
        return np.concatenate([Y, F], axis=-1)

    N, n = q.shape
    A = columns(q, qd, qdd, direction)
    _, friction_names = friction_columns(model, q[:1], qd[:1], qdd[:1], terms, bearing, nominal, smoothing, loads)
    names = base.base_names + friction_names
    p = len(names)
    if N * n <= p:
        raise InputError(f"{N} samples of {n} joints give {N * n} equations for {p} parameters: record more samples")
    rows, b = A.reshape(N * n, p), tau.reshape(N * n)

    def scaled(weights):
        Aw = rows * np.repeat(weights[None, :], N, axis=0).reshape(-1, 1)
        norms = np.linalg.norm(Aw, axis=0)
        return Aw, b * np.repeat(weights[None, :], N, axis=0).ravel(), norms

    weights = np.ones(n)
    Aw, bw, norms = scaled(weights)
    _check_excitation(Aw, norms, names, max_condition)
    if weighted:
        sigma_j = joint_noise(A, tau)
        floor = 1e-9 * np.maximum(np.sqrt(np.mean(tau ** 2, axis=0)), 1e-300)
        if np.all(sigma_j > floor):                               # noise-free data: nothing to weight
            weights = 1.0 / sigma_j
            Aw, bw, norms = scaled(weights)
    As = Aw / norms
    condition = _check_excitation(Aw, norms, names, max_condition)
    lower = np.full(p, -np.inf)
    at_bound = ()
    if bounded and friction_names:
        lower[base.rank:] = 0.0
    theta_nominal = nominal.inertial_parameters(flat=True)
    if theta_nominal.shape != (10 * model.n,):
        raise InputError(f"nominal has {theta_nominal.size // 10} moving links, {model.name!r} has {model.n}: "
                         "give nominal= a model of the same robot")
    E = base.matrix
    x_scaled = np.linalg.lstsq(As, bw, rcond=None)[0]
    if np.any(x_scaled < lower):
        from scipy.optimize import lsq_linear

        solution = lsq_linear(As, bw, bounds=(lower, np.full(p, np.inf)), method="bvls", tol=1e-14)
        x_scaled = solution.x
        at_bound = tuple(names[k] for k in np.flatnonzero(solution.active_mask != 0))
    found = None
    if physical:
        found = fit_consistent(As, bw, norms, E, x_scaled / norms, theta_nominal, model.link_names, bounded)
        x_scaled = np.concatenate([E @ found.theta.ravel(), found.friction]) * norms
        at_bound = tuple(name for name, value in zip(friction_names, found.friction) if bounded and value == 0.0)
    x = x_scaled / norms
    residual_w = bw - As @ x_scaled
    covariance_scaled = parameter_covariance(As, residual_w, N, correlated)
    std = np.sqrt(np.diag(covariance_scaled)) / norms
    predicted = A @ x
    sigma = np.sqrt(np.sum((tau - predicted) ** 2, axis=0) / max(N - p / n, 1))
    if found is not None:
        theta = found.theta
    else:           # the standard parameters closest to the nominal ones that give β̂
        theta = (theta_nominal + np.linalg.pinv(E) @ (x[:base.rank] - E @ theta_nominal)).reshape(model.n, 10)
    consistency = {link: is_consistent(theta[i]) for i, link in enumerate(model.link_names)}
    distance = distance_to_nominal(theta, theta_nominal, model.link_names) if np.all(theta_nominal[::10] > 0) else {}
    return IdentificationResult(model.name, names, x, std, base, friction_names, condition, sigma, tau, predicted,
                                at_bound, theta, consistency, model.link_names, columns, distance,
                                "physical" if physical else "least squares", found.solver if found else "",
                                found.residual[1] / found.residual[0] - 1.0 if found and found.residual[0] else 0.0,
                                model, loads, loads_from)


def parameter_covariance(As, residual, N: int, correlated: int = 1) -> np.ndarray:
    """(p, p) covariance of the least-squares x of As x ≈ b, As (N n, p), its residual (N n,),
    N samples of n joints each.  ``correlated`` = 1: independent rows, σ̂² (AsᵀAs)⁻¹ with σ̂²
    the residual variance per degree of freedom.  Larger: the samples' noise is correlated
    over that many samples (a low-passed log, whose noise the filter spreads over its
    settling time), and the long-run covariance of the scores g_t = Σ_j As_tjᵀ r_tj is
    estimated from overlapping sums of ``correlated`` samples (overlapping batch means,
    the Bartlett kernel of W. K. Newey, K. D. West, "A Simple, Positive Semi-Definite,
    Heteroskedasticity and Autocorrelation Consistent Covariance Matrix", Econometrica 55(3),
    1987): (AsᵀAs)⁻¹ S (AsᵀAs)⁻¹.  Counting every filtered sample as independent made the
    standard errors of a 500 Hz log filtered at 6.5 Hz 3.3-8.4× too small (a simulated UR5,
    median 5.4×); with these, the estimates' errors have an RMS of 0.98 standard errors."""
    p = As.shape[1]
    inverse = np.linalg.inv(As.T @ As)
    dof = max(len(residual) - p, 1)
    length = min(int(correlated), max(N // 4, 1))
    if length <= 1:
        return float(residual @ residual) / dof * inverse
    scores = (As * residual[:, None]).reshape(N, -1, p).sum(axis=1)          # (N, p)
    running = np.vstack([np.zeros((1, p)), np.cumsum(scores, axis=0)])
    sums = running[length:] - running[:-length]                                # (N - length + 1, p)
    S = sums.T @ sums / length * (N / len(sums)) * (len(residual) / dof)
    return inverse @ S @ inverse


def joint_noise(A, tau) -> np.ndarray:
    """σ_j (n,) N·m (N): each joint's residual standard deviation when its own equations
    alone are fitted by ordinary least squares, A (N, n, p) the columns, tau (N, n) (the
    module says why alone); columns scaled to unit norm, the minimum-norm solution where a
    joint's equations do not determine every parameter, N − rank degrees of freedom.  A
    joint with fewer rows than twice its rank (too few to tell its noise from its fit)
    takes its σ_j from the ordinary fit of all the joints at once (N − p/n degrees of freedom)."""
    N, n, p = A.shape
    rows, norms = A.reshape(N * n, p), np.linalg.norm(A.reshape(N * n, p), axis=0)
    live = norms > 0
    together = np.linalg.lstsq(rows[:, live] / norms[live], tau.ravel(), rcond=None)[0]
    residual = tau - (rows[:, live] / norms[live] @ together).reshape(N, n)
    sigma = np.sqrt(np.sum(residual ** 2, axis=0) / max(N - p / n, 1))
    for j in range(n):
        columns = A[:, j, :]
        scale = np.linalg.norm(columns, axis=0)
        columns = columns[:, scale > 0] / scale[scale > 0]
        solution, _, rank, _ = np.linalg.lstsq(columns, tau[:, j], rcond=None)
        if N >= 2 * rank:
            alone = tau[:, j] - columns @ solution
            sigma[j] = np.sqrt(alone @ alone / (N - rank))
    return sigma


def _loads(model, states, terms, physical, loads, options) -> tuple:
    """(the model whose joint wrenches load the "load" columns, where it came from):
    ``loads`` as given, or the identified robot of a first pass without "load" (least
    squares if its completion is a rigid body, else physical: its ``to_model()``)."""
    if "load" not in terms:
        return None, ""
    if loads is not None:
        return loads, "the given model"
    rest = tuple(term for term in terms if term != "load")
    first = identify(model, *states, friction=rest, physical=physical, **options)
    if not all(first.consistency.values()):
        first = identify(model, *states, friction=rest, physical=True, **options)
    how = "physical fit" if first.method == "physical" else "least-squares completion"
    return first.to_model(), f"the first pass's identified robot ({how}, friction: {', '.join(rest) or 'none'})"


def _check_excitation(Aw, norms, names, max_condition) -> float:
    idle = [names[k] for k in np.flatnonzero(norms == 0)]
    if idle:
        raise InputError("rank-deficient excitation: the trajectory never excites " + ", ".join(idle)
                         + " (condition number inf); move every joint, both ways, with varying accelerations")
    singular_values, vectors = np.linalg.svd(Aw / norms, full_matrices=False)[1:]
    condition = float(singular_values[0] / singular_values[-1]) if singular_values[-1] > 0 else np.inf
    if not condition <= max_condition:
        worst = np.argsort(-np.abs(vectors[-1]))[:4]
        raise InputError(f"rank-deficient excitation: condition number {condition:.3g} of the column-scaled regressor "
                         f"exceeds {max_condition:.3g}; poorly determined together: "
                         + ", ".join(names[k] for k in worst)
                         + ". Excite the robot more richly (more joint motion, more harmonics, more samples)")
    return condition


def plot_fit(result: IdentificationResult, path, t=None):
    """Measured vs predicted torque of every joint on the fitted samples against ``t`` (s;
    default: the sample index), written to ``path`` (:func:`.score.plot_torques`); returns the path."""
    from .score import plot_torques, torque_rms

    x = np.arange(len(result.measured)) if t is None else np.asarray(t)
    title = (f"{result.model_name}: identified model, {100 * result.relative_rms_error:.2g} % RMS residual, "
             f"condition number {result.condition_number:.3g}")
    return plot_torques(path, x, "sample" if t is None else "t (s)", result.measured, result.predicted,
                        None, title, torque_rms(result.measured, result.predicted).per_joint)
