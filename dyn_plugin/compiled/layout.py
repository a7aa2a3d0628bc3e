"""The packed model the compiled kernels read: one ``(n + 1, WIDTH)`` float array.

Row ``i < n`` holds joint/link ``i``; row ``n`` holds what belongs to the whole robot.
Packing everything into one C-contiguous array keeps a kernel call to a single model
argument (each argument costs a numba dispatch ~60 ns, as much as 200 multiplications).

Every joint is re-framed so that its axis is z (the *z normal form*): link i's frame is
turned by the constant rotation F_i with F_i ẑ = axis_i, its rest placement becomes
R₀' = F_λᵀ R₀ F_i, p₀' = F_λᵀ p₀, and its inertial data are expressed in the turned frame.
Torques, M and q̈ do not depend on the link frames; wrenches are turned back with F_i.
A revolute joint is then R(q) = R₀' Rz(q) (12 multiplications), and every ω̇ × ẑ-type
product loses two thirds of its work, as in the customised algorithms of Dhanaraj ch. 2.

Inertia is stored the way Khalil's customised Newton-Euler and the composite-body
algorithms use it, about the link origin rather than the centre of mass: the mass m, the
first moment h = m c and I_O = I_c + m (|c|² 1 − c cᵀ) (parallel-axis theorem).
"""

from __future__ import annotations

import numpy as np

from ..kinematics import REVOLUTE, parallel_axis, rotation_from_z

# The column constants live in .kernels: numba freezes them into the machine code it
# caches, and it only invalidates that cache when the kernels' own file changes.
from .kernels import (ARMATURE, BASE_ACC, BREAKAWAY, COULOMB_NEG, COULOMB_POS, FRAME, HAS_FRICTION,  # noqa: E402
                      INERTIA, KIND, MASS, MOMENT, PARENT, POS0, ROT0, SET_VALUED, SMOOTHING, STATIC_NEG,
                      STATIC_POS, STRIBECK, VISCOUS, WIDTH)


def pack_model(model, gravity=None, armature=None, friction=None) -> np.ndarray:
    """The ``(n + 1, WIDTH)`` array of ``model`` (a :class:`~dyn_plugin.model.RobotModel`).

    ``gravity`` (3,) m/s² defaults to the model's; ``armature`` (n,) kg·m² (kg) to zeros;
    ``friction`` is a :class:`~dyn_plugin.friction.parameters.FrictionModel` whose
    friction does not depend on the joint loads (velocity friction and breakaway only).
    """
    n = model.n
    P = np.zeros((n + 1, WIDTH))
    P[:n, PARENT] = model.parents
    P[:n, KIND] = [0.0 if kind == REVOLUTE else 1.0 for kind in model.joint_types]
    F = np.array([rotation_from_z(axis) for axis in model.axes]).reshape(n, 3, 3)
    F_parent = np.array([F[k] if k >= 0 else np.eye(3) for k in model.parents]).reshape(n, 3, 3)
    turn_back = np.swapaxes(F_parent, 1, 2)
    P[:n, ROT0:ROT0 + 9] = (turn_back @ model.joint_rotations @ F).reshape(n, 9)
    P[:n, POS0:POS0 + 3] = np.einsum("nij,nj->ni", turn_back, model.joint_positions)
    P[:n, FRAME:FRAME + 9] = F.reshape(n, 9)
    m = model.masses
    c = np.einsum("nji,nj->ni", F, model.coms)                               # Fᵀ c
    I_c = np.swapaxes(F, 1, 2) @ model.inertias @ F                          # Fᵀ I F
    P[:n, MASS] = m
    P[:n, MOMENT:MOMENT + 3] = m[:, None] * c
    P[:n, INERTIA:INERTIA + 9] = (I_c + parallel_axis(m, c)).reshape(n, 9)
    if armature is not None:
        P[:n, ARMATURE] = armature
    P[n, BASE_ACC:BASE_ACC + 3] = -np.asarray(model.gravity if gravity is None else gravity, dtype=float)
    if friction is not None:
        _pack_friction(P, friction)
    return P


def _pack_friction(P: np.ndarray, friction) -> None:
    n = P.shape[0] - 1
    velocity = friction.velocity
    P[:n, VISCOUS] = velocity.viscous
    P[:n, COULOMB_POS], P[:n, COULOMB_NEG] = velocity.coulomb_positive, velocity.coulomb_negative
    P[:n, STATIC_POS], P[:n, STATIC_NEG] = velocity.static_positive, velocity.static_negative
    P[:n, STRIBECK] = velocity.stribeck_velocity
    if friction.transmission is not None:
        P[:n, BREAKAWAY] = friction.transmission.breakaway
    P[n, SMOOTHING] = friction.smoothing
    P[n, HAS_FRICTION] = 1.0
    P[n, SET_VALUED] = 1.0 if friction.set_valued else 0.0
