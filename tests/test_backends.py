"""Our backends against pinocchio on the bundled robots, and the physical properties
every backend must have (symmetry, positive definiteness, skew-symmetry, Christoffel)."""

import numpy as np
import pinocchio as pin
import pytest

import dyn_plugin as dp
from conftest import OURS, rel_err

RTOL = 1e-9


@pytest.fixture(scope="module")
def references():
    cache = {}

    def get(model):
        if model.name not in cache:
            cache[model.name] = dp.get_backend("pinocchio", model)
        return cache[model.name]
    return get


@pytest.mark.parametrize("backend", OURS)
def test_matches_pinocchio(bundled, backend, references, states):
    """τ, M, bias, gravity, C·q̇ and q̈ equal pinocchio's rnea/crba/nle/g/C/aba."""
    s = states(bundled, 100)
    ours, ref = dp.get_backend(backend, bundled), references(bundled)
    assert rel_err(ours.inverse_dynamics(s.q, s.qd, s.qdd), ref.inverse_dynamics(s.q, s.qd, s.qdd)) < RTOL
    assert rel_err(ours.mass_matrix(s.q), ref.mass_matrix(s.q)) < RTOL
    assert rel_err(ours.bias_forces(s.q, s.qd), ref.bias_forces(s.q, s.qd)) < RTOL
    assert rel_err(ours.gravity_torques(s.q), ref.gravity_torques(s.q)) < RTOL
    c_ours = np.einsum("nij,nj->ni", ours.coriolis_matrix(s.q, s.qd), s.qd)
    c_ref = np.einsum("nij,nj->ni", ref.coriolis_matrix(s.q, s.qd), s.qd)
    assert rel_err(c_ours, c_ref) < RTOL
    assert rel_err(ours.forward_dynamics(s.q, s.qd, s.tau), ref.forward_dynamics(s.q, s.qd, s.tau)) < RTOL


def test_pybullet_reference_agrees_with_pinocchio(bundled, references, states):
    """The two references agree on our bundled robots (so neither alters them)."""
    s = states(bundled, 20)
    pb, ref = dp.get_backend("pybullet", bundled), references(bundled)
    assert rel_err(pb.inverse_dynamics(s.q, s.qd, s.qdd), ref.inverse_dynamics(s.q, s.qd, s.qdd)) < RTOL
    assert rel_err(pb.mass_matrix(s.q), ref.mass_matrix(s.q)) < RTOL


@pytest.mark.parametrize("backend", OURS)
def test_mass_matrix_symmetric_positive_definite(bundled, backend, states):
    M = dp.get_backend(backend, bundled).mass_matrix(states(bundled, 50).q)
    assert np.max(np.abs(M - M.transpose(0, 2, 1))) < 1e-12 * np.max(np.abs(M))
    assert np.min(np.linalg.eigvalsh(M)) > 0


@pytest.mark.parametrize("backend", OURS)
def test_mdot_minus_2c_is_skew(bundled, backend, states):
    """Ṁ − 2C is skew-symmetric for the Christoffel C; Ṁ by central differences along q̇."""
    be = dp.get_backend(backend, bundled)
    s = states(bundled, 10)
    step = 1e-6
    Mdot = (be.mass_matrix(s.q + step * s.qd) - be.mass_matrix(s.q - step * s.qd)) / (2 * step)
    S = Mdot - 2 * be.coriolis_matrix(s.q, s.qd)
    scale = np.max(np.abs(Mdot)) + 1.0
    assert np.max(np.abs(S + S.transpose(0, 2, 1))) < 1e-6 * scale
    # and C is the Christoffel C, not just any skew-making one: both backends agree on it
    other = dp.get_backend("newton_euler" if backend == "lagrange_euler" else "lagrange_euler", bundled)
    assert rel_err(be.coriolis_matrix(s.q, s.qd), other.coriolis_matrix(s.q, s.qd)) < RTOL


def test_christoffel_symbols(bundled, states):
    """h_iii = 0, h_ikm = h_imk, and h_ikm = ½(∂D_ik/∂q_m + ∂D_im/∂q_k − ∂D_km/∂q_i) (Fu 3.2-33)."""
    be = dp.get_backend("lagrange_euler", bundled)
    q = states(bundled, 3).q
    h = be.christoffel(q)
    n = bundled.n
    assert np.max(np.abs(h[:, np.arange(n), np.arange(n), np.arange(n)])) < 1e-12 * (1 + np.abs(h).max())
    assert np.max(np.abs(h - h.transpose(0, 1, 3, 2))) < 1e-12 * (1 + np.abs(h).max())
    step = 1e-6
    dD = np.stack([(be.mass_matrix(q + step * e) - be.mass_matrix(q - step * e)) / (2 * step) for e in np.eye(n)],
                  axis=-1)  # dD[:, i, k, m] = ∂D_ik/∂q_m
    gamma = 0.5 * (dD + dD.transpose(0, 1, 3, 2) - dD.transpose(0, 3, 2, 1))
    assert np.max(np.abs(h - gamma)) < 1e-6 * (1 + np.abs(h).max())


def test_inverse_of_forward(bundled, states):
    be = dp.get_backend("newton_euler", bundled)
    s = states(bundled, 50)
    qdd = be.forward_dynamics(s.q, s.qd, s.tau)
    assert rel_err(be.inverse_dynamics(s.q, s.qd, qdd), s.tau) < RTOL


def test_joint_wrenches_match_pinocchio(bundled, references, states):
    """Joint reaction wrenches equal pinocchio's data.f (joint-local frame, at the joint)."""
    be = dp.get_backend("newton_euler", bundled)
    ref = references(bundled)
    s = states(bundled, 10)
    f, n = be.joint_wrenches(s.q, s.qd, s.qdd)
    for k in range(len(s)):
        pin.rnea(ref.pin_model, ref.data, ref.to_pin_q(s.q[k]), ref.to_pin_v(s.qd[k]), ref.to_pin_v(s.qdd[k]))
        for i, name in enumerate(bundled.joint_names):
            force = ref.data.f[ref.pin_model.getJointId(name)]
            assert rel_err(f[k, i], force.linear) < RTOL
            assert rel_err(n[k, i], force.angular) < RTOL


@pytest.mark.parametrize("backend", OURS)
def test_single_state_and_batch_shapes(bundled, backend, states):
    be = dp.get_backend(backend, bundled)
    s = states(bundled, 4)
    n = bundled.n
    assert be.inverse_dynamics(s.q[0], s.qd[0], s.qdd[0]).shape == (n,)
    assert be.mass_matrix(s.q[0]).shape == (n, n)
    assert be.mass_matrix(s.q).shape == (4, n, n)
    assert be.coriolis_matrix(s.q, s.qd).shape == (4, n, n)
    # a batch may run other code than one state (newton_euler's across SIMD lanes): to rounding
    batch, single = be.inverse_dynamics(s.q, s.qd, s.qdd)[2], be.inverse_dynamics(s.q[2], s.qd[2], s.qdd[2])
    assert np.max(np.abs(batch - single) / np.maximum(1.0, np.abs(single))) <= 1e-13


def test_gravity_is_settable(bundled, states):
    """Gravity scales the gravity torques linearly; the default is (0, 0, -9.81)."""
    np.testing.assert_array_equal(bundled.gravity, [0.0, 0.0, -9.81])
    q = states(bundled, 5).q
    g1 = dp.get_backend("newton_euler", bundled).gravity_torques(q)
    g2 = dp.get_backend("newton_euler", bundled, gravity=(0, 0, -2 * 9.81)).gravity_torques(q)
    assert rel_err(g2, 2 * g1) < 1e-12
    ref = dp.get_backend("pinocchio", bundled, gravity=(1.0, -2.0, 3.0))
    ours = dp.get_backend("lagrange_euler", bundled, gravity=(1.0, -2.0, 3.0))
    assert rel_err(ours.gravity_torques(q), ref.gravity_torques(q)) < RTOL


@pytest.mark.parametrize("seed", range(4))
def test_pybullet_reference_on_random_trees(seed, states):
    """The pybullet reference equals pinocchio on trees whose base inertial frame is rotated
    (pybullet applies gravity in that frame in calculateInverseDynamics; the adapter corrects it)."""
    from urdf_factory import random_tree_urdf

    model = dp.load_urdf_string(random_tree_urdf(np.random.default_rng(seed), 5))
    s = states(model, 10)
    pb, ref = dp.get_backend("pybullet", model), dp.get_backend("pinocchio", model)
    assert rel_err(pb.inverse_dynamics(s.q, s.qd, s.qdd), ref.inverse_dynamics(s.q, s.qd, s.qdd)) < 1e-8
    assert rel_err(pb.mass_matrix(s.q), ref.mass_matrix(s.q)) < 1e-8


def test_pybullet_reference_warns_when_it_would_alter_the_model():
    """A link without <inertial> weighs 1 kg in pybullet and 0 kg in pinocchio: say so."""
    xml = """<robot name="r"><link name="base"/><link name="hollow"/>
    <joint name="j" type="revolute"><parent link="base"/><child link="hollow"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""
    model = dp.load_urdf_string(xml)
    assert model.links_without_inertial == ("hollow",)
    with pytest.warns(dp.PhysicalValidityWarning, match="'hollow' has no <inertial>"):
        dp.get_backend("pybullet", model)
    assert dp.load_robot("puma560").pybullet_alterations() == []
