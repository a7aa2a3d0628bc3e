"""The Backend interface every dynamics engine implements.

Public methods accept one state ``(n,)`` or a batch ``(N, n)`` and return the matching
shape (``(n, n)`` / ``(N, n, n)`` for matrices).  They check shapes and finiteness once,
here, and hand ``(N, n)`` float arrays to the ``_batch_*`` methods a backend implements.

A backend must implement :meth:`Backend._batch_inverse_dynamics` and
:meth:`Backend._batch_mass_matrix`; the rest have correct (if not the fastest) defaults:

* gravity ``g(q) = τ(q, 0, 0)``, bias ``τ(q, q̇, 0)``;
* forward dynamics ``q̈ = M⁻¹(τ − bias)`` by Cholesky (Walker & Orin's method 1);
* the Christoffel Coriolis matrix by polarisation of the velocity terms: with
  ``h(u) = Σ_jk Γ_ijk u_j u_k`` (gravity off), ``C e_j = [h(q̇ + s e_j) − h(q̇ − s e_j)] / 4s``
  is exactly ``Σ_k Γ_ijk q̇_k``, the C for which ``Ṁ − 2C`` is skew-symmetric.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import InputError
from ..model import RobotModel


def as_batch(name: str, value, n: int) -> tuple:
    """Validate a joint-space array: returns ``(array of shape (N, n), was_single)``."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be numbers of shape ({n},) or (N, {n}), got {type(value).__name__}") from None
    if array.ndim == 1 and array.shape[0] == n:
        single, array = True, array[None, :]
    elif array.ndim == 2 and array.shape[1] == n:
        single = False
    else:
        raise InputError(f"{name} must have shape ({n},) or (N, {n}), got {array.shape}")
    if not np.all(np.isfinite(array)):
        rows, cols = np.nonzero(~np.isfinite(array))
        raise InputError(f"{name} has a non-finite entry (NaN or inf) at joint index {cols[0]}"
                         + ("" if single else f", state {rows[0]}"))
    return array, single


def batch_args(n: int, **arrays) -> tuple:
    """Validate several joint-space arrays that must share the batch size N."""
    out, singles = [], []
    for name, value in arrays.items():
        array, single = as_batch(name, value, n)
        out.append(array)
        singles.append(single)
    sizes = {len(a) for a in out}
    if len(sizes) > 1:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in zip(arrays, out))
        raise InputError(f"batch sizes differ: {shapes}; all arguments must have the same N")
    return out, all(singles)


class Backend:
    """Dynamics of one robot model.  Subclasses set ``name`` and ``description``."""

    name = "abstract"
    description = ""

    def __init__(self, model: RobotModel, gravity: Optional[np.ndarray] = None):
        self.model = model if gravity is None else model.with_gravity(gravity)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model.name!r}, n={self.model.n})"

    @property
    def gravity(self) -> np.ndarray:
        """Physical gravity (3,), m/s², in the base frame."""
        return self.model.gravity

    # -- public surface: shapes in, shapes out -----------------------------------------

    def _run(self, method, matrix: bool = False, **arrays):
        args, single = batch_args(self.model.n, **arrays)
        result = method(*args)
        return result[0] if single else result

    def inverse_dynamics(self, q, qd, qdd):
        """Joint torques/forces τ (N·m or N) for positions q, velocities q̇ and accelerations q̈."""
        return self._run(self._batch_inverse_dynamics, q=q, qd=qd, qdd=qdd)

    def forward_dynamics(self, q, qd, tau):
        """Joint accelerations q̈ (rad/s² or m/s²) produced by torques τ."""
        return self._run(self._batch_forward_dynamics, q=q, qd=qd, tau=tau)

    def mass_matrix(self, q):
        """Joint-space inertia matrix M(q), symmetric positive definite, (n, n) or (N, n, n)."""
        return self._run(self._batch_mass_matrix, q=q)

    def bias_forces(self, q, qd):
        """C(q, q̇) q̇ + g(q): the torque needed for zero acceleration."""
        return self._run(self._batch_bias_forces, q=q, qd=qd)

    def gravity_torques(self, q):
        """g(q): the torque that holds the robot still against gravity."""
        return self._run(self._batch_gravity_torques, q=q)

    def coriolis_matrix(self, q, qd):
        """C(q, q̇) in Christoffel form: C q̇ = velocity terms and Ṁ − 2C skew-symmetric."""
        return self._run(self._batch_coriolis_matrix, q=q, qd=qd)

    # -- what a backend implements (batches of shape (N, n)) ----------------------------

    def _batch_inverse_dynamics(self, q, qd, qdd):
        raise NotImplementedError

    def _batch_mass_matrix(self, q):
        raise NotImplementedError

    def _batch_gravity_torques(self, q):
        zero = np.zeros_like(q)
        return self._batch_inverse_dynamics(q, zero, zero)

    def _batch_bias_forces(self, q, qd):
        return self._batch_inverse_dynamics(q, qd, np.zeros_like(q))

    def _batch_velocity_terms(self, q, qd):
        """C(q, q̇) q̇ alone (gravity off)."""
        return self._batch_bias_forces(q, qd) - self._batch_gravity_torques(q)

    def _batch_forward_dynamics(self, q, qd, tau):
        M = self._batch_mass_matrix(q)
        rhs = tau - self._batch_bias_forces(q, qd)
        L = np.linalg.cholesky(M)
        y = np.linalg.solve(L, rhs[..., None])
        return np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]

    def _batch_coriolis_matrix(self, q, qd):
        N, n = q.shape
        scale = np.maximum(1.0, np.linalg.norm(qd, axis=1))                # (N,)
        step = scale[:, None, None] * np.eye(n)                             # (N, n, n): s e_j
        q_rep = np.repeat(q, n, axis=0)
        plus = self._batch_velocity_terms(q_rep, (qd[:, None, :] + step).reshape(N * n, n))
        minus = self._batch_velocity_terms(q_rep, (qd[:, None, :] - step).reshape(N * n, n))
        columns = (plus - minus).reshape(N, n, n) / (4.0 * scale[:, None, None])  # [state, j, i]
        return columns.transpose(0, 2, 1)
