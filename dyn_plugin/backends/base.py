"""The Backend interface every dynamics engine implements.

Public methods accept one state ``(n,)`` or a batch ``(N, n)`` and return the matching
shape (``(n, n)`` / ``(N, n, n)`` for matrices).  They check shapes and finiteness once,
here, and hand ``(N, n)`` float arrays to the ``_batch_*`` methods a backend implements.

A backend must implement :meth:`Backend._batch_inverse_dynamics` and
:meth:`Backend._batch_mass_matrix`; the rest have correct (if not the fastest) defaults:

* gravity ``g(q) = τ(q, 0, 0)``, bias ``τ(q, q̇, 0)``;
* forward dynamics ``q̈ = M⁻¹(τ − bias)`` by Cholesky (Walker & Orin's method 1);
* the Christoffel Coriolis matrix by polarisation of the velocity terms: with
  ``h(u) = Σ_jk Γ_ijk u_j u_k`` (gravity off), ``C e_j = [h(q̇ + s e_j) − h(q̇ − s e_j)] / 4s``
  is exactly ``Σ_k Γ_ijk q̇_k``, the C for which ``Ṁ − 2C`` is skew-symmetric (evaluated
  at q̇ / max|q̇ₖ| and scaled back, C being linear in q̇, so that it cannot overflow early).

A result that is not finite (float64 overflow, e.g. q̇ = 1e300 squared) is never
returned: every public method raises :class:`~dyn_plugin.errors.NumericalError` naming
the quantity, the state, the joint and the largest input instead.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import InputError, ModelError, NumericalError
from ..model import RobotModel

# M(q) counts as singular when its smallest eigenvalue is below this fraction of its largest.
SINGULAR = 1e-13


_REAL_KINDS = "fiu"      # numpy dtype kinds accepted as joint-space numbers: float, int, unsigned
_DESCRIBED_KINDS = {"c": "complex numbers", "b": "booleans", "U": "text", "S": "bytes", "M": "dates",
                    "m": "time differences", "V": "structured records"}


def _joint(index: int, joints) -> str:
    """How a message names joint ``index``: by name when the names are known."""
    return f"joint {joints[index]!r} (index {index})" if joints is not None else f"joint index {index}"


def _not_real(name: str, array: np.ndarray, n: int):
    """The InputError for an array whose entries are not real numbers, or None if they all are."""
    expected = f"{name} must be numbers (real: float or int) of shape ({n},) or (N, {n})"
    kind = array.dtype.kind
    if kind == "O":
        for entry in array.flat:
            refused = isinstance(entry, (bool, np.bool_, str, bytes, complex, np.complexfloating)) or entry is None
            if not refused:
                try:
                    float(entry)
                except (TypeError, ValueError, OverflowError):
                    refused = True
            if refused:
                text = repr(entry)
                text = text if len(text) <= 40 else text[:37] + "..."
                return InputError(f"{expected}, got an entry {text} of type {type(entry).__name__}")
        return None
    what = _DESCRIBED_KINDS.get(kind, f"dtype {array.dtype}")
    hint = ""
    if kind == "c":
        hint = f"; the imaginary part is not dropped silently: pass {name}.real if it is meant to be zero"
    elif kind in "US":
        hint = "; convert text to numbers before the call"
    return InputError(f"{expected}, got {what} (dtype {array.dtype}){hint}")


def as_batch(name: str, value, n: int, joints=None) -> tuple:
    """Validate a joint-space array: returns ``(array of shape (N, n), was_single)``.

    Entries must be real numbers (floats, ints, or objects ``float()`` accepts), finite;
    complex, text and boolean arrays are refused rather than converted.  ``joints``
    (names, optional) lets the messages name the joint at fault.
    """
    shape = f"of shape ({n},) or (N, {n}), got {type(value).__name__}"
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):             # ragged nested lists
        raise InputError(f"{name} must be numbers {shape}") from None
    if array.dtype.kind not in _REAL_KINDS:
        problem = _not_real(name, array, n)
        if problem is not None:
            raise problem
    try:
        array = np.asarray(array, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name} must be real numbers {shape}") from None
    if array.ndim == 1 and array.shape[0] == n:
        single, array = True, array[None, :]
    elif array.ndim == 2 and array.shape[1] == n:
        single = False
    else:
        raise InputError(f"{name} must have shape ({n},) or (N, {n}), got {array.shape}")
    if not np.all(np.isfinite(array)):
        rows, cols = np.nonzero(~np.isfinite(array))
        raise InputError(f"{name} has a non-finite entry (NaN or inf) at {_joint(cols[0], joints)}"
                         + ("" if single else f", state {rows[0]}"))
    return array, single


def batch_args(n: int, joints=None, **arrays) -> tuple:
    """Validate several joint-space arrays that must share the batch size N."""
    out, singles = [], []
    for name, value in arrays.items():
        array, single = as_batch(name, value, n, joints)
        out.append(array)
        singles.append(single)
    sizes = {len(a) for a in out}
    if len(sizes) > 1:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in zip(arrays, out))
        raise InputError(f"batch sizes differ: {shapes}; all arguments must have the same N")
    return out, all(singles)


def check_finite(what: str, result, model, single: bool, **inputs):
    """``result`` ((N, ...) arrays) unchanged if every entry is finite, else a
    :class:`NumericalError` naming ``what``, the state, the joint and the largest input
    there.  ``inputs`` are the validated (finite) (N, n) arrays the result came from."""
    results = result if isinstance(result, tuple) else (result,)
    for part in results:
        if not np.isfinite(part.sum()) and not np.isfinite(part).all():
            raise _overflow(what, part, model, single, inputs)
    return result


def _overflow(what: str, result, model, single: bool, inputs: dict) -> NumericalError:
    bad = ~np.isfinite(result)
    where = np.argwhere(bad)[0]                             # (state, joint, ...) of the first bad entry
    state, joint = int(where[0]), int(where[1]) if result.ndim > 1 else 0
    value = result[tuple(where)]
    names = model.joint_names
    message = (f"{what} of robot {model.name!r} overflowed: the result at {_joint(joint, names)}"
               + ("" if single else f", state {state}") + f" is {value} although every input is finite "
               "(float64 ends near 1.8e308)")
    largest = [(np.abs(a[state]).max(), key, int(np.abs(a[state]).argmax())) for key, a in inputs.items() if len(a)]
    if largest:
        _, key, index = max(largest)
        message += f"; the largest input there is {key} = {inputs[key][state, index]:g} at {_joint(index, names)}"
    message += ". Check the inputs' units and magnitudes, and the model's masses, inertias and lengths"
    return NumericalError(message)


KINDS = ("ours", "generated", "reference")
"""What a backend is: ``ours`` (implemented here, validated against the references),
``generated`` (code generated per robot, validated likewise), ``reference`` (pinocchio,
pybullet: what the others are validated against)."""

CAPABILITIES = ("friction", "stepping", "joint_wrenches", "christoffel")
"""What a backend can do beyond the :class:`Backend` interface:

friction        its τ and q̈ include joint friction (``.friction``, ``inverse_dynamics_breakdown``)
stepping        ``velocity_step(q, qd, tau, dt)``: a time step with friction impulses
joint_wrenches  ``joint_wrenches(q, qd, qdd)``: joint reaction forces and moments
christoffel     ``christoffel(q)`` and ``configuration_space(q)`` (h_ikm; ROBMAT's M, B, C, G)
"""


class Backend:
    """Dynamics of one robot model.  Subclasses set ``name`` and ``description``, and
    declare what they are (``kind``, one of :data:`KINDS`) and what they can do
    (``capabilities``, a frozenset of :data:`CAPABILITIES`); the registry derives every
    list of backends from these declarations."""

    name = "abstract"
    description = ""
    kind = "ours"
    capabilities: frozenset = frozenset()

    @classmethod
    def can(cls, *capabilities: str) -> bool:
        """True when the backend declares every one of ``capabilities``."""
        return set(capabilities) <= cls.capabilities

    def __init__(self, model: RobotModel, gravity: Optional[np.ndarray] = None):
        self.model = model if gravity is None else model.with_gravity(gravity)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model.name!r}, n={self.model.n})"

    @property
    def gravity(self) -> np.ndarray:
        """Physical gravity (3,), m/s², in the base frame."""
        return self.model.gravity

    # -- public surface: shapes in, shapes out -----------------------------------------

    def _run(self, method, matrix: bool = False, **arrays):
        args, single = batch_args(self.model.n, self.model.joint_names, **arrays)
        result = method(*args)
        # A NaN never leaves the library as an answer.  The sum is NaN or inf whenever an entry
        # is (and cheaper than isfinite().all() on big batches); a finite result whose sum
        # overflows is told apart by the exact test.
        if not np.isfinite(result.sum()) and not np.isfinite(result).all():
            what = getattr(method, "__name__", "").replace("_batch_", "") or "result"
            raise _overflow(what, result, self.model, single, dict(zip(arrays, args)))
        return result[0] if single else result

    def inverse_dynamics(self, q, qd, qdd):
        """Joint torques/forces τ (N·m or N) for positions q, velocities q̇ and accelerations q̈."""
        return self._run(self._batch_inverse_dynamics, q=q, qd=qd, qdd=qdd)

    def forward_dynamics(self, q, qd, tau):
        """Joint accelerations q̈ (rad/s² or m/s²) produced by torques τ.

        Undefined where M(q) is singular (a joint that moves no mass or inertia): a
        :class:`~dyn_plugin.errors.ModelError` names such joints, for every backend."""
        try:
            return self._run(self._batch_forward_dynamics, q=q, qd=qd, tau=tau)
        except (NumericalError, np.linalg.LinAlgError) as error:
            self._refuse_singular_mass_matrix(q)
            if isinstance(error, np.linalg.LinAlgError):
                raise ModelError(f"forward dynamics of robot {self.model.name!r}: the mass matrix cannot be "
                                 f"factorised ({error})") from None
            raise

    def _refuse_singular_mass_matrix(self, q) -> None:
        """Raise a ModelError naming the joints that move no mass or inertia if M(q) is
        singular at one of the (validated) states ``q``; return otherwise."""
        (Q,), single = batch_args(self.model.n, self.model.joint_names, q=q)
        for state, M in enumerate(self._batch_mass_matrix(Q)):
            moments = np.linalg.eigvalsh(M)
            if moments[0] > SINGULAR * max(moments[-1], 1e-300):
                continue
            diagonal = np.diag(M)
            idle = [name for name, m_ii in zip(self.model.joint_names, diagonal) if m_ii <= SINGULAR * diagonal.max()]
            empty = [link for link, m, I in zip(self.model.link_names, self.model.masses, self.model.inertias)
                     if m == 0 and not I.any()]
            raise ModelError(
                f"forward dynamics of robot {self.model.name!r} is undefined" + ("" if single else f" at state {state}")
                + f": the mass matrix is singular (smallest eigenvalue {moments[0]:.3g}, largest {moments[-1]:.3g})"
                + (f"; joints moving no mass or inertia: {', '.join(map(repr, idle))}" if idle else "")
                + (f"; links without mass or inertia: {', '.join(map(repr, empty))}. Give those links an "
                   "<inertial> (a rotor needs only its inertia), or make their joints fixed" if empty else
                   ": no finite torque defines their acceleration"))

    def mass_matrix(self, q):
        """Joint-space inertia matrix M(q), symmetric positive definite, (n, n) or (N, n, n)."""
        return self._run(self._batch_mass_matrix, q=q)

    def bias_forces(self, q, qd):
        """C(q, q̇) q̇ + g(q): the torque needed for zero acceleration."""
        return self._run(self._batch_bias_forces, q=q, qd=qd)

    def gravity_torques(self, q):
        """g(q): the torque that holds the robot still against gravity."""
        return self._run(self._batch_gravity_torques, q=q)

    def coriolis_matrix(self, q, qd):
        """C(q, q̇) in Christoffel form: C q̇ = velocity terms and Ṁ − 2C skew-symmetric."""
        return self._run(self._batch_coriolis_matrix, q=q, qd=qd)

    # -- what a backend implements (batches of shape (N, n)) ----------------------------

    def _batch_inverse_dynamics(self, q, qd, qdd):
        raise NotImplementedError

    def _batch_mass_matrix(self, q):
        raise NotImplementedError

    def _batch_gravity_torques(self, q):
        zero = np.zeros_like(q)
        return self._batch_inverse_dynamics(q, zero, zero)

    def _batch_bias_forces(self, q, qd):
        return self._batch_inverse_dynamics(q, qd, np.zeros_like(q))

    def _batch_velocity_terms(self, q, qd):
        """C(q, q̇) q̇ alone (gravity off)."""
        return self._batch_bias_forces(q, qd) - self._batch_gravity_torques(q)

    def _batch_forward_dynamics(self, q, qd, tau):
        M = self._batch_mass_matrix(q)
        rhs = tau - self._batch_bias_forces(q, qd)
        L = np.linalg.cholesky(M)
        y = np.linalg.solve(L, rhs[..., None])
        return np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]

    def _batch_coriolis_matrix(self, q, qd):
        # C is linear in q̇: C(q, q̇) = m C(q, q̇/m) with m = max|q̇ₖ|, so the quadratic h is
        # only ever evaluated at |u| ≤ √n and a q̇ whose C is representable cannot overflow.
        N, n = q.shape
        size = np.abs(qd).max(axis=1)                                       # (N,)
        size = np.where(size > 0, size, 1.0)                                 # q̇ = 0: C = 0 either way
        unit = qd / size[:, None]
        scale = np.maximum(1.0, np.linalg.norm(unit, axis=1))               # (N,)
        step = scale[:, None, None] * np.eye(n)                             # (N, n, n): s e_j
        q_rep = np.repeat(q, n, axis=0)
        plus = self._batch_velocity_terms(q_rep, (unit[:, None, :] + step).reshape(N * n, n))
        minus = self._batch_velocity_terms(q_rep, (unit[:, None, :] - step).reshape(N * n, n))
        columns = (plus - minus).reshape(N, n, n) * (size / (4.0 * scale))[:, None, None]  # [state, j, i]
        return columns.transpose(0, 2, 1)
