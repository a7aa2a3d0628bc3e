"""Denavit-Hartenberg tables in: standard (Fu, Schilling) and modified (Craig, Dhanaraj).

Standard DH, row i = (θ_i, d_i, a_i, α_i):  ⁱ⁻¹A_i = RotZ(θ) TransZ(d) TransX(a) RotX(α)
(Fu 3.2-5).  Frame i sits at the distal end of link i; joint i acts along z_{i−1}.

Modified DH, row i = (α_{i−1}, a_{i−1}, θ_i, d_i):  ⁱ⁻¹T_i = RotX(α) TransX(a) RotZ(θ) TransZ(d)
(Craig; Dhanaraj eq. 2.2).  Frame i sits at joint i, whose axis is z_i.

Either way the joint variable adds to θ (revolute) or d (prismatic), and the mass, centre
of mass and inertia (about the COM) of link i are given in DH frame i.  The model's link
frame is the proximal joint frame (as URDF): for modified DH it *is* DH frame i; for
standard DH it is frame i−1 moved by joint i, and DH frame i is reached from it by the
constant rest of the row, RotZ(θ₀) TransZ(d₀) TransX(a) RotX(α).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .datafile import read_toml
from .errors import ModelError
from .kinematics import PRISMATIC, REVOLUTE, make_transform, rot_x, rot_z
from .model import DEFAULT_GRAVITY, RobotModel, check_link_inertia, gravity_vector

CONVENTIONS = ("standard", "modified")


@dataclasses.dataclass(frozen=True)
class DHRow:
    """One link of a DH table (SI units; see the module docstring for the conventions).

    ``theta`` is the offset added to q for a revolute joint and the constant angle for a
    prismatic one; ``d`` likewise.  ``motor_inertia`` is the rotor inertia reflected to the
    joint (J_m G², kg·m²; kg for a prismatic joint): the model's :attr:`RobotModel.armature`.  ``inertia`` is [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] about the
    centre of mass in DH frame i, or a 3x3 tensor.
    """

    joint: str
    alpha: float
    a: float
    d: float
    theta: float
    mass: float
    com: Sequence[float] = (0.0, 0.0, 0.0)
    inertia: Sequence = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    lower: float = -np.inf
    upper: float = np.inf
    velocity: float = np.inf
    effort: float = np.inf
    name: Optional[str] = None
    joint_name: Optional[str] = None
    motor_inertia: float = 0.0

    def inertia_tensor(self) -> np.ndarray:
        I = np.asarray(self.inertia, dtype=float)
        if I.shape == (3, 3):
            return I
        if I.shape != (6,):
            raise ModelError(f"link {self.name!r}: inertia must be [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] or 3x3, got shape {I.shape}")
        xx, yy, zz, xy, xz, yz = I
        return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def _trans(x=0.0, z=0.0) -> np.ndarray:
    return make_transform(np.eye(3), [x, 0.0, z])


def _rx(angle) -> np.ndarray:
    return make_transform(rot_x(angle), np.zeros(3))


def _rz(angle) -> np.ndarray:
    return make_transform(rot_z(angle), np.zeros(3))


def model_from_dh(rows: Sequence[DHRow], convention: str, name: str = "dh_robot",
                  gravity=DEFAULT_GRAVITY, strict: bool = True) -> RobotModel:
    """Build a serial :class:`RobotModel` from DH rows (base outward).

    Parameters
    ----------
    rows : sequence of :class:`DHRow`
    convention : ``"standard"`` or ``"modified"``
    strict : a triangle-inequality break is an error (True) or a warning (False).
    """
    if convention not in CONVENTIONS:
        raise ModelError(f"DH convention must be one of {CONVENTIONS}, got {convention!r}")
    rows = [dataclasses.replace(r, name=r.name or f"link{i + 1}", joint_name=r.joint_name or f"joint{i + 1}")
            for i, r in enumerate(rows)]
    placements, link_from_dh = [], []
    previous_rest = np.eye(4)  # standard DH: DH frame i-1 seen from link i-1's joint frame
    for row in rows:
        if row.joint not in (REVOLUTE, PRISMATIC):
            raise ModelError(f"link {row.name!r}: joint must be 'revolute' or 'prismatic', got {row.joint!r}")
        if not row.lower < row.upper:
            raise ModelError(f"link {row.name!r}: joint limits need lower < upper, got [{row.lower}, {row.upper}]")
        if convention == "modified":
            placements.append(_rx(row.alpha) @ _trans(x=row.a) @ _rz(row.theta) @ _trans(z=row.d))
            link_from_dh.append(np.eye(4))
        else:
            rest = _rz(row.theta) @ _trans(z=row.d) @ _trans(x=row.a) @ _rx(row.alpha)
            placements.append(previous_rest)
            link_from_dh.append(rest)
            previous_rest = rest
    coms, inertias = [], []
    for row, X in zip(rows, link_from_dh):
        inertia = row.inertia_tensor()
        check_link_inertia(row.name, row.mass, inertia, strict=strict, where=" (DH table)")
        coms.append(X[:3, :3] @ np.asarray(row.com, dtype=float) + X[:3, 3])
        inertias.append(X[:3, :3] @ inertia @ X[:3, :3].T)
    n = len(rows)

    def field(attr):
        return np.array([getattr(r, attr) for r in rows], dtype=float)

    return RobotModel(
        name=name,
        joint_names=tuple(r.joint_name for r in rows),
        link_names=tuple(r.name for r in rows),
        joint_types=tuple(r.joint for r in rows),
        parents=np.arange(n) - 1,
        joint_rotations=np.array([X[:3, :3] for X in placements]).reshape(n, 3, 3),
        joint_positions=np.array([X[:3, 3] for X in placements]).reshape(n, 3),
        axes=np.tile([0.0, 0.0, 1.0], (n, 1)),
        masses=field("mass"), coms=np.array(coms).reshape(n, 3), inertias=np.array(inertias).reshape(n, 3, 3),
        lower=field("lower"), upper=field("upper"), velocity_limits=field("velocity"),
        effort_limits=field("effort"), damping=np.zeros(n), friction=np.zeros(n),
        continuous=np.zeros(n, dtype=bool), gravity=gravity_vector(gravity), armature=field("motor_inertia"),
    )


ROW_KEYS = {f.name for f in dataclasses.fields(DHRow)}


def read_dh_table(path) -> dict:
    """Read a robot table (TOML: ``name``, ``convention``, ``[[links]]`` rows with the fields of
    :class:`DHRow`; e.g. ``dyn_plugin/bundled/puma560.toml``).

    Returns the parsed document with ``rows`` added: a list of :class:`DHRow`.
    """
    path = Path(path)
    doc = read_toml(path, ModelError, "robot table")
    for key in ("name", "convention", "links"):
        if key not in doc:
            raise ModelError(f"{path}: missing top-level key {key!r}")
    rows = []
    for i, link in enumerate(doc["links"]):
        unknown = set(link) - ROW_KEYS
        if unknown:
            raise ModelError(f"{path}: [[links]] number {i + 1} has unknown keys {sorted(unknown)}; known: {sorted(ROW_KEYS)}")
        try:
            rows.append(DHRow(**link))
        except TypeError as exc:
            raise ModelError(f"{path}: [[links]] number {i + 1}: {exc}") from None
    doc["rows"] = rows
    return doc


def model_from_table(path, gravity=DEFAULT_GRAVITY) -> RobotModel:
    """A strict (physically valid) model from a TOML robot table."""
    doc = read_dh_table(path)
    return model_from_dh(doc["rows"], doc["convention"], name=doc["name"], gravity=gravity, strict=True)
