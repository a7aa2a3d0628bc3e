"""The compiled recursions run on other numbers: one statement of each algorithm.

The per-state recursions (:mod:`.newton_euler`, :mod:`.composite_rigid_body`,
:mod:`.articulated_body`) are written on scalars with ``+``, ``-``, ``*``
and ``cos``/``sin`` only, 3-vectors as tuples and the model as the packed array of
:mod:`.layout`.  Nothing in them is specific to float64, so the same source also runs on
any number type with those operators: :func:`python_form` gives the pure-Python form of a
kernel (numba's ``py_func``) whose helper kernels are pure Python too, with ``cos`` and
``sin`` replaced.  :mod:`dyn_plugin.symbolic.newton_euler` runs Newton-Euler this way on
exact trigonometric polynomials to derive the closed forms, so that the compiled kernel
and the symbolic derivation share one recursion (and a term added to one is in both);
``tests/test_statements.py`` runs it on dual numbers to check the hand-differentiated
tangent of :mod:`.derivatives`.

Arrays the recursion writes (the scratch ``W``) and reads (the packed model ``P``, the
joint arrays) are then numpy arrays of ``dtype=object``.
"""

from __future__ import annotations

import types


def python_form(kernel, **overrides):
    """The pure-Python function behind ``kernel`` (a numba dispatcher or a function),
    with every kernel it calls replaced by its pure-Python form and the global names in
    ``overrides`` (e.g. ``cos=``, ``sin=``) rebound, recursively."""
    return _python_form(kernel, overrides, {})


def _python_form(kernel, overrides: dict, done: dict):
    source = getattr(kernel, "py_func", kernel)
    if source in done:
        return done[source]
    namespace = dict(source.__globals__)
    namespace.update(overrides)
    copy = types.FunctionType(source.__code__, namespace, source.__name__, source.__defaults__, source.__closure__)
    done[source] = copy
    for name in source.__code__.co_names:
        callee = namespace.get(name)
        if hasattr(callee, "py_func"):                    # a numba dispatcher
            namespace[name] = _python_form(callee, overrides, done)
    return copy
