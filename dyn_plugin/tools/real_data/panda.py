"""The Panda log of Gaz et al. 2019: identification with each friction set, least squares
and physical, scored on held-out torques beside the published model (:func:`panda_study`).

Protocol (the published one, tests/data/README.md): the log resampled at 1 kHz,
q, q̇, τ low-passed by a zero-phase 4th-order Butterworth at 10 Hz, q̈ = d/dt of the
filtered q̇, 0.5 s trimmed at each end, decimated to 100 Hz (every 10th sample), fitted on
the first 60 % (by time), scored on the last 40 % (:func:`dyn_plugin.prepare_log`,
:meth:`~dyn_plugin.identification.Log.split`, :func:`dyn_plugin.holdout_rms`).

Friction sets (:data:`FRICTION_SETS`) are identified jointly with the base inertial
parameters (:func:`dyn_plugin.identify`, ``physical`` False and True).  The nonlinear laws
of :mod:`dyn_plugin.friction.laws` are not linear in their parameters: each is fitted per
joint (:func:`dyn_plugin.fit_friction`, with a constant offset) to τ − Y_b β̂ on the fit
part, β̂ the base parameters of the viscous + Coulomb fit of the same method, and
predicts Y_b β̂ + τ_f(q̇) on the held-out part.  The offset: the asymmetric Coulomb
columns (c⁺ ≠ c⁻) of the linear fit carry a constant per joint (a torque-sensor bias of
the run), which the symmetric laws lack; fit and held-out parts are one run, so it is the
same constant on both.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Optional

from ...errors import InputError

PUBLISHED = {"total": 0.275, "per_joint": (0.255, 0.559, 0.237, 0.260, 0.129, 0.096, 0.057),
             "source": "Gaz, Cognetti, Oliva, Robuffo Giordano, De Luca, \"Dynamic Identification of the Franka "
                       "Emika Panda Robot With Retrieval of Feasible Parameters Using Penalty-Based Optimization\", "
                       "IEEE RA-L 4(4), 2019: their model scored under the protocol of tests/data/README.md"}
"""The published model's held-out torque RMS, N·m (the data README's figures)."""
PROTOCOL = {"cutoff": 10.0, "rate": 100.0, "trim": 0.5, "holdout": 0.4}
"""The published protocol: Hz, Hz, s, fraction."""
FRICTION_SETS = {"none": (), "viscous": ("viscous",), "viscous+coulomb": ("viscous", "coulomb"),
                 "viscous+coulomb+load": ("viscous", "coulomb", "load")}
"""Name → the friction terms identified with the inertial parameters."""
METHODS = ("least squares", "physical")
LAW_BASE = "viscous+coulomb"
"""The friction set whose β̂ the nonlinear laws are fitted on top of."""
FINGERS = ("panda_finger_joint1", "panda_finger_joint2")
PANDA_URDF = "example-robot-data/panda_description/panda.urdf"


def panda_model():
    """example-robot-data's Panda with its fingers locked: the 7 joints of the log."""
    from ... import load_robot
    from ..zoo_files import discover

    found = [entry.path for entry in discover()[0] if entry.label == PANDA_URDF]
    if not found:
        raise InputError(f"the Panda URDF ({PANDA_URDF}) is not installed: pip install example-robot-data")
    return load_robot(found[0], lock=list(FINGERS))


def panda_study(path, model=None, *, sets=tuple(FRICTION_SETS), methods=METHODS, laws=(),
                protocol: Optional[dict] = None, progress: Callable[[str], None] = lambda label: None) -> dict:
    """Held-out torque RMS of every friction set × method and of every law × method on the
    log at ``path`` (.npz or .csv, :func:`dyn_plugin.load_log`).

    Returns ``{"summary": JSON-ready dict, "arrays": {"t", "measured", "predicted": {label:
    (N, 7)}} of the held-out part}``; summary: ``log`` (how it was prepared), ``protocol``,
    ``joints``, ``fit_samples``, ``holdout_samples``, ``published``, ``models`` (one entry
    per set and method: ``friction``, ``method``, ``holdout_rms`` (7,) N·m,
    ``holdout_rms_total``, ``consistent``, ``seconds``, ``loads_from``), ``laws`` (per law
    and method: the same scores and ``fits``, each joint's FrictionFit.to_dict()) and ``load_coefficients``
    (per method: each load coefficient's value, standard error and t ratio).
    ``progress(label)`` is called after each fit.
    """
    from ... import holdout_rms, identify, load_log, prepare_log

    unknown = [name for name in sets if name not in FRICTION_SETS]
    if unknown:
        raise InputError(f"unknown friction set {unknown[0]!r}; choose from {', '.join(FRICTION_SETS)}")
    model = panda_model() if model is None else model
    protocol = {**PROTOCOL, **(protocol or {})}
    log = prepare_log(**load_log(path), cutoff=protocol["cutoff"], rate=protocol["rate"], trim=protocol["trim"])
    fit, held = log.split(protocol["holdout"])
    summary = {"log": log.to_dict(), "protocol": protocol, "joints": list(model.joint_names), "fit_samples": len(fit),
               "holdout_samples": len(held), "published": PUBLISHED, "models": [], "laws": [],
               "load_coefficients": {}}
    arrays = {"t": held.t, "measured": held.tau, "predicted": {}}
    results = {}
    for method in methods:
        for name in dict.fromkeys(tuple(sets) + ((LAW_BASE,) if laws else ())):
            start = time.perf_counter()
            result = identify(model, fit, friction=FRICTION_SETS[name], physical=method == "physical")
            score = holdout_rms(result, held)
            results[name, method] = result
            if name in sets:
                summary["models"].append({"friction": name, "method": method, **_scored(score),
                                          "consistent": all(result.consistency.values()),
                                          "seconds": time.perf_counter() - start, "loads_from": result.loads_from})
                arrays["predicted"][f"{name} ({method})"] = result.predict(held.q, held.qd, held.qdd, held.direction)
                if "load" in FRICTION_SETS[name]:
                    summary["load_coefficients"][method] = _load_coefficients(result)
            progress(f"Panda, {name}, {method}: held-out total {score.total:.4g} N·m")
        for law in laws:
            entry, predicted = _law_fit(model, results[LAW_BASE, method], law, fit, held)
            summary["laws"].append({"method": method, **entry})
            arrays["predicted"][f"{law} law ({method})"] = predicted
            progress(f"Panda, {law} law, {method}: held-out total {entry['holdout_rms_total']:.4g} N·m")
    return {"summary": summary, "arrays": arrays}


def _scored(score) -> dict:
    return {"holdout_rms": [float(v) for v in score.per_joint], "holdout_rms_total": float(score.total)}


def _law_fit(model, result, law: str, fit, held) -> tuple:
    """(summary entry, held-out prediction (N, n)) of ``law`` fitted per joint on ``fit``'s
    τ − Y_b β̂ of ``result`` (the module says why with an offset)."""
    from ... import fit_friction
    from ...identification import joint_torque_regressor, torque_rms

    def rigid(part):
        return result.base.regressor(joint_torque_regressor(model, part.q, part.qd, part.qdd)) @ result.inertial

    rigid_fit, predicted = rigid(fit), rigid(held)
    fits = []
    for j in range(model.n):
        friction = fit_friction(fit.qd[:, j], fit.tau[:, j] - rigid_fit[:, j], law=law, t=fit.t, offset=True)
        predicted[:, j] += friction.predict(held.qd[:, j], t=held.t)
        fits.append(friction.to_dict())
    return {"law": law, **_scored(torque_rms(held.tau, predicted)), "fits": fits}, predicted


def _load_coefficients(result) -> list:
    """Each load coefficient of ``result``: name, joint, kind, value, std_error, t_ratio
    (value / std error) and at_bound (held at 0 by the bounds)."""
    from ...identification import LOADS

    rows = []
    for name in result.friction_names:
        kind = name.split("_", 1)[0]
        if kind in LOADS:
            value, error = result.parameter(name)
            rows.append({"name": name, "joint": name.split("_", 1)[1], "kind": kind, "value": value, "std_error": error,
                         "t_ratio": value / error if error > 0 else None, "at_bound": name in result.at_bound})
    return rows


def default_log(data: Path) -> Path:
    """The Panda log under the data folder ``data`` (the layout of ../shared/data)."""
    return Path(data) / "panda_gaz2019" / "exciting_trajectory_1.npz"
