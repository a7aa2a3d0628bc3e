"""What a one-state kernel returns instead of raising, and the checks that decide it.

A one-state kernel (``<algo>_single``) checks its arguments and its result itself and
returns a status code, so that the caller (:class:`~dyn_plugin.backends.base.Backend`)
can produce a clear error: OK, BAD_SHAPE (a vector of another length, or entries not
adjacent), NOT_FINITE (an input entry inf or NaN), NOT_FINITE_RESULT (float64 overflow).
"""

from __future__ import annotations

from .jit import jit

# (3 is unused; 4 matches the generated code's status)
OK, BAD_SHAPE, NOT_FINITE, NOT_FINITE_RESULT = 0, 1, 2, 4


@jit
def _bad_shape(n, x) -> bool:
    """x is not n adjacent entries (NumPy calls a vector of one entry C-contiguous whatever
    its stride)."""
    return x.shape[0] != n or x.strides[0] != 8


@jit
def _zero_if_finite(x):
    """Σ x_i·0 over the entries of the vector x: 0.0 when all are finite, else NaN (inf·0
    and NaN·0 are NaN); a multiply-add an entry and no branch."""
    zero = 0.0
    for i in range(x.shape[0]):
        zero += x[i] * 0.0
    return zero


@jit
def _check(n, x):
    """Status of one joint-space vector: OK, BAD_SHAPE (a length other than n, or entries
    not adjacent) or NOT_FINITE."""
    if _bad_shape(n, x):
        return BAD_SHAPE
    return OK if _zero_if_finite(x) == 0.0 else NOT_FINITE


@jit
def _status(n, q, qd, qdd):
    """Status of three joint-space vectors (see _check)."""
    if _bad_shape(n, q) or _bad_shape(n, qd) or _bad_shape(n, qdd):
        return BAD_SHAPE
    return OK if _zero_if_finite(q) + _zero_if_finite(qd) + _zero_if_finite(qdd) == 0.0 else NOT_FINITE


@jit
def _finite_result(x):
    """OK when every entry of the result vector x is finite, else NOT_FINITE_RESULT (overflow)."""
    return OK if _zero_if_finite(x) == 0.0 else NOT_FINITE_RESULT


@jit
def _one(x):
    """A vector (n,) as a batch of one (1, n), so that one state runs the batch code (a
    view; ``reshape`` would cost ~40 ns)."""
    return x[None, :]
