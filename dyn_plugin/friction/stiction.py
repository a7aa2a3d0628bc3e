"""Coulomb friction with stiction as a box-constrained problem (maximum dissipation).

At a joint at rest, or over a time step, dry friction is set-valued: any torque up to
the level can act.  Which one does is fixed by the principle of maximum dissipation,
which for joint-space dynamics with inverse inertia ``W`` (the Delassus matrix) reads

    minimise  ½ λᵀ W λ + λᵀ v    subject to  lower ≤ λ ≤ upper,

where ``v`` is the motion without dry friction and ``v + W λ`` the motion with it.  Used
at two levels:

* **velocity** (one time step, as pybullet's velocity motors): v = q̇ + dt q̈_free,
  λ = friction impulses, bounds ∓ L dt;
* **acceleration** (forward dynamics at q̇ᵢ = 0): v = q̈_free on the joints at rest,
  λ = stiction torques, bounds ∓ L_static.

The KKT conditions are the stick/slip rules: a joint with λ strictly inside its bounds
ends with zero (velocity or acceleration) — it sticks; one at a bound slides against it.
"""

from __future__ import annotations

import numpy as np

from ..errors import DynPluginError


def solve_box_qp(W: np.ndarray, v: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                 tol: float = 1e-13, max_sweeps: int = 10_000) -> np.ndarray:
    """λ (m,) minimising ½ λᵀWλ + λᵀv with lower ≤ λ ≤ upper; W (m, m) symmetric positive definite.

    Projected Gauss-Seidel finds the active set; each candidate is polished by solving
    the free rows exactly, so the answer satisfies the KKT conditions to rounding.
    """
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(v))):
        raise DynPluginError("stiction problem with a non-finite motion: the state has diverged "
                             "(try a smaller time step)")
    lam = np.clip(np.zeros(len(v)), lower, upper)
    diagonal = np.diag(W)
    for sweep in range(1, max_sweeps + 1):
        for i in range(len(v)):
            lam[i] = np.clip(lam[i] - (v[i] + W[i] @ lam) / diagonal[i], lower[i], upper[i])
        if sweep % 5 == 0 or sweep == 1:
            for band in BANDS:
                polished = _polish(W, v, lam, lower, upper, tol, band)
                if polished is not None:
                    return polished
    raise DynPluginError(f"stiction problem did not converge in {max_sweeps} sweeps (size {len(v)})")


BANDS = (1e-12, 0.0)
"""How near its bound (relative) a row of the iterate counts as on it, tried in turn: an
iterate that approaches a bound from inside reaches it only in the limit, and a row whose
optimum lies within the band but inside (its motion exactly zero, the bound a rounding
away: a torque at the static level) fails the sign test on the bound."""


def _polish(W, v, lam, lower, upper, tol, band):
    """Solve exactly on the active set that ``lam`` suggests, rows within ``band`` (relative)
    of a bound on it; the result if it is optimal, else None."""
    scale = np.maximum(1.0, np.abs(lower) + np.abs(upper))
    at_lower = lam <= lower + band * scale
    at_upper = (lam >= upper - band * scale) & ~at_lower
    free = ~(at_lower | at_upper)
    out = np.where(at_lower, lower, np.where(at_upper, upper, 0.0))
    if free.any():
        rhs = -(v[free] + W[np.ix_(free, ~free)] @ out[~free])
        out[free] = np.linalg.solve(W[np.ix_(free, free)], rhs)
    residual = v + W @ out                       # the motion with friction
    size = tol * max(1.0, np.abs(v).max(initial=0.0), np.abs(W @ out).max(initial=0.0))
    inside = np.all((out[free] >= lower[free] - size) & (out[free] <= upper[free] + size))
    signs_ok = np.all(residual[at_lower & (lower < upper)] >= -size) and \
        np.all(residual[at_upper] <= size)
    return out if inside and signs_ok else None


def sticking(lam: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Rows whose friction is strictly inside its bounds: by the KKT conditions their
    motion is exactly zero (set it so, rather than leave a rounding residue)."""
    return (lam > lower) & (lam < upper)
