"""Dynamic (bristle) friction: the Dahl and LuGre laws, their state z and its exact step.

Both laws give the friction torque through an internal state, the mean bristle deflection
z (rad for a revolute joint, m for a prismatic one), per joint:

* LuGre — C. Canudas de Wit, H. Olsson, K. J. Åström, P. Lischinsky, "A new model for
  control of systems with friction", IEEE Trans. Automatic Control 40(3), 1995, eqs. (2)-(4)::

      ż = v − σ0 |v| z / g(v),      g(v) = F_C + (F_S − F_C) exp(−(v/v_S)²),
      F = σ0 z + σ1 ż + σ2 v;

* Dahl (P. R. Dahl, "A solid friction model", Aerospace Corp. TOR-0158(3107-18)-1, 1968;
  in the form of the LuGre paper, eq. (1), with exponent α = 1)::

      ż = v (1 − σ0 z sgn(v) / F_C),   F = σ0 z   (dF/dt = σ0 v (1 − F sgn(v) / F_C)),

  which is LuGre with F_S = F_C and σ1 = σ2 = 0 (a viscous σ2 may be kept).

Both are ż = v − |v| z / z_ss(v) with the steady deflection z_ss(v) = g(v)/σ0 > 0.  Over a
step h at constant v the ODE is linear in z, so z relaxes *exactly* (:func:`bristle_step`)::

      z(h) = s z_ss + (z − s z_ss) exp(−x),   s = sgn(v),  x = |v| h / z_ss,

which never leaves [−z_ss, z_ss] ∪ [z, s z_ss] whatever σ0 (10³–10⁵ N·m/rad) and h: no
stiffness limit.  :func:`step` also returns the force averaged over the step, F̄ = σ0 z̄ +
σ1 (z⁺ − z)/h + σ2 v with the exact mean deflection z̄, so that h F̄ is the exact impulse
∫F dt of the step, and dF̄/dv, the slope an implicit integrator's Newton iteration needs.

Sign convention as in :mod:`.models`: F opposes motion and is added on the torque side,
τ = M q̈ + h + F, so the friction power −F v ≤ 0 in steady sliding.

Units (revolute joint; for a prismatic one read m for rad and N for N·m): z rad, v rad/s,
σ0 N·m/rad, σ1 N·m·s/rad, σ2 N·m·s/rad, F_C, F_S N·m, v_S rad/s, h s.

Arrays: z, v are (..., n), one column per joint, parameters (n,); every function is
vectorised numpy and broadcasts over the leading axes.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Optional

import numpy as np

from ..errors import InputError, ModelError
from .models import _per_joint, joint_label, joints_of

LAWS = ("lugre", "dahl")
_SERIES_BELOW = 1e-3   # x below which φ'(x) is summed as a series (E − φ cancels)


@dataclasses.dataclass(frozen=True)
class Bristles:
    """Parameters of a bristle law, one value per joint (all (n,) float arrays).

    law : ``"lugre"`` or ``"dahl"`` (a Dahl law has static = coulomb and sigma1 = 0)
    sigma0 : bristle stiffness σ0 > 0, N·m/rad
    sigma1 : bristle damping σ1 ≥ 0, N·m·s/rad
    sigma2 : viscous coefficient σ2 ≥ 0, N·m·s/rad
    coulomb : Coulomb level F_C > 0, N·m
    static : static (breakaway) level F_S ≥ F_C, N·m
    stribeck_velocity : Stribeck velocity v_S > 0, rad/s
    joint_names : the joints, in order, when made for a robot; else None

    Make one with :meth:`lugre` or :meth:`dahl`.
    """

    law: str
    sigma0: np.ndarray
    sigma1: np.ndarray
    sigma2: np.ndarray
    coulomb: np.ndarray
    static: np.ndarray
    stribeck_velocity: np.ndarray
    joint_names: Optional[tuple] = None

    @classmethod
    def lugre(cls, joints, sigma0, coulomb, static=None, stribeck_velocity=1.0, sigma1=0.0,
              sigma2=0.0) -> "Bristles":
        """A LuGre law (Canudas de Wit et al. 1995).  ``joints``: a joint count, a robot model or
        joint names; each parameter one number, n numbers or ``{joint name: value}``.
        ``static`` defaults to ``coulomb`` (no Stribeck hump)."""
        n, names = joints_of(joints)
        coulomb = _per_joint("coulomb", coulomb, n, strict=True, names=names)
        static = coulomb if static is None else _per_joint("static", static, n, strict=True, names=names)
        below = static < coulomb
        if below.any():
            joint = int(np.argmax(below))
            raise ModelError(f"bristle parameter 'static' of {joint_label(joint, names)} is {static[joint]}, below its "
                             f"'coulomb' level {coulomb[joint]}: the static level must be >= the Coulomb level")
        return cls("lugre", _per_joint("sigma0", sigma0, n, strict=True, names=names),
                   _per_joint("sigma1", sigma1, n, names=names), _per_joint("sigma2", sigma2, n, names=names),
                   coulomb, static, _per_joint("stribeck_velocity", stribeck_velocity, n, strict=True, names=names),
                   names)

    @classmethod
    def dahl(cls, joints, sigma0, coulomb, sigma2=0.0) -> "Bristles":
        """A Dahl law (1968, α = 1): F = σ0 z (+ an optional viscous σ2 v)."""
        law = cls.lugre(joints, sigma0, coulomb, sigma2=sigma2)
        return dataclasses.replace(law, law="dahl")

    def __post_init__(self):
        if self.law not in LAWS:
            raise ModelError(f"bristle law must be one of {', '.join(LAWS)}, got {self.law!r}")

    @property
    def n(self) -> int:
        return self.sigma0.shape[0]

    def check_state(self, z, name: str = "friction_state") -> np.ndarray:
        """z as a float array (..., n), refused (InputError) when its last axis is not n or it is not finite."""
        z = np.asarray(z, dtype=float)
        if z.ndim == 0 or z.shape[-1] != self.n:
            raise InputError(f"{name} must have one bristle deflection per joint, shape (..., {self.n}), "
                             f"got shape {z.shape}")
        if not np.isfinite(z).all():
            raise InputError(f"{name} must be finite, got NaN or infinite entries")
        return z


class BristleStep(NamedTuple):
    """One step of the bristle state at constant velocity (:func:`step`), all (..., n)."""
    z: np.ndarray          # z⁺, the deflection at the end of the step, rad
    force: np.ndarray      # F̄, the force averaged over the step (h F̄ = the exact impulse), N·m
    slope: np.ndarray      # dF̄/dv at constant z and h, N·m·s/rad


def stribeck_level(v, bristles: Bristles) -> np.ndarray:
    """g(v) = F_C + (F_S − F_C) exp(−(v/v_S)²), N·m (LuGre eq. (4)); F_C for Dahl."""
    return bristles.coulomb + (bristles.static - bristles.coulomb) * np.exp(-(v / bristles.stribeck_velocity) ** 2)


def steady_deflection(v, bristles: Bristles) -> np.ndarray:
    """z_ss(v) = g(v)/σ0 > 0, rad: the magnitude of the deflection in steady sliding at v."""
    return stribeck_level(v, bristles) / bristles.sigma0


def bristle_rate(z, v, bristles: Bristles) -> np.ndarray:
    """ż = v − |v| z / z_ss(v), rad/s (LuGre eq. (2); Dahl with z_ss = F_C/σ0)."""
    return v - np.abs(v) * z / steady_deflection(v, bristles)


def force(z, v, bristles: Bristles) -> np.ndarray:
    """The instantaneous friction F = σ0 z + σ1 ż + σ2 v, N·m (LuGre eq. (3))."""
    return bristles.sigma0 * z + bristles.sigma1 * bristle_rate(z, v, bristles) + bristles.sigma2 * v


def steady_state_force(v, bristles: Bristles) -> np.ndarray:
    """F in steady sliding at constant v (ż = 0): g(v) sgn(v) + σ2 v, N·m — the static
    Stribeck + viscous law the dynamic law tends to (LuGre eq. (5))."""
    return stribeck_level(v, bristles) * np.sign(v) + bristles.sigma2 * v


def steady_state_slope(v, bristles: Bristles) -> np.ndarray:
    """d/dv of :func:`steady_state_force` for v ≠ 0: g'(v) sgn(v) + σ2, N·m·s/rad, with
    g'(v) = −2 v (F_S − F_C) exp(−(v/v_S)²) / v_S².  (At v = 0 the force jumps by 2 F_S:
    no derivative; the caller refuses that state.)"""
    return _stribeck_slope(v, bristles) * np.sign(v) + bristles.sigma2


def _stribeck_slope(v, b: Bristles) -> np.ndarray:
    """g'(v) = −2 v (F_S − F_C) exp(−(v/v_S)²) / v_S², N·m·s/rad."""
    return -2.0 * v / b.stribeck_velocity ** 2 * (b.static - b.coulomb) * np.exp(-(v / b.stribeck_velocity) ** 2)


def bristle_step(z, v, h: float, bristles: Bristles) -> np.ndarray:
    """z⁺ = s z_ss + (z − s z_ss) exp(−|v| h / z_ss): the exact solution after h seconds at constant v
    (evaluated as z + (s z_ss − z)(1 − e^(−x)) with expm1, exact to rounding also for tiny x)."""
    z_ss = steady_deflection(v, bristles)
    return z - (np.sign(v) * z_ss - z) * np.expm1(-np.abs(v) * h / z_ss)


def step(z, v, h: float, bristles: Bristles) -> BristleStep:
    """The exact step of z over h at constant v, with the step-averaged force and its slope.

    z⁺ = s z_ss + (z − s z_ss) E,  z̄ = s z_ss + (z − s z_ss) φ(x),  E = e^(−x),
    φ(x) = (1 − e^(−x))/x,  x = |v| h / z_ss;  F̄ = σ0 z̄ + σ1 (z⁺ − z)/h + σ2 v, so that
    h F̄ = ∫₀ʰ F dt exactly.  dF̄/dv is the derivative at fixed z and h (at v = 0, where
    |v| has a kink, the mean of the two one-sided slopes).
    """
    if not h > 0:
        raise InputError(f"bristle step h must be > 0 s, got {h!r}")
    b = bristles
    z, v = np.asarray(z, dtype=float), np.asarray(v, dtype=float)
    s, speed = np.sign(v), np.abs(v)
    z_ss = steady_deflection(v, b)
    dz_ss = _stribeck_slope(v, b) / b.sigma0
    rise, lag, dmean = _relaxation(speed * h / z_ss)
    gap = s * z_ss - z
    z_next, z_mean = z + gap * rise, z + gap * lag
    # dx/dv = (h/z_ss)(s − |v| z_ss'/z_ss); s dx/dv = (h/z_ss)(1 − v z_ss'/z_ss) also at v = 0
    dx = h / z_ss * (s - speed * dz_ss / z_ss)
    s_dx = h / z_ss * (1.0 - v * dz_ss / z_ss)
    decay = 1.0 - rise
    dz_next = s * dz_ss * rise + decay * z_ss * s_dx - z * decay * dx
    dz_mean = s * dz_ss * lag - dmean * z_ss * s_dx + z * dmean * dx
    return BristleStep(z_next, b.sigma0 * z_mean + b.sigma1 * gap * rise / h + b.sigma2 * v,
                       b.sigma0 * dz_mean + b.sigma1 * dz_next / h + b.sigma2)


def _relaxation(x: np.ndarray) -> tuple:
    """For x ≥ 0: 1 − E = 1 − e^(−x), 1 − φ with φ = (1 − e^(−x))/x (φ(0) = 1), and φ' = (E − φ)/x;
    1 − φ and φ' as series below x = 1e-3, where their closed forms cancel."""
    rise = -np.expm1(-x)
    positive = np.where(x > 0, x, 1.0)
    mean = rise / positive
    small = x < _SERIES_BELOW
    lag = np.where(small, x / 2.0 - x ** 2 / 6.0 + x ** 3 / 24.0 - x ** 4 / 120.0, 1.0 - mean)
    dmean = np.where(small, -0.5 + x / 3.0 - x ** 2 / 8.0 + x ** 3 / 30.0, (1.0 - rise - mean) / positive)
    return rise, lag, dmean
