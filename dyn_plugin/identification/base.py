"""Base (identifiable) inertial parameters by QR with column pivoting.

The regressor Y of :mod:`dyn_plugin.algorithms.regressor` has structurally zero and
linearly dependent columns (a link's parameters about axes it never turns around, masses
that only ever appear through a child's joint, ...).  Stacking Y at random states and
factorising Y Π = Q R with column pivoting, the first r pivots (|R_kk| > tol |R_00|) span
the columns: they are the base columns, and every other column is Y_d = Y_b K with
K = R_11⁻¹ R_12.  Hence Y θ = Y_b (θ_b + K θ_d) = Y_b β: each base parameter β_k is its
own standard parameter plus a linear combination of the dependent ones
(:meth:`BaseParameters.formulas`).

The pivoting is LAPACK's rule (the largest remaining column norm) with one change: columns
whose norms tie to rounding (many do: a parameter that enters only as another does) are
taken in the order of the standard parameters, so that the choice does not depend on the
rounding of the machine's BLAS (:func:`pivoted_qr`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..algorithms.regressor import joint_torque_regressor, parameter_names

DEFAULT_TOLERANCE = 1e-9


def random_states(model, count: int, seed: int = 0):
    """``count`` random states (q, q̇, q̈), each (count, n): q uniform within the joint limits
    (±π where there are none), q̇ and q̈ standard normal."""
    rng = np.random.default_rng(seed)
    n = model.n
    lower = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    upper = np.where(np.isfinite(model.upper), model.upper, np.pi)
    q = lower + (upper - lower) * rng.random((count, n))
    return q, rng.normal(size=(count, n)), rng.normal(size=(count, n))


@dataclasses.dataclass(frozen=True)
class BaseParameters:
    """A minimal identifiable set: β = E θ with E = [I on the base columns | K on the dependent ones].

    names : the standard parameters' names (10 per link,
        :data:`dyn_plugin.algorithms.regressor.PARAMETERS`)
    independent : (r,) indices of θ that carry a base parameter (ascending)
    dependent : indices of θ regrouped into them; unidentifiable : indices whose column is zero
    K : (r, len(dependent)) the regrouping coefficients
    """

    names: tuple
    independent: np.ndarray
    dependent: np.ndarray
    unidentifiable: np.ndarray
    K: np.ndarray
    tolerance: float

    @property
    def rank(self) -> int:
        """Number of base parameters."""
        return len(self.independent)

    @property
    def base_names(self) -> tuple:
        """Names of the base parameters: ``"<standard parameter>'"`` when others are regrouped into it."""
        return tuple(self.names[i] + ("'" if np.any(self.K[k] != 0) else "") for k, i in enumerate(self.independent))

    @property
    def matrix(self) -> np.ndarray:
        """E (r, 10 n_bodies): β = E θ."""
        E = np.zeros((self.rank, len(self.names)))
        E[np.arange(self.rank), self.independent] = 1.0
        E[:, self.dependent] = self.K
        return E

    def values(self, theta) -> np.ndarray:
        """β (r,) of standard parameters ``theta`` ((n, 10) or (10 n,))."""
        return self.matrix @ np.asarray(theta, dtype=float).ravel()

    def regressor(self, Y: np.ndarray) -> np.ndarray:
        """The base regressor Y_b (..., r) of a full regressor Y (..., 10 n): Y θ = Y_b β."""
        return Y[..., self.independent]

    def formulas(self, digits: int = 6) -> list:
        """Each base parameter as a linear combination of the standard ones, one string each."""
        lines = []
        for k, i in enumerate(self.independent):
            terms = [self.names[i]]
            for j, coefficient in zip(self.dependent, self.K[k]):
                if coefficient != 0:
                    sign = "-" if coefficient < 0 else "+"
                    size = abs(coefficient)
                    terms.append(f"{sign} {self.names[j]}" if abs(size - 1) < 10 ** -digits
                                 else f"{sign} {size:.{digits}g}·{self.names[j]}")
            lines.append(f"{self.base_names[k]} = " + " ".join(terms))
        return lines

    def __str__(self) -> str:
        head = (f"{self.rank} base parameters of {len(self.names)} standard ones "
                f"({len(self.unidentifiable)} unidentifiable, {len(self.dependent)} regrouped):")
        return "\n".join([head] + ["  " + line for line in self.formulas()])


def base_parameters(model, states: int = None, tolerance: float = DEFAULT_TOLERANCE, seed: int = 0) -> BaseParameters:
    """The base parameters of ``model`` (fixed base, with its gravity) from the regressor
    stacked at ``states`` random states (default: enough for 4× as many rows as columns);
    ``tolerance`` is relative to the largest |R_kk| (and to the largest column norm for the
    zero columns)."""
    import scipy.linalg

    model.require_fixed_joint_space("the base parameters")
    P = 10 * model.n
    count = states if states is not None else max(20, -(-4 * P // max(model.n, 1)))
    Y = joint_torque_regressor(model, *random_states(model, count, seed)).reshape(-1, P)
    norms = np.linalg.norm(Y, axis=0)
    zero = norms <= tolerance * norms.max()
    live = np.flatnonzero(~zero)
    R, perm = pivoted_qr(Y[:, live], tolerance)
    diagonal = np.abs(np.diag(R))
    r = int(np.sum(diagonal > tolerance * diagonal[0]))
    K = scipy.linalg.solve_triangular(R[:r, :r], R[:r, r:])
    K[np.abs(K) < 1e-10] = 0.0                         # rounding noise of exact structural zeros
    independent, dependent = live[perm[:r]], live[perm[r:]]
    order = np.argsort(independent)
    dep_order = np.argsort(dependent)
    return BaseParameters(parameter_names(model), independent[order], dependent[dep_order],
                          np.flatnonzero(zero), K[order][:, dep_order], tolerance)


TIE = 1e-9          # column norms within this relative distance are equal (rounding apart)


def pivoted_qr(A, tolerance: float = 0.0):
    """``(R, order)`` with A[:, order] = Q R (Householder reflections, Golub & Van Loan §5.4.1,
    as LAPACK's geqp3): at each step the column of largest remaining norm, and among columns
    within :data:`TIE` of it the one first in A.  R is (min(m, k), k); once every remaining
    norm is at most ``tolerance`` × |R_00| the rest of R is zero."""
    A = np.array(A, dtype=float)
    m, k = A.shape
    order = np.arange(k)
    steps = min(m, k)
    for j in range(steps):
        norms = np.einsum("ij,ij->j", A[j:, j:], A[j:, j:])          # squared
        largest = norms.max()
        if largest == 0.0 or (j > 0 and largest <= (tolerance * abs(A[0, 0])) ** 2):
            A[j:, j:] = 0.0
            break
        near = np.flatnonzero(norms >= (1.0 - 2.0 * TIE) * largest)
        pick = j + near[np.argmin(order[j + near])]
        A[:, [j, pick]], order[[j, pick]] = A[:, [pick, j]], order[[pick, j]]
        v = A[j:, j].copy()
        v[0] += np.copysign(np.sqrt(v @ v), v[0])                    # x + sign(x₀)|x| e₀
        A[j:, j:] -= np.outer(v, (2.0 / (v @ v)) * (v @ A[j:, j:]))
    return np.triu(A[:steps]), order
