"""Compiled dynamics: the fast path of the ``newton_euler`` backends (issue #6).

:class:`CompiledDynamics` runs the numba kernels of :mod:`.kernels` on a model packed by
:mod:`.layout`.  Its batch methods take C-contiguous float arrays of shape (N, n) that the
caller has validated (:class:`~dyn_plugin.backends.base.Backend` does), and its
``single`` kernels are the low-overhead path for one state: they return a non-zero
status (or raise TypeError) instead of computing when the input is not finite float64
vectors of length n, and a non-zero status when the result is not finite (float64
overflow, e.g. q̇ = 1e300), so that the caller falls back to the validating path and its
clear error messages (see :class:`~dyn_plugin.backends.ours.SingleStateFastPath`).
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import numpy as np

from . import kernels
from .layout import pack_model

__all__ = ["CompiledDynamics", "NO_SINGLE_STATE_PATH", "SingleStateKernels", "pack_model"]


def _contiguous(*arrays):
    return [np.ascontiguousarray(a, dtype=float) for a in arrays]


def _for_size(kernel_pair, N: int):
    """The serial kernel for small batches, the parallel one from PARALLEL_FROM states."""
    serial, parallel = kernel_pair
    return parallel if N >= kernels.PARALLEL_FROM else serial


class SingleStateKernels(NamedTuple):
    """The typed single-state kernels: ``kernel(*arrays, out) -> status`` (0 = OK).
    Called with anything but float64 vectors they raise TypeError; with a wrong length or
    a non-finite entry they return a non-zero status and leave ``out`` unspecified.

    ``checks_result``: True when the kernels also return a non-zero status for a result
    that is not finite (ours do); otherwise the caller checks ``out`` itself."""

    inverse_dynamics: Callable
    bias: Callable
    forward_dynamics: Callable
    mass_matrix: Callable
    checks_result: bool = False


def _refuse(*args) -> int:
    return -1


NO_SINGLE_STATE_PATH = SingleStateKernels(_refuse, _refuse, _refuse, _refuse, True)
"""What a backend without compiled kernels uses: every call is refused (status -1)."""


class CompiledDynamics:
    """Rigid-body dynamics of one model (with armature and load-independent friction if
    given), compiled.  Shapes: q, q̇, q̈, τ (N, n); M (N, n, n); wrenches (N, n, 3)."""

    def __init__(self, model, gravity=None, armature=None, friction=None):
        self.n = model.n
        self.packed = pack_model(model, gravity, armature, friction)
        self.has_friction = friction is not None
        self.single = SingleStateKernels(*(functools.partial(kernels.single(name), self.packed)
                                           for name in ("inverse_dynamics", "bias", "forward_dynamics", "mass_matrix")),
                                         checks_result=True)

    # -- batches ---------------------------------------------------------------------------

    def inverse_dynamics(self, q, qd, qdd):
        """τ = rigid body + armature q̈ + friction b(q̇) (N, n)."""
        q, qd, qdd = _contiguous(q, qd, qdd)
        return self._torques(q, qd, qdd, True, True, True)

    def bias_forces(self, q, qd):
        """C(q, q̇) q̇ + g(q) (N, n): no friction, no armature."""
        q, qd = _contiguous(q, qd)
        return self._torques(q, qd, q, True, False, True)

    def gravity_torques(self, q):
        (q,) = _contiguous(q)
        return self._torques(q, q, q, False, False, True)

    def velocity_terms(self, q, qd):
        """C(q, q̇) q̇ alone: gravity off (N, n)."""
        q, qd = _contiguous(q, qd)
        return self._torques(q, qd, q, True, False, False)

    def _torques(self, q, qd, qdd, moving, accelerating, gravity):
        tau = np.empty(q.shape)
        _for_size(kernels.inverse_dynamics_batch, len(q))(self.packed, q, qd, qdd, moving, accelerating, gravity, tau)
        return tau

    def mass_matrix(self, q):
        """M(q) + diag(armature) (N, n, n), by the composite-rigid-body algorithm."""
        (q,) = _contiguous(q)
        H = np.empty((len(q), self.n, self.n))
        _for_size(kernels.mass_matrix_batch, len(q))(self.packed, q, H)
        return H

    def forward_dynamics(self, q, qd, tau):
        """q̈ (N, n) by the articulated-body algorithm, and the (N,) mask of states it could
        not solve (a joint at rest with sharp dry friction: stiction), whose rows are NaN."""
        q, qd, tau = _contiguous(q, qd, tau)
        qdd = np.empty(q.shape)
        _for_size(kernels.forward_dynamics_batch, len(q))(self.packed, q, qd, tau, qdd)
        stuck = np.zeros(len(q), dtype=bool)
        if self.has_friction:
            _for_size(kernels.stuck_batch, len(q))(self.packed, qd, stuck)
            qdd[stuck] = np.nan
        return qdd, stuck

    def joint_wrenches(self, q, qd, qdd):
        """Joint reaction forces and moments (N, n, 3) each, in the joint frames."""
        q, qd, qdd = _contiguous(q, qd, qdd)
        f, moment = np.empty(q.shape + (3,)), np.empty(q.shape + (3,))
        _for_size(kernels.joint_wrenches_batch, len(q))(self.packed, q, qd, qdd, f, moment)
        return f, moment
