"""The Newton-Euler backend: the compiled kernels (:mod:`dyn_plugin.compiled`), or the
readable numpy recursions of :mod:`dyn_plugin.algorithms` with ``compiled=False``.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..algorithms import articulated_body as aba
from ..algorithms import composite_rigid_body as crba
from ..algorithms import newton_euler as ne
from ..compiled import NO_SINGLE_STATE_PATH, CompiledDynamics, FreeFlyerKernels, entry_points
from ..compiled.newton_euler import inverse_dynamics_block
from ..terms import Terms
from .base import Backend, batch_args, check_finite, numpy_checked_afterwards, rotor_armature
from .entry_point_path import EntryPointPath

_empty = np.empty            # one global lookup instead of two, on the one-state paths




class NewtonEulerBackend(EntryPointPath, Backend):
    """Recursive Newton-Euler in link frames (Fu Table 3.3 / eq. 3.3-57), O(n) per τ.

    Forward dynamics by Featherstone's articulated-body algorithm, O(n); the mass matrix by
    the composite-rigid-body algorithm (compiled) or unit-acceleration probing (reference).
    Also exposes the joint reaction wrenches, which friction models need.

    ``compiled=True`` (default) runs the numba kernels of :mod:`dyn_plugin.compiled`, in
    parallel for large batches; ``compiled=False`` the readable numpy reference of
    :mod:`dyn_plugin.algorithms`, which the tests hold equal to the kernels to 1e-12.
    ``armature`` (n,), kg·m² (kg for a prismatic joint): rotor inertia on M's diagonal, as
    pinocchio's ``model.armature`` (τ gains a q̈; joint wrenches are the links' alone).
    """

    name = "newton_euler"
    description = "recursive Newton-Euler in link frames (Luh-Walker-Paul; Fu Table 3.3) + articulated-body forward dynamics, trees; numba-compiled"
    capabilities = frozenset({"joint_wrenches", "single_state_kernels", "block_kernels", "derivatives"})

    def __init__(self, model, gravity=None, compiled: bool = True, armature=None):
        super().__init__(model, gravity)
        self.compiled = bool(compiled)
        self.armature = rotor_armature(armature, self.model)
        self._fast = CompiledDynamics(self.model, self.armature) if self.compiled else None
        entry = self._fast.entry_points if self.compiled else NO_SINGLE_STATE_PATH     # one lookup each, below
        self._inverse_entry, self._bias_entry, self._forward_entry, self._mass_entry = entry[:4]
        self._packed = self._fast.packed if self.compiled else None
        self._size, self._square = self.model.n, (self.model.n, self.model.n)
        self._derivative_entries = self._fast.derivative_entry_points if self.compiled else None
        if self.compiled:
            self._rigid_kernels = self._fast          # the derivatives' kernels too (Backend's cached property)

    def _checked_arithmetic(self):
        return contextlib.nullcontext() if self.compiled else numpy_checked_afterwards()

    def _batch_inverse_dynamics(self, q, qd, qdd):
        if self.compiled:
            return self._fast.inverse_dynamics(q, qd, qdd)
        return ne.inverse_dynamics(self.model, q, qd, qdd) + self.armature * qdd

    def _batch_mass_matrix(self, q):
        return self._fast.mass_matrix(q) if self.compiled else crba.mass_matrix(self.model, q, self.armature)

    def _batch_bias_forces(self, q, qd):
        if self.compiled:
            return self._fast.bias_forces(q, qd)
        return ne.inverse_dynamics(self.model, q, qd, q, Terms.BIAS)

    def _batch_gravity_torques(self, q):
        if self.compiled:
            return self._fast.gravity_torques(q)
        return ne.inverse_dynamics(self.model, q, q, q, Terms.GRAVITY)

    def _batch_velocity_terms(self, q, qd):
        if self.compiled:
            return self._fast.velocity_terms(q, qd)
        return ne.inverse_dynamics(self.model, q, qd, q, Terms.VELOCITY)

    def _batch_forward_dynamics(self, q, qd, tau):
        if self.compiled:
            return self._fast.forward_dynamics(q, qd, tau)
        return aba.forward_dynamics(self.model, q, qd, tau, self.armature)

    def _batch_forward_dynamics_derivatives(self, q, qd, tau):
        if self.compiled:
            return self._fast.forward_dynamics_derivatives(q, qd, tau)
        return Backend._batch_forward_dynamics_derivatives(self, q, qd, tau)

    def single_state_kernels(self):
        """``((inverse, forward), P)``: the compiled one-state kernels and the packed model
        they read (:mod:`dyn_plugin.compiled.entry_points`), or None with ``compiled=False``."""
        if not self.compiled:
            return None
        return (entry_points.single("inverse_dynamics"), entry_points.single("forward_dynamics")), self._fast.packed

    def block_kernels(self):
        """``(inverse, P)``: the compiled kernel ``inverse(P, Q, QD, QDD, TAU, start, stop)``
        that writes τ of the states start..stop−1 of a batch (one task of a batch loop:
        :func:`dyn_plugin.compiled.newton_euler.inverse_dynamics_block`) and the packed model
        it reads, or None with ``compiled=False``."""
        if not self.compiled:
            return None
        return inverse_dynamics_block, self._fast.packed

    def free_flyer_kernels(self, gravity):
        """The compiled kernels of a floating robot whose free-flyer chain
        (:func:`dyn_plugin.floating.free_flyer_chain`) is this backend's model, under the
        world's ``gravity`` (3,) m/s² (:class:`~dyn_plugin.compiled.FreeFlyerKernels`); None
        with ``compiled=False``.  :class:`~dyn_plugin.backends.floating_base.FloatingBaseBackend`
        routes the floating states to them."""
        return FreeFlyerKernels(self._packed, gravity) if self.compiled else None

    def joint_wrenches(self, q, qd, qdd):
        """Force and moment that link ``parent(i)`` exerts on link ``i`` at joint ``i``.

        Returns ``(f, n)``, each (n_joints, 3) or (N, n_joints, 3), in N and N·m,
        expressed in joint ``i``'s frame (its joint axis is ``model.axes[i]``).
        """
        (q, qd, qdd), single = batch_args(self.model.n, self.model.joint_names, q=q, qd=qd, qdd=qdd)
        f, moment = check_finite("joint_wrenches", self._joint_wrenches(q, qd, qdd), self.model, single,
                                 q=q, qd=qd, qdd=qdd)
        return (f[0], moment[0]) if single else (f, moment)

    def _joint_wrenches(self, q, qd, qdd):
        if self.compiled:
            return self._fast.joint_wrenches(q, qd, qdd)
        return ne.joint_wrenches(self.model, q, qd, qdd)
