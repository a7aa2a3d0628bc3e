"""Closed-form dynamics (dyn_plugin.symbolic.derive) against the printed sources and our backends.

Sources:
* Horn & Linge, "Analytical generation of the dynamical equations for mechanical
  manipulators" (ROBMAT; The Mathematica Journal 4(4), 1994), §5: the double pendulum's
  M, B, C, G (Out[5]-Out[8]) and Newton-Euler F (Out[9]); §4.2 the configuration-space
  form and B's structure; §6 the modified Stanford arm (R, R, P).
* H. Jack's 1990 thesis, App. B.9 ("Dynamics of two link manipulators"): the Macsyma
  two-link arm with payload, torque1/torque2 and the forward dynamics, transcribed from
  the fortbigopt Fortran (the 2-D Macsyma print is damaged by OCR; the Fortran is linear
  text).

The printed formulas are typed in below from these sources, never from our output; numeric
checks compare with the numeric backends (newton_euler, lagrange_euler).
"""
import time

import numpy as np
import pytest
import sympy as sp

import dyn_plugin as dp
from urdf_factory import random_tree_urdf
from dyn_plugin.symbolic import (ClosedForm, canonical, compact, exact_number, format_equations, forward_dynamics,
                                 identical, lagrange_euler, lambdify_closed_form, newton_euler, symbolic_model)

RTOL = 1e-12
ROUTES = (lagrange_euler, newton_euler)


def assert_close(got, ref, what, rtol=RTOL):
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    err = np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref)), initial=0.0)
    assert err <= rtol, f"{what}: max scaled error {err:.3e} > {rtol:g}"


def states(n, seed, count=10):
    rng = np.random.default_rng(seed)
    return [tuple(rng.uniform(-2.5, 2.5, n) for _ in range(3)) for _ in range(count)]


def same_fraction(a, b, smodel):
    """a == b for two rational functions of the joint trig functions: cross-multiply, reduce."""
    na, da = sp.fraction(sp.together(a))
    nb, db = sp.fraction(sp.together(b))
    return canonical(na * db - nb * da, smodel) == 0


# ===================================================================================== models
def robmat_double_pendulum():
    """ROBMAT §5: DefineManipulator[{"R", L[1], 0, 0, m[1]}, {"R", L[2], 0, 0, m[2]}]: standard
    DH, point masses at the distal frame origins; ConfigurationSpace[q, {g, 0, 0}] (physical
    gravity along +x0).  Numbers are placeholders; ROBMAT's symbols replace them."""
    rows = [dp.DHRow("revolute", alpha=0, a=0.7, d=0, theta=0, mass=1.3),
            dp.DHRow("revolute", alpha=0, a=0.5, d=0, theta=0, mass=0.9)]
    model = dp.model_from_dh(rows, "standard", name="double_pendulum", gravity=(9.81, 0, 0))
    # proximal link frames: joint 2 sits at (L1, 0, 0) of link 1, mass i at (L_i, 0, 0) of link i
    assert np.allclose(model.joint_positions, [[0, 0, 0], [0.7, 0, 0]])
    assert np.allclose(model.coms, [[0.7, 0, 0], [0.5, 0, 0]])
    L1, L2, m1, m2, g = sp.symbols("L1 L2 m1 m2 g", positive=True)
    sm = symbolic_model(model, {"lengths": [[0, 0, 0], [L1, 0, 0]], "coms": [[L1, 0, 0], [L2, 0, 0]],
                                "masses": [m1, m2], "gravity": [g, 0, 0]})
    values = {L1: 0.7, L2: 0.5, m1: 1.3, m2: 0.9, g: 9.81}
    return model, sm, (L1, L2, m1, m2, g), values


def robmat_printed(sm, L1, L2, m1, m2, g):
    """ROBMAT Out[5]-Out[9], typed in (q[i][t] -> q_i, (q[i])'[t] -> qd_i, (q[i])''[t] -> qdd_i).
    OCR dropped brackets in Out[6] and Out[7]: B = {{-(L1 L2 m2 Sin q2)}, {0}} (2 x 1), CC is 2 x 2."""
    (q1, q2), (d1, d2), (dd1, dd2) = sm.q, sm.qd, sm.qdd
    M = sp.Matrix([[L1**2*m1 + L1**2*m2 + 2*sp.cos(q2)*L1*L2*m2 + L2**2*m2, L2*(sp.cos(q2)*L1 + L2)*m2],
                   [L2*(sp.cos(q2)*L1 + L2)*m2, L2**2*m2]])
    B = sp.Matrix([[-(L1*L2*m2*sp.sin(q2))], [0]])
    C = sp.Matrix([[0, -(L1*L2*m2*sp.sin(q2))], [L1*L2*m2*sp.sin(q2), 0]])
    G = sp.Matrix([g*(L1*m1*sp.sin(q1) + L1*m2*sp.sin(q1) + L2*m2*sp.sin(q1 + q2)), g*L2*m2*sp.sin(q1 + q2)])
    F = sp.Matrix([g*L1*m1*sp.sin(q1) + g*L1*m2*sp.sin(q1) + g*L2*m2*sp.sin(q1 + q2)
                   - 2*L1*L2*m2*sp.sin(q2)*d1*d2 - L1*L2*m2*sp.sin(q2)*d2**2
                   + L1**2*m1*dd1 + L1**2*m2*dd1 + 2*sp.cos(q2)*L1*L2*m2*dd1
                   + L2**2*m2*dd1 + sp.cos(q2)*L1*L2*m2*dd2 + L2**2*m2*dd2,
                   L2*m2*(g*sp.sin(q1 + q2) + L1*sp.sin(q2)*d1**2 + sp.cos(q2)*L1*dd1 + L2*dd1 + L2*dd2)])
    return {"M": M, "B": B, "C": C, "G": G, "tau": F}


def macsyma_two_link():
    """Jack App. B.6: link i's centre of mass at l_i/2, inertia i_i about z only (planar), point
    payload mp at the tip; g = matrix([0],[gravity],[0]) with V = m g.x, i.e. physical gravity
    (0, -gravity, 0).  Modified DH (proximal frames, as our links); numbers are placeholders."""
    rod = dict(d=0, theta=0, alpha=0, inertia=(0.1, 0.1, 0.2, 0, 0, 0))
    rows = [dp.DHRow("revolute", a=0, mass=2.3, com=(0.4, 0, 0), **rod),
            dp.DHRow("revolute", a=0.8, mass=1.7, com=(0.3, 0, 0), **rod)]
    model = dp.model_from_dh(rows, "modified", name="macsyma_two_link")
    l1, l2, m1, m2, mp, i_1, i_2, gravity = sp.symbols("l1 l2 m1 m2 mp i_1 i_2 gravity", positive=True)
    planar = lambda i: [[0, 0, 0], [0, 0, 0], [0, 0, i]]
    sm = symbolic_model(model, {"lengths": [[0, 0, 0], [l1, 0, 0]], "masses": [m1, m2],
                                "coms": [[l1 / 2, 0, 0], [l2 / 2, 0, 0]], "inertias": [planar(i_1), planar(i_2)],
                                "gravity": [0, -gravity, 0]},
                        payloads=[("link2", mp, (l2, 0, 0))])
    return sm, (l1, l2, m1, m2, mp, i_1, i_2, gravity)


def macsyma_constants(l1, l2, m1, m2, mp, i_1, i_2, gravity):
    """(d52) zz: r1..r6 (Budgell's crunch constants)."""
    return (4*gravity*l1*mp + 4*gravity*l1*m2 + 2*gravity*l1*m1,
            (4*l2**2 + 4*l1**2)*mp + (l2**2 + 4*l1**2)*m2 + l1**2*m1 + 4*i_2 + 4*i_1,
            4*gravity*l2*mp + 2*gravity*l2*m2,
            8*l1*l2*mp + 4*l1*l2*m2,
            4*l1*l2*mp + 2*l1*l2*m2,
            4*l2**2*mp + l2**2*m2 + 4*i_2)


def macsyma_torques(sm, r):
    """(c54) fortbigopt(['torque1=tt1, 'torque2=tt2]), line by line."""
    r1, r2, r3, r4, r5, r6 = r
    (t1, t2), (t1d, t2d), (t1dd, t2dd) = sm.q, sm.qd, sm.qdd
    pfx1 = sp.cos(t1); pfx4 = pfx1**2; b3 = pfx4*r5; pfx5 = sp.sin(t1); pfx6 = pfx5**2; b1 = pfx6*r5
    pfx11 = b3 + b1; pfx12 = t2dd; pfx9 = t1d; pfx10 = t2d; pfx8 = sp.sin(t2); b2 = pfx5*r3
    pfx7 = sp.cos(t2); pfx3 = pfx1*r3; pfx2 = t1dd; b5 = pfx4*r4; b4 = pfx6*r4
    torque1 = (pfx12*(r6 + pfx11*pfx7) + pfx2*r2 + pfx1*r1 + (-b5 - b4)*pfx10*pfx8*pfx9
               + (-b3 - b1)*pfx10**2*pfx8 - b2*pfx8 + (pfx3 + (b5 + b4)*pfx2)*pfx7)/4
    torque2 = (pfx2*r6 + pfx12*r6 + pfx8*(pfx11*pfx9**2 - b2) + (pfx3 + pfx11*pfx2)*pfx7)/4
    return sp.Matrix([torque1, torque2])


def macsyma_forward(sm, r):
    """(c59) fortbigopt of the solved forward dynamics, line by line ('DIFF(ti,t,2))."""
    r1, r2, r3, r4, r5, r6 = r
    (t1, t2), (t1d, t2d) = sm.q, sm.qd
    torque1, torque2 = sm.tau
    pfx1 = sp.cos(t2); b7 = pfx1*r5; b9 = 4*b7; b6 = 4*r6; pfx9 = sp.sin(t1); pfx2 = r5**2; pfx7 = t1d
    pfx8 = pfx7**2; pfx10 = sp.sin(t2); pfx5 = sp.cos(t1); pfx6 = pfx5*r1*r6; pfx11 = t2d; b8 = pfx10*pfx11
    b3 = pfx7*r4; b12 = b3*r6; pfx12 = pfx11**2; b5 = pfx10*pfx12; b4 = r5*r6; b2 = r3*r5; pfx3 = pfx1**2
    b1 = pfx3*pfx5
    pfx4 = 1/(r6**2 + pfx1*(2*r5 - r4)*r6 - r2*r6 + pfx2*pfx3)
    t1dd = pfx4*((b9 + b6)*torque2 - b6*torque1 + pfx10*(pfx1*(b2*pfx9 - pfx2*pfx8) - b4*pfx8)
                 + pfx6 - b12*b8 - b4*b5 - b1*b2)
    b11 = pfx8*r5; b14 = r2*r3; b10 = r3*r6; b13 = r3*r4
    t2dd = -pfx4*((4*pfx1*r4 + 4*r2)*torque2 + (-b9 - b6)*torque1 + pfx1*pfx5*(r1*r5 - b14 + b10)
                  + pfx10*(pfx1*((b13 - b2)*pfx9 - b11*r4) - b11*r2 + (b14 - b10)*pfx9)
                  + pfx6 + b5*(-pfx1*pfx2 - b4) + (-b3*b7 - b12)*b8 + b1*(b2 - b13))
    return sp.Matrix([t1dd, t2dd])


def robmat_stanford_rrp():
    """ROBMAT §6, the modified Stanford arm: standard DH rows (R, l=0, α=−π/2, d=0),
    (R, 0, π/2, d2), (P, 0, 0, θ=0); diagonal inertias, centres of mass (0, y1, z1), (0, y2, 0),
    (0, 0, z3) in the DH frames; gravity (0, 0, −g).  Numbers are placeholders."""
    rows = [dp.DHRow("revolute", -np.pi / 2, 0, 0, 0, 9.0, com=(0, 0.1, 0.2), inertia=(0.3, 0.4, 0.5, 0, 0, 0)),
            dp.DHRow("revolute", np.pi / 2, 0, 0.15, 0, 5.0, com=(0, 0.05, 0), inertia=(0.1, 0.11, 0.12, 0, 0, 0)),
            dp.DHRow("prismatic", 0, 0, 0, 0, 4.0, com=(0, 0, 0.3), inertia=(0.2, 0.2, 0.01, 0, 0, 0))]
    return dp.model_from_dh(rows, "standard", name="robmat_stanford", gravity=(0, 0, -9.81))


@pytest.fixture(scope="module")
def pendulum():
    model, sm, syms, values = robmat_double_pendulum()
    return model, sm, syms, values, {f.__name__: f(sm) for f in ROUTES}


@pytest.fixture(scope="module")
def macsyma():
    sm, syms = macsyma_two_link()
    return sm, syms, {f.__name__: f(sm) for f in ROUTES}


# ===================================================================================== 1. ROBMAT
@pytest.mark.parametrize("route", [f.__name__ for f in ROUTES])
def test_robmat_double_pendulum_exact(pendulum, route):
    """ROBMAT Out[5]-Out[9]: M, B, CC, G and NewtonEuler F, each difference simplifies to 0."""
    _, sm, syms, _, forms = pendulum
    cf = forms[route]
    for name, printed in robmat_printed(sm, *syms).items():
        ours = getattr(cf, name)
        assert ours.shape == printed.shape, name
        assert sp.simplify(ours - printed) == sp.zeros(*printed.shape), f"{route} {name}"
        assert all(canonical(d, sm) == 0 for d in ours - printed), f"{route} {name} (canonical)"


def test_robmat_double_pendulum_default_symbol_names():
    """symbols='all' names the same parameters l1 (joint 2 offset), c1x, c2x, m1, m2, g."""
    model, sm_robmat, (L1, L2, m1, m2, g), _ = robmat_double_pendulum()
    sm = symbolic_model(model, "all")
    assert {s.name for s in sm.parameters} == {"l1", "c1x", "c2x", "m1", "m2", "g"}
    assert sm.values[sm.symbol("l1")] == pytest.approx(0.7) and sm.values[sm.symbol("g")] == pytest.approx(9.81)
    rename = {sm.symbol("l1"): L1, sm.symbol("c1x"): L1, sm.symbol("c2x"): L2,
              sm.symbol("m1"): m1, sm.symbol("m2"): m2, sm.symbol("g"): g}
    cf = newton_euler(sm)
    for name, printed in robmat_printed(sm_robmat, L1, L2, m1, m2, g).items():
        assert all(canonical(d, sm_robmat) == 0 for d in getattr(cf, name).xreplace(rename) - printed), name


def test_robmat_b_structure():
    """ROBMAT §4.2: B = [B_1 ... B_(n-1)], B_i of n x (n-i), rows i+1..n skew-symmetric
    (checked exactly on the modified Stanford arm with every parameter symbolic)."""
    sm = symbolic_model(robmat_stanford_rrp(), "all")
    cf = lagrange_euler(sm)
    n, pairs = sm.n, [(j, k) for j in range(sm.n) for k in range(j + 1, sm.n)]
    assert cf.B.shape == (n, n * (n - 1) // 2)
    for i in range(n - 1):
        cols = [c for c, (j, _) in enumerate(pairs) if j == i]
        S = cf.B[i + 1:, cols]
        assert all(canonical(x, sm) == 0 for x in S + S.T), f"B_{i + 1}"


# ===================================================================================== 2. Macsyma
@pytest.mark.parametrize("route", [f.__name__ for f in ROUTES])
def test_macsyma_torques_exact(macsyma, route):
    """Jack App. B.9 (c54): torque1, torque2 of the two-link arm with payload, exactly."""
    sm, (l1, l2, m1, m2, mp, i_1, i_2, gravity), forms = macsyma
    printed = macsyma_torques(sm, macsyma_constants(l1, l2, m1, m2, mp, i_1, i_2, gravity))
    diff = forms[route].tau - printed
    assert sp.simplify(diff) == sp.zeros(2, 1)
    assert all(canonical(d, sm) == 0 for d in diff)


def test_macsyma_forward_dynamics_exact(macsyma):
    """Jack App. B.9 (c59): the printed forward dynamics equals our M⁻¹(τ − 2B − C − G), exactly."""
    sm, (l1, l2, m1, m2, mp, i_1, i_2, gravity), forms = macsyma
    printed = macsyma_forward(sm, macsyma_constants(l1, l2, m1, m2, mp, i_1, i_2, gravity))
    ours = forward_dynamics(forms["newton_euler"])
    for k in range(2):
        assert same_fraction(ours[k], printed[k], sm), f"qdd{k + 1}"


# ===================================================================================== 3. LE ≡ NE
@pytest.mark.parametrize("case", ["double_pendulum", "robmat_stanford_rrp", "scara", "stanford"])
def test_lagrange_euler_identical_to_newton_euler(case):
    """Both routes with every parameter symbolic give identical M, B, C, G, τ (exact zero difference)."""
    if case == "double_pendulum":
        sm = robmat_double_pendulum()[1]
    elif case == "robmat_stanford_rrp":
        sm = symbolic_model(robmat_stanford_rrp(), "all")
    else:
        sm = symbolic_model(dp.load_robot(case), "all")
    le, ne = lagrange_euler(sm), newton_euler(sm)
    assert identical(le, ne)
    assert identical(ne, le)


def test_identical_detects_a_difference(pendulum):
    _, sm, (L1, L2, m1, m2, g), _, forms = pendulum
    other = symbolic_model(robmat_double_pendulum()[0], {"lengths": [[0, 0, 0], [L1, 0, 0]],
                                                         "coms": [[L1, 0, 0], [L2, 0, 0]], "masses": [m1, 2 * m2],
                                                         "gravity": [g, 0, 0]})
    assert not identical(forms["newton_euler"], newton_euler(other))


@pytest.mark.parametrize("robot", dp.list_robots())
def test_bundled_robots_match_backends(robot):
    """Lambdified closed forms (numeric parameters) of both routes vs the numeric backends:
    τ, M, gravity of newton_euler and configuration_space of lagrange_euler, ≤ 1e-12."""
    model = dp.load_robot(robot)
    sm = symbolic_model(model)
    ne_be, le_be = dp.get_backend("newton_euler", model), dp.get_backend("lagrange_euler", model)
    for route in ROUTES:
        cf = route(sm)
        num = lambdify_closed_form(cf)
        for k, (q, qd, qdd) in enumerate(states(model.n, seed=len(robot), count=8)):
            what = f"{robot} {route.__name__} state {k}"
            assert_close(num.inverse_dynamics(q, qd, qdd), ne_be.inverse_dynamics(q, qd, qdd), f"{what} tau")
            M, B, C, G = num.configuration_space(q)
            assert_close(M, ne_be.mass_matrix(q), f"{what} M")
            assert_close(G, ne_be.gravity_torques(q), f"{what} G")
            for name, got, ref in zip("MBCG", (M, B, C, G), le_be.configuration_space(q)):
                assert_close(got, ref, f"{what} configuration_space {name}")


def test_symbolic_parameters_evaluate_like_the_model():
    """Stanford with every parameter a symbol, evaluated with SymbolicModel.values, equals the backend."""
    model = dp.load_robot("stanford")
    num = lambdify_closed_form(newton_euler(symbolic_model(model, "all")))
    be = dp.get_backend("newton_euler", model)
    Q, QD, QDD = (np.array(x) for x in zip(*states(model.n, seed=3, count=5)))
    assert_close(num.inverse_dynamics(Q, QD, QDD), be.inverse_dynamics(Q, QD, QDD), "batch tau")
    assert_close(num.mass_matrix(Q), be.mass_matrix(Q), "batch M")


@pytest.mark.parametrize("seed, n", [(1, 3), (2, 4), (3, 5)])
def test_random_trees(seed, n):
    """Branched URDF trees with prismatic joints, arbitrary joint rotations and axes: the
    routes are identical (rotations made exactly orthogonal) and match both backends."""
    model = dp.load_urdf_string(random_tree_urdf(seed, n))
    sm = symbolic_model(model)
    le, ne = lagrange_euler(sm), newton_euler(sm)
    assert identical(le, ne)
    num = lambdify_closed_form(ne)
    ne_be, le_be = dp.get_backend("newton_euler", model), dp.get_backend("lagrange_euler", model)
    for k, (q, qd, qdd) in enumerate(states(n, seed=seed, count=5)):
        assert_close(num.inverse_dynamics(q, qd, qdd), ne_be.inverse_dynamics(q, qd, qdd), f"state {k} tau")
        for name, got, ref in zip("MBCG", num.configuration_space(q), le_be.configuration_space(q)):
            assert_close(got, ref, f"state {k} {name}")


def test_routes_identical_with_inertias_rotated_in_floats():
    """Inertial frames at arbitrary rpy (tests/data/rotated_inertias.urdf: a helper's random
    3-joint arm): R I Rᵀ in floats is not symmetric, by 1e-17, and its entries made exact
    one by one left the routes' B with different terms of 1e-19 (``identical`` False)."""
    sm = symbolic_model(dp.load_urdf("tests/data/rotated_inertias.urdf"))
    assert identical(lagrange_euler(sm), newton_euler(sm))


MICRO = """<robot name="micro"><link name="base"/>
<link name="l1"><inertial><origin xyz="0.0001 0 0"/><mass value="2e-09"/>
<inertia ixx="6.666666666666668e-18" ixy="0" ixz="0" iyy="6.666666666666668e-18" iyz="0" izz="6.666666666666668e-18"/>
</inertial></link>
<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/></joint>
<link name="l2"><inertial><origin xyz="0.0001 0 0"/><mass value="2e-09"/>
<inertia ixx="6.666666666666668e-18" ixy="0" ixz="0" iyy="6.666666666666668e-18" iyz="0" izz="6.666666666666668e-18"/>
</inertial></link>
<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.0002 0 0"/><axis xyz="0 0 1"/>
</joint></robot>"""


def test_a_tiny_arm_keeps_its_inertias():
    """0.2 mm links, 2 µg masses, inertias of 7e-18 kg·m²: an absolute 1e-12 snapped them to
    exact zeros, and the closed-form M was 25 % off the backends'."""
    model = dp.load_urdf_string(MICRO)
    num = lambdify_closed_form(newton_euler(symbolic_model(model)))
    backend = dp.get_backend("newton_euler", model)
    for q, _, _ in states(2, seed=5, count=4):       # relative to M itself (assert_close's floor is 1)
        np.testing.assert_allclose(num.mass_matrix(q), backend.mass_matrix(q), rtol=1e-12, atol=0)


def test_equations_of_ten_joints_or_more_tell_angle_sums_from_joint_numbers():
    """A 12-joint tree: cos(q1 + q2) and cos(q12) were both printed C12, one legend entry
    overwriting the other, and the printed G[1] was wrong as written.  From ten joints on the
    indices are joined by commas (C1,2); fewer keep Fu's C12."""
    joints = ['<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 1 0"/></joint>',
              '<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.5 0 0"/>'
              '<axis xyz="0 1 0"/></joint>']
    joints += [f'<joint name="p{k}" type="prismatic"><parent link="l{k - 1}"/><child link="l{k}"/><axis xyz="1 0 0"/>'
               '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>' for k in range(3, 12)]
    joints += ['<joint name="j12" type="revolute"><parent link="l11"/><child link="l12"/><axis xyz="1 0 0"/></joint>']
    links = "".join(f'<link name="l{k}"><inertial><origin xyz="0.1 0 {0.1 * (k == 12)}"/><mass value="1"/>'
                    '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>'
                    for k in range(1, 13))
    text = format_equations(dp.load_urdf_string(f'<robot name="twelve"><link name="base"/>{links}{"".join(joints)}</robot>'))
    assert "C1,2 = cos(q1 + q2)" in text and "C12 = cos(q12)" in text
    latex = format_equations(dp.load_robot("puma560"), latex=True)
    assert "B_{1,10} &=" in latex and "M_{11} &=" in latex          # B has 15 columns: B_{110} was ambiguous


# ===================================================================================== 4. forward dynamics
def test_forward_dynamics_double_pendulum(pendulum):
    model, sm, _, values, forms = pendulum
    be = dp.get_backend("newton_euler", model)
    num = lambdify_closed_form(forms["lagrange_euler"], values)
    for k, (q, qd, tau) in enumerate(states(2, seed=21)):
        assert_close(num.forward_dynamics(q, qd, tau), be.forward_dynamics(q, qd, tau), f"state {k} qdd")


@pytest.mark.parametrize("symbols", [(), "all"])
def test_forward_dynamics_rrp(symbols):
    """3-DoF modified Stanford arm (R, R, P), numeric and fully symbolic parameters."""
    model = robmat_stanford_rrp()
    num = lambdify_closed_form(newton_euler(symbolic_model(model, symbols)))
    be = dp.get_backend("newton_euler", model)
    for k, (q, qd, tau) in enumerate(states(3, seed=22)):
        assert_close(num.forward_dynamics(q, qd, tau), be.forward_dynamics(q, qd, tau), f"state {k} qdd")


def test_forward_dynamics_macsyma_payload(macsyma):
    """Our two-link-with-payload FD, evaluated, inverts our own τ (ID(FD(τ)) = τ)."""
    sm, syms, forms = macsyma
    values = dict(zip(syms, (0.8, 0.55, 2.3, 1.7, 0.6, 0.13, 0.07, 9.81)))
    num = lambdify_closed_form(forms["newton_euler"], values)
    for q, qd, tau in states(2, seed=23, count=5):
        assert_close(num.inverse_dynamics(q, qd, num.forward_dynamics(q, qd, tau)), tau, "ID(FD(tau))")


# ===================================================================================== 5. bad input
def test_unknown_symbol_group():
    model = dp.load_robot("scara")
    with pytest.raises(dp.InputError, match=r"unknown symbol group 'length'.*masses, lengths, coms"):
        symbolic_model(model, ("masses", "length"))
    with pytest.raises(dp.InputError, match="unknown symbol group 'mass'"):
        symbolic_model(model, {"mass": True})


def test_forward_dynamics_limited_to_three_joints():
    cf = newton_euler(symbolic_model(dp.load_robot("scara")))
    with pytest.raises(dp.ModelError, match=r"n <= 3 joints \(model 'scara' has 4\)"):
        forward_dynamics(cf)


def test_bad_parameters():
    model, _, (L1, L2, m1, m2, g), _ = robmat_double_pendulum()
    with pytest.raises(dp.InputError, match=r"masses must have shape \(2,\)"):
        symbolic_model(model, {"masses": [m1, m2, m2]})
    with pytest.raises(dp.InputError, match="polynomial"):
        newton_euler(symbolic_model(model, {"masses": [1 / m1, m2]}))
    with pytest.raises(dp.InputError, match="joint-variable symbols q1"):
        symbolic_model(model, {"masses": [sp.Symbol("q1", real=True), m2]})
    with pytest.raises(dp.InputError, match="payload link 'tool' is not a link"):
        symbolic_model(model, payloads=[("tool", 1.0, (0, 0, 0))])
    with pytest.raises(dp.InputError, match="no numeric value for the parameters L1"):
        lambdify_closed_form(newton_euler(symbolic_model(model, {"lengths": [[0, 0, 0], [L1, 0, 0]]})))


# ===================================================================================== numbers, names, text
def test_exact_numbers():
    assert exact_number(np.cos(np.pi / 2), unit=True) == 0
    assert exact_number(-1 + 1e-15, unit=True) == -1
    assert exact_number(0.5390000000000001) == sp.Rational(539, 1000)
    assert exact_number(2.5099999999999993) == sp.Rational(251, 100)
    third = exact_number(1 / 3)          # the shortest decimal within 1e-14 relative
    assert third == sp.Rational("0.33333333333333") and abs(float(third) - 1 / 3) <= 1e-14 / 3


def test_length_names_keep_signs():
    """PUMA joint 3 at (0.4318, 0, −0.0934) of link 2 and joint 4 at (−0.0203, −0.4331, 0) of link 3."""
    sm = symbolic_model(dp.load_robot("puma560"), "lengths")
    s = sm.symbol
    assert list(sm.positions[2]) == [s("l2x"), 0, -s("l2z")]
    assert list(sm.positions[3]) == [-s("l3x"), -s("l3y"), 0]
    assert sm.values[s("l3y")] == pytest.approx(0.4331) and sm.values[s("l1")] == pytest.approx(0.2435)


def test_compact():
    q1, q2 = sp.symbols("q1 q2", real=True)
    assert compact(sp.sin(q1) * sp.cos(q2) + sp.cos(q1) * sp.sin(q2)) == sp.sin(q1 + q2)


def test_format_equations_puma_fast():
    """The CLI's `dyn-plugin equations puma560`: numeric 6-DoF, well under 2 minutes."""
    start = time.perf_counter()
    text = format_equations(dp.load_robot("puma560"))
    assert time.perf_counter() - start < 60
    for piece in ("M[1,1] =", "M[6,6] =", "B[1,1] =", "G[2] =", "C23 = cos(q2 + q3)", "qd1*qd2"):
        assert piece in text
    assert "M[2,1]" not in text   # symmetric: upper triangle only


def test_format_equations_latex(pendulum):
    _, sm, _, _, _ = pendulum
    text = format_equations(sm, latex=True)
    assert "\\begin{align*}" in text and "M_{11} &=" in text and "G_{2} &=" in text
    assert "S_{12}" in text   # g L2 m2 sin(q1 + q2), contracted and abbreviated
    assert isinstance(newton_euler(sm), ClosedForm)
