"""Frames and their Jacobians (dyn_plugin.frames, Backend.frame_*) against pinocchio.

The references are raw pinocchio calls on a model pinocchio builds itself from the same
URDF text (``buildModelFromXML``, with ``JointModelFreeFlyer`` for a floating base),
joints matched by name: ``updateFramePlacements`` for placements,
``computeFrameJacobian`` for J, ``getFrameJacobianTimeVariation`` after
``computeJointJacobiansTimeVariation`` for J̇, ``getFrameVelocity`` and
``getFrameClassicalAcceleration`` after ``forwardKinematics(q, v, a)``; each in
pinocchio's three ``ReferenceFrame`` values.  Robots: the bundled ones, random URDF trees
with fixed joints (links merged into their parents are frames too), floating bases.
Tolerance: |ours − pinocchio| ≤ 1e-12 · max(1, |pinocchio|), entry by entry.

Then checks that need no pinocchio: central differences of J along q̇ (J̇), of the
placement (the velocity J q̇) and of the velocity along a trajectory (the classical
acceleration), a closed form for a tool frame on a one-joint arm, batch shapes, mimic
joints (J = J_full G) and bad input.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin import configuration  # noqa: E402
from dyn_plugin.backends.registry import backends  # noqa: E402
from dyn_plugin.errors import InputError, URDFWarning  # noqa: E402
from dyn_plugin.frames import REFERENCES  # noqa: E402
from dyn_plugin.robots import robot_path  # noqa: E402
from dyn_plugin.sampling import random_states  # noqa: E402
from pinocchio_twin import PinocchioTwin  # noqa: E402
from urdf_factory import random_tree_urdf  # noqa: E402

TOL = 1e-12
PIN_REFERENCE = {"world": pin.ReferenceFrame.WORLD, "local": pin.ReferenceFrame.LOCAL,
                 "local_world_aligned": pin.ReferenceFrame.LOCAL_WORLD_ALIGNED}
QUANTITIES = ("jacobian", "jacobian_time_variation", "velocity", "acceleration")


def assert_close(ours, ref, what, tol=TOL):
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape}, expected {ref.shape}"
    err = np.abs(ours - ref) / np.maximum(1.0, np.abs(ref))
    worst = np.unravel_index(np.argmax(err), err.shape)
    assert err.max() <= tol, (f"{what}: error {err.max():.3e} > {tol:g} at {worst}: ours {ours[worst]!r}, "
                              f"pinocchio {ref[worst]!r}")


class Case(PinocchioTwin):
    """Our model of a URDF, pinocchio's own model of the same text, random states, and the
    pinocchio references of every frame quantity."""

    def __init__(self, model, xml, seed=0, count=4):
        super().__init__(model, xml)
        self.states = random_states(model, count, seed=seed)


    def frame_id(self, name):
        assert self.pm.existFrame(name, pin.BODY), name
        return self.pm.getFrameId(name, pin.BODY)

    def placement(self, frame):
        def one(q):
            pin.forwardKinematics(self.pm, self.pd, self.pin_q(q))
            pin.updateFramePlacements(self.pm, self.pd)
            return self.pd.oMf[self.frame_id(frame)].homogeneous
        return np.array([one(q) for q in self.states.q])

    def reference(self, quantity, frame, reference):
        """pinocchio's value of ``quantity`` (one of QUANTITIES) at every state, (N, ...)."""
        pm, pd, fid, rf = self.pm, self.pd, self.frame_id(frame), PIN_REFERENCE[reference]
        out = []
        for q, v, a in zip(self.states.q, self.states.qd, self.states.qdd):
            q, v, a = self.pin_q(q), self.pin_v(v), self.pin_v(a)
            if quantity == "jacobian":
                out.append(pin.computeFrameJacobian(pm, pd, q, fid, rf)[:, self.iv])
            elif quantity == "jacobian_time_variation":
                pin.computeJointJacobiansTimeVariation(pm, pd, q, v)
                out.append(pin.getFrameJacobianTimeVariation(pm, pd, fid, rf)[:, self.iv])
            else:
                pin.forwardKinematics(pm, pd, q, v, a)
                get = pin.getFrameVelocity if quantity == "velocity" else pin.getFrameClassicalAcceleration
                out.append(get(pm, pd, fid, rf).vector)
        return np.array(out)

    def ours(self, backend, quantity, frame, reference):
        s = self.states
        args = {"jacobian": (s.q,), "jacobian_time_variation": (s.q, s.qd), "velocity": (s.q, s.qd),
                "acceleration": (s.q, s.qd, s.qdd)}[quantity]
        return getattr(backend, f"frame_{quantity}")(*args, frame, reference=reference)


def _bundled(name, floating_base=False):
    return Case(dp.load_robot(name, floating_base=floating_base), robot_path(name).read_text(), seed=7)


def _tree(seed, n, floating_base=False, **options):
    xml = random_tree_urdf(np.random.default_rng(seed), n, fixed=True, name=f"frames{seed}", **options)
    return Case(dp.load_urdf_string(xml, floating_base=floating_base), xml, seed=seed)


CASES = {
    **{name: functools.partial(_bundled, name) for name in dp.list_robots()},
    "puma560-floating": functools.partial(_bundled, "puma560", True),
    "tree5": functools.partial(_tree, 301, 5),
    "tree7": functools.partial(_tree, 302, 7),
    "chain4": functools.partial(_tree, 303, 4, branched=False),
    "tree6-no-prismatic": functools.partial(_tree, 304, 6, prismatic=False),
    "tree5-floating": functools.partial(_tree, 305, 5, True),
    "chain3-floating": functools.partial(_tree, 306, 3, True, branched=False),
}


@functools.lru_cache(maxsize=None)
def case_of(label):
    return CASES[label]()


@functools.lru_cache(maxsize=None)
def ours_of(label):
    return dp.get_backend("newton_euler", case_of(label).model)


case_params = pytest.mark.parametrize("label", list(CASES))


# -- against pinocchio -------------------------------------------------------------------------

@case_params
def test_frame_names_are_the_urdf_links(label):
    case = case_of(label)
    links = [f.name for f in case.pm.frames if f.type == pin.BODY]
    assert sorted(case.model.frame_names) == sorted(links)
    assert len(set(case.model.frame_names)) == len(case.model.frame_names)


def test_random_trees_have_frames_merged_through_fixed_joints():
    """The random trees carry links merged into their parents (the frames of interest here)."""
    for label in ("tree5", "tree7", "chain4", "tree5-floating"):
        model = case_of(label).model
        merged = set(model.frame_names) - set(model.link_names) - {model.base_link}
        assert merged, label


@case_params
def test_placement_is_pinocchios(label):
    case, be = case_of(label), ours_of(label)
    for frame in case.model.frame_names:
        assert_close(be.frame_placement(case.states.q, frame), case.placement(frame), f"{label} {frame} placement")


@case_params
@pytest.mark.parametrize("reference", REFERENCES)
@pytest.mark.parametrize("quantity", QUANTITIES)
def test_frame_quantity_is_pinocchios(label, quantity, reference):
    case, be = case_of(label), ours_of(label)
    for frame in case.model.frame_names:
        assert_close(case.ours(be, quantity, frame, reference), case.reference(quantity, frame, reference),
                     f"{label} {frame} {quantity} ({reference})")


@pytest.mark.parametrize("label", ["puma560", "tree7", "tree5-floating"])
def test_every_backend_has_the_frames(label):
    """Ours and the references (the pinocchio backend calls pinocchio, the rest share
    dyn_plugin.frames) through the same public methods, against raw pinocchio."""
    case = case_of(label)
    names = backends(("ours", "reference")) if label == "puma560" else ["lagrange_euler", "pinocchio", "pybullet"]
    frame = case.model.frame_names[-1]
    for name in names:
        be = dp.get_backend(name, case.model)
        assert_close(be.frame_placement(case.states.q, frame), case.placement(frame), f"{name} placement")
        for quantity in QUANTITIES:
            for reference in REFERENCES:
                assert_close(case.ours(be, quantity, frame, reference), case.reference(quantity, frame, reference),
                             f"{name} {label} {frame} {quantity} ({reference})")


def test_pinocchio_reference_frame_values_are_accepted():
    case, be = case_of("tree5"), ours_of("tree5")
    frame = case.model.frame_names[2]
    for name, value in PIN_REFERENCE.items():
        assert np.array_equal(be.frame_jacobian(case.states.q, frame, value),
                              be.frame_jacobian(case.states.q, frame, name.upper()))


# -- without pinocchio: finite differences, a closed form, shapes ------------------------------

def _moved(model, q, step):
    """q moved by ``step`` (N, nv) of velocity × time (SE(3) exponential for a floating base)."""
    return configuration.integrate(model, q, step)


@pytest.mark.parametrize("label", ["puma560", "stanford", "tree7", "tree5-floating", "chain3-floating"])
def test_time_variation_is_the_derivative_of_the_jacobian(label):
    """J̇ = d/dt J(q(t)) along q̇: central differences, h = 1e-5 (error ~ h² + 1e-16 / h)."""
    case, be, h = case_of(label), ours_of(label), 1e-5
    q, v = case.states.q, case.states.qd
    for frame in case.model.frame_names:
        for reference in REFERENCES:
            numeric = (be.frame_jacobian(_moved(case.model, q, h * v), frame, reference)
                       - be.frame_jacobian(_moved(case.model, q, -h * v), frame, reference)) / (2 * h)
            assert_close(be.frame_jacobian_time_variation(q, v, frame, reference), numeric,
                         f"{label} {frame} J̇ ({reference})", tol=1e-7)


@pytest.mark.parametrize("label", ["scara", "tree7", "chain4", "tree5-floating"])
def test_jacobian_gives_the_derivative_of_the_placement(label):
    """J q̇ world-aligned = (ṗ, ω) with [ω]× = Ṙ Rᵀ, from central differences of the placement."""
    case, be, h = case_of(label), ours_of(label), 1e-6
    q, v = case.states.q, case.states.qd
    for frame in case.model.frame_names:
        T = be.frame_placement(q, frame)
        dT = (be.frame_placement(_moved(case.model, q, h * v), frame)
              - be.frame_placement(_moved(case.model, q, -h * v), frame)) / (2 * h)
        W = dT[:, :3, :3] @ np.swapaxes(T[:, :3, :3], 1, 2)
        numeric = np.concatenate([dT[:, :3, 3], np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], axis=1)], axis=1)
        J = be.frame_jacobian(q, frame)
        assert_close(np.einsum("nij,nj->ni", J, v), numeric, f"{label} {frame} J q̇", tol=1e-8)
        local = np.concatenate([np.einsum("nji,nj->ni", T[:, :3, :3], numeric[:, :3]),
                                np.einsum("nji,nj->ni", T[:, :3, :3], numeric[:, 3:])], axis=1)
        assert_close(be.frame_velocity(q, v, frame, "local"), local, f"{label} {frame} local velocity", tol=1e-8)


@pytest.mark.parametrize("label", ["puma560", "tree7", "tree5-floating"])
def test_classical_acceleration_is_the_derivative_of_the_velocity(label):
    """Along q(t) = q ⊕ (t q̇ + t²/2 q̈), the world-aligned velocity's central difference is [a; ω̇]."""
    case, be, h = case_of(label), ours_of(label), 1e-5
    q, v, a = case.states.q, case.states.qd, case.states.qdd
    for frame in case.model.frame_names:
        def velocity(t):
            return be.frame_velocity(_moved(case.model, q, t * v + t * t / 2 * a), v + t * a, frame)
        numeric = (velocity(h) - velocity(-h)) / (2 * h)
        assert_close(be.frame_acceleration(q, v, a, frame), numeric, f"{label} {frame} acceleration", tol=1e-7)


TOOL_ARM = """<robot name="tool_arm">
  <link name="base_link"/>
  <link name="link1"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tool0"/>
  <link name="camera_mount"/>
  <joint name="joint1" type="revolute"><parent link="base_link"/><child link="link1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="tool_joint" type="fixed"><parent link="link1"/><child link="tool0"/>
    <origin xyz="0.5 0 0.1" rpy="0 0 1.5707963267948966"/></joint>
  <joint name="camera_joint" type="fixed"><parent link="base_link"/><child link="camera_mount"/>
    <origin xyz="0 0.2 0.3"/></joint>
</robot>"""


def test_tool_frame_of_a_one_joint_arm_in_closed_form():
    """tool0, 0.5 m out along link1's x and turned 90° about z, on a joint about z: at θ its
    origin is (0.5 cos θ, 0.5 sin θ, 0.1), v = θ̇ (−0.5 sin θ, 0.5 cos θ, 0), ω = (0, 0, θ̇);
    a camera mount fixed to the base does not move."""
    model = dp.load_urdf_string(TOOL_ARM)
    assert model.frame_names == ("base_link", "camera_mount", "link1", "tool0")
    be = dp.get_backend("newton_euler", model)
    theta, rate, acc = 0.7, 1.3, -0.4
    T = be.frame_placement([theta], "tool0")
    c, s = np.cos(theta), np.sin(theta)
    assert_close(T[:3, 3], [0.5 * c, 0.5 * s, 0.1], "tool0 position")
    assert_close(T[:3, :3], [[-s, -c, 0], [c, -s, 0], [0, 0, 1]], "tool0 rotation")
    assert_close(be.frame_jacobian([theta], "tool0")[:, 0], [-0.5 * s, 0.5 * c, 0, 0, 0, 1], "tool0 J")
    local = [0.5, 0, 0, 0, 0, 1]                                  # the tool's x axis is link1's y axis
    assert_close(be.frame_jacobian([theta], "tool0", "local")[:, 0], local, "tool0 local J")
    centripetal = -0.5 * rate ** 2 * np.array([c, s, 0])
    tangential = 0.5 * acc * np.array([-s, c, 0])
    assert_close(be.frame_acceleration([theta], [rate], [acc], "tool0"),
                 np.concatenate([centripetal + tangential, [0, 0, acc]]), "tool0 acceleration")
    assert_close(be.frame_placement([theta], "camera_mount")[:3, 3], [0, 0.2, 0.3], "camera position")
    assert not be.frame_jacobian([theta], "camera_mount", "world").any()


def test_batch_shapes_and_single_states():
    for label in ("stanford", "tree5-floating"):
        case, be = case_of(label), ours_of(label)
        s, nv, N = case.states, case.model.nv, len(case.states.q)
        frame = case.model.frame_names[-1]
        batch = {"placement": be.frame_placement(s.q, frame), "jacobian": be.frame_jacobian(s.q, frame),
                 "rate": be.frame_jacobian_time_variation(s.q, s.qd, frame, "world"),
                 "velocity": be.frame_velocity(s.q, s.qd, frame, "local"),
                 "acceleration": be.frame_acceleration(s.q, s.qd, s.qdd, frame)}
        shapes = {"placement": (4, 4), "jacobian": (6, nv), "rate": (6, nv), "velocity": (6,), "acceleration": (6,)}
        for key, shape in shapes.items():
            assert batch[key].shape == (N,) + shape, key
        single = {"placement": be.frame_placement(s.q[1], frame), "jacobian": be.frame_jacobian(s.q[1], frame),
                  "rate": be.frame_jacobian_time_variation(s.q[1], s.qd[1], frame, "world"),
                  "velocity": be.frame_velocity(s.q[1], s.qd[1], frame, "local"),
                  "acceleration": be.frame_acceleration(s.q[1], s.qd[1], s.qdd[1], frame)}
        for key, shape in shapes.items():
            assert single[key].shape == shape, key
            assert_close(single[key], batch[key][1], f"{label} single {key}", tol=1e-15)


def test_mimic_jacobian_is_the_full_jacobian_times_g():
    """Mimic joints follow their leaders: pinocchio's full model (every joint independent)
    gives J_full, and J = J_full G with G written from the resolved relations."""
    from test_mimic import MIMIC_URDF

    for floating_base in (False, True):
        model = dp.load_urdf_string(MIMIC_URDF, mimic=True, floating_base=floating_base)
        with pytest.warns(URDFWarning, match="mimic joints are kept"):
            full = Case(dp.load_urdf_string(MIMIC_URDF, floating_base=floating_base), MIMIC_URDF, seed=5)
        base, base_q = model.nv - len(model.independent_joints), model.nq - len(model.independent_joints)
        G = np.zeros((full.model.nv, model.nv))
        G[:base, :base] = np.eye(base)
        offsets = np.zeros(full.model.n)
        for k, name in enumerate(model.independent_joints):
            G[base + full.model.joint_names.index(name), base + k] = 1.0
        for relation in model.mimic:
            row = full.model.joint_names.index(relation.joint)
            G[base + row, base + model.independent_joints.index(relation.leader)] = relation.multiplier
            offsets[row] = relation.offset
        s = random_states(model, 3, seed=6)
        q_full = np.concatenate([s.q[:, :base_q], s.q[:, base_q:] @ G[base:, base:].T + offsets], axis=1)
        full.states = type(s)(q=q_full, qd=s.qd @ G.T, qdd=s.qdd @ G.T, tau=None)
        be = dp.get_backend("newton_euler", model)
        for frame in model.frame_names:
            for reference in REFERENCES:
                assert_close(be.frame_jacobian(s.q, frame, reference), full.reference("jacobian", frame, reference) @ G,
                             f"mimic {frame} J ({reference})")
                assert_close(be.frame_jacobian_time_variation(s.q, s.qd, frame, reference),
                             full.reference("jacobian_time_variation", frame, reference) @ G, f"mimic {frame} J̇")
                assert_close(be.frame_acceleration(s.q, s.qd, s.qdd, frame, reference),
                             full.reference("acceleration", frame, reference), f"mimic {frame} acceleration")


def test_models_without_a_urdf_and_copies_keep_their_frames():
    row = dp.DHRow("revolute", alpha=0.5, a=0.3, d=0.1, theta=0.0, mass=1.0, inertia=(0.1, 0.1, 0.1, 0, 0, 0))
    dh = dp.model_from_dh([row, row], "standard")
    assert dh.frame_names == (dh.base_link,) + dh.link_names
    case = case_of("tree7")
    model = case.model
    for copy in (model.with_gravity([0, 0, -1]), model.with_floating_base(True).with_floating_base(False),
                 model.without_mimic()):
        assert copy.frame_names == model.frame_names
        frame = model.frame_names[-1]
        assert_close(dp.get_backend("newton_euler", copy).frame_jacobian(case.states.q, frame),
                     case.reference("jacobian", frame, "local_world_aligned"), f"copy {frame}")


# -- bad input --------------------------------------------------------------------------------

def test_unknown_frame_lists_the_valid_names():
    model = dp.load_urdf_string(TOOL_ARM)
    be = dp.get_backend("newton_euler", model)
    for bad in ("tool1", None, 3):
        with pytest.raises(InputError) as error:
            be.frame_jacobian([0.1], bad)
        message = str(error.value)
        assert repr(bad) in message and all(repr(name) in message for name in model.frame_names), message
    with pytest.raises(InputError, match="tool_arm"):
        dp.get_backend("pinocchio", model).frame_placement([0.1], "tool1")


def test_bad_shapes_and_references_are_named():
    case, be = case_of("tree5-floating"), ours_of("tree5-floating")
    nq, nv, frame = case.model.nq, case.model.nv, case.model.frame_names[1]
    q, v = case.states.q, case.states.qd
    with pytest.raises(InputError, match=rf"q must have shape \({nq},\) or \(N, {nq}\)"):
        be.frame_jacobian(q[:, :-1], frame)
    with pytest.raises(InputError, match=rf"qd must have shape \({nv},\) or \(N, {nv}\)"):
        be.frame_velocity(q, v[:, :-1], frame)
    with pytest.raises(InputError, match=rf"qdd must have shape \({nv},\) or \(N, {nv}\)"):
        be.frame_acceleration(q, v, np.zeros(nv + 1), frame)
    with pytest.raises(InputError, match="batch sizes differ"):
        be.frame_jacobian_time_variation(q, v[:2], frame)
    with pytest.raises(InputError, match="'local_world_aligned', 'world', 'local'"):
        be.frame_jacobian(q, frame, reference="body")
    with pytest.raises(InputError, match="unit quaternion"):
        be.frame_placement(np.concatenate([q[0, :3], [0, 0, 0, 2.0], q[0, 7:]]), frame)
    bad = q.copy()
    bad[1, -1] = np.nan
    with pytest.raises(InputError, match="non-finite"):
        be.frame_placement(bad, frame)
