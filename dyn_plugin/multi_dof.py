"""Joints of several degrees of freedom (spherical, planar, floating) as a chain of
one-degree-of-freedom joints, and the maps of states between the two.

:func:`expansion` replaces each such joint by its *pose* joints (massless, never moving:
their values place the child, :func:`dyn_plugin.joints.pose_values`) and its *motion*
joints at zero along the columns of its motion subspace S, the last carrying the child
link (:mod:`dyn_plugin.joints` explains why this chain moves as the joint at any one
state).  Every recursion written for one-dof joints then serves the model: τ is the
chain's τ on the motion (and one-dof) joints at the chain's q̈ = a + d(v), M the same rows
and columns of the chain's M.  :mod:`dyn_plugin.backends.multi_dof_backend` does that for
any backend; :mod:`dyn_plugin.frames` for frames.

Derivatives along a joint's tangent (pinocchio's q ⊕ δ, δ in the child frame) are the
chain's derivatives along its motion joints' positions, corrected for the rates and
accelerations the motion joints need, once moved by δ, to keep the joint's velocity and
acceleration (:func:`Expansion.tangent_corrections`): a small recursion over the motion
joints (Featherstone 2008, eqs. 3.33, 3.38), differentiated by complex steps (exact to
round-off: it is analytic in δ and in the rates; Martins, Sturdza & Alonso 2003).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .joints import KINDS, motion_axes, motion_cross, pose_values, unit_configuration, velocity_offset
from .kinematics import PRISMATIC, REVOLUTE, skew
from .model import RobotModel

COMPLEX_STEP = 1e-30        # the imaginary step: far below round-off, and no cancellation


@dataclasses.dataclass(frozen=True, eq=False)
class Group:
    """One joint of several degrees of freedom in the chain: its ``kind``, ``joint`` name,
    slices of q and v, and the chain's joint indices of its ``pose`` and ``motion`` joints."""

    kind: str
    joint: str
    q: slice
    v: slice
    pose: np.ndarray
    motion: np.ndarray


@dataclasses.dataclass(frozen=True, eq=False)
class Expansion:
    """The chain of a model with joints of several degrees of freedom, and the index maps:
    ``columns`` (nv,): the chain's v entry of each of the model's; ``one_dof_q``/
    ``one_dof_chain``: q entries of the one-dof joints and their chain joints."""

    model: RobotModel
    chain: RobotModel
    groups: tuple
    columns: np.ndarray
    one_dof_q: np.ndarray
    one_dof_chain: np.ndarray

    @property
    def base(self) -> tuple:
        """(nq, nv) entries of a floating base before the joints (0, 0 for a fixed base)."""
        return (7, 6) if self.model.floating_base else (0, 0)

    # -- states -----------------------------------------------------------------------------

    def unit(self, q: np.ndarray) -> np.ndarray:
        """q (N, nq) with each joint's quaternion normalised (or refused, naming the joint)."""
        q = q.copy()
        for g in self.groups:
            q[:, g.q] = unit_configuration(g.kind, q[:, g.q], g.joint)
        return q

    def configuration(self, q: np.ndarray) -> np.ndarray:
        """The chain's q (N, chain nq): pose joints at their values, motion joints at zero."""
        bq = self.base[0]
        out = np.zeros((len(q), self.chain.nq))
        out[:, :bq] = q[:, :bq]
        out[:, bq + self.one_dof_chain] = q[:, self.one_dof_q]           # q indices include the base's
        for g in self.groups:
            out[:, bq + g.pose] = pose_values(g.kind, q[:, g.q])
        return out

    def velocity(self, v: np.ndarray) -> np.ndarray:
        """The chain's q̇ (N, chain nv): v on the motion and one-dof joints, 0 on the pose joints."""
        out = np.zeros((len(v), self.chain.nv))
        out[:, self.columns] = v
        return out

    def acceleration(self, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """The chain's q̈: a + d(v) on the motion joints (:func:`~dyn_plugin.joints.velocity_offset`)."""
        out = self.velocity(a)
        bv = self.base[1]
        for g in self.groups:
            out[:, bv + g.motion] += velocity_offset(g.kind, v[:, g.v])
        return out

    def vector(self, chain_values: np.ndarray) -> np.ndarray:
        """The model's entries (N, nv) of a chain vector (N, chain nv): τ, a generalized force."""
        return chain_values[:, self.columns]

    def matrix(self, chain_values: np.ndarray) -> np.ndarray:
        """The model's rows and columns (N, nv, nv) of a chain matrix (N, chain nv, chain nv)."""
        return chain_values[:, self.columns][:, :, self.columns]

    # -- derivatives along the tangent --------------------------------------------------------

    def tangent_corrections(self, v: np.ndarray, chain_qdd: np.ndarray) -> list:
        """Per group, (rate_dq, acc_dq, acc_dv), each (N, nv_g, nv_g): ∂q̇/∂δ and ∂q̈/∂δ of its
        motion joints at fixed velocity and acceleration of the joint (δ its tangent), and
        ∂q̈/∂v (from d(v)).  ``chain_qdd``: the chain's q̈ (N, chain nv) at the state."""
        bv = self.base[1]
        return [_corrections(g.kind, v[:, g.v], chain_qdd[:, bv + g.motion]) for g in self.groups]

    def force_corrections(self, tau: np.ndarray) -> list:
        """Per group, (N, nv_g, nv_g): ∂τ_g/∂δ beyond the chain's, from the joint's force
        components turning with δ: the chain's τ on the motion joints is Eᵀ τ (power:
        τ_cᵀ q̇_c = τᵀ v with v = E q̇_c), so τ_g = E⁻ᵀ τ_c gains −D_jᵀ τ_g along δ_j."""
        return [-np.einsum("jba,nb->naj", _rate_map_derivatives(g.kind), tau[:, g.v]) for g in self.groups]

    def rate_changes(self, v: np.ndarray) -> list:
        """Per group, Ė = Σ_j v_j ∂E/∂δ_j (N, nv_g, nv_g), E(δ) the map from the motion
        joints' rates to the joint's velocity once they are moved by δ: J̇ of the joint's
        columns is the chain's J̇ − J_chain Ė (the columns of J stay fixed in the child frame,
        the chain's turn with the motion joints)."""
        return [np.einsum("nj,jab->nab", v[:, g.v], _rate_map_derivatives(g.kind)) for g in self.groups]


@functools.lru_cache(maxsize=64)
def expansion(model: RobotModel) -> Expansion:
    """The :class:`Expansion` of a model (no mimic joints: the mimic map comes first,
    :func:`dyn_plugin.backends.get_backend`)."""
    if model.mimic:
        raise ValueError(f"model {model.name!r}: expand the joints after the mimic map")
    joints, body, groups, one_dof_q, one_dof_v, one_dof_chain = [], {-1: -1}, [], [], [], []
    for i, kind in enumerate(model.joint_types):
        q_slice, v_slice = model.joint_slices[i]
        if kind in (REVOLUTE, PRISMATIC):
            one_dof_q.append(q_slice.start)
            one_dof_v.append(v_slice.start)
            one_dof_chain.append(len(joints))
            joints.append(_one_dof(model, i, body[int(model.parents[i])]))
        else:
            start = len(joints)
            joints += _group(model, i, kind, body[int(model.parents[i])], start)
            spec = KINDS[kind]
            groups.append(Group(kind, model.joint_names[i], q_slice, v_slice,
                                np.arange(start, start + len(spec.pose)),
                                np.arange(start + len(spec.pose), len(joints))))
        body[i] = len(joints) - 1
    chain = _chain_model(model, joints)
    columns = np.empty(model.nv, dtype=int)
    bv = 6 if model.floating_base else 0
    columns[:bv] = np.arange(bv)
    columns[one_dof_v] = bv + np.array(one_dof_chain, dtype=int)
    for g in groups:
        columns[g.v] = bv + g.motion
    return Expansion(model, chain, tuple(groups), columns, np.array(one_dof_q, dtype=int),
                     np.array(one_dof_chain, dtype=int))


def _one_dof(model: RobotModel, i: int, parent: int) -> dict:
    return dict(name=model.joint_names[i], link=model.link_names[i], kind=model.joint_types[i], parent=parent,
                rotation=model.joint_rotations[i], position=model.joint_positions[i], axis=model.axes[i],
                mass=model.masses[i], com=model.coms[i], inertia=model.inertias[i], lower=model.lower[i],
                upper=model.upper[i], velocity=model.velocity_limits[i], effort=model.effort_limits[i],
                damping=model.damping[i], friction=model.friction[i], continuous=bool(model.continuous[i]),
                armature=model.armature[i])


def _group(model: RobotModel, i: int, kind: str, parent: int, start: int) -> list:
    """The chain joints of joint i, from chain index ``start``: its pose joints (the first at
    its placement, on the chain joint ``parent``), then its motion joints, the last with its link."""
    spec, name, link = KINDS[kind], model.joint_names[i], model.link_names[i]
    parts = [(f"{name}:pose{k}", joint_type, axis) for k, (joint_type, axis) in enumerate(spec.pose)]
    parts += [(name + suffix, joint_type, axis) for suffix, (joint_type, axis) in zip(spec.v_names, spec.motion)]
    out = []
    for k, (part, joint_type, axis) in enumerate(parts):
        last = k == len(parts) - 1
        out.append(dict(
            name=part, link=link if last else f"{part}:link", kind=joint_type, parent=start + k - 1 if k else parent,
            rotation=model.joint_rotations[i] if k == 0 else np.eye(3),
            position=model.joint_positions[i] if k == 0 else np.zeros(3), axis=axis,
            mass=model.masses[i] if last else 0.0, com=model.coms[i] if last else np.zeros(3),
            inertia=model.inertias[i] if last else np.zeros((3, 3)), lower=-np.inf, upper=np.inf,
            velocity=np.inf, effort=np.inf, damping=0.0, friction=0.0, continuous=joint_type == REVOLUTE,
            armature=0.0))
    return out


def _chain_model(model: RobotModel, joints: list) -> RobotModel:
    column = lambda key, dtype=float: np.array([j[key] for j in joints], dtype=dtype)       # noqa: E731
    n = len(joints)
    return dataclasses.replace(
        model, name=f"{model.name} (joints of several degrees of freedom expanded)",
        joint_names=tuple(j["name"] for j in joints), link_names=tuple(j["link"] for j in joints),
        joint_types=tuple(j["kind"] for j in joints), parents=column("parent", int),
        joint_rotations=column("rotation").reshape(n, 3, 3), joint_positions=column("position").reshape(n, 3),
        axes=column("axis").reshape(n, 3), masses=column("mass"), coms=column("com").reshape(n, 3),
        inertias=column("inertia").reshape(n, 3, 3), lower=column("lower"), upper=column("upper"),
        velocity_limits=column("velocity"), effort_limits=column("effort"), damping=column("damping"),
        friction=column("friction"), continuous=column("continuous", bool), armature=column("armature"),
        source_urdf=None, source_path=None, payloads=(), held_joints=(), mimic=())


# -- the motion joints, moved by δ ---------------------------------------------------------------

def relative_motion(kind: str, delta: np.ndarray, rates: np.ndarray, accelerations: np.ndarray) -> tuple:
    """The child's velocity and acceleration (N, 6 each; linear, angular; child frame)
    relative to the parent from the motion joints at positions δ with ``rates`` and
    ``accelerations`` (each (N, nv)): v_k = X_k v_{k−1} + S_k q̇_k and
    a_k = X_k a_{k−1} + S_k q̈_k + v_k × S_k q̇_k (Featherstone 2008, eqs. 3.33, 3.38), X_k the
    motion transform across joint k displaced by δ_k.  Works on complex numbers."""
    S = motion_axes(kind)
    N = len(rates)
    dtype = np.result_type(delta, rates, accelerations, float)
    v, a = np.zeros((N, 6), dtype), np.zeros((N, 6), dtype)
    for k, (joint_type, axis) in enumerate(KINDS[kind].motion):
        v, a = _across(joint_type, axis, delta[:, k], v), _across(joint_type, axis, delta[:, k], a)
        s = np.broadcast_to(S[k], (N, 6))
        v = v + s * rates[:, k:k + 1]
        a = a + s * accelerations[:, k:k + 1] + motion_cross(v, s * rates[:, k:k + 1])
    return v, a


def _across(joint_type: str, axis: np.ndarray, delta: np.ndarray, m: np.ndarray) -> np.ndarray:
    """^kX_{k−1} m for motions m (N, 6): frame k turned by δ about the axis (revolute; the
    components rotate by Rᵀ) or moved by δ along it (prismatic; v' = v − δ u × ω)."""
    if joint_type == PRISMATIC:
        shift = np.cross(delta[:, None] * axis, m[:, 3:])
        return np.concatenate([m[:, :3] - shift, m[:, 3:]], axis=1)
    K = skew(axis)
    c, s = np.cos(delta)[:, None, None], np.sin(delta)[:, None, None]
    R = np.eye(3) + s * K + (1 - c) * (K @ K)                        # Rodrigues, complex-safe
    RT = np.swapaxes(R, 1, 2)
    return np.concatenate([np.einsum("nij,nj->ni", RT, m[:, :3]), np.einsum("nij,nj->ni", RT, m[:, 3:])], axis=1)


@functools.lru_cache(maxsize=None)
def _rate_map_derivatives(kind: str) -> np.ndarray:
    """D (nv, nv, nv), D[j] = ∂E/∂δ_j at δ = 0 with E(δ) q̇ = Sᵀ V(δ, q̇) (V of
    :func:`relative_motion`, linear in q̇): column k of D[j] is Sᵀ ∂V(δ, e_k)/∂δ_j, by a
    complex step.  The same for every state."""
    S, nv = motion_axes(kind), KINDS[kind].nv
    D = np.empty((nv, nv, nv))
    units, zero = np.eye(nv), np.zeros((nv, nv))
    for j in range(nv):
        delta = np.zeros((nv, nv), complex)
        delta[:, j] = 1j * COMPLEX_STEP
        V, _ = relative_motion(kind, delta, units, zero)                # row k: unit rate of joint k
        D[j] = ((V.imag / COMPLEX_STEP) @ S.T).T
    D.setflags(write=False)
    return D


def _corrections(kind: str, v: np.ndarray, qdd: np.ndarray) -> tuple:
    """(∂q̇/∂δ, ∂q̈/∂δ, ∂q̈/∂v) (N, nv, nv) of one group's motion joints (see
    :meth:`Expansion.tangent_corrections`).  With V(δ, q̇) = S E(δ) q̇ and A(δ, q̇, q̈) from
    :func:`relative_motion` held at S v and S a: ∂q̇/∂δ_j = −D_j v and
    ∂q̈/∂δ = −Sᵀ (∂A/∂δ + ∂A/∂q̇ ∂q̇/∂δ) (at δ = 0, ∂V/∂q̇ = ∂A/∂q̈ = S, orthonormal columns);
    ∂q̈/∂v = ∂d/∂v.  Each by a complex step on one argument."""
    S = motion_axes(kind)
    N, nv = v.shape
    rate_dq = -np.einsum("jab,nb->naj", _rate_map_derivatives(kind), v)
    acc_direct, acc_rates, acc_dv = (np.empty((N, nv, nv)) for _ in range(3))
    for j in range(nv):
        delta = np.zeros((N, nv), complex)
        delta[:, j] = 1j * COMPLEX_STEP
        acc_direct[:, :, j] = (relative_motion(kind, delta, v, qdd)[1].imag / COMPLEX_STEP) @ S.T
        rates = v.astype(complex)
        rates[:, j] += 1j * COMPLEX_STEP
        acc_rates[:, :, j] = (relative_motion(kind, np.zeros((N, nv)), rates, qdd)[1].imag / COMPLEX_STEP) @ S.T
        acc_dv[:, :, j] = velocity_offset(kind, rates).imag / COMPLEX_STEP
    return rate_dq, -(acc_direct + acc_rates @ rate_dq), acc_dv
