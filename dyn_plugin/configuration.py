"""The configuration space of a whole model: q ⊕ v, q₁ ⊖ q₀, and the rate of an exponential chart.

A model's configurations form a product of Lie groups, one factor per coordinate block:
a floating base (:attr:`RobotModel.floating_base`, the SE(3) of pinocchio's
``JointModelFreeFlyer``: its 7 entries of q and 6 of v come first), then each joint in
:attr:`RobotModel.joint_slices` order by its kind (:mod:`dyn_plugin.joints`: ℝ for a
one-dof joint, SO(3) spherical, SE(2) planar, SE(3) floating).  The base *is* a floating
joint at the root (same entries, same convention), so each factor's maps are stated once,
per kind, in :mod:`dyn_plugin.joints`; this module applies them block by block, as
pinocchio's ``integrate(model, q, v)`` and ``difference(model, q0, q1)`` do over its joints.

Our angle form differs from pinocchio's (cos, sin) form for continuous and planar joints
only in how q is stored (converted at the pinocchio boundary); :func:`difference` takes
such angles modulo 2π as pinocchio does (``tests/test_configuration.py`` holds both maps to
``pin.integrate``/``pin.difference`` on random models with every kind to 1e-12).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .joints import FLOATING, chart_rate as joint_chart_rate, difference as joint_difference
from .joints import integrate as joint_integrate
from .kinematics import PRISMATIC, REVOLUTE
from .model import RobotModel


@dataclasses.dataclass(frozen=True, eq=False)
class Blocks:
    """The factors of a model's configuration space.  ``groups``: (kind, q slice, v slice) of
    the base (as a floating joint) and of every joint of several degrees of freedom;
    ``one_dof_q``/``one_dof_v`` (k,): entries of the one-dof joints in q and v, in the same
    order; ``wrapped`` (k,) bool: those whose angle :func:`difference` takes modulo 2π
    (continuous joints, as pinocchio's ``JointModelRevoluteUnbounded``)."""

    groups: tuple
    one_dof_q: np.ndarray
    one_dof_v: np.ndarray
    wrapped: np.ndarray


@functools.lru_cache(maxsize=64)
def blocks(model: RobotModel) -> Blocks:
    """The :class:`Blocks` of ``model`` (mimic joints are no coordinates: left out)."""
    groups = [(FLOATING, slice(0, 7), slice(0, 6))] if model.floating_base else []
    one_q, one_v, wrapped = [], [], []
    for i, slices in enumerate(model.joint_slices):
        if slices is None:
            continue
        kind = model.joint_types[i]
        if kind in (REVOLUTE, PRISMATIC):
            one_q.append(slices[0].start)
            one_v.append(slices[1].start)
            wrapped.append(kind == REVOLUTE and bool(model.continuous[i]))
        else:
            groups.append((kind, *slices))
    return Blocks(tuple(groups), np.array(one_q, dtype=int), np.array(one_v, dtype=int), np.array(wrapped, dtype=bool))


def integrate(model: RobotModel, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """q ⊕ v (N, nq): the configuration reached from q (N, nq) by moving with the constant
    velocity v (N, nv) for unit time (v dt for a step dt), pinocchio's ``integrate``: one-dof
    joints q + v; the base and each joint of several degrees of freedom along the
    exponential of its body twist (:func:`dyn_plugin.joints.integrate`, quaternions
    renormalised)."""
    parts = blocks(model)
    out = q.copy()
    out[:, parts.one_dof_q] += v[:, parts.one_dof_v]
    for kind, q_slice, v_slice in parts.groups:
        out[:, q_slice] = joint_integrate(kind, q[:, q_slice], v[:, v_slice])
    return out


def difference(model: RobotModel, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """q₁ ⊖ q₀ (N, nv): the velocity that :func:`integrate` takes from q₀ to q₁ (N, nq each)
    in unit time, pinocchio's ``difference``: q₁ − q₀ for one-dof joints, a continuous
    joint's angle wrapped into [−π, π]; the logarithm of each group's relative displacement
    (:func:`dyn_plugin.joints.difference`).  ``integrate(model, q0, difference(model, q0,
    q1))`` is q₁ up to whole turns of continuous and planar angles (and a quaternion's sign)."""
    parts = blocks(model)
    out = np.zeros((len(q0), model.nv), dtype=np.result_type(q0, q1, float))
    step = q1[:, parts.one_dof_q] - q0[:, parts.one_dof_q]
    out[:, parts.one_dof_v] = np.where(parts.wrapped, np.arctan2(np.sin(step), np.cos(step)), step)
    for kind, q_slice, v_slice in parts.groups:
        out[:, v_slice] = joint_difference(kind, q0[:, q_slice], q1[:, q_slice])
    return out


def chart_rate(model: RobotModel, xi: np.ndarray, v: np.ndarray) -> np.ndarray:
    """ξ̇ (N, nv) of the chart coordinates ξ of q₀ ⊕ ξ moving with the velocity v (N, nv):
    v on one-dof joints; dexp⁻¹ of each group (:func:`dyn_plugin.joints.chart_rate`;
    Munthe-Kaas' RK4 on the manifold, :mod:`dyn_plugin.simulate`)."""
    rate = v.copy()
    for kind, _, v_slice in blocks(model).groups:
        rate[:, v_slice] = joint_chart_rate(kind, xi[:, v_slice], v[:, v_slice])
    return rate


def is_euclidean(model: RobotModel) -> bool:
    """True when q ⊕ v is q + v for every entry (no floating base, no joint of several
    degrees of freedom): q and v then have the same length and layout."""
    return not blocks(model).groups

