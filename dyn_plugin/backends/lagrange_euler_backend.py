"""The Lagrange-Euler backend: a thin adapter over :mod:`dyn_plugin.algorithms.lagrange_euler`
(Fu, Gonzalez & Lee, ch. 3.2), an independent route to the same dynamics.
"""

from __future__ import annotations

import numpy as np

from ..algorithms import lagrange_euler as le
from ..terms import Terms
from .base import Backend, batch_args, check_finite, numpy_checked_afterwards, rotor_armature


class LagrangeEulerBackend(Backend):
    """Uicker/Fu Lagrange-Euler with 4x4 matrices (Fu §3.2), O(n⁴) by design.

    Forward dynamics solves D q̈ = τ − h − c by Cholesky (the base class's default).

    Exposes its structure: the Christoffel coefficients h_ikm and ROBMAT's
    configuration-space matrices (M, B, C, G).
    """

    name = "lagrange_euler"
    description = "Lagrange-Euler with 4x4 matrices (Uicker; Fu §3.2), O(n^4), exposes h_ikm"
    capabilities = frozenset({"christoffel", "derivatives"})

    def __init__(self, model, gravity=None, armature=None):
        """``armature`` (n,) as :class:`NewtonEulerBackend`'s: on D's diagonal (by default the model's)."""
        super().__init__(model, gravity)
        le.require_affordable(self.model)        # refused here, where a caller can choose another
        self.armature = rotor_armature(armature, self.model)

    def _checked_arithmetic(self):
        return numpy_checked_afterwards()

    def _batch_inverse_dynamics(self, q, qd, qdd):
        return le.inverse_dynamics(self.model, q, qd, qdd) + self.armature * qdd

    def _batch_mass_matrix(self, q):
        return le.inertia_matrix(self.model, q) + np.diag(self.armature)

    def _batch_gravity_torques(self, q):
        return le.gravity_vector(self.model, q)

    def _batch_velocity_terms(self, q, qd):
        return le.velocity_terms(self.model, q, qd)

    def _batch_bias_forces(self, q, qd):
        return le.inverse_dynamics(self.model, q, qd, q, Terms.BIAS)

    def _batch_coriolis_matrix(self, q, qd):
        return le.coriolis_matrix(self.model, q, qd)

    def christoffel(self, q):
        """h_ikm (Fu 3.2-33), (n, n, n) or (N, n, n, n): h_i = Σ_km h_ikm q̇_k q̇_m."""
        def christoffel(q_):
            return le.christoffel(self.model, q_)

        return self._run(christoffel, q=q)

    def configuration_space(self, q):
        """ROBMAT's ``(M, B, C, G)``: F = M q̈ + 2B[q̇q̇] + C[q̇²] + G (Horn & Linge, "ROBMAT", §4.2).

        B has columns for the pairs (j, k), j < k, in the order (1,2), (1,3), ..., (2,3), ...
        """
        (q,), single = batch_args(self.model.n, self.model.joint_names, q=q)
        M, B, C, G = check_finite("configuration_space", le.configuration_space(self.model, q),
                                  self.model, single, q=q)
        M = M + np.diag(self.armature)
        return (M[0], B[0], C[0], G[0]) if single else (M, B, C, G)
