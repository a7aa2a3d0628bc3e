"""What ``dyn-plugin validate`` compares, and what it asks of each backend.

The quantities a suite can name are defined here (:data:`QUANTITIES`, :data:`DERIVATIVES`,
:data:`STEPPING`, and :data:`BRISTLES`, checked in :mod:`.bristles`).  A backend is asked only
for what the :class:`~dyn_plugin.backends.base.Backend` interface gives every backend (τ and M,
which it implements, and the defaults derived from them: gravity, bias, C q̇, q̈; so also
pybullet's stepping and trajectories, which need q̈) and for what its declared capabilities
promise (:data:`dyn_plugin.backends.base.CAPABILITIES`: ``derivatives`` for dtau and dqdd,
``stepping`` for the dynamic-friction checks and for putting a friction backend's friction
on the references).  A floating base or mimic joints need no capability: the registry's
wrappers serve any backend (:func:`dyn_plugin.backends.registry.get_backend`), keeping what
it declares.  Everything else the suite names is a :class:`Skip`, listed with its reason in
every report (console, JSON, Markdown), as is a robot a backend's or a reference's factory
refuses (:func:`refusal`; pybullet refuses spherical, planar and floating joints, and the
backends are then compared with pinocchio alone): neither fails the run.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

__all__ = ["BRISTLES", "DERIVATIVES", "QUANTITIES", "REFUSED", "STEPPING", "TRAJECTORIES", "WHY", "Skip", "asked",
           "refusal", "skip_lines"]


def _coriolis_times_velocity(backend, s) -> np.ndarray:
    return np.einsum("nij,nj->ni", backend.coriolis_matrix(s.q, s.qd), s.qd)


# Quantities every backend computes through the Backend interface (τ, M and their defaults).
QUANTITIES: dict = {
    "tau": (lambda be, s: be.inverse_dynamics(s.q, s.qd, s.qdd), "inverse dynamics τ(q, q̇, q̈)"),
    "M": (lambda be, s: be.mass_matrix(s.q), "mass matrix M(q)"),
    "bias": (lambda be, s: be.bias_forces(s.q, s.qd), "bias forces C(q, q̇) q̇ + g(q)"),
    "gravity": (lambda be, s: be.gravity_torques(s.q), "gravity torques g(q)"),
    "Cqd": (_coriolis_times_velocity, "Coriolis matrix times velocity C(q, q̇) q̇"),
    "qdd": (lambda be, s: be.forward_dynamics(s.q, s.qd, s.tau), "forward dynamics q̈(q, q̇, τ)"),
}
# Analytic derivatives (capability ``derivatives``): compared with pinocchio's (computeRNEADerivatives,
# computeABADerivatives; pybullet has none), for a friction backend with the same friction over pinocchio's rigid body.
DERIVATIVES: dict = {
    "dtau": (lambda be, s: np.concatenate(be.inverse_dynamics_derivatives(s.q, s.qd, s.qdd), axis=-1),
             "derivatives of inverse dynamics [∂τ/∂q, ∂τ/∂q̇]"),
    "dqdd": (lambda be, s: np.concatenate(be.forward_dynamics_derivatives(s.q, s.qd, s.tau), axis=-1),
             "derivatives of forward dynamics [∂q̈/∂q, ∂q̈/∂q̇, M⁻¹]"),
}
# Quantities that need pybullet as the integrator (compared only against the pybullet reference).
TRAJECTORIES = ("traj_zero", "traj_gravity")
STEPPING = {
    "step": "one pybullet step: (q̇⁺ − q̇)/dt against our q̈",
    "traj_zero": "1 s trajectory under zero torque, semi-implicit Euler, q against pybullet's",
    "traj_gravity": "1 s trajectory under gravity compensation τ = g(q), q against pybullet's",
}
# Dynamic friction against physical oracles (capability ``stepping``; :mod:`.bristles`).
BRISTLES = {"bristles": "a LuGre law on every joint (friction backends): steady sliding = LuGre eq. (5), no "
                        "energy gained, first-order convergence to Radau IIA, Dahl's hysteresis loop tip"}
WITH_FRICTION = ("tau", "qdd")   # of QUANTITIES, those a friction backend's friction enters
REFUSED = "its factory refused the model: "   # the start of the reason of a Skip made by refusal()

# Why a quantity is not asked of a backend, one sentence each.
WHY = {
    "derivatives": "declares no 'derivatives' capability (no analytic derivatives)",
    "friction": "its τ and q̈ include friction, which the rigid references lack (checked by stepping against "
                "pybullet instead)",
    "friction without stepping": "it has friction but declares no 'stepping' capability (the references are given "
                                 "its friction through velocity_step)",
    "bristles": "declares no 'stepping' capability (a dynamic friction law, stepped by velocity_step)",
    "bristles here": "dynamic friction is checked on a fixed base of one-dof joints without mimic joints only",
    "pinocchio": "compared with pinocchio only, which is not among the references",
    "pybullet": "compared with pybullet only, which is not among the references",
    "pinocchio refused": "compared with pinocchio only, which refused the robot (its own line says why)",
    "pybullet refused": "compared with pybullet only, which refused the robot (its own line says why)",
}


@dataclasses.dataclass(frozen=True)
class Skip:
    """A quantity of the suite that backend ``backend`` is not asked for on ``robot`` (the
    model's name), and why."""

    robot: str
    backend: str
    quantity: str
    reason: str

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _why_not(quantity: str, capabilities: frozenset, references, model, named=()) -> Optional[str]:
    """The key of :data:`WHY` saying why a backend declaring ``capabilities`` is not asked
    for ``quantity`` on ``model`` against ``references`` (those that took the model, among
    the suite's ``named``), or None when it is."""
    friction_unshared = "friction" in capabilities and "stepping" not in capabilities
    missing = lambda reference: reference + " refused" if reference in named else reference     # noqa: E731
    if quantity in QUANTITIES:
        return "friction" if "friction" in capabilities and quantity in WITH_FRICTION else None
    if quantity in DERIVATIVES:
        return ("derivatives" if "derivatives" not in capabilities else missing("pinocchio")
                if "pinocchio" not in references else "friction without stepping" if friction_unshared else None)
    if quantity in STEPPING:
        return (missing("pybullet") if "pybullet" not in references else "friction without stepping" if friction_unshared
                else None)
    if quantity in BRISTLES:
        elsewhere = model.floating_base or model.mimic or model.multi_dof_indices
        return "bristles" if "stepping" not in capabilities else "bristles here" if elsewhere else None
    raise KeyError(f"unknown quantity {quantity!r}")


def asked(suite, model, name: str, backend_class, references=None) -> tuple:
    """``(quantities, skips)``: the suite's quantities that backend ``name`` (of class
    ``backend_class``, as built for ``model``: a wrapper declares what it keeps) is asked
    for on ``model``, and a :class:`Skip` for each of the others.  ``references``: the
    suite's references that took the model (default: all of them; see :func:`refusal`)."""
    capabilities = frozenset(getattr(backend_class, "capabilities", ()))
    references = suite.references if references is None else references
    quantities, skips = [], []
    for quantity in suite.quantities:
        why = _why_not(quantity, capabilities, references, model, suite.references)
        if why is None:
            quantities.append(quantity)
        else:
            skips.append(Skip(model.name, name, quantity, WHY[why]))
    return quantities, skips


def refusal(suite, robot: str, name: str, error: Exception) -> list:
    """A :class:`Skip` of every quantity of the suite for backend ``name`` on ``robot``,
    whose model its factory refused with ``error`` (a DynPluginError naming what it cannot take).
    For a reference (one of ``suite.references``) the skip is of the comparisons against it:
    ``name (reference)``; the backends' comparisons with the other references go on."""
    reason = REFUSED + " ".join(str(error).split())
    if name not in suite.references:
        return [Skip(robot, name, quantity, reason) for quantity in suite.quantities]
    compared = {**QUANTITIES, **(STEPPING if name == "pybullet" else DERIVATIVES if name == "pinocchio" else {})}
    return [Skip(robot, f"{name} (reference)", quantity, reason) for quantity in suite.quantities if quantity in compared]


def skip_lines(skips: list, robots: list) -> list:
    """The skips in words, one line per reason and set of quantities: ``"backend, backend:
    quantity, quantity[ on robot, robot]: reason"``; a skip that holds on every one of
    ``robots`` (the run's robots) names none."""
    on: dict = {}
    for s in skips:
        on.setdefault((s.backend, s.quantity, s.reason), []).append(s.robot)
    quantities: dict = {}
    for (backend, quantity, reason), where in on.items():
        where = () if set(robots) <= set(where) else tuple(dict.fromkeys(where))
        quantities.setdefault((backend, reason, where), []).append(quantity)
    backends: dict = {}
    for (backend, reason, where), names in quantities.items():
        backends.setdefault((tuple(names), reason, where), []).append(backend)
    return [f"{', '.join(names)}: {', '.join(qs)}" + (f" on {', '.join(where)}" if where else "") + f": {reason}"
            for (qs, reason, where), names in backends.items()]
