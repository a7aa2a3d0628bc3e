"""Physically consistent identification: the standard inertial parameters θ and the
friction parameters φ fitted together under the constraints that make every link a rigid
body, as one convex problem (``dp.identify(..., physical=True)``).

A link's ten parameters θ_i = [m, h = m c, I about the link frame origin] (the order of
:data:`dyn_plugin.algorithms.regressor.PARAMETERS`) are those of a rigid body (a
non-negative mass density) iff its pseudo-inertia (Wensing, Kim & Slotine, "Linear Matrix
Inequalities for Physically Consistent Inertial Parameter Identification: A Statistical
Perspective on the Mass Distribution", IEEE RA-L 3(1), 2018, eq. 9 and Theorem 1)

    J_i = [[Σ_i, h_i], [h_iᵀ, m_i]],   Σ_i = ½ tr(I_i) 1 − I_i = ∫ r rᵀ dm

is positive definite: J ≻ 0 implies m > 0 and that the principal moments about the centre
of mass satisfy the triangle inequalities strictly.  J_i is linear in θ_i, so "J_i ⪰ ε 1"
is a linear matrix inequality and the fit is a semidefinite program.

Scaling.  Each link is measured in units of its nominal self: mass m_r (the nominal mass)
and length ℓ (the root-mean-square distance of the nominal mass from the frame origin,
ℓ² = tr Σ_nom / m_nom), so that J̃ = T J T / m_r with T = diag(1/ℓ, 1/ℓ, 1/ℓ, 1) is
dimensionless, and the nominal J̃ has m̃ = 1 and tr Σ̃ = 1.  The constraints are
J̃_i ⪰ :data:`MARGIN` · 1: strictly positive definite by a margin far above the solver's
tolerance and any rounding of θ: roughly, no link is thinner along any axis than √MARGIN
(0.1 %) of its nominal radius ℓ.

The problem (x = [E θ; φ] the base and friction parameters, E of :mod:`.base`; A_w, b_w the
weighted rows of :func:`.identify`, the same weights 1/σ_j as least squares;
ρ(x) = ‖A_w x − b_w‖ / ‖b_w‖ the relative weighted residual):

0. the least-squares optimum x̂ (friction ≥ 0 if ``bounded``) and the standard parameters
   nearest the nominal ones that give its β̂ (minimise Σ_i d_i² subject to E θ = β̂, in
   closed form).  If every link of that is a rigid body with the margin, it is the answer:
   the constraints are inactive, nothing is traded (noise-free data of a rigid robot land
   here, exact to rounding);
1. otherwise minimise ρ(x) subject to J̃_i(θ) ⪰ MARGIN·1 for every link and φ ≥ 0
   (``bounded``): the best consistent fit, residual ρ₁;
2. minimise ρ(x) + :data:`NEAREST` · ρ₁ · √(Σ_i d_i(θ)²) under the same constraints: the
   standard parameters the data cannot see (the null space of E, where step 1 leaves them
   anywhere in an unbounded set) are pulled to the nominal ones, at a small cost in
   residual.  (Optimality of step 2 against x₁ bounds that cost by NEAREST · ρ₁ · d(θ₁),
   a loose bound since step 1's θ₁ may lie far out.)  Measured on the Panda log (Gaz et al. 2019, 1200 samples × 7 joints): +0.17 %
   of ρ (held-out RMS 0.1345 → 0.1347 N·m), under the sampling spread of a residual norm
   over N n rows, ≈ 1/√(2 N n) = 0.8 %: the fits are statistically the same; total
   distance 2.5 (step 1 alone: ≈ 1000).  A larger weight trades accuracy for distance
   (3e-3: +0.31 %, 1.7; 1e-2: +0.6 %, 1.15); a hard constraint ρ ≤ (1 + δ) ρ₁ instead of
   the penalty leaves Clarabel a sliver of interior, and it stalled there for δ < 1e-3.

d_i, the distance of link i from its nominal self, is the relative Frobenius distance of
the scaled pseudo-inertias, d_i = ‖J̃_i − J̃_nom,i‖_F / ‖J̃_nom,i‖_F (dimensionless; 0.1
means a 10 % change of the mass distribution); the total is √(Σ_i d_i²)
(:func:`distance_to_nominal`).

A_w enters only through its QR factorisation (A_w = Q R, R p × p), so the problem has a
size set by the number of parameters, not of samples.  It is modelled with cvxpy and solved
by Clarabel (an interior-point conic solver: second-order and semidefinite cones, gap and
feasibility tolerances 1e-9); SCS, a first-order solver accurate to ~1e-6, only when
Clarabel is not installed (the result says which solver ran).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from ..errors import InputError, NumericalError

MARGIN = 1e-6
"""J̃_i ⪰ MARGIN · 1 (dimensionless, in the nominal link's units, see the module)."""

NEAREST = 1e-3
"""Weight of the distance to nominal in step 2, relative to step 1's residual (see the module)."""

TOLERANCE = 1e-9
"""Clarabel's gap and feasibility tolerances."""

CONSISTENCY_TOLERANCE = 1e-12
"""A pseudo-inertia is positive definite when its smallest eigenvalue exceeds this fraction
of its largest (rounding of θ apart): :func:`is_consistent`."""


def pseudo_inertia(theta) -> np.ndarray:
    """J (..., 4, 4) of standard parameters ``theta`` (..., 10) (kg·m² block Σ, kg·m column h, kg):
    Fu's J (3.2-18) written linearly in θ, as the LMIs need it; the same matrix as
    :func:`dyn_plugin.algorithms.lagrange_euler.pseudo_inertia` of (m, c, I about the COM),
    which ``tests/test_physical_identification.py`` holds it to."""
    theta = np.asarray(theta, dtype=float)
    m, h = theta[..., 0], theta[..., 1:4]
    xx, xy, yy, xz, yz, zz = np.moveaxis(theta[..., 4:10], -1, 0)
    I = np.stack([np.stack([xx, xy, xz], -1), np.stack([xy, yy, yz], -1), np.stack([xz, yz, zz], -1)], -2)
    J = np.zeros(theta.shape[:-1] + (4, 4))
    J[..., :3, :3] = 0.5 * np.trace(I, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - I
    J[..., :3, 3] = J[..., 3, :3] = h
    J[..., 3, 3] = m
    return J


PSEUDO_INERTIA_MAP = np.stack([pseudo_inertia(e).ravel() for e in np.eye(10)], axis=-1)
"""B (16, 10): vec(J) = B θ for one link (row-major vec; J is symmetric)."""


def is_consistent(theta_link, tolerance: float = CONSISTENCY_TOLERANCE) -> bool:
    """Whether one link's parameters (10,) are a rigid body: J ≻ 0, its smallest eigenvalue
    above ``tolerance`` × its largest (Wensing et al. 2018, Theorem 1)."""
    eigenvalues = np.linalg.eigvalsh(pseudo_inertia(theta_link))
    return bool(np.all(np.isfinite(eigenvalues)) and eigenvalues[0] > tolerance * abs(eigenvalues[-1]))


def link_scales(theta_nominal, link_names) -> tuple:
    """(m_r (n,) kg, ℓ (n,) m): each link's nominal mass and the RMS distance of its nominal
    mass from the frame origin, √(tr Σ / m).  A link with no nominal mass has no scale:
    InputError.  A nominal point mass at its frame origin (tr Σ = 0) takes the geometric
    mean of the other links' ℓ (1 m if none has one)."""
    theta_nominal = np.asarray(theta_nominal, dtype=float).reshape(-1, 10)
    mass = theta_nominal[:, 0]
    massless = [link for link, m in zip(link_names, mass) if not m > 0]
    if massless:
        raise InputError("physical=True measures each link against its nominal parameters and needs a nominal mass "
                         "> 0 for every link; no mass in the nominal model for " + ", ".join(massless)
                         + ": give nominal= a model (e.g. the CAD values) whose links all have masses and inertias")
    spread = np.trace(pseudo_inertia(theta_nominal)[:, :3, :3], axis1=1, axis2=2) / mass
    known = spread > 0
    fallback = np.exp(np.mean(np.log(spread[known]))) if np.any(known) else 1.0
    return mass, np.sqrt(np.where(known, spread, fallback))


def _scaling(mass, length) -> np.ndarray:
    """S (n, 10): θ̃ = S θ in the nominal units (m_r, m_r ℓ, m_r ℓ²) of each link."""
    powers = np.array([0, 1, 1, 1, 2, 2, 2, 2, 2, 2])
    return 1.0 / (mass[:, None] * length[:, None] ** powers)


def distance_to_nominal(theta, theta_nominal, link_names) -> dict:
    """{link: d_i} and ``"total"``: d_i = ‖J̃_i − J̃_nom,i‖_F / ‖J̃_nom,i‖_F, the relative
    Frobenius distance of the pseudo-inertias scaled by the nominal link's mass and size
    (see the module), total = √(Σ d_i²).  Dimensionless."""
    theta_nominal = np.asarray(theta_nominal, dtype=float).reshape(-1, 10)
    S = _scaling(*link_scales(theta_nominal, link_names))
    J = pseudo_inertia(np.asarray(theta, dtype=float).reshape(-1, 10) * S)
    J_nominal = pseudo_inertia(theta_nominal * S)
    d = np.linalg.norm(J - J_nominal, axis=(1, 2)) / np.linalg.norm(J_nominal, axis=(1, 2))
    out = {link: float(value) for link, value in zip(link_names, d)}
    out["total"] = float(np.sqrt(np.sum(d ** 2)))
    return out


@dataclasses.dataclass(frozen=True)
class PhysicalFit:
    """The consistent fit: ``theta`` (n, 10) standard parameters, ``friction`` (f,) ≥ 0,
    ``solver`` the solver that ran, ``residual`` ρ of the best consistent fit (step 1) and of
    the result (see the module)."""

    theta: np.ndarray
    friction: np.ndarray
    solver: str
    residual: tuple


def _solver():
    import cvxpy as cp

    if "CLARABEL" in cp.installed_solvers():
        return "CLARABEL", {"tol_gap_abs": TOLERANCE, "tol_gap_rel": TOLERANCE, "tol_feas": TOLERANCE,
                            "max_iter": 400}
    return "SCS", {"eps_abs": 1e-8, "eps_rel": 1e-8, "max_iters": 100_000}


def _solve(problem, step: str) -> str:
    """Solve ``problem`` with :func:`_solver`'s solver; a note if it was not solved accurately."""
    import cvxpy as cp

    name, options = _solver()
    try:
        with warnings.catch_warnings():         # "optimal_inaccurate" is said in the result instead
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver=name, **options)
    except cp.error.SolverError as error:
        raise NumericalError(f"physical identification, {step}: solver {name} failed ({error}); the data may be "
                             "too poorly excited, or too far from any rigid-body model (check units and joint "
                             "order), or use plain least squares (physical=False)") from None
    if problem.status not in ("optimal", "optimal_inaccurate") or problem.value is None:
        raise NumericalError(f"physical identification, {step}: solver {name} ended with status {problem.status!r}; "
                             "the data may be too poorly excited, or too far from any rigid-body model (check "
                             "units and joint order), or use plain least squares (physical=False)")
    return f"; {step.split(' (')[0]} inaccurate" if problem.status == "optimal_inaccurate" else ""


def nearest_completion(beta, E, theta_nominal, link_names) -> np.ndarray:
    """θ (n, 10) with E θ = β nearest the nominal parameters: minimises Σ_i d_i² (the
    distance of :func:`distance_to_nominal`, squared) on the affine set, in closed form
    (with G = Wᵀ W the metric, u = Lᵀ(θ̃ − θ̃_nom), G = L Lᵀ: the minimum-norm u)."""
    theta_nominal = np.asarray(theta_nominal, dtype=float).reshape(-1, 10)
    S = _scaling(*link_scales(theta_nominal, link_names)).ravel()
    W = _metric(theta_nominal * S.reshape(-1, 10))
    L = np.linalg.cholesky(W.T @ W)
    E_scaled = np.asarray(E) / S                                     # E θ = E_scaled θ̃
    target = np.asarray(beta, dtype=float) - E @ theta_nominal.ravel()
    u = np.linalg.lstsq(np.linalg.solve(L, E_scaled.T).T, target, rcond=None)[0]
    return (theta_nominal.ravel() + np.linalg.solve(L.T, u) / S).reshape(-1, 10)


def _metric(nominal_scaled) -> np.ndarray:
    """W (16 n, 10 n): ‖W (θ̃ − θ̃_nom)‖² = Σ_i d_i² for scaled parameters θ̃."""
    weights = 1.0 / np.linalg.norm(pseudo_inertia(nominal_scaled), axis=(1, 2))
    return np.kron(np.diag(weights), PSEUDO_INERTIA_MAP)


def _rigid_with_margin(theta, margin, S) -> bool:
    return all(np.linalg.eigvalsh(pseudo_inertia(t))[0] >= margin for t in theta * S)


def fit_consistent(As, bw, norms, E, x_least_squares, theta_nominal, link_names, bounded: bool = True,
                   margin: float = MARGIN) -> PhysicalFit:
    """Steps 0-2 of the module.

    As : (M, p) weighted rows with unit-norm columns, p = r + f (r base, f friction);
    bw : (M,) weighted torques; norms : (p,) the column norms (As (x norms) = A_w x);
    E : (r, 10 n) base map; x_least_squares : (p,) the (bounded) least-squares x̂;
    theta_nominal : (10 n,) or (n, 10) nominal standard parameters.
    """
    import cvxpy as cp

    theta_nominal = np.asarray(theta_nominal, dtype=float).reshape(-1, 10)
    n, r = len(theta_nominal), len(E)
    S = _scaling(*link_scales(theta_nominal, link_names))           # (n, 10)
    Q, R = np.linalg.qr(As)
    scale = max(float(np.linalg.norm(bw)), 1e-300)
    c = Q.T @ bw / scale
    R = R / scale * norms                                            # acts on x itself
    r0 = float(np.linalg.norm(bw / scale - Q @ c))                   # the part no parameter can fit

    def residual(x_value):
        return float(np.hypot(np.linalg.norm(R @ x_value - c), r0))

    x_hat = np.asarray(x_least_squares, dtype=float)
    theta_hat = nearest_completion(x_hat[:r], E, theta_nominal, link_names)
    if _rigid_with_margin(theta_hat, margin, S) and not (bounded and np.any(x_hat[r:] < 0)):
        return PhysicalFit(theta_hat, x_hat[r:].copy(), "none: the least-squares optimum is consistent",
                           (residual(x_hat),) * 2)

    theta_scaled = cp.Variable(10 * n)
    phi = cp.Variable(len(x_hat) - r) if len(x_hat) > r else None
    theta = cp.multiply(1.0 / S.ravel(), theta_scaled)
    x = E @ theta if phi is None else cp.hstack([E @ theta, phi])
    fit = cp.norm(cp.hstack([R @ x - c, r0]))
    constraints = [cp.reshape(PSEUDO_INERTIA_MAP @ theta_scaled[10 * i:10 * i + 10], (4, 4), order="C")
                   - margin * np.eye(4) >> 0 for i in range(n)]
    if phi is not None and bounded:
        constraints.append(phi >= 0)
    name = _solver()[0]
    solver = name + ("" if name == "CLARABEL" else " (Clarabel not installed: first-order, ~1e-6 accurate)")
    solver += _solve(cp.Problem(cp.Minimize(fit), constraints), "step 1 (best consistent fit)")
    best = float(fit.value)
    distance = cp.norm(_metric(theta_nominal * S) @ (theta_scaled - (theta_nominal * S).ravel()))
    solver += _solve(cp.Problem(cp.Minimize(fit + NEAREST * best * distance), constraints),
                     "step 2 (nearest the nominal)")
    theta_value = (theta_scaled.value / S.ravel()).reshape(n, 10)
    friction = np.zeros(0) if phi is None else np.asarray(phi.value, dtype=float)
    if bounded:
        friction = np.maximum(friction, 0.0)                          # solver tolerance below the bound
    return PhysicalFit(theta_value, friction, solver, (best, residual(np.concatenate([E @ theta_value.ravel(),
                                                                                         friction]))))


def standard_model(model, theta):
    """A copy of ``model`` (its kinematics, limits and joint data) whose links carry the
    standard parameters ``theta`` (n, 10): m, c = h / m, and the inertia about the centre
    of mass I_c = I − m [c]× [c]×ᵀ (parallel-axis theorem), and no armature (θ is the rigid
    body's; an identified "armature" term is a friction parameter of the result).  The copy
    has no source URDF (the reference engines then load ``dp.to_urdf`` of it)."""
    from ..kinematics import parallel_axis

    theta = np.asarray(theta, dtype=float).reshape(model.n, 10)
    mass = theta[:, 0]
    com = theta[:, 1:4] / mass[:, None]
    J = pseudo_inertia(theta)
    about_origin = np.trace(J[:, :3, :3], axis1=1, axis2=2)[:, None, None] * np.eye(3) - J[:, :3, :3]
    inertia = about_origin - parallel_axis(mass, com)
    inertia = 0.5 * (inertia + np.swapaxes(inertia, 1, 2))
    return dataclasses.replace(model, masses=mass, coms=com, inertias=inertia, armature=np.zeros(model.n),
                               source_urdf=None, source_path=None, links_without_inertial=())
