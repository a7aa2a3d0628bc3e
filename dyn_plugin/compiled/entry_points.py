"""The one-state kernels, typed: compiled for exactly one signature, and past numba's
dispatcher.

Each ``<name>_single(...)`` of the algorithms' modules (:mod:`.newton_euler`,
:mod:`.articulated_body`, :mod:`.composite_rigid_body`, :mod:`.cholesky`,
:mod:`.derivatives`, and a floating base's :mod:`.free_flyer`) checks its arguments and its result and returns a status
(:mod:`.status`).  :func:`single` compiles it for the one signature of :data:`SIGNATURES`
(on first use, not at import), keeping the GIL; :func:`entry_point` is its compiled entry
point, whose arrays are borrowed (:mod:`.borrowed`).
"""

from __future__ import annotations

import functools

import numba as nb

from . import derivatives, free_flyer
from .articulated_body import forward_dynamics_single
from .borrowed import MATRIX, VECTOR, entry_of
from .cholesky import shifted_spd_solve_single
from .composite_rigid_body import mass_matrix_single
from .jit import SINGLE_OPTIONS
from .newton_euler import bias_single, inverse_dynamics_single

_MODEL = MATRIX                                            # the packed model of .layout
SIGNATURES = {                                             # name -> (function, signature)
    "inverse_dynamics": (inverse_dynamics_single, nb.int64(_MODEL, VECTOR, VECTOR, VECTOR, VECTOR)),
    "bias": (bias_single, nb.int64(_MODEL, VECTOR, VECTOR, VECTOR)),
    "forward_dynamics": (forward_dynamics_single, nb.int64(_MODEL, VECTOR, VECTOR, VECTOR, VECTOR)),
    "mass_matrix": (mass_matrix_single, nb.int64(_MODEL, VECTOR, MATRIX)),
    "shifted_spd_solve": (shifted_spd_solve_single, nb.int64(MATRIX, VECTOR, VECTOR, VECTOR)),
    "inverse_dynamics_derivatives": (derivatives.inverse_dynamics_derivatives_single,
                                     nb.int64(_MODEL, VECTOR, VECTOR, VECTOR, MATRIX, MATRIX)),
    "forward_dynamics_derivatives": (derivatives.forward_dynamics_derivatives_single,
                                     nb.int64(_MODEL, VECTOR, VECTOR, VECTOR, MATRIX, MATRIX, MATRIX)),
    "implicit": (derivatives.implicit_single, nb.int64(MATRIX, MATRIX, MATRIX, MATRIX)),
    # a floating base through its free-flyer chain (.free_flyer): q (nq,), v, a, τ (nv,)
    "free_flyer_inverse_dynamics": (free_flyer.inverse_dynamics_single,
                                    nb.int64(_MODEL, VECTOR, VECTOR, VECTOR, VECTOR)),
    "free_flyer_bias": (free_flyer.bias_single, nb.int64(_MODEL, VECTOR, VECTOR, VECTOR)),
    "free_flyer_forward_dynamics": (free_flyer.forward_dynamics_single,
                                    nb.int64(_MODEL, VECTOR, VECTOR, VECTOR, VECTOR)),
    "free_flyer_mass_matrix": (free_flyer.mass_matrix_single, nb.int64(_MODEL, VECTOR, MATRIX)),
    "free_flyer_inverse_dynamics_derivatives": (free_flyer.inverse_dynamics_derivatives_single,
                                                nb.int64(_MODEL, VECTOR, VECTOR, VECTOR, MATRIX, MATRIX)),
    "free_flyer_forward_dynamics_derivatives": (free_flyer.forward_dynamics_derivatives_single,
                                                nb.int64(_MODEL, VECTOR, VECTOR, VECTOR, MATRIX, MATRIX, MATRIX)),
}


def single(name: str):
    """The one-state kernel ``name`` of :data:`SIGNATURES`, compiled for exactly its
    signature on first use (not at import).  Any other argument type (a list, an int or
    strided array, a batch) raises TypeError in numba's C dispatcher instead of compiling a
    new specialisation."""
    return _typed(*SIGNATURES[name])


@functools.lru_cache(maxsize=None)
def _typed(py_func, signature):
    return nb.njit(signature, **SINGLE_OPTIONS)(py_func)


def entry_point(name: str):
    """The one-state kernel ``name`` without numba's dispatcher, which spends ~40 ns per
    argument typing it: its compiled entry point, whose arrays are borrowed
    (:mod:`.borrowed`: anything but a numpy float64 array, C-contiguous, of the declared
    dimensions raises TypeError there).  A wrong length, or entries not finite, give a
    status.  The dispatcher itself where arrays cannot be borrowed."""
    return _entry_point(*SIGNATURES[name])


@functools.lru_cache(maxsize=None)
def _entry_point(py_func, signature):
    return entry_of(_typed(py_func, signature))
