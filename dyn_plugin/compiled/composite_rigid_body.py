"""The composite-rigid-body mass matrix, compiled: per state, and over a batch across SIMD
lanes (Featherstone 2008, Table 6.2).  The readable statement, which these are held to, is
:mod:`dyn_plugin.algorithms.composite_rigid_body`.

Per state: ``_crba_state(P, Q, k, H, W)`` (on scalars, as the other per-state cores: see
:mod:`.newton_euler`), its rows loop ``_mass_matrix_rows`` and the one-state
``mass_matrix_single``.

Over a batch: ``mass_matrix_lanes``, :data:`.lane_blocks.LANES` states at once, in the
layout and with the helpers of :mod:`.lane_blocks` (read its docstring first: link blocks
of quantities over lanes, revolute and prismatic blended by ``rev``/``pri``, one lane loop
per function), run over N states by ``mass_matrix_batch``.  Passes 1 and 2 are the
per-state kernel's: rotations, then the composite bodies from the leaves in (m, h = m c,
I_O about the link origin, moved to the parent with the parallel-axis theorem) and each
joint's F = I^c S.  Pass 3 carries each F_i down its path to the base joint by joint,
M_iλ = S_λᵀ F at each ancestor λ; F_i travels through the ancestors' TRANSIT quantities (a
lane loop reads and writes its own link's block only), so the links go in increasing
order, an ancestor's own F gone before another passes through.  The helpers called once
per link and ancestor are inlined (numba IR): a call passes each array as a struct and
counts references to it, and pass 3 made ~45 such calls per block of the PUMA-560 (195 ->
135 ns per state on one core once inlined; _through_joint's is then the driver's one lane
loop).  The two forms agree to rounding (``tests/test_statements.py``).

A floating robot's free-flyer chain (:func:`dyn_plugin.floating.free_flyer_chain`: six
massless joints at zero, three prismatic then three revolute along the base axes, the
base's inertia on link FREE_FLYER_BASE = 5) runs the same lanes form with ``floating``: its
six joints are not recursed over.  Their frames are the base frame at the base origin, so
the base block of M is the composite inertia of the whole robot there (m, h, I_O in
(linear, angular) order: [[m 1, −[h]×], [[h]×, I_O]], Featherstone 2008 §2.13), and a
joint's base row is its F = I^c S carried into the base frame, (force, torque) (CRBA with
a floating base, Featherstone 2008 ch. 9): pass 3 stops at the base link.  On the
solo12's chain that is a fifth of the work of pass 3; the states are read from the
floating q (N, n + 1) itself (link i ≥ 6 at column i + 1).  Held to the per-state kernel
on the chain configuration (``tests/test_statements.py``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .jit import inline as _inline, jit as _jit, serial_and_parallel as _serial_and_parallel
from .lane_blocks import (BLOCK, COMMON, LANES, Q_ANGLE, _add_into, _block, _copy, _link_constants, _load3,
                          _load_states, _placement, _rotate_sym, _rotations, _store3, _vec)
from .lanes import EXACT_RANGE
from .layout import ARMATURE, INERTIA, KIND, MASS, MOMENT, PARENT, Offsets
from .scratch import P_ROW, R_ROW, _placements, _rotate_symmetric, _mirror, _scratch, algorithm_rows
from .status import BAD_SHAPE, OK, _check, _finite_result, _one
from .vectors import _accumulate, _add, _col, _cross, _dot, _mat_vec, _put, _row, _scale

# -- per state --------------------------------------------------------------------------------

# rows of the scratch W: the composite body (C_MASS: m, then the link whose frame F_i is in),
# and F_i = I^c_i S_i (force, torque)
W_ROWS = algorithm_rows("composite_rigid_body", (("C_MASS", 1), ("C_MOMENT", 1), ("C_INERTIA", 3), ("C_FORCE", 1),
                                                 ("C_TORQUE", 1)))
C_MASS, C_MOMENT, C_INERTIA, C_FORCE, C_TORQUE = W_ROWS.at("C_MASS", "C_MOMENT", "C_INERTIA", "C_FORCE", "C_TORQUE")


@_inline
def _crba_state(P, Q, k, H, W, floating):
    """M(q) (n, n) into H.  Composite bodies are kept as (m, h, I_O) about the link origin
    and moved to the parent with the parallel-axis theorem; then every F_i = I^c_i S_i is
    carried down to the base, all of them one joint at a time (independent products, where
    carrying each F_i down its own path would make one long chain).  With ``floating``, P is
    a free-flyer chain (Q its configuration) whose six joints are the closed forms of the
    module docstring: the recursion stops at the base link."""
    n = P.shape[0] - 1
    joints = FREE_FLYER_BASE + 1 if floating else 0     # the first joint recursed over
    _placements(P, Q, k, W)
    for i in range(n):
        for j in range(n):
            H[k, i, j] = 0.0            # joints on different branches do not couple
        W[i, C_MASS, 0] = P[i, MASS]
        _put(W, i, C_MOMENT, _col(P, i, MOMENT))
        for a in range(3):
            _put(W, i, C_INERTIA + a, _col(P, i, INERTIA + 3 * a))
    for i in range(n - 1, joints - 1, -1):
        m, h = W[i, C_MASS, 0], _row(W, i, C_MOMENT)
        if P[i, KIND] == 0.0:               # F = I^c S: [I_O ẑ; ẑ × h] (revolute)
            torque = (W[i, C_INERTIA, 2], W[i, C_INERTIA + 1, 2], W[i, C_INERTIA + 2, 2])
            force = (-h[1], h[0], 0.0)
            H[k, i, i] = torque[2] + P[i, ARMATURE]
        else:                               # [h × ẑ; m ẑ] (prismatic)
            torque, force = (h[1], -h[0], 0.0), (0.0, 0.0, m)
            H[k, i, i] = m + P[i, ARMATURE]
        _put(W, i, C_FORCE, force)
        _put(W, i, C_TORQUE, torque)
        W[i, C_MASS, 1] = i                 # the link whose frame F_i is in
        parent = int(P[i, PARENT])
        if parent >= 0:
            _add_composite(W, i, parent, m, h)
    if floating:
        _base_block_state(P, W, H, k)
    for j in range(n - 1, joints - 1, -1):  # children before parents: F_i in frame j → its parent's
        parent = int(P[j, PARENT])
        if parent >= 0:
            revolute, p = P[parent, KIND] == 0.0, _row(W, j, P_ROW)
            for i in range(j, n):
                if W[i, C_MASS, 1] == j:
                    force = _mat_vec(W, j, R_ROW, _row(W, i, C_FORCE))
                    torque = _add(_mat_vec(W, j, R_ROW, _row(W, i, C_TORQUE)), _cross(p, force))
                    if floating and parent == FREE_FLYER_BASE:     # in the base frame: M_i,0:6
                        for e in range(3):
                            H[k, i, e] = H[k, e, i] = force[e]
                            H[k, i, 3 + e] = H[k, 3 + e, i] = torque[e]
                        continue
                    _put(W, i, C_FORCE, force)
                    _put(W, i, C_TORQUE, torque)
                    W[i, C_MASS, 1] = parent
                    H[k, i, parent] = H[k, parent, i] = torque[2] if revolute else force[2]


FREE_FLYER_BASE = 5                 # a free-flyer chain's base link (dyn_plugin.floating.free_flyer_chain)


@_inline
def _base_block_state(P, W, H, k):
    """M_0:6,0:6 of state k: the composite body of link FREE_FLYER_BASE (the whole robot at
    the base origin, base frame), [[m 1, −[h]×], [[h]×, I_O]], with the six joints'
    armature on the diagonal (as _base_block over lanes)."""
    m, h = W[FREE_FLYER_BASE, C_MASS, 0], _row(W, FREE_FLYER_BASE, C_MOMENT)
    cross = ((0.0, -h[2], h[1]), (h[2], 0.0, -h[0]), (-h[1], h[0], 0.0))     # [h]×
    for a in range(3):
        for b in range(3):
            H[k, a, b] = m if a == b else 0.0
            H[k, 3 + a, 3 + b] = W[FREE_FLYER_BASE, C_INERTIA + a, b]
            H[k, 3 + a, b] = cross[a][b]
            H[k, b, 3 + a] = cross[a][b]                # −[h]× = [h]×ᵀ
    for a in range(6):
        H[k, a, a] += P[a, ARMATURE]


@_inline
def _add_composite(W, i, parent, m, h):
    """Add body i's (m, h, I_O) to its parent's, in the parent frame at the parent origin:
    h' = R h + m p;  I' = R I Rᵀ + m(|p|² 1 − p pᵀ) + 2(Rh·p) 1 − Rh pᵀ − p (Rh)ᵀ, symmetric
    (its lower triangle is computed, and mirrored); body i's I is left rotated."""
    p = _row(W, i, P_ROW)
    hr = _mat_vec(W, i, R_ROW, h)
    W[parent, C_MASS, 0] += m
    _accumulate(W, parent, C_MOMENT, _add(hr, _scale(m, p)))
    diagonal = m * _dot(p, p) + 2.0 * _dot(hr, p)
    mp = _scale(m, p)
    _rotate_symmetric(W, i, C_INERTIA)
    for a in range(3):
        for b in range(a + 1):
            shift = (diagonal if a == b else 0.0) - mp[a] * p[b] - hr[a] * p[b] - p[a] * hr[b]
            W[parent, C_INERTIA + a, b] += W[i, C_INERTIA + a, b] + shift
    _mirror(W, parent, C_INERTIA)


@_jit
def _mass_matrix_rows(P, Q, H):
    """M (rows, n, n) of the states (rows) of Q into H."""
    W = _scratch(P)
    for k in range(Q.shape[0]):
        _crba_state(P, Q, k, H, W, False)


@_jit
def _floating_mass_matrix_rows(P, Q, H):
    """M (rows, n, n) of a free-flyer chain P at its configurations Q (rows) into H, its six
    joints in closed form (_crba_state with ``floating``)."""
    W = _scratch(P)
    for k in range(Q.shape[0]):
        _crba_state(P, Q, k, H, W, True)


def mass_matrix_single(P, q, H):
    """M(q) (n, n) of one state into H; returns a status code."""
    n = P.shape[0] - 1
    status = _check(n, q) if H.shape[0] == n and H.shape[1] == n else BAD_SHAPE
    if status == OK:
        _mass_matrix_rows(P, _one(q), H[None])
        for i in range(n):
            status |= _finite_result(H[i])
    return status


# -- over a batch across SIMD lanes ---------------------------------------------------------------

LINK_BLOCK = Offsets((
    ("K_MASS", 1), ("K_H", 3), ("K_I", 6),   # composite body (m, h = m c, I_O lower) in the link frame
    ("M_DIAGONAL", 1),                       # M_ii
    ("K_TO_PARENT", 10),                     # the composite body moved into the parent's frame (as K_MASS..)
    ("TRANSIT", 6),                          # a joint's F = I^c S (force, torque) in this link's frame
    ("M_ENTRY", 1),                          # M_iλ of the F in transit once moved into the parent's frame
    ("M_CHECK", 1),                          # Σ M_ij·0 over the entries this link's block computed: NaN once one
), COMMON.end)                               # is not finite; after the common ones (Q_ANGLE, R_COL0, R_COL1)
K_MASS, K_H, K_I, M_DIAGONAL, K_TO_PARENT, TRANSIT, M_ENTRY, M_CHECK = LINK_BLOCK.at(
    "K_MASS", "K_H", "K_I", "M_DIAGONAL", "K_TO_PARENT", "TRANSIT", "M_ENTRY", "M_CHECK")
CRBA_QUANTITIES = LINK_BLOCK.end


@_jit
def _composite_start(P, X, i, m_lanes):
    """Pass 1 for link i: R (:func:`_rotations`), its composite body started as its own."""
    _, _, _, _, m, h, I, _ = _link_constants(P, i)
    own = _block(X, i, CRBA_QUANTITIES)
    _rotations(P, own, i, m_lanes)
    for l in range(m_lanes):
        own[l + K_MASS * LANES] = m
        _store3(own, l, K_H, h)
        _store3(own, l, K_I, I[:3])
        _store3(own, l, K_I + 3, I[3:])


@_jit
def _joint_column(P, X, i, m_lanes):
    """Pass 2 for link i, its composite body complete: F = I^c S, [I_O ẑ; ẑ × h] (revolute)
    or [h × ẑ; m ẑ] (prismatic), into TRANSIT, and M_ii = Sᵀ F + armature."""
    rev, pri, _, _, _, _, _, armature = _link_constants(P, i)
    own = _block(X, i, CRBA_QUANTITIES)
    for l in range(m_lanes):
        m, h = own[l + K_MASS * LANES], _load3(own, l, K_H)
        column = _load3(own, l, K_I + 3)                            # (I₂₀, I₂₁, I₂₂): I_O ẑ
        _store3(own, l, TRANSIT, (-rev * h[1], rev * h[0], pri * m))
        _store3(own, l, TRANSIT + 3, (rev * column[0] + pri * h[1], rev * column[1] - pri * h[0], rev * column[2]))
        diagonal = rev * column[2] + pri * m + armature
        own[l + M_DIAGONAL * LANES] = diagonal
        own[l + M_CHECK * LANES] += diagonal * 0.0


@_jit
def _composite_to_parent(P, X, i, parent, m_lanes):
    """The rest of pass 2 for link i: its composite body in the parent frame at the parent
    origin, h' = R h + m p, I' = R I Rᵀ + m(|p|² 1 − p pᵀ) + 2(Rh·p) 1 − Rh pᵀ − p (Rh)ᵀ (as
    _add_composite), added to the parent's."""
    _, pri, R0, p0, _, _, _, _ = _link_constants(P, i)
    own = _block(X, i, CRBA_QUANTITIES)
    for l in range(m_lanes):
        R, p = _placement(own, l, R0, p0, pri)
        m, h = own[l + K_MASS * LANES], _load3(own, l, K_H)
        I = _rotate_sym(R, (own[l + K_I * LANES], own[l + (K_I + 1) * LANES], own[l + (K_I + 2) * LANES],
                            own[l + (K_I + 3) * LANES], own[l + (K_I + 4) * LANES], own[l + (K_I + 5) * LANES]))
        hr = _vec(R, h)
        diagonal = m * _dot(p, p) + 2.0 * _dot(hr, p)
        mp = _scale(m, p)
        own[l + K_TO_PARENT * LANES] = m
        _store3(own, l, K_TO_PARENT + 1, _add(hr, mp))
        _store3(own, l, K_TO_PARENT + 4, (I[0] + (diagonal - mp[0] * p[0] - hr[0] * p[0] - p[0] * hr[0]),
                                          I[1] + (-mp[1] * p[0] - hr[1] * p[0] - p[1] * hr[0]),
                                          I[2] + (diagonal - mp[1] * p[1] - hr[1] * p[1] - p[1] * hr[1])))
        _store3(own, l, K_TO_PARENT + 7, (I[3] + (-mp[2] * p[0] - hr[2] * p[0] - p[2] * hr[0]),
                                          I[4] + (-mp[2] * p[1] - hr[2] * p[1] - p[2] * hr[1]),
                                          I[5] + (diagonal - mp[2] * p[2] - hr[2] * p[2] - p[2] * hr[2])))
    _add_into(own, K_TO_PARENT, _block(X, parent, CRBA_QUANTITIES), K_MASS, 10)


@_inline
def _through_joint(P, X, j, parent_revolute, m_lanes):
    """Pass 3: the F in transit at link j (in frame j) carried into the frame of j's parent
    λ, in place, and its M_iλ = S_λᵀ F; the link's M_CHECK gains M_iλ·0 (NaN once it is not
    finite: checked in the lane loop, where it costs one vector operation)."""
    _, pri, R0, p0, _, _, _, _ = _link_constants(P, j)
    own = _block(X, j, CRBA_QUANTITIES)
    for l in range(m_lanes):
        R, p = _placement(own, l, R0, p0, pri)
        force = _vec(R, _load3(own, l, TRANSIT))
        torque = _add(_vec(R, _load3(own, l, TRANSIT + 3)), _cross(p, force))
        _store3(own, l, TRANSIT, force)
        _store3(own, l, TRANSIT + 3, torque)
        entry = parent_revolute * torque[2] + (1.0 - parent_revolute) * force[2]
        own[l + M_ENTRY * LANES] = entry
        own[l + M_CHECK * LANES] += entry * 0.0


_copy_inlined = _inline(_copy.py_func)     # lane_blocks._copy, inlined into pass 3 (see above)


@_inline
def _pass_on(X, j, parent):
    """The F in transit at link j (now in its parent's frame) into the parent's TRANSIT."""
    _copy_inlined(_block(X, j, CRBA_QUANTITIES), TRANSIT, _block(X, parent, CRBA_QUANTITIES), TRANSIT, 6)


@_inline
def _store_entry(own, e, H, first, m_lanes, i, j):
    """Quantity e of a link block into M_ij = M_ji of rows first.. of H (N, n, n)."""
    for l in range(m_lanes):
        H[first + l, i, j] = H[first + l, j, i] = own[l + e * LANES]


# -- the free-flyer chain's six joints in closed form (module docstring) ---------------------------

@_inline
def _store_base_row(own, H, first, m_lanes, i):
    """Joint i's F in transit, now in the base frame at the base origin (force, torque),
    into M_i,0:6 = M_0:6,i of rows first.. of H; the link's M_CHECK gains Σ F·0."""
    for l in range(m_lanes):
        own[l + M_CHECK * LANES] += (own[l + TRANSIT * LANES] + own[l + (TRANSIT + 1) * LANES]
                                     + own[l + (TRANSIT + 2) * LANES] + own[l + (TRANSIT + 3) * LANES]
                                     + own[l + (TRANSIT + 4) * LANES] + own[l + (TRANSIT + 5) * LANES]) * 0.0
    for l in range(m_lanes):
        for e in range(6):
            H[first + l, i, e] = H[first + l, e, i] = own[l + (TRANSIT + e) * LANES]


@_jit
def _base_block(P, X, H, first, m_lanes):
    """M_0:6,0:6 of rows first.. of H: the whole robot's composite inertia at the base origin
    in the base frame (link FREE_FLYER_BASE's composite body m, h, I_O), [[m 1, −[h]×],
    [[h]×, I_O]], with the six joints' armature on the diagonal; the base link's M_CHECK
    gains Σ entry·0."""
    own = _block(X, FREE_FLYER_BASE, CRBA_QUANTITIES)
    for l in range(m_lanes):
        m = own[l + K_MASS * LANES]
        hx, hy, hz = _load3(own, l, K_H)
        s = (own[l + K_I * LANES], own[l + (K_I + 1) * LANES], own[l + (K_I + 2) * LANES],
             own[l + (K_I + 3) * LANES], own[l + (K_I + 4) * LANES], own[l + (K_I + 5) * LANES])
        B = H[first + l]
        B[0, 0], B[1, 1], B[2, 2] = m + P[0, ARMATURE], m + P[1, ARMATURE], m + P[2, ARMATURE]
        B[0, 1] = B[1, 0] = B[0, 2] = B[2, 0] = B[1, 2] = B[2, 1] = 0.0
        B[3, 3], B[4, 4], B[5, 5] = s[0] + P[3, ARMATURE], s[2] + P[4, ARMATURE], s[5] + P[5, ARMATURE]
        B[4, 3] = B[3, 4] = s[1]
        B[5, 3] = B[3, 5] = s[3]
        B[5, 4] = B[4, 5] = s[4]
        B[0, 3], B[0, 4], B[0, 5] = 0.0, hz, -hy                 # −[h]×
        B[1, 3], B[1, 4], B[1, 5] = -hz, 0.0, hx
        B[2, 3], B[2, 4], B[2, 5] = hy, -hx, 0.0
        for a in range(3):
            for b in range(3):
                B[3 + b, a] = B[a, 3 + b]
        own[l + M_CHECK * LANES] += (m + hx + hy + hz + s[0] + s[1] + s[2] + s[3] + s[4] + s[5]) * 0.0


@_jit
def _load_floating_angles(X, n, Q, first, m_lanes):
    """Rows first.. of the floating q (N, n + 1) into Q_ANGLE of the link blocks: link i >
    FREE_FLYER_BASE reads column i + 1, the base link 0; whether an angle lies beyond
    lanes.EXACT_RANGE (or is not finite)."""
    far = False
    base = _block(X, FREE_FLYER_BASE, CRBA_QUANTITIES)
    for l in range(m_lanes):
        base[l + Q_ANGLE * LANES] = 0.0
    for i in range(FREE_FLYER_BASE + 1, n):
        own = _block(X, i, CRBA_QUANTITIES)
        for l in range(m_lanes):
            angle = Q[first + l, i + 1]
            own[l + Q_ANGLE * LANES] = angle
            far |= not abs(angle) < EXACT_RANGE
    return far


@_jit
def _per_state_block(P, Q, H, first, last, floating):
    """M of rows first..last−1 by the per-state kernel (angles beyond the lanes' sine range):
    Q the chain's configurations, or with ``floating`` the floating q (the chain's are made
    here: its six joints at zero); returns Σ M_ij·0 over them."""
    n = P.shape[0] - 1
    if floating:
        QC = np.zeros((last - first, n))
        for k in range(first, last):
            for i in range(FREE_FLYER_BASE + 1, n):
                QC[k - first, i] = Q[k, i + 1]
        _floating_mass_matrix_rows(P, QC, H[first:last])
    else:
        _mass_matrix_rows(P, Q[first:last], H[first:last])
    check = 0.0
    for k in range(first, last):
        for i in range(n):
            for j in range(n):
                check += H[k, i, j] * 0.0
    return check


@_jit
def mass_matrix_lanes(P, Q, H, start, stop, X, floating):
    """M of the states start..stop−1 (rows of Q (N, n)) into H (N, n, n), LANES at a time, in
    the scratch X (n·CRBA_QUANTITIES·LANES entries); returns Σ M_ij·0 over them (0.0, or NaN
    when an entry is not finite).  Each F_i = I^c_i S_i is carried down its path to the base
    joint by joint, M_iλ = S_λᵀ F at each ancestor λ, the links in increasing order: F_i
    passes through its ancestors' TRANSIT quantities once theirs have gone.  With
    ``floating``, P is a free-flyer chain, Q the floating q (N, n + 1), and the chain's six
    joints are the closed forms of the module docstring.  A block of lanes with an angle
    beyond lanes.EXACT_RANGE runs the per-state kernel instead."""
    n = P.shape[0] - 1
    bodies = FREE_FLYER_BASE if floating else 0         # the first link whose composite body is formed
    joints = bodies + 1 if floating else 0             # the first joint recursed over
    check = 0.0
    for i in range(bodies, n):                          # M_CHECK summed once, after the last block
        own = _block(X, i, CRBA_QUANTITIES)
        for l in range(LANES):
            own[l + M_CHECK * LANES] = 0.0
    for first in range(start, stop, LANES):
        last = min(stop, first + LANES)
        m_lanes = last - first
        far = _load_floating_angles(X, n, Q, first, m_lanes) if floating else \
            _load_states(X, CRBA_QUANTITIES, n, Q, Q, Q, first, m_lanes, False, False)
        if far:
            check += _per_state_block(P, Q, H, first, last, floating)
            continue
        for i in range(bodies, n):
            _composite_start(P, X, i, m_lanes)
        for i in range(n - 1, joints - 1, -1):
            _joint_column(P, X, i, m_lanes)
            parent = int(P[i, PARENT])
            if parent >= 0:
                _composite_to_parent(P, X, i, parent, m_lanes)
        # M's rows only now, the scratch's passes done: 16 of talos's M (320 KB) zeroed before
        # pass 1 pushed the scratch out of the L2 cache (pass 1 took 2.5x as long)
        H[first:last] = 0.0                       # joints on different branches do not couple
        if floating:
            _base_block(P, X, H, first, m_lanes)
        for i in range(joints, n):
            _store_entry(_block(X, i, CRBA_QUANTITIES), M_DIAGONAL, H, first, m_lanes, i, i)
            j, parent = i, int(P[i, PARENT])
            while parent >= 0:
                _through_joint(P, X, j, 1.0 - P[parent, KIND], m_lanes)
                if floating and parent == FREE_FLYER_BASE:
                    _store_base_row(_block(X, j, CRBA_QUANTITIES), H, first, m_lanes, i)
                    break
                _store_entry(_block(X, j, CRBA_QUANTITIES), M_ENTRY, H, first, m_lanes, i, parent)
                if P[parent, PARENT] >= 0:        # F_i on, into the TRANSIT of the joint it reached
                    _pass_on(X, j, parent)
                j, parent = parent, int(P[parent, PARENT])
    for i in range(bodies, n):
        own = _block(X, i, CRBA_QUANTITIES)
        for l in range(LANES):
            check += own[l + M_CHECK * LANES]
    return check


def _mass_matrix_batch(P, Q, H):
    """M (N, n, n) into H, BLOCK states per task (see _forward_dynamics_batch)."""
    N, n = Q.shape[0], P.shape[0] - 1
    for block in nb.prange((N + BLOCK - 1) // BLOCK):
        X = np.empty(n * CRBA_QUANTITIES * LANES)
        mass_matrix_lanes(P, Q, H, block * BLOCK, min(N, (block + 1) * BLOCK), X, False)


mass_matrix_batch = _serial_and_parallel(_mass_matrix_batch)   # (serial, parallel)
