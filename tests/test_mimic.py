"""Mimic joints in reduced coordinates (``mimic=True``) against pinocchio's ``mimic=True``.

The references: pinocchio's own mimic joints (rnea, crba, nonLinearEffects; its aba does
not take them), and pinocchio's full model (every joint independent) projected by hand:
τ = Gᵀ τ_full(q_full, G v, G a) — the principle of virtual work, written here from the
URDF's numbers, not from our code.  Tolerance 1e-9 relative, entry by entry.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin import configuration  # noqa: E402
from dyn_plugin.backends.registry import backend_class, backends  # noqa: E402
from dyn_plugin.errors import ModelError, URDFWarning  # noqa: E402
from dyn_plugin.sampling import random_states  # noqa: E402
from test_random_trees import assert_close  # noqa: E402


def _link(name, mass, com, moments):
    return (f'<link name="{name}"><inertial><origin xyz="{com}" rpy="0.1 -0.2 0.3"/><mass value="{mass}"/>'
            f'<inertia ixx="{moments[0]}" iyy="{moments[1]}" izz="{moments[2]}" ixy="0.001" ixz="0" iyz="0"/>'
            '</inertial></link>')


def _joint(name, kind, parent, child, xyz, axis, mimic=""):
    limit = '<limit lower="-2" upper="2" effort="10" velocity="5"/>' if kind != "continuous" else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="0.3 0 0.2"/><axis xyz="{axis}"/>{limit}{mimic}</joint>')


# a_1 → a_2 → a_3 (follows a_2: −0.5 q + 0.2) → a_4 (prismatic, follows a_1: 0.1 q − 0.05), and a
# branch b_1 (follows a_3, which follows a_2: a chain of mimics) off link 1
MIMIC_URDF = "<robot name='mimicry'>" + "".join([
    _link("base", 2.0, "0 0 0.1", (0.1, 0.1, 0.1)),
    _link("l1", 1.5, "0.05 0 0.1", (0.02, 0.03, 0.025)),
    _link("l2", 1.2, "0.1 0.02 0", (0.01, 0.02, 0.015)),
    _link("l3", 0.8, "0 0.05 0.05", (0.01, 0.012, 0.011)),
    _link("l4", 0.5, "0.02 0 0", (0.004, 0.005, 0.006)),
    _link("m1", 0.3, "0 0 0.02", (0.002, 0.003, 0.0025)),
    _joint("a_1", "revolute", "base", "l1", "0 0 0.2", "0 0 1"),
    _joint("a_2", "revolute", "l1", "l2", "0.3 0 0.1", "0 1 0"),
    _joint("a_3", "revolute", "l2", "l3", "0.25 0 0", "1 0 1",
           '<mimic joint="a_2" multiplier="-0.5" offset="0.2"/>'),
    _joint("a_4", "prismatic", "l3", "l4", "0.1 0.1 0", "0 0 1",
           '<mimic joint="a_1" multiplier="0.1" offset="-0.05"/>'),
    _joint("b_1", "revolute", "l1", "m1", "0 0.2 0.1", "1 0 0",
           '<mimic joint="a_3" multiplier="2.0" offset="0.1"/>'),
]) + "</robot>"


@pytest.fixture(scope="module", params=[False, True], ids=["fixed", "floating"])
def case(request):
    model = dp.load_urdf_string(MIMIC_URDF, mimic=True, floating_base=request.param)
    return model, random_states(model, 6, seed=4)


def test_reduced_coordinates():
    model = dp.load_urdf_string(MIMIC_URDF, mimic=True)
    assert model.n == 5 and model.nq == model.nv == 2
    assert model.configuration_names == ("a_1", "a_2")
    chained = {r.joint: r for r in model.mimic}["b_1"]        # b_1 → a_3 → a_2: 2 (−0.5 q + 0.2) + 0.1
    assert (chained.leader, chained.multiplier, chained.offset) == ("a_2", -1.0, 0.5)
    assert dp.load_urdf_string(MIMIC_URDF, mimic=True, floating_base=True).nv == 8


def test_every_backend_against_the_projected_full_model(case):
    """τ, M, g, bias, C v and q̈ of every rigid backend (registry) = Gᵀ(pinocchio full model)G."""
    model, s = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        full = dp.load_urdf_string(MIMIC_URDF, floating_base=model.floating_base)   # every joint independent
    reference = dp.get_backend("pinocchio", full)
    G, q_full = _by_hand(model, full, s.q)
    v, a = s.qd @ G.T, s.qdd @ G.T
    M = G.T @ reference.mass_matrix(q_full) @ G
    expected = {"tau": reference.inverse_dynamics(q_full, v, a) @ G, "M": M,
                "g": reference.gravity_torques(q_full) @ G, "bias": reference.bias_forces(q_full, v) @ G}
    expected["qdd"] = np.linalg.solve(M, (s.tau - expected["bias"])[..., None])[..., 0]
    for name in backends(("ours", "generated"), cannot=("friction",)):
        if name == "symbolic_numba" and model.floating_base:        # symbolic runs the same code; one compile is enough
            continue
        be = dp.get_backend(name, model)
        got = {"tau": be.inverse_dynamics(s.q, s.qd, s.qdd), "M": be.mass_matrix(s.q), "g": be.gravity_torques(s.q),
               "bias": be.bias_forces(s.q, s.qd), "qdd": be.forward_dynamics(s.q, s.qd, s.tau)}
        for key in expected:
            assert_close(got[key], expected[key], f"{name} {key} with mimic joints ({'floating' if model.floating_base else 'fixed'})")
        Cv = np.einsum("nij,nj->ni", be.coriolis_matrix(s.q, s.qd), s.qd)
        assert_close(Cv, expected["bias"] - expected["g"], f"{name} C v with mimic joints")


def _by_hand(model, full, q):
    """G and q_full straight from the URDF's <mimic> numbers (resolved by hand above)."""
    follow = {"a_3": ("a_2", -0.5, 0.2), "a_4": ("a_1", 0.1, -0.05), "b_1": ("a_2", -1.0, 0.5)}
    base_q, base_v = full.nq - full.n, full.nv - full.n
    G = np.zeros((full.nv, model.nv))
    G[:base_v, :base_v] = np.eye(base_v)
    q_full = np.zeros((len(q), full.nq))
    q_full[:, :base_q] = q[:, :base_q]
    for i, name in enumerate(full.joint_names):
        leader, multiplier, offset = follow.get(name, (name, 1.0, 0.0))
        k = model.configuration_names.index(leader) - base_q
        G[base_v + i, base_v + k] = multiplier
        q_full[:, base_q + i] = multiplier * q[:, base_q + k] + offset
    return G, q_full


def test_against_pinocchios_own_mimic_joints():
    """pinocchio's mimic=True needs each leader before its follower; a single-level URDF."""
    text = MIMIC_URDF.replace('<mimic joint="a_3" multiplier="2.0" offset="0.1"/>', "")
    model = dp.load_urdf_string(text, mimic=True)
    pm = pin.buildModelFromXML(text, mimic=True)
    pd = pm.createData()
    assert pm.nv == model.nv == 3
    s = random_states(model, 5, seed=8)
    be = dp.get_backend("newton_euler", model)
    order = [pm.joints[pm.getJointId(name)].idx_v for name in model.velocity_names]
    for q, v, a in zip(s.q, s.qd, s.qdd):
        pq, pv, pa = (np.zeros(pm.nq) for _ in range(3))
        pq[[pm.joints[pm.getJointId(n)].idx_q for n in model.configuration_names]] = q
        pv[order], pa[order] = v, a
        assert_close(be.inverse_dynamics(q, v, a), pin.rnea(pm, pd, pq, pv[:pm.nv], pa[:pm.nv])[order], "τ vs pinocchio mimic")
        M = pin.crba(pm, pd, pq)
        M = np.triu(M) + np.triu(M, 1).T
        assert_close(be.mass_matrix(q), M[np.ix_(order, order)], "M vs pinocchio mimic")


def test_default_keeps_mimic_joints_independent_with_a_warning():
    with pytest.warns(URDFWarning, match="'a_3' follows 'a_2'.*mimic=True"):
        model = dp.load_urdf_string(MIMIC_URDF)
    assert model.nv == model.n == 5 and not model.mimic


def test_bad_mimic_is_refused_clearly():
    missing = MIMIC_URDF.replace('<mimic joint="a_1"', '<mimic joint="nowhere"')
    with pytest.raises(ModelError, match="'nowhere' is not a moving joint"):
        dp.load_urdf_string(missing, mimic=True)
    loop = MIMIC_URDF.replace('<mimic joint="a_2" multiplier="-0.5"', '<mimic joint="b_1" multiplier="-0.5"')
    with pytest.raises(ModelError, match="loop"):
        dp.load_urdf_string(loop, mimic=True)
    with pytest.raises(dp.URDFError, match="multiplier"):
        dp.load_urdf_string(MIMIC_URDF.replace('multiplier="0.1"', 'multiplier="x"'), mimic=True)
    model = dp.load_urdf_string(MIMIC_URDF, mimic=True)
    friction = [name for name in backends("ours") if backend_class(name).can("friction")]
    with pytest.raises(ModelError, match="mimic"):
        dp.get_backend(friction[0], model)


def test_a_mimic_robot_conserves_energy_in_simulation():
    """Reduced coordinates are a true mechanical system: RK4 conserves its energy (gravity
    included, the potential from every joint's position)."""
    from dyn_plugin.simulate import simulate

    model = dp.load_urdf_string(MIMIC_URDF, mimic=True)
    be = dp.get_backend("newton_euler", model)
    run = simulate(be, [0.3, -0.4], [1.0, -2.0], np.zeros(model.nv), 0.5, 1e-3, integrator="rk4", on_limit="ignore")
    assert run.relative_energy_drift() < 1e-9
    assert np.ptp(run.potential) > 0.1 * np.abs(run.energy).max()        # gravity did work


def test_the_regressor_of_a_mimic_robot():
    """τ = Y θ (θ every link's ten parameters, the followers' too) against newton_euler's τ in
    reduced coordinates, which the test above holds to the projected full model."""
    model = dp.load_urdf_string(MIMIC_URDF, mimic=True)
    s = random_states(model, 5, seed=9)
    Y = dp.get_backend("lagrange_euler", model).regressor(s.q, s.qd, s.qdd)
    assert Y.shape == (5, model.nv, 10 * model.n)
    tau = dp.get_backend("newton_euler", model).inverse_dynamics(s.q, s.qd, s.qdd)
    assert_close(Y @ model.inertial_parameters(flat=True), tau, "Y θ, mimic")


def test_pinocchios_frame_jacobian_rate_with_mimic_joints_is_used_in_world_only():
    """pinocchio 4.1's getFrameJacobianTimeVariation with mimic joints is 0.5 to 3 off the
    rate of its own Jacobian in LOCAL and LOCAL_WORLD_ALIGNED, right in WORLD: the reference
    backend refuses the two and answers the third, which ours matches; ours is the central
    difference of its Jacobian along q̇ in every reference."""
    model = dp.load_urdf_string(MIMIC_URDF.replace('<mimic joint="a_3" multiplier="2.0" offset="0.1"/>', ""), mimic=True)
    s = random_states(model, 2, seed=5)
    frame = model.frame_names[-1]
    ref, ours = dp.get_backend("pinocchio", model), dp.get_backend("newton_euler", model)
    for reference in ("local", "local_world_aligned"):
        with pytest.raises(dp.BackendError, match=f"wrong with mimic joints in '{reference}'"):
            ref.frame_jacobian_time_variation(s.q, s.qd, frame, reference)
        h = 1e-6
        difference = (ours.frame_jacobian(s.q + h * s.qd, frame, reference)
                      - ours.frame_jacobian(s.q - h * s.qd, frame, reference)) / (2 * h)
        assert np.abs(ours.frame_jacobian_time_variation(s.q, s.qd, frame, reference) - difference).max() <= 1e-7
    assert_close(ours.frame_jacobian_time_variation(s.q, s.qd, frame, "world"),
                 ref.frame_jacobian_time_variation(s.q, s.qd, frame, "world"), "J̇ world vs pinocchio")


def test_the_pinocchio_backends_coriolis_matrix_with_mimic_joints():
    """pinocchio 4.1's computeCoriolisMatrix on a mimic=True model misses velocity terms (C q̇
    0.17 off; validate's Cqd failed on every mimic robot): the reference backend takes
    Gᵀ C G of the full model.  Its C q̇ is pinocchio's own nonLinearEffects − gravity, its
    Ṁ − 2C skew (Ṁ by central differences along q̇), and it equals newton_euler's C."""
    text = MIMIC_URDF.replace('<mimic joint="a_3" multiplier="2.0" offset="0.1"/>', "")   # pinocchio's order
    for floating in (False, True):
        model = dp.load_urdf_string(text, mimic=True, floating_base=floating)
        reference, ours = dp.get_backend("pinocchio", model), dp.get_backend("newton_euler", model)
        s = random_states(model, 4, seed=9)
        C = reference.coriolis_matrix(s.q, s.qd)
        velocity_terms = reference.bias_forces(s.q, s.qd) - reference.gravity_torques(s.q)
        assert_close(np.einsum("nij,nj->ni", C, s.qd), velocity_terms, "C q̇ vs pinocchio's nonLinearEffects − g")
        assert_close(C, ours.coriolis_matrix(s.q, s.qd), "pinocchio backend's C vs newton_euler's")
        h = 1e-6
        M_dot = (reference.mass_matrix(configuration.integrate(model, s.q, h * s.qd))
                 - reference.mass_matrix(configuration.integrate(model, s.q, -h * s.qd))) / (2 * h)
        S = M_dot - 2 * C
        assert np.abs(S + np.swapaxes(S, 1, 2)).max() <= 1e-7
