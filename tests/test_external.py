"""External wrenches (``f_ext=``) and payloads (``model.with_payload``) against pinocchio.

The references are raw pinocchio calls on a model pinocchio builds itself from the same
URDF text: ``rnea`` and ``aba`` with ``fext``, our world-aligned wrench [f; m] at a frame
origin p converted to pinocchio's convention (a ``pin.Force`` per joint, in the joint's
local frame, about the joint origin o: Rᵀ f and Rᵀ (m + (p − o) × f), R, o from
``data.oMi``), and ``data.f`` for the joint reaction wrenches.  A payload model is compared
with pinocchio's model whose ``inertias[j]`` gets the payload's ``pin.Inertia`` placed by
the frame's placement in its joint.  Tolerance: ≤ 1e-9 · max(1, |pinocchio|) entry by
entry (measured: ~1e-14).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin.errors import InputError, ModelError  # noqa: E402
from dyn_plugin.friction.law import direction  # noqa: E402
from dyn_plugin.friction.parameters import load_friction  # noqa: E402
from dyn_plugin.robots import robot_path  # noqa: E402
from dyn_plugin.sampling import random_states  # noqa: E402
from dyn_plugin.urdf import urdf_text  # noqa: E402
from pinocchio_twin import PinocchioTwin  # noqa: E402
from urdf_factory import random_tree_urdf  # noqa: E402

TOL = 1e-9
N = 3


def assert_close(ours, ref, what, tol=TOL):
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape}, expected {ref.shape}"
    err = np.abs(ours - ref) / np.maximum(1.0, np.abs(ref))
    assert err.max() <= tol, f"{what}: error {err.max():.3e} > {tol:g}"


class Case(PinocchioTwin):
    """Our model of a URDF, pinocchio's model of the same text, states and wrenches."""

    def __init__(self, model, xml, seed=0):
        super().__init__(model, xml)
        self.xml = xml
        self.states = random_states(model, N, seed=seed)
        rng = np.random.default_rng(seed)
        names = model.frame_names
        # several wrenches at once: the last frame (one for all states), a middle one (one
        # per state), the base link (on a fixed base: no effect)
        self.f_ext = {names[-1]: 20 * rng.normal(size=6), names[len(names) // 2]: 10 * rng.normal(size=(N, 6)),
                      names[0]: 5 * rng.normal(size=6)}

    def build(self):
        root = (pin.JointModelFreeFlyer(),) if self.model.floating_base else ()
        return pin.buildModelFromXML(self.xml, *root)

    def fext(self, k, f_ext, pm=None, pd=None):
        """pinocchio's fext (a Force per joint: local frame, about the joint origin) of the
        world-aligned wrenches ``f_ext`` at state k."""
        pm, pd = pm or self.pm, pd or self.pd
        pin.forwardKinematics(pm, pd, self.pin_q(self.states.q[k]))
        pin.updateFramePlacements(pm, pd)
        out = [pin.Force.Zero() for _ in range(pm.njoints)]
        for name, w in f_ext.items():
            w = np.broadcast_to(w, (N, 6))[k]
            fid = pm.getFrameId(name, pin.BODY)
            j = pm.frames[fid].parentJoint
            p, R, o = pd.oMf[fid].translation, pd.oMi[j].rotation, pd.oMi[j].translation
            out[j] += pin.Force(R.T @ w[:3], R.T @ (w[3:] + np.cross(p - o, w[:3])))
        return out

    def rnea(self, f_ext, pm=None, pd=None):
        pm, pd = pm or self.pm, pd or self.pd
        s = self.states
        return np.array([pin.rnea(pm, pd, self.pin_q(s.q[k]), self.pin_v(s.qd[k]), self.pin_v(s.qdd[k]),
                                  self.fext(k, f_ext, pm, pd))[self.iv] for k in range(N)])

    def aba(self, tau, f_ext, pm=None, pd=None):
        pm, pd = pm or self.pm, pd or self.pd
        s = self.states
        return np.array([pin.aba(pm, pd, self.pin_q(s.q[k]), self.pin_v(s.qd[k]), self.pin_v(tau[k]),
                                 self.fext(k, f_ext, pm, pd))[self.iv] for k in range(N)])


def _bundled(name, floating_base=False):
    model, xml = dp.load_robot(name, floating_base=floating_base), robot_path(name).read_text()
    if floating_base and model.base_mass == 0:          # a massless floating base has no forward dynamics
        model = model.with_payload(model.base_link, 8.0, (0.0, 0.0, 0.1), np.diag([0.1, 0.12, 0.08]))
        xml = urdf_text(model)                           # pinocchio loads the base payload too
    return Case(model, xml, seed=11)


def _tree(seed, n, floating_base=False, **options):
    xml = random_tree_urdf(np.random.default_rng(seed), n, fixed=True, name=f"ext{seed}", **options)
    return Case(dp.load_urdf_string(xml, floating_base=floating_base), xml, seed=seed)


CASES = {
    **{name: functools.partial(_bundled, name) for name in dp.list_robots()},
    "puma560-floating": functools.partial(_bundled, "puma560", True),
    "tree5": functools.partial(_tree, 401, 5),
    "tree7": functools.partial(_tree, 402, 7),
    "chain4": functools.partial(_tree, 403, 4, branched=False),
    "tree5-floating": functools.partial(_tree, 405, 5, True),
}


@functools.lru_cache(maxsize=None)
def case_of(label):
    return CASES[label]()


case_params = pytest.mark.parametrize("label", list(CASES))
BACKENDS = ("newton_euler", "lagrange_euler", "pinocchio")


# -- inverse and forward dynamics with external wrenches ------------------------------------

@case_params
@pytest.mark.parametrize("backend", BACKENDS)
def test_inverse_and_forward_dynamics_with_wrenches_are_pinocchios(label, backend):
    case = case_of(label)
    be, s = dp.get_backend(backend, case.model), case.states
    tau_ref = case.rnea(case.f_ext)
    tau = be.inverse_dynamics(s.q, s.qd, s.qdd, f_ext=case.f_ext)
    assert_close(tau, tau_ref, f"{label} {backend} ID")
    assert np.abs(tau - be.inverse_dynamics(s.q, s.qd, s.qdd)).max() > 1e-3      # the load is felt
    for k in range(N):                                                           # single states
        one = {name: np.broadcast_to(w, (N, 6))[k] for name, w in case.f_ext.items()}
        assert_close(be.inverse_dynamics(s.q[k], s.qd[k], s.qdd[k], f_ext=one), tau_ref[k], f"{label} ID {k}")
    if case.model.floating_base and backend == "lagrange_euler":
        return                                                                   # covered by the others
    torques = tau_ref + np.random.default_rng(1).normal(size=tau_ref.shape)
    qdd_ref = case.aba(torques, case.f_ext)
    assert_close(be.forward_dynamics(s.q, s.qd, torques, f_ext=case.f_ext), qdd_ref, f"{label} {backend} FD")
    one = {name: np.broadcast_to(w, (N, 6))[0] for name, w in case.f_ext.items()}
    assert_close(be.forward_dynamics(s.q[0], s.qd[0], torques[0], f_ext=one), qdd_ref[0], f"{label} FD single")


def test_generalized_force_is_jacobian_transpose_wrench():
    """τ(f_ext) − τ = −Σ Jᵀ w with the frames' local_world_aligned Jacobians, one wrench at a time."""
    case = case_of("tree7")
    be, s = dp.get_backend("newton_euler", case.model), case.states
    free = be.inverse_dynamics(s.q, s.qd, s.qdd)
    w = np.array([1.0, -2.0, 3.0, 0.5, -0.25, 0.125])
    for frame in case.model.frame_names:
        J = be.frame_jacobian(s.q, frame)
        assert_close(be.inverse_dynamics(s.q, s.qd, s.qdd, f_ext={frame: w}), free - J.transpose(0, 2, 1) @ w,
                     frame, tol=1e-12)


def test_no_wrench_and_base_wrench_change_nothing():
    case = case_of("puma560")
    be, s = dp.get_backend("newton_euler", case.model), case.states
    free = be.inverse_dynamics(s.q, s.qd, s.qdd)
    assert_close(be.inverse_dynamics(s.q, s.qd, s.qdd, f_ext={}), free, "empty", tol=0)
    assert_close(be.inverse_dynamics(s.q, s.qd, s.qdd, f_ext={case.model.base_link: np.ones(6)}), free, "base",
                 tol=0)


def test_mimic_joints_take_wrenches_through_g():
    """τ with mimic joints = Gᵀ τ_full, wrenches included (the full model is independent)."""
    from dyn_plugin import mimic
    from test_mimic import MIMIC_URDF

    model = dp.load_urdf_string(MIMIC_URDF, mimic=True)
    full = mimic.full_model(model)
    s = random_states(model, N, seed=3)
    G = mimic.velocity_map(model)
    f_ext = {name: np.arange(6.0) + k for k, name in enumerate(model.frame_names)}
    for backend in ("newton_euler", "lagrange_euler"):       # (pinocchio does not load this one)
        be, be_full = dp.get_backend(backend, model), dp.get_backend("newton_euler", full)
        q_full = mimic.full_configuration(model, s.q)
        ref = be_full.inverse_dynamics(q_full, s.qd @ G.T, s.qdd @ G.T, f_ext=f_ext) @ G
        tau = be.inverse_dynamics(s.q, s.qd, s.qdd, f_ext=f_ext)
        assert_close(tau, ref, f"mimic {backend} ID", tol=1e-12)
        assert_close(be.forward_dynamics(s.q, s.qd, tau, f_ext=f_ext), s.qdd, f"mimic {backend} FD round trip")


# -- friction backends see the load -----------------------------------------------------------

@pytest.fixture(scope="module")
def puma_friction():
    """PUMA-560 with Dhanaraj's bearing and transmission friction (its armature removed, so
    that pinocchio's rigid body is the same), Corke's velocity friction in the profile."""
    case = case_of("puma560")
    friction = dataclasses.replace(load_friction("puma560", case.model, "dhanaraj"), armature=np.zeros(6))
    assert friction.load_dependent
    return case, friction


def _pinocchio_wrenches(case, f_ext):
    """pinocchio's τ and joint wrenches data.f (force, moment) under f_ext, our joint order."""
    taus, forces, moments = [], [], []
    ids = [case.pm.getJointId(name) for name in case.model.joint_names]
    s = case.states
    for k in range(N):
        taus.append(pin.rnea(case.pm, case.pd, case.pin_q(s.q[k]), case.pin_v(s.qd[k]), case.pin_v(s.qdd[k]),
                             case.fext(k, f_ext))[case.iv])
        forces.append([case.pd.f[j].linear.copy() for j in ids])
        moments.append([case.pd.f[j].angular.copy() for j in ids])
    return np.array(taus), np.array(forces), np.array(moments)


@pytest.mark.parametrize("backend", ["newton_euler_friction", "lagrange_euler_friction"])
def test_friction_backend_sees_the_loaded_joint_wrenches(puma_friction, backend):
    case, friction = puma_friction
    be, s = dp.get_backend(backend, case.model, friction=friction), case.states
    f_ext = {"link6": [30.0, -20.0, -100.0, 2.0, 1.0, -3.0], "link3": 40 * np.random.default_rng(2).normal(size=(N, 6))}
    tau_rigid, force, moment = _pinocchio_wrenches(case, f_ext)
    ours_force, ours_moment = be.joint_wrenches(s.q, s.qd, s.qdd, f_ext=f_ext)
    assert_close(ours_force, force, "joint forces")
    assert_close(ours_moment, moment, "joint moments")
    # τ_in from pinocchio's τ and wrenches through the friction law (thesis Fig. 3.10)
    d = direction(s.qd, friction.smoothing)
    axes = be._axis_frames
    bearing = d * friction.bearing.magnitude(np.einsum("nji,Nnj->Nni", axes, force),
                                             np.einsum("nji,Nnj->Nni", axes, moment))
    tau_out = tau_rigid + bearing
    expected = (tau_out * friction.transmission.factor(tau_out, d) + d * friction.transmission.breakaway
                + friction.velocity.torque(s.qd))
    tau = be.inverse_dynamics(s.q, s.qd, s.qdd, f_ext=f_ext)
    assert_close(tau, expected, f"{backend} τ with friction and load")
    # more than Jᵀ w alone: the friction changed with the load
    free = be.inverse_dynamics(s.q, s.qd, s.qdd)
    Q = dp.get_backend("newton_euler", case.model).inverse_dynamics(s.q, s.qd, s.qdd) - case.rnea(f_ext)
    assert np.abs((free - tau) - Q).max() > 1e-2
    parts = be.inverse_dynamics_breakdown(s.q, s.qd, s.qdd, f_ext=f_ext)
    assert_close(parts.input, tau, "breakdown", tol=1e-12)
    assert_close(parts.rigid_body, tau_rigid, "breakdown rigid body")
    # forward dynamics solves the same implicit friction: the round trip
    assert_close(be.forward_dynamics(s.q, s.qd, tau, f_ext=f_ext), s.qdd, f"{backend} FD round trip", tol=1e-8)
    assert_close(be.inverse_dynamics(s.q[1], s.qd[1], s.qdd[1], f_ext={"link6": f_ext["link6"]}),
                 be.inverse_dynamics(s.q[1:2], s.qd[1:2], s.qdd[1:2], f_ext={"link6": f_ext["link6"]})[0],
                 "single", tol=1e-15)


def test_friction_at_rest_holds_against_a_load(puma_friction):
    """A joint at rest with stiction stays there while the external load is within its
    static level, and the round trip holds with load-independent friction too."""
    case, friction = puma_friction
    s = case.states
    be = dp.get_backend("newton_euler_friction", case.model)        # Corke's velocity friction (short path)
    f_ext = {"link6": [0.0, 0.0, -50.0, 0.0, 0.0, 0.0]}
    tau = be.inverse_dynamics(s.q, s.qd, s.qdd, f_ext=f_ext)
    assert_close(tau, be.inverse_dynamics(s.q, s.qd, s.qdd) - (be.rigid.inverse_dynamics(s.q, s.qd, s.qdd)
                                                                 - be.rigid.inverse_dynamics(s.q, s.qd, s.qdd,
                                                                                             f_ext=f_ext)),
                 "short path")
    assert_close(be.forward_dynamics(s.q, s.qd, tau, f_ext=f_ext), s.qdd, "short FD", tol=1e-8)
    loaded = dp.get_backend("newton_euler_friction", case.model, friction=friction)
    rest = np.zeros_like(s.qd)
    hold = loaded.rigid.gravity_torques(s.q) - (loaded.rigid.inverse_dynamics(s.q, rest, rest)
                                                - loaded.rigid.inverse_dynamics(s.q, rest, rest, f_ext=f_ext))
    assert_close(loaded.forward_dynamics(s.q, rest, hold, f_ext=f_ext), rest, "held at rest", tol=1e-12)


# -- payloads -----------------------------------------------------------------------------

PAYLOAD = dict(mass=2.5, com=(0.02, -0.03, 0.08), inertia=[[0.02, 0.001, 0.0], [0.001, 0.03, 0.002],
                                                           [0.0, 0.002, 0.025]])


def _pin_with_payload(case, frame, mass, com, inertia):
    pm = case.build()
    fid = pm.getFrameId(frame, pin.BODY)
    j = pm.frames[fid].parentJoint
    inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
    pm.inertias[j] = pm.inertias[j] + pm.frames[fid].placement.act(pin.Inertia(mass, np.asarray(com), inertia))
    return pm, pm.createData()


def _payload_frames(model):
    moving = [f for f in model.frame_names if model.frame(f)[0] >= 0]
    return [moving[-1], moving[len(moving) // 2]] + ([model.base_link] if model.floating_base else [])


@pytest.mark.parametrize("label", ["puma560", "stanford", "tree7", "chain4", "puma560-floating", "tree5-floating"])
def test_payload_model_is_pinocchios_with_the_inertia_appended(label):
    case = case_of(label)
    s = case.states
    for frame in _payload_frames(case.model):
        for inertia in (PAYLOAD["inertia"], None):
            options = dict(PAYLOAD, inertia=inertia)
            loaded = case.model.with_payload(frame, **options)
            pm, pd = _pin_with_payload(case, frame, **options)
            tau_ref = case.rnea({}, pm, pd)
            M_ref = np.array([pin.crba(pm, pd, case.pin_q(q)) for q in s.q])
            M_ref = np.triu(M_ref) + np.triu(M_ref, 1).transpose(0, 2, 1)
            M_ref = M_ref[:, case.iv][:, :, case.iv]
            for backend in ("newton_euler", "pinocchio"):
                be = dp.get_backend(backend, loaded)
                what = f"{label} {frame} {backend} inertia={inertia is not None}"
                tau = be.inverse_dynamics(s.q, s.qd, s.qdd)
                assert_close(tau, tau_ref, f"{what} ID")
                assert_close(be.mass_matrix(s.q), M_ref, f"{what} M")
                assert_close(be.forward_dynamics(s.q, s.qd, tau_ref + 1.0), case.aba(tau_ref + 1.0, {}, pm, pd),
                             f"{what} FD")
            assert np.abs(tau - case.rnea({})).max() > 1e-3, "the payload is felt"


def test_payload_keeps_frames_and_is_a_frame():
    case = case_of("tree7")
    frame = case.model.frame_names[-1]
    loaded = case.model.with_payload(frame, 1.0).with_payload(frame, 2.0)
    assert loaded.frame_names[:len(case.model.frame_names)] == case.model.frame_names
    assert loaded.frame_names[-2:] == (f"{frame}_payload", f"{frame}_payload_1")
    be = dp.get_backend("newton_euler", loaded)
    assert_close(be.frame_placement(case.states.q, f"{frame}_payload"), be.frame_placement(case.states.q, frame),
                 "payload frame", tol=0)
    assert_close(loaded.total_mass(), case.model.total_mass() + 3.0, "mass", tol=1e-15)
    pinocchio = dp.get_backend("pinocchio", loaded)
    assert_close(pinocchio.frame_placement(case.states.q, f"{frame}_payload_1"),
                 be.frame_placement(case.states.q, frame), "pinocchio sees the payload frame", tol=1e-12)


def test_payload_on_a_fixed_base_changes_nothing_and_models_without_urdf_take_one():
    case = case_of("puma560")
    s = case.states
    loaded = case.model.with_payload(case.model.base_link, 10.0)
    assert loaded.base_mass == case.model.base_mass + 10.0
    assert_close(dp.get_backend("newton_euler", loaded).inverse_dynamics(s.q, s.qd, s.qdd),
                 dp.get_backend("newton_euler", case.model).inverse_dynamics(s.q, s.qd, s.qdd), "fixed base", tol=0)
    row = dp.DHRow("revolute", alpha=0.5, a=0.3, d=0.1, theta=0.0, mass=1.0, inertia=(0.1, 0.1, 0.1, 0, 0, 0))
    dh = dp.model_from_dh([row, row], "standard")
    heavy = dh.with_payload(dh.link_names[-1], 3.0, (0.1, 0.0, 0.0))
    assert heavy.source_urdf is None and heavy.frame_names == dh.frame_names
    q = np.array([[0.3, -0.4]])
    assert_close(dp.get_backend("pinocchio", heavy).inverse_dynamics(q, q, q),
                 dp.get_backend("newton_euler", heavy).inverse_dynamics(q, q, q), "DH payload")
    # a point mass m at the frame origin = a wrench of −m g there, when nothing moves
    frame = case.model.frame_names[-1]
    rest = np.zeros_like(s.qd)
    assert_close(dp.get_backend("newton_euler", case.model.with_payload(frame, 3.0)).gravity_torques(s.q),
                 dp.get_backend("newton_euler", case.model).inverse_dynamics(
                     s.q, rest, rest, f_ext={frame: np.concatenate([3.0 * case.model.gravity, np.zeros(3)])}),
                 "point mass = its weight", tol=1e-12)


# -- bad input ------------------------------------------------------------------------------------

def test_bad_wrenches_are_named():
    case = case_of("puma560")
    be, s = dp.get_backend("newton_euler", case.model), case.states
    with pytest.raises(InputError) as error:
        be.inverse_dynamics(s.q, s.qd, s.qdd, f_ext={"tool9": np.zeros(6)})
    assert "'tool9'" in str(error.value) and all(repr(n) in str(error.value) for n in case.model.frame_names)
    bad = [({"link6": np.zeros(5)}, r"f_ext\['link6'\] must be a wrench .* shape \(6,\) or \(N, 6\), got shape \(5,\)"),
           ({"link6": np.zeros((2, 6))}, r"f_ext\['link6'\] has 2 wrenches .* batch of 3 states"),
           ({"link6": np.zeros((3, 6, 1))}, r"got shape \(3, 6, 1\)"),
           ({"link6": [0, 0, np.nan, 0, 0, 0]}, r"f_ext\['link6'\] has a non-finite entry"),
           ({"link6": ["a"] * 6}, r"f_ext\['link6'\] must be real numbers"),
           ([0, 0, -10, 0, 0, 0], "f_ext must map frame names to wrenches")]
    for f_ext, message in bad:
        for method in (be.inverse_dynamics, be.forward_dynamics):
            with pytest.raises(InputError, match=message):
                method(s.q, s.qd, s.qdd, f_ext=f_ext)
    with pytest.raises(InputError, match=r"has 3 wrenches .* for one state"):
        be.inverse_dynamics(s.q[0], s.qd[0], s.qdd[0], f_ext={"link6": np.zeros((3, 6))})
    friction = dp.get_backend("newton_euler_friction", case.model, profile="dhanaraj")
    with pytest.raises(InputError, match="has no frame 'tool9'"):
        friction.forward_dynamics(s.q, s.qd, s.qdd, f_ext={"tool9": np.zeros(6)})
    with pytest.raises(InputError, match=r"f_ext\['link6'\] must be a wrench"):
        friction.joint_wrenches(s.q, s.qd, s.qdd, f_ext={"link6": np.zeros(3)})


def test_bad_payloads_are_named():
    model = case_of("puma560").model
    with pytest.raises(InputError, match="has no frame 'tool9'; its frames are: 'base_link'"):
        model.with_payload("tool9", 1.0)
    with pytest.raises(ModelError, match=r"link 'link6_payload' \(payload at frame 'link6' of robot 'puma560'\): "
                                         r"mass must be finite and >= 0, got -1"):
        model.with_payload("link6", -1.0)
    with pytest.raises(ModelError, match="payload at frame 'link6'.*not positive semi-definite"):
        model.with_payload("link6", 1.0, inertia=np.diag([0.1, -0.1, 0.1]))
    with pytest.raises(ModelError, match="payload at frame 'link6'.*not symmetric"):
        model.with_payload("link6", 1.0, inertia=[[0.1, 0.05, 0], [0, 0.1, 0], [0, 0, 0.1]])
    with pytest.raises(InputError, match=r"com must have shape \(3,\).*got shapes \(2,\)"):
        model.with_payload("link6", 1.0, com=(0.1, 0.2))
    with pytest.raises(InputError, match="must be finite"):
        model.with_payload("link6", np.inf)
    with pytest.raises(InputError, match="must be a number"):
        model.with_payload("link6", "heavy")


def test_a_payload_breaking_the_triangle_inequality_is_warned_about_as_the_urdf_loader_does():
    """I_zz > I_xx + I_yy: no rigid body has these moments (a URDF link with them gets the
    same PhysicalValidityWarning); pinocchio takes it, pybullet zeroes such an inertia."""
    model = case_of("puma560").model
    odd = np.diag([0.01, 0.01, 0.05])
    with pytest.warns(dp.PhysicalValidityWarning, match="link6_payload.*triangle inequality"):
        model.with_payload("link6", 1.0, inertia=odd)
    xml = random_tree_urdf(np.random.default_rng(3), 2, fixed=True, name="odd")
    xml = xml.replace("</robot>", '<link name="odd"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" '
                      'iyy="0.01" iyz="0" izz="0.05"/></inertial></link><joint name="odd_joint" type="fixed">'
                      '<parent link="base_link"/><child link="odd"/></joint></robot>')
    with pytest.warns(dp.PhysicalValidityWarning, match="triangle inequality"):
        dp.load_urdf_string(xml)
