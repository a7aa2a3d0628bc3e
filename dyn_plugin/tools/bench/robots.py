"""The robots ``dyn-plugin bench`` times: every bundled robot, and legged robots with a
free-flying base from example-robot-data (the ``[zoo]`` extra), by short name.

A legged robot is loaded as example-robot-data's loaders load it, with a free flyer
(``dp.load_robot(path, floating_base=True)``; :mod:`dyn_plugin.tools.zoo_files` finds the
files); without example-robot-data the default list leaves them out, and naming one is an
error that says what to install.
"""

from __future__ import annotations

from ...errors import UnknownRobotError
from ..zoo_files import ERD, discover

# short name -> the file's label in the zoo (zoo_files.Entry.label)
LEGGED = {
    "solo12": f"{ERD}/solo_description/solo12.urdf",     # quadruped, nv 18 (6 + 12 joints)
    "talos": f"{ERD}/talos_data/talos_full_v2.urdf",     # humanoid, nv 50 (6 + 44 joints)
}


def bench_robots() -> list:
    """The default robots: the bundled ones, then the :data:`LEGGED` ones when example-robot-data
    is installed."""
    from ...robots import list_robots

    return list(list_robots()) + [name for name in LEGGED if _entry(name) is not None]


def load_bench_robot(name, lock=None):
    """The model ``name`` stands for: a :data:`LEGGED` name (floating base), else a bundled
    robot or a URDF path (:func:`dyn_plugin.robots.load_robot`'s)."""
    from ...robots import load_robot

    if str(name) not in LEGGED:
        return load_robot(name, lock=lock)
    entry = _entry(str(name))
    if entry is None:
        raise UnknownRobotError(f"robot {name!r} is {LEGGED[name]}: install example-robot-data "
                                "(pip install 'dyn_plugin[zoo]') or give a path to a URDF file")
    return load_robot(entry.path, floating_base=entry.floating, lock=lock)


def _entry(name: str):
    return next((e for e in discover()[0] if e.label == LEGGED[name]), None)
