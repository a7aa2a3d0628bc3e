"""Our two backends: thin adapters over :mod:`dyn_plugin.algorithms`.

Neither imports pinocchio or pybullet.
"""

from __future__ import annotations

import numpy as np

from ..algorithms import articulated_body as aba
from ..algorithms import lagrange_euler as le
from ..algorithms import newton_euler as ne
from .base import Backend, batch_args


class NewtonEulerBackend(Backend):
    """Recursive Newton-Euler in link frames (Fu Table 3.3 / eq. 3.3-57), O(n) per τ.

    Forward dynamics by Featherstone's articulated-body algorithm, O(n); mass matrix by
    unit-acceleration probing (n passes).  Also exposes the joint reaction wrenches, which friction models need.
    """

    name = "newton_euler"
    description = "recursive Newton-Euler in link frames (Luh-Walker-Paul; Fu Table 3.3) + articulated-body forward dynamics, trees"

    def _batch_inverse_dynamics(self, q, qd, qdd):
        return ne.inverse_dynamics(self.model, q, qd, qdd, self.gravity)

    def _batch_mass_matrix(self, q):
        return ne.mass_matrix(self.model, q)

    def _batch_velocity_terms(self, q, qd):
        return ne.inverse_dynamics(self.model, q, qd, np.zeros_like(q), np.zeros(3))

    def _batch_forward_dynamics(self, q, qd, tau):
        return aba.forward_dynamics(self.model, q, qd, tau, self.gravity)

    def joint_wrenches(self, q, qd, qdd):
        """Force and moment that link ``parent(i)`` exerts on link ``i`` at joint ``i``.

        Returns ``(f, n)``, each (n_joints, 3) or (N, n_joints, 3), in N and N·m,
        expressed in joint ``i``'s frame (its z... axis is ``model.axes[i]``).
        """
        (q, qd, qdd), single = batch_args(self.model.n, q=q, qd=qd, qdd=qdd)
        f, moment = ne.joint_wrenches(self.model, q, qd, qdd, self.gravity)
        return (f[0], moment[0]) if single else (f, moment)


class LagrangeEulerBackend(Backend):
    """Uicker/Fu Lagrange-Euler with 4x4 matrices (Fu §3.2), O(n⁴) by design.

    Forward dynamics solves D q̈ = τ − h − c by Cholesky (the base class's default).

    Exposes its structure: the Christoffel coefficients h_ikm and ROBMAT's
    configuration-space matrices (M, B, C, G).
    """

    name = "lagrange_euler"
    description = "Lagrange-Euler with 4x4 matrices (Uicker; Fu §3.2), O(n^4), exposes h_ikm"

    def _batch_inverse_dynamics(self, q, qd, qdd):
        return le.inverse_dynamics(self.model, q, qd, qdd, self.gravity)

    def _batch_mass_matrix(self, q):
        return le.inertia_matrix(self.model, q)

    def _batch_gravity_torques(self, q):
        return le.gravity_vector(self.model, q, self.gravity)

    def _batch_velocity_terms(self, q, qd):
        return le.velocity_terms(self.model, q, qd)

    def _batch_bias_forces(self, q, qd):
        return le.inverse_dynamics(self.model, q, qd, np.zeros_like(q), self.gravity)

    def _batch_coriolis_matrix(self, q, qd):
        return le.coriolis_matrix(self.model, q, qd)

    def christoffel(self, q):
        """h_ikm (Fu 3.2-33), (n, n, n) or (N, n, n, n): h_i = Σ_km h_ikm q̇_k q̇_m."""
        return self._run(lambda q_: le.christoffel(self.model, q_), q=q)

    def configuration_space(self, q):
        """ROBMAT's ``(M, B, C, G)``: F = M q̈ + 2B[q̇q̇] + C[q̇²] + G (seed 003 §4.2).

        B has columns for the pairs (j, k), j < k, in the order (1,2), (1,3), ..., (2,3), ...
        """
        (q,), single = batch_args(self.model.n, q=q)
        M, B, C, G = le.configuration_space(self.model, q, self.gravity)
        return (M[0], B[0], C[0], G[0]) if single else (M, B, C, G)
