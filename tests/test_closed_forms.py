"""Our backends against closed-form dynamics printed in the sources (textbook oracles).

Sources: Fu, Gonzalez & Lee, *Robotics*, Sec. 3.2.6 (O1) and Prob. 3.16 (O7); Schilling,
*Fundamentals of Robotics*, Secs. 6-5, 6-6 and 6-9 (O2, O3, O4); Horn & Linge 1994, ROBMAT §5
(double pendulum); Jack 1990, App. B (Macsyma two-link arm with payload). The formulas live in
tests/oracles.py, each under its source's section; the URDFs below are built so that
they describe the same bodies. The books put link frames at the distal joint (COM at -l/2);
URDF link frames sit at the proximal joint, so the COM is at +l/2 and the next joint at (l,0,0).
"""
from functools import lru_cache

import numpy as np
import pytest

import dyn_plugin as dp
import oracles as O
from conftest import OURS as BACKENDS
N_STATES = 20
RTOL = 1e-12          # relative to max(1, |ref|), element-wise
GOLDEN_ATOL = 1e-9    # golden values are printed with 10 decimals


# --------------------------------------------------------------------------------- URDF
def _inertial(mass, com, diag):
    ixx, iyy, izz = diag
    return (f'<inertial><origin xyz="{com[0]!r} {com[1]!r} {com[2]!r}"/><mass value="{mass!r}"/>'
            f'<inertia ixx="{ixx!r}" ixy="0" ixz="0" iyy="{iyy!r}" iyz="0" izz="{izz!r}"/></inertial>')


def _link(name, mass=None, com=(0, 0, 0), diag=(0, 0, 0)):
    body = "" if mass is None else _inertial(mass, com, diag)
    return f'<link name="{name}">{body}</link>'


def _joint(name, kind, parent, child, xyz=(0, 0, 0), axis=(0, 0, 1)):
    lim = '<limit lower="-10" upper="10" effort="100" velocity="100"/>' if kind != "fixed" else ""
    ax = f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>' if kind != "fixed" else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz[0]!r} {xyz[1]!r} {xyz[2]!r}" rpy="0 0 0"/>{ax}{lim}</joint>')


def _robot(name, parts):
    return f'<?xml version="1.0"?><robot name="{name}">{"".join(parts)}</robot>'


def _rod_x(m, l):
    """Thin uniform rod along link x: COM at l/2, inertia diag(0, m l^2/12, m l^2/12)."""
    return dict(mass=m, com=(l / 2, 0.0, 0.0), diag=(0.0, m * l**2 / 12, m * l**2 / 12))


def planar_chain_urdf(bodies, lengths):
    """Planar revolute chain about z; bodies[i] = kwargs of _link for link i (proximal frame)."""
    parts, parent, offset = [_link("base")], "base", 0.0
    for i, (body, l) in enumerate(zip(bodies, lengths), start=1):
        parts += [_link(f"link{i}", **body), _joint(f"j{i}", "revolute", parent, f"link{i}", (offset, 0, 0))]
        parent, offset = f"link{i}", l
    return _robot("planar", parts)


def rods_urdf(masses, lengths):
    """O1 / O2 / O4: thin uniform rods."""
    return planar_chain_urdf([_rod_x(m, l) for m, l in zip(masses, lengths)], lengths)


def point_masses_urdf(masses, lengths):
    """O7 / ROBMAT: point mass m_i at the far end of link i, zero inertia."""
    return planar_chain_urdf([dict(mass=m, com=(l, 0.0, 0.0)) for m, l in zip(masses, lengths)], lengths)


def scara_urdf(m1, m2, m3, a1, a2, d1=0.4, l3=0.3):
    """O3: Schilling's SCARA; joint 2 axis (0,0,-1) reproduces alpha1 = pi, joint 3 slides down."""
    rod3 = dict(mass=m3, com=(0.0, 0.0, l3 / 2), diag=(m3 * l3**2 / 12, m3 * l3**2 / 12, 0.0))
    return _robot("scara", [
        _link("base"),
        _link("link1", **_rod_x(m1, a1)), _joint("j1", "revolute", "base", "link1", (0, 0, d1)),
        _link("link2", **_rod_x(m2, a2)), _joint("j2", "revolute", "link1", "link2", (a1, 0, 0), (0, 0, -1)),
        _link("link3", **rod3), _joint("j3", "prismatic", "link2", "link3", (a2, 0, 0), (0, 0, -1)),
    ])


def macsyma_urdf(m1, m2, mp, l1, l2, i1, i2, payload="fixed_link"):
    """Jack 1990, App. B: COMs at l1/2 and l2/2, planar COM inertias i1, i2 about z, point payload mp at the tip.

    The out-of-plane moments (0.6 i) never act in planar motion; they only keep the tensor physical.
    payload="fixed_link": payload is its own link on a fixed joint; "lumped": merged into link 2.
    """
    link1 = dict(mass=m1, com=(l1 / 2, 0.0, 0.0), diag=(0.6 * i1, 0.6 * i1, i1))
    if payload == "lumped":
        m = m2 + mp
        xc = (m2 * l2 / 2 + mp * l2) / m
        izz = i2 + m2 * (l2 / 2 - xc)**2 + mp * (l2 - xc)**2
        link2 = dict(mass=m, com=(xc, 0.0, 0.0), diag=(0.6 * i2, 0.6 * i2 + izz - i2, izz))
        return planar_chain_urdf([link1, link2], (l1, l2))
    link2 = dict(mass=m2, com=(l2 / 2, 0.0, 0.0), diag=(0.6 * i2, 0.6 * i2, i2))
    xml = planar_chain_urdf([link1, link2], (l1, l2))
    tip = _link("payload", mass=mp) + _joint("tip", "fixed", "link2", "payload", (l2, 0, 0))
    return xml.replace("</robot>", tip + "</robot>")


# --------------------------------------------------------------------------------- cases
Y_DOWN = (0.0, -O.G0, 0.0)      # books' plane is x-y with y0 up
P_FU = dict(m1=1.7, m2=1.1, l=0.65)
P_S2 = dict(m1=2.0, m2=1.5, a1=0.8, a2=0.6)
P_SC = dict(m1=3.0, m2=2.0, m3=1.2, a1=0.45, a2=0.35)
P_PEN = dict(m1=1.3, a1=0.9)
P_PM = dict(m1=0.8, m2=1.4, l1=0.9, l2=0.45)
P_RM = dict(m1=1.3, m2=0.9, L1=0.7, L2=0.5, g=9.81)   # ROBMAT: gravity {g, 0, 0}
P_MX = dict(m1=2.3, m2=1.7, mp=0.6, l1=0.8, l2=0.55, i_1=0.13, i_2=0.07, gravity=9.81)


def _robmat_terms(q, qd, m1, m2, L1, L2, g):
    """ROBMAT configuration-space pieces as (D, velocity term, gravity) (Horn & Linge 1994, In[10])."""
    M, B, C, G = O.robmat_configuration_space(q, m1, m2, L1, L2, g)
    return M, 2 * B @ [qd[0] * qd[1]] + C @ (np.asarray(qd) ** 2), G


# name -> (n, URDF text, gravity, terms(q, qd) -> (D, h, c))
CASES = {
    "O1_fu_two_link": (2, rods_urdf((P_FU["m1"], P_FU["m2"]), (P_FU["l"],) * 2), Y_DOWN,
                       lambda q, qd: O.fu_two_link_terms(q, qd, **P_FU)),
    "O2_schilling_two_axis": (2, rods_urdf((P_S2["m1"], P_S2["m2"]), (P_S2["a1"], P_S2["a2"])), Y_DOWN,
                              lambda q, qd: O.schilling_two_axis_terms(q, qd, **P_S2)),
    "O3_schilling_scara": (3, scara_urdf(**P_SC), (0.0, 0.0, -O.G0),
                           lambda q, qd: O.schilling_scara_terms(q, qd, **P_SC)),
    "O4_pendulum": (1, rods_urdf((P_PEN["m1"],), (P_PEN["a1"],)), Y_DOWN,
                    lambda q, qd: O.pendulum_terms(q, qd, **P_PEN)),
    "O7_point_mass_two_link": (2, point_masses_urdf((P_PM["m1"], P_PM["m2"]), (P_PM["l1"], P_PM["l2"])), Y_DOWN,
                               lambda q, qd: O.point_mass_two_link_terms(q, qd, **P_PM)),
    "robmat_double_pendulum": (2, point_masses_urdf((P_RM["m1"], P_RM["m2"]), (P_RM["L1"], P_RM["L2"])),
                               (P_RM["g"], 0.0, 0.0), lambda q, qd: _robmat_terms(q, qd, **P_RM)),
}


@lru_cache(maxsize=None)
def _model(xml):
    return dp.load_urdf_string(xml)


def backend(name, xml, gravity):
    return dp.get_backend(name, _model(xml), gravity=gravity)


def states(n, seed, n_states=N_STATES):
    """Seeded random (q, qd, qdd) triples."""
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-np.pi, np.pi, n), rng.uniform(-2, 2, n), rng.uniform(-3, 3, n))
            for _ in range(n_states)]


def assert_close(got, ref, what, rtol=RTOL):
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    err = np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref)), initial=0.0)
    assert err <= rtol, f"{what}: max scaled error {err:.3e} > {rtol:g}\n got={got}\n ref={ref}"


# --------------------------------------------------------------------------------- O1-O4, O7, ROBMAT
@pytest.mark.parametrize("bname", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_inverse_dynamics(case, bname):
    """tau = D qdd + h + c (O1 Fu 3.2.6, O2 Schilling 6-5, O3 6-6, O4 6-9, O7 Fu Prob. 3.16) and ROBMAT In[10]."""
    n, xml, grav, terms = CASES[case]
    be = backend(bname, xml, grav)
    for k, (q, qd, qdd) in enumerate(states(n, seed=1)):
        D, h, c = terms(q, qd)
        assert_close(be.inverse_dynamics(q, qd, qdd), D @ qdd + h + c, f"{case} state {k} tau")


@pytest.mark.parametrize("bname", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_mass_matrix(case, bname):
    """D(q) of the closed forms (Fu D_ik 3.2-31, Schilling D, ROBMAT Out[5] M)."""
    n, xml, grav, terms = CASES[case]
    be = backend(bname, xml, grav)
    for k, (q, qd, _) in enumerate(states(n, seed=2)):
        assert_close(be.mass_matrix(q), terms(q, qd)[0], f"{case} state {k} D")


@pytest.mark.parametrize("bname", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_gravity_torques(case, bname):
    """Gravity term: Fu c_i (3.2-34), Schilling h, ROBMAT Out[8] G."""
    n, xml, grav, terms = CASES[case]
    be = backend(bname, xml, grav)
    for k, (q, qd, _) in enumerate(states(n, seed=3)):
        assert_close(be.gravity_torques(q), terms(q, qd)[2], f"{case} state {k} gravity")


@pytest.mark.parametrize("bname", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_bias_forces(case, bname):
    """Velocity + gravity terms h(q,qd) + c(q) (Fu 3.2-26; ROBMAT 2B qq + C qd^2 + G)."""
    n, xml, grav, terms = CASES[case]
    be = backend(bname, xml, grav)
    for k, (q, qd, _) in enumerate(states(n, seed=4)):
        _, h, c = terms(q, qd)
        assert_close(be.bias_forces(q, qd), h + c, f"{case} state {k} bias")


# --------------------------------------------------------------------------------- golden values
def _golden_backends(xml, grav):
    return [backend(b, xml, grav) for b in BACKENDS]


def test_o2_golden_values():
    """O2 golden values (Schilling Sec. 6-5, two-axis arm, m=a=1, home q=(pi/3,-pi/3); second case)."""
    p = dict(m1=1.0, m2=1.0, a1=1.0, a2=1.0)
    q = np.array([np.pi / 3, -np.pi / 3])
    D, vel, grav = O.schilling_two_axis_terms(q, [1.0, 2.0], **p)
    assert np.allclose(D, [[2.1666666667, 0.5833333333], [0.5833333333, 0.3333333333]], rtol=0, atol=GOLDEN_ATOL)
    assert np.allclose(grav, [12.25775, 4.9031], rtol=0, atol=GOLDEN_ATOL)
    assert np.allclose(vel, [3.4641016151, -0.4330127019], rtol=0, atol=GOLDEN_ATOL)
    p2 = dict(m1=2.0, m2=1.5, a1=0.8, a2=0.6)
    s2 = ([0.3, 0.9], [-0.7, 1.1], [2.0, 0.4])
    assert np.allclose(O.schilling_two_axis(*s2, **p2), [24.6184727946, 2.6167467194], rtol=0, atol=GOLDEN_ATOL)
    for be in _golden_backends(rods_urdf((1.0, 1.0), (1.0, 1.0)), Y_DOWN):
        assert np.allclose(be.mass_matrix(q), D, rtol=0, atol=GOLDEN_ATOL)
        assert np.allclose(be.inverse_dynamics(q, [0.0, 0.0], [0.0, 0.0]), [12.25775, 4.9031], rtol=0, atol=GOLDEN_ATOL)
        assert np.allclose(be.inverse_dynamics(q, [1.0, 2.0], [0.5, -1.0]), [16.2218516151, 4.4284206314],
                           rtol=0, atol=GOLDEN_ATOL)
    for be in _golden_backends(rods_urdf((2.0, 1.5), (0.8, 0.6)), Y_DOWN):
        assert np.allclose(be.inverse_dynamics(*s2), [24.6184727946, 2.6167467194], rtol=0, atol=GOLDEN_ATOL)


def test_o3_scara_golden_values():
    """O3 golden values (Schilling Sec. 6-6, SCARA, m=(3,2,1.2), a1=.45, a2=.35)."""
    p = dict(m1=3.0, m2=2.0, m3=1.2, a1=0.45, a2=0.35)
    q, qd, qdd = [0.4, -1.2, 0.05], [0.9, -0.6, 0.2], [1.5, 0.3, -0.8]
    D_ref = [[1.3302805905, -0.3542236286, 0], [-0.3542236286, 0.2286666667, 0], [0, 0, 1.2]]
    tau_ref = [1.4241035749, -0.7243261930, -12.72744]
    D, vel, grav = O.schilling_scara_terms(q, qd, **p)
    assert np.allclose(D, D_ref, rtol=0, atol=GOLDEN_ATOL)
    assert np.allclose(vel, [-0.4650502223, -0.2615907501, 0], rtol=0, atol=GOLDEN_ATOL)
    assert np.allclose(grav, [0, 0, -11.76744], rtol=0, atol=GOLDEN_ATOL)
    for be in _golden_backends(scara_urdf(**p), (0.0, 0.0, -O.G0)):
        assert np.allclose(be.mass_matrix(q), D_ref, rtol=0, atol=GOLDEN_ATOL)
        assert np.allclose(be.gravity_torques(q), [0, 0, -11.76744], rtol=0, atol=GOLDEN_ATOL)
        assert np.allclose(be.inverse_dynamics(q, qd, qdd), tau_ref, rtol=0, atol=GOLDEN_ATOL)


def test_o4_pendulum_golden_values():
    """O4 / Schilling Sec. 6-9: m1 = a1 = 1, q1 = pi/3 gives tau = 2.45155 (qdd=0), 2.7848833333 (qdd=1)."""
    q, qd = [np.pi / 3], [0.0]
    assert np.allclose(O.pendulum(q, qd, [1.0], 1.0, 1.0), [2.7848833333], rtol=0, atol=GOLDEN_ATOL)
    for be in _golden_backends(rods_urdf((1.0,), (1.0,)), Y_DOWN):
        assert np.allclose(be.inverse_dynamics(q, qd, [0.0]), [2.45155], rtol=0, atol=GOLDEN_ATOL)
        assert np.allclose(be.inverse_dynamics(q, qd, [1.0]), [2.7848833333], rtol=0, atol=GOLDEN_ATOL)
        # "no velocity term" (Exercise 6-4-1): bias at speed equals gravity
        assert_close(be.bias_forces(q, [1.7]), be.gravity_torques(q), "pendulum c == 0")


# --------------------------------------------------------------------------------- Fu Christoffel
def test_fu_christoffel():
    """Fu (3.2-33) h_ikm of the two-link arm (Sec. 3.2.6): h112=h121=h122=-m2 l^2 S2/2, h211=+m2 l^2 S2/2."""
    _, xml, grav, _ = CASES["O1_fu_two_link"]
    be = backend("lagrange_euler", xml, grav)
    for k, (q, _, _) in enumerate(states(2, seed=5)):
        assert_close(be.christoffel(q), O.fu_two_link_christoffel(q, P_FU["m2"], P_FU["l"]), f"state {k} h_ikm")


def test_schilling_velocity_matrices_match_closed_forms():
    """O2/O3 (Schilling 6-5, 6-6): qd^T C^i qd of the printed C^i equals the printed velocity vector c (oracle check)."""
    for q, qd, _ in states(3, seed=13):
        C = O.schilling_scara_velocity_matrices(q, P_SC["m2"], P_SC["m3"], P_SC["a1"], P_SC["a2"])
        assert_close(np.einsum("k,ikm,m->i", qd, C, qd), O.schilling_scara_terms(q, qd, **P_SC)[1], "SCARA c")
        C = O.schilling_two_axis_velocity_matrices(q[:2], P_S2["m2"], P_S2["a1"], P_S2["a2"])
        assert_close(np.einsum("k,ikm,m->i", qd[:2], C, qd[:2]),
                     O.schilling_two_axis_terms(q[:2], qd[:2], **P_S2)[1], "two-axis c")


def test_schilling_christoffel():
    """h_ikm = symmetric part of Schilling's C^i (O2 Sec. 6-5, O3 SCARA Sec. 6-6)."""
    for case, n, oracle in (("O2_schilling_two_axis", 2, lambda q: O.schilling_two_axis_velocity_matrices(
                                 q, P_S2["m2"], P_S2["a1"], P_S2["a2"])),
                            ("O3_schilling_scara", 3, lambda q: O.schilling_scara_velocity_matrices(
                                 q, P_SC["m2"], P_SC["m3"], P_SC["a1"], P_SC["a2"]))):
        _, xml, grav, _ = CASES[case]
        be = backend("lagrange_euler", xml, grav)
        for k, (q, _, _) in enumerate(states(n, seed=14)):
            assert_close(be.christoffel(q), O.symmetrized(oracle(q)), f"{case} state {k} h_ikm")


def test_scara_configuration_space():
    """ROBMAT layout (Horn & Linge 1994, §4.2) of the SCARA: B columns (1,2),(1,3),(2,3) = h_ijk, C[i,j] = h_ijj, G = (0,0,-g0 m3)."""
    _, xml, grav, terms = CASES["O3_schilling_scara"]
    be = backend("lagrange_euler", xml, grav)
    for k, (q, qd, _) in enumerate(states(3, seed=15)):
        H = O.symmetrized(O.schilling_scara_velocity_matrices(q, P_SC["m2"], P_SC["m3"], P_SC["a1"], P_SC["a2"]))
        D, _, c = terms(q, qd)
        B = H[:, [0, 0, 1], [1, 2, 2]]
        C = np.einsum("ijj->ij", H)
        for name, got, ref in zip("MBCG", be.configuration_space(q), (D, B, C, c)):
            assert_close(got, ref, f"state {k} {name}")


# --------------------------------------------------------------------------------- ROBMAT (Horn & Linge 1994)
def test_robmat_oracle_self_consistency():
    """Horn & Linge 1994, In[10]/Out[11]: M qdd + 2B qq + C qd^2 + G equals the printed NewtonEuler F (Out[9])."""
    for q, qd, qdd in states(2, seed=6):
        M, B, C, G = O.robmat_configuration_space(q, **P_RM)
        f = M @ qdd + 2 * B @ [qd[0] * qd[1]] + C @ qd**2 + G
        assert_close(O.robmat_newton_euler(q, qd, qdd, **P_RM), f, "ROBMAT F - f")


def test_robmat_configuration_space():
    """Horn & Linge 1994, Out[5]-Out[8]: ConfigurationSpace[q, {g,0,0}] -> M, B, CC, G of the double pendulum."""
    _, xml, grav, _ = CASES["robmat_double_pendulum"]
    be = backend("lagrange_euler", xml, grav)
    for k, (q, _, _) in enumerate(states(2, seed=7)):
        got = be.configuration_space(q)
        for name, g, r in zip("MBCG", got, O.robmat_configuration_space(q, **P_RM)):
            assert_close(g, r, f"state {k} {name}")


@pytest.mark.parametrize("bname", BACKENDS)
def test_robmat_newton_euler(bname):
    """Horn & Linge 1994, Out[9]: F = NewtonEuler[q, {g,0,0}] of the double pendulum, via inverse_dynamics."""
    _, xml, grav, _ = CASES["robmat_double_pendulum"]
    be = backend(bname, xml, grav)
    for k, (q, qd, qdd) in enumerate(states(2, seed=8)):
        assert_close(be.inverse_dynamics(q, qd, qdd), O.robmat_newton_euler(q, qd, qdd, **P_RM), f"state {k} F")


# --------------------------------------------------------------------------------- Macsyma (Jack 1990, App. B)
MX_R = O.macsyma_constants(**P_MX)
MX_GRAVITY = (0.0, -P_MX["gravity"], 0.0)   # g = matrix([0],[gravity],[0]), V = +m g.x: y up
MX_PAYLOADS = ("fixed_link", "lumped")


def _mx_backend(bname, payload):
    p = {k: P_MX[k] for k in ("m1", "m2", "mp", "l1", "l2")}
    return backend(bname, macsyma_urdf(**p, i1=P_MX["i_1"], i2=P_MX["i_2"], payload=payload), MX_GRAVITY)


@pytest.mark.parametrize("payload", MX_PAYLOADS)
@pytest.mark.parametrize("bname", BACKENDS)
def test_macsyma_torques(bname, payload):
    """Jack 1990, App. B.9: the fortbigopt Fortran's torque1/torque2 vs inverse_dynamics."""
    be = _mx_backend(bname, payload)
    for k, (q, qd, qdd) in enumerate(states(2, seed=9)):
        assert_close(be.inverse_dynamics(q, qd, qdd), O.macsyma_torques(q, qd, qdd, MX_R), f"state {k} tau")


@pytest.mark.parametrize("payload", MX_PAYLOADS)
@pytest.mark.parametrize("bname", BACKENDS)
def test_macsyma_terms(bname, payload):
    """Jack 1990 torque formula probed (Fu Probs. 3.11/3.12): g = tau(q,0,0), bias = tau(q,qd,0), M[:,k] = tau(q,0,e_k) - g."""
    be = _mx_backend(bname, payload)
    zero = np.zeros(2)
    for k, (q, qd, _) in enumerate(states(2, seed=10)):
        g = O.macsyma_torques(q, zero, zero, MX_R)
        M = np.column_stack([O.macsyma_torques(q, zero, e, MX_R) - g for e in np.eye(2)])
        assert_close(be.gravity_torques(q), g, f"state {k} gravity")
        assert_close(be.bias_forces(q, qd), O.macsyma_torques(q, qd, zero, MX_R), f"state {k} bias")
        assert_close(be.mass_matrix(q), M, f"state {k} M")


@pytest.mark.parametrize("payload", MX_PAYLOADS)
@pytest.mark.parametrize("bname", BACKENDS)
def test_macsyma_forward_dynamics(bname, payload):
    """Jack 1990, App. B.9: forward dynamics 'DIFF(t1,t,2), 'DIFF(t2,t,2) vs forward_dynamics."""
    be = _mx_backend(bname, payload)
    rng = np.random.default_rng(11)
    for k, (q, qd, _) in enumerate(states(2, seed=11)):
        tau = rng.uniform(-20, 20, 2)
        assert_close(be.forward_dynamics(q, qd, tau), O.macsyma_forward(q, qd, tau, MX_R), f"state {k} qdd")


def test_macsyma_oracle_self_consistency():
    """Jack 1990, App. B.9: the printed forward dynamics inverts the printed torques (solve() of c55)."""
    for q, qd, qdd in states(2, seed=12):
        tau = O.macsyma_torques(q, qd, qdd, MX_R)
        assert_close(O.macsyma_forward(q, qd, tau, MX_R), qdd, "FD(ID(qdd))", rtol=1e-10)
