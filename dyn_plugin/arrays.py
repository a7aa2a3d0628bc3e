"""Joint-space arrays in, checked: the validation every public entry point shares.

Joint-space arguments are one state ``(n,)`` or a batch ``(N, n)`` of real, finite numbers;
:func:`as_batch` and :func:`batch_args` turn them into ``(N, n)`` float arrays or raise an
:class:`~dyn_plugin.errors.InputError` naming the argument, the expected shape and the
joint at fault.  :func:`check_finite` refuses a result that overflowed, naming the state,
the joint and the largest input there (:class:`~dyn_plugin.errors.NumericalError`).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import InputError, NumericalError

# M(q) counts as singular when its smallest eigenvalue is below this fraction of its largest;
# every forward-dynamics solver refuses a pivot below SINGULAR × its largest pivot or diagonal
# entry (a pivot of M's factorisation bounds λ_min from above, a diagonal entry λ_max from below)
SINGULAR = 1e-13

_REAL_KINDS = "fiu"      # numpy dtype kinds accepted as joint-space numbers: float, int, unsigned
_DESCRIBED_KINDS = {"c": "complex numbers", "b": "booleans", "U": "text", "S": "bytes", "M": "dates",
                    "m": "time differences", "V": "structured records"}


def real_number(value) -> bool:
    """Whether ``value`` is one real number: an int or a float, Python's or numpy's (not a
    bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _joint(index: int, joints) -> str:
    """How a message names joint ``index``: by name when the names are known."""
    return f"joint {joints[index]!r} (index {index})" if joints is not None else f"joint index {index}"


def _not_real(name: str, array: np.ndarray, n: int):
    """The InputError for an array whose entries are not real numbers, or None if they all are."""
    expected = f"{name} must be numbers (real: float or int) of shape ({n},) or (N, {n})"
    kind = array.dtype.kind
    if kind == "O":
        for entry in array.flat:
            refused = isinstance(entry, (bool, np.bool_, str, bytes, complex, np.complexfloating)) or entry is None
            if not refused:
                try:
                    float(entry)
                except (TypeError, ValueError, OverflowError):
                    refused = True
            if refused:
                text = repr(entry)
                text = text if len(text) <= 40 else text[:37] + "..."
                return InputError(f"{expected}, got an entry {text} of type {type(entry).__name__}")
        return None
    what = _DESCRIBED_KINDS.get(kind, f"dtype {array.dtype}")
    hint = ""
    if kind == "c":
        hint = f"; the imaginary part is not dropped silently: pass {name}.real if it is meant to be zero"
    elif kind in "US":
        hint = "; convert text to numbers before the call"
    return InputError(f"{expected}, got {what} (dtype {array.dtype}){hint}")


def all_finite(array: np.ndarray) -> bool:
    """True when every entry of the float ``array`` is finite.  The sum is finite only if
    every entry is (cheaper than isfinite on a big batch; for a few entries a Python sum,
    ~1 µs less than numpy's); a finite array whose sum overflows is told apart by the exact
    test."""
    total = sum(array.ravel().tolist()) if array.size <= 64 else array.sum()
    return math.isfinite(total) or bool(np.isfinite(array).all())


def as_batch(name: str, value, n: int, joints=None, finite: bool = True) -> tuple:
    """Validate a joint-space array: returns ``(array of shape (N, n), was_single)``.

    Entries must be real numbers (floats, ints, or objects ``float()`` accepts), finite;
    complex, text and boolean arrays are refused rather than converted.  ``joints``
    (names, optional) lets the messages name the joint at fault.  ``finite=False`` leaves
    the finiteness to the caller (a compiled loop that checks as it reads, then calls this
    again to name the entry).
    """
    shape = f"of shape ({n},) or (N, {n}), got {type(value).__name__}"
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):             # ragged nested lists
        raise InputError(f"{name} must be numbers {shape}") from None
    if array.dtype.kind not in _REAL_KINDS:
        problem = _not_real(name, array, n)
        if problem is not None:
            raise problem
    try:
        array = np.asarray(array, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name} must be real numbers {shape}") from None
    if array.ndim == 1 and array.shape[0] == n:
        single, array = True, array[None, :]
    elif array.ndim == 2 and array.shape[1] == n:
        single = False
    else:
        raise InputError(f"{name} must have shape ({n},) or (N, {n}), got {array.shape}")
    if finite and not all_finite(array):
        rows, cols = np.nonzero(~np.isfinite(array))
        raise InputError(f"{name} has a non-finite entry (NaN or inf) at {_joint(cols[0], joints)}"
                         + ("" if single else f", state {rows[0]}"))
    return array, single


def batch_args(n: int, joints=None, finite: bool = True, **arrays) -> tuple:
    """Validate several joint-space arrays that must share the batch size N (``finite``: as
    :func:`as_batch`)."""
    out, singles = [], []
    for name, value in arrays.items():
        array, single = as_batch(name, value, n, joints, finite)
        out.append(array)
        singles.append(single)
    sizes = {len(a) for a in out}
    if len(sizes) > 1:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in zip(arrays, out))
        raise InputError(f"batch sizes differ: {shapes}; all arguments must have the same N")
    return out, all(singles)


def state_args(model, finite: bool = True, **arrays) -> tuple:
    """:func:`batch_args` for a model's states: ``q`` has ``model.nq`` entries, every other
    argument (q̇, q̈, τ) ``model.nv`` (both n on a fixed base; see ``RobotModel.floating_base``)."""
    out, singles = [], []
    for name, value in arrays.items():
        names = model.configuration_names if name == "q" else model.velocity_names
        (array,), single = batch_args(len(names), names, finite, **{name: value})
        out.append(array)
        singles.append(single)
    if len({len(a) for a in out}) > 1:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in zip(arrays, out))
        raise InputError(f"batch sizes differ: {shapes}; all arguments must have the same N")
    return out, all(singles)


def check_finite(what: str, result, model, single: bool, **inputs):
    """``result`` ((N, ...) arrays) unchanged if every entry is finite, else a
    :class:`NumericalError` naming ``what``, the state, the joint and the largest input
    there.  ``inputs`` are the validated (finite) (N, n) arrays the result came from."""
    results = result if isinstance(result, tuple) else (result,)
    for part in results:
        if not all_finite(part):
            raise _overflow(what, part, model, single, inputs)
    return result


def _overflow(what: str, result, model, single: bool, inputs: dict) -> NumericalError:
    bad = ~np.isfinite(result)
    where = np.argwhere(bad)[0]                             # (state, joint, ...) of the first bad entry
    state, joint = int(where[0]), int(where[1]) if result.ndim > 1 else 0
    value = result[tuple(where)]
    message = (f"{what} of robot {model.name!r} overflowed: the result at {_joint(joint, _names(model, result))}"
               + ("" if single else f", state {state}") + f" is {value} although every input is finite "
               "(float64 ends near 1.8e308)")
    largest = [(np.abs(a[state]).max(), key, int(np.abs(a[state]).argmax())) for key, a in inputs.items() if len(a)]
    if largest:
        _, key, index = max(largest)
        message += (f"; the largest input there is {key} = {inputs[key][state, index]:g} at "
                    f"{_joint(index, _names(model, inputs[key]))}")
    message += ". Check the inputs' units and magnitudes, and the model's masses, inertias and lengths"
    return NumericalError(message)


def _names(model, array: np.ndarray):
    """The names of an (N, m) array's columns: q's (nq), or q̇'s, q̈'s and τ's (nv), or the
    joints'; None when the width is none of them (a floating base: nq = nv + 1 = n + 7)."""
    width = array.shape[1] if array.ndim > 1 else 0
    for names in (getattr(model, "configuration_names", None), getattr(model, "velocity_names", None),
                  model.joint_names):
        if names is not None and len(names) == width:
            return names
    return None


def contiguous(*arrays) -> list:
    """Each array as C-contiguous float64 (a copy only where needed): what compiled loops take."""
    return [np.ascontiguousarray(a, dtype=float) for a in arrays]
