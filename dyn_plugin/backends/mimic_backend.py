"""Any backend on a robot with mimic joints, in reduced coordinates (:mod:`dyn_plugin.mimic`).

The backend runs on the full model (every joint independent; a floating base, if any, is
handled below it); this wrapper maps the states with the constant G: τ = Gᵀ τ_full,
M = Gᵀ M_full G, bias and gravity alike, and q̈ by Cholesky from those
(:class:`~dyn_plugin.backends.base.Backend`'s default).  :func:`dyn_plugin.get_backend`
builds it for every backend that does not declare the ``mimic`` capability itself.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import mimic
from ..errors import ModelError, argument
from .base import Backend


def mimic_backend(name: str, factory, model, get_backend, **options) -> Backend:
    """Backend ``name`` (registered as ``factory``) for ``model`` (with ``model.mimic``) in
    reduced coordinates, built on every joint by ``get_backend`` (the registry's)."""
    if "friction" in getattr(factory, "capabilities", ()):
        raise ModelError(f"robot {model.name!r} has mimic joints ({', '.join(r.joint for r in model.mimic)}): friction "
                         f"backends take independent joints; load it without {argument('mimic', True)}, or use a "
                         "rigid-body backend")
    if options.get("armature") is not None:
        raise ModelError("armature= with mimic joints: give the armature of every joint to a model loaded without "
                         "mimic=True (a rotor on a mimic joint is reflected through its multiplier)")
    gravity = options.pop("gravity", None)
    model = model if gravity is None else model.with_gravity(gravity)
    return mimic_class(factory)(model, get_backend(name, mimic.full_model(model), **options))


@functools.lru_cache(maxsize=None)
def mimic_class(full_class) -> type:
    """The wrapper class for backends of ``full_class``: its name, kind and description."""
    return type(f"Mimic{getattr(full_class, '__name__', 'Backend')}", (MimicBackend,), {
        "name": getattr(full_class, "name", "custom"), "kind": getattr(full_class, "kind", "ours"),
        "description": getattr(full_class, "description", ""),
        "capabilities": frozenset({"mimic", "floating_base"})
        | (frozenset(getattr(full_class, "capabilities", ())) & {"derivatives"})})


class MimicBackend(Backend):
    """A backend of the full model (``.full``) serving the model with mimic joints."""

    capabilities = frozenset({"mimic", "floating_base"})   # a floating base is the full backend's

    def __init__(self, model, full_backend: Backend):
        super().__init__(model)
        self.full = full_backend
        self.G = mimic.velocity_map(model)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model.name!r}, nv={self.model.nv}, mimic, full={self.full!r})"

    def _expand(self, q, *velocities):
        return (mimic.full_configuration(self.model, q),) + tuple(v @ self.G.T for v in velocities)

    def _project(self, tau_full: np.ndarray) -> np.ndarray:
        return tau_full @ self.G

    def _batch_inverse_dynamics(self, q, qd, qdd):
        return self._project(self.full.inverse_dynamics(*self._expand(q, qd, qdd)))

    def _batch_mass_matrix(self, q):
        return self.G.T @ self.full.mass_matrix(*self._expand(q)) @ self.G

    def _batch_inverse_dynamics_derivatives(self, q, qd, qdd):
        """Gᵀ (∂τ_full/∂x) G: the full coordinates are G times the reduced ones (plus offsets)."""
        dq, dv = self.full.inverse_dynamics_derivatives(*self._expand(q, qd, qdd))
        return self.G.T @ dq @ self.G, self.G.T @ dv @ self.G

    def _batch_gravity_torques(self, q):
        return self._project(self.full.gravity_torques(*self._expand(q)))

    def _batch_bias_forces(self, q, qd):
        return self._project(self.full.bias_forces(*self._expand(q, qd)))
