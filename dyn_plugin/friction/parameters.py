"""A robot's complete friction description, and the three ways to get one.

:class:`FrictionModel` gathers per-joint parameters: velocity friction (viscous,
asymmetric Coulomb, Schilling's static term), Dhanaraj's bearing and transmission
friction, and the reflected motor inertia (armature).  Sources:

* Python: ``FrictionModel.create(n, viscous=..., coulomb=..., ...)``, or
  ``FrictionModel.create(model, viscous={"elbow": 0.4}, ...)`` with values per joint name;
  a dynamic (bristle) law: ``FrictionModel.create(model, dynamic=Bristles.lugre(model, ...))``
  (:mod:`dyn_plugin.friction.bristles`);
* URDF ``<dynamics damping friction>``: :meth:`FrictionModel.from_urdf` (viscous, Coulomb);
* a data file (TOML, profiles of parameters with their sources): :func:`load_friction`;
  bundled robots ship one as ``urdf/NAME_friction.toml``.

Where each term acts (Dhanaraj Fig. 3.1 and Table 3.5, extended):

    τ_out = τ_rigid + τ_armature + τ_f^J              (torque at the joint)
    τ_in  = τ_out η^(−s) + d τ_B + b(q̇)               (torque the actuator supplies)

with the bearing friction τ_f^J = d |τ_f^J|(f, n), the transmission's efficiency η and
breakaway τ_B (Table 3.2), and the lumped velocity friction b(q̇) (viscous + Coulomb +
static, measured at the joint, e.g. Corke's PUMA model) added on the input side.
d = sgn(q̇), or tanh(q̇/w) in the smooth variant.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Optional, Union

import numpy as np

from ..datafile import read_toml
from ..errors import ModelError, argument
from ..robots import bundled_name
from .bristles import Bristles
from .models import (BearingFriction, EfficiencyCurve, TransmissionFriction, VelocityFriction, _check_names,
                     _per_joint, friction_torque, joints_of, parameter_table)


ARMATURE_FORMS = ("diagonal", "link")


@dataclasses.dataclass(frozen=True)
class FrictionModel:
    """Friction and reflected motor inertia of every joint of one robot.

    velocity : :class:`VelocityFriction` (always present; zeros when unused)
    bearing, transmission : :class:`BearingFriction` / :class:`TransmissionFriction` or None
    armature : (n,) kg·m² (kg for prismatic joints), reflected motor inertia
    armature_form : ``"diagonal"`` — added to the diagonal of M only, pinocchio's
        ``model.armature`` (a rotor whose own gyroscopic effects are neglected);
        ``"link"`` — added to the link's inertia about the joint axis, as Dhanaraj adds
        I_motor to I_zz (then it also enters the gyroscopic and coupling terms).
        The two give different torques whenever the link's frame rotates.
    name, source : what this set is and where its numbers come from.
    joint_names : the joints the values belong to, in order, when it was made for a robot
        (``create(model, ...)``, data files, URDF); None when made for a joint count.  A
        backend refuses it for a robot whose joints are named otherwise.
    dynamic : a :class:`~dyn_plugin.friction.bristles.Bristles` law (LuGre or Dahl) whose
        bristle deflection z is a state of its own, or None.  It *is* the velocity friction
        of the joints (its σ2 the viscous term, F_C, F_S the dry levels), so ``velocity``
        must then be all zero and there may be no transmission breakaway (ModelError);
        bearing and efficiency friction may stay.  The friction backends carry z through
        ``state_step`` and :func:`dyn_plugin.simulate`; their stateless calls use the law's
        steady state (:func:`~dyn_plugin.friction.bristles.steady_state_force`).
    """

    velocity: VelocityFriction
    bearing: Optional[BearingFriction] = None
    transmission: Optional[TransmissionFriction] = None
    armature: Optional[np.ndarray] = None
    armature_form: str = "diagonal"
    name: str = "custom"
    source: str = ""
    joint_names: Optional[tuple] = None
    dynamic: Optional[Bristles] = None

    def __post_init__(self):
        n = self.velocity.n
        if self.joint_names is not None:
            count, names = joints_of(self.joint_names)
            if count != n:
                raise ModelError(f"friction model {self.name!r}: {count} joint names {names} for {n} joints")
            object.__setattr__(self, "joint_names", names)
        armature = _per_joint("armature", 0.0 if self.armature is None else self.armature, n,
                              names=self.joint_names, default=0.0)
        object.__setattr__(self, "armature", armature)
        if self.armature_form not in ARMATURE_FORMS:
            raise ModelError(f"armature_form must be one of {ARMATURE_FORMS}, got {self.armature_form!r}")
        for part in (self.bearing, self.transmission):
            if part is not None and part.n != n:
                raise ModelError(f"friction parts disagree on the joint count: velocity model has {n}, "
                                 f"{type(part).__name__} has {part.n}")
        if self.dynamic is not None:
            self._check_dynamic()

    def _check_dynamic(self) -> None:
        """Refuse a dynamic law that does not fit, or that would count velocity friction twice."""
        law, n = self.dynamic, self.n
        if not isinstance(law, Bristles):
            raise ModelError(f"friction model {self.name!r}: dynamic must be a Bristles law "
                             f"(Bristles.lugre(...) or Bristles.dahl(...)), got {law!r}")
        if law.n != n:
            raise ModelError(f"friction model {self.name!r}: the {law.law} law has {law.n} joints, the model {n}")
        if None not in (law.joint_names, self.joint_names) and law.joint_names != self.joint_names:
            raise ModelError(f"friction model {self.name!r}: the {law.law} law was made for joints "
                             f"{', '.join(law.joint_names)}, the model for {', '.join(self.joint_names)}")
        velocity = self.velocity
        if velocity.has_dry_friction or np.any(velocity.viscous != 0):
            raise ModelError(f"friction model {self.name!r}: a {law.law} law is the joints' velocity friction (its "
                             f"sigma2 the viscous term, coulomb/static the dry levels): give no viscous, coulomb or "
                             f"static besides it")
        if self.breakaway is not None and np.any(self.breakaway > 0):
            raise ModelError(f"friction model {self.name!r}: a transmission breakaway is dry friction acting beside "
                             f"the {law.law} law's; put it in the law's coulomb/static levels")

    @classmethod
    def create(cls, n, viscous=0.0, coulomb=0.0, coulomb_negative=None, static=None, static_negative=None,
               stribeck_velocity=0.1, smoothing: float = 0.0, bearing: Optional[BearingFriction] = None,
               transmission: Optional[TransmissionFriction] = None, armature=0.0,
               armature_form: str = "diagonal", name: str = "custom", source: str = "",
               dynamic: Optional[Bristles] = None) -> "FrictionModel":
        """Parameters from Python; scalars apply to every joint (see :meth:`VelocityFriction.create`).

        ``n``: the joint count, or the robot model (or its joint names), with which every
        per-joint value may also be a dict ``{joint name: value}``; joints a dict leaves out
        take the parameter's default (static: the joint's Coulomb level; others 0, the
        Stribeck velocity 0.1).  ``dynamic``: a LuGre or Dahl law (:class:`Bristles`), which
        then replaces the velocity friction (viscous, coulomb, static must stay 0).
        """
        n, names = joints_of(n)
        velocity = VelocityFriction.create(names if names is not None else n, viscous, coulomb, coulomb_negative,
                                           static, static_negative, stribeck_velocity, smoothing)
        return cls(velocity, bearing, transmission, armature, armature_form, name, source, names, dynamic)

    @classmethod
    def none(cls, n: int) -> "FrictionModel":
        """No friction and no armature: the rigid-body dynamics."""
        return cls.create(n, name="none", source="frictionless")

    @classmethod
    def from_urdf(cls, model, smoothing: float = 0.0) -> "FrictionModel":
        """The URDF's ``<dynamics damping friction>``: viscous c q̇ and symmetric Coulomb F sgn(q̇)."""
        return cls.create(model, viscous=model.damping, coulomb=model.friction, smoothing=smoothing,
                          name="urdf", source=f"URDF <dynamics> of {model.name}")

    # -- derived facts -----------------------------------------------------------------

    @property
    def n(self) -> int:
        return self.velocity.n

    @property
    def smoothing(self) -> float:
        return self.velocity.smoothing

    @property
    def load_dependent(self) -> bool:
        """True when friction depends on the joint loads (bearings, efficiency curves)."""
        return (self.bearing is not None and any(k != "none" for k in self.bearing.kinds)) or \
            (self.transmission is not None and any(c is not None for c in self.transmission.curves))

    @property
    def frictionless(self) -> bool:
        """True when no joint has friction: nothing load-dependent, and none at q̇ = ±1 rad/s
        (a property of the parameters, not of whether a trajectory moved)."""
        return not self.load_dependent and not np.any(self.load_independent_torque(np.array([[1.0], [-1.0]])
                                                                                    * np.ones(self.n)))

    @property
    def set_valued(self) -> bool:
        """True when dry friction is sharp (sgn), so that the torque at q̇ = 0 is a set."""
        breakaway = self.transmission is not None and np.any(self.transmission.breakaway > 0)
        return self.smoothing == 0 and (self.velocity.has_dry_friction or bool(breakaway))

    def levels(self, qd: np.ndarray) -> tuple:
        """Load-independent dry-friction levels (L⁺, L⁻) at speed |q̇|: Coulomb/static + τ_B."""
        positive, negative = self.velocity.levels(qd)
        if self.transmission is not None:
            positive, negative = positive + self.transmission.breakaway, negative + self.transmission.breakaway
        return positive, negative

    @functools.cached_property
    def table(self) -> np.ndarray:
        """The load-independent friction (velocity friction and the transmission breakaway
        τ_B) as the (ROWS, n) parameter table of the compiled law
        (:func:`dyn_plugin.friction.law.parameter_table`; no armature)."""
        return parameter_table(self.velocity, self.breakaway)

    @property
    def breakaway(self) -> Optional[np.ndarray]:
        """The transmission breakaway τ_B (n,), or None without a transmission."""
        return None if self.transmission is None else self.transmission.breakaway

    def load_independent_torque(self, qd: np.ndarray) -> np.ndarray:
        """b(q̇) + d τ_B: the lumped velocity friction plus the transmission breakaway, the
        friction that does not depend on the joint loads; ``qd`` (n,) or (N, n), validated
        by the caller."""
        return friction_torque(qd, self.table)

    def dry_torque(self, qd: np.ndarray) -> np.ndarray:
        """d (L(q̇) + τ_B): the dry part of :meth:`load_independent_torque`, with the level of
        the motion's direction (:meth:`levels`)."""
        return friction_torque(qd, self.table, viscous=False)

    def with_smoothing(self, width: float) -> "FrictionModel":
        """The same parameters with every sgn(q̇) replaced by tanh(q̇ / width) (width ≥ 0)."""
        velocity = VelocityFriction.create(self.n, self.velocity.viscous, self.velocity.coulomb_positive,
                                           self.velocity.coulomb_negative, self.velocity.static_positive,
                                           self.velocity.static_negative, self.velocity.stribeck_velocity, width)
        return dataclasses.replace(self, velocity=velocity)

    def check_against(self, model) -> None:
        """Raise a :class:`ModelError` if this description does not fit ``model``."""
        if self.n != model.n:
            raise ModelError(f"friction model {self.name!r} has {self.n} joints, robot {model.name!r} has {model.n}")
        if self.joint_names is not None and tuple(model.joint_names) != self.joint_names:
            differ = [(ours, theirs) for ours, theirs in zip(self.joint_names, model.joint_names) if ours != theirs]
            raise ModelError(f"friction model {self.name!r} was made for joints {', '.join(self.joint_names)}; robot "
                             f"{model.name!r} has {', '.join(model.joint_names)} (first difference: "
                             f"{differ[0][0]!r} vs {differ[0][1]!r}); build it for this robot's joints")
        if self.armature_form == "link":
            sliding = [model.joint_names[i] for i in range(model.n)
                       if model.joint_types[i] == "prismatic" and self.armature[i] > 0]
            if sliding:
                raise ModelError(f"armature_form 'link' adds a rotor inertia about a revolute axis; prismatic "
                                 f"joint(s) {sliding} need armature_form 'diagonal' (reflected mass on M)")
        if self.bearing is not None:
            for i, kind in enumerate(self.bearing.kinds):
                revolute = model.joint_types[i] == "revolute"
                if (kind == "linear" and revolute) or (kind in ("journal", "journal_pair") and not revolute):
                    raise ModelError(f"joint {model.joint_names[i]!r} is {model.joint_types[i]}: "
                                     f"a {kind} bearing does not fit it")


# -- data files ------------------------------------------------------------------------


def friction_file(robot: str) -> Optional[Path]:
    """The bundled friction data file of a bundled robot, or None if it has none."""
    from ..robots import bundled_dir

    path = bundled_dir() / f"{robot}_friction.toml"
    return path if path.is_file() else None


def load_friction(source: Union[str, os.PathLike], model, profile: Optional[str] = None) -> FrictionModel:
    """A :class:`FrictionModel` for ``model`` from a TOML data file (or a bundled robot's name).

    The file holds ``[profiles.NAME]`` tables and a ``default_profile``; each profile
    may give ``viscous``, ``coulomb``, ``coulomb_negative``, ``static``, ``static_negative``,
    ``stribeck_velocity``, ``smoothing`` (one number or one per joint), an ``armature``
    list (or ``"robot_table"``: the bundled robot's ``motor_inertia`` column) with
    ``armature_form``, a ``[profiles.NAME.bearing]`` table (``kind``, ``mu``, ``radius``,
    ``spacing``, ``printed``) and a ``[profiles.NAME.transmission]`` table
    (``rated_torque``, ``breakaway``, ``efficiency = {load_ratio, efficiency, kind}``,
    ``with_curve``: per-joint booleans), and at most one dynamic law: a
    ``[profiles.NAME.lugre]`` table (``sigma0``, ``coulomb``, ``static``,
    ``stribeck_velocity``, ``sigma1``, ``sigma2``) or ``[profiles.NAME.dahl]`` (``sigma0``,
    ``coulomb``, ``sigma2``), as :meth:`Bristles.lugre` / :meth:`Bristles.dahl` take them.
    """
    path = friction_file(str(source)) if friction_file(str(source)) else Path(source)
    if path.is_dir():
        raise ModelError(f"friction data file {str(path)!r} is a folder; give the TOML file")
    if not path.is_file():
        raise ModelError(f"friction data file {str(path)!r} does not exist")
    data = read_toml(path, ModelError, "friction data file")
    name = _profile_name(path, data, profile)
    where = f"friction data file {path.name}, profile {name!r}"
    robot, bundled = data.get("robot"), bundled_name(model)
    if robot is not None and robot not in (model.name, bundled):
        raise ModelError(f"friction data file {path.name} is for robot {robot!r}, not {model.name!r}: its numbers "
                         "belong to that robot's joints; give a file for this robot (or one without a robot key)")
    # a bundled robot with joints held (dp.lock_joints): the file's joints are the whole robot's
    whole = _whole_robot(model) if robot is not None and robot == bundled and model.held_joints else model
    try:
        friction = _from_profile(data["profiles"][name], whole, name, robot)
    except ModelError as exc:
        raise ModelError(f"{where}: {exc}") from None
    except (TypeError, KeyError, ValueError) as exc:   # a malformed entry that no check above names
        raise ModelError(f"{where}: malformed entry ({type(exc).__name__}: {exc})") from None
    if whole is not model:
        friction = _restricted(friction, [whole.joint_names.index(joint) for joint in model.joint_names], whole.n)
    friction.check_against(model)
    return friction


def _whole_robot(model):
    """The bundled robot a model with held joints was made from (its URDF file, fixed base)."""
    from ..robots import load_robot

    return load_robot(bundled_name(model))


def _restricted(value, kept: list, n: int):
    """``value`` (a friction model or one of its parts, for ``n`` joints) for the joints ``kept``
    only: each per-joint array and tuple (length n) indexed, each part likewise."""
    if not dataclasses.is_dataclass(value):
        return value
    changes = {}
    for field in dataclasses.fields(value):
        entry = getattr(value, field.name)
        if dataclasses.is_dataclass(entry):
            changes[field.name] = _restricted(entry, kept, n)
        elif isinstance(entry, np.ndarray) and entry.ndim >= 1 and entry.shape[0] == n:
            changes[field.name] = entry[kept]
        elif isinstance(entry, tuple) and len(entry) == n:
            changes[field.name] = tuple(entry[i] for i in kept)
    return dataclasses.replace(value, **changes)


def _profile_name(path: Path, data: dict, profile: Optional[str]) -> str:
    """The profile to read (``profile``, else the file's ``default_profile``), checked to be
    a table of the file's ``[profiles]``; ModelError naming the file otherwise."""
    profiles = data.get("profiles")
    if not isinstance(profiles, dict) or not profiles or \
            not all(isinstance(table, dict) for table in profiles.values()):
        raise ModelError(f"friction data file {path.name}: needs [profiles.NAME] tables of parameters, got "
                         f"profiles = {profiles!r}")
    names = ", ".join(profiles)
    if profile is None and "default_profile" not in data:
        raise ModelError(f"friction data file {path.name} has no default_profile: set one, or choose one of its "
                         f"profiles ({names}) with {argument('profile')}")
    name = data["default_profile"] if profile is None else profile
    if name not in profiles:
        raise ModelError(f"friction data file {path.name} has no profile {name!r}; profiles: {names}"
                         + (" (its default_profile names none of them)" if profile is None else ""))
    return name


VELOCITY_KEYS = ("viscous", "coulomb", "coulomb_negative", "static", "static_negative", "stribeck_velocity",
                 "smoothing")


def _from_profile(table: dict, model, name: str, robot: Optional[str]) -> FrictionModel:
    n = model.n
    unknown = set(table) - set(VELOCITY_KEYS) - {"armature", "armature_form", "bearing", "transmission",
                                                 "description", "source", *DYNAMIC_KEYS}
    if unknown:
        raise ModelError(f"unknown entries {sorted(unknown)}")
    for key in ("description", "source", "armature_form"):
        if not isinstance(table.get(key, ""), str):
            raise ModelError(f"{key} must be text, got {table[key]!r}")
    velocity = {k: table[k] for k in VELOCITY_KEYS if k in table}
    armature = table.get("armature", 0.0)
    if armature == "robot_table":
        armature = _motor_inertia(robot)
    bearing = table.get("bearing")
    _known_keys(name, "bearing", bearing, {"kind", "mu", "radius", "spacing", "printed"}, needed=("kind", "mu"))
    _known_keys(name, "transmission", table.get("transmission"), {"rated_torque", "breakaway", "efficiency",
                                                                 "with_curve"}, needed=("rated_torque", "efficiency"))
    if bearing is not None:
        bearing = BearingFriction.create(model, bearing["kind"], bearing["mu"], bearing.get("radius", 0.0),
                                         bearing.get("spacing", 0.0), bearing.get("printed", False))
    transmission = table.get("transmission")
    if transmission is not None:
        curve_table = transmission["efficiency"]
        _known_keys(name, "transmission.efficiency", curve_table, {"load_ratio", "efficiency", "kind"},
                    needed=("load_ratio", "efficiency"))
        curve = EfficiencyCurve(curve_table["load_ratio"], curve_table["efficiency"], curve_table.get("kind", "linear"))
        with_curve = transmission.get("with_curve", [True] * n)
        if isinstance(with_curve, dict):                  # {joint name: bool}, joints left out: with the curve
            _check_names("with_curve", with_curve, tuple(model.joint_names))
            with_curve = [with_curve.get(joint, True) for joint in model.joint_names]
        if not isinstance(with_curve, list) or not all(isinstance(use, bool) for use in with_curve):
            raise ModelError(f"[transmission]: with_curve must be true or false per joint (a list, or a table "
                             f"{{joint = true}}), got {transmission['with_curve']!r}")
        transmission = TransmissionFriction.create(model, [curve if use else None for use in with_curve],
                                                   transmission["rated_torque"], transmission.get("breakaway", 0.0))
    return FrictionModel.create(model, **velocity, bearing=bearing, transmission=transmission, armature=armature,
                                armature_form=table.get("armature_form", "diagonal"), name=name,
                                source=table.get("source", table.get("description", "")),
                                dynamic=_dynamic_law(name, table, model))


DYNAMIC_KEYS = {"lugre": {"sigma0", "coulomb", "static", "stribeck_velocity", "sigma1", "sigma2"},
                "dahl": {"sigma0", "coulomb", "sigma2"}}


def _dynamic_law(profile: str, table: dict, model) -> Optional[Bristles]:
    """The profile's ``[lugre]`` or ``[dahl]`` table as a :class:`Bristles` law, or None."""
    given = [law for law in DYNAMIC_KEYS if law in table]
    if len(given) > 1:
        raise ModelError(f"give one dynamic law, got tables {given}")
    if not given:
        return None
    law = given[0]
    _known_keys(profile, law, table[law], DYNAMIC_KEYS[law])
    return getattr(Bristles, law)(model, **table[law])


def _known_keys(profile: str, part: str, table, known: set, needed: tuple = ()) -> None:
    """ModelError unless ``table`` (the profile's ``[part]``, None when absent) is a table
    of ``known`` entries that gives every ``needed`` one."""
    if table is None:
        return
    if not isinstance(table, dict):
        raise ModelError(f"{part} must be a table [profiles.{profile}.{part}], got {table!r}")
    unknown, missing = set(table) - known, [key for key in needed if key not in table]
    if unknown:
        raise ModelError(f"[{part}]: unknown entries {sorted(unknown)}; known: {sorted(known)}")
    if missing:
        raise ModelError(f"[{part}]: missing {', '.join(missing)}")


def _motor_inertia(robot) -> list:
    """``armature = "robot_table"``: the motor_inertia column of the file's ``robot``, a bundled robot."""
    from ..robots import BUNDLED, robot_table

    if robot not in BUNDLED:
        raise ModelError(f"armature = \"robot_table\" reads the motor inertias of the file's robot, which must name a "
                         f"bundled robot ({', '.join(BUNDLED)}); got robot = {robot!r}")
    return [row.motor_inertia for row in robot_table(robot)["rows"]]


def resolve_friction(model, friction=None, profile: Optional[str] = None) -> FrictionModel:
    """What a friction backend uses: a FrictionModel as given; a path to a data file;
    ``"urdf"``; ``"none"``; or by default the bundled data file of a bundled robot
    (its default profile, or ``profile``), else the URDF's ``<dynamics>``."""
    if profile is not None and (isinstance(friction, FrictionModel) or friction in ("urdf", "none")):
        given = "a FrictionModel" if isinstance(friction, FrictionModel) else repr(friction)
        raise ModelError(f"{argument('profile', profile)} chooses a profile of a friction data file; friction "
                         f"{given} has none (give a data file, or no profile)")
    if isinstance(friction, FrictionModel):
        friction.check_against(model)
        return friction
    if friction is None:
        bundled = bundled_name(model)
        if bundled is not None and friction_file(bundled) is not None:
            return load_friction(bundled, model, profile)
        if profile is not None:
            raise ModelError(f"{argument('profile', profile)} needs a friction data file: {model.name!r} has no "
                             f"bundled one (give {argument('friction')})")
        return FrictionModel.from_urdf(model)
    if friction == "urdf":
        return FrictionModel.from_urdf(model)
    if friction == "none":
        return FrictionModel.none(model.n)
    if isinstance(friction, (str, os.PathLike)):
        return load_friction(friction, model, profile)
    raise ModelError(f"friction must be a FrictionModel, a data file, 'urdf' or 'none', got {friction!r}")
