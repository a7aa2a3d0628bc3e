"""Bundled robots: found by name, generated from the DH tables kept beside them.

``dyn_plugin/bundled/NAME.toml`` is the source (every number cites where it comes from);
``dyn_plugin/bundled/NAME.urdf`` is generated from it.  Regenerate after editing a table with::

    dyn-plugin robots --regenerate
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Optional, Union

from .dh import model_from_table, read_dh_table
from .errors import UnknownRobotError
from .locking import lock_joints
from .model import DEFAULT_GRAVITY, RobotModel
from .urdf import load_urdf, to_urdf

FRICTION_SUFFIX = "_friction"     # NAME_friction.toml: a bundled robot's friction data (dyn_plugin.friction)


def bundled_dir() -> Path:
    """Folder of the bundled URDF files and tables: ``dyn_plugin/bundled`` beside this module,
    the same from a checkout, an editable install and a wheel (the top-level ``urdf`` is a
    symbolic link to it)."""
    return Path(__file__).resolve().parent / "bundled"


BUNDLED = tuple(sorted(path.stem for path in bundled_dir().glob("*.toml") if not path.stem.endswith(FRICTION_SUFFIX)))
"""Every ``NAME.toml`` table in the bundled folder is a robot: adding one is adding its table."""


def list_robots() -> list:
    """Names of the bundled robots."""
    return list(BUNDLED)


def robot_path(name: str) -> Path:
    """Path of a bundled robot's URDF file."""
    if name not in BUNDLED:
        raise UnknownRobotError(f"unknown robot {name!r}; bundled robots: {', '.join(BUNDLED)}")
    return bundled_dir() / f"{name}.urdf"


def bundled_name(model) -> Optional[str]:
    """The bundled robot ``model`` was loaded from, if any: by its file, not by its name
    (any URDF may call itself "puma560")."""
    if model.source_path is None:
        return None
    source = Path(model.source_path).resolve()
    return next((name for name in BUNDLED if robot_path(name).resolve() == source), None)


def robot_table(name: str) -> dict:
    """The parsed source table of a bundled robot (DH rows, provenance, motor inertias)."""
    robot_path(name)
    return read_dh_table(bundled_dir() / f"{name}.toml")


def load_robot(name_or_path: Union[str, os.PathLike], gravity=None, floating_base: bool = False,
               mimic: bool = False, lock=None) -> RobotModel:
    """A bundled robot by name (see :func:`list_robots`), or any URDF file.

    ``floating_base=True`` frees the root link (pinocchio's free-flyer convention, see
    :attr:`~dyn_plugin.model.RobotModel.floating_base`); by default it is fixed to the
    world, as in pinocchio's ``buildModelFromUrdf``.  ``mimic=True``: ``<mimic>`` joints
    follow their leaders (reduced coordinates, :mod:`dyn_plugin.mimic`); by default they are
    independent, with a warning naming them, as pinocchio's default.  ``lock``: joints held
    fixed, a list of names (each at 0) or a dict {name: value} in rad or m (pinocchio's
    ``buildReducedModel``; :func:`~dyn_plugin.locking.lock_joints`), e.g.
    ``load_robot("panda.urdf", lock=["panda_finger_joint1", "panda_finger_joint2"])``.

    Bundled robots are checked strictly (a triangle-inequality break is an error);
    user files get a :class:`~dyn_plugin.errors.PhysicalValidityWarning` instead.
    """
    g = DEFAULT_GRAVITY if gravity is None else gravity
    if str(name_or_path) in BUNDLED:
        return _locked(load_urdf(robot_path(str(name_or_path)), strict=True, gravity=g, floating_base=floating_base,
                                 mimic=mimic, locked=_names(lock)), lock)
    if not str(name_or_path).strip():
        raise UnknownRobotError(f"no robot given; bundled robots: {', '.join(BUNDLED)} (or give a path to a URDF file)")
    path = Path(name_or_path)
    if path.suffix.lower() in (".urdf", ".xml") or path.exists():
        if path.is_dir():
            raise UnknownRobotError(f"{str(path)!r} is a folder; give the URDF file in it")
        if not path.is_file():
            raise UnknownRobotError(f"URDF file {str(path)!r} does not exist")
        return _locked(load_urdf(path, gravity=g, floating_base=floating_base, mimic=mimic, locked=_names(lock)), lock)
    raise UnknownRobotError(f"unknown robot {str(name_or_path)!r}; bundled robots: {', '.join(BUNDLED)} "
                            "(or give a path to a URDF file)")


def _names(lock) -> tuple:
    """The joint names in a ``lock`` argument (see :func:`dyn_plugin.locking.lock_joints`)."""
    if lock is None:
        return ()
    return (lock,) if isinstance(lock, str) else tuple(lock) if hasattr(lock, "__iter__") else ()


def _locked(model: RobotModel, lock) -> RobotModel:
    return model if lock is None else lock_joints(model, lock)


def generate_urdf(name: str) -> str:
    """URDF text of a bundled robot, generated from its table."""
    robot_path(name)
    # the URDF carries the rigid bodies (it has no element for rotor inertia): a table's
    # motor_inertia column is drive data, the friction profiles' armature = "robot_table"
    model = dataclasses.replace(model_from_table(bundled_dir() / f"{name}.toml"), armature=None)
    note = (f"Generated from {name}.toml (rerun: dyn-plugin robots, regenerate option); do not edit. "
            "The table cites the source of every number and explains every correction.")
    return to_urdf(model, comments={"robot": note})


def regenerate(names=BUNDLED, folder: Optional[Path] = None) -> list:
    """Write ``NAME.urdf`` for each bundled robot from its table; returns the paths."""
    folder = Path(folder) if folder else bundled_dir()
    paths = []
    for name in names:
        path = folder / f"{name}.urdf"
        path.write_text(generate_urdf(name))
        paths.append(path)
    return paths

