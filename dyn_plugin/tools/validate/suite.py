"""What ``dyn-plugin validate`` compares: a :class:`Suite` (robots, backends, references,
quantities and the numeric settings), read from a TOML file among :func:`suite_dir`'s or
given by path (:func:`load_suite`), and checked before any work (:meth:`Suite.check`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from pathlib import Path
from typing import Optional

import numpy as np

from ...backends.registry import backends as registered_backends
from ...backends.registry import list_backends
from ...datafile import read_toml
from ...errors import BackendError, DynPluginError, ModelError, argument, arguments_spelled
from ...robots import load_robot
from .plan import BRISTLES, DERIVATIVES, QUANTITIES, STEPPING

__all__ = ["MAX_SAMPLES", "MAX_STEPS", "REQUIRED", "SETTINGS", "Suite", "list_suites", "load_suite",
           "model_to_validate", "positive_number_problem", "setting_problem", "suite_dir", "tolerance_problem",
           "whole_number_problem"]


# Largest batch of random states (per robot) and trajectory length accepted: the default
# suite uses 1000 states (about 2 minutes) and 1000 steps; 100 times more is hours of work.
MAX_SAMPLES = 100_000
MAX_STEPS = 100_000


def setting_problem(key: str, value) -> Optional[str]:
    """Why ``value`` cannot be the numeric suite setting ``key`` ("must be ..., got ..."),
    or None when it can."""
    return SETTINGS[key](value)


def whole_number_problem(value, lowest: int, highest: Optional[int] = None) -> Optional[str]:
    """Why ``value`` is not a whole number from ``lowest`` to ``highest`` (None: no limit), or None."""
    whole = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if whole and lowest <= value and (highest is None or value <= highest):
        return None
    bounds = f" from {lowest} to {highest}" if highest is not None else f", at least {lowest}"
    return f"must be a whole number{bounds}, got {value!r}"


def positive_number_problem(value) -> Optional[str]:
    """Why ``value`` is not a finite positive number, or None."""
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    try:
        if number and math.isfinite(value) and value > 0:
            return None
    except OverflowError:  # an int too large for a float
        pass
    return f"must be a finite positive number, got {value!r}"


def tolerance_problem(value) -> Optional[str]:
    """Why ``value`` is not a tolerance on the error measure, positive and below 1 (which
    would accept errors of 100 %), or None."""
    problem = positive_number_problem(value)
    if problem is None and value >= 1:
        return f"must be below 1 (an error of 100 %), got {value!r}"
    return problem


# The numeric settings of a suite: why a value is refused ("must be ..."), None when it is valid.
SETTINGS = {
    "samples": lambda value: whole_number_problem(value, 1, MAX_SAMPLES),
    "seed": lambda value: whole_number_problem(value, 0),
    "rtol": tolerance_problem,
    "trajectory_tol": tolerance_problem,
    "dt": positive_number_problem,
    "duration": positive_number_problem,
}


@dataclasses.dataclass
class Suite:
    """What to compare; loaded from a TOML file (:func:`load_suite`; the bundled ones in :func:`suite_dir`)."""

    robots: list
    backends: list
    references: list
    quantities: list
    samples: int = 200
    seed: int = 0
    rtol: float = 1e-9
    dt: float = 1e-3
    duration: float = 1.0
    trajectory_tol: float = 1e-8
    floating_base: bool = False     # every robot's root link floats (pinocchio's free-flyer)
    mimic: bool = False             # <mimic> joints follow their leaders (reduced coordinates)
    lock: dict = dataclasses.field(default_factory=dict)   # joints held fixed, {name: rad or m}, in every robot
    description: str = ""
    name: str = "custom"

    def model(self, robot: str):
        """The model of ``robot`` as this suite validates it (:func:`model_to_validate`), named
        by :func:`distinct_names` where another of the suite's files has its robot name."""
        model = model_to_validate(robot, floating_base=self.floating_base, mimic=self.mimic, lock=self.lock)
        label = distinct_names(tuple(self.robots)).get(robot)
        return model if label is None else dataclasses.replace(model, name=label)

    def check(self) -> None:
        """Raise :class:`DynPluginError` naming the first setting that cannot be run, as
        :func:`~dyn_plugin.errors.argument` spells it (a suite file's key, or the option
        that set it on the command line)."""
        for key, kind, valid in (("floating_base", bool, "true or false"), ("mimic", bool, "true or false"),
                                 ("lock", dict, "a table {joint = value (rad or m)}"),
                                 ("description", str, "text"), ("name", str, "text")):
            if not isinstance(getattr(self, key), kind):
                raise DynPluginError(f"{argument(key)} must be {valid}, got {getattr(self, key)!r}")
        for key, besides in (("robots", ', "bundled" or "zoo"'), ("backends", _SELECTION), ("references", _SELECTION),
                             ("quantities", "")):
            names = getattr(self, key)
            if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
                raise DynPluginError(f"{argument(key)} must be a non-empty list of names{besides}, got {names!r}")
        known = [*QUANTITIES, *DERIVATIVES, *STEPPING, *BRISTLES]
        unknown = [q for q in self.quantities if q not in known]
        if unknown:
            raise DynPluginError(f"{argument('quantities')}: unknown {', '.join(map(repr, unknown))}; known: "
                                 f"{', '.join(known)}")
        self._check_backend_names()
        stepping = [q for q in self.quantities if q in STEPPING]
        if len(stepping) == len(self.quantities) and "pybullet" not in self.references:
            raise DynPluginError(f"nothing to compare: {argument('quantities')} {', '.join(stepping)} are compared "
                                 f"with pybullet only, which is not among the {argument('references')}")
        for key in SETTINGS:
            problem = setting_problem(key, getattr(self, key))
            if problem:
                raise DynPluginError(f"{argument(key)} {problem}")
        if stepping and self.dt > self.duration:
            raise DynPluginError(f"{argument('dt')} must be at most the trajectory {argument('duration')} "
                                 f"({self.duration:g} s), got {self.dt:g}")
        if stepping and self.duration / self.dt > MAX_STEPS:
            raise DynPluginError(f"{argument('dt')} must be at least {argument('duration')} / {MAX_STEPS} = "
                                 f"{self.duration / MAX_STEPS:g} s (at most {MAX_STEPS} trajectory steps), "
                                 f"got {self.dt:g}")

    def _check_backend_names(self) -> None:
        """BackendError naming the first backend or reference that is not registered, with
        the registered ones of its kind."""
        available = list_backends()
        for key, kind in (("backends", ("ours", "generated")), ("references", "reference")):
            unknown = [name for name in getattr(self, key) if name not in available]
            if unknown:
                raise BackendError(f"{argument(key)}: unknown backend {unknown[0]!r}; {key}: "
                                   f"{', '.join(registered_backends(kind))} (or any other registered backend)")


_SELECTION = " or a selection {kind = ..., can = [...], cannot = [...]}"


def suite_dir() -> Path:
    """The folder of the bundled suites (the one place that says where they are)."""
    return Path(__file__).resolve().parent.parent / "suites"   # dyn_plugin/tools/suites (validation/suites links to it)


def list_suites() -> list:
    return sorted(p.stem for p in suite_dir().glob("*.toml"))


def _selected(key: str, value):
    """A suite's ``robots``, ``backends`` or ``references`` as a list of names.  Besides a
    list, ``robots = "bundled"`` (every bundled robot), ``robots = "zoo"`` (:mod:`.zoo`) and, for backends and references, a
    selection from the registry by what backends declare: ``{kind = ["ours", "generated"],
    cannot = ["friction"]}`` (keys kind, can, cannot, each a name or a list of names; see
    ``registry.backends``)."""
    if key == "robots" and value == "bundled":
        from ...robots import list_robots

        return list_robots()
    if key == "robots" and value == "zoo":  # every URDF of example-robot-data and pybullet_data
        from ..zoo_files import robots

        return robots()
    if key in ("backends", "references") and isinstance(value, dict):
        unknown = set(value) - {"kind", "can", "cannot"}
        if unknown:
            raise DynPluginError(f"{key} selects by kind, can and cannot; unknown keys {sorted(unknown)}")
        kind, can, cannot = (_names(f"{key}.{part}", value.get(part, ())) for part in ("kind", "can", "cannot"))
        try:
            return registered_backends(kind or None, can=can, cannot=cannot)
        except DynPluginError as error:
            raise DynPluginError(f"{key}: {error}") from None
    return value


def _names(key: str, value) -> tuple:
    """``value``, a name or a list of names, as a tuple; DynPluginError naming ``key`` otherwise."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
        raise DynPluginError(f"{key} must be a name or a list of names, got {value!r}")
    return tuple(names)


REQUIRED = ("robots", "backends", "references", "quantities")   # what a suite file must give


def load_suite(name_or_path: str = "default") -> Suite:
    """A suite by name (``default``, ``quick``) or from a TOML file path.  Anything
    else, or a file that is not a valid suite, is a DynPluginError naming the file and
    what is wrong with it."""
    path = _suite_file(name_or_path)
    data = read_toml(path, DynPluginError, "suite file")
    fields = [f.name for f in dataclasses.fields(Suite)]
    unknown = set(data) - set(fields)
    if unknown:
        raise DynPluginError(f"{path}: unknown keys {sorted(unknown)}; known: {', '.join(fields)}")
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        raise DynPluginError(f"{path}: missing {', '.join(missing)} (a suite names its {', '.join(REQUIRED)})")
    with arguments_spelled(None):   # the file's own keys, whoever reads it
        try:
            suite = Suite(**{key: _selected(key, value) for key, value in data.items()})
            if suite.name == "custom":
                suite.name = path.stem
            suite.check()
        except DynPluginError as error:
            raise type(error)(f"{path}: {error}") from None
    return suite


def _suite_file(name_or_path) -> Path:
    """The TOML file of a bundled suite's name or of a path; DynPluginError for a folder,
    a missing file or an unknown name."""
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise DynPluginError(f"a suite is a name ({', '.join(list_suites())}) or a TOML file, got {name_or_path!r}")
    path = Path(name_or_path)
    if path.is_dir():
        raise DynPluginError(f"suite {str(path)!r} is a folder; give a suite file (TOML) or one of "
                             f"{', '.join(list_suites())}")
    if path.is_file():
        return path
    bundled = suite_dir() / f"{name_or_path}.toml"
    if bundled.is_file():
        return bundled
    if path.suffix or len(path.parts) > 1:
        raise DynPluginError(f"suite file {str(path)!r} does not exist")
    raise DynPluginError(f"unknown suite {str(name_or_path)!r}; available: {', '.join(list_suites())} "
                         "(or a TOML file)")


@functools.lru_cache(maxsize=8)
def distinct_names(robots: tuple) -> dict:
    """``{entry: "name (file)"}`` for the URDF files among ``robots`` whose ``<robot name>``
    another entry shares: the comparisons are kept per robot name, and the zoo's eight
    minitaur variants, all named "quadruped", were one robot in the report."""
    entries = {}
    for robot in robots:
        entries.setdefault(_robot_name(robot), []).append(robot)
    out = {}
    for name, files in entries.items():
        if name is not None and len(files) > 1:
            out.update({entry: f"{name} ({suffix})" for entry, suffix in zip(files, _distinct_suffixes(files))})
    return out


def _robot_name(robot: str) -> Optional[str]:
    """The robot name a suite entry loads as: a bundled robot's own, a file's ``<robot name>``
    (None for a file that cannot be read: loading it says why)."""
    if not Path(robot).is_file():
        return robot
    from lxml import etree

    try:
        with open(robot, "rb") as handle:
            for _, element in etree.iterparse(handle, events=("start",)):
                return element.get("name")
    except (etree.XMLSyntaxError, OSError, ValueError):
        return None
    return None


def _distinct_suffixes(paths: list) -> list:
    """The shortest ends of ``paths`` (their last k parts) that tell them apart."""
    parts = [Path(path).parts for path in paths]
    for k in range(1, max(map(len, parts)) + 1):
        suffixes = ["/".join(p[-k:]) for p in parts]
        if len(set(suffixes)) == len(suffixes):
            return suffixes
    return [str(path) for path in paths]


def model_to_validate(robot: str, floating_base: bool = False, mimic: bool = False, lock=None):
    """The model of ``robot`` (bundled name or URDF path; ``floating_base``, ``mimic`` and
    ``lock`` as :func:`~dyn_plugin.robots.load_robot`'s); one without moving joints is refused."""
    model = load_robot(robot, floating_base=floating_base, mimic=mimic, lock=lock or None)
    if model.nv == 0:
        raise ModelError(f"{robot}: robot {model.name!r} has no moving joint (only fixed joints) and a fixed base, "
                         "so there is nothing to compare")
    return model
