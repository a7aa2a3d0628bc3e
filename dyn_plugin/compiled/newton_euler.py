"""Recursive Newton-Euler inverse dynamics, compiled: per state, and over a batch across
SIMD lanes (Fu, Gonzalez & Lee 1987, Table 3.3; link wrenches about the link origin as in
Khalil's customised form).  The readable statement, which these are held to, is
:mod:`dyn_plugin.algorithms.newton_euler`.

Per state (the statement that more than numba runs):

* ``_rnea_state(P, Q, QD, QDD, k, terms, W)``: the joint wrenches of state k into the
  scratch W (:mod:`.scratch`), on scalars, 3-vectors as tuples.  It uses ``+``, ``-``,
  ``*``, ``/`` and ``cos``/``sin`` only, so :mod:`.traced` runs the same source on exact
  trigonometric polynomials (the symbolic derivation,
  :mod:`dyn_plugin.symbolic.newton_derivation`) and on dual numbers (the check of the hand
  tangent of :mod:`.derivatives`).  Keep it that way: no numpy function on a number inside
  ``_rnea_state`` and its helpers (``cos``/``sin`` are :mod:`.trigonometry`'s, by name);
* ``_inverse_dynamics_rows``: the loop over the states (rows) the core is inlined into,
  with W on its stack; one state, a batch, serially or in parallel, run that machine code;
* ``inverse_dynamics_single``, ``bias_single``: one state, arguments and result checked in
  the kernel (a status, :mod:`.status`), typed by :mod:`.entry_points`;
* ``joint_wrenches_batch``: the wrenches themselves, (serial, parallel) loops over N states.

Over a batch: ``inverse_dynamics_lanes`` does the same recursion one link at a time for
:data:`.lane_blocks.LANES` states (read :mod:`.lane_blocks` first), and
``inverse_dynamics_batch`` runs it over N states; it falls back on
``_inverse_dynamics_rows`` for angles its sine cannot take.  The two forms agree to
rounding (``tests/test_statements.py``).

``terms`` (an int of TERM_* bits, those of :class:`dyn_plugin.terms.Terms`) chooses which
terms of τ = M q̈ + C q̇ + g are evaluated: without TERM_VELOCITY q̇ counts as zero, without
TERM_INERTIA q̈ does (and the armature's term), without TERM_GRAVITY g does.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..terms import Terms
from .jit import CHUNK, inline as _inline, jit as _jit, serial_and_parallel as _serial_and_parallel
from .lane_blocks import (BLOCK, COMMON, LANES, Q_IN, Q_OUT, Q_RATE, _add_into, _block, _copy, _link_constants,
                          _load3, _load_states, _parent_block, _placement, _rotations, _store3, _store_results,
                          _sym_vec, _t_vec, _vec)
from .layout import ARMATURE, BASE_ACC, FRAME, INERTIA, KIND, MASS, MOMENT, PARENT, Offsets
from .scratch import P_ROW, R_ROW, _placements, _scratch, algorithm_rows
from .status import OK, _finite_result, _one, _status
from .vectors import _accumulate, _add, _col, _cross, _mat_t_vec, _mat_vec, _packed_mat_vec, _put, _row, _scale

# -- which terms of τ = M q̈ + C q̇ + g a kernel evaluates: the bits of dyn_plugin.terms.Terms ----
# Spelled out here, not read from Terms at call time: numba freezes globals into the machine
# code it caches and only notices a change to the files of this package, so a change to
# Terms must fail here.
TERM_INERTIA, TERM_VELOCITY, TERM_GRAVITY = 1, 2, 4      # q̈ (and armature), q̇, g
TERM_BIAS = TERM_VELOCITY | TERM_GRAVITY
TERM_ALL = TERM_INERTIA | TERM_VELOCITY | TERM_GRAVITY
if (TERM_INERTIA, TERM_VELOCITY, TERM_GRAVITY, TERM_BIAS, TERM_ALL) != (
        int(Terms.INERTIA), int(Terms.VELOCITY), int(Terms.GRAVITY), int(Terms.BIAS), int(Terms.ALL)):
    raise ImportError("dyn_plugin.compiled.newton_euler: the TERM_* bits disagree with dyn_plugin.terms.Terms; "
                      "update them here (this file) so that numba's cache is invalidated")

# -- per state --------------------------------------------------------------------------------

# rows of the scratch W: ω, ω̇, v̇ of the link origin, then the joint wrench (f, n)
W_ROWS = algorithm_rows("newton_euler", (("W_OMEGA", 1), ("W_ALPHA", 1), ("W_ACC", 1), ("W_FORCE", 1),
                                            ("W_MOMENT", 1)))
W_OMEGA, W_ALPHA, W_ACC, W_FORCE, W_MOMENT = W_ROWS.at("W_OMEGA", "W_ALPHA", "W_ACC", "W_FORCE", "W_MOMENT")


@_inline
def _rnea_state(P, Q, QD, QDD, k, terms, W):
    """Joint wrenches (f, n) at each joint origin in its frame, into W rows 7 and 8.

    ``terms`` (an int of TERM_* bits): without TERM_VELOCITY q̇ counts as zero, without
    TERM_INERTIA q̈ does, without TERM_GRAVITY g does.
    """
    n = P.shape[0] - 1
    _placements(P, Q, k, W)
    zero = (0.0, 0.0, 0.0)
    moving = (terms & TERM_VELOCITY) != 0
    accelerating = (terms & TERM_INERTIA) != 0
    base = _col(P, n, BASE_ACC) if (terms & TERM_GRAVITY) != 0 else zero
    w_p, wd_p, vd_p = zero, zero, base            # the parent's (ω, ω̇, v̇): the base's, then link i−1's
    for i in range(n):
        parent = int(P[i, PARENT])
        if parent != i - 1:                       # not the link just computed (kept in registers)
            if parent < 0:
                w_p, wd_p, vd_p = zero, zero, base
            else:
                w_p, wd_p, vd_p = _row(W, parent, W_OMEGA), _row(W, parent, W_ALPHA), _row(W, parent, W_ACC)
        p = _row(W, i, P_ROW)
        origin_acc = _add(vd_p, _add(_cross(wd_p, p), _cross(w_p, _cross(w_p, p))))
        w = _mat_t_vec(W, i, R_ROW, w_p)                              # parent → link frame
        wd = _mat_t_vec(W, i, R_ROW, wd_p)
        vd = _mat_t_vec(W, i, R_ROW, origin_acc)
        rate = QD[k, i] if moving else 0.0
        acc = QDD[k, i] if accelerating else 0.0
        if P[i, KIND] == 0.0:                     # Fu 3.3-50, 3.3-51 with z = ẑ: ω × ẑq̇ = (ω_y q̇, −ω_x q̇, 0)
            wd = (wd[0] + w[1] * rate, wd[1] - w[0] * rate, wd[2] + acc)
            w = (w[0], w[1], w[2] + rate)
        else:                                     # 3.3-52, prismatic: + ẑq̈ + 2ω × ẑq̇
            vd = (vd[0] + 2.0 * w[1] * rate, vd[1] - 2.0 * w[0] * rate, vd[2] + acc)
        _put(W, i, W_OMEGA, w)
        _put(W, i, W_ALPHA, wd)
        _put(W, i, W_ACC, vd)
        # Newton and Euler about the link origin (Khalil): F = m v̇ + ω̇×h + ω×(ω×h),
        # N = I_O ω̇ + ω×(I_O ω) + h×v̇, equal to Fu 3.3-54/55 moved from the centre of mass.
        h = _col(P, i, MOMENT)
        _put(W, i, W_FORCE, _add(_scale(P[i, MASS], vd), _add(_cross(wd, h), _cross(w, _cross(w, h)))))
        Iw = _packed_mat_vec(P, i, INERTIA, w)
        _put(W, i, W_MOMENT, _add(_packed_mat_vec(P, i, INERTIA, wd), _add(_cross(w, Iw), _cross(h, vd))))
        w_p, wd_p, vd_p = w, wd, vd
    # 3.3-56, 3.3-57: each link's wrench carried to its parent; to link i−1 in registers (a
    # chain's whole backward pass), to another parent through W.  The sums are formed in
    # the same order either way (children with larger indices first).
    carried, f_child, moment_child = False, zero, zero
    for i in range(n - 1, -1, -1):
        f, moment = _row(W, i, W_FORCE), _row(W, i, W_MOMENT)
        if carried:
            f, moment = _add(f, f_child), _add(moment, moment_child)
            _put(W, i, W_FORCE, f)
            _put(W, i, W_MOMENT, moment)
        parent = int(P[i, PARENT])
        carried = parent >= 0 and parent == i - 1
        if parent >= 0:
            f_child = _mat_vec(W, i, R_ROW, f)
            moment_child = _add(_mat_vec(W, i, R_ROW, moment), _cross(_row(W, i, P_ROW), f_child))
            if not carried:
                _accumulate(W, parent, W_FORCE, f_child)
                _accumulate(W, parent, W_MOMENT, moment_child)


@_jit
def _project(P, W, i):
    """τ_i: the joint wrench along the axis (moment for revolute, force for prismatic)."""
    return W[i, W_MOMENT, 2] if P[i, KIND] == 0.0 else W[i, W_FORCE, 2]


@_inline
def _torques(P, Q, QD, QDD, k, terms, TAU, W):
    """τ = the ``terms`` of M q̈ + C q̇ + g, the armature q̈ with TERM_INERTIA."""
    _rnea_state(P, Q, QD, QDD, k, terms, W)
    n = P.shape[0] - 1
    accelerating = (terms & TERM_INERTIA) != 0
    for i in range(n):
        tau = _project(P, W, i)
        if accelerating:
            tau += P[i, ARMATURE] * QDD[k, i]
        TAU[k, i] = tau


@_jit
def _inverse_dynamics_rows(P, Q, QD, QDD, terms, TAU):
    """The ``terms`` of τ for the states (rows) of Q, QD, QDD into TAU, one after another;
    QD (QDD) is not read without TERM_VELOCITY (TERM_INERTIA)."""
    W = _scratch(P)
    for k in range(Q.shape[0]):
        _torques(P, Q, QD, QDD, k, terms, TAU, W)


def inverse_dynamics_single(P, q, qd, qdd, tau):
    """τ (n,) of one state into ``tau``; returns a status code (OK = 0).  The one kernel with
    its core inlined: the call that ``bench`` holds against pinocchio's rnea (the other
    one-state kernels call their rows loop, ~50 ns more, and compile 10 s faster)."""
    n = P.shape[0] - 1
    status = _status(n, q, qd, qdd)
    if status == OK and tau.shape[0] == n:
        _torques(P, _one(q), _one(qd), _one(qdd), 0, TERM_ALL, _one(tau), _scratch(P))
        status = _finite_result(tau)
    return status


def bias_single(P, q, qd, tau):
    """C(q, q̇) q̇ + g(q) for one state (no armature); returns a status."""
    n = P.shape[0] - 1
    status = _status(n, q, qd, q)
    if status == OK and tau.shape[0] == n:
        _inverse_dynamics_rows(P, _one(q), _one(qd), _one(q), TERM_BIAS, _one(tau))
        status = _finite_result(tau)
    return status


@_jit
def _joint_wrenches_rows(P, Q, QD, QDD, F, M):
    """Joint reaction forces F and moments M (rows, n, 3), each in its joint's frame."""
    n = P.shape[0] - 1
    W = _scratch(P)
    for k in range(Q.shape[0]):
        _rnea_state(P, Q, QD, QDD, k, TERM_ALL, W)
        for i in range(n):                                        # back to the URDF joint frame
            f = _packed_mat_vec(P, i, FRAME, _row(W, i, W_FORCE))
            moment = _packed_mat_vec(P, i, FRAME, _row(W, i, W_MOMENT))
            for a in range(3):
                F[k, i, a] = f[a]
                M[k, i, a] = moment[a]


def _joint_wrenches_batch(P, Q, QD, QDD, F, M):
    """Joint reaction forces F and moments M (N, n, 3), CHUNK states per task."""
    N = Q.shape[0]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        rows = slice(chunk * CHUNK, min(N, (chunk + 1) * CHUNK))
        _joint_wrenches_rows(P, Q[rows], QD[rows], QDD[rows], F[rows], M[rows])


joint_wrenches_batch = _serial_and_parallel(_joint_wrenches_batch)   # (serial, parallel)



# -- over a batch across SIMD lanes (the same recursion: Fu Table 3.3, link wrenches about the origin) --

LINK_BLOCK = Offsets((
    ("N_OMEGA", 3), ("N_ALPHA", 3), ("N_ACCEL", 3),   # ω, ω̇ and v̇ of the link origin, in the link frame
    ("N_FORCE", 3), ("N_MOMENT", 3),                  # the link's own wrench F, N (Khalil's form about its origin)
    ("N_CHILDREN", 6),                                # Σ children's wrenches (f, n) in this link's frame
    ("N_FROM_PARENT", 9),                             # the parent's (ω, ω̇, v̇)
    ("N_TO_PARENT", 6),                               # this link's whole wrench (f, n) in the parent's frame
), COMMON.end)                                        # after the common ones (Q_IN: q̈, Q_OUT: τ)
N_OMEGA, N_ALPHA, N_ACCEL, N_FORCE, N_MOMENT, N_CHILDREN, N_FROM_PARENT, N_TO_PARENT = LINK_BLOCK.at(
    "N_OMEGA", "N_ALPHA", "N_ACCEL", "N_FORCE", "N_MOMENT", "N_CHILDREN", "N_FROM_PARENT", "N_TO_PARENT")
NE_QUANTITIES = LINK_BLOCK.end

@_jit
def _motion(P, X, i, parent, m_lanes):
    """Forward pass for link i (Fu 3.3-50..3.3-52): R, ω, ω̇, v̇, then its own wrench
    (:func:`_link_wrench`); its children's sum zeroed."""
    rev, pri, R0, p0, _, _, _, _ = _link_constants(P, i)
    own = _block(X, i, NE_QUANTITIES)
    _rotations(P, own, i, m_lanes)
    _copy(_block(X, parent, NE_QUANTITIES), N_OMEGA, own, N_FROM_PARENT, 9)
    for k in range(N_CHILDREN * LANES, (N_CHILDREN + 6) * LANES):
        own[k] = 0.0
    for l in range(m_lanes):
        R, p = _placement(own, l, R0, p0, pri)
        w_p, wd_p, vd_p = _load3(own, l, N_FROM_PARENT), _load3(own, l, N_FROM_PARENT + 3), \
            _load3(own, l, N_FROM_PARENT + 6)
        origin_acc = _add(vd_p, _add(_cross(wd_p, p), _cross(w_p, _cross(w_p, p))))
        w, wd, vd = _t_vec(R, w_p), _t_vec(R, wd_p), _t_vec(R, origin_acc)
        rate, acc = own[l + Q_RATE * LANES], own[l + Q_IN * LANES]
        wd = (wd[0] + rev * w[1] * rate, wd[1] - rev * w[0] * rate, wd[2] + rev * acc)       # 3.3-50, 3.3-51
        w = (w[0], w[1], w[2] + rev * rate)
        vd = (vd[0] + pri * 2.0 * w[1] * rate, vd[1] - pri * 2.0 * w[0] * rate, vd[2] + pri * acc)   # 3.3-52
        _store3(own, l, N_OMEGA, w)
        _store3(own, l, N_ALPHA, wd)
        _store3(own, l, N_ACCEL, vd)
    _link_wrench(P, own, i, m_lanes)


@_jit
def _link_wrench(P, own, i, m_lanes):
    """Link i's own wrench F = m v̇ + ω̇×h + ω×(ω×h), N = I ω̇ + ω×(I ω) + h×v̇ (Fu 3.3-53..55
    about the link origin), from its ω, ω̇, v̇ (a lane loop of its own: see _carry)."""
    _, _, _, _, m, h, I, _ = _link_constants(P, i)
    for l in range(m_lanes):
        w, wd, vd = _load3(own, l, N_OMEGA), _load3(own, l, N_ALPHA), _load3(own, l, N_ACCEL)
        _store3(own, l, N_FORCE, _add(_scale(m, vd), _add(_cross(wd, h), _cross(w, _cross(w, h)))))
        _store3(own, l, N_MOMENT, _add(_sym_vec(I, wd), _add(_cross(w, _sym_vec(I, w)), _cross(h, vd))))


@_jit
def _wrenches(P, X, i, parent, m_lanes):
    """Backward pass for link i (3.3-56, 3.3-57): its whole wrench (own + children's), τ_i
    its component along the joint axis (+ armature q̈), carried to the parent."""
    rev, pri, R0, p0, _, _, _, armature = _link_constants(P, i)
    own = _block(X, i, NE_QUANTITIES)
    for l in range(m_lanes):
        f = _add(_load3(own, l, N_FORCE), _load3(own, l, N_CHILDREN))
        moment = _add(_load3(own, l, N_MOMENT), _load3(own, l, N_CHILDREN + 3))
        own[l + Q_OUT * LANES] = rev * moment[2] + pri * f[2] + armature * own[l + Q_IN * LANES]
        R, p = _placement(own, l, R0, p0, pri)
        f = _vec(R, f)
        _store3(own, l, N_TO_PARENT, f)
        _store3(own, l, N_TO_PARENT + 3, _add(_vec(R, moment), _cross(p, f)))
    if parent >= 0:
        _add_into(own, N_TO_PARENT, _block(X, parent, NE_QUANTITIES), N_CHILDREN, 6)


@_jit
def _ne_base(P, X, terms):
    """The base block n: ω = ω̇ = 0, v̇ = −g (Fu 3.3-46; 0 without TERM_GRAVITY), every lane."""
    n = P.shape[0] - 1
    base = _block(X, n, NE_QUANTITIES)
    gravity = (terms & TERM_GRAVITY) != 0
    for l in range(LANES):
        for e in range(3):
            base[l + (N_OMEGA + e) * LANES] = base[l + (N_ALPHA + e) * LANES] = 0.0
            base[l + (N_ACCEL + e) * LANES] = P[n, BASE_ACC + e] if gravity else 0.0


@_jit
def inverse_dynamics_lanes(P, Q, QD, QDD, terms, TAU, start, stop, X):
    """The ``terms`` (TERM_* bits) of τ of the states start..stop−1 (rows of Q, QD, QDD
    (N, n); QD, QDD not read without TERM_VELOCITY, TERM_INERTIA) into TAU, LANES at a time,
    in the scratch X ((n + 1)·NE_QUANTITIES·LANES entries).  A block of lanes with an angle
    beyond lanes.EXACT_RANGE runs the per-state kernel instead."""
    n = P.shape[0] - 1
    _ne_base(P, X, terms)
    moving, accelerating = (terms & TERM_VELOCITY) != 0, (terms & TERM_INERTIA) != 0
    for first in range(start, stop, LANES):
        last = min(stop, first + LANES)
        m_lanes = last - first
        if _load_states(X, NE_QUANTITIES, n, Q, QD, QDD, first, m_lanes, moving, accelerating):
            _inverse_dynamics_rows(P, Q[first:last], QD[first:last], QDD[first:last], terms, TAU[first:last])
            continue
        for i in range(n):
            _motion(P, X, i, _parent_block(P, i), m_lanes)
        for i in range(n - 1, -1, -1):
            _wrenches(P, X, i, int(P[i, PARENT]), m_lanes)
        _store_results(X, NE_QUANTITIES, n, TAU, first, m_lanes)


def _inverse_dynamics_batch(P, Q, QD, QDD, terms, TAU):
    """The ``terms`` of τ (N, n) into TAU, BLOCK states per task (see _forward_dynamics_batch)."""
    N, n = Q.shape[0], P.shape[0] - 1
    for block in nb.prange((N + BLOCK - 1) // BLOCK):
        X = np.empty((n + 1) * NE_QUANTITIES * LANES)
        inverse_dynamics_lanes(P, Q, QD, QDD, terms, TAU, block * BLOCK, min(N, (block + 1) * BLOCK), X)


inverse_dynamics_batch = _serial_and_parallel(_inverse_dynamics_batch)   # (serial, parallel)


@_jit
def inverse_dynamics_block(P, Q, QD, QDD, TAU, start, stop):
    """τ (every term, armature included) of the states start..stop−1 of Q, QD, QDD (N, n)
    into TAU, across lanes: one task of a batch loop that does more to the same states
    while they are in cache (the friction law: :func:`dyn_plugin.friction.law.fused_batch`)."""
    X = np.empty(P.shape[0] * NE_QUANTITIES * LANES)
    inverse_dynamics_lanes(P, Q, QD, QDD, TERM_ALL, TAU, start, stop, X)
