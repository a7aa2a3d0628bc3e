"""Every route of the dynamics on every feature, against pinocchio, on random trees.

The Newton-Euler recursion is stated in three places on purpose (see CONTRIBUTING.md,
"One statement of each recursion"): the readable numpy reference
(dyn_plugin.algorithms), the compiled kernels (dyn_plugin.compiled, whose recursion the
symbolic derivation also runs), and the customised generator (dyn_plugin.symbolic,
codegen).  This file is the mechanical check that keeps them one: each route, derived
from the registry (every backend that is ours or generated, the numpy reference with
``compiled=False``, friction wrappers with friction off, and the symbolic closed forms),
is compared with pinocchio on each feature.  A new backend or a new feature joins the
matrix by declaring itself; nothing here names a backend.

Every capability of :data:`dyn_plugin.backends.base.CAPABILITIES` is a feature here, checked
on each route that declares it (and, where the capability has a method, its absence checked
on each route that does not); ``test_every_capability_is_checked`` fails for a capability
added there and not here.  The references: pinocchio's ``rnea``, ``crba``, ``aba``,
``computeRNEADerivatives`` and ``computeABADerivatives`` (the Christoffel symbols from its
∂M/∂q), its free-flyer for a floating base, its full model projected by the URDF's mimic
numbers (test_mimic.py), pinocchio's spherical, planar and free-flyer joints
(test_multi_dof.py's twin), and for friction and stepping the closed forms of the law
(viscous and sharp Coulomb, Schilling eq. 6-3-3) and of the semi-implicit Euler step on
pinocchio's numbers.

Tolerance: |route − pinocchio| ≤ 1e-9 · max(1, |pinocchio|), entry by entry.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin.backends.base import CAPABILITIES  # noqa: E402
from dyn_plugin.backends.registry import backend_class, backends  # noqa: E402
from dyn_plugin.errors import BackendError, ModelError  # noqa: E402
from test_floating_base import floating_tree  # noqa: E402
from test_mimic import MIMIC_URDF, _by_hand  # noqa: E402
from test_random_trees import CASES, IDS, assert_close, tree  # noqa: E402

TREES = [2, 4, 6]             # a 6-joint chain, a 4-joint tree, an 8-joint tree (prismatic and continuous joints)


def _route_factories() -> dict:
    """name -> factory(model): every backend of ours or generated, and the extra routes."""
    routes = {}
    for name in backends(("ours", "generated")):
        if backend_class(name).can("friction"):
            routes[f"{name}[friction none]"] = functools.partial(dp.get_backend, name, friction="none")
        else:
            routes[name] = functools.partial(dp.get_backend, name)
    routes["newton_euler[numpy reference]"] = functools.partial(dp.get_backend, "newton_euler", compiled=False)
    return routes


ROUTES = _route_factories()


@functools.lru_cache(maxsize=None)
def route(case: int, name: str):
    return ROUTES[name](tree(case).model)


def _wrench_references(t):
    """pinocchio's joint wrenches (N, n, 3) force and moment, each in its joint frame."""
    pd = t.pm.createData()
    f, moment = np.empty(t.qd.shape + (3,)), np.empty(t.qd.shape + (3,))
    for k, (q, qd, qdd) in enumerate(zip(t.q, t.qd, t.qdd)):
        pin.rnea(t.pm, pd, t.pin_q(q), t.pin_v(qd), t.pin_v(qdd))
        for i, j in enumerate(t.jid):
            f[k, i], moment[k, i] = pd.f[j].linear, pd.f[j].angular
    return f, moment


CHECKED: dict = {}
"""capability -> the checks of it here (a capability of CAPABILITIES missing is a failure)."""


def checks(capability: str):
    """Register a test as the check of ``capability``."""
    def register(test):
        CHECKED.setdefault(capability, []).append(test.__name__)
        return test
    return register


def _derivative_references(t, q, v, a, tau, order):
    """pinocchio's (∂τ/∂q, ∂τ/∂v, ∂τ/∂a, ∂q̈/∂q, ∂q̈/∂v, ∂q̈/∂τ = M⁻¹), each (N, nv, nv) in our
    order of velocities (``order``: pinocchio's index of each), at states (N, nq) / (N, nv);
    computeRNEADerivatives at (q, v, a), computeABADerivatives at (q, v, τ)."""
    pd, ix = t.pm.createData(), np.ix_(order, order)
    out = []
    for qk, vk, ak, tk in zip(q, v, a, tau):
        qp, vp = t.pin_q(qk), t.pin_v(vk)
        dq, dv, da = (x[ix].copy() for x in pin.computeRNEADerivatives(t.pm, pd, qp, vp, t.pin_v(ak)))
        pin.computeABADerivatives(t.pm, pd, qp, vp, t.pin_v(tk))
        inverse = np.triu(pd.Minv) + np.triu(pd.Minv, 1).T
        out.append((dq, dv, np.triu(da) + np.triu(da, 1).T, pd.ddq_dq[ix].copy(), pd.ddq_dv[ix].copy(), inverse[ix]))
    return tuple(np.array(part) for part in zip(*out))


@functools.lru_cache(maxsize=None)
def derivative_references(case: int):
    t = tree(case)
    return _derivative_references(t, t.q, t.qd, t.qdd, t.tau, t.iv)


@functools.lru_cache(maxsize=None)
def christoffel_references(case: int):
    """h_ikm = ½(∂M_ik/∂q_m + ∂M_im/∂q_k − ∂M_km/∂q_i) (N, n, n, n), the Christoffel symbols of
    the first kind (Fu 3.2-33's h_ikm: h_i = Σ_km h_ikm q̇_k q̇_m), from pinocchio's ∂M/∂q:
    column k of M is τ(q, 0, e_k) without gravity, so ∂M_ik/∂q_m is computeRNEADerivatives'
    ∂τ/∂q there."""
    t = tree(case)
    pm = pin.Model(t.pm)
    pm.gravity.setZero()
    pd, ix, zero = pm.createData(), np.ix_(t.iv, t.iv), np.zeros(pm.nv)
    h = np.empty((len(t.q), t.n, t.n, t.n))
    for s, q in enumerate(t.q):
        dM = np.empty((t.n,) * 3)                                       # [i, k, m] = ∂M_ik/∂q_m
        for k in range(t.n):
            dM[:, k, :] = pin.computeRNEADerivatives(pm, pd, t.pin_q(q), zero, t.pin_v(np.eye(t.n)[k]))[0][ix]
        h[s] = 0.5 * (dM + dM.transpose(0, 2, 1) - np.einsum("kmi->ikm", dM))
    return h


def _derivatives(be, t, case):
    ref, k = derivative_references(case), 3
    ours = be.inverse_dynamics_derivatives(t.q, t.qd, t.qdd) + (be.mass_matrix(t.q),) \
        + be.forward_dynamics_derivatives(t.q, t.qd, t.tau)
    one = be.inverse_dynamics_derivatives(t.q[k], t.qd[k], t.qdd[k]) + (be.mass_matrix(t.q[k]),) \
        + be.forward_dynamics_derivatives(t.q[k], t.qd[k], t.tau[k])
    names = ("∂τ/∂q", "∂τ/∂q̇", "∂τ/∂q̈", "∂q̈/∂q", "∂q̈/∂q̇", "∂q̈/∂τ")
    return [(what, mine, r) for what, mine, r in zip(names, ours, ref)] + \
        [(f"{what} (one state)", mine, r[k]) for what, mine, r in zip(names, one, ref)]


def _christoffel(be, t, case):
    h = christoffel_references(case)
    M, B, C, G = be.configuration_space(t.q)
    j, k = np.triu_indices(t.n, 1)                      # ROBMAT's pairs (1,2), (1,3), ..., (2,3), ...
    return [("h_ikm", be.christoffel(t.q), h), ("h_ikm (one state)", be.christoffel(t.q[2]), h[2]),
            ("configuration_space M", M, t.ref["M"]), ("configuration_space B = h_ijk, j < k", B, h[:, :, j, k]),
            ("configuration_space C = h_ijj", C, h[:, :, np.arange(t.n), np.arange(t.n)]),
            ("configuration_space G", G, t.ref["g"])]


def _single_state_kernels(be, t, case):
    """The compiled one-state kernels called as the friction wrapper calls them."""
    kernels = be.single_state_kernels()
    if kernels is None:                                 # this instance has none (compiled=False)
        return []
    (inverse, forward), data = kernels
    tau, qdd = np.empty(t.n), np.empty(t.n)
    k = 4
    q, qd, qdd_in, tau_in = (np.ascontiguousarray(x[k]) for x in (t.q, t.qd, t.qdd, t.tau))
    assert inverse(data, q, qd, qdd_in, tau) == 0 and forward(data, q, qd, tau_in, qdd) == 0
    return [("inverse kernel", tau, t.ref["tau"][k]), ("forward kernel", qdd, t.ref["qdd_fd"][k])]


def _block_kernels(be, t, case):
    """The compiled block kernel called as the friction wrapper's batch loop calls it: τ of
    rows 1..n−2 only, the rows outside it untouched."""
    kernels = be.block_kernels()
    if kernels is None:                                 # this instance has none (compiled=False)
        return []
    inverse, data = kernels
    q, qd, qdd = (np.ascontiguousarray(x) for x in (t.q, t.qd, t.qdd))
    tau = np.full(q.shape, np.nan)
    start, stop = 1, len(q) - 1
    inverse(data, q, qd, qdd, tau, start, stop)
    assert np.isnan(tau[:start]).all() and np.isnan(tau[stop:]).all()
    return [("block kernel τ", tau[start:stop], t.ref["tau"][start:stop])]


FEATURES = {
    "inverse_dynamics": lambda be, t, c: [("τ", be.inverse_dynamics(t.q, t.qd, t.qdd), t.ref["tau"])],
    "inverse_dynamics (one state)": lambda be, t, c: [("τ", be.inverse_dynamics(t.q[3], t.qd[3], t.qdd[3]),
                                                       t.ref["tau"][3])],
    "mass_matrix": lambda be, t, c: [("M", be.mass_matrix(t.q), t.ref["M"])],
    "gravity_torques": lambda be, t, c: [("g", be.gravity_torques(t.q), t.ref["g"])],
    "bias_forces": lambda be, t, c: [("bias", be.bias_forces(t.q, t.qd), t.ref["bias"])],
    "velocity terms (C q̇)": lambda be, t, c: [("C q̇", np.einsum("nij,nj->ni", be.coriolis_matrix(t.q, t.qd), t.qd),
                                               t.ref["Cqd"])],
    "forward_dynamics": lambda be, t, c: [("q̈", be.forward_dynamics(t.q, t.qd, t.tau), t.ref["qdd_fd"])],
    "forward_dynamics (one state)": lambda be, t, c: [("q̈", be.forward_dynamics(t.q[5], t.qd[5], t.tau[5]),
                                                       t.ref["qdd_fd"][5])],
    "joint_wrenches": lambda be, t, c: [("f, n", np.stack(be.joint_wrenches(t.q, t.qd, t.qdd)),
                                         np.stack(_wrench_references(t)))],
    "derivatives": _derivatives,
    "christoffel": _christoffel,
    "single_state_kernels": _single_state_kernels,
    "block_kernels": _block_kernels,
}
NEEDS = {feature: feature for feature in ("joint_wrenches", "derivatives", "christoffel", "single_state_kernels",
                                          "block_kernels")}
"""feature -> the capability it needs (here each is its own name)."""
METHODS = {"joint_wrenches": ("joint_wrenches",), "christoffel": ("christoffel", "configuration_space"),
           "single_state_kernels": ("single_state_kernels",), "block_kernels": ("block_kernels",),
           "stepping": ("velocity_step",),
           "friction": ("inverse_dynamics_breakdown",)}
"""capability -> the methods that only a backend declaring it has."""
for _capability in NEEDS.values():
    CHECKED.setdefault(_capability, []).append("test_route_against_pinocchio")


def _refuses_undeclared(be, capability: str, name: str) -> None:
    """A capability is a promise: without it, no method of it, and no derivatives."""
    for method in METHODS.get(capability, ()):
        assert not hasattr(be, method), f"{name} has {method} but does not declare {capability!r}"
    if capability == "derivatives":
        with pytest.raises(BackendError, match="no analytic derivatives"):
            be.inverse_dynamics_derivatives(np.zeros(be.model.nq), np.zeros(be.model.nv), np.zeros(be.model.nv))


SMALL_TREE = 4                  # a 4-joint branched tree with prismatic and continuous joints


def generated(name: str) -> bool:
    """A route of generated code: compiled per model, its derivatives' code alone ~10-80 s of
    numba per tree on 2 cores, so they are checked on SMALL_TREE only (and not on the floating
    and mimic models; test_derivatives.py holds them on further robots)."""
    return backend_class(name.split("[")[0]).kind == "generated"


MATRIX = [(case, name, feature) for case in TREES for name in ROUTES for feature in FEATURES
          if not (feature == "derivatives" and generated(name) and case != SMALL_TREE)]


@pytest.mark.parametrize("case, name, feature", MATRIX, ids=[f"{IDS[c]}-{n}-{f}" for c, n, f in MATRIX])
def test_route_against_pinocchio(case, name, feature):
    be = route(case, name)
    if feature in NEEDS and not type(be).can(NEEDS[feature]):
        _refuses_undeclared(be, NEEDS[feature], name)
        return
    for what, ours, reference in FEATURES[feature](be, tree(case), case):
        assert_close(ours, reference, f"{name} {feature} {what} on {IDS[case]}")


def test_every_route_is_checked():
    """The matrix covers the registry: a backend that is ours or generated cannot be left out."""
    named = {name.split("[")[0] for name in ROUTES}
    assert named == set(backends(("ours", "generated")))
    assert len(CASES) > max(TREES)


# -- capabilities that need a model or a law of their own ------------------------------------

FRICTION_CASE = SMALL_TREE


def _friction_state(case: int):
    """The tree's states with every joint rate at least 0.2 from 0 (sharp Coulomb friction is
    then differentiable), and a viscous (N·m·s/rad) and a Coulomb level (N·m) per joint."""
    t = tree(case)
    qd = np.where(np.abs(t.qd) < 0.2, np.copysign(0.2, t.qd), t.qd)
    return t, qd, np.linspace(0.1, 0.8, t.n), np.linspace(0.3, 1.5, t.n)


def _pinocchio(t, function, *states):
    """pinocchio's ``function`` (rnea, aba) at each state, in our joint order."""
    pd = t.pm.createData()
    return np.array([function(t.pm, pd, t.pin_q(q), *(t.pin_v(x) for x in rest))[t.iv] for q, *rest in zip(*states)])


@checks("friction")
@pytest.mark.parametrize("name", list(ROUTES))
def test_friction_is_its_law_on_pinocchios_rigid_body(name):
    """τ = rnea + b_v q̇ + b_d sgn q̇ (Schilling eq. 6-3-3 without the Stribeck peak), q̈ =
    aba(τ − b), and the derivatives by the chain rule on pinocchio's: ∂τ/∂q̇ gains diag(b_v),
    ∂q̈/∂q̇ = aba's − M⁻¹ diag(b_v)."""
    t, qd, viscous, coulomb = _friction_state(FRICTION_CASE)
    if not type(route(FRICTION_CASE, name)).can("friction"):
        _refuses_undeclared(route(FRICTION_CASE, name), "friction", name)
        return
    be = ROUTES[name](t.model, friction=dp.FrictionModel.create(t.model, viscous=viscous, coulomb=coulomb))
    law = viscous * qd + coulomb * np.sign(qd)
    assert_close(be.inverse_dynamics(t.q, qd, t.qdd), _pinocchio(t, pin.rnea, t.q, qd, t.qdd) + law, f"{name} τ")
    assert_close(be.forward_dynamics(t.q, qd, t.tau), _pinocchio(t, pin.aba, t.q, qd, t.tau - law), f"{name} q̈")
    if not be.can("derivatives"):
        return
    dq, dv, _, fq, fv, minv = _derivative_references(t, t.q, qd, t.qdd, t.tau - law, t.iv)
    ours = be.inverse_dynamics_derivatives(t.q, qd, t.qdd)
    assert_close(ours[0], dq, f"{name} ∂τ/∂q with friction")
    assert_close(ours[1], dv + np.diag(viscous), f"{name} ∂τ/∂q̇ with friction")
    ours = be.forward_dynamics_derivatives(t.q, qd, t.tau)
    assert_close(ours[0], fq, f"{name} ∂q̈/∂q with friction")
    assert_close(ours[1], fv - minv * viscous, f"{name} ∂q̈/∂q̇ with friction")
    assert_close(ours[2], minv, f"{name} ∂q̈/∂τ with friction")


@checks("stepping")
@pytest.mark.parametrize("name", list(ROUTES))
def test_velocity_step_is_semi_implicit_euler_on_pinocchio(name):
    """Viscous friction D = diag(b_v): explicit q̇⁺ = q̇ + dt aba(τ − D q̇); implicit
    (M + dt D)(q̇⁺ − q̇) = dt (τ − nle − D q̇) (the friction backend's velocity_step docstring)."""
    t, qd, viscous, _ = _friction_state(FRICTION_CASE)
    if not type(route(FRICTION_CASE, name)).can("stepping"):
        _refuses_undeclared(route(FRICTION_CASE, name), "stepping", name)
        return
    be, dt = ROUTES[name](t.model, friction=dp.FrictionModel.create(t.model, viscous=viscous)), 0.05
    explicit = qd + dt * _pinocchio(t, pin.aba, t.q, qd, t.tau - viscous * qd)
    assert_close(be.velocity_step(t.q, qd, t.tau, dt), explicit, f"{name} explicit step")
    M, nle = t.ref["M"], _pinocchio(t, pin.nonLinearEffects, t.q, qd)
    rhs = dt * (t.tau - nle - viscous * qd)
    implicit = qd + np.linalg.solve(M + dt * np.diag(viscous), rhs[..., None])[..., 0]
    assert_close(be.velocity_step(t.q, qd, t.tau, dt, viscous="implicit"), implicit, f"{name} implicit step")
    assert_close(be.velocity_step(t.q[1], qd[1], t.tau[1], dt), explicit[1], f"{name} explicit step (one state)")


@functools.lru_cache(maxsize=None)
def _floating_route(name: str):
    return ROUTES[name](floating_tree("chain3").model)


@checks("floating_base")
@pytest.mark.parametrize("name", list(ROUTES))
def test_floating_base_against_pinocchios_free_flyer(name):
    """Every route serves a floating base (itself, or through get_backend's free-flyer chain):
    τ, M, q̈, and the derivatives along the configuration's tangent where declared (but see
    :func:`generated`)."""
    t = floating_tree("chain3")
    be = _floating_route(name)
    assert be.can("floating_base")
    assert_close(be.inverse_dynamics(t.q, t.v, t.a), t.ref["tau"], f"{name} floating τ")
    assert_close(be.mass_matrix(t.q), t.ref["M"], f"{name} floating M")
    assert_close(be.forward_dynamics(t.q, t.v, t.tau), t.ref["qdd"], f"{name} floating q̈")
    if not be.can("derivatives") or generated(name):
        return
    ref = _derivative_references(t, t.q, t.v, t.a, t.tau, np.concatenate([np.arange(6), t.iv]))
    ours = be.inverse_dynamics_derivatives(t.q, t.v, t.a) + (be.mass_matrix(t.q),) \
        + be.forward_dynamics_derivatives(t.q, t.v, t.tau)
    for what, mine, r in zip(("∂τ/∂q", "∂τ/∂v", "∂τ/∂a", "∂q̈/∂q", "∂q̈/∂v", "∂q̈/∂τ"), ours, ref):
        assert_close(mine, r, f"{name} floating {what}")


@functools.lru_cache(maxsize=None)
def _mimic_references():
    """The mimic model, states, and τ, M, q̈ and derivatives of pinocchio's full model (every
    joint independent) projected by the URDF's numbers (test_mimic._by_hand): τ = Gᵀ τ_full,
    M = Gᵀ M_full G, ∂τ/∂x = Gᵀ ∂τ_full/∂x_full G, ∂q̈/∂x = −M⁻¹ ∂τ/∂x at q̈."""
    from dyn_plugin.errors import URDFWarning
    from dyn_plugin.sampling import random_states

    model = dp.load_urdf_string(MIMIC_URDF, mimic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        full = dp.get_backend("pinocchio", dp.load_urdf_string(MIMIC_URDF))
    s = random_states(model, 4, seed=4)
    G, q_full = _by_hand(model, full.model, s.q)
    M = G.T @ full.mass_matrix(q_full) @ G
    bias = full.bias_forces(q_full, s.qd @ G.T) @ G
    qdd = np.linalg.solve(M, (s.tau - bias)[..., None])[..., 0]
    dq, dv = (G.T @ d @ G for d in full.inverse_dynamics_derivatives(q_full, s.qd @ G.T, s.qdd @ G.T))
    at_qdd = [G.T @ d @ G for d in full.inverse_dynamics_derivatives(q_full, s.qd @ G.T, qdd @ G.T)]
    minv = np.linalg.inv(M)
    ref = {"τ": full.inverse_dynamics(q_full, s.qd @ G.T, s.qdd @ G.T) @ G, "M": M, "q̈": qdd, "∂τ/∂q": dq,
           "∂τ/∂q̇": dv, "∂q̈/∂q": -minv @ at_qdd[0], "∂q̈/∂q̇": -minv @ at_qdd[1], "∂q̈/∂τ": minv}
    return model, s, ref


@checks("mimic")
@pytest.mark.parametrize("name", list(ROUTES))
def test_mimic_joints_against_pinocchios_projected_full_model(name):
    """Every rigid route serves mimic joints in reduced coordinates (itself, or through
    get_backend's map G), its derivatives too where declared (but see :func:`generated`); a
    friction route refuses them by name."""
    model, s, ref = _mimic_references()
    if type(route(FRICTION_CASE, name)).can("friction"):
        with pytest.raises(ModelError, match="mimic joints"):
            ROUTES[name](model)
        return
    be = ROUTES[name](model)
    assert be.can("mimic")
    ours = {"τ": be.inverse_dynamics(s.q, s.qd, s.qdd), "M": be.mass_matrix(s.q),
            "q̈": be.forward_dynamics(s.q, s.qd, s.tau)}
    if be.can("derivatives") and not generated(name):
        ours["∂τ/∂q"], ours["∂τ/∂q̇"] = be.inverse_dynamics_derivatives(s.q, s.qd, s.qdd)
        ours["∂q̈/∂q"], ours["∂q̈/∂q̇"], ours["∂q̈/∂τ"] = be.forward_dynamics_derivatives(s.q, s.qd, s.tau)
    for what, mine in ours.items():
        assert_close(mine, ref[what], f"{name} {what} with mimic joints")


@checks("multi_dof")
@pytest.mark.parametrize("name", list(ROUTES))
def test_multi_dof_joints_against_pinocchio(name):
    """Every rigid route serves spherical, planar and floating joints (itself, or through
    get_backend's chain of one-dof joints): τ, M, q̈ and the derivatives where declared,
    against pinocchio's independent twin (test_multi_dof.py, 1e-12) on the tree holding every
    kind with a floating root; a route of generated code on the small spherical tree (its
    code is per model), without derivatives (their code alone compiles for ~20 s); a friction
    route refuses by name."""
    import test_multi_dof as md

    c = md.case(*md.SMALL) if generated(name) else md.case("all", "floating")
    if type(route(FRICTION_CASE, name)).can("friction"):
        with pytest.raises(ModelError, match="friction laws are written for revolute and prismatic joints"):
            ROUTES[name](c.model)
        return
    be = ROUTES[name](c.model)
    assert be.can("multi_dof")
    ours = {"τ": (be.inverse_dynamics(c.q, c.v, c.a), False), "M": (be.mass_matrix(c.q), False),
            "q̈": (be.forward_dynamics(c.q, c.v, c.tau), True)}
    if be.can("derivatives") and not generated(name):
        ours["∂τ/∂q"], ours["∂τ/∂v"] = ((x, False) for x in be.inverse_dynamics_derivatives(c.q, c.v, c.a))
        ours.update(zip(("∂q̈/∂q", "∂q̈/∂v", "∂q̈/∂τ"),
                        ((x, True) for x in be.forward_dynamics_derivatives(c.q, c.v, c.tau))))
    for what, (mine, per_state) in ours.items():
        md.assert_close(mine, c.ref[what], f"{name} {what} with joints of several degrees of freedom", per_state)


def test_every_capability_is_checked():
    """Each capability a backend can declare has its check here: adding one to CAPABILITIES
    without a check (a ``@checks`` test or a feature of NEEDS) fails."""
    assert set(CHECKED) == set(CAPABILITIES), f"unchecked: {sorted(set(CAPABILITIES) - set(CHECKED))}"


@pytest.mark.parametrize("case", [1], ids=[IDS[1]])
def test_symbolic_closed_forms_against_pinocchio(case):
    """The symbolic derivation (closed forms by Newton-Euler, evaluated numerically)."""
    from dyn_plugin.symbolic import lambdify_closed_form, newton_euler, symbolic_model

    t = tree(case)
    numeric = lambdify_closed_form(newton_euler(symbolic_model(t.model)))
    assert_close(numeric.inverse_dynamics(t.q, t.qd, t.qdd), t.ref["tau"], "symbolic newton_euler τ")
    assert_close(numeric.mass_matrix(t.q), t.ref["M"], "symbolic newton_euler M")
    assert_close(numeric.gravity_torques(t.q), t.ref["g"], "symbolic newton_euler g")


def _armature_routes() -> list:
    """(name, options) of every backend of ours whose factory takes ``armature=``, each
    way it can run (compiled and the numpy reference, where it offers ``compiled=``)."""
    import inspect

    routes = []
    for name in backends(("ours", "generated")):
        parameters = inspect.signature(backend_class(name)).parameters
        if "armature" in parameters:
            routes += [(name, {})] + ([(name, {"compiled": False})] if "compiled" in parameters else [])
    return routes


@pytest.mark.parametrize("name, options", _armature_routes(), ids=lambda x: str(x) if x else "default")
def test_armature_against_pinocchio(name, options):
    """Rotor inertia on M's diagonal (pinocchio's model.armature): τ, M and q̈."""
    t = tree(6)
    armature = np.linspace(0.05, 0.4, t.n)
    ours = dp.get_backend(name, t.model, armature=armature, **options)
    reference = dp.get_backend("pinocchio", t.model, armature=armature)
    for method, args in (("inverse_dynamics", (t.q, t.qd, t.qdd)), ("mass_matrix", (t.q,)),
                         ("forward_dynamics", (t.q, t.qd, t.tau)), ("forward_dynamics", (t.q[2], t.qd[2], t.tau[2]))):
        assert_close(getattr(ours, method)(*args), getattr(reference, method)(*args), f"{name} {method} with armature")
