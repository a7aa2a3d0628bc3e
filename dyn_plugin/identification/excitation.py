"""Excitation trajectories (finite Fourier series, Swevers et al. 1997) and simulated
measurements for trying :func:`~dyn_plugin.identification.identify` without a robot."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import InputError


def fourier_trajectory(model, duration: float = 10.0, samples: int = 400, harmonics: int = 5,
                       base_frequency: float = 0.1, amplitude: float = 1.2, seed: int = 0):
    """``(t, q, qd, qdd)``: q_j(t) = q0_j + Σ_k (a_jk sin(kωt) − b_jk cos(kωt)) / (kω) with
    ω = 2π ``base_frequency`` and random coefficients, scaled so that every joint swings at
    most ``amplitude`` (rad or m) about the middle of its limits and stays inside them;
    analytic derivatives.  t (samples,), the others (samples, n)."""
    if samples < 2 or duration <= 0 or harmonics < 1 or base_frequency <= 0:
        raise InputError("fourier_trajectory needs samples ≥ 2, duration > 0, harmonics ≥ 1, base_frequency > 0")
    rng = np.random.default_rng(seed)
    n = model.n
    t = np.linspace(0.0, duration, samples)
    w = 2 * np.pi * base_frequency * np.arange(1, harmonics + 1)            # (K,)
    a, b = rng.normal(size=(2, n, harmonics))
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))                 # (T, K)
    q = (s / w) @ a.T - (c / w) @ b.T
    qd = c @ a.T + s @ b.T
    qdd = (-s * w) @ a.T + (c * w) @ b.T
    lower = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    upper = np.where(np.isfinite(model.upper), model.upper, np.pi)
    middle, room = 0.5 * (lower + upper), 0.45 * (upper - lower)
    offset = q.mean(axis=0)
    swing = np.maximum(np.abs(q - offset).max(axis=0), 1e-12)
    scale = np.minimum(amplitude, room) / swing
    return t, middle + (q - offset) * scale, qd * scale, qdd * scale


@dataclasses.dataclass
class Measurements:
    """A simulated experiment: states, torques (noisy and exact) and the true parameters."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    tau_exact: np.ndarray
    theta: np.ndarray            # (n, 10) true standard parameters (motor inertia in the links if so)
    rigid_model: object          # the rigid-body model the torques come from
    friction: object             # the FrictionModel


def dhanaraj_friction(model):
    """PUMA-560 friction for the identification demo: Dhanaraj's journal-bearing friction and
    transmission breakaway τ_B (thesis Table 3.4, ``urdf/puma560_friction.toml`` profile
    "dhanaraj"), plus Corke's viscous friction, without the transmission efficiency curve
    (η = 1: the thesis prints no curve, and η is not linear in any parameter) and without
    the motor inertia.  The profile adds the reflected motor inertia to each link's I_zz
    ("link" armature), which makes I_zz exceed I_xx + I_yy: no rigid body has such a link,
    so the identified links could never be reported consistent.  As a diagonal armature
    (a_j q̈_j, the "armature" term of :mod:`.friction`) it would be a rigid body, but
    joint 1's a_1 q̈_1 is the column of link 1's inertia about that axis (not identifiable
    apart), so the demo's truth is the rigid PUMA-560 with friction only."""
    from ..friction.models import TransmissionFriction
    from ..friction.parameters import FrictionModel

    dhanaraj = _bundled(model, "dhanaraj")
    corke = _bundled(model, "corke")
    transmission = TransmissionFriction.create(model, None, 0.0, dhanaraj.transmission.breakaway)
    velocity = FrictionModel.create(model, viscous=corke.velocity.viscous).velocity
    return dataclasses.replace(dhanaraj, velocity=velocity, transmission=transmission, armature=np.zeros(model.n),
                               armature_form="diagonal", name="dhanaraj-linear",
                               source=dhanaraj.source + "; viscous: Corke; no efficiency curve; no motor inertia")


def _bundled(model, profile):
    from ..friction.parameters import friction_file, load_friction

    return load_friction(friction_file("puma560"), model, profile=profile)


def simulate_measurements(model, friction=None, noise: float = 0.01, seed: int = 0, **trajectory) -> Measurements:
    """Torques of ``model`` with ``friction`` (a FrictionModel, default none) along a
    :func:`fourier_trajectory` (keyword options), from the ``newton_euler_friction``
    backend, plus Gaussian noise of ``noise`` × each joint's RMS torque."""
    from ..backends import get_backend

    model.require_fixed_joint_space("simulated identification data (a Fourier trajectory per joint angle)", "")
    t, q, qd, qdd = fourier_trajectory(model, seed=seed, **trajectory)
    if friction is None:
        backend = get_backend("newton_euler", model)
        rigid_model = model
    else:
        backend = get_backend("newton_euler_friction", model, friction=friction)
        rigid_model = backend.rigid.model
    tau_exact = backend.inverse_dynamics(q, qd, qdd)
    rng = np.random.default_rng(seed + 1)
    rms = np.sqrt(np.mean(tau_exact ** 2, axis=0))
    tau = tau_exact + noise * rms * rng.normal(size=tau_exact.shape)
    return Measurements(t, q, qd, qdd, tau, tau_exact, rigid_model.inertial_parameters(), rigid_model, friction)
