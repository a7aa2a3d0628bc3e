"""Our backends against pinocchio on random URDF trees (see urdf_factory.py).

pinocchio is called directly here (not through dyn_plugin's "pinocchio" backend), so
these tests check our URDF reading as well as the dynamics: joint order, fixed-joint
merging, non-unit and negative axes, rotated inertial frames, full inertia tensors,
continuous joints (nq = 2 in pinocchio) and prismatic joints.

Tolerance: |ours - reference| <= 1e-9 * max(1, |reference|), element by element.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from conftest import OURS  # noqa: E402
from oracles import PinocchioJointMap  # noqa: E402
from urdf_factory import random_tree_urdf  # noqa: E402

TOL = 1e-9
FD_TOL = 1e-6
N_STATES = 20

# (seed, moving joints, options): 4 serial chains, 4 branched trees, up to 8 joints.
CASES = [
    (101, 1, dict(branched=False)),
    (102, 3, dict(branched=False)),
    (103, 6, dict(branched=False, fixed=False)),
    (104, 7, dict(branched=False, prismatic=False)),
    (105, 4, dict(branched=True)),
    (106, 6, dict(branched=True, continuous=False)),
    (107, 8, dict(branched=True)),
    (108, 8, dict(branched=True, fixed=False, prismatic=False)),
]
IDS = [f"seed{s}-n{n}-{'tree' if o.get('branched', True) else 'chain'}" for s, n, o in CASES]


class Tree(PinocchioJointMap):
    """One random tree: its URDF, pinocchio model, our model, states and references."""

    def __init__(self, seed, n, opts):
        self.xml = random_tree_urdf(np.random.default_rng(seed), n, name=f"tree{seed}", **opts)
        self.pm = pin.buildModelFromXML(self.xml)
        self.pd = self.pm.createData()
        with warnings.catch_warnings():
            warnings.simplefilter("error", dp.PhysicalValidityWarning)  # valid inertias: no warning
            self.model = dp.load_urdf_string(self.xml)
        self.names = list(self.pm.names)[1:]  # pinocchio's moving joints, its order
        self.n = n

        # our joint i  <->  pinocchio joint id, q index, v index
        m = self.model
        self.jid = [self.pm.getJointId(name) for name in m.joint_names]
        self.iv = np.array([self.pm.idx_vs[j] for j in self.jid])
        self.iq = [self.pm.idx_qs[j] for j in self.jid]
        self.nq = [self.pm.nqs[j] for j in self.jid]
        self.prismatic = np.array(["Prismatic" in self.pm.joints[j].shortname() for j in self.jid])

        rng = np.random.default_rng(seed + 1000)
        self.q = np.where(self.prismatic, rng.uniform(-0.5, 0.5, (N_STATES, n)),
                          rng.uniform(-np.pi, np.pi, (N_STATES, n)))
        self.qd = rng.normal(0.0, 1.5, (N_STATES, n))
        self.qdd = rng.normal(0.0, 2.0, (N_STATES, n))
        self.tau = rng.normal(0.0, 5.0, (N_STATES, n))
        self.ref = self.references(self.pm)

    def references(self, pm):
        pd = pm.createData()
        ix = np.ix_(self.iv, self.iv)
        ref = {k: [] for k in ("tau", "M", "g", "bias", "Cqd", "qdd_fd")}
        for q, qd, qdd, tau in zip(self.q, self.qd, self.qdd, self.tau):
            qp, vp, ap, tp = self.pin_q(q), self.pin_v(qd), self.pin_v(qdd), self.pin_v(tau)
            ref["tau"].append(pin.rnea(pm, pd, qp, vp, ap)[self.iv])
            M = pin.crba(pm, pd, qp)
            M = np.triu(M) + np.triu(M, 1).T
            ref["M"].append(M[ix])
            ref["g"].append(pin.computeGeneralizedGravity(pm, pd, qp)[self.iv])
            ref["bias"].append(pin.nonLinearEffects(pm, pd, qp, vp)[self.iv])
            ref["Cqd"].append((pin.computeCoriolisMatrix(pm, pd, qp, vp) @ vp)[self.iv])
            ref["qdd_fd"].append(pin.aba(pm, pd, qp, vp, tp)[self.iv])
        return {k: np.array(v) for k, v in ref.items()}


@functools.lru_cache(maxsize=None)
def tree(case_index):
    return Tree(*CASES[case_index])


@functools.lru_cache(maxsize=None)
def backend(case_index, name):
    return dp.get_backend(name, tree(case_index).model)


def assert_close(ours, ref, what, tol=TOL):
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape}, expected {ref.shape}"
    if ours.size == 0:
        return
    err = np.abs(ours - ref) / np.maximum(1.0, np.abs(ref))
    worst = np.unravel_index(np.argmax(err), err.shape)
    assert err.max() <= tol, (
        f"{what}: relative error {err.max():.3e} > {tol:g} at index {worst}: "
        f"ours {ours[worst]!r}, reference {ref[worst]!r}"
    )


case_params = pytest.mark.parametrize("case", range(len(CASES)), ids=IDS)
backend_params = pytest.mark.parametrize("name", OURS)


# -- the model read from the URDF -----------------------------------------------------------


@case_params
def test_joint_order_is_pinocchio_order(case):
    t = tree(case)
    assert tuple(t.model.joint_names) == tuple(t.names)
    assert t.model.n == t.n == t.pm.nv


@case_params
def test_joint_limits(case):
    t = tree(case)
    for i in range(t.n):
        name = t.model.joint_names[i]
        if t.nq[i] == 2:  # continuous
            assert t.model.lower[i] == -np.inf and t.model.upper[i] == np.inf, name
        else:
            assert t.model.lower[i] == pytest.approx(t.pm.lowerPositionLimit[t.iq[i]], abs=1e-12), name
            assert t.model.upper[i] == pytest.approx(t.pm.upperPositionLimit[t.iq[i]], abs=1e-12), name


# -- dynamics against pinocchio ------------------------------------------------------------


@case_params
@backend_params
def test_inverse_dynamics(case, name):
    t, be = tree(case), backend(case, name)
    assert_close(be.inverse_dynamics(t.q, t.qd, t.qdd), t.ref["tau"], f"{name} inverse_dynamics (batch)")
    assert_close(be.inverse_dynamics(t.q[0], t.qd[0], t.qdd[0]), t.ref["tau"][0], f"{name} inverse_dynamics (single)")


@case_params
@backend_params
def test_mass_matrix(case, name):
    t, be = tree(case), backend(case, name)
    assert_close(be.mass_matrix(t.q), t.ref["M"], f"{name} mass_matrix (batch)")
    assert_close(be.mass_matrix(t.q[0]), t.ref["M"][0], f"{name} mass_matrix (single)")


@case_params
@backend_params
def test_gravity_torques(case, name):
    t, be = tree(case), backend(case, name)
    assert_close(be.gravity_torques(t.q), t.ref["g"], f"{name} gravity_torques")
    assert_close(be.gravity_torques(t.q[0]), t.ref["g"][0], f"{name} gravity_torques (single)")


@case_params
@backend_params
def test_bias_forces(case, name):
    t, be = tree(case), backend(case, name)
    assert_close(be.bias_forces(t.q, t.qd), t.ref["bias"], f"{name} bias_forces")


@case_params
@backend_params
def test_coriolis_times_qd(case, name):
    t, be = tree(case), backend(case, name)
    C = be.coriolis_matrix(t.q, t.qd)
    assert C.shape == (N_STATES, t.n, t.n)
    assert_close(np.einsum("nij,nj->ni", C, t.qd), t.ref["Cqd"], f"{name} coriolis_matrix @ qd")


@case_params
@backend_params
def test_forward_dynamics(case, name):
    t, be = tree(case), backend(case, name)
    assert_close(be.forward_dynamics(t.q, t.qd, t.tau), t.ref["qdd_fd"], f"{name} forward_dynamics")
    assert_close(be.forward_dynamics(t.q[0], t.qd[0], t.tau[0]), t.ref["qdd_fd"][0],
                 f"{name} forward_dynamics (single)")


@pytest.mark.parametrize("case", [1, 6], ids=[IDS[1], IDS[6]])
@backend_params
def test_custom_gravity(case, name):
    gravity = (0.3, -9.8062, 1.2)
    t = tree(case)
    be = dp.get_backend(name, t.model, gravity=gravity)
    pm = pin.buildModelFromXML(t.xml)
    pm.gravity.linear = np.array(gravity)
    ref = t.references(pm)
    assert_close(be.gravity_torques(t.q), ref["g"], f"{name} gravity_torques, gravity {gravity}")
    assert_close(be.inverse_dynamics(t.q, t.qd, t.qdd), ref["tau"], f"{name} inverse_dynamics, gravity {gravity}")
    assert_close(be.forward_dynamics(t.q, t.qd, t.tau), ref["qdd_fd"], f"{name} forward_dynamics, gravity {gravity}")


# -- structural properties -------------------------------------------------------------------


@case_params
@backend_params
def test_mass_matrix_symmetric_positive_definite(case, name):
    t, be = tree(case), backend(case, name)
    M = be.mass_matrix(t.q)
    scale = np.abs(M).max(axis=(1, 2), keepdims=True)
    assert np.all(np.abs(M - M.transpose(0, 2, 1)) <= 1e-12 * scale), "M is not symmetric"
    assert np.all(np.linalg.eigvalsh(M) > 0), "M is not positive definite"


@case_params
@backend_params
def test_mdot_minus_2c_is_skew(case, name):
    t, be = tree(case), backend(case, name)
    h = 1e-6
    Mdot = (be.mass_matrix(t.q + h * t.qd) - be.mass_matrix(t.q - h * t.qd)) / (2 * h)  # dM/dt along qd
    C = be.coriolis_matrix(t.q, t.qd)
    S = Mdot - 2 * C
    scale = np.maximum(1.0, np.maximum(np.abs(Mdot).max(axis=(1, 2)), np.abs(C).max(axis=(1, 2))))
    err = np.abs(S + S.transpose(0, 2, 1)).max(axis=(1, 2)) / scale
    assert err.max() <= FD_TOL, f"{name}: Mdot - 2C not skew-symmetric, relative error {err.max():.3e}"


@case_params
def test_christoffel_structure(case):
    t, be = tree(case), backend(case, "lagrange_euler")
    h = be.christoffel(t.q)
    n = t.n
    assert h.shape == (N_STATES, n, n, n)
    scale = max(1.0, np.abs(h).max())
    diag = h[:, np.arange(n), np.arange(n), np.arange(n)]
    assert np.abs(diag).max() <= 1e-12 * scale, f"h_iii not zero: max {np.abs(diag).max():.3e}"
    assert np.abs(h - h.transpose(0, 1, 3, 2)).max() <= 1e-12 * scale, "h_ikm not symmetric in (k, m)"
    # velocity terms h_i = sum_km h_ikm qd_k qd_m = C(q, qd) qd
    assert_close(np.einsum("nikm,nk,nm->ni", h, t.qd, t.qd), t.ref["Cqd"], "sum_km h_ikm qd_k qd_m")
    assert_close(be.christoffel(t.q[0]), h[0], "christoffel (single)", tol=1e-12)


@case_params
def test_configuration_space_form(case):
    """F = M qdd + 2 B [qd qd] + C [qd^2] + G reproduces pinocchio's RNEA."""
    t, be = tree(case), backend(case, "lagrange_euler")
    M, B, C, G = be.configuration_space(t.q)
    n = t.n
    j, k = np.triu_indices(n, 1)  # (1,2), (1,3), ..., (1,n), (2,3), ... : row-major upper triangle
    assert B.shape == (N_STATES, n, n * (n - 1) // 2)
    qdqd = t.qd[:, j] * t.qd[:, k]
    F = (np.einsum("nij,nj->ni", M, t.qdd) + 2 * np.einsum("nip,np->ni", B, qdqd)
         + np.einsum("nij,nj->ni", C, t.qd ** 2) + G)
    assert_close(F, t.ref["tau"], "configuration_space M qdd + 2B[qdqd] + C[qd^2] + G")
    h = be.christoffel(t.q)
    assert_close(B, h[:, :, j, k], "B[i, (j,k)] = h_ijk", tol=1e-12)
    assert_close(C, h[:, :, np.arange(n), np.arange(n)], "C[i, j] = h_ijj", tol=1e-12)


# -- the generator itself ----------------------------------------------------------------------


def test_generator_is_deterministic_and_covers_the_cases():
    import xml.etree.ElementTree as ET

    seen = set()
    for seed, n, opts in CASES:
        xml = random_tree_urdf(np.random.default_rng(seed), n, name=f"tree{seed}", **opts)
        assert xml == tree(CASES.index((seed, n, opts))).xml  # same rng state -> same text
        root = ET.fromstring(xml)
        joints = [(j.get("type"), j.find("parent").get("link"), j.find("child").get("link"), j.find("axis"))
                  for j in root.findall("joint")]
        parents = {c: (t, p) for t, p, c, _ in joints}
        has_children = {p for _, p, _, _ in joints}
        moving_children = {}
        for t, p, c, axis in joints:
            seen.add(t)
            if t != "fixed":
                moving_children[p] = moving_children.get(p, 0) + 1
                a = np.array([float(x) for x in axis.get("xyz").split()])
                seen.add("non-unit axis") if abs(np.linalg.norm(a) - 1) > 0.05 else None
                seen.add("negative axis") if a.min() < 0 else None
            elif c not in has_children:
                seen.add("fixed leaf")
            else:
                # a fixed joint with a moving joint below it and one above it
                below = any(t2 != "fixed" and p2 == c for t2, p2, _, _ in joints)
                link, above = p, False
                while link in parents:
                    above |= parents[link][0] != "fixed"
                    link = parents[link][1]
                seen.add("fixed mid-chain") if below and above else None
        if max(moving_children.values()) >= 2:
            seen.add("branched")
        if any(inertial.find("origin").get("rpy") != "0 0 0" for inertial in root.iter("inertial")):
            seen.add("rotated inertial")
    expected = {"revolute", "continuous", "prismatic", "fixed", "fixed leaf", "fixed mid-chain",
                "non-unit axis", "negative axis", "branched", "rotated inertial"}
    assert expected <= seen, f"missing: {expected - seen}"


@case_params
def test_generated_urdf_loads_in_pybullet_without_bad_inertia(case, tmp_path, capfd):
    p = pytest.importorskip("pybullet")
    from urdf_factory import write_urdf

    path = write_urdf(tmp_path, tree(case).xml)
    client = p.connect(p.DIRECT)
    try:
        capfd.readouterr()
        p.loadURDF(str(path), useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
        out, err = capfd.readouterr()
    finally:
        p.disconnect(client)
    assert "Bad inertia" not in out + err
