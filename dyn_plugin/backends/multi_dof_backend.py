"""Any backend on a robot with spherical, planar or floating joints, through the chain of
:func:`dyn_plugin.multi_dof.expansion`.

The backend runs on the chain (one-dof joints only; a floating base, if any, is handled
below it); this wrapper maps the states: the chain's q places each such joint's pose
joints, its q̇ is v and its q̈ is a + d(v) on the motion joints; τ and M are the chain's on
the motion and one-dof joints; q̈ by Cholesky from M and the bias forces
(:class:`~dyn_plugin.backends.base.Backend`'s default).  Derivatives are the chain's,
corrected along each joint's tangent (:meth:`dyn_plugin.multi_dof.Expansion.tangent_corrections`).
:func:`dyn_plugin.get_backend` builds it for every backend that does not declare the
``multi_dof`` capability itself, except a reference engine (``kind = "reference"``, e.g.
pybullet): run on our chain it would check the chain against itself, so it is refused
(a ModelError naming the joint; ``dyn-plugin validate`` lists it as skipped).
"""

from __future__ import annotations

import functools

import numpy as np

from ..arrays import all_finite
from ..errors import ModelError, NumericalError
from ..multi_dof import expansion
from .base import Backend, chain_joint_wrenches, nan_for_overflow

# What the chain backend can do that stays true through the state map.
KEPT_CAPABILITIES = frozenset({"derivatives", "joint_wrenches"})


def multi_dof_backend(name: str, factory, model, get_backend, **options) -> Backend:
    """Backend ``name`` (registered as ``factory``) for ``model`` (joints of several degrees
    of freedom), built on the chain by ``get_backend`` (the registry's)."""
    kinds = sorted({model.joint_types[i] for i in model.multi_dof_indices})
    if getattr(factory, "kind", None) == "reference":
        i = model.multi_dof_indices[0]
        raise ModelError(f"{name} is a reference engine: it is compared as it loads the robot, not run on our chain of "
                         f"one-dof joints, and it does not take joint {model.joint_names[i]!r} of robot "
                         f"{model.name!r} ({model.joint_types[i]}); a reference declaring 'multi_dof' (pinocchio) does")
    if "friction" in getattr(factory, "capabilities", ()):
        raise ModelError(f"robot {model.name!r} has {', '.join(kinds)} joints: friction laws are written for "
                         "revolute and prismatic joints; use a rigid-body backend")
    if options.get("armature") is not None:
        raise ModelError(f"armature= for robot {model.name!r} with {', '.join(kinds)} joints: set the model's armature "
                         "of its revolute and prismatic joints instead")
    gravity = options.pop("gravity", None)
    model = model if gravity is None else model.with_gravity(gravity)
    return multi_dof_class(factory)(model, get_backend(name, expansion(model).chain, **options))


@functools.lru_cache(maxsize=None)
def multi_dof_class(chain_class) -> type:
    """The wrapper class for backends of ``chain_class``: its name, kind and (kept) capabilities."""
    capabilities = frozenset(getattr(chain_class, "capabilities", ())) & KEPT_CAPABILITIES
    return type(f"MultiDof{getattr(chain_class, '__name__', 'Backend')}", (MultiDofBackend,), {
        "name": getattr(chain_class, "name", "custom"), "kind": getattr(chain_class, "kind", "ours"),
        "description": getattr(chain_class, "description", ""),
        "capabilities": capabilities | {"multi_dof", "floating_base"}})


class MultiDofBackend(Backend):
    """A backend of the expanded chain (``.chain``) serving the model."""

    capabilities = frozenset({"multi_dof", "floating_base"})   # a floating base is the chain backend's

    def __init__(self, model, chain_backend: Backend):
        super().__init__(model)
        self.chain = chain_backend
        self.expansion = expansion(model)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model.name!r}, nq={self.model.nq}, nv={self.model.nv}, chain={self.chain!r})"

    def _states(self, q, v=None, a=None):
        """The chain's (q, q̇, q̈) of the model's (q̇ and q̈ only when given)."""
        e = self.expansion
        q = e.unit(q)
        out = [e.configuration(q)]
        if v is not None:
            out.append(e.velocity(v))
        if a is not None:
            out.append(e.acceleration(v, a))
        for chain_array in out[1:]:
            if not all_finite(chain_array):     # ω × v of a joint's own velocity overflowed
                state = int(np.argwhere(~np.isfinite(chain_array))[0][0])
                k = int(np.abs(v[state]).argmax())
                raise NumericalError(f"robot {self.model.name!r}, state {state}: a joint of several degrees of freedom "
                                     f"overflows (the products of its velocities exceed float64's 1.8e308); the "
                                     f"largest velocity there is qd = {v[state, k]:g} at "
                                     f"{self.model.velocity_names[k]!r} (index {k})")
        return out

    def _batch_inverse_dynamics(self, q, qd, qdd):
        return self.expansion.vector(nan_for_overflow(self.chain, "inverse_dynamics", *self._states(q, qd, qdd)))

    def _batch_mass_matrix(self, q):
        return self.expansion.matrix(nan_for_overflow(self.chain, "mass_matrix", *self._states(q)))

    def _batch_gravity_torques(self, q):
        return self.expansion.vector(nan_for_overflow(self.chain, "gravity_torques", *self._states(q)))

    def _batch_bias_forces(self, q, qd):
        return self._batch_inverse_dynamics(q, qd, np.zeros_like(qd))

    def _batch_inverse_dynamics_loaded(self, q, qd, qdd, load):
        return self._batch_inverse_dynamics(q, qd, qdd) - load.generalized

    def _batch_inverse_dynamics_jacobians(self, q, qd, qdd):
        """The chain's Jacobians on the motion and one-dof joints; along a joint's tangent δ,
        ∂τ/∂δ = ∂τ_c/∂q_m + ∂τ_c/∂q̇_m ∂q̇_m/∂δ + ∂τ_c/∂q̈_m ∂q̈_m/∂δ and ∂τ/∂v gains
        ∂τ_c/∂q̈_m ∂d/∂v (m: its motion joints)."""
        self.chain._require_derivatives()
        e = self.expansion
        cq, cv, ca = self._states(q, qd, qdd)
        dq, dv, da = self.chain._batch_inverse_dynamics_jacobians(cq, cv, ca)
        dq, dv, da = (x[:, e.columns] for x in (dq, dv, da))          # rows: the model's τ
        tangent, velocity, mass = dq[:, :, e.columns], dv[:, :, e.columns], da[:, :, e.columns]
        bv = e.base[1]
        tau = e.vector(nan_for_overflow(self.chain, "inverse_dynamics", cq, cv, ca))
        for g, (rate_dq, acc_dq, acc_dv), turn in zip(e.groups, e.tangent_corrections(qd, ca),
                                                      e.force_corrections(tau)):
            m = bv + g.motion
            tangent[:, :, g.v] += dv[:, :, m] @ rate_dq + da[:, :, m] @ acc_dq
            tangent[:, g.v, g.v] += turn
            velocity[:, :, g.v] += da[:, :, m] @ acc_dv
        return tangent, velocity, mass

    def _batch_inverse_dynamics_derivatives(self, q, qd, qdd):
        return self._batch_inverse_dynamics_jacobians(q, qd, qdd)[:2]

    def joint_wrenches(self, q, qd, qdd):
        """Force and moment (N, n, 3) each joint transmits to its child link (the chain's at
        the joint's last motion joint), as the chain backend's ``joint_wrenches``."""
        from ..arrays import state_args

        wrenches = chain_joint_wrenches(self.chain, self.model)
        (q, qd, qdd), single = state_args(self.model, q=q, qd=qd, qdd=qdd)
        force, moment = wrenches(*self._states(q, qd, qdd))
        offset = force.shape[1] - self.expansion.chain.n          # a floating base's entry first
        links = offset + np.array([self.expansion.chain.link_names.index(link) for link in self.model.link_names])
        keep = np.concatenate([np.arange(offset), links])
        force, moment = force[:, keep], moment[:, keep]
        return (force[0], moment[0]) if single else (force, moment)
