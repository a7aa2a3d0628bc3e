"""Compiled rigid-body dynamics: the fast path of the ``newton_euler`` backend.

:class:`CompiledDynamics` runs the numba kernels of :mod:`.newton_euler` (Fu Table 3.3),
:mod:`.composite_rigid_body` (Featherstone 2008 Table 6.2) and :mod:`.articulated_body`
(Featherstone 2008 Table 7.1) on a model packed by :mod:`.layout`.  It knows rigid bodies,
their gravity (the model's) and rotor inertia (armature) on M's diagonal, nothing else;
which terms of τ = M q̈ + C q̇ + g it evaluates is a :class:`~dyn_plugin.terms.Terms`.

Its batch methods take C-contiguous float arrays of shape (N, n) that the caller has
validated (:class:`~dyn_plugin.backends.base.Backend` does), and its ``single`` kernels
are the low-overhead path for one state: they return a non-zero status (or raise
TypeError) instead of computing when the input is not finite float64 vectors of length
n, and a non-zero status when the result is not finite (float64 overflow, e.g. q̇ =
1e300), so that the caller falls back to the validating path and its clear error
messages (see :class:`~dyn_plugin.backends.entry_point_path.SingleStateFastPath`).  Its
``entry_points`` are the same kernels past numba's dispatcher (``kernel(packed, ...)``,
:func:`.entry_points.entry_point`): they borrow their arrays (:mod:`.borrowed`) and raise
TypeError for anything but C-contiguous numpy float64 arrays of the declared dimensions
(:class:`~dyn_plugin.backends.newton_euler_backend.NewtonEulerBackend` calls them).
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import numpy as np

from ..terms import Terms, as_terms
from ..arrays import contiguous
from ..loops import for_size
from .cache import install as _stamp_the_cache

_stamp_the_cache()                   # before any kernel below is decorated (see .cache)

from . import (articulated_body, cholesky, composite_rigid_body, derivatives, entry_points, free_flyer,  # noqa: E402
               free_flyer_lanes, newton_euler)
from .borrowed import MATRIX, VECTOR, entry_of  # noqa: E402
from .lane_blocks import BLOCK  # noqa: E402
from .layout import pack_model  # noqa: E402

__all__ = ["CompiledDynamics", "FreeFlyerKernels", "FreeFlyerMap", "NO_SINGLE_STATE_PATH", "SingleStateKernels",
           "implicit_derivatives", "pack_model", "shifted_spd_solve"]


def shifted_spd_solve(M, d, B):
    """X (N, n) with (M[k] + diag d) X[k] = B[k], by Cholesky: M (N, n, n) symmetric (e.g.
    mass matrices), d (n,) (e.g. the armature), M + diag d positive definite.  The typed
    one-state version is ``entry_points.single("shifted_spd_solve")(M, d, b, x) -> status``."""
    M, d, B = contiguous(M, d, B)
    X = np.empty(B.shape)
    for_size(cholesky.shifted_spd_solve_batch, len(B))(M, d, B, X)
    return X


def implicit_derivatives(A, dq, dv):
    """(−A⁻¹ dq, −A⁻¹ dv, A⁻¹), each (N, n, n), for A = ∂τ/∂q̈ (N, n, n) and the inverse
    dynamics' dq = ∂τ/∂q, dv = ∂τ/∂q̇: the derivatives of forward dynamics (implicit
    functions), by Gaussian elimination with partial pivoting per state (A need not be
    symmetric); a singular A gives NaN in its A⁻¹."""
    (A,) = contiguous(A)
    out_q, out_v, inverse = np.empty(A.shape), np.empty(A.shape), np.empty(A.shape)
    for_size(derivatives.implicit_batch, len(A))(A, np.asarray(dq, dtype=float), np.asarray(dv, dtype=float),
                                                  out_q, out_v, inverse)
    return out_q, out_v, inverse


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


_SINGLE = ("inverse_dynamics", "bias", "forward_dynamics", "mass_matrix")     # the fields of SingleStateKernels


def _refuse(*args) -> int:
    return -1


NO_SINGLE_STATE_PATH = SingleStateKernels(_refuse, _refuse, _refuse, _refuse, True)
"""What a backend without compiled kernels uses: every call is refused (status -1)."""


class CompiledDynamics:
    """Rigid-body dynamics of one model, with its gravity (``model.with_gravity(g)`` for
    another) and, if given, armature (n,) on M's diagonal, compiled.  Shapes: q, q̇, q̈, τ
    (N, n); M (N, n, n); wrenches (N, n, 3)."""

    def __init__(self, model, armature=None):
        self.n = model.n
        self.packed = pack_model(model, armature)
        self.single = SingleStateKernels(*(functools.partial(entry_points.single(name), self.packed) for name in _SINGLE),
                                         checks_result=True)
        self.entry_points = SingleStateKernels(*(entry_points.entry_point(name) for name in _SINGLE), checks_result=True)

    @functools.cached_property
    def derivative_entry_points(self) -> tuple:
        """The one-state derivative kernels past numba's dispatcher (as ``entry_points``):
        ``(inverse(packed, q, qd, qdd, dq, dv), forward(packed, q, qd, tau, dq, dv, minv))``
        -> status, compiled on first use."""
        return tuple(entry_points.entry_point(name)
                     for name in ("inverse_dynamics_derivatives", "forward_dynamics_derivatives"))

    # -- batches ---------------------------------------------------------------------------

    def torques(self, q, qd, qdd, terms=Terms.ALL):
        """The ``terms`` (a :class:`~dyn_plugin.terms.Terms`) of τ = M q̈ + C(q, q̇) q̇ + g(q)
        (N, n), the armature q̈ with ``Terms.INERTIA``; q̇ (q̈) is not read without
        ``Terms.VELOCITY`` (``Terms.INERTIA``)."""
        q, qd, qdd = contiguous(q, qd, qdd)
        return self._torques(q, qd, qdd, int(as_terms(terms)))

    def inverse_dynamics(self, q, qd, qdd):
        """τ = M(q) q̈ + C(q, q̇) q̇ + g(q), armature included (N, n)."""
        q, qd, qdd = contiguous(q, qd, qdd)
        return self._torques(q, qd, qdd, newton_euler.TERM_ALL)

    def bias_forces(self, q, qd):
        """C(q, q̇) q̇ + g(q) (N, n)."""
        q, qd = contiguous(q, qd)
        return self._torques(q, qd, q, newton_euler.TERM_BIAS)

    def gravity_torques(self, q):
        """g(q) (N, n)."""
        (q,) = contiguous(q)
        return self._torques(q, q, q, newton_euler.TERM_GRAVITY)

    def velocity_terms(self, q, qd):
        """C(q, q̇) q̇ alone: gravity off (N, n)."""
        q, qd = contiguous(q, qd)
        return self._torques(q, qd, q, newton_euler.TERM_VELOCITY)

    def _torques(self, q, qd, qdd, terms: int):
        tau = np.empty(q.shape)
        for_size(newton_euler.inverse_dynamics_batch, len(q))(self.packed, q, qd, qdd, terms, tau)
        return tau

    def mass_matrix(self, q):
        """M(q) + diag(armature) (N, n, n), by the composite-rigid-body algorithm."""
        (q,) = contiguous(q)
        H = np.empty((len(q), self.n, self.n))
        for_size(composite_rigid_body.mass_matrix_batch, len(q))(self.packed, q, H)
        return H

    def forward_dynamics(self, q, qd, tau):
        """q̈ (N, n) by the articulated-body algorithm, armature included, across SIMD lanes
        (:mod:`.articulated_body`)."""
        q, qd, tau = contiguous(q, qd, tau)
        qdd = np.empty(q.shape)
        for_size(articulated_body.forward_dynamics_batch, len(q))(self.packed, q, qd, tau, qdd)
        return qdd

    def joint_wrenches(self, q, qd, qdd):
        """Joint reaction forces and moments (N, n, 3) each, in the joint frames."""
        q, qd, qdd = contiguous(q, qd, qdd)
        f, moment = np.empty(q.shape + (3,)), np.empty(q.shape + (3,))
        for_size(newton_euler.joint_wrenches_batch, len(q))(self.packed, q, qd, qdd, f, moment)
        return f, moment

    # -- derivatives (:mod:`.derivatives`) ---------------------------------------------------

    def inverse_dynamics_derivatives(self, q, qd, qdd):
        """(∂τ/∂q, ∂τ/∂q̇), each (N, n, n): ``[k, i, j] = ∂τ_i/∂x_j`` of state k."""
        q, qd, qdd = contiguous(q, qd, qdd)
        dq, dv = np.empty((len(q), self.n, self.n)), np.empty((len(q), self.n, self.n))
        for_size(derivatives.inverse_dynamics_derivatives_batch, len(q))(self.packed, q, qd, qdd, dq, dv)
        return dq, dv

    def joint_wrench_derivatives(self, q, qd, qdd):
        """∂(f, n)/∂(q, q̇, q̈) of :meth:`joint_wrenches`: (N, 3, n, n, 6), ``[k, s, j, i]`` the
        force (0:3) and moment (3:6) of joint i along x_j, x = q, q̇, q̈ for s = 0, 1, 2."""
        q, qd, qdd = contiguous(q, qd, qdd)
        out = np.empty((len(q), 3, self.n, self.n, 6))
        for_size(derivatives.joint_wrench_derivatives_batch, len(q))(self.packed, q, qd, qdd, out)
        return out

    def forward_dynamics_derivatives(self, q, qd, tau):
        """(∂q̈/∂q, ∂q̈/∂q̇, M⁻¹), each (N, n, n), armature included; a state whose M is not
        positive definite has NaN in its M⁻¹."""
        q, qd, tau = contiguous(q, qd, tau)
        N = len(q)
        qdd = np.empty(q.shape)
        dq, dv, minv = (np.empty((N, self.n, self.n)) for _ in range(3))
        for_size(derivatives.forward_dynamics_derivatives_batch, N)(self.packed, q, qd, tau, qdd, dq, dv, minv)
        return dq, dv, minv


class FreeFlyerMap:
    """The map of a floating-base robot's states to its free-flyer chain's, compiled
    (:mod:`.free_flyer`), for a backend that runs the chain: the chain's packed model
    ``chain_packed`` (:func:`.layout.pack_model`) with the world's ``gravity`` (3,) m/s²;
    q (N, nq), v (N, nv).  With the chain backend's typed one-state kernels ``single`` (a
    :class:`SingleStateKernels`, e.g. the generated code's) one floating state goes to
    ``entry_points`` (:func:`.free_flyer.chain_entries`: the map, then those kernels, all
    compiled), else they refuse (status -1)."""

    derivative_entry_points = None

    def __init__(self, chain_packed, gravity, single=None):
        self.packed = free_flyer.pack_free_flyer(chain_packed, gravity)
        self.entry_points = NO_SINGLE_STATE_PATH[:4] if single is None else _chain_entries(
            single.inverse_dynamics, single.forward_dynamics, single.mass_matrix)

    def offsets(self, q, v, velocity: bool = True, gravity: bool = True):
        """``(d, unit)``: d (N, 6), the base entries of the chain's q̈ − a (its ``velocity``
        and ``gravity`` parts) of states q (N, nq), v (N, nv) (validated, C-contiguous);
        ``unit`` False when d has a NaN: a quaternion that is not unit within the tolerance
        (its d is then unspecified: the caller names the state), or an overflow."""
        q, v = contiguous(q, v)
        d = np.empty((len(q), free_flyer.BASE_V))
        for_size(free_flyer.offsets_batch, len(q))(self.packed, q, v, bool(velocity), bool(gravity), d)
        return d, not np.isnan(d[:, 0].sum())

    def base_columns(self, q, v, M, dq, dv) -> None:
        """The chain's ∂τ/∂q, ∂τ/∂v (N, nv, nv) at the chain states made the floating robot's,
        in place (:func:`.free_flyer._base_columns`); M (N, nv, nv) the mass matrices."""
        q, v, M = contiguous(q, v, M)
        for_size(free_flyer.base_columns_batch, len(q))(self.packed, q, v, M, dq, dv)


@functools.lru_cache(maxsize=None)
def _chain_entries(inverse, forward, mass) -> tuple:
    """:func:`.free_flyer.chain_entries` for these kernels, compiled once per process, past
    numba's dispatcher where the arrays can be borrowed (:func:`.borrowed.entry_of`)."""
    return tuple(entry_of(kernel) for kernel in free_flyer.chain_entries(inverse, forward, mass, VECTOR, MATRIX))


class FreeFlyerKernels(FreeFlyerMap):
    """A floating-base robot's kernels (:mod:`.free_flyer`, :mod:`.free_flyer_lanes`): its
    free-flyer chain's packed model ``chain_packed`` (:attr:`CompiledDynamics.packed` of the
    chain) with the world's ``gravity`` (3,) m/s², for the floating state itself: q (nq,) or
    (N, nq), v, a, τ (nv,) or (N, nv).

    ``entry_points``: the one-state kernels past numba's dispatcher, ``(inverse(P, q, v, a,
    tau), bias(P, q, v, tau), forward(P, q, v, tau, a), mass(P, q, M), inverse derivatives(P,
    q, v, a, dq, dv), forward derivatives(P, q, v, tau, dq, dv, minv))`` -> status
    (:mod:`.status`; a quaternion whose norm is not 1 within ``free_flyer.UNIT_TOLERANCE``:
    ``free_flyer.BAD_QUATERNION``), the last two compiled on first use."""

    def __init__(self, chain_packed, gravity):
        self.packed = free_flyer.pack_free_flyer(chain_packed, gravity)
        self.entry_points = tuple(entry_points.entry_point(f"free_flyer_{name}")
                                  for name in ("inverse_dynamics", "bias", "forward_dynamics", "mass_matrix"))

    @functools.cached_property
    def derivative_entry_points(self) -> tuple:
        """``(inverse(P, q, v, a, dq, dv), forward(P, q, v, tau, dq, dv, minv))`` -> status."""
        return tuple(entry_points.entry_point(f"free_flyer_{name}")
                     for name in ("inverse_dynamics_derivatives", "forward_dynamics_derivatives"))

    def torques(self, q, v, a, terms=Terms.ALL):
        """``(τ, unit)``: the ``terms`` (a :class:`~dyn_plugin.terms.Terms`) of τ (N, nv) of
        the floating states q (N, nq), v, a (N, nv) (validated), the recursion started from
        the base's motion (:mod:`.free_flyer_lanes`); ``unit`` False when a quaternion is not
        unit within the tolerance (the caller names it)."""
        q, v, a = contiguous(q, v, a)
        tau = np.empty(v.shape)
        bad = np.empty((len(q) + BLOCK - 1) // BLOCK, dtype=np.int64)
        for_size(free_flyer_lanes.torques_batch, len(q))(self.packed, q, v, a, int(as_terms(terms)), tau, bad)
        return tau, not bad.any()

    def forward_dynamics(self, q, v, tau):
        """``(a, unit)``: a (N, nv) of the floating states q (N, nq), v, τ (N, nv) (validated)
        by the articulated-body algorithm started from the base (:mod:`.free_flyer_lanes`);
        ``unit`` as for :meth:`torques`."""
        q, v, tau = contiguous(q, v, tau)
        a = np.empty(v.shape)
        bad = np.empty((len(q) + BLOCK - 1) // BLOCK, dtype=np.int64)
        for_size(free_flyer_lanes.forward_dynamics_batch, len(q))(self.packed, q, v, tau, a, bad)
        return a, not bad.any()

    def mass_matrix(self, q):
        """``(M, fine)``: M (N, nv, nv) of configurations q (N, nq) (shape-validated) by the
        composite-rigid-body lanes form, the free-flyer's six joints in closed form
        (:func:`.free_flyer.mass_matrix_batch`); ``fine`` False when an entry of q or M is not
        finite or a quaternion is not unit within the tolerance (the caller names it)."""
        (q,) = contiguous(q)
        H = np.empty((len(q), q.shape[1] - 1, q.shape[1] - 1))
        check = np.empty((len(q) + BLOCK - 1) // BLOCK)
        for_size(free_flyer.mass_matrix_batch, len(q))(self.packed, q, H, check)
        return H, check.sum() == 0.0
