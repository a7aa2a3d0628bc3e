"""Exact numbers for the symbolic derivations (:mod:`dyn_plugin.symbolic.derive`).

Numeric model data become exact rationals (no sympy Floats): values within 1e-12 of 0 (of
the largest entry of their array: masses, lengths, inertias) are exact zeros; any other float becomes the shortest decimal within 1e-14 relative
(0.5390000000000001 -> 539/1000, 2.5099999999999993 -> 251/100).  Joint rotations become
exactly orthogonal rational matrices through their rationalized quaternion
(:func:`exact_rotation`) and axes exactly unit rational vectors (:func:`exact_axis`), with
the rpy round-off snapped (cos(π/2) = 6e-17 -> 0): rotations by multiples of 90° (every
bundled robot) come out with entries exactly 0 and ±1, other angles within about 1e-16,
and both derivations stay identical for any tree.
"""

from __future__ import annotations

import math

import numpy as np
import sympy

from ..errors import InputError

SNAP = 1e-12            # |x| below this is exactly 0 (and |x| − 1 for rotations and axes)
DECIMAL_RTOL = 1e-14    # a float becomes the shortest decimal this close to it


def exact_number(x: float, unit: bool = False, rtol: float = DECIMAL_RTOL, zero: float = SNAP) -> sympy.Rational:
    """The exact rational that stands for the float ``x``: 0 within ``zero`` (1e-12), ±1
    within 1e-12 when ``unit``, else the shortest decimal within ``rtol`` relative (module
    docstring)."""
    x = float(x)
    if not math.isfinite(x):
        raise InputError(f"parameter value must be finite, got {x!r}")
    if abs(x) < zero:
        return sympy.Integer(0)
    if unit and abs(abs(x) - 1.0) < SNAP:
        return sympy.Integer(1 if x > 0 else -1)
    for digits in range(1, 18):
        text = f"{x:.{digits}g}"
        if abs(float(text) - x) <= rtol * abs(x):
            return sympy.Rational(text)
    return sympy.Rational(x)  # unreachable: 17 digits round-trip any double


def _quaternion(R: np.ndarray) -> np.ndarray:
    """(w, x, y, z) of a rotation matrix, scaled so that its largest component is 1
    (Shepperd's method: divide by the largest of the four)."""
    t = np.trace(R)
    candidates = [1 + t, 1 + 2 * R[0, 0] - t, 1 + 2 * R[1, 1] - t, 1 + 2 * R[2, 2] - t]   # 4·(w², x², y², z²)
    k = int(np.argmax(candidates))
    off = {0: (R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]),
           1: (R[2, 1] - R[1, 2], R[0, 1] + R[1, 0], R[0, 2] + R[2, 0]),
           2: (R[0, 2] - R[2, 0], R[0, 1] + R[1, 0], R[1, 2] + R[2, 1]),
           3: (R[1, 0] - R[0, 1], R[0, 2] + R[2, 0], R[1, 2] + R[2, 1])}[k]
    big = candidates[k]
    others = iter(off)
    quat = np.array([big if i == k else next(others) for i in range(4)])
    return quat / np.abs(quat).max()


def skew(v) -> sympy.Matrix:
    """The cross-product matrix [v]× of a 3-vector of sympy numbers or expressions
    (:func:`dyn_plugin.kinematics.skew` for floats)."""
    x, y, z = v
    return sympy.Matrix([[0, -z, y], [z, 0, -x], [-y, x, 0]])


def exact_rotation(R) -> sympy.ImmutableMatrix:
    """An exactly orthogonal rational matrix for the rotation ``R`` (3, 3): its quaternion,
    scaled to a largest component of 1 and rationalized, through the Euler-Rodrigues formula
    R = (w² − |v|²)1 + 2vvᵀ + 2w[v]× over w² + |v|².  Multiples of 90° come out as exact
    0/±1 entries; other angles exact to about 1e-16, so both derivations stay identical."""
    R = np.asarray(R, dtype=float)
    w, x, y, z = (exact_number(c, unit=True, rtol=1e-16) for c in _quaternion(R))
    v = sympy.Matrix([x, y, z])
    K = skew(v)
    norm = w ** 2 + x ** 2 + y ** 2 + z ** 2
    exact = ((w ** 2 - x ** 2 - y ** 2 - z ** 2) * sympy.eye(3) + 2 * v * v.T + 2 * w * K) / norm
    if np.abs(np.array(exact, dtype=float) - R).max() > 1e-9:
        raise InputError(f"joint rotation is not a rotation matrix (orthonormal, det +1): {R.tolist()}")
    return sympy.ImmutableMatrix(exact)


def exact_axis(a) -> sympy.ImmutableMatrix:
    """An exactly unit rational vector (3, 1) for the unit axis ``a``: a rational point of
    the sphere by inverse stereographic projection (from the pole away from ``a``)."""
    a = np.asarray(a, dtype=float)
    sign = -1 if a[2] < 0 else 1
    b = sign * a                                      # b_z >= 0: project from (0, 0, -1)
    u, v = (exact_number(c / (1 + b[2]), unit=True, rtol=1e-16) for c in b[:2])
    d = 1 + u ** 2 + v ** 2
    return sympy.ImmutableMatrix([sign * 2 * u / d, sign * 2 * v / d, sign * (1 - u ** 2 - v ** 2) / d])


def _exact_expr(value, what: str) -> sympy.Expr:
    """A user-supplied parameter (number or sympy expression) with its floats made exact."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        return exact_number(value)
    try:
        expr = sympy.sympify(value)
    except (sympy.SympifyError, TypeError) as exc:
        raise InputError(f"{what}: cannot read {value!r} as a number or sympy expression ({exc})") from None
    return expr.xreplace({f: exact_number(f) for f in expr.atoms(sympy.Float)})


def _exact_array(values, unit: bool = False) -> np.ndarray:
    """Numeric array -> object array of exact rationals, the zeros snapped relative to the
    array's largest entry (SNAP of it): an absolute 1e-12 made every inertia of a 2R arm
    with 0.2 mm links and 2 µg masses (~1e-17 kg·m²) zero, and its M 25 % off."""
    values = np.asarray(values, dtype=float)
    largest = float(np.max(np.abs(values))) if values.size and np.all(np.isfinite(values)) else 0.0
    zero = SNAP if unit else SNAP * largest
    out = np.empty(values.shape, dtype=object)
    for idx in np.ndindex(values.shape):
        out[idx] = exact_number(values[idx], unit=unit, zero=zero)
    return out
