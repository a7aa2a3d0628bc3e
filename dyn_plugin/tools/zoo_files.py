"""The zoo's files: every URDF of example-robot-data (the ``[zoo]`` extra) and of
pybullet_data, each marked fixed-base or floating (what ``robots = "zoo"`` in a suite
stands for; :mod:`.zoo` runs them)."""

from __future__ import annotations

import dataclasses
import functools
from importlib import metadata
from pathlib import Path
from typing import Optional

ERD = "example-robot-data"
# example-robot-data's robots loaded with a free flyer (example-robot-data-loaders 5.0.0,
# example_robot_data/robots_loader.py: the classes with ``free_flyer = True``), by folder;
# used when that module does not import.  Files no loader names take their folder's verdict.
ERD_FLOATING_FOLDERS = frozenset({
    "a1_description", "alexander_description", "anymal_b_simple_description", "anymal_c_simple_description",
    "b1_description", "bluevolta_description", "bolt_description", "borinot_description", "cassie_description",
    "centauro_description", "falcon_description", "g1_description", "go1_description", "go2_description",
    "hector_description", "hextilt_description", "human_description", "hyq_description", "icub_description",
    "iris_description", "laikago_description", "pr2_description", "quadruped_description", "romeo_description",
    "simple_humanoid_description", "so_arm_description", "solo_description", "talos_data"})
ERD_FIXED_FILES = frozenset({"talos_data/robots/talos_left_arm.urdf"})  # TalosArmLoader: free_flyer = False
# pybullet_data's free-moving robots (pybullet's examples load them without useFixedBase):
# files, or folders ending in "/".
PYBULLET_FLOATING = ("a1/", "aliengo/", "bicycle/", "humanoid/", "husky/", "laikago/", "mini_cheetah/", "quadruped/",
                     "racecar/", "r2d2.urdf", "kuka_iiwa/model_free_base.urdf")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One URDF file of the zoo."""

    path: str        # absolute path of the file
    label: str       # package/robot/file, e.g. example-robot-data/ur_description/ur5_robot.urdf
    floating: bool   # a free-flying robot (a legged robot, a humanoid, a drone, a vehicle)


@functools.lru_cache(maxsize=1)
def discover() -> tuple:
    """``(entries, notes)``: every URDF file of example-robot-data (when installed) and of
    pybullet_data, de-duplicated by path, sorted by label; ``notes`` says what is missing."""
    import pybullet_data

    entries, notes = [], []
    erd = _example_robot_data_files()
    if erd is None:
        notes.append(f"{ERD} is not installed (pip install 'dyn_plugin[zoo]'): the zoo runs on pybullet_data alone")
    else:
        floating = _erd_loader_floating()
        for path, rel in erd:
            parts = rel.split("/")
            short = parts[:1] + parts[2:] if len(parts) > 2 and parts[1] in ("urdf", "robots") else parts
            free = floating.get(rel, parts[0] in ERD_FLOATING_FOLDERS and rel not in ERD_FIXED_FILES)
            entries.append(Entry(str(path), "/".join([ERD, *short]), free))
    root = Path(pybullet_data.getDataPath()).resolve()
    for path in sorted(root.rglob("*.urdf")):
        rel = path.relative_to(root).as_posix()
        entries.append(Entry(str(path.resolve()), f"pybullet_data/{rel}",
                             any(rel == f or (f.endswith("/") and rel.startswith(f)) for f in PYBULLET_FLOATING)))
    unique = {e.path: e for e in reversed(entries)}  # the first label of a path wins
    return sorted(unique.values(), key=lambda e: e.label), notes


def _example_robot_data_files() -> Optional[list]:
    """``[(absolute path, path under robots/)]`` of the installed example-robot-data's URDF
    files (its distribution's file list: share/example-robot-data/robots/...), or None."""
    try:
        dist = metadata.distribution(ERD)
    except metadata.PackageNotFoundError:
        return None
    files = []
    for file in dist.files or ():
        parts = file.parts
        at = [i for i in range(1, len(parts)) if parts[i - 1:i + 1] == (ERD, "robots")]
        path = Path(dist.locate_file(file))
        if file.suffix.lower() == ".urdf" and at and path.is_file():
            files.append((path.resolve(), "/".join(parts[at[0] + 1:])))
    return sorted(files)


def _erd_loader_floating() -> dict:
    """{path under robots/: free_flyer} from example_robot_data.robots_loader, when it imports
    (it comes with example-robot-data < 5, and example-robot-data-loaders since); else {}."""
    try:
        from example_robot_data import robots_loader
    except Exception:  # not installed, or broken: the folder table above decides
        return {}
    return {f"{c.path}/{c.urdf_subpath}/{c.urdf_filename}": bool(c.free_flyer)
            for c in robots_loader.ROBOTS.values() if getattr(c, "urdf_filename", "")}


def robots() -> list:
    """The zoo's files (absolute paths): what ``robots = "zoo"`` in a suite stands for."""
    return [entry.path for entry in discover()[0]]
