"""The composite-rigid-body algorithm (CRBA): the joint-space inertia matrix M(q) in O(n²).

Written from Featherstone, *Rigid Body Dynamics Algorithms* (2008), Table 6.2, with the
spatial conventions of :mod:`.articulated_body` ([angular; linear], link coordinates,
ⁱX_λ the Plücker transform from the parent λ(i) to link i):

1. I^c_i = I_i for every link;
2. for i = n … 1:  I^c_λ(i) += ⁱX_λᵀ I^c_i ⁱX_λ   (the composite body moved to the parent);
   F = I^c_i S_i,  M_ii = S_iᵀ F;
   walking j from i towards the base:  F = ʲX_λ(j)ᵀ F,  j = λ(j),  M_ij = M_ji = S_jᵀ F.

Entries of joints on different branches stay zero.  Batches: ``q`` (N, n) → M (N, n, n).
"""

from __future__ import annotations

import numpy as np

from ..kinematics import link_placements
from .articulated_body import motion_subspace, plucker_transforms, spatial_inertias


def mass_matrix(model, q, armature=None) -> np.ndarray:
    """M(q) (N, n, n), kg·m² / kg; ``armature`` (n,) is added to the diagonal (rotor inertia)."""
    N, n = q.shape
    X = plucker_transforms(*link_placements(model, q))              # (N, n, 6, 6): ⁱX_λ
    S = motion_subspace(model)                                      # (n, 6)
    Ic = np.broadcast_to(spatial_inertias(model), (N, n, 6, 6)).copy()
    M = np.zeros((N, n, n))
    for i in reversed(range(n)):
        parent = model.parents[i]
        if parent >= 0:
            Ic[:, parent] += np.swapaxes(X[:, i], -1, -2) @ Ic[:, i] @ X[:, i]
        F = Ic[:, i] @ S[i]                                         # (N, 6)
        M[:, i, i] = F @ S[i]
        j = i
        while model.parents[j] >= 0:
            F = np.einsum("nba,nb->na", X[:, j], F)                 # ʲX_λᵀ F
            j = model.parents[j]
            M[:, i, j] = M[:, j, i] = F @ S[j]
    if armature is not None:
        M += np.diag(armature)
    return M
