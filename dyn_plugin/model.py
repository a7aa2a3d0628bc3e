"""RobotModel: the immutable kinematic tree every algorithm reads.

A model has ``n`` moving joints (revolute or prismatic; fixed joints are merged into
their parent link when the model is built).  Joint ``i`` connects link ``parents[i]``
(``-1`` = the fixed base) to link ``i``: link ``i``'s frame is joint ``i``'s frame,
moving with the joint.  Indices follow pinocchio's order: depth-first from the root,
children sorted by joint name (urdfdom keeps joints in a name-sorted map).

All per-joint data are numpy arrays indexed by joint, made read-only.  Validity checks
(mass, inertia) live here; messages name the link and the violated condition.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Optional

import numpy as np

from .arrays import real_number
from .errors import InputError, ModelError, PhysicalValidityWarning
from .joints import KINDS, MULTI_DOF
from .kinematics import PRISMATIC, REVOLUTE

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
INERTIA_ROUND_OFF = 1e-18  # kg·m²: principal moments this close to zero are zero (see check_link_inertia)


@dataclasses.dataclass(frozen=True, eq=False)
class Frame:
    """A named frame fixed to one rigid body of the model: a URDF link at its link origin.

    ``link`` is the moving link (one of :attr:`RobotModel.link_names`) the frame moves
    with, or the base link (:attr:`RobotModel.base_link`) for the base and the links fixed
    to it; ``rotation`` (3, 3) and ``position`` (3,) m place the frame in that link's frame
    (``x_link = rotation @ x_frame + position``).  A link merged into its parent by fixed
    joints (a ``tool0``, a camera mount) is a frame of the parent with the fixed joints'
    placements composed; every other link is its own frame at the identity.  The link is
    named rather than numbered so that a model whose links are renumbered keeps its
    frames right (the free-flyer chain of :mod:`dyn_plugin.floating` puts six joints
    before them; there the base link's frames name no link, and :meth:`RobotModel.frame`
    says so)."""

    name: str
    link: str
    rotation: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(3))
    position: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        for key, shape in (("rotation", (3, 3)), ("position", (3,))):
            value = np.array(getattr(self, key), dtype=float)
            if value.shape != shape or not np.all(np.isfinite(value)):
                raise ModelError(f"frame {self.name!r}: {key} must be finite numbers of shape {shape}")
            value.setflags(write=False)
            object.__setattr__(self, key, value)


@dataclasses.dataclass(frozen=True, eq=False)
class Payload:
    """A rigid payload added by :meth:`RobotModel.with_payload`: the link ``name`` fixed at
    the origin of ``frame``, of ``mass`` (kg), centre of mass ``com`` (3,) m and inertia
    ``inertia`` (3, 3) kg·m² about it, both in the frame's axes.  The model's inertias
    already include it; the record is what :func:`dyn_plugin.urdf.urdf_text` writes into
    the URDF the reference engines load."""

    name: str
    frame: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray


def gravity_vector(gravity) -> np.ndarray:
    """``gravity`` as a float array (3,), m/s²: three finite real numbers, else a ModelError
    (a complex one is refused, not cut to its real part with a warning)."""
    g = None if isinstance(gravity, (str, bytes)) else np.asarray(gravity, dtype=object)
    if g is None or g.shape != (3,) or not all(real_number(x) and np.isfinite(x) for x in g):
        raise ModelError(f"gravity must be 3 finite real numbers (m/s²), got {gravity!r}")
    return g.astype(float)


@dataclasses.dataclass(frozen=True, eq=False)
class RobotModel:
    """Immutable fixed-base kinematic tree with rigid-body inertias.

    Attributes (n = number of moving joints)
    ----------------------------------------
    name : str
    joint_names, link_names : tuple[str, ...] of length n
        Link ``i`` is the child of joint ``i``.
    joint_types : tuple[str, ...]
        ``"revolute"`` (also URDF continuous), ``"prismatic"``, or a joint of several degrees of
        freedom, ``"spherical"``, ``"planar"`` or ``"floating"`` (:mod:`dyn_plugin.joints`: its
        entries of q and v, its conventions; its ``axes`` row is unused, ẑ).
    parents : (n,) int array
        Index of the parent link of joint ``i``, ``-1`` for the base.
    joint_rotations, joint_positions : (n, 3, 3), (n, 3)
        Rest placement of joint ``i``'s frame in its parent link's frame.
    axes : (n, 3)
        Unit joint axes in the joint frame.
    masses : (n,) kg;  coms : (n, 3) m, in the link frame;
    inertias : (n, 3, 3) kg m², about the centre of mass, link-frame axes.
    lower, upper : (n,) joint limits (rad or m), ``-inf``/``inf`` where none.
    velocity_limits, effort_limits : (n,), ``inf`` where none.
    damping, friction : (n,) URDF ``<dynamics>`` values (viscous, Coulomb), 0 if absent.
    gravity : (3,) m/s², physical gravity in the base frame (default (0, 0, -9.81)).
    continuous : (n,) bool, revolute joints without limits (URDF ``continuous``).
    source_urdf, source_path : str or None
        The URDF text (and file) the model was read from, so that the reference engines
        load exactly the same description (and find its meshes).
    links_without_inertial : tuple[str, ...]
        URDF links (other than the base) with no ``<inertial>``: 0 kg here and in
        pinocchio, 1 kg with unit inertia in pybullet.
    base_links_without_inertial : tuple[str, ...]
        The same among the base link and the links fixed to it (they move with a floating base).
    floating_base : bool
        The base link moves freely (pinocchio's ``JointModelFreeFlyer`` at the root):
        q = [base position (3) m, base orientation as a unit quaternion (x, y, z, w),
        joint positions (n)] (``nq = n + 7``), velocities and accelerations
        [linear (3), angular (3) velocity of the base in the base frame, joint rates (n)]
        (``nv = n + 6``); τ's first 6 entries are the force and moment on the base, base
        frame.  Gravity is then given in the world frame.  See :mod:`dyn_plugin.floating`.
    base_mass : kg;  base_com : (3,) m;  base_inertia : (3, 3) kg m² about the centre of mass
        The base link's inertial data (with the links fixed to it), in the base frame:
        they matter only for a floating base.
    mimic : tuple[dyn_plugin.mimic.Mimic, ...]
        Joints that follow another (URDF ``<mimic>``) when loaded with ``mimic=True``:
        they are not coordinates (``nq``, ``nv`` and the names leave them out; see
        :mod:`dyn_plugin.mimic`).  Empty by default: every joint is independent.
    payloads : tuple[Payload, ...]
        What :meth:`with_payload` added, in order (already in the inertias above).
    held_joints : tuple[(str, float), ...]
        Joints of the source URDF held fixed by :func:`dyn_plugin.locking.lock_joints`, with
        their values (rad or m), in the order held (they are no longer joints of the model).
    frames : tuple[Frame, ...]
        Every URDF link as a :class:`Frame`, in the order of the tree walk (depth-first,
        as pinocchio's frames), links merged through fixed joints included.  Empty for a
        model not read from a URDF: the frames are then the base link's and each
        moving link's own (:attr:`frame_names`, :meth:`frame`).
    armature : (n,) kg·m² (kg for a prismatic joint), ≥ 0
        Reflected rotor inertia on M's diagonal (τ gains armature · q̈), as pinocchio's
        ``model.armature``: a DH table's ``motor_inertia`` column (:func:`~dyn_plugin.dh.model_from_dh`).
        Zeros by default (URDF has no element for it).  Every backend of ours and the
        pinocchio backend apply it; a backend that cannot (pybullet, generated code) refuses
        a model with armature rather than leave it out (:func:`~dyn_plugin.backends.get_backend`).
    """

    name: str
    joint_names: tuple
    link_names: tuple
    joint_types: tuple
    parents: np.ndarray
    joint_rotations: np.ndarray
    joint_positions: np.ndarray
    axes: np.ndarray
    masses: np.ndarray
    coms: np.ndarray
    inertias: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity_limits: np.ndarray
    effort_limits: np.ndarray
    damping: np.ndarray
    friction: np.ndarray
    continuous: np.ndarray
    gravity: np.ndarray = dataclasses.field(default_factory=lambda: np.array(DEFAULT_GRAVITY))
    source_urdf: Optional[str] = None
    source_path: Optional[str] = None
    links_without_inertial: tuple = ()
    base_links_without_inertial: tuple = ()
    base_link: str = "base_link"
    floating_base: bool = False
    base_mass: float = 0.0
    base_com: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
    base_inertia: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((3, 3)))
    mimic: tuple = ()
    frames: tuple = ()
    payloads: tuple = ()
    held_joints: tuple = ()
    armature: Optional[np.ndarray] = None

    def __post_init__(self):
        armature = np.zeros(len(self.joint_names)) if self.armature is None else self.armature
        object.__setattr__(self, "armature", np.asarray(armature, dtype=float))
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, np.ndarray):
                value = np.array(value, dtype=bool if field.name == "continuous" else
                                 int if field.name == "parents" else float)
                value.setflags(write=False)
                object.__setattr__(self, field.name, value)
        self._check_structure()

    # -- derived facts -------------------------------------------------------------

    @property
    def n(self) -> int:
        """Number of moving joints (degrees of freedom)."""
        return len(self.joint_names)

    @property
    def nq(self) -> int:
        """Length of a configuration q: the independent joints (n without mimic joints), 7 more
        with a floating base.  A continuous joint (URDF ``continuous``, :attr:`continuous`) is
        one coordinate, its angle in rad, where pinocchio's ``model.nq`` counts two, (cos, sin):
        pinocchio's nq exceeds ours by the number of continuous joints (its ``nv`` equals ours)."""
        return len(self.configuration_names)

    @property
    def nv(self) -> int:
        """Length of a velocity, acceleration or τ: the independent joints, 6 more with a floating base."""
        return len(self.velocity_names)

    @functools.cached_property
    def independent_indices(self) -> np.ndarray:
        """Joint indices (int array) of the joints that are coordinates: all but the mimic joints."""
        following = {relation.joint for relation in self.mimic}
        indices = np.array([i for i, name in enumerate(self.joint_names) if name not in following], dtype=int)
        indices.setflags(write=False)                 # cached: the model never changes
        return indices

    @functools.cached_property
    def independent_joints(self) -> tuple:
        """Names of the joints that are coordinates (:attr:`independent_indices`)."""
        return tuple(self.joint_names[i] for i in self.independent_indices)

    @functools.cached_property
    def configuration_names(self) -> tuple:
        """Names of q's entries (nq): the independent joints', after the base's 7 with a
        floating base; a joint of several degrees of freedom has one per entry, its name
        and a suffix (``shoulder.qx`` …, :data:`dyn_plugin.joints.KINDS`)."""
        base = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw")
        return (base if self.floating_base else ()) + self._entry_names("q_names")

    @functools.cached_property
    def velocity_names(self) -> tuple:
        """Names of q̇'s, q̈'s and τ's entries (nv): the independent joints', after the base's 6
        with a floating base (as :attr:`configuration_names`)."""
        base = ("base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz")
        return (base if self.floating_base else ()) + self._entry_names("v_names")

    def _entry_names(self, which: str) -> tuple:
        return tuple(self.joint_names[i] + suffix for i in self.independent_indices
                     for suffix in getattr(KINDS[self.joint_types[i]], which))

    @functools.cached_property
    def multi_dof_indices(self) -> tuple:
        """Indices of the joints of several degrees of freedom (spherical, planar, floating)."""
        return tuple(i for i, kind in enumerate(self.joint_types) if kind in MULTI_DOF)

    @functools.cached_property
    def joint_slices(self) -> tuple:
        """Per joint, ``(q slice, v slice)`` of its entries in q (nq) and in v (nv), or None for
        a mimic joint (it is no coordinate); after the base's entries with a floating base."""
        q, v = (7, 6) if self.floating_base else (0, 0)
        following = {relation.joint for relation in self.mimic}
        out = []
        for name, kind in zip(self.joint_names, self.joint_types):
            if name in following:
                out.append(None)
                continue
            out.append((slice(q, q + KINDS[kind].nq), slice(v, v + KINDS[kind].nv)))
            q, v = q + KINDS[kind].nq, v + KINDS[kind].nv
        return tuple(out)

    def neutral(self) -> np.ndarray:
        """The neutral configuration (nq,), pinocchio's ``neutral``: the base at the origin with
        the identity orientation, every joint at 0 (a quaternion at the identity)."""
        q = np.zeros(self.nq)
        if self.floating_base:
            q[6] = 1.0
        for i, slices in enumerate(self.joint_slices):
            if slices is not None:
                q[slices[0]] = KINDS[self.joint_types[i]].neutral
        return q

    @property
    def frame_names(self) -> tuple:
        """Names of the frames (:attr:`frames`): every URDF link, the base link and links merged
        through fixed joints included; the base link and the moving links for a model with
        no recorded frames."""
        return tuple(frame.name for frame in self._frame_list())

    def _frame_list(self) -> tuple:
        """:attr:`frames`, or by default the base link's and each moving link's own frame."""
        return self.frames or tuple(Frame(name, name) for name in (self.base_link,) + self.link_names)

    def frame(self, name: str) -> tuple:
        """``(body, rotation (3, 3), position (3,) m)`` of frame ``name``: ``body`` the index of
        the moving link it is fixed to (-1: the base), the rotation and position its
        placement in that link's frame.  An :class:`InputError` lists the valid names for
        an unknown one."""
        frames = self._frame_list()
        found = next((frame for frame in frames if frame.name == name), None) if isinstance(name, str) else None
        if found is None:
            raise InputError(f"robot {self.name!r} has no frame {name!r}; its frames are: "
                             + ", ".join(repr(frame.name) for frame in frames))
        if found.link == self.base_link:
            return -1, found.rotation, found.position
        if found.link not in self.link_names:
            raise ModelError(f"model {self.name!r}: frame {name!r} is fixed to link {found.link!r}, which is neither "
                             f"a moving link nor the base link {self.base_link!r}")
        return self.link_names.index(found.link), found.rotation, found.position

    def require_fixed_joint_space(self, what: str,
                                  hint: str = "use dyn_plugin.get_backend(name, model), which handles it") -> None:
        """Raise a ModelError when this model's coordinates are not its joints (joints of
        several degrees of freedom, a floating base or mimic joints), for ``what`` works on
        joint positions alone; ``hint`` ends the message (where else to go)."""
        ending = f": {hint}" if hint else ""
        if self.multi_dof_indices:
            i = self.multi_dof_indices[0]
            raise ModelError(f"{what} takes one-degree-of-freedom joints; joint {self.joint_names[i]!r} of robot "
                             f"{self.name!r} is {self.joint_types[i]}{ending}")
        if self.floating_base or self.mimic:
            kind = "a floating base" if self.floating_base else "mimic joints"
            raise ModelError(f"{what} takes the joints of a fixed-base robot; {self.name!r} has {kind}{ending}")

    def without_mimic(self) -> "RobotModel":
        """The same robot with every joint independent (the full coordinates)."""
        return dataclasses.replace(self, mimic=()) if self.mimic else self

    @property
    def is_revolute(self) -> np.ndarray:
        """(n,) bool: True for revolute joints."""
        return np.array([t == REVOLUTE for t in self.joint_types])

    def ancestors(self, i: int) -> list:
        """Joints on the path from the base to joint ``i``, ``i`` included, base first."""
        path = []
        while i >= 0:
            path.append(i)
            i = int(self.parents[i])
        return path[::-1]

    def with_gravity(self, gravity) -> "RobotModel":
        """A copy of the model with another gravity vector (3,), m/s² (:func:`gravity_vector`)."""
        return dataclasses.replace(self, gravity=gravity_vector(gravity))

    def with_floating_base(self, floating: bool = True) -> "RobotModel":
        """The same robot with a free-flying base (or fixed again with ``False``)."""
        return dataclasses.replace(self, floating_base=bool(floating))

    def with_payload(self, frame: str, mass: float, com=(0.0, 0.0, 0.0), inertia=None) -> "RobotModel":
        """A copy of the model with a rigid payload fixed to ``frame`` (one of :attr:`frame_names`):
        ``mass`` (kg, >= 0), its centre of mass ``com`` (3,) m in the frame, and ``inertia``
        (3, 3) kg·m² about that centre in the frame's axes (None: a point mass).  The payload
        joins the body the frame is fixed to (mass, centre of mass and inertia combined by the
        parallel-axis theorem); on the base link it joins the base's inertial data, which
        move only with a floating base (a fixed base holds the payload without any torque).

        The payload is a link ``<frame>_payload`` fixed at the frame's origin, a new frame of
        a model read from URDF, and a record in :attr:`payloads` from which
        :func:`dyn_plugin.urdf.urdf_text` writes it into the URDF the reference engines load.
        An inertia that breaks the triangle inequality is warned about, as the URDF loader
        does (:func:`check_link_inertia`)."""
        from .kinematics import parallel_axis

        body, rotation, position = self.frame(frame)       # an unknown name lists the valid ones
        at = f"payload at frame {frame!r} of robot {self.name!r}"
        try:
            m = float(mass)
            c = np.array(com, dtype=float)
            I = np.zeros((3, 3)) if inertia is None else np.array(inertia, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{at}: mass must be a number (kg), com 3 numbers (m), inertia (3, 3) numbers "
                             f"(kg·m²) or None; got {mass!r}, {com!r}, {inertia!r}") from None
        if c.shape != (3,) or I.shape != (3, 3):
            raise InputError(f"{at}: com must have shape (3,) (m, in the frame) and inertia (3, 3) (kg·m², about "
                             f"the centre of mass, frame axes); got shapes {c.shape} and {I.shape}")
        if not (np.isfinite(m) and np.all(np.isfinite(c)) and np.all(np.isfinite(I))):
            raise InputError(f"{at}: mass, com and inertia must be finite, got {mass!r}, {c.tolist()}, {I.tolist()}")
        name = self._free_frame_name(f"{frame}_payload")
        check_link_inertia(name, m, I, where=f" ({at})")
        c_body, I_body = rotation @ c + position, rotation @ I @ rotation.T

        def combined(m1, c1, I1):
            total = m1 + m
            if total == 0:
                return total, np.array(c1, dtype=float), I1 + I_body
            centre = (m1 * c1 + m * c_body) / total
            return total, centre, (I1 + parallel_axis(m1, c1 - centre) + I_body + parallel_axis(m, c_body - centre))

        changes = {}
        if body >= 0:
            masses, coms, inertias = self.masses.copy(), self.coms.copy(), self.inertias.copy()
            masses[body], coms[body], inertias[body] = combined(masses[body], coms[body], inertias[body])
            changes.update(masses=masses, coms=coms, inertias=inertias)
        else:
            changes["base_mass"], changes["base_com"], changes["base_inertia"] = combined(
                self.base_mass, self.base_com, self.base_inertia)
        changes["payloads"] = self.payloads + (Payload(name, frame, m, c, I),)
        if self.frames:
            owner = self.base_link if body < 0 else self.link_names[body]
            changes["frames"] = self.frames + (Frame(name, owner, rotation, position),)
        return dataclasses.replace(self, **changes)

    def _free_frame_name(self, wanted: str) -> str:
        """``wanted``, or ``wanted_1``, ``wanted_2``… : the first that names no frame or link."""
        taken = set(self.frame_names) | set(self.link_names) | {payload.name for payload in self.payloads}
        name, k = wanted, 1
        while name in taken:
            name, k = f"{wanted}_{k}", k + 1
        return name

    def inertial_parameters(self, flat: bool = False) -> np.ndarray:
        """The inertial parameters θ of every moving link, (n, 10), or (10 n,) with ``flat``:
        per link, pinocchio's order (``pin.Inertia.toDynamicParameters``)
        [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz] (kg, kg·m, kg·m²), the
        inertia about the link frame origin in link axes (I_c + m [c]× [c]×ᵀ), so that
        τ = Y θ with Y from :meth:`dyn_plugin.Backend.regressor`."""
        from .kinematics import parallel_axis

        inertia = self.inertias + parallel_axis(self.masses, self.coms)
        theta = np.column_stack([self.masses, self.masses[:, None] * self.coms,
                                 inertia[:, 0, 0], inertia[:, 0, 1], inertia[:, 1, 1],
                                 inertia[:, 0, 2], inertia[:, 1, 2], inertia[:, 2, 2]]).reshape(self.n, 10)
        return theta.ravel() if flat else theta

    def total_mass(self) -> float:
        """Mass of the moving links, and of the base when it floats (kg)."""
        return float(self.masses.sum()) + (self.base_mass if self.floating_base else 0.0)

    def __repr__(self) -> str:
        kinds = "".join({REVOLUTE: "R", PRISMATIC: "P"}.get(t, f"[{t}]") for t in self.joint_types)
        base = ", floating base" if self.floating_base else ""
        return f"RobotModel({self.name!r}, n={self.n}, joints={kinds}{base}, mass={self.total_mass():.3f} kg)"

    # -- validity ------------------------------------------------------------------

    def _check_structure(self):
        n = self.n
        shapes = {
            "link_names": (len(self.link_names),), "parents": self.parents.shape,
            "joint_rotations": self.joint_rotations.shape[1:] if n else (3, 3),
            "axes": self.axes.shape, "masses": self.masses.shape, "coms": self.coms.shape,
            "inertias": self.inertias.shape, "armature": self.armature.shape,
        }
        expected = {
            "link_names": (n,), "parents": (n,), "joint_rotations": (3, 3), "axes": (n, 3),
            "masses": (n,), "coms": (n, 3), "inertias": (n, 3, 3), "armature": (n,),
        }
        for key, shape in expected.items():
            if tuple(shapes[key]) != shape:
                raise ModelError(f"model {self.name!r}: {key} has shape {shapes[key]}, expected {shape}")
        for i, parent in enumerate(self.parents):
            if not -1 <= parent < i:
                raise ModelError(
                    f"model {self.name!r}: joint {self.joint_names[i]!r} has parent index {parent}; "
                    "parents must precede their children (-1 for the base)"
                )
        for i, kind in enumerate(self.joint_types):
            if kind not in KINDS:
                raise ModelError(f"joint {self.joint_names[i]!r}: type {kind!r} is none of {', '.join(KINDS)}")
        multi = {self.joint_names[i] for i in self.multi_dof_indices}
        tied = [r for r in self.mimic if r.joint in multi or r.leader in multi]
        if tied:
            raise ModelError(f"model {self.name!r}: joint {tied[0].joint!r} mimics {tied[0].leader!r}; mimic joints "
                             "are one-degree-of-freedom joints (revolute, prismatic)")
        self._check_finite()
        if self.mimic:
            from .mimic import resolve

            if resolve(self.joint_names, self.mimic, f"model {self.name!r}: ") != tuple(self.mimic):
                raise ModelError(f"model {self.name!r}: mimic joints must follow independent joints "
                                 "(dyn_plugin.mimic.resolve gives them so)")
        norms = np.linalg.norm(self.axes, axis=1)
        if n and not np.all(np.abs(norms - 1.0) <= 1e-12):      # allclose's default rtol would pass 1e-5
            k = int(np.argmax(np.abs(norms - 1.0)))
            raise ModelError(f"joint {self.joint_names[k]!r}: axis {self.axes[k].tolist()} is not a unit vector "
                             f"(norm 1 {norms[k] - 1.0:+.2g}); normalise it")

    def _check_finite(self):
        """Geometry, inertia and friction finite; limits may be infinite (no limit), not NaN.
        A URDF whose numbers are each finite can still overflow when they are combined (a
        mass of 1e10 kg at 1e160 m has no finite inertia about the link origin)."""
        for key in ("joint_rotations", "joint_positions", "axes", "masses", "coms", "inertias", "damping",
                    "friction", "armature", "lower", "upper", "velocity_limits", "effort_limits"):
            value = getattr(self, key)
            bad = np.isnan(value) if key in ("lower", "upper", "velocity_limits", "effort_limits") else ~np.isfinite(value)
            if np.any(bad):
                i = int(np.argwhere(bad)[0][0])
                raise ModelError(f"model {self.name!r}: {key} of joint {self.joint_names[i]!r} (link "
                                 f"{self.link_names[i]!r}) is not finite: {value[i]}")
        if np.any(self.armature < 0):
            i = int(np.argmax(self.armature < 0))
            raise ModelError(f"model {self.name!r}: armature of joint {self.joint_names[i]!r} must be >= 0 "
                             f"(kg·m², kg for a prismatic joint), got {self.armature[i]}")
        geared = [i for i in self.multi_dof_indices if self.armature[i]]
        if geared:
            i = geared[0]
            raise ModelError(f"model {self.name!r}: armature {self.armature[i]} on joint {self.joint_names[i]!r} "
                             f"({self.joint_types[i]}); rotor inertia is one number for one degree of freedom "
                             "(revolute and prismatic joints)")
        base = np.concatenate([[self.base_mass], self.base_com, self.base_inertia.reshape(9)])
        if base.shape != (13,) or not np.all(np.isfinite(base)) or self.base_mass < 0:
            raise ModelError(f"model {self.name!r}: the base link's mass, centre of mass (3,) and inertia (3, 3) "
                             f"must be finite (mass >= 0), got {self.base_mass}, {self.base_com}, {self.base_inertia}")
        shifted = self.base_mass * float(self.base_com @ self.base_com)       # the m |c|² it was computed with
        problem = non_psd_problem(self.base_inertia, shifted) if self.floating_base else None
        if problem:
            raise ModelError(f"model {self.name!r}: the floating base link {self.base_link!r} (with the links fixed "
                             f"to it): {problem}")
        if not np.all(np.isfinite(self.gravity)):
            raise ModelError(f"model {self.name!r}: gravity must be finite, got {self.gravity}")

    def pybullet_alterations(self) -> list:
        """What pybullet would change in this model when loading it, one sentence each:
        links without ``<inertial>`` (pybullet: 1 kg, unit inertia) and inertias that break
        the triangle inequality (pybullet zeroes them).  Empty for a fair comparison."""
        moving = self.links_without_inertial + (self.base_links_without_inertial if self.floating_base else ())
        notes = [f"link {name!r} has no <inertial>: pybullet gives it 1 kg and unit inertia, pinocchio and "
                 "dyn_plugin 0 kg" for name in moving]
        for name, I in zip(self.link_names, self.inertias):
            moments = np.linalg.eigvalsh(I)
            if moments[0] + moments[1] - moments[2] < -1e-9 * max(1e-300, abs(moments).max()):
                notes.append(f"link {name!r} breaks the triangle inequality: pybullet zeroes its inertia")
        return notes


def non_psd_problem(inertia: np.ndarray, computed_from: float = 0.0) -> Optional[str]:
    """Why a symmetric inertia (3, 3) kg·m² is not positive semi-definite, or None.  Round-off
    allowance: 1e-12 of the largest moment, or of ``computed_from`` (kg·m²), the size of the
    terms it was computed from (a body's inertia about its centre of mass is its inertia
    about the origin minus m |c|²-terms), with an absolute floor for an inertia that is
    zero but for round-off (iCub's l_ankle_2 in example-robot-data has moments ±1.4e-20
    kg·m², far below any physical part: 1e-18 kg·m² is 1 µg at 1 µm)."""
    moments = np.linalg.eigvalsh(inertia)
    scale = max(INERTIA_ROUND_OFF * 1e12, np.abs(moments).max(), computed_from)
    if moments[0] < -1e-12 * scale:
        return (f"inertia is not positive semi-definite (principal moments {moments.tolist()}); a physical "
                "inertia has all principal moments >= 0")
    return None


def check_link_inertia(link: str, mass: float, inertia: np.ndarray, strict: bool = False,
                       where: str = "", welded: bool = False) -> None:
    """Raise :class:`ModelError` for a physically impossible link, warn for a doubtful one.

    Conditions: mass finite and >= 0; inertia (about the centre of mass) symmetric with
    non-negative principal moments; each principal moment <= the sum of the other two
    (triangle inequality).  A triangle-inequality break is an error when ``strict``
    (bundled robots) and a :class:`PhysicalValidityWarning` otherwise: pinocchio accepts
    such a link while pybullet silently zeroes its inertia.  A link ``welded`` by fixed
    joints to others (or to the world) is one part of a rigid body: a negative principal
    moment is then a warning, and the body as a whole is checked
    (:func:`non_psd_problem`; tiago's 1 mg antenna in example-robot-data, moment
    −3.5e-8 kg·m², is fixed to its base).
    """
    at = f"link {link!r}{where}"
    if not np.isfinite(mass) or mass < 0:
        raise ModelError(f"{at}: mass must be finite and >= 0, got {mass}")
    inertia = np.asarray(inertia, dtype=float)
    if not np.all(np.isfinite(inertia)):
        raise ModelError(f"{at}: inertia has non-finite entries")
    if not np.allclose(inertia, inertia.T, rtol=0, atol=1e-12 * max(1.0, np.abs(inertia).max())):
        raise ModelError(f"{at}: inertia tensor is not symmetric")
    problem = non_psd_problem(inertia)
    if problem and welded and not strict:
        warnings.warn(f"{at}: {problem}; the link is welded by fixed joints into a larger rigid body, whose "
                      "inertia is what moves and is checked", PhysicalValidityWarning, stacklevel=3)
    elif problem:
        raise ModelError(f"{at}: {problem}")
    moments = np.linalg.eigvalsh(inertia)
    scale = max(INERTIA_ROUND_OFF * 1e12, np.abs(moments).max())
    slack = moments[0] + moments[1] - moments[2]
    if slack < -1e-9 * scale:
        message = (
            f"{at}: inertia breaks the triangle inequality (principal moments "
            f"{moments.tolist()}: {moments[2]:.6g} > {moments[0]:.6g} + {moments[1]:.6g}); "
            "pybullet would silently zero this link's inertia"
        )
        if strict:
            raise ModelError(message)
        warnings.warn(message, PhysicalValidityWarning, stacklevel=3)
