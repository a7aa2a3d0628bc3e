"""The measured friction of one Franka joint at three speeds: every law of
:data:`dyn_plugin.FRICTION_LAWS` fitted on each speed and scored on every speed, beside
the classical models the data's authors fitted (:func:`franka_study`).

Data: ../shared/data/franka_joint_friction/joint2_{slow,middle,high}.npz (the
comparative data of "NNFM: A Novel Neural Network Modeling Approach for Robot Flexible
Joints Friction Considering Abrupt Non-smooth Properties", public repository
longshike/NNFM-A-Novel-Neural-Network-Modeling-Approach-for-Robot-Flexible-Joints-Friction):
q̇ rad/s, the measured friction τ N·m, the times t s, and ``published_<model>``, the
friction the authors' fitted models predict.  Their RMS is computed here from those
arrays (:data:`PUBLISHED_README` is the data README's table, printed beside them).

The laws are fitted without a constant offset (:mod:`dyn_plugin.friction.fitting` says
why: the constant changes sign from run to run).  Fitted and scored on the same speed is
the published models' setting; the other speeds show how a law fitted at one speed
predicts another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from ...errors import InputError

SPEEDS = ("slow", "middle", "high")
PUBLISHED_README = {"slow": {"CV": 0.250, "Dahl": 0.233, "Stribeck": 0.246, "LuGre": 0.280},
                    "middle": {"CV": 0.386, "Dahl": 0.383, "Stribeck": 0.381, "LuGre": 0.375},
                    "high": {"CV": 0.403, "Dahl": 0.404, "Stribeck": 0.428, "LuGre": None}}
"""RMS (N·m) of the published models as the data README states them (None: "LuGre diverges")."""


def default_files(data: Path) -> dict:
    """{speed: path} under the data folder ``data`` (the layout of ../shared/data)."""
    return {speed: Path(data) / "franka_joint_friction" / f"joint2_{speed}.npz" for speed in SPEEDS}


def franka_study(files: dict, *, laws=None, progress: Callable[[str], None] = lambda label: None) -> dict:
    """Every law fitted on each file of ``files`` ({speed: path}, each read by
    :func:`dyn_plugin.tools.cli.fit_friction.read_friction_file`) and scored on every file.

    Returns ``{"summary": JSON-ready, "arrays": {speed: {"qd", "tau", "t", "predicted":
    {law: (N,) fitted on that speed}}}}``; summary: ``files``, ``samples`` {speed: N},
    ``laws`` {law: {"fits": {fit speed: FrictionFit.to_dict()}, "rms": {fit speed: {speed:
    N·m}}}}, ``published`` {model: {speed: N·m or None (not finite)}} computed from the
    ``published_*`` arrays, ``published_readme`` (:data:`PUBLISHED_README`).
    ``progress(label)`` is called after each fit."""
    from ... import FRICTION_LAWS, fit_friction
    from ..cli.fit_friction import read_friction_file

    laws = tuple(FRICTION_LAWS) if laws is None else tuple(laws)
    unknown = [law for law in laws if law not in FRICTION_LAWS]
    if unknown:
        raise InputError(f"unknown friction law {unknown[0]!r}; choose from {', '.join(FRICTION_LAWS)}")
    data = {speed: read_friction_file(path) for speed, path in files.items()}
    missing_t = [speed for speed, d in data.items() if d["t"] is None]
    if missing_t and any(_dynamic(law) for law in laws):
        raise InputError(f"{files[missing_t[0]]}: no sample times t (s), which the dahl and lugre laws need")
    summary = {"files": {speed: str(path) for speed, path in files.items()},
               "samples": {speed: int(d["qd"].shape[0]) for speed, d in data.items()}, "laws": {},
               "published": _published(data), "published_readme": PUBLISHED_README}
    arrays = {speed: {"qd": d["qd"], "tau": d["tau"], "t": d["t"], "predicted": {}} for speed, d in data.items()}
    for law in laws:
        entry = summary["laws"][law] = {"fits": {}, "rms": {}}
        for fit_speed, d in data.items():
            fitted = fit_friction(d["qd"], d["tau"], law=law, t=d["t"])
            entry["fits"][fit_speed] = fitted.to_dict()
            entry["rms"][fit_speed] = {}
            for speed, other in data.items():
                predicted = fitted.predict(other["qd"], t=other["t"])
                entry["rms"][fit_speed][speed] = _rms(predicted, other["tau"])
                if speed == fit_speed:
                    arrays[speed]["predicted"][law] = predicted
            progress(f"Franka joint 2, {law} fitted on {fit_speed}: RMS {entry['rms'][fit_speed][fit_speed]:.4g} N·m")
    return {"summary": summary, "arrays": arrays}


def _dynamic(law: str) -> bool:
    from ...friction.laws import LAWS

    return LAWS[law].dynamic


def _published(data: dict) -> dict:
    names = list(dict.fromkeys(name for d in data.values() for name in d["published"]))
    return {name: {speed: _rms(d["published"][name], d["tau"]) for speed, d in data.items() if name in d["published"]}
            for name in names}


def _rms(predicted: np.ndarray, measured: np.ndarray):
    """RMS of predicted − measured, N·m; None when a prediction is not finite (a published
    model that diverged)."""
    with np.errstate(over="ignore", invalid="ignore"):
        value = float(np.sqrt(np.mean((np.asarray(predicted) - measured) ** 2)))
    return value if np.isfinite(value) else None
