"""Derivatives of a :class:`~.friction_backend.FrictionBackend`'s inverse dynamics: the chain
rule through its torque breakdown (``FrictionBackend._breakdown``, Dhanaraj's flow chart,
thesis Fig. 3.10), a function of the backend.

The rigid body's derivatives come from the wrapped backend; the joint wrenches' from the
compiled recursion (:mod:`dyn_plugin.compiled.derivatives`); the laws' from
:mod:`dyn_plugin.friction.derivatives`, which refuse (InputError, naming the joint) a state
where a law has no derivative: sharp dry friction at q̇ = 0, a kink.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..friction import bristles
from ..friction.law import direction


def input_torque_jacobians(backend, q, qd, qdd, rigid_derivatives) -> tuple:
    """(∂τ_in/∂q, ∂τ_in/∂q̇, ∂τ_in/∂q̈), (N, n, n) each, of Dhanaraj's input torque at the
    validated (N, n) batches q, q̇, q̈::

        τ_out = τ_rigid + a q̈ + d |τ_f|(f, n),   τ_in = T(τ_out, d) + d τ_B + b(q̇)

    ``rigid_derivatives``: (∂τ_rigid/∂q, ∂τ_rigid/∂q̇) of the wrapped backend at the same
    states, (N, n, n) each."""
    from ..friction import derivatives as law_derivatives

    friction, names = backend.friction, backend.model.joint_names
    d = direction(qd, friction.smoothing)
    dq, dv = rigid_derivatives
    jacobians = [dq, dv, backend._batch_mass_matrix(q)]                 # of τ_out, so far
    slope = np.zeros_like(qd)                   # ∂τ_out/∂d · ∂d/∂q̇: the diagonal of ∂/∂q̇ through d
    magnitude = 0.0                             # |τ_f| of the bearings
    if friction.bearing is not None or friction.transmission is not None:
        rate = law_derivatives.direction_derivative(qd, friction.smoothing, joints=names)     # ∂d/∂q̇
    if friction.bearing is not None:
        force, moment = backend._axis_wrenches(q, qd, qdd)
        bearing = _bearing_jacobians(backend, q, qd, qdd, d, force, moment)
        jacobians = [J + bearing[:, s] for s, J in enumerate(jacobians)]
        magnitude = friction.bearing.magnitude(force, moment)
        slope = rate * magnitude
    if friction.transmission is not None:
        tau_out = backend._rigid_torque(q, qd, qdd) + d * magnitude
        by_torque, by_direction = law_derivatives.transmission_partials(friction.transmission, tau_out, d,
                                                                        joints=names)
        jacobians = [by_torque[:, :, None] * J for J in jacobians]
        slope = by_torque * slope + by_direction * rate
    slope = slope + law_derivatives.load_independent_torque_derivative(friction, qd, joints=names)
    if friction.dynamic is not None:
        slope = slope + _steady_state_slope(backend, qd)
    jacobians[1] = jacobians[1] + slope[:, :, None] * np.eye(backend.model.n)
    return tuple(jacobians)


def _steady_state_slope(backend, qd):
    """d/dq̇ of the dynamic law's steady state (N, n), refused at q̇ = 0 where it jumps."""
    rest = qd == 0.0
    if rest.any():
        state, joint = (int(i) for i in np.argwhere(rest)[0])
        raise InputError(f"inverse_dynamics_derivatives: joint {backend.model.joint_names[joint]!r}, state {state}: "
                         f"the steady state of the {backend.friction.dynamic.law} law jumps at q̇ = 0 (no "
                         "derivative); evaluate at q̇ ≠ 0")
    return bristles.steady_state_slope(qd, backend.friction.dynamic)


def _bearing_jacobians(backend, q, qd, qdd, d, force, moment):
    """d ∂|τ_f|/∂x (N, n, n) for x = q, q̇, q̈ at fixed d: the magnitude's gradient in the
    joint wrenches (``force``, ``moment``: in the axis frames), times their derivatives."""
    from ..friction.derivatives import bearing_magnitude_gradient

    by_force, by_moment = bearing_magnitude_gradient(backend.friction.bearing, force, moment, where=d != 0,
                                                     joints=backend.model.joint_names)
    to_axis = backend._axis_frames                   # gradients back to the joint frames
    gradient = np.concatenate([np.einsum("nij,Nnj->Nni", to_axis, by_force),
                               np.einsum("nij,Nnj->Nni", to_axis, by_moment)], axis=-1)       # (N, n, 6)
    wrenches = backend._wrench_kernels.joint_wrench_derivatives(q, qd, qdd)     # (N, 3, j, i, 6)
    return d[:, None, :, None] * np.einsum("Nsjia,Nia->Nsij", wrenches, gradient)
