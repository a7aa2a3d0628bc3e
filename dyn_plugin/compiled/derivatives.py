"""numba kernels: analytic derivatives of inverse and forward dynamics.

Inverse dynamics.  The Newton-Euler recursion of :mod:`.newton_euler` (``_rnea_state``) is
differentiated line by line, once per direction: a seed ``∂/∂q_j`` or ``∂/∂q̇_j`` enters
at link j, travels outwards through j's subtree with the forward pass (ω, ω̇, v̇ and the
link wrench F, N, each linear in the tangent) and back to the base with the backward pass.
This is the forward-mode statement of Carpentier & Mansard's recursive derivatives
(RSS 2018: "Analytical derivatives of rigid body dynamics algorithms"): every direction
costs O(size of the subtree + depth), so a full Jacobian is O(n²) on a chain and O(n·d)
on a tree of depth d, with no finite difference anywhere.

In the kernels' frames (every link frame rotated so that its joint axis is ẑ, see
:mod:`.layout`), with R = R₀' Rz(q) the parent ← link rotation of a revolute joint:

* ``∂R/∂q = R [ẑ]×``: a vector brought into the link, ``x_in = Rᵀ x_p``, turns by
  ``x_in × ẑ``; every forward quantity of link j is built from such vectors and from ẑ,
  so ``∂(ω, ω̇, v̇)_j/∂q_j = (ω, ω̇, v̇)_j × ẑ``; on the way back ``∂(R x) = R (ẑ × x)``;
* prismatic: ``∂p/∂q = R ẑ``, the origin's acceleration gains ``ω̇_p × Rẑ + ω_p × (ω_p × Rẑ)``
  and the parent's moment ``Rẑ × (R f)``;
* ``∂/∂q̇_j``: ω_j gains ẑ and ω̇_j gains ω_j × ẑ (revolute), v̇_j gains 2 ω_j × ẑ (prismatic);
* the link wrench (Khalil's form about the link origin, as in ``_rnea_state``)
  ``F = m v̇ + ω̇×h + ω×(ω×h)``, ``N = I ω̇ + ω×(Iω) + h×v̇`` differentiates by the product rule.

The armature term a q̈ depends on neither q nor q̇.

Forward dynamics (Carpentier & Mansard §IV): with q̈ = FD(q, q̇, τ) and ID(q, q̇, q̈) = τ,
``∂q̈/∂q = −M⁻¹ ∂ID/∂q``, ``∂q̈/∂q̇ = −M⁻¹ ∂ID/∂q̇`` at that q̈, and ``∂q̈/∂τ = M⁻¹``:
one articulated-body pass, the derivatives above, one composite-rigid-body pass and a
Cholesky factorisation, per state.

This hand-differentiated tangent is a second statement of Newton-Euler; it is held to
``_rnea_state`` run on dual numbers (:mod:`.traced`; ``tests/test_statements.py``), so a
term added to the recursion and not here fails there.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .articulated_body import _aba_state
from .composite_rigid_body import _crba_state
from .jit import CHUNK, inline as _inline, jit as _jit, serial_and_parallel as _serial_and_parallel
from .layout import FRAME, INERTIA, KIND, MASS, MOMENT, PARENT, Offsets
from .newton_euler import TERM_ALL, W_ACC, W_ALPHA, W_FORCE, W_MOMENT, W_OMEGA, W_ROWS, _rnea_state
from .scratch import P_ROW, R_ROW, ROWS, _scratch
from .status import BAD_SHAPE, NOT_FINITE_RESULT, OK, _finite_result, _one, _status
from .vectors import _accumulate, _add, _col, _cross, _mat_t_vec, _mat_vec, _packed_mat_vec, _put, _row, _scale

# rows of the scratch W for the tangents, after the nominal pass's (newton_euler.W_ROWS, kept)
TANGENT_ROWS = Offsets((("T_OMEGA", 1), ("T_ALPHA", 1), ("T_ACC", 1), ("T_FORCE", 1), ("T_MOMENT", 1),
                        ("T_MARK", 1)),          # W[i, T_MARK, 0] = 1.0 when link i's tangent may be non-zero
                       W_ROWS.end)
T_OMEGA, T_ALPHA, T_ACC, T_FORCE, T_MOMENT, T_MARK = TANGENT_ROWS.at("T_OMEGA", "T_ALPHA", "T_ACC", "T_FORCE",
                                                                     "T_MOMENT", "T_MARK")
if TANGENT_ROWS.end > ROWS:
    raise ImportError(f"dyn_plugin.compiled.derivatives: the tangents need {TANGENT_ROWS.end} rows of the scratch, "
                      f"scratch.ROWS is {ROWS}")
POSITION, VELOCITY, ACCELERATION = 0, 1, 2      # what a direction seeds: ∂/∂q_j, ∂/∂q̇_j, ∂/∂q̈_j



@_jit
def _turn(x):
    """x × ẑ: how a link-frame vector changes with its own revolute joint's angle."""
    return (x[1], -x[0], 0.0)


@_jit
def _z_cross(x):
    """ẑ × x."""
    return (-x[1], x[0], 0.0)


@_inline
def _seed(P, QD, k, i, seed, W):
    """Tangents (dω, dω̇, dv̇) of link i, the seeded joint, for ∂/∂q_i, ∂/∂q̇_i or ∂/∂q̈_i
    (``seed``: POSITION, VELOCITY or ACCELERATION)."""
    revolute = P[i, KIND] == 0.0
    w = _row(W, i, W_OMEGA)
    zero = (0.0, 0.0, 0.0)
    if seed == ACCELERATION:                         # Fu 3.3-51 (revolute), 3.3-52 (prismatic): + ẑ q̈
        return (zero, (0.0, 0.0, 1.0), zero) if revolute else (zero, zero, (0.0, 0.0, 1.0))
    if seed == VELOCITY:
        if revolute:
            return (0.0, 0.0, 1.0), _turn(w), zero
        return zero, zero, _scale(2.0, _turn(w))
    if revolute:
        return _turn(w), _turn(_row(W, i, W_ALPHA)), _turn(_row(W, i, W_ACC))
    parent = int(P[i, PARENT])
    if parent < 0:                                   # the base does not turn: ∂p shifts nothing
        return zero, zero, zero
    slide = (W[i, R_ROW, 2], W[i, R_ROW + 1, 2], W[i, R_ROW + 2, 2])       # ∂p/∂q = R ẑ
    w_p, wd_p = _row(W, parent, W_OMEGA), _row(W, parent, W_ALPHA)
    d_origin = _add(_cross(wd_p, slide), _cross(w_p, _cross(w_p, slide)))
    return zero, zero, _mat_t_vec(W, i, R_ROW, d_origin)


@_inline
def _carry(P, QD, k, i, W):
    """Tangents (dω, dω̇, dv̇) of link i from its parent's (Fu 3.3-50 to 3.3-52, differentiated)."""
    parent = int(P[i, PARENT])
    p = _row(W, i, P_ROW)
    w_p, dw_p = _row(W, parent, W_OMEGA), _row(W, parent, T_OMEGA)
    dwd_p, dvd_p = _row(W, parent, T_ALPHA), _row(W, parent, T_ACC)
    d_origin = _add(dvd_p, _add(_cross(dwd_p, p), _add(_cross(dw_p, _cross(w_p, p)), _cross(w_p, _cross(dw_p, p)))))
    dw = _mat_t_vec(W, i, R_ROW, dw_p)
    dwd = _mat_t_vec(W, i, R_ROW, dwd_p)
    dvd = _mat_t_vec(W, i, R_ROW, d_origin)
    rate = QD[k, i]
    if P[i, KIND] == 0.0:
        dwd = _add(dwd, _scale(rate, _turn(dw)))
    else:
        dvd = _add(dvd, _scale(2.0 * rate, _turn(dw)))
    return dw, dwd, dvd


@_inline
def _link_wrench_tangent(P, i, W, dw, dwd, dvd):
    """(dF, dN) of link i's Newton-Euler wrench about its origin."""
    w, h, m = _row(W, i, W_OMEGA), _col(P, i, MOMENT), P[i, MASS]
    dF = _add(_scale(m, dvd), _add(_cross(dwd, h), _add(_cross(dw, _cross(w, h)), _cross(w, _cross(dw, h)))))
    Iw, Idw = _packed_mat_vec(P, i, INERTIA, w), _packed_mat_vec(P, i, INERTIA, dw)
    dN = _add(_packed_mat_vec(P, i, INERTIA, dwd), _add(_cross(dw, Iw), _add(_cross(w, Idw), _cross(h, dvd))))
    return dF, dN


@_jit
def _direction(P, QD, k, j, seed, W):
    """The tangents of the joint wrenches (rows T_FORCE, T_MOMENT of every link) along ∂/∂q_j,
    ∂/∂q̇_j or ∂/∂q̈_j (``seed``); W holds the nominal pass of ``_rnea_state`` (rows 0-8, kept)."""
    n = P.shape[0] - 1
    zero = (0.0, 0.0, 0.0)
    for i in range(n):
        W[i, T_MARK, 0] = 0.0
        _put(W, i, T_FORCE, zero)
        _put(W, i, T_MOMENT, zero)
    for i in range(j, n):                            # forward: j's subtree (parents come first)
        if i == j:
            dw, dwd, dvd = _seed(P, QD, k, i, seed, W)
        elif int(P[i, PARENT]) >= j and W[int(P[i, PARENT]), T_MARK, 0] != 0.0:
            dw, dwd, dvd = _carry(P, QD, k, i, W)
        else:
            continue
        W[i, T_MARK, 0] = 1.0
        _put(W, i, T_OMEGA, dw)
        _put(W, i, T_ALPHA, dwd)
        _put(W, i, T_ACC, dvd)
        dF, dN = _link_wrench_tangent(P, i, W, dw, dwd, dvd)
        _put(W, i, T_FORCE, dF)
        _put(W, i, T_MOMENT, dN)
    turning = seed == POSITION and P[j, KIND] == 0.0
    for i in range(n - 1, -1, -1):                   # backward: Fu 3.3-56, 3.3-57 differentiated
        if W[i, T_MARK, 0] != 0.0:
            parent = int(P[i, PARENT])
            if parent >= 0:
                f, moment = _row(W, i, W_FORCE), _row(W, i, W_MOMENT)
                df, dn = _row(W, i, T_FORCE), _row(W, i, T_MOMENT)
                if i == j and turning:               # ∂R = R [ẑ]×
                    df, dn = _add(df, _z_cross(f)), _add(dn, _z_cross(moment))
                Rdf = _mat_vec(W, i, R_ROW, df)
                dmoment = _add(_mat_vec(W, i, R_ROW, dn), _cross(_row(W, i, P_ROW), Rdf))
                if i == j and seed == POSITION and P[j, KIND] != 0.0:    # ∂p = R ẑ
                    slide = (W[i, R_ROW, 2], W[i, R_ROW + 1, 2], W[i, R_ROW + 2, 2])
                    dmoment = _add(dmoment, _cross(slide, _mat_vec(W, i, R_ROW, f)))
                _accumulate(W, parent, T_FORCE, Rdf)
                _accumulate(W, parent, T_MOMENT, dmoment)
                W[parent, T_MARK, 0] = 1.0


@_inline
def _torque_column(P, W, k, j, OUT):
    """Column j of OUT[k]: the tangents of τ, the joint wrenches along the axes."""
    for i in range(P.shape[0] - 1):
        OUT[k, i, j] = W[i, T_MOMENT, 2] if P[i, KIND] == 0.0 else W[i, T_FORCE, 2]


@_jit
def _id_derivatives_state(P, Q, QD, QDD, k, W, DQ, DV):
    """∂τ/∂q and ∂τ/∂q̇ (n, n) of state k into DQ[k], DV[k]."""
    n = P.shape[0] - 1
    _rnea_state(P, Q, QD, QDD, k, TERM_ALL, W)
    for j in range(n):
        _direction(P, QD, k, j, POSITION, W)
        _torque_column(P, W, k, j, DQ)
        _direction(P, QD, k, j, VELOCITY, W)
        _torque_column(P, W, k, j, DV)


@_jit
def _inverse_dynamics_derivatives_rows(P, Q, QD, QDD, DQ, DV):
    """∂τ/∂q, ∂τ/∂q̇ (rows, n, n) of the states (rows) of Q, QD, QDD."""
    W = _scratch(P)
    for k in range(Q.shape[0]):
        _id_derivatives_state(P, Q, QD, QDD, k, W, DQ, DV)


def _inverse_dynamics_derivatives_batch(P, Q, QD, QDD, DQ, DV):
    N = Q.shape[0]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        rows = slice(chunk * CHUNK, min(N, (chunk + 1) * CHUNK))
        _inverse_dynamics_derivatives_rows(P, Q[rows], QD[rows], QDD[rows], DQ[rows], DV[rows])


inverse_dynamics_derivatives_batch = _serial_and_parallel(_inverse_dynamics_derivatives_batch)


@_jit
def _joint_wrench_derivatives_rows(P, Q, QD, QDD, DW):
    """DW (rows, 3, n, n, 6): ``[k, s, j, i]`` = ∂(f_i, n_i)/∂x_j of the joint wrenches (as
    ``newton_euler._joint_wrenches_rows``: in joint i's URDF frame), x = q, q̇, q̈ for s = 0, 1, 2."""
    n = P.shape[0] - 1
    W = _scratch(P)
    for k in range(Q.shape[0]):
        _rnea_state(P, Q, QD, QDD, k, TERM_ALL, W)
        for s in range(3):
            for j in range(n):
                _direction(P, QD, k, j, s, W)
                for i in range(n):
                    f = _packed_mat_vec(P, i, FRAME, _row(W, i, T_FORCE))
                    moment = _packed_mat_vec(P, i, FRAME, _row(W, i, T_MOMENT))
                    for a in range(3):
                        DW[k, s, j, i, a] = f[a]
                        DW[k, s, j, i, 3 + a] = moment[a]


def _joint_wrench_derivatives_batch(P, Q, QD, QDD, DW):
    N = Q.shape[0]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        rows = slice(chunk * CHUNK, min(N, (chunk + 1) * CHUNK))
        _joint_wrench_derivatives_rows(P, Q[rows], QD[rows], QDD[rows], DW[rows])


joint_wrench_derivatives_batch = _serial_and_parallel(_joint_wrench_derivatives_batch)


# -- forward dynamics ------------------------------------------------------------------------

@_jit
def _implicit(A, DQ, DV, MINV, X):
    """DQ ← −A⁻¹ DQ, DV ← −A⁻¹ DV, MINV ← A⁻¹ for one state's ∂τ/∂q̈ = A (n, n; not written),
    by Gaussian elimination with partial pivoting on X = [A | DQ | DV | 1] (n, 4n scratch):
    A is M for rigid bodies, and not symmetric with load-dependent friction.  False (the
    outputs unspecified) when a pivot is 0 or not finite: A is singular."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            X[i, j], X[i, n + j], X[i, 2 * n + j], X[i, 3 * n + j] = A[i, j], DQ[i, j], DV[i, j], 0.0
        X[i, 3 * n + i] = 1.0
    for j in range(n):
        pivot = j
        for i in range(j + 1, n):
            if abs(X[i, j]) > abs(X[pivot, j]):
                pivot = i
        if not abs(X[pivot, j]) > 0.0 or not np.isfinite(X[pivot, j]):
            return False
        if pivot != j:
            for c in range(j, 4 * n):
                X[j, c], X[pivot, c] = X[pivot, c], X[j, c]
        inverse = 1.0 / X[j, j]
        for i in range(n):
            if i != j and X[i, j] != 0.0:
                factor = X[i, j] * inverse
                for c in range(j, 4 * n):
                    X[i, c] -= factor * X[j, c]
    for i in range(n):
        inverse = 1.0 / X[i, i]
        for j in range(n):
            DQ[i, j] = -X[i, n + j] * inverse
            DV[i, j] = -X[i, 2 * n + j] * inverse
            MINV[i, j] = X[i, 3 * n + j] * inverse
    return True


@_jit
def _forward_dynamics_derivatives_rows(P, Q, QD, TAU, QDD, DQ, DV, MINV):
    """q̈ and ∂q̈/∂q, ∂q̈/∂q̇, M⁻¹ (rows, n, n) of the states (rows) of Q, QD, TAU; a state
    whose M is singular gets NaN in MINV (the caller names the problem)."""
    n = P.shape[0] - 1
    W = _scratch(P)
    M, X = np.empty((1, n, n)), np.empty((n, 4 * n))
    for k in range(Q.shape[0]):
        _aba_state(P, Q, QD, TAU, QDD, k, W)
        _id_derivatives_state(P, Q, QD, QDD, k, W, DQ, DV)
        _crba_state(P, Q[k:k + 1], 0, M, W, False)
        if not _implicit(M[0], DQ[k], DV[k], MINV[k], X):
            MINV[k, 0, 0] = np.nan


def _implicit_batch(A, DQ_IN, DV_IN, DQ, DV, MINV):
    """:func:`_implicit` for every state: A, MINV (N, n, n); DQ_IN, DV_IN (N, n, n, any
    strides: views of a stacked result need no copy) into DQ, DV, each state's copied in
    the parallel loop (a serial copy of the whole inputs cost more than the solves)."""
    N, n = A.shape[0], A.shape[1]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        X = np.empty((n, 4 * n))
        for k in range(chunk * CHUNK, min(N, (chunk + 1) * CHUNK)):
            DQ[k], DV[k] = DQ_IN[k], DV_IN[k]
            if not _implicit(A[k], DQ[k], DV[k], MINV[k], X):
                MINV[k, 0, 0] = np.nan


implicit_batch = _serial_and_parallel(_implicit_batch)


def _forward_dynamics_derivatives_batch(P, Q, QD, TAU, QDD, DQ, DV, MINV):
    N = Q.shape[0]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        rows = slice(chunk * CHUNK, min(N, (chunk + 1) * CHUNK))
        _forward_dynamics_derivatives_rows(P, Q[rows], QD[rows], TAU[rows], QDD[rows], DQ[rows], DV[rows],
                                           MINV[rows])


forward_dynamics_derivatives_batch = _serial_and_parallel(_forward_dynamics_derivatives_batch)


# -- one state: arguments and result checked in the kernel (entry_points.single, entry_points.entry_point) --

@_jit
def _finite_matrices(n, *matrices):
    status = OK
    for X in matrices:
        for i in range(n):
            status |= _finite_result(X[i])
    return status


@_jit
def _square(n, *matrices):
    for X in matrices:
        if X.shape[0] != n or X.shape[1] != n:
            return False
    return True


def inverse_dynamics_derivatives_single(P, q, qd, qdd, DQ, DV):
    """∂τ/∂q, ∂τ/∂q̇ (n, n) of one state into DQ, DV; returns a status (status.OK = 0)."""
    n = P.shape[0] - 1
    status = _status(n, q, qd, qdd)
    if status == OK and _square(n, DQ, DV):
        _inverse_dynamics_derivatives_rows(P, _one(q), _one(qd), _one(qdd), DQ[None], DV[None])
        status = _finite_matrices(n, DQ, DV)
    return status


def forward_dynamics_derivatives_single(P, q, qd, tau, DQ, DV, MINV):
    """∂q̈/∂q, ∂q̈/∂q̇, M⁻¹ (n, n) of one state into DQ, DV, MINV; returns a status (a mass
    matrix that is not positive definite: NOT_FINITE_RESULT)."""
    n = P.shape[0] - 1
    status = _status(n, q, qd, tau)
    if status == OK and _square(n, DQ, DV, MINV):
        qdd = np.empty(n)
        _forward_dynamics_derivatives_rows(P, _one(q), _one(qd), _one(tau), _one(qdd), DQ[None], DV[None],
                                           MINV[None])
        status = _finite_matrices(n, DQ, DV, MINV)
    return status


def implicit_single(A, DQ, DV, MINV):
    """:func:`_implicit` for one state (A, DQ, DV, MINV (n, n); DQ, DV in place); returns a
    status: NOT_FINITE_RESULT when A is singular or a result is not finite."""
    n = A.shape[0]
    if not _square(n, A, DQ, DV, MINV):
        return BAD_SHAPE
    if not _implicit(A, DQ, DV, MINV, np.empty((n, 4 * n))):
        return NOT_FINITE_RESULT
    return _finite_matrices(n, DQ, DV, MINV)

