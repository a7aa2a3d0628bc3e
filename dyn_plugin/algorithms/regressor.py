"""The inertial-parameter regressor: τ = Y(q, q̇, q̈) θ, batch-first, in numpy.

θ stacks, for every moving body i (in joint order), pinocchio's ten dynamic parameters
(``pin.Inertia.toDynamicParameters``) about the body frame origin, body-frame axes::

    [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]

with I the inertia about the frame origin, I = I_c + m [c]× [c]×ᵀ
(:meth:`dyn_plugin.model.RobotModel.inertial_parameters`).

The recursion is Newton-Euler's, made linear in θ.  Its forward pass is the reference's
own, :func:`dyn_plugin.algorithms.newton_euler.forward_pass` (Fu, Gonzalez & Lee Table 3.3,
3.3-50 to 3.3-52): in each body's frame, the angular velocity ω, angular acceleration ω̇
and the classical acceleration a of the frame origin (gravity as an upward acceleration of
the base).  Body i's wrench about its origin is linear in its own parameters:

    f = m a + ω̇ × (m c) + ω × (ω × (m c))
    n = I ω̇ + ω × (I ω) + (m c) × a

so [f; n] = A_i θ_i with A_i (6, 10).  Joint j carries the wrenches of its subtree moved to
its frame, projected on its axis (the moment for a revolute joint, the force for a
prismatic one): Y[j, block i] = S_jᵀ X*_{j←i} A_i for every i in the subtree of j.
"""

from __future__ import annotations

import numpy as np

from ..kinematics import PRISMATIC, skew
from .newton_euler import forward_pass

PARAMETERS = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
"""Names of the ten parameters of one body, in θ's order (pinocchio's)."""


def parameter_names(model) -> tuple:
    """``"<parameter>_<link>"`` for every entry of θ (10 per moving link, joint order)."""
    return tuple(f"{p}_{link}" for link in model.link_names for p in PARAMETERS)


def inertia_matrix_columns(w: np.ndarray) -> np.ndarray:
    """L(w) (..., 3, 6) with I w = L(w) [I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]."""
    x, y, z = w[..., 0], w[..., 1], w[..., 2]
    zero = np.zeros_like(x)
    return np.stack([np.stack([x, y, zero, z, zero, zero], -1),
                     np.stack([zero, x, y, zero, z, zero], -1),
                     np.stack([zero, zero, zero, x, y, z], -1)], axis=-2)


def body_regressor(w: np.ndarray, dw: np.ndarray, a: np.ndarray) -> np.ndarray:
    """A (..., 6, 10): the wrench [f; n] about a body's origin (body axes) is A θ_body, for
    its angular velocity ``w``, angular acceleration ``dw`` and the classical acceleration
    ``a`` of its origin minus gravity, each (..., 3) in the body frame."""
    A = np.zeros(w.shape[:-1] + (6, 10))
    A[..., 0:3, 0] = a
    W = skew(w)
    A[..., 0:3, 1:4] = skew(dw) + W @ W
    A[..., 3:6, 1:4] = -skew(a)
    A[..., 3:6, 4:10] = inertia_matrix_columns(dw) + W @ inertia_matrix_columns(w)
    return A


def joint_torque_regressor(model, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """Y (N, n, 10 n) with τ = Y θ for states (N, n) of a fixed-base model without mimic
    joints (validated by the caller); θ = ``model.inertial_parameters().ravel()``."""
    model.require_fixed_joint_space("the regressor")
    N, n = q.shape
    w, dw, a, R, p = forward_pass(model, q, qd, qdd)             # ω, ω̇, a − g in each body's frame
    A = body_regressor(w, dw, a)                                  # (N, n, 6, 10)
    Y = np.zeros((N, n, 10 * n))
    prismatic = [t == PRISMATIC for t in model.joint_types]
    for i in range(n):
        f, m = A[:, i, 0:3], A[:, i, 3:6]                          # (N, 3, 10), frame of body i
        j = i
        while True:
            rows = f if prismatic[j] else m
            Y[:, j, 10 * i:10 * i + 10] = np.einsum("k,nkc->nc", model.axes[j], rows)
            parent = int(model.parents[j])
            if parent < 0:
                break
            f_up = R[:, j] @ f                                       # into the parent's frame
            m = R[:, j] @ m + skew(p[:, j]) @ f_up
            f = f_up
            j = parent
    return Y
