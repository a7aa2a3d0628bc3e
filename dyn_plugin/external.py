"""External wrenches: forces and moments applied to the robot at named frames.

``f_ext`` (:meth:`~dyn_plugin.backends.base.Backend.inverse_dynamics`,
:meth:`~dyn_plugin.backends.base.Backend.forward_dynamics`) maps frame names
(:attr:`~dyn_plugin.model.RobotModel.frame_names`) to wrenches w = [f; m] =
[fx, fy, fz, mx, my, mz] (N, N·m) applied to the body the frame is fixed to, at the frame's
origin, with world-aligned components ("10 N downward at the tool" is
``{"tool0": [0, 0, -10, 0, 0, 0]}``): one (6,) for every state, or (N, 6), one per state.

One statement serves every backend.  With J_k the frame's (6, nv) ``local_world_aligned``
Jacobian (:func:`dyn_plugin.frames.frame_jacobian`, rows [v; ω]), the power of w_k is
w_kᵀ J_k q̇, so its generalized force is Q = Σ_k J_kᵀ w_k and

    inverse dynamics:  τ = τ_rigid(q, q̇, q̈) − Q          forward dynamics:  q̈ = FD(q, q̇, τ + Q)

(floating bases and mimic joints included: J is (6, nv) for them too).

Joint reaction wrenches (what bearing friction reads) change as well: the wrench link
``parent(j)`` exerts on link j at joint j (Newton-Euler's f_j, n_j; pinocchio's ``data.f``)
balances every external wrench on the subtree of j, so with R_j, o_j joint j's world
rotation and origin (:func:`joint_wrench_offsets`)

    Δf_j = −R_jᵀ Σ_k f_k,      Δn_j = −R_jᵀ Σ_k (m_k + (p_k − o_j) × f_k)

over the wrenches k on bodies of that subtree (p_k the frame origin).  Projected on the
joint axis this is −J_kᵀ w_k again, so τ and the wrenches agree.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from . import floating, frames
from .errors import InputError
from .kinematics import cross, forward_kinematics

WRENCH = "[fx, fy, fz, mx, my, mz] (N, N·m; at the frame origin, world-aligned axes)"


def validate(model, f_ext, states: int, single: bool) -> dict:
    """``f_ext`` checked against ``model`` and a batch of ``states``: a dict frame name ->
    (states, 6) float array (a (6,) wrench broadcast to every state).  An InputError names
    the frame or the shape at fault; an unknown frame lists the valid names."""
    if not isinstance(f_ext, Mapping):
        raise InputError(f"f_ext must map frame names to wrenches {WRENCH}, e.g. {{'tool0': [0, 0, -10, 0, 0, 0]}}; "
                         f"got {type(f_ext).__name__}")
    out = {}
    for name, wrench in f_ext.items():
        model.frame(name)                                  # an unknown name lists the valid ones
        what = f"f_ext[{name!r}]"
        try:
            array = np.asarray(wrench)
            if array.dtype.kind not in "fiu":
                raise TypeError
            array = array.astype(float)
        except (TypeError, ValueError):
            raise InputError(f"{what} must be real numbers {WRENCH} of shape (6,) or (N, 6), got "
                             f"{type(wrench).__name__}") from None
        if array.shape == (6,):
            array = np.broadcast_to(array, (states, 6))
        elif array.ndim != 2 or array.shape[1] != 6:
            raise InputError(f"{what} must be a wrench {WRENCH} of shape (6,) or (N, 6), got shape {array.shape}")
        elif array.shape[0] != states:
            given = "one state" if single else f"a batch of {states} states"
            raise InputError(f"{what} has {array.shape[0]} wrenches (shape {array.shape}) for {given}: give one "
                             f"wrench (6,) for every state, or ({states}, 6)")
        if not np.all(np.isfinite(array)):
            raise InputError(f"{what} has a non-finite entry (NaN or inf)")
        if name in out:
            out[name] = out[name] + array
        else:
            out[name] = array
    return out


def generalized_force(model, q: np.ndarray, wrenches: dict) -> np.ndarray:
    """Q (N, nv) = Σ_k J_kᵀ w_k: the generalized force of ``wrenches`` (validated: frame
    name -> (N, 6)) at configurations q (N, nq)."""
    Q = np.zeros((len(q), model.nv))
    if not wrenches:
        return Q
    if model.floating_base:
        q = floating.unit_quaternions(q)
    for name, w in wrenches.items():
        if model.frame(name)[0] < 0 and not model.floating_base:
            continue                                       # on the fixed base: no work
        J = frames.frame_jacobian(model, q, name)
        Q += np.einsum("nij,ni->nj", J, w)
    return Q


def joint_wrench_offsets(model, q: np.ndarray, wrenches: dict) -> tuple:
    """(Δf, Δn), each (N, n, 3): what ``wrenches`` add to the joint reaction wrenches of a
    fixed-base model without mimic joints (module docstring; joint frames, about each
    joint's origin, the convention of Newton-Euler's ``joint_wrenches`` and pinocchio's
    ``data.f``)."""
    model.require_fixed_joint_space("joint reaction wrenches under external loads")
    N = len(q)
    df, dn = np.zeros((N, model.n, 3)), np.zeros((N, model.n, 3))
    if not wrenches:
        return df, dn
    T = forward_kinematics(model, q)
    R, o = T[..., :3, :3], T[..., :3, 3]                   # (N, n, 3, 3), (N, n, 3)
    for name, w in wrenches.items():
        body, Rf, pf = model.frame(name)
        if body < 0:
            continue                                       # on the fixed base: no joint carries it
        p = o[:, body] + np.einsum("nij,j->ni", R[:, body], pf)
        force, moment = w[:, :3], w[:, 3:]
        for j in model.ancestors(body):
            df[:, j] -= np.einsum("nji,nj->ni", R[:, j], force)
            dn[:, j] -= np.einsum("nji,nj->ni", R[:, j], moment + cross(p - o[:, j], force))
    return df, dn


class Load:
    """Validated external wrenches on a batch of states: ``generalized`` (N, nv), Q, and
    the joint wrench offsets (:func:`joint_wrench_offsets`), computed when first asked."""

    def __init__(self, model, q: np.ndarray, wrenches: dict, generalized=None, offsets=None):
        self.model, self.q, self.wrenches = model, q, wrenches
        self.generalized = generalized_force(model, q, wrenches) if generalized is None else generalized
        self._offsets = offsets

    @classmethod
    def of(cls, model, q: np.ndarray, f_ext, single: bool = False) -> "Load":
        """The load of ``f_ext`` (unvalidated) on validated configurations q (N, nq)."""
        return cls(model, q, validate(model, f_ext, len(q), single))

    @property
    def offsets(self) -> tuple:
        """(Δf, Δn) (N, n, 3) each: :func:`joint_wrench_offsets`."""
        if self._offsets is None:
            self._offsets = joint_wrench_offsets(self.model, self.q, self.wrenches)
        return self._offsets

    def take(self, rows) -> "Load":
        """The load of the states ``rows`` (an index array or slice)."""
        offsets = None if self._offsets is None else tuple(part[rows] for part in self._offsets)
        return Load(self.model, self.q[rows], {k: w[rows] for k, w in self.wrenches.items()},
                    self.generalized[rows], offsets)
