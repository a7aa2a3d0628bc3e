"""The composite-rigid-body mass matrix (Featherstone 2008, Table 6.2, as
``kernels._crba_state``) over a batch across SIMD lanes, for :data:`.link_lanes.LANES`
states at once, in the layout and with the helpers of :mod:`.link_lanes` (read its
docstring first: link blocks of quantities over lanes, revolute and prismatic blended by
``rev``/``pri``, one lane loop per function).

Passes 1 and 2 are the per-state kernel's: rotations, then the composite bodies from the
leaves in (m, h = m c, I_O about the link origin, moved to the parent with the
parallel-axis theorem) and each joint's F = I^c S.  Pass 3 carries each F_i down its path
to the base joint by joint, M_iλ = S_λᵀ F at each ancestor λ; F_i travels through the
ancestors' TRANSIT quantities (a lane loop reads and writes its own link's block only), so
the links go in increasing order, an ancestor's own F gone before another passes through.
The helpers called once per link and ancestor are inlined (numba IR): a call passes each
array as a struct and counts references to it, and pass 3 made ~45 such calls per block of
the PUMA-560 (195 -> 135 ns per state on one core once inlined; _through_joint's is then
the driver's one lane loop).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import KIND, PARENT, _add, _cross, _dot, _mass_matrix_rows, _scale, _serial_and_parallel
from .link_lanes import (BLOCK, LANES, _add_into, _block, _copy, _inline, _jit, _link_constants, _load3, _load_states,
                         _placement, _rotate_sym, _rotations, _store3, _vec)

# the quantities of a link block after the common ones (Q_ANGLE, R_COL0, R_COL1)
K_MASS, K_H, K_I = 10, 11, 14              # composite body (m, h = m c, I_O lower) in the link frame
M_DIAGONAL = 20                            # M_ii
K_TO_PARENT = 21                           # the composite body moved into the parent's frame (10, as K_MASS..)
TRANSIT = 31                               # a joint's F = I^c S (force, torque) in this link's frame (6)
M_ENTRY = 37                               # M_iλ of the F in transit once moved into the parent's frame
CRBA_QUANTITIES = 38


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
        own[l + M_DIAGONAL * LANES] = rev * column[2] + pri * m + armature


@_jit
def _composite_to_parent(P, X, i, parent, m_lanes):
    """The rest of pass 2 for link i: its composite body in the parent frame at the parent
    origin, h' = R h + m p, I' = R I Rᵀ + m(|p|² 1 − p pᵀ) + 2(Rh·p) 1 − Rh pᵀ − p (Rh)ᵀ (as
    kernels._add_composite), added to the parent's."""
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
    λ, in place, and its M_iλ = S_λᵀ F."""
    _, pri, R0, p0, _, _, _, _ = _link_constants(P, j)
    own = _block(X, j, CRBA_QUANTITIES)
    for l in range(m_lanes):
        R, p = _placement(own, l, R0, p0, pri)
        force = _vec(R, _load3(own, l, TRANSIT))
        torque = _add(_vec(R, _load3(own, l, TRANSIT + 3)), _cross(p, force))
        _store3(own, l, TRANSIT, force)
        _store3(own, l, TRANSIT + 3, torque)
        own[l + M_ENTRY * LANES] = parent_revolute * torque[2] + (1.0 - parent_revolute) * force[2]


_copy_inlined = _inline(_copy.py_func)     # link_lanes._copy, inlined into pass 3 (see above)


@_inline
def _pass_on(X, j, parent):
    """The F in transit at link j (now in its parent's frame) into the parent's TRANSIT."""
    _copy_inlined(_block(X, j, CRBA_QUANTITIES), TRANSIT, _block(X, parent, CRBA_QUANTITIES), TRANSIT, 6)


@_inline
def _store_entry(own, e, H, first, m_lanes, i, j):
    """Quantity e of a link block into M_ij = M_ji of rows first.. of H (N, n, n)."""
    for l in range(m_lanes):
        H[first + l, i, j] = H[first + l, j, i] = own[l + e * LANES]


@_jit
def mass_matrix_lanes(P, Q, H, start, stop, X):
    """M of the states start..stop−1 (rows of Q (N, n)) into H (N, n, n), LANES at a time, in
    the scratch X (n·CRBA_QUANTITIES·LANES entries).  Each F_i = I^c_i S_i is carried down
    its path to the base joint by joint, M_iλ = S_λᵀ F at each ancestor λ, the links in
    increasing order: F_i passes through its ancestors' TRANSIT quantities once theirs have
    gone.  A block of lanes with an angle beyond lanes.EXACT_RANGE runs the per-state
    kernel instead."""
    n = P.shape[0] - 1
    for first in range(start, stop, LANES):
        last = min(stop, first + LANES)
        m_lanes = last - first
        if _load_states(X, CRBA_QUANTITIES, n, Q, Q, Q, first, m_lanes, False, False):
            _mass_matrix_rows(P, Q[first:last], H[first:last])
            continue
        H[first:last] = 0.0                       # joints on different branches do not couple
        for i in range(n):
            _composite_start(P, X, i, m_lanes)
        for i in range(n - 1, -1, -1):
            _joint_column(P, X, i, m_lanes)
            _store_entry(_block(X, i, CRBA_QUANTITIES), M_DIAGONAL, H, first, m_lanes, i, i)
            parent = int(P[i, PARENT])
            if parent >= 0:
                _composite_to_parent(P, X, i, parent, m_lanes)
        for i in range(n):
            j, parent = i, int(P[i, PARENT])
            while parent >= 0:
                _through_joint(P, X, j, 1.0 - P[parent, KIND], m_lanes)
                _store_entry(_block(X, j, CRBA_QUANTITIES), M_ENTRY, H, first, m_lanes, i, parent)
                if P[parent, PARENT] >= 0:        # F_i on, into the TRANSIT of the joint it reached
                    _pass_on(X, j, parent)
                j, parent = parent, int(P[parent, PARENT])


def _mass_matrix_batch(P, Q, H):
    """M (N, n, n) into H, BLOCK states per task (see _forward_dynamics_batch)."""
    N, n = Q.shape[0], P.shape[0] - 1
    for block in nb.prange((N + BLOCK - 1) // BLOCK):
        X = np.empty(n * CRBA_QUANTITIES * LANES)
        mass_matrix_lanes(P, Q, H, block * BLOCK, min(N, (block + 1) * BLOCK), X)


mass_matrix_batch = _serial_and_parallel(_mass_matrix_batch)   # (serial, parallel)
