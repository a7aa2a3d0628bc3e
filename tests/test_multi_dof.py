"""Spherical, planar and floating joints against pinocchio, on every registered backend.

The reference is pinocchio's model of each URDF text built independently of dyn_plugin
(tests/pinocchio_twin.py: a plain lxml reading, joint by joint, JointModelSpherical /
JointModelPlanar / JointModelFreeFlyer; urdfdom does not know pybullet's
``type="spherical"``), so that a reading bug of ours shows.  Random trees
(tests/urdf_factory.py, ``multi_dof=``) hold each joint kind, on a fixed and on a floating
root; every backend of the registry either serves them (τ, M, q̈, bias, g, the
derivatives along the tangent q ⊕ δ as computeRNEADerivatives / computeABADerivatives,
joint wrenches as ``data.f``, external wrenches as rnea/aba's ``fext``, and the frames:
placement, Jacobian and J̇ in the three references, velocity, classical acceleration) or
refuses them with a ModelError saying why (the friction backends).  Then example-robot-data
robots with some joints rewritten as such joints, and bad input.

Tolerance: |ours − pinocchio| ≤ 1e-12 · max(1, |pinocchio|) entry by entry; for the
forward dynamics, q̈ and its derivatives (M⁻¹ times the inverse dynamics' quantities: their
round-off grows with M's condition number, 2e4 to 4e4 on the tree with every kind) ≤ 1e-12 ·
max(1, ‖pinocchio‖) of each state's vector or matrix (Euclidean, Frobenius norm).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin.backends.registry import backend_class, backends  # noqa: E402
from dyn_plugin.errors import InputError, ModelError  # noqa: E402
from dyn_plugin.dh import DHRow, model_from_dh  # noqa: E402
from dyn_plugin.sampling import random_states  # noqa: E402
from pinocchio_twin import UrdfTwin  # noqa: E402
from urdf_factory import MULTI_DOF_TYPES, random_tree_urdf  # noqa: E402

TOL = 1e-12
N = 4
TREES = {
    "spherical": (311, 3, dict(branched=False, continuous=False, prismatic=False, multi_dof=("spherical",))),
    "planar": (312, 5, dict(multi_dof=("planar",))),
    "floating": (313, 5, dict(multi_dof=("floating",))),
    "all": (314, 7, dict(multi_dof=MULTI_DOF_TYPES)),
}
ROOTS = ("fixed", "floating")
SMALL = ("spherical", "fixed")
"""The one case a backend of generated code is compiled for (its code is per model: ~20 s of numba)."""
REFERENCES = ("local", "world", "local_world_aligned")


def assert_close(ours, ref, what, per_state=False, tol=TOL):
    """|ours − ref| ≤ tol · max(1, |ref|) entry by entry, or ≤ tol · max(1, ‖ref_k‖) with
    ‖ref_k‖ the norm (Euclidean, Frobenius) of each state's vector or matrix (``per_state``;
    ref (N, ...))."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape}, expected {ref.shape}"
    scale = np.abs(ref)
    if per_state:
        norms = np.linalg.norm(ref.reshape(len(ref), -1), axis=1)
        scale = np.broadcast_to(norms.reshape((-1,) + (1,) * (ref.ndim - 1)), ref.shape)
    err = np.abs(ours - ref) / np.maximum(1.0, scale)
    assert err.max() <= tol, f"{what}: error {err.max():.3e} > {tol:g}"


class Case:
    """A URDF text with joints of several degrees of freedom: our model, pinocchio's
    (independent) twin, states, external wrenches and the references."""

    def __init__(self, xml: str, floating_base: bool, seed: int):
        self.xml, self.model = xml, dp.load_urdf_string(xml, floating_base=floating_base)
        self.twin = UrdfTwin(self.model, self.xml)
        s = random_states(self.model, N, seed=seed)
        self.q, self.v, self.a, self.tau = s.q, s.qd, s.qdd, s.tau
        names, rng = self.model.frame_names, np.random.default_rng(seed)
        self.frames = (names[-1], names[len(names) // 2], names[0])
        self.f_ext = {names[-1]: 20 * rng.normal(size=6), names[len(names) // 2]: 10 * rng.normal(size=(N, 6)),
                      names[0]: 5 * rng.normal(size=6)}

    def states(self, *arrays):
        """pinocchio's (q, v, ...) of each state."""
        t = self.twin
        return zip(t.pin_q(arrays[0]), *(t.pin_v(x) for x in arrays[1:]))

    def per_state(self, function, *arrays):
        return np.array([function(*state) for state in self.states(*arrays)])

    @functools.cached_property
    def ref(self) -> dict:
        t, pm, pd = self.twin, self.twin.pm, self.twin.pd
        sym = lambda M: np.triu(M) + np.triu(M, 1).T                                     # noqa: E731
        ref = {"τ": self.per_state(lambda q, v, a: t.ours_v(pin.rnea(pm, pd, q, v, a)), self.q, self.v, self.a),
               "M": self.per_state(lambda q: t.ours_m(sym(pin.crba(pm, pd, q))), self.q),
               "g": self.per_state(lambda q: t.ours_v(pin.computeGeneralizedGravity(pm, pd, q)), self.q),
               "bias": self.per_state(lambda q, v: t.ours_v(pin.nonLinearEffects(pm, pd, q, v)), self.q, self.v),
               "q̈": self.per_state(lambda q, v, tau: t.ours_v(pin.aba(pm, pd, q, v, tau)), self.q, self.v, self.tau)}
        ref["C q̇"] = ref["bias"] - ref["g"]
        ref["C"] = self.per_state(lambda q, v: t.ours_m(pin.computeCoriolisMatrix(pm, pd, q, v)), self.q, self.v)

        def rnea_derivatives(q, v, a):
            return np.stack([t.ours_m(x) for x in pin.computeRNEADerivatives(pm, pd, q, v, a)[:2]])

        def aba_derivatives(q, v, tau):
            pin.computeABADerivatives(pm, pd, q, v, tau)
            return np.stack([t.ours_m(pd.ddq_dq), t.ours_m(pd.ddq_dv), t.ours_m(sym(pd.Minv))])
        ref["∂τ/∂q"], ref["∂τ/∂v"] = self.per_state(rnea_derivatives, self.q, self.v, self.a).transpose(1, 0, 2, 3)
        ref["∂q̈/∂q"], ref["∂q̈/∂v"], ref["∂q̈/∂τ"] = self.per_state(
            aba_derivatives, self.q, self.v, self.tau).transpose(1, 0, 2, 3)
        ref["f, n"] = self.per_state(self.wrenches, self.q, self.v, self.a)
        ref["τ with f_ext"] = self.per_state_indexed(
            lambda k, q, v, a: t.ours_v(pin.rnea(pm, pd, q, v, a, self.fext(k, q))), self.q, self.v, self.a)
        ref["q̈ with f_ext"] = self.per_state_indexed(
            lambda k, q, v, x: t.ours_v(pin.aba(pm, pd, q, v, x, self.fext(k, q))), self.q, self.v, self.tau)
        return ref

    def per_state_indexed(self, function, *arrays):
        """``function(k, q, v, ...)`` at each state k."""
        return np.array([function(k, *state) for k, state in enumerate(self.states(*arrays))])

    def wrenches(self, q, v, a):
        """pinocchio's data.f (force, moment) (2, joints, 3): a floating base's, then each joint's."""
        pm, pd = self.twin.pm, self.twin.pd
        pin.rnea(pm, pd, q, v, a)
        joints = ([pm.getJointId("root_joint")] if self.model.floating_base else []) + self.twin.jid
        return np.array([self.twin.wrench(j) for j in joints]).transpose(1, 0, 2)

    def fext(self, k: int, q):
        """pinocchio's fext of ``self.f_ext`` at state k: each world-aligned wrench [f; m] at a
        frame origin p as a Force of the frame's joint in its frame about its origin o:
        Rᵀ f, Rᵀ (m + (p − o) × f)."""
        pm, pd = self.twin.pm, self.twin.pd
        pin.framesForwardKinematics(pm, pd, q)
        out = [pin.Force.Zero() for _ in range(pm.njoints)]
        for name, w in self.f_ext.items():
            w = np.broadcast_to(w, (N, 6))[k]
            fid = pm.getFrameId(name, pin.FrameType.BODY)
            joint = pm.frames[fid].parentJoint
            R, o, p = pd.oMi[joint].rotation, pd.oMi[joint].translation, pd.oMf[fid].translation
            out[joint] += pin.Force(R.T @ w[:3], R.T @ (w[3:] + np.cross(p - o, w[:3])))
        return out

    def frame_references(self, frame: str) -> dict:
        """pinocchio's placement, and per reference its Jacobian, J̇, velocity and classical
        acceleration of the BODY frame ``frame``, at every state."""
        t, pm, pd = self.twin, self.twin.pm, self.twin.pd
        fid = pm.getFrameId(frame, pin.FrameType.BODY)

        def kinematics(q, v, a):
            pin.forwardKinematics(pm, pd, q, v, a)
            out = [pin.updateFramePlacement(pm, pd, fid).homogeneous]
            pin.computeJointJacobiansTimeVariation(pm, pd, q, v)          # data.J and data.dJ
            pin.forwardKinematics(pm, pd, q, v, a)
            for reference in REFERENCES:
                rf = getattr(pin.ReferenceFrame, reference.upper())
                out += [pin.getFrameJacobian(pm, pd, fid, rf)[:, t.iv], pin.getFrameJacobianTimeVariation(pm, pd, fid, rf)[:, t.iv],
                        pin.getFrameVelocity(pm, pd, fid, rf).vector, pin.getFrameClassicalAcceleration(pm, pd, fid, rf).vector]
            return out
        rows = [kinematics(*state) for state in self.states(self.q, self.v, self.a)]
        parts = [np.array([row[k] for row in rows]) for k in range(len(rows[0]))]
        names = ["placement"] + [f"{what} {reference}" for reference in REFERENCES
                                 for what in ("J", "J̇", "velocity", "acceleration")]
        return dict(zip(names, parts))


@functools.lru_cache(maxsize=None)
def case(tree: str, root: str) -> Case:
    """The random tree ``tree`` of TREES on a fixed or floating root."""
    seed, n, options = TREES[tree]
    xml = random_tree_urdf(np.random.default_rng(seed), n, name=f"{tree}{seed}", **options)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dp.PhysicalValidityWarning)
        c = Case(xml, root == "floating", seed)
    kinds = {c.model.joint_types[i] for i in c.model.multi_dof_indices}
    assert kinds == set(options["multi_dof"]), f"{tree}: the tree holds {kinds}"
    return c


def refusal(name: str):
    """What a backend that refuses such joints says (None for one that serves them): friction
    laws are written for one-dof joints, and a reference engine run on our chain of one-dof
    joints would check the chain against itself."""
    factory = backend_class(name)
    if factory.can("friction"):
        return "friction laws are written for revolute and prismatic joints"
    if factory.kind == "reference" and not factory.can("multi_dof"):
        return "is a reference engine: it is compared as it loads the robot"
    return None


def generated(name: str) -> bool:
    return backend_class(name).kind == "generated"


MATRIX = [(tree, root, name) for tree in TREES for root in ROOTS for name in backends()
          if not (generated(name) and (tree, root) != SMALL)]


@functools.lru_cache(maxsize=None)
def backend(tree: str, root: str, name: str):
    return dp.get_backend(name, case(tree, root).model)


def _dynamics(be, c):
    yield "τ", be.inverse_dynamics(c.q, c.v, c.a), False
    yield "τ (one state)", be.inverse_dynamics(c.q[1], c.v[1], c.a[1])[None], False
    yield "M", be.mass_matrix(c.q), False
    yield "g", be.gravity_torques(c.q), False
    yield "bias", be.bias_forces(c.q, c.v), False
    yield "C", be.coriolis_matrix(c.q, c.v), False             # Ṁ − 2C skew: pinocchio's C, not ½ ∂h/∂v
    yield "q̈", be.forward_dynamics(c.q, c.v, c.tau), True
    yield "q̈ (one state)", be.forward_dynamics(c.q[2], c.v[2], c.tau[2])[None], True
    yield "τ with f_ext", be.inverse_dynamics(c.q, c.v, c.a, f_ext=c.f_ext), False
    yield "q̈ with f_ext", be.forward_dynamics(c.q, c.v, c.tau, f_ext=c.f_ext), True
    if be.can("joint_wrenches"):
        yield "f, n", np.stack(be.joint_wrenches(c.q, c.v, c.a), axis=1), False
    if be.can("derivatives") and name_of(be) != "symbolic_numba":
        yield from zip(("∂τ/∂q", "∂τ/∂v"), be.inverse_dynamics_derivatives(c.q, c.v, c.a), (False, False))
        yield from zip(("∂q̈/∂q", "∂q̈/∂v", "∂q̈/∂τ"), be.forward_dynamics_derivatives(c.q, c.v, c.tau), (True,) * 3)


def name_of(be) -> str:
    return be.name


ONE_STATE = {"τ (one state)": ("τ", 1), "q̈ (one state)": ("q̈", 2)}


@pytest.mark.parametrize("tree, root, name", MATRIX, ids=[f"{t}-{r}-{n}" for t, r, n in MATRIX])
def test_backend_against_pinocchio(tree, root, name):
    """Every registered backend on each tree and root: every quantity against pinocchio's
    twin, or (a friction backend, a reference engine without ``multi_dof``) a ModelError
    saying why it refuses."""
    c = case(tree, root)
    if refusal(name):
        with pytest.raises(ModelError, match=refusal(name)):
            dp.get_backend(name, c.model)
        return
    be = backend(tree, root, name)
    assert be.can("multi_dof")
    for what, ours, per_state in _dynamics(be, c):
        key, k = ONE_STATE.get(what, (what, None))
        reference = c.ref[key] if k is None else c.ref[key][k:k + 1]
        assert_close(ours, reference, f"{name} {what} on {tree} ({root} root)", per_state)


FRAME_MATRIX = [(tree, root, name) for tree, root, name in MATRIX if not refusal(name)]


@pytest.mark.parametrize("tree, root, name", FRAME_MATRIX, ids=[f"{t}-{r}-{n}" for t, r, n in FRAME_MATRIX])
def test_frames_against_pinocchio(tree, root, name):
    """Placement, and in each reference the Jacobian, J̇, velocity and classical acceleration
    of three frames (the last link, a middle one, the base link)."""
    c = case(tree, root)
    be = backend(tree, root, name)
    for frame in c.frames:
        ref = c.frame_references(frame)
        assert_close(be.frame_placement(c.q, frame), ref["placement"], f"{name} placement of {frame!r}")
        for reference in REFERENCES:
            ours = {"J": be.frame_jacobian(c.q, frame, reference),
                    "J̇": be.frame_jacobian_time_variation(c.q, c.v, frame, reference),
                    "velocity": be.frame_velocity(c.q, c.v, frame, reference),
                    "acceleration": be.frame_acceleration(c.q, c.v, c.a, frame, reference)}
            for what, value in ours.items():
                assert_close(value, ref[f"{what} {reference}"], f"{name} {what} {reference} of {frame!r} on {tree} "
                             f"({root} root)")


def _served(model) -> list:
    """The backends that serve ``model`` and compile nothing for it (generated code is
    checked on SMALL above)."""
    return [name for name in backends() if not refusal(name) and not generated(name)]


# -- robots of the zoo with some joints rewritten -------------------------------------------------

ZOO = {
    "solo12": ("solo_description/solo12.urdf", True, {"FL_HAA": "spherical", "HR_KFE": "planar", "FR_HFE": "floating"}),
    "ur5": ("ur_description/ur5_robot.urdf", False, {"shoulder_lift_joint": "spherical", "wrist_2_joint": "planar"}),
    "talos": ("talos_data/talos_reduced.urdf", True, {"leg_left_1_joint": "spherical", "arm_right_4_joint": "floating",
                                                      "torso_2_joint": "planar", "leg_right_4_joint": "spherical"}),
}
"""example-robot-data robots (the zoo's label, floating base, joints rewritten as a kind)."""


def rewritten(text: str, kinds: dict) -> str:
    """A URDF text with the joints named in ``kinds`` rewritten as that type: their axis,
    limits, dynamics, mimic and safety controller removed (a planar joint moves in its
    frame's x-y plane)."""
    from lxml import etree

    root = etree.fromstring(text.encode())
    found = {joint.get("name"): joint for joint in root.findall("joint")}
    assert set(kinds) <= set(found), f"no joints {sorted(set(kinds) - set(found))}"
    for name, kind in kinds.items():
        found[name].set("type", kind)
        for child in list(found[name]):
            if child.tag in ("axis", "limit", "dynamics", "mimic", "safety_controller"):
                found[name].remove(child)
    return etree.tostring(root, encoding="unicode")


@functools.lru_cache(maxsize=None)
def zoo_case(robot: str) -> Case:
    from dyn_plugin.tools import zoo

    where, floating_base, kinds = ZOO[robot]
    found = [e for e in zoo.discover()[0] if e.label == f"{zoo.ERD}/{where}"]
    if not found:
        pytest.skip(f"{zoo.ERD} is not installed, or has no {where}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.PhysicalValidityWarning)
        return Case(rewritten(Path(found[0].path).read_text(), kinds), floating_base, 7)


FORWARD_DERIVATIVES = ("∂q̈/∂q", "∂q̈/∂v", "∂q̈/∂τ")


def _compiled(model) -> list:
    """The backends served at the zoo's size (nv 12 to 49, chains of up to ~70 one-dof joints):
    those with compiled kernels, and the references; Lagrange-Euler's O(n⁴) numpy (~15 s a
    call there) is held on the random trees."""
    return [name for name in _served(model)
            if backend_class(name).can("single_state_kernels") or backend_class(name).kind == "reference"]


def _floor(c: Case) -> dict:
    """Per forward-dynamics derivative, how far pinocchio's own two models of the text (its
    URDF parser's, through the pinocchio backend, and the twin) disagree: with a joint
    rewritten on a light link, M's condition number reaches 4e5 to 1e6 (solo12, talos) and
    M⁻¹'s round-off 5e-12 to 9e-12 of the norm; ours is held to twice that floor there."""
    mine = dict(zip(FORWARD_DERIVATIVES, dp.get_backend("pinocchio", c.model).forward_dynamics_derivatives(
        c.q, c.v, c.tau)))
    return {what: (np.abs(mine[what] - c.ref[what]).max(axis=(1, 2)) / np.linalg.norm(c.ref[what], axis=(1, 2))).max()
            for what in FORWARD_DERIVATIVES}


@pytest.mark.parametrize("robot", list(ZOO))
def test_zoo_robots_with_joints_rewritten(robot):
    """τ, M, g, bias, q̈ and the derivatives of every backend that serves the robot, and a
    frame's Jacobian and J̇, against pinocchio's twin (the forward derivatives: see _floor)."""
    c = zoo_case(robot)
    assert {c.model.joint_types[i] for i in c.model.multi_dof_indices} == set(ZOO[robot][2].values())
    frame, floor = c.model.frame_names[-1], _floor(c)
    ref = c.frame_references(frame)
    for name in _compiled(c.model):
        be = dp.get_backend(name, c.model)
        for what, ours, per_state in _dynamics(be, c):
            if what in ("f, n", "τ with f_ext", "q̈ with f_ext"):
                continue                            # the random trees hold these; the zoo adds size
            key, k = ONE_STATE.get(what, (what, None))
            assert_close(ours, c.ref[key] if k is None else c.ref[key][k:k + 1], f"{name} {what} on {robot}", per_state,
                         max(TOL, 2 * floor.get(what, 0.0)))
        for reference in REFERENCES:
            assert_close(be.frame_jacobian(c.q, frame, reference), ref[f"J {reference}"], f"{name} J of {frame}")
            assert_close(be.frame_jacobian_time_variation(c.q, c.v, frame, reference), ref[f"J̇ {reference}"],
                         f"{name} J̇ of {frame}")


# -- bad input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["spherical", "floating"])
def test_a_quaternion_is_normalised_near_unit_and_refused_otherwise(kind):
    """|‖quaternion‖ − 1| ≤ 1e-6 (dyn_plugin.joints.UNIT_TOLERANCE) is normalised: the same
    τ, M and frame placement as at the unit quaternion; beyond it an InputError names the
    joint, on every backend that serves the model."""
    c = case("all", "fixed")
    i = next(i for i in c.model.multi_dof_indices if c.model.joint_types[i] == kind)
    where = c.model.joint_slices[i][0]
    quaternion = slice(where.start + (3 if kind == "floating" else 0), where.stop)
    near, far = c.q.copy(), c.q[:2].copy()
    near[:, quaternion] *= 1 + 5e-7
    far[1, quaternion] *= 1.01
    frame = c.frames[0]
    for name in _served(c.model):
        be = dp.get_backend(name, c.model)
        assert_close(be.inverse_dynamics(near, c.v, c.a), c.ref["τ"], f"{name} τ at a nearly unit quaternion")
        assert_close(be.mass_matrix(near), c.ref["M"], f"{name} M at a nearly unit quaternion")
        assert_close(be.frame_placement(near, frame), be.frame_placement(c.q, frame), f"{name} frame placement")
        message = rf"joint {c.model.joint_names[i]!r} \({kind}\) takes a unit quaternion.*state 1 has norm 1.01"
        for call in (lambda: be.inverse_dynamics(far, c.v[:2], c.a[:2]), lambda: be.mass_matrix(far),
                     lambda: be.forward_dynamics(far, c.v[:2], c.tau[:2]), lambda: be.frame_placement(far, frame)):
            with pytest.raises(InputError, match=message):
                call()


def test_a_configuration_of_the_wrong_size_is_refused():
    """A planar joint's θ is one angle: pinocchio's (x, y, cos θ, sin θ) configuration is one
    entry too long, and so refused by its shape, as a velocity given for q."""
    c = case("planar", "fixed")
    be = dp.get_backend("newton_euler", c.model)
    for q in (c.twin.pin_q(c.q[0]), c.q[0, :-1], c.v[0]):
        if len(q) == c.model.nq:
            continue                                # (a velocity as long as q: no shape to tell)
        with pytest.raises(InputError, match=rf"q must have shape \({c.model.nq},\) or \(N, {c.model.nq}\)"):
            be.inverse_dynamics(q, c.v[0], c.a[0])


def test_a_spherical_joint_in_a_dh_table_is_refused():
    """A DH row places one joint of one degree of freedom: a spherical one is refused by name."""
    row = DHRow("spherical", alpha=0.0, a=0.1, d=0.0, theta=0.0, mass=1.0, inertia=(0.1, 0.1, 0.1, 0, 0, 0),
                name="shoulder")
    with pytest.raises(ModelError, match="link 'shoulder': joint must be 'revolute' or 'prismatic', got 'spherical'"):
        model_from_dh([row], "standard")


def test_armature_on_a_joint_of_several_degrees_of_freedom_is_refused():
    """Rotor inertia is one number for one degree of freedom: on a spherical joint it would be
    left out of M, so the model refuses it by name."""
    model = case("spherical", "fixed").model
    armature = np.zeros(model.n)
    armature[model.multi_dof_indices[0]] = 0.5
    with pytest.raises(ModelError, match=f"joint {model.joint_names[model.multi_dof_indices[0]]!r} \\(spherical\\)"):
        dataclasses.replace(model, armature=armature)


# -- the twin itself --------------------------------------------------------------------------------

def _parser_and_twin_agree(text: str, floating_base: bool, seed: int):
    """pinocchio's URDF parser and the twin (pinocchio_twin.pinocchio_model_of_urdf) on a text
    both read: rnea and crba at random states, joints matched by name."""
    from pinocchio_twin import pinocchio_model_of_urdf

    twin = pinocchio_model_of_urdf(text, floating_base)
    parsed = pin.buildModelFromXML(text, *((pin.JointModelFreeFlyer(),) if floating_base else ()))
    q_map, v_map = [], []
    for name in list(parsed.names)[1:]:
        a, b = parsed.joints[parsed.getJointId(name)], twin.joints[twin.getJointId(name)]
        q_map += zip(range(a.idx_q, a.idx_q + a.nq), range(b.idx_q, b.idx_q + b.nq))
        v_map += zip(range(a.idx_v, a.idx_v + a.nv), range(b.idx_v, b.idx_v + b.nv))
    (qa, qb), (va, vb) = (np.array(m).T for m in (q_map, v_map))
    rng, pd, td = np.random.default_rng(seed), parsed.createData(), twin.createData()
    for _ in range(2):
        q = pin.randomConfiguration(parsed, -np.ones(parsed.nq), np.ones(parsed.nq))
        v, a = rng.normal(size=(2, parsed.nv))
        q_twin, v_twin, a_twin = np.empty(twin.nq), np.empty(twin.nv), np.empty(twin.nv)
        q_twin[qb], v_twin[vb], a_twin[vb] = q[qa], v[va], a[va]
        tau = pin.rnea(parsed, pd, q, v, a)
        assert_close(pin.rnea(twin, td, q_twin, v_twin, a_twin)[vb], tau[va], "the twin's rnea")
        M, M_twin = (np.triu(x) + np.triu(x, 1).T for x in (pin.crba(parsed, pd, q), pin.crba(twin, td, q_twin)))
        assert_close(M_twin[np.ix_(vb, vb)], M[np.ix_(va, va)], "the twin's crba")


@pytest.mark.parametrize("robot", list(ZOO))
def test_the_twin_is_pinocchios_parser_on_the_zoo_robots(robot):
    zoo_case(robot)                                                  # (skips without example-robot-data)
    from dyn_plugin.tools import zoo

    where, floating_base, _ = ZOO[robot]
    path = next(e.path for e in zoo.discover()[0] if e.label == f"{zoo.ERD}/{where}")
    _parser_and_twin_agree(Path(path).read_text(), floating_base, 5)


@pytest.mark.parametrize("tree", ["planar", "floating"])
def test_the_twin_is_pinocchios_parser_on_planar_and_floating_joints(tree):
    seed, n, options = TREES[tree]
    _parser_and_twin_agree(random_tree_urdf(np.random.default_rng(seed), n, **options), True, seed)


def test_pybullets_spherical_joint_with_cone_limits():
    """pybullet_data's spherical_joint_limit.urdf: a spherical joint with pybullet's cone
    ``<limit lower upper twist>`` (no velocity, which urdfdom wants of a floating joint's
    limit): every backend that serves it against the twin."""
    import pybullet_data

    text = (Path(pybullet_data.getDataPath()) / "spherical_joint_limit.urdf").read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.PhysicalValidityWarning)        # its neck breaks the triangle inequality
        c = Case(text, False, 3)
    for name in _compiled(c.model):
        be = dp.get_backend(name, c.model)
        assert_close(be.inverse_dynamics(c.q, c.v, c.a), c.ref["τ"], f"{name} τ")
        assert_close(be.mass_matrix(c.q), c.ref["M"], f"{name} M")


@pytest.mark.parametrize("root", ROOTS)
def test_joint_wrenches_of_a_backend_without_them_are_a_clear_error(root):
    """lagrange_euler computes no joint wrenches: named, not an AttributeError of its chain."""
    c = case("spherical", root)
    be = dp.get_backend("lagrange_euler", c.model)
    with pytest.raises(dp.BackendError, match="joint_wrenches: backend 'lagrange_euler' has none"):
        be.joint_wrenches(c.q[0], c.v[0], c.a[0])


@pytest.mark.parametrize("tree", list(TREES))
def test_the_regressor_of_joints_of_several_degrees_of_freedom(tree):
    """τ = Y θ against pinocchio's rnea; and Y depends on the motion only: the same Y times
    another robot's parameters (each link's mass and inertia scaled differently) is that
    robot's τ."""
    c = case(tree, "fixed")
    model, theta = c.model, c.model.inertial_parameters(flat=True)
    scale = 1.0 + np.arange(model.n)
    other = dataclasses.replace(model, masses=model.masses * scale, inertias=model.inertias * (2 * scale)[:, None, None])
    tau_other = dp.get_backend("pinocchio", other).inverse_dynamics(c.q, c.v, c.a)
    for name in ("newton_euler", "lagrange_euler", "pinocchio"):
        Y = dp.get_backend(name, model).regressor(c.q, c.v, c.a)
        assert Y.shape == (N, model.nv, 10 * model.n)
        assert_close(Y @ theta, c.ref["τ"], f"{name} Y θ on {tree}")
        assert_close(Y @ other.inertial_parameters(flat=True), tau_other, f"{name} Y θ' on {tree}")
    one = dp.get_backend("newton_euler", model).regressor(c.q[1], c.v[1], c.a[1])
    assert_close(one @ theta, c.ref["τ"][1], f"one state on {tree}")


def test_the_regressor_of_a_floating_base_is_refused_by_name():
    c = case("spherical", "floating")
    with pytest.raises(ModelError, match="not a floating base's; load the robot with a fixed base"):
        dp.get_backend("newton_euler", c.model).regressor(c.q, c.v, c.a)


@pytest.mark.parametrize("name", ["newton_euler", "lagrange_euler"])
def test_velocities_that_overflow_name_the_input_not_the_chain(name):
    """qd = 1e160 on a spherical joint: ω × v overflows in the chain's terms; the error names
    the model's velocity, not the chain's 'qdd' (which the caller never gave)."""
    c = case("spherical", "fixed")
    i = c.model.multi_dof_indices[0]
    k = c.model.joint_slices[i][1].start
    v = c.v[:2].copy()
    v[1, k] = 1e160
    be = dp.get_backend(name, c.model)
    for call in (lambda: be.inverse_dynamics(c.q[:2], v, c.a[:2]), lambda: be.forward_dynamics(c.q[:2], v, c.tau[:2])):
        with pytest.raises(dp.NumericalError, match=rf"state 1.*qd = 1e\+160 at (joint )?{c.model.velocity_names[k]!r}"):
            call()
