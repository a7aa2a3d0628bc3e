"""Symbolic (closed-form) manipulator dynamics: ROBMAT's configuration-space form
F = M q̈ + 2B[q̇q̇] + C[q̇²] + G derived two ways (Lagrange-Euler, Newton-Euler) for any
RobotModel, with numeric or symbolic parameters (:mod:`dyn_plugin.symbolic.derive`), and
customised straight-line inverse dynamics with exact operation counts, emitted as Python,
numba or C (:mod:`dyn_plugin.symbolic.codegen`).

The names below are loaded on first use (PEP 562), so that importing a sibling module
(``dyn_plugin.symbolic.codegen``) does not import sympy.
"""

_WHERE = {   # name -> the module of this package that defines it (imported on first use)
    "GROUPS": "model", "SymbolicModel": "model", "symbolic_model": "model",
    "exact_axis": "exact", "exact_number": "exact", "exact_rotation": "exact",
    "ClosedForm": "closed_form", "NumericDynamics": "closed_form", "canonical": "closed_form",
    "forward_dynamics": "closed_form", "identical": "closed_form", "lambdify_closed_form": "closed_form",
    "lagrange_euler": "lagrange_derivation", "newton_euler": "newton_derivation",
    "compact": "printing", "format_equations": "derive",
    "GeneratedCode": "emit", "generate": "emit", "operation_counts": "emit",
}

__all__ = list(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
