"""What ``dyn-plugin bench`` times: the operations, the call that each engine makes for
them, the references, and the default selection of backends and batch sizes."""

from __future__ import annotations

__all__ = ["DEFAULT_BACKENDS", "DEFAULT_SIZES", "OPS", "OP_ARGS", "OP_DESCRIPTIONS", "OUR_METHODS", "PIN_CALLS",
           "PIN_PARALLEL_CALLS", "PYBULLET_CALLS", "QUICK_SIZES", "REFERENCE_KINDS"]

OPS = ("ID", "FD", "M", "bias", "dID", "dFD")
OP_DESCRIPTIONS = {"ID": "inverse dynamics τ(q, q̇, q̈)", "FD": "forward dynamics q̈(q, q̇, τ)",
                   "dID": "derivatives of inverse dynamics (∂τ/∂q, ∂τ/∂q̇)",
                   "dFD": "derivatives of forward dynamics (∂q̈/∂q, ∂q̈/∂q̇, M⁻¹)",
                   "M": "mass matrix M(q)", "bias": "bias forces C(q, q̇) q̇ + g(q)"}
OUR_METHODS = {"ID": "inverse_dynamics", "FD": "forward_dynamics", "M": "mass_matrix", "bias": "bias_forces",
               "dID": "inverse_dynamics_derivatives", "dFD": "forward_dynamics_derivatives"}
OP_ARGS = {"ID": ("q", "qd", "qdd"), "FD": ("q", "qd", "tau"), "M": ("q",), "bias": ("q", "qd"),
           "dID": ("q", "qd", "qdd"), "dFD": ("q", "qd", "tau")}
PIN_CALLS = {"ID": "rnea", "FD": "aba", "M": "crba", "bias": "nonLinearEffects", "dID": "computeRNEADerivatives",
             "dFD": "computeABADerivatives"}
PIN_PARALLEL_CALLS = {"ID": "rneaInParallel", "FD": "abaInParallel"}
PYBULLET_CALLS = {"ID": "calculateInverseDynamics", "M": "calculateMassMatrix", "bias": "calculateInverseDynamics"}

REFERENCE_KINDS = ("pinocchio", "pinocchio_parallel", "pybullet")
DEFAULT_BACKENDS = ("newton_euler", "symbolic_numba", "newton_euler_friction")
DEFAULT_SIZES = (1, 100, 10_000, 100_000)
QUICK_SIZES = (1, 100)
