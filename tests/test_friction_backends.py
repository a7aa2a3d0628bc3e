"""Friction backends (``newton_euler_friction``, ``lagrange_euler_friction``): armature
against pinocchio, the torque breakdown against pinocchio and Dhanaraj's Table 3.5, the
physics of friction (dissipation, Gogoussis & Donath, Schilling's limits, stiction as
maximum dissipation, energy decay in simulation), parameter sources and bad input.

The formula-level models are tested in test_friction_models.py; comparisons with pybullet's
stepping live in test_friction_pybullet.py.
"""

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

import dyn_plugin as dp
from conftest import WITH_FRICTION, rel_err
from dyn_plugin.backends.registry import backend_class
from dyn_plugin.friction import (BearingFriction, EfficiencyCurve, TransmissionFriction, VelocityFriction,
                                 journal_bearing, journal_bearing_pair, linear_bearing, thrust_bearing)
from dyn_plugin.friction.parameters import FrictionModel, friction_file, load_friction
from dyn_plugin.sampling import random_states

RTOL = 1e-9
FRICTION = WITH_FRICTION
# each friction backend's frictionless counterpart: the backend its class wraps by default
RIGID = {name: backend_class(name).default_rigid for name in FRICTION}

PENDULUM = """<robot name="pendulum"><link name="base"/>
<link name="bob"><inertial><origin xyz="0 0 -0.8"/><mass value="1.5"/>
<inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="swing" type="continuous"><parent link="base"/><child link="bob"/><axis xyz="0 1 0"/></joint>
</robot>"""

# The same pendulum, its joint frame turned by -90 deg about x so that the swing axis is the
# joint frame's z (the world y axis) and the bob hangs at the same place.
PENDULUM_Z_AXIS = """<robot name="pendulum_z"><link name="base"/>
<link name="bob"><inertial><origin xyz="0 0.8 0"/><mass value="1.5"/>
<inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="swing" type="continuous"><origin rpy="-1.5707963267948966 0 0"/><parent link="base"/>
<child link="bob"/><axis xyz="0 0 1"/></joint>
</robot>"""

TWO_LINK_WITH_DYNAMICS = """<robot name="damped_arm"><link name="base_link"/>
<link name="upper"><inertial><origin xyz="0.2 0 0"/><mass value="2.0"/>
<inertia ixx="0.01" iyy="0.03" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="fore"><inertial><origin xyz="0.15 0 0"/><mass value="1.0"/>
<inertia ixx="0.005" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="shoulder" type="continuous"><parent link="base_link"/><child link="upper"/>
<axis xyz="0 1 0"/><dynamics damping="0.5" friction="1.2"/></joint>
<joint name="elbow" type="continuous"><origin xyz="0.4 0 0"/><parent link="upper"/><child link="fore"/>
<axis xyz="0 1 0"/><dynamics damping="0.5" friction="1.2"/></joint>
</robot>"""


@pytest.fixture(scope="module")
def puma():
    return dp.load_robot("puma560")


@pytest.fixture(scope="module")
def pendulum():
    return dp.load_urdf_string(PENDULUM)


def corke_velocity(n=6):
    """Corke's PUMA velocity friction (urdf/puma560_friction.toml, profile corke) with a 40 %
    static peak, so that the static and Coulomb levels differ."""
    coulomb = np.array([24.73, 13.59, 7.09, 0.85, 0.67, 0.30])[:n]
    coulomb_negative = np.array([27.24, 7.66, 5.64, 1.29, 1.04, 0.81])[:n]
    return VelocityFriction.create(n, viscous=np.array([5.80, 9.50, 3.98, 0.41, 0.43, 0.22])[:n],
                                   coulomb=coulomb, coulomb_negative=coulomb_negative, static=1.4 * coulomb,
                                   static_negative=1.4 * coulomb_negative, stribeck_velocity=0.1)


def dhanaraj_with_velocity(model, armature_form="link"):
    """Every friction term at once: Dhanaraj's bearing and transmission friction and motor
    inertia (profile "dhanaraj") plus Corke's lumped velocity friction with a static peak."""
    base = load_friction("puma560", model, "dhanaraj")
    return dataclasses.replace(base, velocity=corke_velocity(), armature_form=armature_form)


def pin_rnea_wrenches(ref, q, qd, qdd):
    """pinocchio's joint torques and joint wrenches (force, moment) in our joint order."""
    tau = pin.rnea(ref.pin_model, ref.data, ref.to_pin_q(q), ref.to_pin_v(qd), ref.to_pin_v(qdd))
    ids = [ref.pin_model.getJointId(name) for name in ref.model.joint_names]
    f = np.array([ref.data.f[j].linear for j in ids])
    n = np.array([ref.data.f[j].angular for j in ids])
    return tau[ref._idx_v], f, n


def table_3_2(tau_out, qd, eta, breakaway):
    """Dhanaraj Table 3.2 transcribed: the input torque of a transmission."""
    tau_out, qd = np.asarray(tau_out, dtype=float), np.asarray(qd, dtype=float)
    driving = tau_out * qd > 0
    return np.where(driving, tau_out / eta, tau_out * eta) + np.sign(qd) * breakaway


# -- 1. armature ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", FRICTION)
def test_diagonal_armature_equals_pinocchio_armature(bundled, backend):
    """armature_form="diagonal" is pinocchio's model.armature: τ, M and q̈ agree."""
    s = random_states(bundled, 20, seed=11)
    a = np.random.default_rng(1).uniform(0.1, 2.0, bundled.n)
    ours = dp.get_backend(backend, bundled, friction=FrictionModel.create(bundled.n, armature=a))
    ref = dp.get_backend("pinocchio", bundled, armature=a)
    assert rel_err(ours.inverse_dynamics(s.q, s.qd, s.qdd), ref.inverse_dynamics(s.q, s.qd, s.qdd)) < RTOL
    assert rel_err(ours.mass_matrix(s.q), ref.mass_matrix(s.q)) < RTOL
    assert rel_err(ours.forward_dynamics(s.q, s.qd, s.tau), ref.forward_dynamics(s.q, s.qd, s.tau)) < RTOL
    # and the armature really is there: the rigid model alone is far off
    bare = dp.get_backend("pinocchio", bundled)
    assert np.max(np.abs(ours.mass_matrix(s.q) - bare.mass_matrix(s.q))) > 0.1


@pytest.mark.parametrize("backend", FRICTION)
def test_link_armature_is_rotor_inertia_in_the_links(bundled, backend):
    """armature_form="link" (Dhanaraj: I_motor added to the link's I_zz) equals pinocchio on
    the model whose link inertias carry a·axis·axisᵀ, and differs from the diagonal form.

    Why they differ: in the link form the rotor spins with its link's absolute angular
    velocity ω_i, so its kinetic energy is ½ a_i (ω_i·n_i)² with ω_i·n_i = Σ_j q̇_j (n_j·n_i)
    over the revolute joints j from the base to i; the diagonal form keeps only ½ a_i q̇_i².
    Hence M_link − M_bare = Σ_i a_i u_i u_iᵀ with u_i[j] = n_j·n_i (checked here with
    pinocchio's world axes): parent joints couple into the rotor (off-diagonal and parent
    diagonal terms), and where axes are not parallel the rotor also adds gyroscopic torques
    ω × (a n nᵀ) ω, both absent from the diagonal form.
    """
    model = bundled
    s = random_states(model, 20, seed=12)
    # revolute joints only: the link form drops a prismatic joint's armature (no rotor to put in a link)
    a = np.where(model.is_revolute, np.random.default_rng(2).uniform(0.2, 2.0, model.n), 0.0)
    link = dp.get_backend(backend, model, friction=FrictionModel.create(model.n, armature=a, armature_form="link"))
    diagonal = dp.get_backend(backend, model, friction=FrictionModel.create(model.n, armature=a))

    inertias = model.inertias + a[:, None, None] * np.einsum("ni,nj->nij", model.axes, model.axes)
    np.testing.assert_array_equal(link.rigid.model.inertias, inertias)
    ref = dp.get_backend("pinocchio", dataclasses.replace(model, inertias=inertias, source_urdf=None,
                                                          source_path=None))
    tau = link.inverse_dynamics(s.q, s.qd, s.qdd)
    assert rel_err(tau, ref.inverse_dynamics(s.q, s.qd, s.qdd)) < RTOL
    assert rel_err(link.mass_matrix(s.q), ref.mass_matrix(s.q)) < RTOL
    assert rel_err(link.forward_dynamics(s.q, s.qd, s.tau), ref.forward_dynamics(s.q, s.qd, s.tau)) < RTOL

    assert np.max(np.abs(tau - diagonal.inverse_dynamics(s.q, s.qd, s.qdd))) > 1e-3
    assert np.max(np.abs(link.mass_matrix(s.q) - diagonal.mass_matrix(s.q))) > 1e-3

    # the kinetic-energy argument above, with pinocchio's world-frame joint axes
    bare = dp.get_backend("pinocchio", model)
    ids = [bare.pin_model.getJointId(name) for name in model.joint_names]
    for k in range(5):
        pin.forwardKinematics(bare.pin_model, bare.data, bare.to_pin_q(s.q[k]))
        n_world = np.array([bare.data.oMi[j].rotation @ model.axes[i] for i, j in enumerate(ids)])
        expected = np.zeros((model.n, model.n))
        for i in range(model.n):
            u = np.zeros(model.n)
            for j in model.ancestors(i):
                u[j] = (n_world[j] @ n_world[i]) if model.is_revolute[j] else 0.0
            expected += a[i] * np.outer(u, u)
        assert rel_err(link.mass_matrix(s.q[k]) - bare.mass_matrix(s.q[k]), expected) < RTOL


# -- 2. friction off -----------------------------------------------------------------------


@pytest.mark.parametrize("backend", FRICTION)
def test_friction_none_is_the_rigid_backend(bundled, backend):
    s = random_states(bundled, 20, seed=13)
    ours = dp.get_backend(backend, bundled, friction="none", gravity=(1.0, -2.0, -9.0))
    plain = dp.get_backend(RIGID[backend], bundled, gravity=(1.0, -2.0, -9.0))
    assert rel_err(ours.inverse_dynamics(s.q, s.qd, s.qdd), plain.inverse_dynamics(s.q, s.qd, s.qdd)) < 1e-12
    assert rel_err(ours.forward_dynamics(s.q, s.qd, s.tau), plain.forward_dynamics(s.q, s.qd, s.tau)) < 1e-12
    assert rel_err(ours.mass_matrix(s.q), plain.mass_matrix(s.q)) < 1e-12
    assert rel_err(ours.bias_forces(s.q, s.qd), plain.bias_forces(s.q, s.qd)) < 1e-12
    parts = ours.inverse_dynamics_breakdown(s.q, s.qd, s.qdd)
    for column in (parts.armature, parts.bearing, parts.transmission, parts.velocity):
        assert np.all(column == 0)


# -- 3. the breakdown --------------------------------------------------------------------


@pytest.mark.parametrize("armature_form", ["link", "diagonal"])
@pytest.mark.parametrize("backend", FRICTION)
def test_breakdown_columns_against_independent_references(puma, backend, armature_form):
    """Each column of the breakdown from an independent source: rigid body and armature from
    pinocchio, velocity friction from Schilling 6-3-3, transmission from Table 3.2."""
    friction = dhanaraj_with_velocity(puma, armature_form)
    be = dp.get_backend(backend, puma, friction=friction)
    s = random_states(puma, 20, seed=14)
    parts = be.inverse_dynamics_breakdown(s.q, s.qd, s.qdd)

    np.testing.assert_array_equal(parts.input, be.inverse_dynamics(s.q, s.qd, s.qdd))
    np.testing.assert_allclose(parts.output, parts.rigid_body + parts.armature + parts.bearing, rtol=1e-15, atol=0)
    np.testing.assert_allclose(parts.input, parts.output + parts.transmission + parts.velocity, rtol=1e-15, atol=0)
    np.testing.assert_allclose(parts.friction, parts.bearing + parts.transmission + parts.velocity,
                               rtol=1e-15, atol=0)

    bare = dp.get_backend("pinocchio", puma)
    rigid_ref = bare.inverse_dynamics(s.q, s.qd, s.qdd)
    assert rel_err(parts.rigid_body, rigid_ref) < RTOL
    if armature_form == "link":
        with_armature = dp.get_backend("pinocchio", be.rigid.model).inverse_dynamics(s.q, s.qd, s.qdd)
    else:
        with_armature = dp.get_backend("pinocchio", puma, armature=friction.armature).inverse_dynamics(
            s.q, s.qd, s.qdd)
    assert np.max(np.abs(parts.armature - (with_armature - rigid_ref)) / np.maximum(1, np.abs(with_armature))) < RTOL

    v = friction.velocity
    level = np.where(s.qd > 0, v.coulomb_positive + (v.static_positive - v.coulomb_positive)
                     * np.exp(-np.abs(s.qd) / v.stribeck_velocity),
                     v.coulomb_negative + (v.static_negative - v.coulomb_negative)
                     * np.exp(-np.abs(s.qd) / v.stribeck_velocity))
    assert rel_err(parts.velocity, v.viscous * s.qd + np.sign(s.qd) * level) < 1e-12

    t = friction.transmission
    curve = t.curves[0]
    eta = np.interp(np.abs(parts.output) / np.where(t.rated_torque > 0, t.rated_torque, 1.0),
                    curve.load_ratio, curve.efficiency)
    eta = np.where([c is not None for c in t.curves], eta, 1.0)
    expected = table_3_2(parts.output, s.qd, eta, t.breakaway) - parts.output
    assert rel_err(parts.transmission, expected) < 1e-12
    assert np.all(np.abs(parts.transmission[:, :3]) > 0.5)  # the transmission is really at work

    single = be.inverse_dynamics_breakdown(s.q[3], s.qd[3], s.qdd[3])
    for field in dataclasses.fields(single):
        np.testing.assert_array_equal(getattr(single, field.name), getattr(parts, field.name)[3])


# Dhanaraj Table 3.5, joints 1-3 at t = 0.6 s
T35_AT_JOINT = np.array([2.9943, -15.9646, -0.6801])       # "total torque at joint", τ_out
T35_TRANSMISSION = np.array([9.8968, -17.9472, 3.0449])    # "transmission frictional torque"
T35_INPUT = np.array([12.8911, -33.9117, 2.3648])          # "total input torque"
T35_SIGN_QD = np.array([1.0, -1.0, 1.0])                   # from the sign of the joint friction
T34_BREAKAWAY = np.array([6.3, 5.5, 2.6])                  # Table 3.4 (Armstrong 1988)
T34_RATED = np.array([97.6, 186.4, 89.4])


@pytest.mark.parametrize("backend", FRICTION)
def test_table_3_5_transmission_torques(puma, backend):
    """Table 3.5's input torques from its joint torques through the backend's transmission.

    The efficiency curve is not printed; its three points are back-solved from the table
    itself (link I driving, case 1; link II driving, case 2; link III back-driven, case 4:
    the cases of Table 3.2 that the table's signs allow), at the load ratios |τ_out|/τ_max.  The backend must then pick the same case
    for each sign pattern and apply the breakaway with the sign of q̇; a wrong case (η for
    1/η) or breakaway sign is off by several N·m.
    """
    ratio = np.abs(T35_AT_JOINT) / T34_RATED
    eta = np.array([T35_AT_JOINT[0] / (T35_INPUT[0] - T34_BREAKAWAY[0]),     # case 1
                    T35_AT_JOINT[1] / (T35_INPUT[1] + T34_BREAKAWAY[1]),     # case 2
                    (T35_INPUT[2] - T34_BREAKAWAY[2]) / T35_AT_JOINT[2]])    # case 4
    np.testing.assert_allclose(eta, [0.454, 0.562, 0.346], atol=5e-4)       # rounded, as back-solved by hand
    order = np.argsort(ratio)
    curve = EfficiencyCurve(ratio[order], eta[order])
    transmission = TransmissionFriction.create(6, [curve] * 3 + [None] * 3, list(T34_RATED) + [1.0] * 3,
                                               list(T34_BREAKAWAY) + [0.0] * 3)
    be = dp.get_backend(backend, puma, friction=FrictionModel.create(6, transmission=transmission))

    # a state whose joint torque τ_out is Table 3.5's (no bearing, no armature here)
    q = np.array([0.3, -0.8, 0.5, 0.1, 0.4, -0.2])
    qd = np.concatenate([0.7 * T35_SIGN_QD, [0.3, -0.2, 0.1]])
    tau_out = np.concatenate([T35_AT_JOINT, [0.05, -0.02, 0.01]])
    qdd = dp.get_backend("newton_euler", puma).forward_dynamics(q, qd, tau_out)
    parts = be.inverse_dynamics_breakdown(q, qd, qdd)
    np.testing.assert_allclose(parts.output, tau_out, rtol=1e-12, atol=1e-12)
    assert np.max(np.abs(parts.input[:3] - T35_INPUT)) <= 2e-4
    assert np.max(np.abs(parts.transmission[:3] - T35_TRANSMISSION)) <= 2e-4
    np.testing.assert_array_equal(parts.transmission[3:], 0.0)
    # link III: the input torque has the opposite sign to the joint torque (Table 3.5: 2.3648 vs −0.6801)
    assert parts.input[2] * parts.output[2] < 0


# -- 4. dissipation -------------------------------------------------------------------------


def random_friction(model, rng, smoothing):
    n = model.n
    kinds = [rng.choice(["journal", "journal_pair", "thrust", "none"]) if rev else rng.choice(["linear", "thrust"])
             for rev in model.is_revolute]
    bearing = BearingFriction.create(n, kinds, rng.uniform(0, 0.3, n), rng.uniform(0.01, 0.1, n),
                                     rng.uniform(0.05, 0.3, n), printed=bool(rng.random() < 0.5))
    ratios = np.sort(rng.uniform(0, 1.2, 4))
    curve = EfficiencyCurve(ratios, np.sort(rng.uniform(0.2, 1.0, 4)), kind=str(rng.choice(["linear", "cubic"])))
    curves = [curve if use else None for use in rng.random(n) < 0.7]
    transmission = TransmissionFriction.create(n, curves, rng.uniform(5, 100, n), rng.uniform(0, 5, n))
    coulomb, coulomb_negative = rng.uniform(0, 5, n), rng.uniform(0, 5, n)
    velocity = VelocityFriction.create(n, rng.uniform(0, 3, n), coulomb, coulomb_negative,
                                       coulomb + rng.uniform(0, 3, n), coulomb_negative + rng.uniform(0, 3, n),
                                       rng.uniform(0.01, 1, n), smoothing)  # static >= Coulomb
    form = str(rng.choice(["diagonal", "link"]))
    armature = rng.uniform(0, 1, n) * (model.is_revolute if form == "link" else 1.0)  # a rotor turns about an axis
    return FrictionModel(velocity, bearing, transmission, armature=armature, armature_form=form)


@pytest.mark.parametrize("smoothing", [0.0, 0.05])
@pytest.mark.parametrize("robot", ["puma560", "stanford"])
def test_every_friction_term_dissipates(robot, smoothing):
    """q̇ᵢ·τ ≥ 0 for the bearing, transmission and velocity columns, joint by joint: friction
    never feeds power into a joint (η ≤ 1: a driving transmission takes more than it gives,
    a back-driven one gives back less)."""
    model = dp.load_robot(robot)
    rng = np.random.default_rng(15)
    for trial in range(6):
        be = dp.get_backend("newton_euler_friction", model, friction=random_friction(model, rng, smoothing))
        s = random_states(model, 20, seed=trial)
        qd = np.where(rng.random(s.qd.shape) < 0.1, 0.0, s.qd)  # some joints at rest
        parts = be.inverse_dynamics_breakdown(s.q, qd, s.qdd * 10)
        for column in (parts.bearing, parts.transmission, parts.velocity):
            assert np.all(qd * column >= 0)
            assert np.any(qd * column > 0)


# -- 5. joint wrenches (Gogoussis & Donath) --------------------------------------------------


@pytest.mark.parametrize("backend", FRICTION)
def test_joint_wrenches_are_the_frictionless_ones(puma, backend):
    """Friction does not change the joint reaction wrenches: the friction backend's wrenches are
    newton_euler's on the same inertias (the model with the rotors in its links when the
    armature is in the links), at the same q, q̇, q̈, with or without friction."""
    s = random_states(puma, 10, seed=16)
    for form in ("link", "diagonal"):
        be = dp.get_backend(backend, puma, friction=dhanaraj_with_velocity(puma, form))
        inertias = be.rigid.model if form == "link" else puma
        f, n = be.joint_wrenches(s.q, s.qd, s.qdd)
        f_ref, n_ref = dp.get_backend("newton_euler", inertias).joint_wrenches(s.q, s.qd, s.qdd)
        assert rel_err(f, f_ref) < 1e-12 and rel_err(n, n_ref) < 1e-12
        f_none, n_none = dp.get_backend(backend, inertias, friction="none").joint_wrenches(s.q, s.qd, s.qdd)
        assert rel_err(f, f_none) < 1e-12 and rel_err(n, n_none) < 1e-12


def bearing_from_pinocchio(bearing, f, n, qd):
    out = np.zeros(len(qd))
    for i, kind in enumerate(bearing.kinds):
        mu, r, d = bearing.mu[i], bearing.radius[i], bearing.spacing[i]
        magnitude = {"none": lambda: 0.0, "journal": lambda: journal_bearing(f[i], mu, r),
                     "journal_pair": lambda: journal_bearing_pair(f[i], n[i], mu, r, d, printed=bearing.printed),
                     "linear": lambda: linear_bearing(f[i], n[i], mu, d),
                     "thrust": lambda: thrust_bearing(f[i], mu, r)}[kind]()
        out[i] = np.sign(qd[i]) * magnitude
    return out


@pytest.mark.parametrize("backend", FRICTION)
def test_bearing_friction_from_pinocchio_joint_forces(backend):
    """The bearing column is Dhanaraj's bearing law applied to pinocchio's frictionless joint
    wrench data.f (joint-local frame, at the joint, as test_backends checks for ours)."""
    cases = []
    puma = dp.load_robot("puma560")
    cases.append((puma, dhanaraj_with_velocity(puma, "link")))
    stanford = dp.load_robot("stanford")
    bearing = BearingFriction.create(6, ["journal_pair", "journal", "linear", "thrust", "journal_pair", "none"],
                                     [0.1, 0.2, 0.15, 0.1, 0.1, 0.0], [0.05, 0.04, 0.0, 0.03, 0.02, 0.0],
                                     [0.1, 0.0, 0.2, 0.0, 0.05, 0.0])
    cases.append((stanford, FrictionModel.create(6, viscous=0.3, bearing=bearing)))
    for model, friction in cases:
        be = dp.get_backend(backend, model, friction=friction)
        ref = dp.get_backend("pinocchio", be.rigid.model)
        s = random_states(model, 10, seed=17)
        parts = be.inverse_dynamics_breakdown(s.q, s.qd, s.qdd)
        for k in range(len(s)):
            tau, f, n = pin_rnea_wrenches(ref, s.q[k], s.qd[k], s.qdd[k])
            expected = bearing_from_pinocchio(friction.bearing, f, n, s.qd[k])
            assert rel_err(parts.bearing[k], expected) < RTOL
            assert np.count_nonzero(expected) >= 3


def test_bearing_friction_does_not_depend_on_the_joint_frame_orientation():
    """One pendulum described twice: swing axis = the joint frame's y, or its z.  The joint
    reaction force is the same physical force; its radial part (normal to the axis) loads the
    journal, so the bearing friction must be the same, μ r |f⊥|."""
    mu, r = 0.1, 0.05
    friction = FrictionModel.create(1, bearing=BearingFriction.create(1, "journal", mu, radius=r))
    q, qd, qdd = [0.3], [0.5], [0.2]
    torques = []
    for text in (PENDULUM, PENDULUM_Z_AXIS):
        model = dp.load_urdf_string(text)
        be = dp.get_backend("newton_euler_friction", model, friction=friction)
        f, _ = be.joint_wrenches(q, qd, qdd)
        radial = f[0] - (f[0] @ model.axes[0]) * model.axes[0]
        parts = be.inverse_dynamics_breakdown(q, qd, qdd)
        torques.append(parts.bearing[0])
        assert parts.bearing[0] == pytest.approx(mu * r * np.linalg.norm(radial), rel=1e-12), model.name
    assert torques[0] == pytest.approx(torques[1], rel=1e-12)


# -- 6. forward dynamics inverts inverse dynamics ----------------------------------------------


@pytest.mark.parametrize("backend", FRICTION)
def test_forward_inverts_inverse_with_load_dependent_friction(puma, backend):
    """Profile "dhanaraj" (bearing + efficiency: τ_in depends on q̈ non-linearly, Newton solve)
    plus velocity friction: FD(ID(q̈)) = q̈ on sliding states (every q̇ᵢ ≠ 0)."""
    be = dp.get_backend(backend, puma, friction=dhanaraj_with_velocity(puma))
    assert be.friction.load_dependent
    s = random_states(puma, 20, seed=1)
    assert np.all(s.qd != 0)
    failures, worst = [], 0.0
    for k in range(len(s)):
        tau = be.inverse_dynamics(s.q[k], s.qd[k], s.qdd[k])
        try:
            worst = max(worst, rel_err(be.forward_dynamics(s.q[k], s.qd[k], tau), s.qdd[k]))
        except dp.DynPluginError as exc:
            failures.append(f"state {k}: {exc}")
    assert not failures, "\n".join(failures)
    assert worst < RTOL


# -- 7. stiction in forward dynamics ----------------------------------------------------------


def test_stiction_one_joint(pendulum):
    """A pendulum at rest, static levels 3 (q̇ > 0 side) and 2 (q̇ < 0 side) N·m: it holds while
    the torque it needs is within [−2, 3] and starts against the level otherwise."""
    friction = FrictionModel.create(1, viscous=0.4, coulomb=2.0, coulomb_negative=1.5, static=3.0,
                                    static_negative=2.0, stribeck_velocity=0.05)
    rigid = dp.get_backend("newton_euler", pendulum)
    for backend in FRICTION:
        be = dp.get_backend(backend, pendulum, friction=friction)
        for q in np.linspace(-1.0, 1.0, 9):
            hold = rigid.gravity_torques([q])[0]            # the torque that holds it
            for offset in (-1.99, -1.0, 0.0, 1.5, 2.99):      # stiction needed: −offset
                qdd = be.forward_dynamics([q], [0.0], [hold + offset])[0]
                assert qdd == 0.0
            for offset, level in ((3.01, 3.0), (5.0, 3.0), (-2.01, -2.0), (-4.0, -2.0)):
                tau = hold + offset
                qdd = be.forward_dynamics([q], [0.0], [tau])[0]
                assert np.sign(qdd) == np.sign(offset)
                assert tau - rigid.inverse_dynamics([q], [0.0], [qdd])[0] == pytest.approx(level, abs=1e-12)


@pytest.mark.parametrize("load_dependent", [False, True])
@pytest.mark.parametrize("backend", FRICTION)
def test_stiction_puma_some_joints_at_rest(puma, backend, load_dependent):
    """Joints at rest among sliding ones.  The stick/slip problem has one solution (maximum
    dissipation), so states built to satisfy it must come back from forward dynamics:

    * hold: q̈ with zeros at the rest joints, τ = ID(q̈) + λ with λ inside [−L⁻, L⁺] there;
    * slip: any q̈, τ = ID(q̈) + L⁺ where q̈ᵢ > 0 and − L⁻ where q̈ᵢ < 0 at the rest joints.

    ID of the friction backend puts no dry friction on a joint with q̇ᵢ = 0, so the rest
    joints' friction is exactly λ; the sliding joints carry their own (load-dependent) friction.
    """
    if load_dependent:
        friction = dhanaraj_with_velocity(puma, "diagonal")
    else:
        friction = FrictionModel(corke_velocity(), armature=[0.784, 2.325, 0.577, 0.191, 0.171, 0.194])
    be = dp.get_backend(backend, puma, friction=friction)
    rigid_armature = dp.get_backend(backend, puma, friction=FrictionModel.create(6, armature=friction.armature))
    rng = np.random.default_rng(18)
    s = random_states(puma, 10, seed=18)
    upper, lower = friction.levels(np.zeros(6))          # L⁺, L⁻ at rest (static + τ_B)
    worst = 0.0
    for k in range(len(s)):
        rest = rng.random(6) < 0.5
        rest[k % 6] = True
        qd = np.where(rest, 0.0, s.qd[k])
        # hold
        target = np.where(rest, 0.0, s.qdd[k])
        lam = np.where(rest, rng.uniform(-0.95 * lower, 0.95 * upper), 0.0)
        tau = be.inverse_dynamics(s.q[k], qd, target) + lam
        qdd = be.forward_dynamics(s.q[k], qd, tau)
        np.testing.assert_array_equal(qdd[rest], 0.0)
        worst = max(worst, rel_err(qdd, target))
        stiction = (tau - rigid_armature.inverse_dynamics(s.q[k], qd, qdd))[rest]
        assert np.all((stiction >= -lower[rest] - 1e-9) & (stiction <= upper[rest] + 1e-9))
        # slip
        target = s.qdd[k]
        level = np.where(rest, np.where(target > 0, upper, -lower), 0.0)
        tau = be.inverse_dynamics(s.q[k], qd, target) + level
        qdd = be.forward_dynamics(s.q[k], qd, tau)
        assert np.all(np.sign(qdd[rest]) == np.sign(target[rest]))
        worst = max(worst, rel_err(qdd, target))
        friction_at_rest = (tau - rigid_armature.inverse_dynamics(s.q[k], qd, qdd))[rest]
        np.testing.assert_allclose(friction_at_rest, level[rest], rtol=1e-9, atol=1e-9)
    assert worst < RTOL


# -- 8. Schilling's model through the backend -------------------------------------------------


@pytest.mark.parametrize("backend", FRICTION)
def test_friction_tends_to_the_static_levels_at_rest(puma, backend):
    """Schilling 6-3-3 through the backend: the velocity column → +static as q̇ → 0⁺ and
    → −static_negative as q̇ → 0⁻; with a breakaway-only transmission the friction column
    → ±(static + τ_B)."""
    velocity = corke_velocity()
    transmission = TransmissionFriction.create(6, None, 1.0, breakaway=[6.3, 5.5, 2.6, 0.0, 0.0, 0.0])
    be = dp.get_backend(backend, puma, friction=FrictionModel(velocity, transmission=transmission))
    q, qdd = random_states(puma, 1, seed=19).q[0], np.zeros(6)
    errors = []
    for speed in (1e-3, 1e-6, 1e-9, 1e-12):
        up = be.inverse_dynamics_breakdown(q, np.full(6, speed), qdd)
        down = be.inverse_dynamics_breakdown(q, np.full(6, -speed), qdd)
        errors.append(max(rel_err(up.velocity, velocity.static_positive),
                          rel_err(down.velocity, -velocity.static_negative)))
        assert rel_err(up.friction, velocity.static_positive + transmission.breakaway) <= errors[-1] + 1e-15
        assert rel_err(down.friction, -velocity.static_negative - transmission.breakaway) <= errors[-1] + 1e-15
    assert all(a > b for a, b in zip(errors, errors[1:]))
    assert errors[-1] < 1e-9


@pytest.mark.parametrize("backend", FRICTION)
def test_smooth_friction_converges_to_sharp(puma, backend):
    """with_smoothing(w): every sgn(q̇) → tanh(q̇/w) (velocity, bearing, transmission); at fixed
    q̇ ≠ 0 the friction converges to the sharp model as w → 0."""
    sharp_model = dhanaraj_with_velocity(puma)
    sharp = dp.get_backend(backend, puma, friction=sharp_model)
    s = random_states(puma, 10, seed=20)
    qd = np.where(np.abs(s.qd) < 0.02, 0.02 * np.sign(s.qd), s.qd)  # |q̇| ≥ 0.02 rad/s
    reference = sharp.inverse_dynamics_breakdown(s.q, qd, s.qdd).friction
    errors = []
    for width in (0.1, 0.03, 1e-2, 3e-3, 1e-3):
        smooth = dp.get_backend(backend, puma, friction=sharp_model.with_smoothing(width))
        assert smooth.friction.smoothing == width and not smooth.friction.set_valued
        errors.append(np.max(np.abs(smooth.inverse_dynamics_breakdown(s.q, qd, s.qdd).friction - reference)))
    assert errors[0] > 1.0
    assert all(b < a for a, b in zip(errors, errors[1:]))
    assert errors[-1] < 1e-9


# -- 9. energy in simulation --------------------------------------------------------------


def test_energy_decreases_rk4_smooth_friction(puma):
    """Zero torque, RK4, smooth Coulomb + viscous friction: the total energy falls at every step.

    Slack: RK4's own energy error per step, measured on the frictionless arm from the same
    states (one step each), times 10.  It must be far below the energy friction removes in a
    step, so that the test can tell dissipation from integration error.
    """
    friction = FrictionModel.create(6, viscous=[0.5, 0.8, 0.3, 0.05, 0.05, 0.02], coulomb=[2, 3, 1.5, .2, .2, .1],
                                    smoothing=0.05)
    be = dp.get_backend("newton_euler_friction", puma, friction=friction)
    s = random_states(puma, 1, seed=4)
    dt = 2e-3
    traj = dp.simulate(be, s.q[0], s.qd[0], np.zeros(6), duration=0.2, dt=dt, integrator="rk4", on_limit="ignore")
    step = np.diff(traj.energy)

    rigid = dp.get_backend("newton_euler", puma)
    idx = np.arange(0, len(traj.t), 10)
    after = [dp.simulate(rigid, traj.q[k], traj.qd[k], np.zeros(6), duration=dt, dt=dt, integrator="rk4",
                         on_limit="ignore") for k in idx]
    rk4_error = max(abs(a.energy[1] - a.energy[0]) for a in after)
    slack = 10 * rk4_error
    power = np.einsum("ni,ni->n", traj.qd, friction.velocity.torque(traj.qd))
    dissipated = 0.5 * (power[:-1] + power[1:]) * dt
    assert slack < 1e-3 * dissipated.min()
    assert np.all(step <= slack)
    assert traj.energy[0] - traj.energy[-1] > 0.1  # joules, not rounding
    # the energy balance ΔE = −∫ q̇·b dt, up to the trapezoid rule's error on the steep
    # tanh (3 % at this dt, 0.6 % at dt/4: it converges)
    assert np.max(np.abs(step + dissipated)) < 5e-2 * dissipated.min()


def test_stick_slip_comes_to_rest_gravity_free(puma):
    """Semi-implicit Euler with sharp Coulomb + static friction, no gravity: kinetic energy
    never rises, every joint stops, and the arm then stays where it is."""
    friction = FrictionModel.create(6, viscous=[0.5, 0.8, 0.3, 0.05, 0.05, 0.02], coulomb=[4, 6, 3, .4, .4, .2],
                                    static=[6, 8, 4, .5, .5, .3], stribeck_velocity=0.05)
    be = dp.get_backend("newton_euler_friction", puma, friction=friction, gravity=(0.0, 0.0, 0.0))
    s = random_states(puma, 1, seed=4)
    traj = dp.simulate(be, s.q[0], s.qd[0], np.zeros(6), duration=1.2, dt=2e-3, on_limit="ignore")
    assert traj.kinetic[0] > 1.0
    assert np.all(np.diff(traj.kinetic) <= 1e-12 * traj.kinetic[0])   # slack: rounding only
    settled = traj.t > 1.0
    np.testing.assert_array_equal(traj.qd[settled], 0.0)
    np.testing.assert_array_equal(traj.q[settled], traj.q[settled][:1].repeat(settled.sum(), axis=0))


def test_stick_slip_scara_holds_against_gravity():
    """SCARA: the revolute axes are vertical (no gravity torque), the quill's static level
    (50 N) exceeds its weight; the arm stops and then holds still with gravity on."""
    model = dp.load_robot("scara")
    weight = -dp.get_backend("newton_euler", model).gravity_torques(np.zeros(4))
    assert abs(weight[0]) < 1e-12 and abs(weight[1]) < 1e-12 and abs(weight[3]) < 1e-12 and 0 < abs(weight[2]) < 40
    friction = FrictionModel.create(4, viscous=0.2, coulomb=[3, 2, 40, .5], static=[4, 3, 50, .6])
    be = dp.get_backend("newton_euler_friction", model, friction=friction)
    s = random_states(model, 1, seed=4)
    traj = dp.simulate(be, s.q[0], s.qd[0], np.zeros(4), duration=1.0, dt=2e-3, on_limit="ignore")
    settled = traj.t > 0.6
    np.testing.assert_array_equal(traj.qd[settled], 0.0)
    np.testing.assert_array_equal(traj.q[settled], traj.q[settled][:1].repeat(settled.sum(), axis=0))
    assert np.all(traj.qd[traj.t > 0.2, 2] == 0)  # the quill sticks for good, exactly


def test_stick_slip_pendulum_stops_exactly(pendulum):
    """One joint: the swing dies out, then q̇ is exactly 0 and stays 0 (gravity torque at the
    resting angle below the 3 N·m static level)."""
    friction = FrictionModel.create(1, viscous=0.1, coulomb=2.0, static=3.0, stribeck_velocity=0.05)
    be = dp.get_backend("newton_euler_friction", pendulum, friction=friction)
    traj = dp.simulate(be, [0.1], [2.0], [0.0], duration=1.6, dt=2e-3)
    moving = np.nonzero(traj.qd[:, 0] != 0)[0]
    rest = moving[-1] + 1                                   # q̇ is 0 from this sample on
    assert 0.5 < traj.t[rest] < 1.4 and np.ptp(traj.q[:rest, 0]) > 0.1
    np.testing.assert_array_equal(traj.q[rest:, 0], traj.q[rest, 0])
    np.testing.assert_array_equal(traj.qdd[rest:-1, 0], 0.0)
    assert abs(dp.get_backend("newton_euler", pendulum).gravity_torques(traj.q[-1])[0]) < 3.0
    assert np.all(np.diff(traj.energy) <= 1e-12)            # friction is the only sink of energy


def test_rk4_refuses_sharp_dry_friction(puma):
    be = dp.get_backend("newton_euler_friction", puma)  # Corke: sharp Coulomb
    with pytest.raises(dp.InputError, match="semi_implicit_euler") as info:
        dp.simulate(be, np.zeros(6), np.zeros(6), np.zeros(6), duration=0.01, dt=1e-3, integrator="rk4")
    assert "smoothing" in str(info.value)


# -- 10. parameter sources -----------------------------------------------------------------


def test_urdf_dynamics_is_viscous_and_coulomb():
    model = dp.load_urdf_string(TWO_LINK_WITH_DYNAMICS)
    friction = FrictionModel.from_urdf(model)
    np.testing.assert_array_equal(friction.velocity.viscous, [0.5, 0.5])
    np.testing.assert_array_equal(friction.velocity.coulomb_positive, [1.2, 1.2])
    np.testing.assert_array_equal(friction.velocity.coulomb_negative, [1.2, 1.2])
    np.testing.assert_array_equal(friction.velocity.static_positive, [1.2, 1.2])
    q, qd, qdd = np.array([0.2, -0.4]), np.array([2.0, -0.5]), np.array([0.3, 0.1])
    for options in ({}, {"friction": "urdf"}):  # not bundled: the default is the URDF
        be = dp.get_backend("newton_euler_friction", model, **options)
        assert be.friction.name == "urdf"
        tau = be.inverse_dynamics(q, qd, qdd) - dp.get_backend("newton_euler", model).inverse_dynamics(q, qd, qdd)
        np.testing.assert_allclose(tau, [0.5 * 2.0 + 1.2, 0.5 * -0.5 - 1.2], rtol=1e-12)


def test_bundled_puma_profiles_carry_the_published_numbers(puma):
    """urdf/puma560_friction.toml and the sources it cites: Corke's joint-side viscous and
    Coulomb values, Dhanaraj Table 3.4 (Armstrong 1988) and the AKB motor inertias."""
    corke = dp.get_backend("newton_euler_friction", puma).friction  # default profile
    assert corke.name == "corke"
    np.testing.assert_array_equal(corke.velocity.viscous, [5.80, 9.50, 3.98, 0.41, 0.43, 0.22])
    np.testing.assert_array_equal(corke.velocity.coulomb_positive, [24.73, 13.59, 7.09, 0.85, 0.67, 0.30])
    np.testing.assert_array_equal(corke.velocity.coulomb_negative, [27.24, 7.66, 5.64, 1.29, 1.04, 0.81])
    np.testing.assert_array_equal(corke.velocity.static_positive, corke.velocity.coulomb_positive)
    assert corke.bearing is None and corke.transmission is None and corke.armature_form == "diagonal"

    dh = dp.get_backend("lagrange_euler_friction", puma, profile="dhanaraj").friction
    np.testing.assert_array_equal(dh.transmission.breakaway[:3], [6.3, 5.5, 2.6])
    np.testing.assert_array_equal(dh.transmission.rated_torque[:3], [97.6, 186.4, 89.4])
    np.testing.assert_array_equal(dh.bearing.mu[:3], [0.1, 0.1, 0.1])
    np.testing.assert_array_equal(dh.bearing.radius[:3], [0.10, 0.08, 0.07])
    np.testing.assert_array_equal(dh.armature, [1.14, 4.71, 0.83, 0.20, 0.179, 0.193])
    assert dh.armature_form == "link"
    # a path to the data file gives the same
    path = dp.robots.bundled_dir() / "puma560_friction.toml"
    np.testing.assert_array_equal(load_friction(path, puma).velocity.viscous, corke.velocity.viscous)


# -- 11. bad input -----------------------------------------------------------------------------

PROFILE = 'default_profile = "p"\n[profiles.p]\n'


@pytest.mark.parametrize("make, fragment", [
    (lambda: FrictionModel.create(6, viscous=[1, 1, -0.5, 1, 1, 1]), "'viscous' of joint index 2"),
    (lambda: FrictionModel.create(6, armature=-1.0), "armature"),
    (lambda: BearingFriction.create(6, "journal", -0.1, radius=0.1), "bearing mu"),
    (lambda: TransmissionFriction.create(6, None, 1.0, breakaway=-2.0), "breakaway"),
    (lambda: EfficiencyCurve([0.0, 1.0], [0.5, 1.5]), r"\(0, 1\]"),
    (lambda: EfficiencyCurve([0.0, 1.0], [0.0, 0.5]), r"\(0, 1\]"),
    (lambda: EfficiencyCurve([0.0, 0.5, 0.4], [0.5, 0.6, 0.7]), "strictly increasing"),
    (lambda: FrictionModel.create(6, armature_form="rotor"), "armature_form"),
], ids=["negative viscous", "negative armature", "negative mu", "negative breakaway", "efficiency > 1",
        "efficiency 0", "non-monotone curve", "armature form"])
def test_bad_parameters(make, fragment):
    with pytest.raises(dp.ModelError, match=fragment):
        make()


@pytest.mark.parametrize("backend", FRICTION)
def test_friction_that_does_not_fit_the_robot(puma, backend):
    with pytest.raises(dp.ModelError, match=r"3 joints, robot 'puma560' has 6"):
        dp.get_backend(backend, puma, friction=FrictionModel.create(3, viscous=1.0))
    stanford = dp.load_robot("stanford")
    linear = BearingFriction.create(6, "linear", 0.1, spacing=0.1)
    with pytest.raises(dp.ModelError, match="'joint1' is revolute: a linear bearing"):
        dp.get_backend(backend, stanford, friction=FrictionModel.create(6, bearing=linear))
    journal = BearingFriction.create(6, "journal", 0.1, radius=0.1)
    with pytest.raises(dp.ModelError, match="'joint3' is prismatic: a journal bearing"):
        dp.get_backend(backend, stanford, friction=FrictionModel.create(6, bearing=journal))
    with pytest.raises(dp.ModelError, match="no profile 'armstrong'; profiles: corke, dhanaraj"):
        dp.get_backend(backend, puma, profile="armstrong")
    with pytest.raises(dp.ModelError, match="FrictionModel, a data file, 'urdf' or 'none'"):
        dp.get_backend(backend, puma, friction=3)


@pytest.mark.parametrize("text, fragment", [
    (PROFILE + "viscous = [1, 2\n", "not a valid friction data file"),
    (PROFILE + "viscous = 1.0\nviscosity = 2.0\n", r"unknown entries \['viscosity'\]"),
    (PROFILE + "viscous = [1.0, 2.0]\n", r"one per joint \(6\)"),
    (PROFILE + "[profiles.p.bearing]\nkind = 'journal'\nradius = 0.1\n", r"profile 'p': \[bearing\]: missing mu$"),
    (PROFILE + "[profiles.p.bearing]\nkind = 'journal'\nmu = 0.1\nradius = 0.1\nradious = 0.2\n", "radious"),
    (PROFILE + "[profiles.p.transmission]\nrated_torque = 10.0\nwith_curv = [false, false, false, false, false, "
     "false]\nefficiency = {load_ratio = [0, 1], efficiency = [0.5, 0.9]}\n", "with_curv"),
], ids=["TOML syntax", "unknown key", "wrong length", "missing mu", "unknown bearing key",
        "unknown transmission key"])
def test_bad_friction_data_file(puma, tmp_path, text, fragment):
    path = tmp_path / "arm_friction.toml"
    path.write_text(text)
    with pytest.raises(dp.ModelError, match=fragment):
        dp.get_backend("newton_euler_friction", puma, friction=path)


@pytest.mark.parametrize("args, fragment", [
    ((np.zeros(5), np.zeros(6), np.zeros(6)), r"q must have shape \(6,\) or \(N, 6\), got \(5,\)"),
    ((np.zeros((2, 6)), np.zeros((3, 6)), np.zeros((2, 6))), "batch sizes differ"),
    ((np.zeros(6), np.full(6, np.nan), np.zeros(6)), "qd has a non-finite entry"),
])
def test_bad_state_to_breakdown(puma, args, fragment):
    be = dp.get_backend("newton_euler_friction", puma)
    with pytest.raises(dp.InputError, match=fragment):
        be.inverse_dynamics_breakdown(*args)


def test_link_armature_on_a_prismatic_joint_is_refused():
    stanford = dp.load_robot("stanford")
    with pytest.raises(dp.ModelError, match="prismatic joint.*'diagonal'"):
        dp.get_backend("newton_euler_friction", stanford,
                       friction=FrictionModel.create(stanford.n, armature=0.5, armature_form="link"))


@pytest.mark.parametrize("profile", ["corke", "dhanaraj"])
def test_a_locked_puma_takes_the_bundled_friction_of_its_free_joints(puma, profile):
    """dp.lock_joints(puma, joint2): the bundled file's six entries were refused for five
    joints ('must be one per joint (5), got shape (6,)').  Now every per-joint entry is the
    free joints' (Corke's Coulomb levels, Dhanaraj's breakaway and motor inertias), and the
    velocity friction of a state is the full robot's at the same joint rates."""
    locked = dp.lock_joints(puma, {"joint2": 0.3})
    kept = [0, 2, 3, 4, 5]
    ours = dp.get_backend("newton_euler_friction", locked, profile=profile)
    full = dp.get_backend("newton_euler_friction", puma, profile=profile)
    for part in ("coulomb_positive", "coulomb_negative", "viscous", "static_positive"):
        np.testing.assert_array_equal(getattr(ours.friction.velocity, part), getattr(full.friction.velocity, part)[kept])
    np.testing.assert_array_equal(ours.friction.armature, full.friction.armature[kept])
    if full.friction.transmission is not None:
        np.testing.assert_array_equal(ours.friction.transmission.breakaway, full.friction.transmission.breakaway[kept])
    s = random_states(puma, 6, seed=41)
    velocity = ours.inverse_dynamics_breakdown(s.q[:, kept], s.qd[:, kept], s.qdd[:, kept]).velocity
    np.testing.assert_array_equal(velocity, full.inverse_dynamics_breakdown(s.q, s.qd, s.qdd).velocity[:, kept])


def test_a_friction_file_for_another_robot_is_refused(puma, tmp_path):
    """The PUMA-560's file on the Stanford arm (6 joints too: only a joint count was checked)
    put the PUMA's levels, bearings and motor inertias on another arm; the file names its
    robot.  A model of that name (a copy of the URDF) takes it; a profile given with friction
    that has none is refused instead of ignored."""
    stanford = dp.load_robot("stanford")
    with pytest.raises(dp.ModelError, match="is for robot 'puma560', not 'stanford'"):
        dp.get_backend("newton_euler_friction", stanford, friction=friction_file("puma560"))
    copy = tmp_path / "puma_copy.urdf"
    copy.write_text(puma.source_urdf)
    same = dp.get_backend("newton_euler_friction", dp.load_urdf(copy), friction=friction_file("puma560"))
    np.testing.assert_array_equal(same.friction.velocity.coulomb_positive,
                                  dp.get_backend("newton_euler_friction", puma).friction.velocity.coulomb_positive)
    for friction in ("none", "urdf", FrictionModel.none(6)):
        with pytest.raises(dp.ModelError, match="profile='corke' chooses a profile of a friction data file"):
            dp.get_backend("newton_euler_friction", puma, friction=friction, profile="corke")


def test_bundled_friction_goes_by_file_not_by_robot_name(tmp_path):
    """A user's own URDF that happens to be named puma560 keeps its own <dynamics>."""
    from dyn_plugin.robots import robot_path

    text = robot_path("puma560").read_text().replace("<joint name=\"joint1\" type=\"revolute\">",
                                                      "<joint name=\"joint1\" type=\"revolute\">\n"
                                                      "    <dynamics damping=\"0.7\" friction=\"0.3\"/>", 1)
    assert "damping=\"0.7\"" in text
    path = tmp_path / "puma560.urdf"
    path.write_text(text)
    mine = dp.get_backend("newton_euler_friction", dp.load_robot(path))
    assert mine.friction.name == "urdf"
    assert mine.friction.velocity.viscous[0] == 0.7 and mine.friction.velocity.coulomb_positive[0] == 0.3
    assert dp.get_backend("newton_euler_friction", dp.load_robot("puma560")).friction.name == "corke"
    with pytest.raises(dp.ModelError, match="no bundled one"):
        dp.get_backend("newton_euler_friction", dp.load_robot(path), profile="dhanaraj")


def test_velocity_step_needs_a_positive_time_step():
    scara = dp.load_robot("scara")
    be = dp.get_backend("newton_euler_friction", scara, friction=FrictionModel.create(scara.n, coulomb=1.0))
    with pytest.raises(dp.InputError, match="dt must be positive"):
        be.velocity_step(np.zeros(4), np.zeros(4), np.zeros(4), -1e-3)


# -- 12. friction over any backend -------------------------------------------------------------


@pytest.mark.parametrize("armature_form", ["diagonal", "link"])
@pytest.mark.parametrize("load_dependent", [False, True])
def test_friction_over_pinocchio_equals_friction_over_newton_euler(puma, load_dependent, armature_form):
    """The wrapper only uses the rigid backend's public methods (and joint wrenches from a
    backend that declares them), so friction over pinocchio (which takes the diagonal
    armature itself, and has no joint wrenches) is friction over newton_euler: ID, FD (also
    with joints at rest: stiction) and every column of the breakdown, to 1e-12."""
    if load_dependent:
        friction = dhanaraj_with_velocity(puma, armature_form)
    else:
        transmission = TransmissionFriction.create(6, None, 1.0, breakaway=[6.3, 5.5, 2.6, 0.0, 0.0, 0.0])
        friction = FrictionModel(corke_velocity(), transmission=transmission, armature_form=armature_form,
                                 armature=[0.784, 2.325, 0.577, 0.191, 0.171, 0.194])
    assert friction.load_dependent == load_dependent
    ours = dp.get_backend("newton_euler_friction", puma, friction=friction)
    theirs = dp.with_friction("pinocchio", puma, friction=friction)
    assert theirs.rigid.name == "pinocchio" and theirs.name == "pinocchio_friction"
    s = random_states(puma, 12, seed=21)
    qd = s.qd.copy()
    qd[::4, 1] = 0.0                                          # joint 2 at rest in every fourth state
    parts, reference = theirs.inverse_dynamics_breakdown(s.q, qd, s.qdd), ours.inverse_dynamics_breakdown(s.q, qd, s.qdd)
    for field in dataclasses.fields(parts):
        assert rel_err(getattr(parts, field.name), getattr(reference, field.name)) <= 1e-12, field.name
    assert np.any(parts.armature != 0) and np.any(parts.velocity != 0) and np.any(parts.transmission != 0)
    assert np.any(parts.bearing != 0) == load_dependent
    tau = ours.inverse_dynamics(s.q, qd, s.qdd)
    assert rel_err(theirs.inverse_dynamics(s.q, qd, s.qdd), tau) <= 1e-12
    assert rel_err(theirs.mass_matrix(s.q), ours.mass_matrix(s.q)) <= 1e-12
    assert rel_err(theirs.forward_dynamics(s.q, qd, tau), ours.forward_dynamics(s.q, qd, tau)) <= 1e-12
    for k in (0, 1):                                          # one state: at rest (stiction), sliding
        assert rel_err(theirs.inverse_dynamics(s.q[k], qd[k], s.qdd[k]), tau[k]) <= 1e-12
        assert rel_err(theirs.forward_dynamics(s.q[k], qd[k], tau[k]), ours.forward_dynamics(s.q[k], qd[k], tau[k])) <= 1e-12
    for mine, reference in zip(theirs.joint_wrenches(s.q, qd, s.qdd), ours.joint_wrenches(s.q, qd, s.qdd)):
        assert rel_err(mine, reference) <= 1e-12


def test_with_friction_is_the_wrapper_over_a_registered_backend(puma):
    """dp.with_friction(name, model) and get_backend("..._friction", model, rigid=name) are
    the same wrapper; lagrange_euler_friction is the wrapper over lagrange_euler; options
    of the rigid backend pass through; a backend with friction of its own is refused."""
    s = random_states(puma, 5, seed=22)
    a = dp.with_friction("lagrange_euler", puma, profile="dhanaraj")
    b = dp.get_backend("newton_euler_friction", puma, profile="dhanaraj", rigid="lagrange_euler")
    c = dp.get_backend("lagrange_euler_friction", puma, profile="dhanaraj")
    assert a.name == b.name == c.name == "lagrange_euler_friction"
    for be in (a, b):
        np.testing.assert_array_equal(be.inverse_dynamics(s.q, s.qd, s.qdd), c.inverse_dynamics(s.q, s.qd, s.qdd))
    for be in (a, b, c):
        assert type(be).kind == "ours" and type(be).can("friction", "stepping", "joint_wrenches")
        assert be.rigid.name == "lagrange_euler" and not type(be.rigid).can("friction")
    numpy = dp.with_friction("newton_euler", puma, compiled=False)
    assert not numpy.compiled and numpy.rigid.compiled is False and numpy.name == "newton_euler_friction"
    assert "rigid='newton_euler'" in repr(numpy)
    with pytest.raises(dp.BackendError, match="has friction of its own"):
        dp.with_friction("newton_euler_friction", puma)
    with pytest.raises(dp.BackendError, match="unknown backend 'bullet'"):
        dp.get_backend("newton_euler_friction", puma, rigid="bullet")


def test_joint_wrenches_come_from_a_backend_that_declares_them(puma):
    """A rigid backend without the joint_wrenches capability (pinocchio) gets them from the
    first registered backend that declares them, on the rigid backend's model (with the
    rotors in the links here)."""
    assert not backend_class("pinocchio").can("joint_wrenches")
    be = dp.with_friction("pinocchio", puma, friction=dhanaraj_with_velocity(puma, "link"))
    s = random_states(puma, 4, seed=23)
    f, n = be.joint_wrenches(s.q, s.qd, s.qdd)
    f_ref, n_ref = dp.get_backend("newton_euler", be.rigid.model).joint_wrenches(s.q, s.qd, s.qdd)
    np.testing.assert_array_equal(f, f_ref)
    np.testing.assert_array_equal(n, n_ref)
    assert np.max(np.abs(be.inverse_dynamics_breakdown(s.q, s.qd, s.qdd).bearing)) > 0.1


def test_one_state_in_one_compiled_call_equals_the_wrapper_over_pinocchio():
    """newton_euler declares single_state_kernels: the wrapper composes them with the law
    (one compiled call per state).  Same numbers as friction over pinocchio, which has no
    such kernels, for sliding joints and for joints at rest (stiction falls back)."""
    model = dp.load_robot("puma560")
    fused = dp.get_backend("newton_euler_friction", model)
    assert fused._fused                                   # the one-call path is in use
    reference = dp.with_friction("pinocchio", model)
    rng = np.random.default_rng(11)
    for k in range(40):
        q, qd, qdd, tau = rng.normal(size=(4, model.n))
        if k % 4 == 0:
            qd[k % model.n] = 0.0                          # a joint at rest: stiction
        for method, args in (("inverse_dynamics", (q, qd, qdd)), ("forward_dynamics", (q, qd, tau))):
            ours, ref = getattr(fused, method)(*args), getattr(reference, method)(*args)
            err = np.abs(ours - ref) / np.maximum(1.0, np.abs(ref))
            assert err.max() <= 1e-12, (method, k, err.max())
    with pytest.raises(dp.InputError, match="qd"):
        fused.inverse_dynamics(q, qd[:3], qdd)


@pytest.mark.parametrize("smoothing", [0.0, 0.05])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_batch_in_one_loop_is_the_rigid_body_plus_the_law(puma, smoothing, workers):
    """newton_euler declares block_kernels: a batch's τ is the rigid body's and the law's in
    one loop (law.fused_batch), serial and parallel (from loops.PARALLEL_FROM states, a
    last chunk cut short).  Against pinocchio's rnea plus the law written out here:
    a q̈ + b_v q̇ + d(q̇) (L(q̇) + τ_B), L = b_d + (b_s − b_d) e^(−|q̇|/ε) of the motion's
    direction (Schilling eq. 6-3-3), asymmetric levels, a static peak, joints at rest."""
    velocity = dataclasses.replace(corke_velocity(), smoothing=smoothing)
    breakaway = np.array([6.3, 5.5, 2.6, 0.0, 0.0, 0.0])
    armature = np.array([0.784, 2.325, 0.577, 0.191, 0.171, 0.194])
    friction = FrictionModel(velocity, transmission=TransmissionFriction.create(6, None, 1.0, breakaway=breakaway),
                             armature_form="diagonal", armature=armature)
    be = dp.get_backend("newton_euler_friction", puma, friction=friction, rigid="newton_euler")
    assert be._fused_batch is not None
    pin_model = pin.buildModelFromXML(puma.source_urdf)
    data = pin_model.createData()
    from dyn_plugin.loops import PARALLEL_FROM
    for N in (37, PARALLEL_FROM + 77):
        s = random_states(puma, N, seed=31)
        qd = s.qd.copy()
        qd[::5, 2] = 0.0
        with dp.using_workers(workers):
            tau = be.inverse_dynamics(s.q, qd, s.qdd)
        rigid = np.array([pin.rnea(pin_model, data, *x) for x in zip(s.q, qd, s.qdd)])
        forward = qd > 0
        coulomb = np.where(forward, velocity.coulomb_positive, velocity.coulomb_negative)
        static = np.where(forward, velocity.static_positive, velocity.static_negative)
        level = coulomb + (static - coulomb) * np.exp(-np.abs(qd) / velocity.stribeck_velocity)
        d = np.tanh(qd / smoothing) if smoothing else np.sign(qd)
        expected = rigid + armature * s.qdd + velocity.viscous * qd + d * (level + breakaway)
        assert rel_err(tau, expected) <= 1e-12, N


def test_a_free_swing_through_the_efficiency_kink_is_solved(puma):
    """τ = 0 with Dhanaraj's bearings and efficiency curves (profile "dhanaraj"), no viscous
    friction: the output torque of joints 1-3 sits at the efficiency kink (τ_out = 0, slopes
    1/η and η), where Newton's residual stalls at rounding of the 10-100 N·m that cancel in
    it.  It was judged against max(1, |τ|) = 1 and refused 71 of 200 such states ("did not
    converge in 50 Newton steps", residual 9.5e-13 N·m); the inverse dynamics of the answer
    gives back τ = 0."""
    be = dp.get_backend("newton_euler_friction", puma, profile="dhanaraj")
    rng = np.random.default_rng(0)
    q, qd = rng.uniform(-2, 2, (200, puma.n)), rng.uniform(-6, 6, (200, puma.n))
    qdd = be.forward_dynamics(q, qd, np.zeros_like(q))
    assert np.abs(be.inverse_dynamics(q, qd, qdd)).max() <= 1e-12
    for k in range(0, 200, 20):
        assert np.abs(be.forward_dynamics(q[k], qd[k], np.zeros(puma.n)) - qdd[k]).max() <= 1e-11 * np.abs(qdd[k]).max()
    assert np.all(np.isfinite(be.velocity_step(q[:40], qd[:40], np.zeros((40, puma.n)), 5e-4)))   # 12 of 40 refused


@pytest.mark.parametrize("name", ["newton_euler_friction", "lagrange_euler_friction"])
def test_stiction_at_its_level_within_rounding_holds_or_barely_slides(puma, name):
    """Every joint at rest and one pushed at its static level to within 1e-13 (relative):
    q̈ within rounding of 0, on either side of the level.  The box problem's polish put such
    a joint on its bound (within 1e-12) and then refused the candidate for the sign of a
    rounding-sized motion: 'did not converge in 10000 sweeps' for 108 of 360 such torques."""
    levels = np.array([8.0, 9.0, 5.0, 1.5, 1.2, 1.0])
    friction = dp.FrictionModel.create(puma, viscous=0.3, coulomb=0.6 * levels, static=levels,
                                       stribeck_velocity=0.05)
    be = dp.get_backend(name, puma, friction=friction)
    q, rest = np.random.default_rng(0).uniform(-1, 1, puma.n), np.zeros(puma.n)
    M = be.mass_matrix(q)
    for joint in range(puma.n):
        slide = 2e-13 * levels[joint] / M[joint, joint]          # at most the excess over the joint's inertia
        for nudge in np.linspace(-1e-13, 1e-13, 9):
            tau = be.gravity_torques(q)
            tau[joint] -= levels[joint] * (1 + nudge)
            assert np.abs(be.forward_dynamics(q, rest, tau)).max() <= slide


def test_stiction_under_large_torques_settles_at_their_rounding(puma):
    """One joint at rest, the others sliding fast, torques up to 1e3 N·m: the stiction
    torque λ was held to 1e-13 absolute (at most 1 N·m) while its step is rounding of the
    torques, ±1.2e-13 here, so 'stiction at the joints at rest did not converge' (4 of 5000
    such states).  Now λ settles: joint 3 holds, and q̈ is the same wrapper's over pinocchio
    to rounding of those torques (M Δq̈ ≤ 1e-12 of them)."""
    rng = np.random.default_rng(1)
    c, cn = rng.uniform(0.1, 2, 6), rng.uniform(0.1, 2, 6)
    friction = dp.FrictionModel.create(6, viscous=rng.uniform(0, 1, 6), coulomb=c, coulomb_negative=cn,
                                       static=c + rng.uniform(0, 1, 6), static_negative=cn + rng.uniform(0, 1, 6),
                                       stribeck_velocity=rng.uniform(0.05, 0.5, 6))
    q = np.array([1.3316065575562113, -3.220826668071762, 3.0874786243264807, -0.7759379010410761,
                  0.7629316576762475, -0.5556808116522607])
    qd = np.array([50.0, -1.991439357436648, 0.0, -0.9777382316412395, 5e-324, 0.5514518541805447])
    tau = np.array([60.168089635915933, 767.78503502264402, 1043.9512866997566, 0.48821311498024655,
                    3.8453337229354365, 1.4258860535539379])
    ours = dp.get_backend("newton_euler_friction", puma, friction=friction)
    qdd = ours.forward_dynamics(q, qd, tau)
    reference = dp.with_friction("pinocchio", puma, friction=friction).forward_dynamics(q, qd, tau)
    assert qdd[2] == reference[2] == 0.0
    assert np.abs(ours.mass_matrix(q) @ (qdd - reference)).max() <= 1e-12 * np.abs(tau).max()


def test_the_velocity_step_of_load_dependent_friction_converges_to_its_forward_dynamics(puma):
    """Sliding joints (none stops within the step): q̇⁺ = q̇ + dt q̈ with q̈ forward dynamics'
    for the explicit step, and within O(dt) of it for the implicit viscous one.  The dry
    impulses were applied on one linearisation at the free step, which left the step's
    acceleration 12.4 rad/s² from forward dynamics' for Dhanaraj's bearings and transmission,
    whatever dt: the simulation converged to other dynamics."""
    be = dp.get_backend("newton_euler_friction", puma, friction=dhanaraj_with_velocity(puma))
    rng = np.random.default_rng(0)
    q, tau = rng.uniform(-2, 2, (20, puma.n)), rng.uniform(-1, 1, (20, puma.n))
    qd = rng.choice([-1.0, 1.0], (20, puma.n)) * rng.uniform(1, 6, (20, puma.n))      # none near rest
    qdd = be.forward_dynamics(q, qd, tau)
    gaps = []
    for dt in (1e-3, 1e-4):
        assert np.abs(be.velocity_step(q, qd, tau, dt) - (qd + dt * qdd)).max() <= 1e-12 * np.abs(qd).max()
        gaps.append(np.abs(be.velocity_step(q, qd, tau, dt, viscous="implicit") - (qd + dt * qdd)).max() / dt)
    assert gaps[1] <= 0.11 * gaps[0]                                 # first order: 10× smaller at dt / 10
