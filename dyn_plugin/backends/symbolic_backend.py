"""The ``symbolic`` backend: customised code generated for one robot, cached on disk.

:mod:`dyn_plugin.symbolic.codegen` writes straight-line inverse dynamics and M(q) for
the model (constants folded, common subexpressions shared, base inertial parameters);
this backend writes that module once per model into the cache directory and imports it
from there afterwards (:mod:`dyn_plugin.symbolic.code_cache`: where the cache is, how a
file is signed and verified, the self-check against the reference recursion, and the
progress messages while a new robot's code is generated and compiled).
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import BackendError
from ..symbolic.code_cache import load_generated
from ..compiled import NO_SINGLE_STATE_PATH, FreeFlyerMap, SingleStateKernels, pack_model
from ..compiled.lanes import run_blocks
from .base import Backend
from .entry_point_path import SingleStateFastPath

LANGS = ("python", "numba")


class SymbolicBackend(SingleStateFastPath, Backend):
    """Customised Newton-Euler code for this model (:mod:`dyn_plugin.symbolic.codegen`).

    Options: ``gravity`` (3,) m/s² (default: the model's); ``lang`` ``"python"`` (NumPy,
    vectorised over the batch; default) or ``"numba"`` (compiled loop, compiled code
    cached by numba next to the module).  ``cache_path`` is the generated file,
    ``cache_hit`` whether it came from the cache, ``counts`` the operations per τ.

    M(q) is generated too (unit-acceleration columns, gravity off, on one expression
    graph).  With ``lang="numba"`` one state goes straight to typed per-state functions,
    batches run in compiled loops over chunks of SIMD lanes (parallel from 2048 states), and forward dynamics solves
    M q̈ = τ − bias by Cholesky in compiled code; with ``"python"`` forward dynamics, bias,
    gravity and Coriolis use the base class's defaults.
    """

    name = "symbolic"
    capabilities = frozenset({"derivatives"})
    description = "customised Newton-Euler code generated per robot (folded constants, shared subexpressions), cached on disk"
    kind = "generated"

    def __init__(self, model, gravity=None, lang: str = "python"):
        super().__init__(model, gravity)
        if lang not in LANGS:
            raise BackendError(f"symbolic backend: lang must be one of {LANGS}, got {lang!r}")
        self.lang = lang
        self._module, self.cache_path, self.cache_hit = load_generated(self.model, lang)
        module = self._module
        self._single = (SingleStateKernels(module.inverse_dynamics_state, module.bias_forces_state,
                                           module.forward_dynamics_state, module.mass_matrix_state,
                                           checks_result=True)
                        if lang == "numba" else NO_SINGLE_STATE_PATH)

    def free_flyer_kernels(self, gravity):
        """The compiled map of a floating robot whose free-flyer chain
        (:func:`dyn_plugin.floating.free_flyer_chain`) is this backend's model, under the
        world's ``gravity`` (3,) m/s² (:class:`~dyn_plugin.compiled.FreeFlyerMap`): with
        ``lang="numba"`` one floating state goes to the generated one-state code through it.
        :class:`~dyn_plugin.backends.floating_base.FloatingBaseBackend` uses it."""
        return FreeFlyerMap(pack_model(self.model), gravity, self._single if self.lang == "numba" else None)

    @property
    def counts(self) -> dict:
        """Multiplications, additions and sin/cos calls per evaluation of τ."""
        return dict(self._module.COUNTS)

    @staticmethod
    def _prepare(*arrays):
        """C-contiguous, writable float64 (numba's typed kernels refuse read-only arrays)."""
        return [np.require(a, np.float64, ("C", "W")) for a in arrays]

    def _loop(self, function: str, shape: tuple, *arrays, module=None, checked: bool = False):
        """A generated batch function of numba code (of ``module``, by default the τ code's)
        without its entry point's checks: blocks of chunks of SIMD lanes, in parallel threads
        for large batches.  The inputs' shapes were validated by Backend._run; with
        ``checked``, returns ``(result, every input and result entry finite)`` from the
        check the blocks make as they go (:func:`dyn_plugin.symbolic.lanes_code._emit_lanes_batch`),
        else the result (Backend._run checks it)."""
        module = self._module if module is None else module
        if self.lang != "numba":
            return getattr(module, function)(*arrays)
        arrays = self._prepare(*arrays)
        out = np.empty(shape)
        total = run_blocks(getattr(module, f"_{function}_blocks"), len(out), module.LANES, *arrays,
                           out.reshape(len(out), -1))
        return (out, total == 0.0) if checked else out

    _CHECKING = frozenset({"_batch_inverse_dynamics", "_batch_mass_matrix", "_batch_bias_forces",
                           "_batch_forward_dynamics", "_batch_inverse_dynamics_derivatives"})

    def _checking_batch(self, method):
        if self.lang == "numba" and getattr(method, "__self__", None) is self and method.__name__ in self._CHECKING:
            return functools.partial(method, checked=True)
        return None

    @functools.cached_property
    def derivative_code(self):
        """The generated ∂τ/∂q, ∂τ/∂q̇ of this model (:mod:`dyn_plugin.symbolic.derivative_code`;
        ``.counts``, ``.source``), generated (and for numba compiled) on first use."""
        from ..symbolic.derivative_code import derivative_code

        return derivative_code(self.model, self.lang)

    @functools.cached_property
    def _derivatives_state(self):
        """The generated one-state derivatives (numba), typed: (q, qd, qdd, dq, dv) -> status."""
        return self.derivative_code.module.inverse_dynamics_derivatives_state

    @functools.cached_property
    def _implicit_single(self):
        """The compiled one-state (A, dq, dv, A⁻¹) -> status of :mod:`dyn_plugin.compiled.derivatives`."""
        from ..compiled import entry_points

        return entry_points.single("implicit")

    def inverse_dynamics_derivatives(self, q, qd, qdd):
        if self.lang == "numba" and getattr(q, "ndim", 0) == 1:      # one state: the typed generated function
            dq, dv = np.empty(self._square), np.empty(self._square)
            try:
                if self._derivatives_state(q, qd, qdd, dq, dv) == 0:
                    return dq, dv
            except TypeError:
                pass
        return super().inverse_dynamics_derivatives(q, qd, qdd)

    def forward_dynamics_derivatives(self, q, qd, tau):
        if self.lang == "numba" and getattr(q, "ndim", 0) == 1:      # one state: typed functions throughout
            qdd, M = np.empty(self._n), np.empty(self._square)
            dq, dv, inverse = np.empty(self._square), np.empty(self._square), np.empty(self._square)
            try:
                if self._single.forward_dynamics(q, qd, tau, qdd) == 0 and self._single.mass_matrix(q, M) == 0 \
                        and self._derivatives_state(q, qd, qdd, dq, dv) == 0 \
                        and self._implicit_single(M, dq, dv, inverse) == 0:
                    return dq, dv, inverse
            except TypeError:
                pass
        return super().forward_dynamics_derivatives(q, qd, tau)

    def _batch_inverse_dynamics_derivatives(self, q, qd, qdd, checked=False):
        from ..symbolic.derivative_code import STACKED

        n = self.model.n
        D = self._loop(STACKED, (len(q), 2, n, n), q, qd, qdd, module=self.derivative_code.module, checked=checked)
        if checked:
            D, finite = D
            return (D[:, 0], D[:, 1]), finite
        return D[:, 0], D[:, 1]

    def _batch_inverse_dynamics(self, q, qd, qdd, checked=False):
        return self._loop("inverse_dynamics", q.shape, q, qd, qdd, checked=checked)

    def _batch_mass_matrix(self, q, checked=False):
        return self._loop("mass_matrix", q.shape + q.shape[-1:], q, checked=checked)

    def _batch_bias_forces(self, q, qd, checked=False):
        if self.lang == "numba":
            return self._loop("bias_forces", q.shape, q, qd, checked=checked)
        return super()._batch_bias_forces(q, qd)

    def _batch_forward_dynamics(self, q, qd, tau, checked=False):
        if self.lang == "numba":
            return self._loop("forward_dynamics", q.shape, q, qd, tau, checked=checked)
        return super()._batch_forward_dynamics(q, qd, tau)


class SymbolicNumbaBackend(SymbolicBackend):
    """The symbolic backend compiled with numba (``lang="numba"``): the fastest of ours."""

    name = "symbolic_numba"
    description = "the symbolic backend's generated code compiled with numba (single states, parallel batches)"

    def __init__(self, model, gravity=None):
        super().__init__(model, gravity, lang="numba")
