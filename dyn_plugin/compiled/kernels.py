"""numba kernels: Newton-Euler, composite-rigid-body and articulated-body dynamics.

These are the fast twins of the readable numpy implementations in
:mod:`dyn_plugin.algorithms` (tests hold them equal to 1e-12): the same recursions,
written state by state on scalars so that nothing is allocated inside the loops.  Each
algorithm has

* a per-state core ``_<algo>_state(P, ..., W)`` working in the scratch array ``W``;
* ``<algo>_single``: one state, arguments and result checked in the kernel (it returns a
  status instead of raising, so the caller can produce a clear error; a result that is
  not finite, float64 overflow, is NOT_FINITE_RESULT), no allocation but ``W``;
  compiled for exactly one signature by :func:`single`;
* ``<algo>_batch``: a (serial, parallel) pair of loops over N states, in chunks (each
  chunk allocates its scratch once), so memory stays bounded for any N; the parallel one
  from PARALLEL_FROM states.

``P`` is the packed model of :mod:`.layout`.  3-vectors travel as tuples, which numba
keeps in registers.  Compiled once per machine: ``cache=True`` stores the machine code
next to this file (or in ``NUMBA_CACHE_DIR``).

The per-state cores are the one statement of each recursion that more than numba runs:
they use ``+``, ``-``, ``*``, ``/`` and ``cos``/``sin`` only, so :mod:`.traced` runs the
same source on exact trigonometric polynomials to derive the closed forms
(:mod:`dyn_plugin.symbolic.newton_derivation`).  Keep them that way: no numpy function
on a number inside ``_*_state`` and its helpers (``cos``/``sin`` come from ``math`` by name).
"""

from __future__ import annotations

import functools
from math import cos, sin      # by name: traced.python_form rebinds them for other number types

import numba as nb
import numpy as np

from .. import loops
from ..loops import serial_and_parallel
from ..terms import Terms

# -- the packed model's columns (see .layout, which fills them) ---------------------------
# Kept here, not in .layout: numba freezes them into the cached machine code and only
# notices a change to this file.
# per-joint columns
PARENT, KIND = 0, 1          # parent index (-1: base); 0 revolute, 1 prismatic
ROT0 = 2                      # R₀' = F_λᵀ R₀ F_i, row-major 3×3 (9)
POS0 = 11                     # p₀' = F_λᵀ p₀, joint origin in the parent frame (3)
FRAME = 14                    # F_i, row-major (9): turns link quantities back to the URDF frame
MASS = 23
MOMENT = 24                   # first moment h = m c (3)
INERTIA = 27                  # inertia about the link origin, row-major 3×3 (9)
ARMATURE = 36                 # rotor inertia added to M's diagonal (pinocchio's armature)
WIDTH = 37

# robot row (row n)
BASE_ACC = 0                  # fictitious base acceleration −g (3), Fu 3.3-46

# -- which terms of τ = M q̈ + C q̇ + g a kernel evaluates: the bits of dyn_plugin.terms.Terms ----
# Spelled out here, not read from Terms at call time: numba freezes globals into the machine
# code it caches and only notices a change to this file, so a change to Terms must fail here.
TERM_INERTIA, TERM_VELOCITY, TERM_GRAVITY = 1, 2, 4      # q̈ (and armature), q̇, g
TERM_BIAS = TERM_VELOCITY | TERM_GRAVITY
TERM_ALL = TERM_INERTIA | TERM_VELOCITY | TERM_GRAVITY
if (TERM_INERTIA, TERM_VELOCITY, TERM_GRAVITY, TERM_BIAS, TERM_ALL) != (
        int(Terms.INERTIA), int(Terms.VELOCITY), int(Terms.GRAVITY), int(Terms.BIAS), int(Terms.ALL)):
    raise ImportError("dyn_plugin.compiled.kernels: the TERM_* bits disagree with dyn_plugin.terms.Terms; "
                      "update them here (this file) so that numba's cache is invalidated")

# status codes of the *_single kernels (3 is unused; 4 matches the generated code's status)
OK, BAD_SHAPE, NOT_FINITE, NOT_FINITE_RESULT = 0, 1, 2, 4
CHUNK = 64                                       # states per scratch allocation in batches

# 'contract' lets LLVM fuse a*b + c into one FMA instruction (one rounding instead of two)
_OPTIONS = dict(cache=True, error_model="numpy", nogil=True, fastmath={"contract"})
_jit = nb.njit(**_OPTIONS)
PARALLEL_FROM = loops.PARALLEL_FROM     # here too: generated modules import it from this module


def _serial_and_parallel(body):
    """A batch loop compiled twice, (serial, parallel) (:func:`dyn_plugin.loops.serial_and_parallel`)."""
    return serial_and_parallel(body, _OPTIONS)


# scratch rows of W (n, ROWS, 3): the placement, then each algorithm's own rows
R_ROW, P_ROW = 0, 3            # rows 0-2: R (parent ← link), row 3: p
ROWS = 27


# -- 3-vectors and 3×3 blocks ------------------------------------------------------------

@_jit
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@_jit
def _scale(s, a):
    return (s * a[0], s * a[1], s * a[2])


@_jit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@_jit
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@_jit
def _row(W, i, r):
    return (W[i, r, 0], W[i, r, 1], W[i, r, 2])


@_jit
def _put(W, i, r, v):
    W[i, r, 0], W[i, r, 1], W[i, r, 2] = v[0], v[1], v[2]


@_jit
def _accumulate(W, i, r, v):
    W[i, r, 0] += v[0]
    W[i, r, 1] += v[1]
    W[i, r, 2] += v[2]


@_jit
def _col(P, i, c):
    return (P[i, c], P[i, c + 1], P[i, c + 2])


@_jit
def _mat_vec(W, i, r, v):
    """M v for the 3×3 block in rows r..r+2 of W[i]."""
    return (W[i, r, 0] * v[0] + W[i, r, 1] * v[1] + W[i, r, 2] * v[2],
            W[i, r + 1, 0] * v[0] + W[i, r + 1, 1] * v[1] + W[i, r + 1, 2] * v[2],
            W[i, r + 2, 0] * v[0] + W[i, r + 2, 1] * v[1] + W[i, r + 2, 2] * v[2])


@_jit
def _mat_t_vec(W, i, r, v):
    """Mᵀ v for the 3×3 block in rows r..r+2 of W[i]."""
    return (W[i, r, 0] * v[0] + W[i, r + 1, 0] * v[1] + W[i, r + 2, 0] * v[2],
            W[i, r, 1] * v[0] + W[i, r + 1, 1] * v[1] + W[i, r + 2, 1] * v[2],
            W[i, r, 2] * v[0] + W[i, r + 1, 2] * v[1] + W[i, r + 2, 2] * v[2])


@_jit
def _packed_mat_vec(P, i, c, v):
    """M v for a row-major 3×3 stored in P[i, c:c+9]."""
    return (P[i, c] * v[0] + P[i, c + 1] * v[1] + P[i, c + 2] * v[2],
            P[i, c + 3] * v[0] + P[i, c + 4] * v[1] + P[i, c + 5] * v[2],
            P[i, c + 6] * v[0] + P[i, c + 7] * v[1] + P[i, c + 8] * v[2])


# -- placements and arguments ------------------------------------------------------------

@_jit
def _placements(P, Q, k, W):
    """R and p of every link in its parent (kinematics.link_placements), into W.
    Revolute: R = R₀' Rz(q); prismatic: p = p₀' + q R₀' ẑ (the z normal form of .layout)."""
    n = P.shape[0] - 1
    for i in range(n):
        if P[i, KIND] == 0.0:
            c, s = cos(Q[k, i]), sin(Q[k, i])
            for a in range(3):
                x, y = P[i, ROT0 + 3 * a], P[i, ROT0 + 3 * a + 1]
                W[i, R_ROW + a, 0] = c * x + s * y
                W[i, R_ROW + a, 1] = c * y - s * x
                W[i, R_ROW + a, 2] = P[i, ROT0 + 3 * a + 2]
            _put(W, i, P_ROW, _col(P, i, POS0))
        else:
            for a in range(3):
                for b in range(3):
                    W[i, R_ROW + a, b] = P[i, ROT0 + 3 * a + b]
            slide = (P[i, ROT0 + 2], P[i, ROT0 + 5], P[i, ROT0 + 8])
            _put(W, i, P_ROW, _add(_col(P, i, POS0), _scale(Q[k, i], slide)))


@_jit
def _check(n, x):
    """Status of one joint-space vector: OK, BAD_SHAPE or NOT_FINITE."""
    if x.shape[0] != n:
        return BAD_SHAPE
    for i in range(n):
        if not np.isfinite(x[i]):
            return NOT_FINITE
    return OK


@_jit
def _finite_result(x):
    """OK when every entry of the result vector x is finite, else NOT_FINITE_RESULT (overflow)."""
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return NOT_FINITE_RESULT
    return OK


@_jit
def _one(x):
    """A vector (n,) as a batch of one (1, n), so that one state runs the batch code."""
    return x.reshape((1, x.shape[0]))


@_jit
def _scratch(P):
    return np.empty((P.shape[0] - 1, ROWS, 3))


# -- recursive Newton-Euler (algorithms.newton_euler; Fu Table 3.3, Khalil's link moments) --

W_OMEGA, W_ALPHA, W_ACC, W_FORCE, W_MOMENT = 4, 5, 6, 7, 8


@_jit
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
    for i in range(n):
        parent = int(P[i, PARENT])
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
    for i in range(n - 1, -1, -1):                                    # 3.3-56, 3.3-57
        parent = int(P[i, PARENT])
        if parent >= 0:
            f = _mat_vec(W, i, R_ROW, _row(W, i, W_FORCE))
            _accumulate(W, parent, W_FORCE, f)
            moment = _add(_mat_vec(W, i, R_ROW, _row(W, i, W_MOMENT)), _cross(_row(W, i, P_ROW), f))
            _accumulate(W, parent, W_MOMENT, moment)


@_jit
def _project(P, W, i):
    """τ_i: the joint wrench along the axis (moment for revolute, force for prismatic)."""
    return W[i, W_MOMENT, 2] if P[i, KIND] == 0.0 else W[i, W_FORCE, 2]


@_jit
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
def _status(n, q, qd, qdd):
    status = _check(n, q)
    if status == OK:
        status = _check(n, qd)
    if status == OK:
        status = _check(n, qdd)
    return status


def inverse_dynamics_single(P, q, qd, qdd, tau):
    """τ (n,) of one state into ``tau``; returns a status code (OK = 0)."""
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
        _torques(P, _one(q), _one(qd), _one(q), 0, TERM_BIAS, _one(tau), _scratch(P))
        status = _finite_result(tau)
    return status


def _inverse_dynamics_batch(P, Q, QD, QDD, terms, TAU):
    """The ``terms`` of τ (N, n) into ``TAU``; QD (QDD) is not read without TERM_VELOCITY
    (TERM_INERTIA)."""
    N = Q.shape[0]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        W = _scratch(P)
        for k in range(chunk * CHUNK, min(N, (chunk + 1) * CHUNK)):
            _torques(P, Q, QD, QDD, k, terms, TAU, W)


inverse_dynamics_batch = _serial_and_parallel(_inverse_dynamics_batch)   # (serial, parallel)


def _joint_wrenches_batch(P, Q, QD, QDD, F, M):
    """Joint reaction forces F and moments M (N, n, 3), each in its joint's frame."""
    N, n = Q.shape
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        W = _scratch(P)
        for k in range(chunk * CHUNK, min(N, (chunk + 1) * CHUNK)):
            _rnea_state(P, Q, QD, QDD, k, TERM_ALL, W)
            for i in range(n):                                    # back to the URDF joint frame
                f = _packed_mat_vec(P, i, FRAME, _row(W, i, W_FORCE))
                moment = _packed_mat_vec(P, i, FRAME, _row(W, i, W_MOMENT))
                for a in range(3):
                    F[k, i, a] = f[a]
                    M[k, i, a] = moment[a]


joint_wrenches_batch = _serial_and_parallel(_joint_wrenches_batch)   # (serial, parallel)


# -- composite-rigid-body mass matrix (Featherstone 2008, Table 6.2) ------------------------

C_MASS, C_MOMENT, C_INERTIA, C_FORCE, C_TORQUE = 4, 5, 6, 9, 10   # rows of W


@_jit
def _crba_state(P, Q, k, H, W):
    """M(q) (n, n) into H.  Composite bodies are kept as (m, h, I_O) about the link origin
    and moved to the parent with the parallel-axis theorem."""
    n = P.shape[0] - 1
    _placements(P, Q, k, W)
    for i in range(n):
        for j in range(n):
            H[k, i, j] = 0.0            # joints on different branches do not couple
        W[i, C_MASS, 0] = P[i, MASS]
        _put(W, i, C_MOMENT, _col(P, i, MOMENT))
        for a in range(3):
            _put(W, i, C_INERTIA + a, _col(P, i, INERTIA + 3 * a))
    for i in range(n - 1, -1, -1):
        m, h = W[i, C_MASS, 0], _row(W, i, C_MOMENT)
        if P[i, KIND] == 0.0:               # F = I^c S: [I_O ẑ; ẑ × h] (revolute)
            torque = (W[i, C_INERTIA, 2], W[i, C_INERTIA + 1, 2], W[i, C_INERTIA + 2, 2])
            force = (-h[1], h[0], 0.0)
            H[k, i, i] = torque[2] + P[i, ARMATURE]
        else:                               # [h × ẑ; m ẑ] (prismatic)
            torque, force = (h[1], -h[0], 0.0), (0.0, 0.0, m)
            H[k, i, i] = m + P[i, ARMATURE]
        j = i
        while int(P[j, PARENT]) >= 0:       # carry F down the path to the base
            force = _mat_vec(W, j, R_ROW, force)
            torque = _add(_mat_vec(W, j, R_ROW, torque), _cross(_row(W, j, P_ROW), force))
            j = int(P[j, PARENT])
            H[k, i, j] = H[k, j, i] = torque[2] if P[j, KIND] == 0.0 else force[2]
        parent = int(P[i, PARENT])
        if parent >= 0:
            _add_composite(W, i, parent, m, h)


@_jit
def _add_composite(W, i, parent, m, h):
    """Add body i's (m, h, I_O) to its parent's, in the parent frame at the parent origin:
    h' = R h + m p;  I' = R I Rᵀ + m(|p|² 1 − p pᵀ) + 2(Rh·p) 1 − Rh pᵀ − p (Rh)ᵀ."""
    p = _row(W, i, P_ROW)
    hr = _mat_vec(W, i, R_ROW, h)
    W[parent, C_MASS, 0] += m
    _accumulate(W, parent, C_MOMENT, _add(hr, _scale(m, p)))
    diagonal = m * _dot(p, p) + 2.0 * _dot(hr, p)
    for a in range(3):
        rotated = _mat_vec(W, i, R_ROW, _mat_t_vec(W, i, C_INERTIA, (W[i, R_ROW + a, 0], W[i, R_ROW + a, 1], W[i, R_ROW + a, 2])))
        for b in range(3):
            shift = (diagonal if a == b else 0.0) - m * p[a] * p[b] - hr[a] * p[b] - p[a] * hr[b]
            W[parent, C_INERTIA + a, b] += rotated[b] + shift


def mass_matrix_single(P, q, H):
    """M(q) (n, n) of one state into H; returns a status code."""
    n = P.shape[0] - 1
    status = _check(n, q)
    if status == OK and H.shape[0] == n and H.shape[1] == n:
        _crba_state(P, _one(q), 0, H.reshape((1, n, n)), _scratch(P))
        status = _finite_result(H.reshape(n * n))
    return status


def _mass_matrix_batch(P, Q, H):
    """M (N, n, n) into H."""
    N = Q.shape[0]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        W = _scratch(P)
        for k in range(chunk * CHUNK, min(N, (chunk + 1) * CHUNK)):
            _crba_state(P, Q, k, H, W)


mass_matrix_batch = _serial_and_parallel(_mass_matrix_batch)   # (serial, parallel)


# -- articulated-body forward dynamics (algorithms.articulated_body; Featherstone Table 7.1) --
# Spatial vectors as (angular, linear) tuple pairs; an articulated inertia as 3×3 blocks
# [[A, B], [Bᵀ, C]] (rows A_ROW.., B_ROW.., C_ROW.. of W).

V_ANG, V_LIN, C_ANG, C_LIN, PA_N, PA_F = 4, 5, 6, 7, 8, 9
A_ROW, B_ROW, CC_ROW = 10, 13, 16
U_N, U_F, ACC_ANG, ACC_LIN, SCALARS = 19, 20, 21, 22, 23     # SCALARS: (D, u, q̈)
T_ROW = 24                                                   # 3 rows: a temporary block


@_jit
def _aba_state(P, Q, QD, TAU, QDD, k, W):
    n = P.shape[0] - 1
    _placements(P, Q, k, W)
    zero = (0.0, 0.0, 0.0)
    for i in range(n):                                            # pass 1: velocities, bias
        parent = int(P[i, PARENT])
        w_p, v_p = (zero, zero) if parent < 0 else (_row(W, parent, V_ANG), _row(W, parent, V_LIN))
        w = _mat_t_vec(W, i, R_ROW, w_p)
        v = _mat_t_vec(W, i, R_ROW, _add(v_p, _cross(w_p, _row(W, i, P_ROW))))
        rate = QD[k, i]
        if P[i, KIND] == 0.0:                                     # c = v ×ₘ S q̇, S = [ẑ; 0]
            w = (w[0], w[1], w[2] + rate)
            c_ang, c_lin = (w[1] * rate, -w[0] * rate, 0.0), (v[1] * rate, -v[0] * rate, 0.0)
        else:                                                     # S = [0; ẑ]
            v = (v[0], v[1], v[2] + rate)
            c_ang, c_lin = zero, (w[1] * rate, -w[0] * rate, 0.0)
        _put(W, i, V_ANG, w)
        _put(W, i, V_LIN, v)
        _put(W, i, C_ANG, c_ang)
        _put(W, i, C_LIN, c_lin)
        m, h = P[i, MASS], _col(P, i, MOMENT)
        n_I = _add(_packed_mat_vec(P, i, INERTIA, w), _cross(h, v))     # I v
        f_I = _add(_cross(w, h), _scale(m, v))
        _put(W, i, PA_N, _add(_cross(w, n_I), _cross(v, f_I)))           # v ×* I v
        _put(W, i, PA_F, _cross(w, f_I))
        for a in range(3):                                           # I^A = I
            _put(W, i, A_ROW + a, _col(P, i, INERTIA + 3 * a))
            _put(W, i, CC_ROW + a, (m if a == 0 else 0.0, m if a == 1 else 0.0, m if a == 2 else 0.0))
        _put(W, i, B_ROW, (0.0, -h[2], h[1]))                        # B = [h]×
        _put(W, i, B_ROW + 1, (h[2], 0.0, -h[0]))
        _put(W, i, B_ROW + 2, (-h[1], h[0], 0.0))
    for i in range(n - 1, -1, -1):                                # pass 2: articulated inertias
        if P[i, KIND] == 0.0:                                     # U = I^A S = [A ẑ; Bᵀ ẑ]
            U_n = (W[i, A_ROW, 2], W[i, A_ROW + 1, 2], W[i, A_ROW + 2, 2])
            U_f = _row(W, i, B_ROW + 2)
            D = U_n[2] + P[i, ARMATURE]
            u = TAU[k, i] - W[i, PA_N, 2]
        else:                                                     # [B ẑ; C ẑ]
            U_n = (W[i, B_ROW, 2], W[i, B_ROW + 1, 2], W[i, B_ROW + 2, 2])
            U_f = (W[i, CC_ROW, 2], W[i, CC_ROW + 1, 2], W[i, CC_ROW + 2, 2])
            D = U_f[2] + P[i, ARMATURE]
            u = TAU[k, i] - W[i, PA_F, 2]
        _put(W, i, U_N, U_n)
        _put(W, i, U_F, U_f)
        W[i, SCALARS, 0], W[i, SCALARS, 1] = D, u
        parent = int(P[i, PARENT])
        if parent >= 0:
            _pass_to_parent(W, i, parent, U_n, U_f, D, u)
    for i in range(n):                                            # pass 3: accelerations
        parent = int(P[i, PARENT])
        if parent < 0:
            a_ang, a_lin = zero, _col(P, n, BASE_ACC)
        else:
            a_ang, a_lin = _row(W, parent, ACC_ANG), _row(W, parent, ACC_LIN)
        a_lin = _add(_mat_t_vec(W, i, R_ROW, _add(a_lin, _cross(a_ang, _row(W, i, P_ROW)))), _row(W, i, C_LIN))
        a_ang = _add(_mat_t_vec(W, i, R_ROW, a_ang), _row(W, i, C_ANG))
        acc = (W[i, SCALARS, 1] - _dot(_row(W, i, U_N), a_ang) - _dot(_row(W, i, U_F), a_lin)) / W[i, SCALARS, 0]
        if P[i, KIND] == 0.0:
            a_ang = (a_ang[0], a_ang[1], a_ang[2] + acc)
        else:
            a_lin = (a_lin[0], a_lin[1], a_lin[2] + acc)
        _put(W, i, ACC_ANG, a_ang)
        _put(W, i, ACC_LIN, a_lin)
        QDD[k, i] = acc


@_jit
def _pass_to_parent(W, i, parent, U_n, U_f, D, u):
    """I^a = I^A − U Uᵀ/D and p^a = p^A + I^a c + U u/D, added to the parent as
    Xᵀ I^a X and Xᵀ p^a (X = ⁱX_λ = [[Rᵀ, 0], [−Rᵀ p×, Rᵀ]])."""
    inverse = 1.0 / D
    for a in range(3):                                            # I^a, in place
        for b in range(3):
            W[i, A_ROW + a, b] -= U_n[a] * U_n[b] * inverse
            W[i, B_ROW + a, b] -= U_n[a] * U_f[b] * inverse
            W[i, CC_ROW + a, b] -= U_f[a] * U_f[b] * inverse
    c_ang, c_lin = _row(W, i, C_ANG), _row(W, i, C_LIN)
    k = u * inverse
    pa_n = _add(_row(W, i, PA_N), _add(_mat_vec(W, i, A_ROW, c_ang), _add(_mat_vec(W, i, B_ROW, c_lin), _scale(k, U_n))))
    pa_f = _add(_row(W, i, PA_F), _add(_mat_t_vec(W, i, B_ROW, c_ang), _add(_mat_vec(W, i, CC_ROW, c_lin), _scale(k, U_f))))
    p = _row(W, i, P_ROW)
    f = _mat_vec(W, i, R_ROW, pa_f)
    _accumulate(W, parent, PA_F, f)
    _accumulate(W, parent, PA_N, _add(_mat_vec(W, i, R_ROW, pa_n), _cross(p, f)))
    _rotate_block(W, i, A_ROW)                                    # blocks into the parent's axes
    _rotate_block(W, i, B_ROW)
    _rotate_block(W, i, CC_ROW)
    # shift to the parent origin: TR = B + p×C;  TL = A + p×Bᵀ − TR p×;  C unchanged
    S = (0.0, -p[2], p[1], p[2], 0.0, -p[0], -p[1], p[0], 0.0)   # p×, row-major
    for a in range(3):
        for b in range(3):
            W[i, T_ROW + a, b] = W[i, B_ROW + a, b] + (S[3 * a] * W[i, CC_ROW, b] + S[3 * a + 1] * W[i, CC_ROW + 1, b]
                                                     + S[3 * a + 2] * W[i, CC_ROW + 2, b])
    for a in range(3):
        for b in range(3):
            top_left = W[i, A_ROW + a, b]
            for k in range(3):
                top_left += S[3 * a + k] * W[i, B_ROW + b, k] - W[i, T_ROW + a, k] * S[3 * k + b]
            W[parent, A_ROW + a, b] += top_left
            W[parent, B_ROW + a, b] += W[i, T_ROW + a, b]
            W[parent, CC_ROW + a, b] += W[i, CC_ROW + a, b]


@_jit
def _rotate_block(W, i, r):
    """Block ← R Block Rᵀ (link axes → parent axes), in place."""
    for a in range(3):                                            # Block Rᵀ, row by row
        row = _mat_vec(W, i, R_ROW, (W[i, r + a, 0], W[i, r + a, 1], W[i, r + a, 2]))
        _put(W, i, r + a, row)
    for b in range(3):                                            # then R (Block Rᵀ), column by column
        col = _mat_vec(W, i, R_ROW, (W[i, r, b], W[i, r + 1, b], W[i, r + 2, b]))
        W[i, r, b], W[i, r + 1, b], W[i, r + 2, b] = col[0], col[1], col[2]


def forward_dynamics_single(P, q, qd, tau, qdd):
    """q̈ (n,) of one state into ``qdd``; returns a status code (OK = 0)."""
    n = P.shape[0] - 1
    status = _status(n, q, qd, tau)
    if status == OK and qdd.shape[0] == n:
        _aba_state(P, _one(q), _one(qd), _one(tau), _one(qdd), 0, _scratch(P))
        status = _finite_result(qdd)
    return status


def _forward_dynamics_batch(P, Q, QD, TAU, QDD):
    """q̈ (N, n) into QDD."""
    N = Q.shape[0]
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        W = _scratch(P)
        for k in range(chunk * CHUNK, min(N, (chunk + 1) * CHUNK)):
            _aba_state(P, Q, QD, TAU, QDD, k, W)


forward_dynamics_batch = _serial_and_parallel(_forward_dynamics_batch)   # (serial, parallel)


# -- linear algebra -----------------------------------------------------------------------

@_jit
def spd_solve(M, b, x):   # generated modules call this: bump codegen.GENERATOR_VERSION when it changes
    """x = M⁻¹ b for a symmetric positive-definite M (n, n), by Cholesky M = L Lᵀ.  M is
    overwritten: L below the diagonal, 1/L_jj on it (so that every division but n is a
    multiplication)."""
    n = b.shape[0]
    for j in range(n):
        d = M[j, j]
        for k in range(j):
            d -= M[j, k] * M[j, k]
        inverse = 1.0 / np.sqrt(d)
        M[j, j] = inverse
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= M[i, k] * M[j, k]
            M[i, j] = s * inverse
    for i in range(n):                      # L y = b
        s = b[i]
        for k in range(i):
            s -= M[i, k] * x[k]
        x[i] = s * M[i, i]
    for i in range(n - 1, -1, -1):          # Lᵀ x = y
        s = x[i]
        for k in range(i + 1, n):
            s -= M[k, i] * x[k]
        x[i] = s * M[i, i]


@_jit
def _shifted_solve(M, d, b, x, L):
    """x = (M + diag d)⁻¹ b by Cholesky, in the scratch L (n, n); M and b are not written."""
    n = b.shape[0]
    for j in range(n):
        for i in range(j, n):
            L[i, j] = M[i, j]
        L[j, j] += d[j]
    spd_solve(L, b, x)


def shifted_spd_solve_single(M, d, b, x):
    """x = (M + diag d)⁻¹ b (n,) for a symmetric M (n, n) with M + diag d positive definite
    (e.g. a mass matrix and the armature on its diagonal); returns a status code (OK = 0)."""
    n = b.shape[0]
    if M.shape[0] != n or M.shape[1] != n or d.shape[0] != n or x.shape[0] != n:
        return BAD_SHAPE
    _shifted_solve(M, d, b, x, np.empty((n, n)))
    return _finite_result(x)


def _shifted_spd_solve_batch(M, d, B, X):
    """X[k] = (M[k] + diag d)⁻¹ B[k] for M (N, n, n), B and X (N, n)."""
    N, n = B.shape
    for chunk in nb.prange((N + CHUNK - 1) // CHUNK):
        L = np.empty((n, n))
        for k in range(chunk * CHUNK, min(N, (chunk + 1) * CHUNK)):
            _shifted_solve(M[k], d, B[k], X[k], L)


shifted_spd_solve_batch = _serial_and_parallel(_shifted_spd_solve_batch)   # (serial, parallel)


# -- the single-state kernels, typed ---------------------------------------------------------

_VECTOR, _MATRIX, _MODEL = "float64[::1]", "float64[:, ::1]", "float64[:, ::1]"
_SIGNATURES = {
    "inverse_dynamics": (inverse_dynamics_single, f"int64({_MODEL}, {_VECTOR}, {_VECTOR}, {_VECTOR}, {_VECTOR})"),
    "bias": (bias_single, f"int64({_MODEL}, {_VECTOR}, {_VECTOR}, {_VECTOR})"),
    "forward_dynamics": (forward_dynamics_single, f"int64({_MODEL}, {_VECTOR}, {_VECTOR}, {_VECTOR}, {_VECTOR})"),
    "mass_matrix": (mass_matrix_single, f"int64({_MODEL}, {_VECTOR}, {_MATRIX})"),
    "shifted_spd_solve": (shifted_spd_solve_single, f"int64({_MATRIX}, {_VECTOR}, {_VECTOR}, {_VECTOR})"),
}


@functools.lru_cache(maxsize=None)
def single(name: str):
    """The single-state kernel ``name``, compiled for exactly its signature on first use
    (not at import).  Any other argument type (a list, an int or strided array, a batch)
    raises TypeError in numba's C dispatcher instead of compiling a new specialisation."""
    py_func, signature = _SIGNATURES[name]
    return nb.njit(signature, **_OPTIONS)(py_func)
