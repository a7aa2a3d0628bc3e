"""Analytic derivatives of the joint-friction laws, for the chain rule through the friction
backends' inverse dynamics (:meth:`dyn_plugin.backends.friction_backend.FrictionBackend._breakdown`)::

    d       = direction(q̇, w)                                    (law.py: direction)
    τ_out   = τ_rigid + a q̈ + d · bearing.magnitude(f, n)        (models.py: BearingFriction.magnitude)
    τ_in    = T(τ_out, d) + d τ_B + velocity.torque(q̇)
    T       = τ_out · transmission.factor(τ_out, d)               (models.py: TransmissionFriction.factor)

Four functions, pure numpy, batch first (N states, n joints; one state (n,) is accepted
too and gives the matching unbatched shape):

* :func:`direction_derivative` — ∂d/∂q̇;
* :func:`velocity_torque_derivative` — ∂b/∂q̇ of :meth:`VelocityFriction.torque`;
* :func:`bearing_magnitude_gradient` — ∂|τ_f^J|/∂f and ∂|τ_f^J|/∂n of :meth:`BearingFriction.magnitude`;
* :func:`transmission_partials` — ∂T/∂τ_out and ∂T/∂d of τ_out · :meth:`TransmissionFriction.factor`.

Where the differentiated law has no derivative at the given input (sgn at q̇ = 0, a level
that switches with the direction of motion at q̇ = 0, |x| or a Euclidean norm at 0, a kink
of an efficiency curve, the driving/back-driven switch at τ_out = 0) these functions raise
an :class:`~dyn_plugin.errors.InputError` of one line naming the function, the joint (by
name when ``joints`` is given), the state, the condition and what would make it
differentiable.  No subgradient is ever substituted.  Where a law is differentiable even
though one of its pieces is not (a bearing or curve whose coefficient is 0, a curve at
d = 0, q̇ = 0 with no dry friction), the derivative is returned.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..arrays import as_batch, real_number
from ..errors import InputError
from . import law
from .models import BearingFriction, EfficiencyCurve, TransmissionFriction, VelocityFriction, joint_label

__all__ = ["direction_derivative", "velocity_torque_derivative", "load_independent_torque_derivative",
           "bearing_magnitude_gradient", "transmission_partials"]


# -- helpers -------------------------------------------------------------------------------


def _refuse(function: str, bad: np.ndarray, joints, single: bool, condition: str, remedy: str,
            joint: Optional[int] = None) -> None:
    """Raise the one-line InputError for the first True entry of ``bad`` ((N, n), or (N,)
    for joint ``joint``); do nothing when ``bad`` has none."""
    if not np.any(bad):
        return
    if joint is None:
        state, joint = (int(i) for i in np.argwhere(bad)[0])
    else:
        state = int(np.argmax(bad))
    where = joint_label(joint, joints) + ("" if single else f", state {state}")
    raise InputError(f"{function}: {where}: {condition}; {remedy}")


def _refuse_among(function: str, bad: np.ndarray, columns, joints, single: bool, condition: str,
                  remedy: str) -> None:
    """:func:`_refuse` for ``bad`` (N, k) over the joints ``columns`` (k indices, or a slice
    of them): the first of them with a True entry, at its first state."""
    if bad.any():
        k = int(np.argmax(bad.any(axis=0)))
        index = columns.start + k if isinstance(columns, slice) else int(columns[k])
        _refuse(function, bad[:, k], joints, single, condition, remedy, index)


def _selection(indices: np.ndarray):
    """Joint ``indices`` (ascending) as a slice when they are consecutive (numpy then gives
    views, and ``+=`` works in place), else as they are."""
    if len(indices) and indices[-1] - indices[0] + 1 == len(indices):
        return slice(int(indices[0]), int(indices[-1]) + 1)
    return indices


def _names(joints, n: int):
    """Joint names for messages from a sequence of names or a robot model (None: indices)."""
    if joints is None:
        return None
    names = tuple(getattr(joints, "joint_names", joints))
    if len(names) != n:
        raise InputError(f"joints names {len(names)} joints, the arrays have {n}")
    return names


def _joint_array(function: str, name: str, value, n: Optional[int], joints=None) -> tuple:
    """``(array (N, n), single)`` validated as a joint-space batch (finite real numbers)."""
    if n is None:
        n = np.shape(value)[-1] if np.ndim(value) in (1, 2) else -1
        if n < 0:
            raise InputError(f"{function}: {name} must have shape (n,) or (N, n), got {np.shape(value)}")
    return as_batch(name, value, n, joints)


def _wrench_array(function: str, name: str, value, n: int) -> tuple:
    """``(array (N, n, 3), single)`` for a joint force or moment, finite."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{function}: {name} must be real numbers of shape ({n}, 3) or (N, {n}, 3)") from None
    if array.shape == (n, 3):
        single, array = True, array[None]
    elif array.ndim == 3 and array.shape[1:] == (n, 3):
        single = False
    else:
        raise InputError(f"{function}: {name} must have shape ({n}, 3) or (N, {n}, 3), got {array.shape}")
    if not np.all(np.isfinite(array)):
        state, joint, _ = np.argwhere(~np.isfinite(array))[0]
        raise InputError(f"{function}: {name} has a non-finite entry at joint index {joint}"
                         + ("" if single else f", state {state}"))
    return array, single


def _sech2(x: np.ndarray) -> np.ndarray:
    """sech²(x) = 1 − tanh²(x), accurate in the tails (4 e^(−2|x|) / (1 + e^(−2|x|))²), no overflow."""
    e = np.exp(-2.0 * np.abs(x))
    return 4.0 * e / (1.0 + e) ** 2


def _check_smoothing(function: str, smoothing) -> float:
    if not (real_number(smoothing) and np.isfinite(smoothing) and smoothing >= 0):
        raise InputError(f"{function}: smoothing must be one finite number >= 0 (0 = sgn), got {smoothing!r}")
    return float(smoothing)


# -- 1. the direction factor ---------------------------------------------------------------


def direction_derivative(qd, smoothing: float, *, joints=None) -> np.ndarray:
    """∂d/∂q̇ of the direction factor d = ``direction(qd, smoothing)`` (dyn_plugin/friction/law.py:
    :func:`~dyn_plugin.friction.law.direction`, d = tanh(q̇/w) for w > 0, sgn(q̇) for w = 0).

    Parameters
    ----------
    qd : (N, n) or (n,) joint velocities, rad/s (m/s for prismatic joints).
    smoothing : w ≥ 0, rad/s (m/s), the friction's smoothing width (0 = sgn).
    joints : optional joint names (or a robot model) for the error message.

    Returns
    -------
    (N, n) or (n,), 1/(rad/s) (s/m): the diagonal of ∂d/∂q̇ (d_i depends on q̇_i only).
    sech²(q̇/w)/w = (1 − tanh²(q̇/w))/w for w > 0 (computed without cancellation in the
    tails); 0 for w = 0 and q̇ ≠ 0.

    Raises
    ------
    InputError : w = 0 and some q̇_i = 0 exactly (sgn jumps there: no derivative), naming the
        joint and state; non-finite q̇ or a smoothing that is not a finite number ≥ 0.
    """
    function = "direction_derivative"
    w = _check_smoothing(function, smoothing)
    qd, single = _joint_array(function, "qd", qd, None)
    names = _names(joints, qd.shape[1])
    if w > 0:
        out = _sech2(qd / w) / w
    else:
        _refuse(function, qd == 0, names, single, "sgn(q̇) jumps at q̇ = 0 (no derivative)",
                "give the friction a smoothing > 0 (d = tanh(q̇/w)), or evaluate at q̇ ≠ 0")
        out = np.zeros_like(qd)
    return out[0] if single else out


# -- 2. the velocity-friction law -------------------------------------------------------------


def _law_derivative(function: str, qd: np.ndarray, table: np.ndarray, names, single: bool) -> np.ndarray:
    """∂b/∂q̇ (N, n) of the compiled law b = b_v q̇ + s(q̇) (L(q̇) + τ_B) on a parameter table
    (law.py: _joint_torque, dry_level, direction), breakaway row included."""
    bv, eps, w, tau_b = table[law.VISCOUS], table[law.STRIBECK], table[law.SMOOTHING], table[law.BREAKAWAY]
    c_pos, c_neg = table[law.COULOMB_POSITIVE], table[law.COULOMB_NEGATIVE]
    s_pos, s_neg = table[law.STATIC_POSITIVE], table[law.STATIC_NEGATIVE]
    positive = qd > 0.0                                        # as _joint_torque: q̇ = 0 takes the − levels
    coulomb, static = np.where(positive, c_pos, c_neg), np.where(positive, s_pos, s_neg)
    decay = np.exp(-np.abs(qd) / eps)
    level = coulomb + (static - coulomb) * decay               # L(q̇), dry_level
    level_slope = -(static - coulomb) * np.sign(qd) / eps * decay   # dL/dq̇ for q̇ ≠ 0
    smooth = w > 0
    w_safe = np.where(smooth, w, 1.0)
    s = np.where(smooth, np.tanh(qd / w_safe), np.sign(qd))
    s_slope = np.where(smooth, _sech2(qd / w_safe) / w_safe, 0.0)
    out = bv + s_slope * (level + tau_b) + s * level_slope

    rest = qd == 0.0
    if np.any(rest):
        # smooth: b(0) = 0, one-sided slopes b_v + (b_s± + τ_B)/w (tanh(0) = 0 cancels the |q̇| kink of L)
        _refuse(function, rest & smooth & (s_pos != s_neg), names, single,
                "the static level switches at q̇ = 0 (static_positive != static_negative), so b(q̇) has a kink "
                "there (slopes b_v + (b_s± + τ_B)/w differ)",
                "give the joint equal static levels in both directions, or evaluate at q̇ ≠ 0")
        # sharp: b jumps from −(b_s⁻ + τ_B) to b_s⁺ + τ_B unless both are 0; then the
        # one-sided slopes are b_v − (b_s± − b_d±)/ε
        jump = (s_pos + tau_b != 0) | (s_neg + tau_b != 0)
        _refuse(function, rest & ~smooth & jump, names, single,
                "sharp dry friction sgn(q̇)·L jumps at q̇ = 0 (no derivative)",
                "give the friction a smoothing > 0 (d = tanh(q̇/w)), or evaluate at q̇ ≠ 0")
        _refuse(function, rest & ~smooth & ((s_pos - c_pos) != (s_neg - c_neg)), names, single,
                "the Stribeck slopes (b_s± − b_d±)/ε differ on the two sides of q̇ = 0 (a kink)",
                "give the friction a smoothing > 0, or evaluate at q̇ ≠ 0")
        at_rest = np.where(smooth, bv + (s_pos + tau_b) / w_safe, bv - (s_pos - c_pos) / eps)
        out = np.where(rest, at_rest, out)
    return out


def velocity_torque_derivative(velocity: VelocityFriction, qd, *, joints=None) -> np.ndarray:
    """∂b/∂q̇ of the velocity friction b(q̇) = ``velocity.torque(qd)``
    (dyn_plugin/friction/models.py: :meth:`VelocityFriction.torque`, which evaluates the
    compiled law of dyn_plugin/friction/law.py: ``_joint_torque`` with :func:`direction`
    and :func:`dry_level`, on ``velocity.table``, whose breakaway row is 0)::

        b  = b_v q̇ + s(q̇) L(q̇),   L = b_d + (b_s − b_d) e^(−|q̇|/ε)   (levels ± by the sign of q̇;
                                                                     q̇ = 0 takes the − levels)
        b' = b_v + s'(q̇) L + s(q̇) L',  L' = −(b_s − b_d) sgn(q̇) e^(−|q̇|/ε) / ε,
        s = tanh(q̇/w), s' = sech²(q̇/w)/w  (w > 0);  s = sgn(q̇), s' = 0 (w = 0, q̇ ≠ 0).

    At q̇ = 0: with w > 0, b' = b_v + b_s/w when b_s⁺ = b_s⁻ (tanh(0) = 0 removes the
    kink of |q̇|); with w = 0, b' = b_v − (b_s − b_d)/ε when the law is continuous there
    (b_s⁺ = b_s⁻ = 0, which for valid parameters means no dry friction at all: b' = b_v).

    Parameters
    ----------
    velocity : a :class:`VelocityFriction` (n joints); its ``table`` is what is differentiated.
    qd : (N, n) or (n,) joint velocities, rad/s (m/s).
    joints : optional joint names (or a robot model) for the error messages.

    Returns
    -------
    (N, n) or (n,), N·m·s/rad (N·s/m): the diagonal of ∂b/∂q̇ (b_i depends on q̇_i only).

    Raises
    ------
    InputError, naming the joint and state, where some q̇_i = 0 exactly and
        * w = 0 and the joint has dry friction (b jumps from −b_s⁻ to b_s⁺): give the
          friction a smoothing > 0;
        * w > 0 and static_positive != static_negative (asymmetric levels switch at
          q̇ = 0: a kink, slopes b_v + b_s±/w);
      and for a non-finite or wrongly shaped q̇.
    """
    function = "velocity_torque_derivative"
    if not isinstance(velocity, VelocityFriction):
        raise InputError(f"{function}: velocity must be a VelocityFriction, got {type(velocity).__name__}")
    qd, single = _joint_array(function, "qd", qd, velocity.n)
    out = _law_derivative(function, qd, velocity.table, _names(joints, velocity.n), single)
    return out[0] if single else out


def load_independent_torque_derivative(friction, qd, *, joints=None) -> np.ndarray:
    """∂/∂q̇ (N, n) or (n,) of ``friction.load_independent_torque(qd)`` = b(q̇) + d τ_B
    (dyn_plugin/friction/parameters.py: :meth:`FrictionModel.load_independent_torque`):
    :func:`velocity_torque_derivative` on the table that includes the breakaway τ_B; the
    same errors where q̇ = 0."""
    function = "load_independent_torque_derivative"
    qd, single = _joint_array(function, "qd", qd, friction.n)
    out = _law_derivative(function, qd, friction.table, _names(joints, friction.n), single)
    return out[0] if single else out


# -- 3. bearing friction ---------------------------------------------------------------------


def bearing_magnitude_gradient(bearing: BearingFriction, force, moment, *, where=None, joints=None) -> tuple:
    """Gradient of the bearing friction magnitude |τ_f^J| = ``bearing.magnitude(force, moment)``
    (dyn_plugin/friction/models.py: :meth:`BearingFriction.magnitude`, per joint one of
    :func:`journal_bearing`, :func:`journal_bearing_pair` (statics form or ``printed``),
    :func:`linear_bearing`, :func:`thrust_bearing`, or ``none``) with respect to the joint
    reaction force and moment in the axis frames (z the joint axis).  With h = d/2:

    * journal       μ r |(f_x, f_y)|:                ∇_f = μ r (f_x, f_y, 0)/|(f_x, f_y)|
    * journal_pair  (μ r/d)(|A| + |B|), A = (h f_x − n_y, h f_y + n_x), B = (h f_x + n_y, h f_y − n_x)
                    (``printed``: A = (h f_x − n_y, h f_y − n_x), B = (h f_x + n_y, h f_y + n_x)),
                    the gradient of each |V| being Vᵀ ∂V/∂(f, n) / |V|
    * linear        (μ/d) Σ_k |t_k|, t = (h f_x − n_y, h f_y − n_x, h f_x + n_y, h f_y + n_x):
                    Σ_k sgn(t_k) ∂t_k/∂(f, n)
    * thrust        μ r |f_z|:                       ∇_f = μ r (0, 0, sgn f_z)
    * none          0

    Parameters
    ----------
    bearing : a :class:`BearingFriction` (n joints).
    force, moment : (N, n, 3) or (n, 3), N and N·m, the axis-frame reaction wrench (what
        ``FrictionBackend._bearing`` passes to ``magnitude``).
    where : optional (N, n) (or (n,)) booleans: only these entries are differentiated and
        checked, the others get a zero gradient (e.g. ``where=(d != 0)``: the bearing term
        d·|τ_f^J| needs no gradient of the magnitude where d = 0).
    joints : optional joint names (or a robot model) for the error messages.

    Returns
    -------
    (∂|τ_f^J|/∂force, ∂|τ_f^J|/∂moment), each (N, n, 3) (or (n, 3)): m (N·m/N; dimensionless
    for a linear bearing) and dimensionless (1/m for a linear bearing).

    Raises
    ------
    InputError, naming the joint and state, where a norm or absolute value is at 0 and
    its coefficient (μ r, μ r/d or μ/d) is not 0 — the magnitude has a kink there:
    journal: f_x = f_y = 0; journal_pair: A = 0 or B = 0; linear: some t_k = 0;
    thrust: f_z = 0.  Also for wrongly shaped or non-finite inputs.
    """
    function = "bearing_magnitude_gradient"
    if not isinstance(bearing, BearingFriction):
        raise InputError(f"{function}: bearing must be a BearingFriction, got {type(bearing).__name__}")
    n = bearing.n
    force, single = _wrench_array(function, "force", force, n)
    moment, single_moment = _wrench_array(function, "moment", moment, n)
    if force.shape != moment.shape:
        raise InputError(f"{function}: force {force.shape} and moment {moment.shape} must have the same shape")
    if where is None:
        mask = np.ones(force.shape[:2], bool)
    else:
        mask = np.asarray(where, dtype=bool)
        mask = mask[None] if mask.shape == (n,) else mask
        if mask.shape != force.shape[:2]:
            raise InputError(f"{function}: where must have shape {force.shape[:2]} (one per state and joint), "
                             f"got {np.shape(where)}")
    names = _names(joints, n)
    grad_f, grad_n = np.zeros_like(force), np.zeros_like(moment)
    remedy = ("evaluate where the load is not 0 there, or skip the joints whose bearing term d·|τ_f| "
              "vanishes (where=(d != 0))")
    mu, r, spacing = bearing.mu, bearing.radius, bearing.spacing
    spaced = spacing != 0                                      # a zero spacing: no such bearing (c = 0)
    coefficients = {"journal": mu * r, "journal_pair": np.divide(mu * r, spacing, out=np.zeros(n), where=spaced),
                    "linear": np.divide(mu, spacing, out=np.zeros(n), where=spaced), "thrust": mu * r}
    kinds = np.array(bearing.kinds)
    # each kind at once over its joints (J), in the order of their first joint: the same arithmetic per
    # entry as joint by joint, without numpy's per-call cost paid once per joint
    for kind in dict.fromkeys(bearing.kinds):
        if kind == "none":
            continue
        c = coefficients[kind]
        J = _selection(np.flatnonzero((kinds == kind) & (c != 0)))
        if isinstance(J, np.ndarray) and not len(J):
            continue
        c, on = c[J], mask[:, J]
        f, m = force[:, J, :], moment[:, J, :]
        fx, fy, fz, nx, ny = f[..., 0], f[..., 1], f[..., 2], m[..., 0], m[..., 1]
        if kind == "journal":
            radial = np.hypot(fx, fy)
            _refuse_among(function, on & (radial == 0), J, names, single,
                          "journal bearing: the radial load |(f_x, f_y)| is 0, where μ r |F_N| has no gradient",
                          remedy)
            safe = np.where(on, radial, 1.0)
            grad_f[:, J, 0] = np.where(on, c * fx / safe, 0.0)
            grad_f[:, J, 1] = np.where(on, c * fy / safe, 0.0)
        elif kind == "journal_pair":
            h = 0.5 * spacing[J]
            ch, all_on = c * h, on.all()
            sign = -1.0 if bearing.printed else 1.0      # the n_x term of A (B has the opposite)
            # A = (h f_x − n_y, h f_y + sign n_x), B = (h f_x + n_y, h f_y − sign n_x)
            for label, a0, a1, s_ny, s_nx in (("A", h * fx - ny, h * fy + sign * nx, -1.0, sign),
                                              ("B", h * fx + ny, h * fy - sign * nx, 1.0, -sign)):
                norm = np.hypot(a0, a1)
                kink = on & (norm == 0)
                if kink.any():
                    load = (f"bearing load {label} = (½d f_x {'−' if s_ny < 0 else '+'} n_y, "
                            f"½d f_y {'+' if s_nx > 0 else '−'} n_x) is 0")
                    _refuse_among(function, kink, J, names, single,
                                  f"journal_pair bearing{' (printed eq. 3.3)' if bearing.printed else ''}: the "
                                  f"{load}, where its norm has no gradient", remedy)
                if all_on:                                # (the same values, fewer numpy calls)
                    u0, u1 = a0 / norm, a1 / norm
                else:
                    safe = np.where(on, norm, 1.0)
                    u0, u1 = np.where(on, a0 / safe, 0.0), np.where(on, a1 / safe, 0.0)
                grad_f[:, J, 0] += ch * u0
                grad_f[:, J, 1] += ch * u1
                grad_n[:, J, 1] += c * s_ny * u0
                grad_n[:, J, 0] += c * s_nx * u1
        elif kind == "linear":
            h = 0.5 * spacing[J]
            # (term, name, component of f it scales by h, moment component, its sign)
            for t, text, fk, nk, s_n in ((h * fx - ny, "½d f_x − n_y", 0, 1, -1.0),
                                         (h * fy - nx, "½d f_y − n_x", 1, 0, -1.0),
                                         (h * fx + ny, "½d f_x + n_y", 0, 1, 1.0),
                                         (h * fy + nx, "½d f_y + n_x", 1, 0, 1.0)):
                _refuse_among(function, on & (t == 0), J, names, single,
                              f"linear bearing: the load term {text} is 0, where its |·| has a kink", remedy)
                sg = np.where(on, np.sign(t), 0.0)
                grad_f[:, J, fk] += c * h * sg
                grad_n[:, J, nk] += c * s_n * sg
        elif kind == "thrust":
            _refuse_among(function, on & (fz == 0), J, names, single,
                          "thrust bearing: the axial load f_z is 0, where μ r |f_z| has a kink", remedy)
            grad_f[:, J, 2] = np.where(on, c * np.sign(fz), 0.0)
    if single and single_moment:
        return grad_f[0], grad_n[0]
    return grad_f, grad_n


# -- 4. transmission friction ----------------------------------------------------------------


def _curve_slopes(curve: EfficiencyCurve, x: np.ndarray) -> tuple:
    """``(η, dη/dx from the left, dη/dx from the right)`` of ``curve(x)`` (x ≥ 0, the load ratio)
    (dyn_plugin/friction/models.py: :meth:`EfficiencyCurve.__call__`: x clipped to the table,
    then np.interp, or a cubic spline clipped to [min efficiency, 1])."""
    xp, yp = curve.load_ratio, curve.efficiency
    inside_left = (x > xp[0]) & (x <= xp[-1])               # the clip of x passes motion to the left
    inside_right = (x >= xp[0]) & (x < xp[-1])              # ... and to the right
    xc = np.minimum(np.maximum(x, xp[0]), xp[-1])          # np.clip, without its Python overhead
    eta = curve(x)
    if curve.kind == "linear":
        slopes = (yp[1:] - yp[:-1]) / (xp[1:] - xp[:-1])
        last = len(slopes) - 1
        left = slopes[np.minimum(np.maximum(np.searchsorted(xp, xc, side="left") - 1, 0), last)]
        right = slopes[np.minimum(np.maximum(np.searchsorted(xp, xc, side="right") - 1, 0), last)]
        return eta, np.where(inside_left, left, 0.0), np.where(inside_right, right, 0.0)
    spline = curve._spline                                  # the cubic's spline, built by EfficiencyCurve
    value, slope = spline(xc), spline(xc, 1)
    left, right = np.where(inside_left, slope, 0.0), np.where(inside_right, slope, 0.0)
    low, high = yp.min(), 1.0
    if low >= high:                                         # every efficiency 1: η ≡ 1
        return eta, np.zeros_like(x), np.zeros_like(x)
    free = (value > low) & (value < high)
    at_high, at_low = value == high, value == low
    # at a clip bound the one-sided slope survives only on the side where the spline is inside
    left_out = np.where(free, left, np.where(at_high, np.where(left > 0, left, 0.0),
                                             np.where(at_low, np.where(left < 0, left, 0.0), 0.0)))
    right_out = np.where(free, right, np.where(at_high, np.where(right < 0, right, 0.0),
                                               np.where(at_low, np.where(right > 0, right, 0.0), 0.0)))
    return eta, left_out, right_out


def transmission_partials(transmission: Optional[TransmissionFriction], tau_out, d, *, joints=None) -> tuple:
    """Partial derivatives of T(τ_out, d) = τ_out · ``transmission.factor(tau_out, d)``
    (dyn_plugin/friction/models.py: :meth:`TransmissionFriction.factor` and
    :func:`efficiency_factor`; the transmission part of ``FrictionBackend._through_transmission``).
    Per joint with an efficiency curve η(x), x = |τ_out| / τ_rated, e = −d sgn(τ_out)::

        T       = τ_out η(x)^e
        ∂T/∂τ   = η^e (1 − d τ_out η'(x) / (τ_rated η))        (τ_out ≠ 0)
        ∂T/∂d   = −|τ_out| η^e ln η                            (0 at τ_out = 0, where T ≡ 0)

    with η' the slope of the curve (linear: the segment's slope; cubic: the spline's; 0
    where the ratio or the efficiency is held at the ends of the table or clipped).  At
    τ_out = 0, T has the slopes η(0)^(∓d) on the two sides: ∂T/∂τ = 1 when d = 0 or
    η(0) = 1.  A joint without a curve (or ``transmission=None``): T = τ_out, (1, 0).

    Parameters
    ----------
    transmission : a :class:`TransmissionFriction` (n joints), or None (no transmission).
    tau_out : (N, n) or (n,) output torques, N·m (N).
    d : (N, n) or (n,) direction factors (dimensionless, d = direction(q̇, w)).
    joints : optional joint names (or a robot model) for the error messages.

    Returns
    -------
    (∂T/∂τ_out dimensionless, ∂T/∂d N·m (N)), each (N, n) or (n,).

    Raises
    ------
    InputError, naming the joint and state, where d ≠ 0 and
        * τ_out = 0 and η(0) < 1: T switches between driving (τ_out/η) and back-driven
          (τ_out·η) there, a kink (slopes η^(−d) and η^d);
        * |τ_out|/τ_rated sits exactly on a kink of the efficiency curve (a breakpoint of a
          linear curve where the slopes differ, an end of the table where the curve is
          held, a cubic spline's end or its clip at the minimum efficiency or at 1);
      and for non-finite or wrongly shaped inputs.
    """
    function = "transmission_partials"
    if transmission is not None and not isinstance(transmission, TransmissionFriction):
        raise InputError(f"{function}: transmission must be a TransmissionFriction or None, "
                         f"got {type(transmission).__name__}")
    n = None if transmission is None else transmission.n
    tau, single = _joint_array(function, "tau_out", tau_out, n)
    n = tau.shape[1]
    d, single_d = _joint_array(function, "d", d, n)
    if d.shape != tau.shape:
        raise InputError(f"{function}: tau_out {tau.shape} and d {d.shape} must have the same shape")
    names = _names(joints, n)
    d_tau, d_d = np.ones_like(tau), np.zeros_like(tau)
    curves = () if transmission is None else transmission.curves
    # the joints sharing a curve (J) at once: per entry the same arithmetic as joint by joint
    for curve in {id(curve): curve for curve in curves if curve is not None}.values():
        J = _selection(np.array([i for i, other in enumerate(curves) if other is curve]))
        t, di, rated = tau[:, J], d[:, J], transmission.rated_torque[J]
        eta, left, right = _curve_slopes(curve, np.abs(t) / rated)
        moving = di != 0
        zero = t == 0
        _refuse_among(function, moving & zero & (eta != 1.0), J, names, single,
                      "τ_out = 0 with d ≠ 0: T = τ_out·η^(−d·sgn τ_out) switches between driving (τ_out/η) and "
                      "back-driven (τ_out·η) there, a kink", "evaluate at τ_out ≠ 0 or where d = 0 (the "
                      "efficiency law has no smoothing of sgn(τ_out))")
        _refuse_among(function, moving & ~zero & (left != right), J, names, single,
                      f"the load ratio |τ_out|/τ_rated sits on a kink of the {curve.kind} efficiency curve "
                      f"(slopes of η differ on its two sides)", "evaluate off the curve's breakpoints and ends "
                      "(or where d = 0)")
        power = eta ** (-di * np.sign(t))                    # η^e, as efficiency_factor computes it
        d_tau[:, J] = np.where(zero, 1.0, power * (1.0 - di * t * right / (rated * eta)))
        d_d[:, J] = -np.abs(t) * power * np.log(eta)
    if single and single_d:
        return d_tau[0], d_d[0]
    return d_tau, d_d
