"""Locked joints: a model with some joints held at fixed positions (a gripper kept shut, a
wrist held still, a lift at one height).

Holding joint j at q_j = v makes it a fixed joint whose placement is its rest placement
composed with its motion at v (revolute: a rotation by v about the unit axis; prismatic: a
translation v along it, :func:`dyn_plugin.kinematics.joint_motion`).  Its child body is then
rigidly attached to its parent and is merged into it, as a URDF fixed joint is when the
model is read (:mod:`dyn_plugin.urdf`): the masses add, the centre of mass is the
mass-weighted mean and the inertias add about it by the parallel-axis theorem
(:func:`dyn_plugin.kinematics.parallel_axis`; the one implementation of the sum is
:class:`dyn_plugin.kinematics.BodySum`).  The locked link, and every frame
fixed to it, becomes a frame of the parent body at the composed placement, so
``frame_placement``/``frame_jacobian`` still find it; joints below a locked joint hang
from the parent body at the composed placement.  This is pinocchio's
``buildReducedModel(model, joints_to_lock, q_reference)`` (pinocchio/algorithm/model.hxx),
which ``tests/test_lock.py`` holds it to.

The remaining joints keep their order (the original depth-first order with the locked ones
left out, as pinocchio's reduced model), and the model records the held joints and their
values (:attr:`RobotModel.held_joints`), from which the URDF the pinocchio and pybullet
backends load (:func:`dyn_plugin.urdf.urdf_text`) is its source with each held joint
written as ``type="fixed"`` at the composed ``<origin>``.  That keeps the link tree itself:
the reduced model records where each frame sits on its body, not which link it hangs
from, and a URDF written from the model alone (:func:`dyn_plugin.urdf.to_urdf`) would hang
every joint from its body, which the engines' depth-first walk orders differently when a
moving joint hangs below a locked or fixed link whose sibling's name sorts between them.
A model without a URDF keeps none: the engines then load ``to_urdf`` of the reduced model.

Mimic joints (a model loaded with ``mimic=True``, :mod:`dyn_plugin.mimic`): locking a
leader locks its followers at m·v + o; a follower may be named along with its leader (at
that value), never alone, for it cannot be held while its leader moves.  In a model loaded
without ``mimic=True`` every joint is independent and any of them may be locked; a joint
that mimics a locked one then loses its ``<mimic>`` element in the locked model's URDF.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .arrays import real_number
from .errors import InputError, argument
from .kinematics import PRISMATIC, REVOLUTE, BodySum, joint_motion, make_transform
from .model import Frame, RobotModel

# per-joint arrays (n, ...) that a kept joint keeps as they are, where the model has them
JOINT_FIELDS = ("axes", "lower", "upper", "velocity_limits", "effort_limits", "damping", "friction", "continuous",
                "armature")
MIMIC_TOLERANCE = 1e-12     # rad or m: a follower's given lock value and m·v + o of its leader's may differ by this


def lock_joints(model: RobotModel, joints) -> RobotModel:
    """``model`` with ``joints`` held fixed (see the module docstring).

    Parameters
    ----------
    model : RobotModel
        Any model: fixed or floating base, with or without mimic joints.
    joints : list of joint names (each held at 0), a single name, or a dict
        {name: value} with value in rad (revolute, continuous) or m (prismatic), or None
        for the default (0; a mimic follower: m·v + o of its leader's value v).

    Returns a new :class:`RobotModel` with n − (number of locked joints) joints, named
    ``"<name> (locked j=v, ...)"`` (:func:`locked_name`).  At least one joint must stay
    free: a model without moving joints (n = 0) is not taken everywhere (the friction
    models and their studies fail on it), so locking every joint is refused.

    Raises :class:`InputError` for an unknown joint name (listing the model's joints), a
    value that is not a finite number or lies outside the joint's limits (naming the joint
    and its limits), a mimic follower named without its leader, and a lock of every joint.
    """
    held = _held_values(model, joints)
    if not held:
        return model
    if len(held) == model.n:
        raise InputError(f"locking every joint of robot {model.name!r} ({', '.join(model.joint_names)}) leaves no "
                         "moving joint, which not every part of dyn_plugin takes (friction models); leave at least "
                         "one joint free")
    return _reduced(model, held)


# -- what is held, checked --------------------------------------------------------------------


def _held_values(model: RobotModel, joints) -> dict:
    """{joint index: value} of the joints to hold (rad or m), mimic followers of a held leader
    included, each checked (see :func:`lock_joints`)."""
    requested = _requested(model, joints)
    index = {name: i for i, name in enumerate(model.joint_names)}
    followers = {relation.joint: relation for relation in model.mimic}
    held = {}
    for name, value in requested.items():
        if name in followers:
            continue
        held[index[name]] = _checked_value(model, index[name], 0.0 if value is None else value)
    for name, relation in followers.items():
        leader = index[relation.leader]
        if leader not in held:
            if name in requested:
                raise InputError(f"joint {name!r} of robot {model.name!r} follows joint {relation.leader!r} (<mimic>) "
                                 f"and cannot be locked while {relation.leader!r} moves: lock {relation.leader!r}, "
                                 f"which holds {name!r} at {relation.multiplier:g}·q + {relation.offset:g}, or load "
                                 f"the robot without {argument('mimic', True)}")
            continue
        value = relation.multiplier * held[leader] + relation.offset
        given = requested.get(name)
        if given is not None and abs(given - value) > MIMIC_TOLERANCE * max(1.0, abs(value)):
            raise InputError(f"joint {name!r} of robot {model.name!r} follows {relation.leader!r} (<mimic>): locked "
                             f"at {held[leader]!r}, {relation.leader!r} holds it at {value!r}, not {given!r}")
        held[index[name]] = _checked_value(model, index[name], value, f" (following {relation.leader!r})")
    return dict(sorted(held.items()))


def _requested(model: RobotModel, joints) -> dict:
    """{name: value or None} from a name, a list of names or a dict; unknown names refused."""
    if isinstance(joints, str):
        joints = [joints]
    if isinstance(joints, dict):
        requested = dict(joints)
    elif joints is None:
        requested = {}
    else:
        try:
            requested = {name: None for name in joints}
        except TypeError:
            raise InputError(f"lock must be a list of joint names or a dict {{name: value (rad or m)}}, got "
                             f"{joints!r}") from None
    for name, value in requested.items():
        if not isinstance(name, str) or name not in model.joint_names:
            raise InputError(f"robot {model.name!r} has no joint {name!r} to lock; its joints are: "
                             + ", ".join(map(repr, model.joint_names)))
        kind = model.joint_types[model.joint_names.index(name)]
        if kind not in (REVOLUTE, PRISMATIC):
            raise InputError(f"joint {name!r} of robot {model.name!r} is {kind}: only revolute and prismatic joints "
                             "are locked (one value each)")
        if value is not None and not real_number(value):
            raise InputError(f"lock value of joint {name!r} must be a number (rad or m), got {value!r}")
        if value is not None:
            requested[name] = float(value)
    return requested


def _checked_value(model: RobotModel, i: int, value: float, why: str = "") -> float:
    """``value`` if finite and within joint ``i``'s limits (inclusive), else an InputError."""
    name, unit = model.joint_names[i], "m" if model.joint_types[i] == PRISMATIC else "rad"
    lower, upper = float(model.lower[i]), float(model.upper[i])
    if not np.isfinite(value):
        raise InputError(f"lock value of joint {name!r}{why} must be finite, got {value!r}")
    if not lower <= value <= upper:
        raise InputError(f"lock value {value!r} {unit} of joint {name!r}{why} is outside its limits "
                         f"[{lower!r}, {upper!r}] {unit}")
    return float(value)


# -- the reduced model ------------------------------------------------------------------------


def locked_name(model: RobotModel, held: dict) -> str:
    """``"<name> (locked j1=v1, j2=v2)"``: the locked model is another robot, so that what is
    looked up by a robot's name (a thesis's tables, published operation counts) no longer
    finds the original's."""
    return f"{model.name} (locked {', '.join(f'{model.joint_names[i]}={v:g}' for i, v in held.items())})"


def _reduced(model: RobotModel, held: dict) -> RobotModel:
    """The model without the ``held`` joints {index: value}: tree, bodies, frames, per-joint
    data of the kept joints, mimic relations among them, and the URDF."""
    owner, placement, origins = _placements(model, held)
    kept = [i for i in range(model.n) if i not in held]
    renumber = {old: new for new, old in enumerate(kept)}
    renumber[-1] = -1
    index = {name: i for i, name in enumerate(model.link_names)}
    link_of = lambda body: model.base_link if body < 0 else model.link_names[body]       # noqa: E731
    frames = tuple(_moved_frame(frame, index, owner, placement, link_of) for frame in model._frame_list())
    parents = [owner[model.parents[i]] if model.parents[i] >= 0 else -1 for i in kept]
    return dataclasses.replace(
        model, name=locked_name(model, held),
        joint_names=tuple(model.joint_names[i] for i in kept), link_names=tuple(model.link_names[i] for i in kept),
        joint_types=tuple(model.joint_types[i] for i in kept), parents=np.array([renumber[p] for p in parents]),
        joint_rotations=np.array([origins[i][:3, :3] for i in kept]).reshape(len(kept), 3, 3),
        joint_positions=np.array([origins[i][:3, 3] for i in kept]).reshape(len(kept), 3),
        frames=frames, mimic=tuple(r for r in model.mimic if model.joint_names.index(r.joint) not in held),
        held_joints=model.held_joints + tuple((model.joint_names[i], float(value)) for i, value in held.items()),
        **_without_inertial(model, frames), **_inertias(model, held, owner, placement, kept),
        **{field.name: getattr(model, field.name)[kept] for field in dataclasses.fields(model)
           if field.name in JOINT_FIELDS})


def _without_inertial(model: RobotModel, frames: tuple) -> dict:
    """The URDF links without ``<inertial>`` (pybullet gives them 1 kg) among the moving bodies
    and among the base's, a link now fixed to the base moving to the latter."""
    on = {frame.name: frame.link for frame in frames}
    onto_base = tuple(name for name in model.links_without_inertial if on.get(name) == model.base_link)
    return dict(links_without_inertial=tuple(name for name in model.links_without_inertial if name not in onto_base),
                base_links_without_inertial=model.base_links_without_inertial + onto_base)


def _placements(model: RobotModel, held: dict):
    """Per joint i: ``owner[i]``, the body (a kept joint's index, -1 the base) link i is now
    part of, ``placement[i]`` (4×4) of link i's frame in that body's frame, and for a kept
    joint ``origins[i]`` (4×4), its rest placement in its new parent body's frame."""
    owner, placement, origins = {}, {}, {}
    for i in range(model.n):
        parent = int(model.parents[i])
        above = placement[parent] if parent >= 0 else np.eye(4)
        rest = above @ make_transform(model.joint_rotations[i], model.joint_positions[i])
        if i in held:
            R, p = joint_motion(model.joint_types[i], model.axes[i], held[i])
            owner[i], placement[i] = (owner[parent] if parent >= 0 else -1), rest @ make_transform(R, p)
        else:
            owner[i], placement[i], origins[i] = i, np.eye(4), rest
    return owner, placement, origins


def _moved_frame(frame: Frame, index: dict, owner: dict, placement: dict, link_of) -> Frame:
    """``frame`` on the body its link is now part of (``index``: moving link name -> joint
    index), at the composed placement; a frame of the base or of a kept link is unchanged."""
    i = index.get(frame.link)
    if i is None or owner[i] == i:
        return frame
    X = placement[i] @ make_transform(frame.rotation, frame.position)
    return Frame(frame.name, link_of(owner[i]), X[:3, :3], X[:3, 3])


def _inertias(model: RobotModel, held: dict, owner: dict, placement: dict, kept: list) -> dict:
    """Masses, centres of mass and inertias of the kept bodies and of the base, each held
    link's added to the body it is now part of (:class:`~dyn_plugin.kinematics.BodySum`: exact sums about the body
    origin); a body that receives nothing keeps its numbers bit for bit."""
    receiving = {owner[i] for i in held}
    bodies = {}
    for body in receiving:
        bodies[body] = BodySum()
        if body < 0:
            bodies[body].add(model.base_mass, model.base_com, model.base_inertia)
        else:
            bodies[body].add(model.masses[body], model.coms[body], model.inertias[body])
    for i in held:
        R, p = placement[i][:3, :3], placement[i][:3, 3]
        bodies[owner[i]].add(model.masses[i], R @ model.coms[i] + p, R @ model.inertias[i] @ R.T)
    masses, coms, inertias = model.masses.copy(), model.coms.copy(), model.inertias.copy()
    out = {}
    for body, accumulated in bodies.items():
        com, inertia = accumulated.com_and_inertia()
        if body < 0:
            out.update(base_mass=accumulated.mass, base_com=com, base_inertia=inertia)
        else:
            masses[body], coms[body], inertias[body] = accumulated.mass, com, inertia
    return dict(masses=masses[kept], coms=coms[kept].reshape(len(kept), 3),
                inertias=inertias[kept].reshape(len(kept), 3, 3), **out)
