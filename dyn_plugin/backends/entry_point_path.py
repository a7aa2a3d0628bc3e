"""One state straight to compiled code: through the kernels' entry points
(:class:`EntryPointPath`), or through a backend's one-state kernels (:class:`SingleStateFastPath`,
the generated code's).

One state goes to the kernels' compiled entry points (:mod:`dyn_plugin.compiled.entry_points`),
past numba's dispatcher, which would spend ~0.2 µs typing the arrays.  The entry point
borrows the arrays (:mod:`dyn_plugin.compiled.borrowed`): anything but a C-contiguous numpy
float64 vector raises TypeError there (a batch too, in ~0.4 µs); the kernel checks the rest
(length, finite input and result, unit quaternions) and returns a status; anything refused
takes :class:`~dyn_plugin.backends.base.Backend`'s validating path, whose errors name the problem.
"""

from __future__ import annotations

from math import isfinite

import numpy as np

from .base import Backend

_empty = np.empty            # one global lookup instead of two, on the one-state paths


class EntryPointPath:
    """Mixin before :class:`Backend`: its one-state methods call compiled entry points.

    The backend sets in its ``__init__``: ``_packed`` (the kernels' packed model, or None),
    ``_size`` (nv), ``_square`` ((nv, nv)), ``_inverse_entry``, ``_bias_entry``,
    ``_forward_entry``, ``_mass_entry`` (entry points, or the refusing stand-ins of
    :data:`dyn_plugin.compiled.NO_SINGLE_STATE_PATH`) and ``_derivative_entries`` (the pair
    of derivative entry points, or None)."""

    def inverse_dynamics(self, q, qd, qdd, f_ext=None):
        if f_ext is None:                            # external wrenches: Backend's path
            tau = _empty(self._size)
            try:
                if self._inverse_entry(self._packed, q, qd, qdd, tau) == 0:
                    return tau
            except TypeError:
                pass
        return Backend.inverse_dynamics(self, q, qd, qdd, f_ext)

    def forward_dynamics(self, q, qd, tau, f_ext=None):
        if f_ext is None:
            qdd = _empty(self._size)
            try:
                if self._forward_entry(self._packed, q, qd, tau, qdd) == 0:
                    return qdd
            except TypeError:
                pass
        return Backend.forward_dynamics(self, q, qd, tau, f_ext)

    def mass_matrix(self, q):
        M = _empty(self._square)
        try:
            if self._mass_entry(self._packed, q, M) == 0:
                return M
        except TypeError:
            pass
        return Backend.mass_matrix(self, q)

    def bias_forces(self, q, qd):
        tau = _empty(self._size)
        try:
            if self._bias_entry(self._packed, q, qd, tau) == 0:
                return tau
        except TypeError:
            pass
        return Backend.bias_forces(self, q, qd)

    def inverse_dynamics_derivatives(self, q, qd, qdd):
        if self._derivative_entries is not None:
            dq, dv = _empty(self._square), _empty(self._square)
            try:
                if self._derivative_entries[0](self._packed, q, qd, qdd, dq, dv) == 0:
                    return dq, dv
            except TypeError:
                pass
        return Backend.inverse_dynamics_derivatives(self, q, qd, qdd)

    def forward_dynamics_derivatives(self, q, qd, tau):
        if self._derivative_entries is not None:
            dq, dv, minv = _empty(self._square), _empty(self._square), _empty(self._square)
            try:
                if self._derivative_entries[1](self._packed, q, qd, tau, dq, dv, minv) == 0:
                    return dq, dv, minv
            except TypeError:
                pass
        return Backend.forward_dynamics_derivatives(self, q, qd, tau)


class SingleStateFastPath:
    """Public methods of :class:`Backend` with a shortcut for one state.

    One state goes straight to its compiled kernel (``self._single``, SingleStateKernels):
    each layer of Python here costs as much as the whole Newton-Euler pass.  Anything
    else - batches, lists, bad input - makes the kernel refuse and takes the validating
    path of Backend, whose errors name the problem.  Batches skip the attempt (a refused
    numba call costs ~100 µs, to build its error message).  The four methods are spelled out
    rather than generated because a shared helper would add a Python call to each, and
    the shapes they allocate are set once (``_n``, ``_square``: ``model.n`` is a property).

    A result that is not finite (overflow) is never returned: our kernels report it in
    their status (``_single.checks_result``), for others the sum of the result is tested
    (NaN or inf whenever an entry is; ~0.2 µs); either way the validating path then
    raises :class:`~dyn_plugin.errors.NumericalError`.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._n, self._square = self.model.n, (self.model.n, self.model.n)

    def inverse_dynamics(self, q, qd, qdd, f_ext=None):
        if f_ext is not None:                        # external wrenches: Backend's path
            return super().inverse_dynamics(q, qd, qdd, f_ext)
        tau = _empty(self._n)
        try:
            if getattr(q, "ndim", 0) == 1 and self._single.inverse_dynamics(q, qd, qdd, tau) == 0 \
                    and (self._single.checks_result or isfinite(sum(tau.tolist()))):
                return tau
        except TypeError:
            pass
        return super().inverse_dynamics(q, qd, qdd)

    def forward_dynamics(self, q, qd, tau, f_ext=None):
        if f_ext is not None:                        # external wrenches: Backend's path
            return super().forward_dynamics(q, qd, tau, f_ext)
        qdd = _empty(self._n)
        try:
            if getattr(q, "ndim", 0) == 1 and self._single.forward_dynamics(q, qd, tau, qdd) == 0 \
                    and (self._single.checks_result or isfinite(sum(qdd.tolist()))):
                return qdd
        except TypeError:
            pass
        return super().forward_dynamics(q, qd, tau)

    def mass_matrix(self, q):
        M = _empty(self._square)
        try:
            if getattr(q, "ndim", 0) == 1 and self._single.mass_matrix(q, M) == 0 \
                    and (self._single.checks_result or isfinite(sum(M.ravel().tolist()))):
                return M
        except TypeError:
            pass
        return super().mass_matrix(q)

    def bias_forces(self, q, qd):
        tau = _empty(self._n)
        try:
            if getattr(q, "ndim", 0) == 1 and self._single.bias(q, qd, tau) == 0 \
                    and (self._single.checks_result or isfinite(sum(tau.tolist()))):
                return tau
        except TypeError:
            pass
        return super().bias_forces(q, qd)
