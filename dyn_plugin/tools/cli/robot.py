"""What every verb that takes a robot shares: the ``--lock JOINT[=VALUE]`` option and the
loading of the robot with it (and with ``--floating-base`` / ``--mimic`` where the verb has
them).  The parser adds the option with :func:`add_lock_argument`; each command loads its
robot with :func:`load_model`, or passes :func:`lock_of` on where the robot is loaded
elsewhere (the validation suite, bench).  The locking itself is
:func:`dyn_plugin.locking.lock_joints`."""

from __future__ import annotations

import argparse
from typing import Optional

from ...errors import InputError

__all__ = ["LOCK_HELP", "add_lock_argument", "load_model", "lock_item", "lock_of"]

LOCK_HELP = ("hold JOINT fixed at VALUE (rad or m; 0 without =VALUE): its link merges into its parent, as "
             "pinocchio's buildReducedModel; repeat for more joints, e.g. --lock panda_finger_joint1 "
             "--lock panda_finger_joint2=0.02 (default: none)")


def lock_item(text: str) -> tuple:
    """``JOINT`` or ``JOINT=VALUE`` as ``(joint, value or None)``; an ArgumentTypeError (exit
    code 2, one line) for an empty name or a value that is not a number."""
    name, equals, value = text.partition("=")
    name = name.strip()
    if not name:
        raise argparse.ArgumentTypeError(f"--lock needs JOINT or JOINT=VALUE (rad or m), got {text!r}")
    if not equals:
        return name, None
    try:
        return name, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--lock {text}: the value after '=' must be a number (rad or m), "
                                         f"got {value!r}") from None


def add_lock_argument(parser: argparse.ArgumentParser) -> None:
    """``--lock JOINT[=VALUE]``, repeatable, into ``args.lock`` (a list of :func:`lock_item`)."""
    parser.add_argument("--lock", action="append", type=lock_item, metavar="JOINT[=VALUE]", help=LOCK_HELP)


def lock_of(args) -> Optional[dict]:
    """{joint: value or None} of the ``--lock`` options, None without any; a joint given twice
    at different values is an InputError."""
    items = getattr(args, "lock", None)
    if not items:
        return None
    lock = {}
    for name, value in items:
        if name in lock and lock[name] != value:
            raise InputError(f"--lock {name} is given twice, at {lock[name]} and {value}; give it once")
        lock[name] = value
    return lock


def load_model(args, robot: Optional[str] = None):
    """The robot ``robot`` (default ``args.robot``) as the command line asks: with the verb's
    ``--floating-base`` and ``--mimic`` where it has them, and its ``--lock`` joints held."""
    from ...robots import load_robot

    return load_robot(args.robot if robot is None else robot, floating_base=getattr(args, "floating_base", False),
                      mimic=getattr(args, "mimic", False), lock=lock_of(args))
