"""Customised inverse-dynamics code for one robot: Python/NumPy, numba and C.

The recursive Newton-Euler algorithm is run once, at generation time, over a small
expression DAG instead of numbers (Dhanaraj 1990, §2.4; Khalil, Kleinfinger & Gautier
1986): constants are folded, identical subexpressions built once and only what feeds τ
is emitted, as straight-line code with exact operation counts.

This module gathers the names of the generator's parts, one concern each (none imports
sympy):

* :mod:`.graph` -- the expression DAG (:class:`Graph`) and 3-vectors of its nodes;
* :mod:`.customise` -- the model re-expressed per robot: z-axis link frames, snapped
  round-off, base inertial parameters and the greedy search over free choices
  (:func:`prepare`, :class:`Choice`);
* :mod:`.recursion` -- the customised Newton-Euler recursion over the DAG (formulation
  there; :class:`~dyn_plugin.terms.Terms` selects the terms) and its programs (τ, M(q),
  bias and M);
* :mod:`.emit` -- the source printer and the Python, numba and C emitters
  (:func:`generate`, :class:`GeneratedCode`, :func:`operation_counts`; the counting
  rules and the generated function names are documented there);
* :mod:`.lanes_code` -- the numba code's batches over SIMD lanes (the chunk layout, the
  loop body, the blocks of chunks);
* :mod:`.version` -- :data:`GENERATOR_VERSION` and :func:`model_key`.
"""

from __future__ import annotations

from .customise import (PARAMETER_SNAP, PRISMATIC_MOVES, REVOLUTE_MOVES, ROTATION_SNAP, Choice, _alternatives,
                        _axis_frame, _cost, _move_to_parent, _PREPARED, _raw_links, _regroup, _search,
                        _shift_origin, _snap_rotation, _snap_small, _variant, prepare)
from .emit import (_AS_STATES, _IMPORT_INPUT_ERROR, LANGS, GeneratedCode, _emit_c, _emit_numba_state, _emit_python,
                   _Printer, c_identifier, generate, operation_counts)
from .graph import Graph
from .lanes_code import NUMBA_OPTIONS, _emit_lanes_batch
from .recursion import (Link, _backward, _bias_and_mass_program, _gyroscopic, _id_program, _Joint, _lambda,
                        _mass_matrix_program, _newton_euler, _Program, _symbols)
from .version import GENERATOR_VERSION, model_key

__all__ = ["GENERATOR_VERSION", "LANGS", "GeneratedCode", "generate", "operation_counts",
           "model_key", "c_identifier", "prepare",
           # the parts' public names, for readers of the parts
           "Choice", "Graph", "Link", "NUMBA_OPTIONS", "PARAMETER_SNAP", "PRISMATIC_MOVES",
           "REVOLUTE_MOVES", "ROTATION_SNAP"]

# Private names of the parts that tests reach through this module (kept importable here).
_PRIVATE = (_AS_STATES, _IMPORT_INPUT_ERROR, _PREPARED, _Joint, _Printer, _Program, _alternatives, _axis_frame,
            _backward, _bias_and_mass_program, _cost, _emit_c, _emit_lanes_batch, _emit_numba_state, _emit_python,
            _gyroscopic, _id_program, _lambda, _mass_matrix_program, _move_to_parent, _newton_euler, _raw_links,
            _regroup, _search, _shift_origin, _snap_rotation, _snap_small, _symbols, _variant)
