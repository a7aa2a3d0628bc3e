"""Friction laws of one joint as fit-able functions τ_f(q̇[, t]) of named parameters.

The laws the friction literature compares on measured joint friction (Olsson, Åström,
Canudas de Wit, Gäfvert, Lischinsky, "Friction models and friction compensation",
European Journal of Control 4(3), 1998, §2-§3), each a function of the joint velocity
q̇ (N,) rad/s (and, for the dynamic ones, the sample times t (N,) s) returning the
friction torque (N,) N·m, with the sign convention of :mod:`.models` (the torque opposes
motion: q̇ τ_f ≥ 0 in steady sliding, sgn(0) = 0):

``coulomb_viscous``  τ = F_C sgn(q̇) + F_v q̇  (Olsson et al. 1998, §2, Fig. 1b-c).
``schilling``        τ = F_v q̇ + sgn(q̇) (F_C + (F_S − F_C) exp(−|q̇|/v_S))  (R. J. Schilling,
                     *Fundamentals of Robotics*, 1990, eq. 6-3-3; the statement is law.py's
                     :func:`~.law.dry_level`, not repeated here).
``stribeck``         τ = sgn(q̇) g(q̇) + F_v q̇, g = F_C + (F_S − F_C) exp(−(q̇/v_S)²): the
                     Gaussian Stribeck curve, the steady state of LuGre (Canudas de Wit,
                     Olsson, Åström, Lischinsky, "A new model for control of systems with
                     friction", IEEE Trans. Automatic Control 40(3), 1995, eq. (5); the
                     statement is :func:`.bristles.steady_state_force`).
``sigmoid``          τ = φ1/(1 + exp(−φ2 (q̇ + φ3))) − φ1/(1 + exp(−φ2 φ3)): C. Gaz, M. Cognetti,
                     A. Oliva, P. Robuffo Giordano, A. De Luca, "Dynamic Identification of the
                     Franka Emika Panda Robot With Retrieval of Feasible Parameters Using
                     Penalty-Based Optimization", IEEE RA-L 4(4), 2019 (zero at q̇ = 0 by
                     construction; φ3 ≠ 0 makes it asymmetric: +φ1(1 − σ(φ2φ3)) and
                     −φ1 σ(φ2φ3) at large speeds, σ the logistic function).
``dahl``             ż = q̇ (1 − σ0 z sgn(q̇)/F_C), τ = σ0 z + F_v q̇ (P. R. Dahl, "A solid
                     friction model", Aerospace Corp. TOR-0158(3107-18)-1, 1968).
``lugre``            ż = q̇ − σ0 |q̇| z / g(q̇), τ = σ0 z + σ1 ż + F_v q̇ (Canudas de Wit et al.
                     1995, eqs. (2)-(4)).

The dynamic laws are :mod:`.bristles`' statement (its exact step at constant velocity
and its force), driven through the samples by :func:`bristle_torque`.

The viscous coefficient of the static laws may come out negative: there it is the slope
of a regression over the fitted speeds (friction falling with speed, as the classical
Coulomb-viscous fit finds it), and such a law is not dissipative beyond
|q̇| = F_C/|F_v|; the bristle laws keep σ2 = F_v ≥ 0, as their source requires and
:class:`.bristles.Bristles` checks.

Parameter names and units (revolute joint): ``coulomb`` F_C, ``static`` F_S, ``offset``
N·m; ``viscous`` F_v N·m·s/rad (σ2 of the bristle laws); ``stribeck_velocity`` v_S rad/s;
``sigma0`` N·m/rad; ``sigma1`` N·m·s/rad; ``phi1`` N·m, ``phi2`` s/rad, ``phi3`` rad/s.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Optional

import numpy as np
from scipy.special import expit

from . import bristles as br
from .law import direction, dry_level

# How a parameter scales with the data (the fitting nondimensionalises by these):
# T torque, V velocity, Z angle (the displacement of one sample).
TORQUE, VELOCITY, VISCOUS, STIFFNESS, SLOPE = "T", "V", "T/V", "T/Z", "1/V"


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One parameter of a law.

    name, unit : as in the params dict (SI units)
    scale : how it scales with the data (``TORQUE``, ``VELOCITY``, ``VISCOUS``, ``STIFFNESS``, ``SLOPE``)
    bound : ``"free"`` (any sign), ``"nonnegative"`` (≥ 0), ``"floor"`` (≥ 1e-9 of its scale:
            a level the bristle laws divide by), ``"positive"`` (> 0: optimised as a
            logarithm, a scale-like parameter), or ``"above:<name>"`` (≥ that parameter:
            optimised as the excess over it, ≥ 0)
    """

    name: str
    unit: str
    scale: str
    bound: str = "nonnegative"


@dataclasses.dataclass(frozen=True)
class Law:
    """A friction law: its name, parameters, source and the function τ = torque(params, q̇, t)."""

    name: str
    parameters: tuple
    citation: str
    torque: Callable
    dynamic: bool = False

    @property
    def names(self) -> tuple:
        return tuple(p.name for p in self.parameters)


# -- the static laws -----------------------------------------------------------------------

def coulomb_viscous(qd, coulomb, viscous):
    """τ = F_C sgn(q̇) + F_v q̇, N·m (Olsson et al. 1998, §2)."""
    return coulomb * np.sign(qd) + viscous * qd


def schilling(qd, coulomb, static, stribeck_velocity, viscous):
    """τ = F_v q̇ + sgn(q̇) (F_C + (F_S − F_C) exp(−|q̇|/v_S)), N·m (Schilling eq. 6-3-3, law.py's statement)."""
    return viscous * qd + direction(qd) * dry_level(qd, coulomb, static, stribeck_velocity)


def stribeck(qd, coulomb, static, stribeck_velocity, viscous):
    """τ = sgn(q̇) (F_C + (F_S − F_C) exp(−(q̇/v_S)²)) + F_v q̇, N·m: LuGre's steady state
    (Canudas de Wit et al. 1995, eq. (5); :func:`.bristles.steady_state_force`)."""
    law = br.Bristles.lugre(1, sigma0=1.0, coulomb=coulomb, static=static, stribeck_velocity=stribeck_velocity)
    return br.steady_state_force(qd, law) + viscous * qd


def sigmoid(qd, phi1, phi2, phi3):
    """τ = φ1/(1 + exp(−φ2 (q̇ + φ3))) − φ1/(1 + exp(−φ2 φ3)), N·m (Gaz et al. 2019)."""
    return phi1 * (expit(phi2 * (qd + phi3)) - expit(phi2 * phi3))


# -- the dynamic (bristle) laws --------------------------------------------------------------

def step_velocities(qd: np.ndarray, t: np.ndarray) -> tuple:
    """The steps between samples: durations h_k = t_{k+1} − t_k (N−1,) s and the velocity held
    over each, the mean (q̇_k + q̇_{k+1})/2 (N−1,) rad/s (so that h_k times it is the
    trapezoidal displacement)."""
    return np.diff(t), 0.5 * (qd[:-1] + qd[1:])


def affine_scan(offsets: np.ndarray, factors: np.ndarray, z0: float) -> np.ndarray:
    """z (N,) with z_0 = z0 and z_{k+1} = offsets_k + factors_k z_k (offsets, factors (N−1,)):
    the compositions of the affine maps by doubling (Hillis & Steele, "Data parallel
    algorithms", CACM 29(12), 1986), log2 N passes of numpy instead of N Python steps."""
    a, b = np.array(offsets, dtype=float), np.array(factors, dtype=float)
    shift = 1
    while shift < a.shape[0]:
        a[shift:], b[shift:] = a[shift:] + b[shift:] * a[:-shift], b[shift:] * b[:-shift]
        shift *= 2
    return np.concatenate(([z0], a + b * z0))


def bristle_states(law: br.Bristles, qd: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The bristle deflection z (N,) rad at every sample: from the steady state of the first
    sample, sgn(q̇_0) z_ss(q̇_0), through :func:`.bristles.bristle_step` over each step at
    its held velocity (:func:`step_velocities`).  That step is affine in z (z⁺ = A + E z,
    A = step(0), E = step(1) − step(0) = exp(−|v| h / z_ss) ∈ [0, 1]), so the samples
    are its composition (:func:`affine_scan`)."""
    h, v = step_velocities(qd, t)
    z0 = float(np.sign(qd[0]) * br.steady_deflection(qd[0], law)[0])
    if h.size == 0:
        return np.array([z0])
    offsets = br.bristle_step(0.0, v, h, law)
    factors = br.bristle_step(1.0, v, h, law) - offsets
    return affine_scan(offsets, factors, z0)


def bristle_torque(law: br.Bristles, qd: np.ndarray, t: np.ndarray) -> np.ndarray:
    """τ (N,) N·m of a bristle law at the samples: :func:`.bristles.force` at each sample's
    velocity and deflection (:func:`bristle_states`)."""
    return br.force(bristle_states(law, qd, t), qd, law)


def dahl(qd, t, coulomb, sigma0, viscous):
    """Dahl (1968, α = 1) with a viscous term, through the samples: τ (N,) N·m."""
    return bristle_torque(br.Bristles.dahl(1, sigma0=sigma0, coulomb=coulomb, sigma2=viscous), qd, t)


def lugre(qd, t, coulomb, static, stribeck_velocity, sigma0, sigma1, viscous):
    """LuGre (Canudas de Wit et al. 1995) through the samples: τ (N,) N·m."""
    law = br.Bristles.lugre(1, sigma0=sigma0, coulomb=coulomb, static=static, stribeck_velocity=stribeck_velocity,
                            sigma1=sigma1, sigma2=viscous)
    return bristle_torque(law, qd, t)


# -- the table --------------------------------------------------------------------------------

_COULOMB = Parameter("coulomb", "N·m", TORQUE)
_LEVEL = Parameter("coulomb", "N·m", TORQUE, "floor")     # the bristle laws divide by F_C
_STATIC = Parameter("static", "N·m", TORQUE, "above:coulomb")
_STRIBECK = Parameter("stribeck_velocity", "rad/s", VELOCITY, "positive")
_VISCOUS = Parameter("viscous", "N·m·s/rad", VISCOUS)                  # σ2 ≥ 0: bristles.py refuses less
_SLOPE = Parameter("viscous", "N·m·s/rad", VISCOUS, "free")             # a static law's slope, either sign
_SIGMA0 = Parameter("sigma0", "N·m/rad", STIFFNESS, "positive")
OFFSET = Parameter("offset", "N·m", TORQUE, "free")

LAWS = {law.name: law for law in (
    Law("coulomb_viscous", (_COULOMB, _SLOPE), "Olsson et al. 1998, §2", coulomb_viscous),
    Law("schilling", (_COULOMB, _STATIC, _STRIBECK, _SLOPE), "Schilling 1990, eq. 6-3-3", schilling),
    Law("stribeck", (_LEVEL, _STATIC, _STRIBECK, _SLOPE), "Canudas de Wit et al. 1995, eq. (5)", stribeck),
    Law("sigmoid", (Parameter("phi1", "N·m", TORQUE), Parameter("phi2", "s/rad", SLOPE, "positive"),
                    Parameter("phi3", "rad/s", VELOCITY, "free")), "Gaz et al. 2019", sigmoid),
    Law("dahl", (_LEVEL, _SIGMA0, _VISCOUS), "Dahl 1968", dahl, dynamic=True),
    Law("lugre", (_LEVEL, _STATIC, _STRIBECK, _SIGMA0, Parameter("sigma1", "N·m·s/rad", VISCOUS), _VISCOUS),
        "Canudas de Wit et al. 1995, eqs. (2)-(4)", lugre, dynamic=True),
)}
FRICTION_LAWS = tuple(LAWS)


def evaluate(law: Law, params: Mapping, qd: np.ndarray, t: Optional[np.ndarray] = None) -> np.ndarray:
    """τ (N,) N·m of ``law`` with ``params`` (its names, SI units, plus an optional ``offset``
    added to every sample) at the velocities ``qd`` (N,) rad/s and, for a dynamic law, the
    times ``t`` (N,) s (already checked by the caller)."""
    values = {name: params[name] for name in law.names}
    torque = law.torque(qd, t, **values) if law.dynamic else law.torque(qd, **values)
    return torque + params.get("offset", 0.0)
