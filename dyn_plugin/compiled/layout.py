"""The packed model the compiled kernels read: one ``(n + 1, WIDTH)`` float array.

Row ``i < n`` holds joint/link ``i``; row ``n`` holds what belongs to the whole robot.
Packing everything into one C-contiguous array keeps a kernel call to a single model
argument (each argument costs a numba dispatch ~60 ns, as much as 200 multiplications).

Every joint is re-framed so that its axis is z (the *z normal form*): link i's frame is
turned by the constant rotation F_i with F_i ẑ = axis_i, its rest placement becomes
R₀' = F_λᵀ R₀ F_i, p₀' = F_λᵀ p₀, and its inertial data are expressed in the turned frame.
Torques, M and q̈ do not depend on the link frames; wrenches are turned back with F_i.
A revolute joint is then R(q) = R₀' Rz(q) (12 multiplications), and every ω̇ × ẑ-type
product loses two thirds of its work, as in the customised algorithms of Dhanaraj ch. 2.

Inertia is stored the way Khalil's customised Newton-Euler and the composite-body
algorithms use it, about the link origin rather than the centre of mass: the mass m, the
first moment h = m c and I_O = I_c + m (|c|² 1 − c cᵀ) (parallel-axis theorem).
"""

from __future__ import annotations

import numpy as np

from ..kinematics import REVOLUTE, parallel_axis, rotation_from_z


class Offsets(dict):
    """``{name: first index}`` of quantities stored one after another, declared as
    ``(name, size)`` pairs in order from ``start``; ``end``: the index after the last.
    Every offset table of the kernels (the packed model's columns, the per-state scratch
    rows, the quantities of a link block over lanes) is one of these, so that a quantity
    added or resized moves the ones after it (numba freezes the module globals bound from
    it into the machine code; :mod:`.cache` recompiles when any file here changes)."""

    def __init__(self, declared, start: int = 0):
        super().__init__()
        self.end = start
        for name, size in declared:
            if name in self or size < 1:
                raise ValueError(f"offsets: {name!r} declared twice or with size {size} < 1")
            self[name], self.end = self.end, self.end + size

    def at(self, *names) -> tuple:
        """The offsets of ``names``, in that order."""
        return tuple(self[name] for name in names)


# per-joint columns of row i < n
MODEL_COLUMNS = Offsets((
    ("PARENT", 1),            # parent index (-1: base)
    ("KIND", 1),              # 0 revolute, 1 prismatic
    ("ROT0", 9),              # R₀' = F_λᵀ R₀ F_i, row-major 3×3
    ("POS0", 3),              # p₀' = F_λᵀ p₀, joint origin in the parent frame
    ("FRAME", 9),             # F_i, row-major: turns link quantities back to the URDF frame
    ("MASS", 1),
    ("MOMENT", 3),            # first moment h = m c
    ("INERTIA", 9),           # inertia about the link origin, row-major 3×3
    ("ARMATURE", 1),          # rotor inertia added to M's diagonal (pinocchio's armature)
))
PARENT, KIND, ROT0, POS0, FRAME, MASS, MOMENT, INERTIA, ARMATURE = MODEL_COLUMNS.at(
    "PARENT", "KIND", "ROT0", "POS0", "FRAME", "MASS", "MOMENT", "INERTIA", "ARMATURE")
WIDTH = MODEL_COLUMNS.end
# the robot's row n
ROBOT_COLUMNS = Offsets((
    ("BASE_ACC", 3),          # fictitious base acceleration −g, Fu 3.3-46
    ("FREE_FLYER_ACC", 3),    # a free-flyer chain's: the world's −g, for .free_flyer (zero otherwise)
))
BASE_ACC, FREE_FLYER_ACC = ROBOT_COLUMNS.at("BASE_ACC", "FREE_FLYER_ACC")
if ROBOT_COLUMNS.end > WIDTH:
    raise ImportError("dyn_plugin.compiled.layout: the robot row's columns do not fit in WIDTH")


def pack_model(model, armature=None) -> np.ndarray:
    """The ``(n + 1, WIDTH)`` array of ``model`` (a :class:`~dyn_plugin.model.RobotModel`),
    with its gravity (``model.with_gravity(g)`` for another); ``armature`` (n,) kg·m² (kg
    for prismatic joints), the rotor inertia on M's diagonal, defaults to zeros.
    """
    model.require_fixed_joint_space("the compiled kernels")
    bodies = [(i, model.masses[i], model.coms[i], model.inertias[i]) for i in range(model.n)]
    return pack(model.parents, model.joint_types, model.joint_rotations, model.joint_positions, model.axes,
                bodies, model.gravity, armature)


def pack(parents, joint_types, rotations, positions, axes, bodies, gravity, armature=None) -> np.ndarray:
    """The packed model from its parts, in any number type.

    Per joint i: ``parents[i]`` (−1: base), ``joint_types[i]``, the rest placement
    ``rotations[i]`` (3, 3) and ``positions[i]`` (3,) in the parent link's frame, the unit
    ``axes[i]`` (3,); ``bodies``: ``(link, mass, com (3,), inertia about the com (3, 3))``,
    several per link allowed (a payload), in link frames; ``gravity`` (3,).  Floats give
    the float64 array the kernels read; exact numbers (sympy rationals and symbols) give an
    array of ``dtype=object`` that :mod:`.traced` runs the kernels' recursions on.

    Each body is turned into its link's z normal form before the parallel-axis term is
    added (c' = Fᵀ c, I' = Fᵀ I F + m [c']×[c']×ᵀ), so that a small inertia about a tilted
    axis is not buried in the round-off of rotating a large one.
    """
    n = len(parents)
    exact = any(np.asarray(part).dtype == object for part in (rotations, positions, axes, gravity))
    dtype = object if exact else float
    P = np.zeros((n + 1, WIDTH), dtype=dtype)
    F = [np.asarray(rotation_from_z(axis), dtype=dtype) for axis in axes]
    identity = np.identity(3, dtype=int)                     # exact in any number type
    for i in range(n):
        turn_back = (F[parents[i]] if parents[i] >= 0 else identity).T
        P[i, PARENT] = parents[i]
        P[i, KIND] = 0.0 if joint_types[i] == REVOLUTE else 1.0
        P[i, ROT0:ROT0 + 9] = (turn_back @ np.asarray(rotations[i], dtype=dtype) @ F[i]).reshape(9)
        P[i, POS0:POS0 + 3] = turn_back @ np.asarray(positions[i], dtype=dtype).reshape(3)
        P[i, FRAME:FRAME + 9] = F[i].reshape(9)
    for i, mass, com, inertia in bodies:
        c = F[i].T @ np.asarray(com, dtype=dtype).reshape(3)
        I_O = F[i].T @ np.asarray(inertia, dtype=dtype) @ F[i] + parallel_axis(mass, c)
        P[i, MASS] += mass
        P[i, MOMENT:MOMENT + 3] += mass * c
        P[i, INERTIA:INERTIA + 9] += I_O.reshape(9)
    if armature is not None:
        P[:n, ARMATURE] = armature
    P[n, BASE_ACC:BASE_ACC + 3] = -np.asarray(gravity, dtype=dtype).reshape(3)
    return P
