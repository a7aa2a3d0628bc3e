"""Mimic joints in reduced coordinates (URDF ``<mimic>``, pinocchio's ``mimic=True``).

A mimic joint j follows its leader l: q_j = m q_l + o (URDF ``multiplier`` m, ``offset``
o), hence q̇_j = m q̇_l and q̈_j = m q̈_l.  Loaded with ``mimic=True`` a model keeps every
joint's geometry and inertia but only the independent joints are coordinates; with the
constant map G (nv_full × nv) from the reduced velocities to every joint's,

    v_full = G v,   τ = Gᵀ τ_full(q_full, G v, G a),   M = Gᵀ M_full G,

(the map is linear with constant G, so no velocity-product term comes with it: the
principle of virtual work with the constraint forces doing none), and q̈ solves M q̈ =
τ − Gᵀ bias_full.  :mod:`dyn_plugin.backends.mimic_backend` applies it over any backend.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .errors import ModelError


@dataclasses.dataclass(frozen=True)
class Mimic:
    """Joint ``joint`` follows joint ``leader``: q = multiplier · q_leader + offset (rad or m)."""

    joint: str
    leader: str
    multiplier: float = 1.0
    offset: float = 0.0


def resolve(joint_names, relations, where: str = "") -> tuple:
    """The relations (:class:`Mimic`) with every leader an independent joint: a joint that
    follows a joint that follows another follows that one (multipliers multiplied, offsets
    carried).  Raises :class:`ModelError` for a leader that is not a moving joint of the
    model, a joint mimicking itself or a loop."""
    known, by_joint = set(joint_names), {}
    for relation in relations:
        for name in (relation.joint, relation.leader):
            if name not in known:
                raise ModelError(f"{where}mimic joint {relation.joint!r} follows {relation.leader!r}: {name!r} is not "
                                 "a moving joint of the model")
        if relation.joint in by_joint:
            raise ModelError(f"{where}joint {relation.joint!r} has two <mimic> elements")
        by_joint[relation.joint] = relation
    resolved = []
    for relation in relations:
        multiplier, offset, leader, seen = relation.multiplier, relation.offset, relation.leader, {relation.joint}
        while leader in by_joint:
            if leader in seen:
                raise ModelError(f"{where}mimic joints form a loop through {sorted(seen)}")
            seen.add(leader)
            step = by_joint[leader]
            multiplier, offset, leader = multiplier * step.multiplier, multiplier * step.offset + offset, step.leader
        resolved.append(Mimic(relation.joint, leader, float(multiplier), float(offset)))
    return tuple(resolved)


@functools.lru_cache(maxsize=64)
def full_model(model):
    """``model.without_mimic()``, made once per model."""
    return model.without_mimic()


@functools.lru_cache(maxsize=64)
def velocity_map(model) -> np.ndarray:
    """G (nv_full, nv): the full model's velocities (every joint, after a floating base's 6)
    from the reduced ones."""
    full = full_model(model)
    G = np.zeros((full.nv, model.nv))
    index = {name: k for k, name in enumerate(model.velocity_names)}
    for row, name in enumerate(full.velocity_names):
        if name in index:
            G[row, index[name]] = 1.0
    base = full.nv - full.n
    for relation in model.mimic:
        G[base + full.joint_names.index(relation.joint), index[relation.leader]] = relation.multiplier
    return G


def full_configuration(model, q: np.ndarray) -> np.ndarray:
    """q_full (N, nq_full) of reduced configurations q (N, nq): a floating base's 7 entries
    as they are, every joint from G and the offsets."""
    full = full_model(model)
    base_q, base_v = full.nq - full.n, full.nv - full.n
    joints = q[:, base_q:] @ velocity_map(model)[base_v:, base_v:].T
    offsets = np.zeros(full.n)
    for relation in model.mimic:
        offsets[full.joint_names.index(relation.joint)] = relation.offset
    return np.concatenate([q[:, :base_q], joints + offsets], axis=1)
