"""Friction columns: the joint-friction terms that are linear in their parameters.

Terms (one column per joint and parameter; all parameters ≥ 0):

* ``"viscous"`` — b_v q̇ (``fv_<joint>``);
* ``"coulomb"`` — asymmetric dry friction c⁺ max(s, 0) + c⁻ min(s, 0) with s = sgn(q̇) or
  tanh(q̇/w) (``fc+_<joint>``, ``fc-_<joint>``, the magnitudes of the levels).  Dhanaraj's
  transmission breakaway τ_B has the same column, so c± identify Coulomb + τ_B;
* ``"armature"`` — a q̈ (``Ia_<joint>``), a diagonal (pinocchio-style) reflected rotor inertia;
* ``"bearing"`` — Dhanaraj's joint (bearing) friction s |τ_J|(f, n; μ) = μ · s |τ_J|(f, n; 1)
  (``mu_<joint>``, thesis eqs. 3.1-3.5): linear in μ once the joint reaction wrench (f, n)
  is known.  The wrench is computed with a *nominal* rigid-body model (the one given, by
  default the identified robot's own CAD values): friction does not change it
  (Gogoussis & Donath), but it depends on all the standard inertial parameters, not only
  on the identifiable base set.  The bearing geometry (kind, radius, spacing) is given,
  μ is identified.

* ``"load"`` — load-dependent friction without a bearing geometry: per joint, s times each
  load Dhanaraj's chapter 3 makes friction grow with (:func:`load_magnitudes`), the load
  read from the joint reaction wrench (f, n) of a given rigid-body model (:func:`identify`
  computes it from a first pass: the identified robot), a the joint axis:

  - ``radial_<joint>`` s |a × f|: a journal bearing's radial load (eqs. 3.1-3.2, μ r |F_N|);
    coefficient μ r (m);
  - ``bending_<joint>`` s |a × n|: the bending moment a pair of journals ``d`` apart reacts
    (eq. 3.3 at f⊥ = 0: 2 μ r |n⊥| / d); coefficient 2 μ r / d.  With both loads, eq. 3.3
    (rotation-invariant form, μ r (|½f⊥ + a × n⊥/d| + |½f⊥ − a × n⊥/d|)) lies between
    μ r max(|f⊥|, 2|n⊥|/d) and the sum of these two columns' terms (triangle inequality;
    equal when ½f⊥ ∥ a × n⊥): the separable sum is the form linear in parameters;
  - ``axial_<joint>`` s |a · f| (revolute joints): a thrust bearing's axial load (eq. 3.5,
    μ r |f_z|); coefficient μ r (m);
  - ``transmitted_<joint>`` s |a · n| (a prismatic joint: s |a · f|): the transmission's load.
    With a constant efficiency η, Table 3.2 gives τ_in − τ_out = (1/η − 1) |τ_out| s when
    motoring and (1 − η) |τ_out| s when back-driven; one coefficient for both (≈ 1 − η for
    η near 1).  Split into a motoring column s |τ_out| [s τ_out > 0] and a braking column
    s |τ_out| [s τ_out < 0], their difference is τ_out itself, the model's Y θ, in the span
    of the rigid-body columns: the asymmetry is not identifiable from torques (measured on
    the Panda log: condition number 7e15).

  A prismatic joint's linear bearing (eq. 3.4) carries the radial and bending loads (no
  axial column: its axial load is the transmitted force).  The coefficients are μ times the
  unknown geometry (radius, spacing), ≥ 0 like every friction parameter.  The loads come
  from the full standard parameters of the model given, not only the identifiable base set,
  so the first pass's completion nearest the nominal parameters is part of the load.

Dhanaraj's transmission efficiency η(|τ_out|/τ_rated) as a curve is not linear in any
parameter and is not identified here (the ``transmitted`` column is its constant-η form).

Low-passed torques (a prepared :class:`~.log.Log`): ``direction`` d, sgn(q̇) through the
torque's filter (:mod:`.log`), replaces s in the dry-friction and load columns: the
Coulomb columns are then the filtered indicators of motion, (1 + d)/2 and (d − 1)/2 (equal
to max(s, 0), min(s, 0) where d = ±1), and a load column d L, the filtered s L to first
order in L's change over the filter's ~1/f_c (L is smooth, s steps).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..friction.law import direction as sign_of_motion
from ..friction.models import BearingFriction
from ..kinematics import rotation_from_z

TERMS = ("viscous", "coulomb", "armature", "bearing", "load")
LOADS = ("radial", "bending", "axial", "transmitted")
"""The load columns of the ``"load"`` term, in their order per joint (the module says which is which)."""


def friction_terms(friction) -> tuple:
    """Normalise ``friction``: None/False/"none" → (), True → ("viscous", "coulomb"), a
    comma-separated string or a sequence of :data:`TERMS`."""
    if friction is None or friction is False or friction == "none":
        return ()
    if friction is True:
        return ("viscous", "coulomb")
    if isinstance(friction, str):
        friction = [part.strip() for part in friction.split(",") if part.strip()]
    terms = tuple(friction)
    unknown = [t for t in terms if t not in TERMS]
    if unknown:
        raise InputError(f"unknown friction term {unknown[0]!r}; choose from {', '.join(TERMS)}")
    return tuple(t for t in TERMS if t in terms)


def _bearing_geometry(bearing, model):
    if bearing is None:
        raise InputError("friction term 'bearing' needs the bearing geometry: bearing=FrictionModel or BearingFriction "
                         "(e.g. dp.load_friction('urdf/puma560_friction.toml', model, profile='dhanaraj'))")
    bearing = getattr(bearing, "bearing", bearing)
    if not isinstance(bearing, BearingFriction) or bearing.n != model.n:
        raise InputError(f"bearing must be a BearingFriction (or a FrictionModel with one) for the {model.n} joints "
                         f"of {model.name!r}, got {bearing!r}")
    return bearing


def load_magnitudes(model, loads, q, qd, qdd) -> dict:
    """{kind: (N, n)} for each of :data:`LOADS`: the magnitudes of the loads on the joints of
    ``model`` at the states (N, n), from the joint reaction wrenches of the rigid-body model
    ``loads`` (Newton-Euler's backward pass, ``joint_wrenches``; N and N·m): radial |a × f|,
    bending |a × n|, axial |a · f| (0 at a prismatic joint) and transmitted |a · n| (a
    prismatic joint: |a · f|), a the joint axis (unit, joint frame)."""
    from ..backends import get_backend

    if getattr(loads, "joint_names", None) != model.joint_names:
        raise InputError(f"loads must be a robot model of {model.name!r} with its joints "
                         f"({', '.join(model.joint_names)}) whose joint wrenches load them, got {loads!r:.80}")
    N, n = q.shape
    f, moment = get_backend("newton_euler", loads).joint_wrenches(q, qd, qdd)
    f, moment = f.reshape(N, n, 3), moment.reshape(N, n, 3)
    axes = np.asarray(model.axes, dtype=float)[None]
    along_f, along_n = np.sum(axes * f, axis=-1), np.sum(axes * moment, axis=-1)
    revolute = model.is_revolute[None, :]
    return {"radial": np.linalg.norm(np.cross(axes, f), axis=-1),
            "bending": np.linalg.norm(np.cross(axes, moment), axis=-1),
            "axial": np.where(revolute, np.abs(along_f), 0.0),
            "transmitted": np.abs(np.where(revolute, along_n, along_f))}


def friction_columns(model, q, qd, qdd, terms, bearing=None, nominal=None, smoothing: float = 0.0, loads=None,
                     direction=None):
    """Columns (N, n, F) and their names (F,) of the friction ``terms`` for states (N, n);
    ``loads``: the rigid-body model whose joint wrenches load the ``"load"`` columns;
    ``direction``: (N, n) in [−1, 1], the low-passed sgn(q̇) of a filtered log, used instead
    of sgn(q̇) (see the module; ``smoothing`` must then be 0)."""
    N, n = q.shape
    columns, names = [], []
    s = motion_direction(qd, smoothing, direction)
    joints = model.joint_names

    def per_joint(values, prefix):
        for j in range(n):
            column = np.zeros((N, n))
            column[:, j] = values[:, j]
            columns.append(column)
            names.append(f"{prefix}_{joints[j]}")

    if "viscous" in terms:
        per_joint(qd, "fv")
    if "coulomb" in terms:
        for j in range(n):
            for sign, prefix in ((1, "fc+"), (-1, "fc-")):
                column = np.zeros((N, n))
                if direction is None:
                    column[:, j] = np.maximum(s[:, j], 0.0) if sign > 0 else np.minimum(s[:, j], 0.0)
                else:                     # the filtered indicator of moving that way
                    column[:, j] = 0.5 * (s[:, j] + sign)
                columns.append(column)
                names.append(f"{prefix}_{joints[j]}")
    if "armature" in terms:
        per_joint(qdd, "Ia")
    if "bearing" in terms:
        geometry = _bearing_geometry(bearing, model)
        unit = BearingFriction(geometry.kinds, np.ones(n), geometry.radius, geometry.spacing, geometry.printed)
        from ..backends import get_backend

        wrenches = get_backend("newton_euler", nominal if nominal is not None else model)
        f, moment = wrenches.joint_wrenches(q, qd, qdd)
        f, moment = f.reshape(N, n, 3), moment.reshape(N, n, 3)
        to_axis = np.stack([rotation_from_z(axis) for axis in model.axes])
        magnitude = unit.magnitude(np.einsum("nji,Nnj->Nni", to_axis, f), np.einsum("nji,Nnj->Nni", to_axis, moment))
        for j, kind in enumerate(geometry.kinds):
            if kind != "none":
                column = np.zeros((N, n))
                column[:, j] = s[:, j] * magnitude[:, j]
                columns.append(column)
                names.append(f"mu_{joints[j]}")
    if "load" in terms:
        if loads is None:
            raise InputError("friction term 'load' needs the robot model whose joint reaction wrenches load the joints: "
                             "loads=RobotModel (identify computes it from a first pass when not given)")
        magnitude = load_magnitudes(model, loads, q, qd, qdd)
        for j in range(n):
            for kind in LOADS:
                if kind == "axial" and not model.is_revolute[j]:
                    continue
                column = np.zeros((N, n))
                column[:, j] = s[:, j] * magnitude[kind][:, j]
                columns.append(column)
                names.append(f"{kind}_{joints[j]}")
    if not columns:
        return np.zeros((N, n, 0)), ()
    return np.stack(columns, axis=-1), tuple(names)


def motion_direction(qd, smoothing: float = 0.0, direction=None) -> np.ndarray:
    """s (N, n): sgn(q̇) or tanh(q̇/``smoothing``) (:func:`dyn_plugin.friction.law.direction`),
    or ``direction`` as given (a low-passed sgn(q̇): about [−1, 1], a few % beyond where
    the filter rings), checked: the shape of q̇, finite, ``smoothing`` 0."""
    if direction is None:
        return sign_of_motion(qd, smoothing)
    d = np.asarray(direction, dtype=float)
    if d.shape != np.shape(qd):
        raise InputError(f"direction must have the shape of qd {np.shape(qd)} (one column per joint), got {d.shape}")
    if not np.all(np.isfinite(d)):
        i, j = (int(k[0]) for k in np.nonzero(~np.isfinite(d)))
        raise InputError(f"direction has a non-finite value ({d[i, j]}) at sample {i}, column {j} (0-based)")
    if smoothing:
        raise InputError(f"give smoothing (a tanh friction law) or a direction (a filtered log), not both "
                         f"(smoothing={smoothing!r})")
    return d


def friction_truth(friction, model, terms) -> dict:
    """The values a :class:`~dyn_plugin.friction.parameters.FrictionModel` gives the friction
    parameters of ``terms`` (names as :func:`friction_columns`'), for comparisons: Coulomb
    levels include the transmission breakaway τ_B."""
    out = {}
    joints = model.joint_names
    breakaway = friction.breakaway if friction.breakaway is not None else np.zeros(model.n)
    for j, joint in enumerate(joints):
        if "viscous" in terms:
            out[f"fv_{joint}"] = float(friction.velocity.viscous[j])
        if "coulomb" in terms:
            out[f"fc+_{joint}"] = float(friction.velocity.coulomb_positive[j] + breakaway[j])
            out[f"fc-_{joint}"] = float(friction.velocity.coulomb_negative[j] + breakaway[j])
        if "armature" in terms:
            out[f"Ia_{joint}"] = float(friction.armature[j]) if friction.armature_form == "diagonal" else 0.0
        if "bearing" in terms and friction.bearing is not None and friction.bearing.kinds[j] != "none":
            out[f"mu_{joint}"] = float(friction.bearing.mu[j])
    return out
