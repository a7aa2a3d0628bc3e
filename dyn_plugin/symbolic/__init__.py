"""Symbolic (closed-form) manipulator dynamics: ROBMAT's configuration-space form
F = M q̈ + 2B[q̇q̇] + C[q̇²] + G derived two ways (Lagrange-Euler, Newton-Euler) for any
RobotModel, with numeric or symbolic parameters (:mod:`dyn_plugin.symbolic.derive`), and
customised straight-line inverse dynamics with exact operation counts, emitted as Python,
numba or C (:mod:`dyn_plugin.symbolic.codegen`).

The names below are loaded on first use (PEP 562), so that importing a sibling module
(``dyn_plugin.symbolic.codegen``) does not import sympy.
"""

_DERIVE = (
    "GROUPS", "ClosedForm", "NumericDynamics", "SymbolicModel", "canonical", "compact", "exact_axis",
    "exact_number", "exact_rotation", "format_equations", "forward_dynamics", "identical",
    "lagrange_euler", "lambdify_closed_form", "newton_euler", "symbolic_model",
)

_CODEGEN = ("GeneratedCode", "generate", "operation_counts")

__all__ = list(_DERIVE) + list(_CODEGEN)


def __getattr__(name):
    if name in _DERIVE:
        from . import derive
        return getattr(derive, name)
    if name in _CODEGEN:
        from . import codegen
        return getattr(codegen, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
