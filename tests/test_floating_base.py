"""Floating bases (pinocchio's free-flyer convention) against pinocchio, and their physics.

Every backend of ours or generated (from the registry) and the friction wrappers serve a
floating robot through the free-flyer chain (dyn_plugin.floating); each feature is
compared with pinocchio built here independently (``buildModelFromXML(xml,
JointModelFreeFlyer())``, joints matched by name).  Then what only a floating base has:
the SE(3) integration against pinocchio's ``integrate``, momentum conserved by a
free-floating simulation in zero gravity, energy under gravity, clear errors.

Tolerance: |ours − pinocchio| ≤ 1e-9 · max(1, |pinocchio|), entry by entry.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin import configuration, floating  # noqa: E402
from dyn_plugin.backends.registry import backend_class, backends  # noqa: E402
from dyn_plugin.errors import InputError, ModelError  # noqa: E402
from dyn_plugin.sampling import random_states  # noqa: E402
from dyn_plugin.simulate import simulate  # noqa: E402
from test_random_trees import assert_close  # noqa: E402
from urdf_factory import random_tree_urdf  # noqa: E402

TREES = {"chain3": (201, 3, dict(branched=False)), "tree5": (202, 5, dict(branched=True)),
         "tree7-prismatic": (203, 7, dict(branched=True, continuous=True))}


class FloatingTree:
    """A random tree with a free-flying base: our model, pinocchio's, states, references."""

    def __init__(self, seed, n, options):
        self.xml = random_tree_urdf(np.random.default_rng(seed), n, name=f"floating{seed}", **options)
        self.model = dp.load_urdf_string(self.xml, floating_base=True)
        self.pm = pin.buildModelFromXML(self.xml, pin.JointModelFreeFlyer())
        self.pd = self.pm.createData()
        joints = [self.pm.joints[self.pm.getJointId(name)] for name in self.model.joint_names]
        self.jid = [self.pm.getJointId(name) for name in self.model.joint_names]
        self.iq = [j.idx_q for j in joints]
        self.two = [j.nq == 2 for j in joints]
        self.iv = np.array([j.idx_v for j in joints])
        states = random_states(self.model, 8, seed=seed)
        self.q, self.v, self.a, self.tau = states.q, states.qd, states.qdd, states.tau
        self.ref = {key: np.array([f(*row) for row in zip(*args)]) for key, (f, args) in {
            "tau": (lambda q, v, a: self.ours_v(pin.rnea(self.pm, self.pd, self.pin_q(q), self.pin_v(v),
                                                           self.pin_v(a))), (self.q, self.v, self.a)),
            "M": (self.mass_matrix, (self.q,)),
            "g": (lambda q: self.ours_v(pin.computeGeneralizedGravity(self.pm, self.pd, self.pin_q(q))), (self.q,)),
            "bias": (lambda q, v: self.ours_v(pin.nonLinearEffects(self.pm, self.pd, self.pin_q(q), self.pin_v(v))),
                     (self.q, self.v)),
            "qdd": (lambda q, v, t: self.ours_v(pin.aba(self.pm, self.pd, self.pin_q(q), self.pin_v(v),
                                                         self.pin_v(t))), (self.q, self.v, self.tau)),
        }.items()}
        self.ref["Cqd"] = self.ref["bias"] - self.ref["g"]
        order = np.ix_(*[np.concatenate([np.arange(6), self.iv])] * 2)
        self.ref["C"] = np.array([pin.computeCoriolisMatrix(self.pm, self.pd, self.pin_q(q), self.pin_v(v))[order]
                                  for q, v in zip(self.q, self.v)])

    def pin_q(self, q):
        out = np.zeros(self.pm.nq)
        out[:7] = q[:7]
        for value, iq, two in zip(q[7:], self.iq, self.two):
            out[iq:iq + 1 + two] = (np.cos(value), np.sin(value)) if two else value
        return out

    def pin_v(self, v):
        out = np.zeros(self.pm.nv)
        out[:6], out[self.iv] = v[:6], v[6:]
        return out

    def ours_v(self, x):
        return np.concatenate([x[:6], x[self.iv]])

    def mass_matrix(self, q):
        M = pin.crba(self.pm, self.pd, self.pin_q(q))
        M = np.triu(M) + np.triu(M, 1).T
        order = np.concatenate([np.arange(6), self.iv])
        return M[np.ix_(order, order)]

    def wrenches(self):
        """pinocchio's data.f of the free-flyer (the base) and of each joint: (N, n + 1, 3) twice."""
        force, moment = np.empty((len(self.q), self.model.n + 1, 3)), np.empty((len(self.q), self.model.n + 1, 3))
        for k, (q, v, a) in enumerate(zip(self.q, self.v, self.a)):
            pin.rnea(self.pm, self.pd, self.pin_q(q), self.pin_v(v), self.pin_v(a))
            for i, j in enumerate([1] + self.jid):
                force[k, i], moment[k, i] = self.pd.f[j].linear, self.pd.f[j].angular
        return force, moment


@functools.lru_cache(maxsize=None)
def floating_tree(name: str) -> FloatingTree:
    return FloatingTree(*TREES[name])


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 7), branched=st.booleans(), prismatic=st.booleans())
def test_random_floating_trees_match_pinocchio(seed, n, branched, prismatic):
    """Any tree (hypothesis draws the URDF's seed, size and shape) with a free base: our
    rigid backends' τ, M, bias and q̈ against pinocchio's free-flyer."""
    t = FloatingTree(seed, n, dict(branched=branched, prismatic=prismatic))
    for name in backends("ours", cannot=("friction",)):
        be = dp.get_backend(name, t.model)
        assert_close(be.inverse_dynamics(t.q, t.v, t.a), t.ref["tau"], f"{name} τ")
        assert_close(be.mass_matrix(t.q), t.ref["M"], f"{name} M")
        assert_close(be.bias_forces(t.q, t.v), t.ref["bias"], f"{name} bias")
        assert_close(be.forward_dynamics(t.q, t.v, t.tau), t.ref["qdd"], f"{name} q̈")


def _routes() -> dict:
    routes = {}
    for name in backends(("ours", "generated")):
        options = {"friction": "none"} if backend_class(name).can("friction") else {}
        routes[name] = functools.partial(dp.get_backend, name, **options)
    routes["newton_euler[numpy reference]"] = functools.partial(dp.get_backend, "newton_euler", compiled=False)
    return routes


ROUTES = _routes()
FEATURES = {
    "inverse_dynamics": lambda be, t: (be.inverse_dynamics(t.q, t.v, t.a), t.ref["tau"]),
    "inverse_dynamics (one state)": lambda be, t: (be.inverse_dynamics(t.q[2], t.v[2], t.a[2]), t.ref["tau"][2]),
    "mass_matrix": lambda be, t: (be.mass_matrix(t.q), t.ref["M"]),
    "gravity_torques": lambda be, t: (be.gravity_torques(t.q), t.ref["g"]),
    "bias_forces": lambda be, t: (be.bias_forces(t.q, t.v), t.ref["bias"]),
    "velocity terms (C v)": lambda be, t: (np.einsum("nij,nj->ni", be.coriolis_matrix(t.q, t.v), t.v), t.ref["Cqd"]),
    # Ṁ − 2C skew-symmetric: pinocchio's C (the base's velocity is no coordinate's rate, and
    # ½ ∂h/∂v, which also gives C v, is not it)
    "coriolis_matrix": lambda be, t: (be.coriolis_matrix(t.q, t.v), t.ref["C"]),
    "forward_dynamics": lambda be, t: (be.forward_dynamics(t.q, t.v, t.tau), t.ref["qdd"]),
    "forward_dynamics (one state)": lambda be, t: (be.forward_dynamics(t.q[5], t.v[5], t.tau[5]), t.ref["qdd"][5]),
    "joint_wrenches": lambda be, t: (np.stack(be.joint_wrenches(t.q, t.v, t.a)), np.stack(t.wrenches())),
}


def _cases():
    for tree in TREES:
        for name in ROUTES:
            if name == "symbolic_numba" and tree != "chain3":      # one compile is enough (~20 s each)
                continue
            yield tree, name


@pytest.mark.parametrize("feature", list(FEATURES))
@pytest.mark.parametrize("tree, name", list(_cases()))
def test_floating_route_against_pinocchio(tree, name, feature):
    t = floating_tree(tree)
    be = _backend(tree, name)
    if feature == "joint_wrenches" and not type(be).can("joint_wrenches"):
        return
    ours, reference = FEATURES[feature](be, t)
    assert_close(ours, reference, f"{name} {feature} on floating {tree}")


@functools.lru_cache(maxsize=None)
def _backend(tree, name):
    return ROUTES[name](floating_tree(tree).model)


def test_the_pinocchio_backend_is_the_free_flyer():
    t = floating_tree("tree5")
    be = dp.get_backend("pinocchio", t.model)
    assert_close(be.inverse_dynamics(t.q, t.v, t.a), t.ref["tau"], "pinocchio backend τ")
    assert_close(be.forward_dynamics(t.q, t.v, t.tau), t.ref["qdd"], "pinocchio backend q̈")


def test_armature_and_friction_act_on_the_joints_only():
    t = floating_tree("tree5")
    n, armature = t.model.n, np.linspace(0.1, 0.5, t.model.n)
    ours = dp.get_backend("newton_euler", t.model, armature=armature)
    reference = dp.get_backend("pinocchio", t.model, armature=armature)
    assert_close(ours.mass_matrix(t.q), reference.mass_matrix(t.q), "M with armature")
    assert_close(ours.forward_dynamics(t.q, t.v, t.tau), reference.forward_dynamics(t.q, t.v, t.tau), "q̈ with armature")
    friction = dp.FrictionModel.create(n, viscous=0.7, coulomb=1.5)
    be = dp.get_backend("newton_euler_friction", t.model, friction=friction)
    expected = t.ref["tau"] + np.concatenate([np.zeros((len(t.q), 6)), 0.7 * t.v[:, 6:] + 1.5 * np.sign(t.v[:, 6:])], 1)
    assert_close(be.inverse_dynamics(t.q, t.v, t.a), expected, "τ with joint friction")
    assert be.friction.n == n
    assert_close(be.forward_dynamics(t.q, t.v, expected), t.a, "q̈ with joint friction (round trip)")
    # the rigid-body quantities of a friction backend leave friction out, as on a fixed base
    assert_close(be.bias_forces(t.q, t.v), t.ref["bias"], "friction backend: bias")
    assert_close(be.gravity_torques(t.q), t.ref["g"], "friction backend: gravity")
    assert_close(np.einsum("nij,nj->ni", be.coriolis_matrix(t.q, t.v), t.v), t.ref["Cqd"], "friction backend: C v")


def test_integrate_is_pinocchios():
    t = floating_tree("tree5")
    rng = np.random.default_rng(5)
    for scale in (1e-6, 0.1, 3.0):                      # the series branch, and beyond
        v = scale * rng.uniform(-1, 1, (4, t.model.nv))
        ours = configuration.integrate(t.model, t.q[:4], v)
        theirs = np.array([pin.integrate(t.pm, t.pin_q(t.q[k]), t.pin_v(v[k]))[:7] for k in range(4)])
        assert_close(ours[:, :3], theirs[:, :3], f"integrate: position, |v| ~ {scale}", tol=1e-12)
        # q and −q are one rotation: compare the rotations
        assert_close(floating.base_rotations(ours), floating.base_rotations(theirs), f"integrate: rotation, |v| ~ "
                     f"{scale}", tol=1e-12)


def test_free_floating_momentum_is_conserved():
    """Zero gravity, zero torque: linear and angular momentum (world frame) stay constant
    to 1e-9 over 1 s with RK4 in the exponential chart (dt = 1 ms); semi-implicit Euler,
    first order, does not conserve them to that (it is the integrator, not the dynamics)."""
    model = floating_tree("tree5").model.with_gravity([0.0, 0.0, 0.0])
    be = dp.get_backend("newton_euler", model)
    s = random_states(model, 1, seed=11)
    run = simulate(be, s.q[0], s.qd[0], np.zeros(model.nv), 1.0, 1e-3, integrator="rk4", on_limit="ignore")
    h = floating.momentum(be, run.q, run.qd)
    drift = np.abs(h - h[0]).max() / np.abs(h[0]).max()
    assert drift < 1e-9, f"momentum drift {drift:.2e}"
    assert run.relative_energy_drift() < 1e-9
    assert np.allclose(np.linalg.norm(run.q[:, 3:7], axis=1), 1.0, rtol=0, atol=1e-15)


def test_energy_under_gravity_is_conserved():
    model = floating_tree("chain3").model
    be = dp.get_backend("newton_euler", model)
    s = random_states(model, 1, seed=12)
    run = simulate(be, s.q[0], s.qd[0], np.zeros(model.nv), 0.5, 1e-3, integrator="rk4", on_limit="ignore")
    assert run.relative_energy_drift() < 1e-9
    # the centre of mass falls freely: its vertical momentum changes by m g t
    h = floating.momentum(be, run.q, run.qd)
    assert_close(h[:, 2] - h[0, 2], model.total_mass() * model.gravity[2] * run.t, "p_z(t) − p_z(0) = m g t", tol=1e-9)


def test_bad_floating_input_is_refused_clearly():
    t = floating_tree("chain3")
    be = dp.get_backend("newton_euler", t.model)
    q = t.q[0].copy()
    q[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(InputError, match="unit quaternion"):
        be.inverse_dynamics(q, t.v[0], t.a[0])
    with pytest.raises(InputError, match=rf"shape \({t.model.nq},\)"):
        be.mass_matrix(t.q[0, 1:])
    with pytest.raises(InputError, match=rf"shape \({t.model.nv},\)"):
        be.inverse_dynamics(t.q[0], t.v[0, :-1], t.a[0])
    from dyn_plugin.backends.newton_euler_backend import NewtonEulerBackend

    with pytest.raises(ModelError, match="get_backend"):
        NewtonEulerBackend(t.model)
    from dyn_plugin.algorithms import newton_euler
    from dyn_plugin.compiled import CompiledDynamics

    with pytest.raises(ModelError, match="floating base"):         # never the fixed-base numbers in silence
        newton_euler.inverse_dynamics(t.model, t.q[:, 7:], t.v[:, 6:], t.a[:, 6:])
    with pytest.raises(ModelError, match="floating base"):
        CompiledDynamics(t.model)


def test_a_massless_base_tree_is_refused_in_forward_dynamics():
    """A floating robot with no mass anywhere has no defined motion: a clear error names it."""
    xml = random_tree_urdf(np.random.default_rng(3), 2, name="ghost", branched=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dp.load_urdf_string(xml, floating_base=True)
    empty = dp.RobotModel(**{**{f: getattr(model, f) for f in model.__dataclass_fields__},
                             "masses": np.zeros(model.n), "inertias": np.zeros((model.n, 3, 3)), "base_mass": 0.0,
                             "base_inertia": np.zeros((3, 3))})
    be = dp.get_backend("newton_euler", empty)
    s = random_states(empty, 1, seed=0)
    with pytest.raises(ModelError, match="singular"):
        be.forward_dynamics(s.q[0], s.qd[0], s.tau[0])


def test_validate_a_floating_robot_against_both_references(tmp_path):
    """`dyn-plugin validate --floating-base` on pybullet_data's r2d2: every quantity against
    pinocchio's free-flyer and pybullet's free body, the stepping and 1 s trajectories in
    pybullet's own scheme, a friction backend included (its friction on the joints)."""
    import json

    import pybullet_data

    from dyn_plugin.tools.cli import main

    out = tmp_path / "report.json"
    r2d2 = f"{pybullet_data.getDataPath()}/r2d2.urdf"
    assert main(["validate", "--robot", r2d2, "--floating-base", "--backend", "newton_euler", "newton_euler_friction",
                 "--samples", "8", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    compared = {(c["backend"], c["reference"], c["quantity"]) for c in report["results"]}
    assert ("newton_euler", "pybullet", "traj_gravity") in compared and ("newton_euler_friction", "pybullet", "step") in compared
    assert max(c["max_rel"] for c in report["results"]) < 1e-9


@pytest.mark.parametrize("tree", ["chain3", "tree7-prismatic"])
def test_generated_code_takes_one_floating_state_through_the_compiled_map(tree):
    """symbolic_numba's one floating state goes to the map's entry points (the state mapped
    to the chain's in compiled code, then the generated one-state code: no numpy map, ~1 µs
    instead of ~120 µs on solo12), and equals pinocchio; anything the entry points refuse
    (a quaternion that is not unit, a NaN, a wrong length) gets the validating path's error."""
    t = floating_tree(tree)
    be = dp.get_backend("symbolic_numba", t.model)
    nv = t.model.nv
    out, M = np.empty(nv), np.empty((nv, nv))
    assert be._inverse_entry(be._packed, t.q[0], t.v[0], t.a[0], out) == 0          # the entry point computes
    assert_close(out, t.ref["tau"][0], "entry point τ")
    for k in range(3):
        q, v, a, tau = t.q[k], t.v[k], t.a[k], t.tau[k]
        assert be._forward_entry(be._packed, q, v, tau, out) == 0
        assert_close(out, t.ref["qdd"][k], "entry point q̈")
        assert be._bias_entry(be._packed, q, v, out) == 0
        assert_close(out, t.ref["bias"][k], "entry point bias")
        assert be._mass_entry(be._packed, q, M) == 0
        assert_close(M, t.ref["M"][k], "entry point M")
        assert_close(be.inverse_dynamics(q, v, a), t.ref["tau"][k], "τ")
        assert_close(be.forward_dynamics(q, v, tau), t.ref["qdd"][k], "q̈")
    q = t.q[0].copy()
    q[3:7] *= 2.0
    assert be._inverse_entry(be._packed, q, t.v[0], t.a[0], out) != 0
    with pytest.raises(InputError, match="unit quaternion"):
        be.inverse_dynamics(q, t.v[0], t.a[0])
    v = t.v[0].copy()
    v[-1] = np.nan
    with pytest.raises(InputError, match="finite"):
        be.forward_dynamics(t.q[0], v, t.tau[0])
    with pytest.raises(InputError, match=rf"shape \({t.model.nq},\)"):
        be.mass_matrix(t.q[0, :-1])


def test_generated_code_checks_a_floating_batch_of_mass_matrices_as_it_goes():
    """symbolic_numba's batch of floating M: the generated code on the chain's positions
    (three chunks of lanes, the last part full), checked as it computes (Backend's checking
    form: no pass over q and M before and after), equal to pinocchio's; a NaN anywhere in q,
    the base's position included, and a quaternion that is not unit are named by state."""
    t = floating_tree("tree7-prismatic")
    be = dp.get_backend("symbolic_numba", t.model)
    q = random_states(t.model, 300, seed=5).q
    assert be._checking_batch(be._batch_mass_matrix) is not None
    assert_close(be.mass_matrix(q), np.array([t.mass_matrix(x) for x in q]), "batch M")
    for column, value, message in ((0, np.nan, r"joint 'base_x' \(index 0\), state 277"),
                                   (5, np.inf, "unit quaternion.*state 277"),
                                   (6, 1.5, "unit quaternion.*state 277"),
                                   (t.model.nq - 1, np.nan, "non-finite.*state 277")):
        bad = q.copy()
        bad[277, column] = value
        with pytest.raises(InputError, match=message):
            be.mass_matrix(bad)


def test_what_a_floating_friction_backend_lacks_is_a_clear_error():
    """inverse_dynamics_breakdown and joint_wrenches(f_ext=...) exist on the fixed-base
    friction backends only: an AttributeError / TypeError before, a BackendError now."""
    model = dp.load_robot("puma560", floating_base=True)
    be = dp.get_backend("newton_euler_friction", model)
    s = random_states(model, 2, seed=1)
    with pytest.raises(dp.BackendError, match="inverse_dynamics_breakdown: not on a floating base"):
        be.inverse_dynamics_breakdown(s.q, s.qd, s.qdd)
    with pytest.raises(dp.BackendError, match="joint_wrenches with f_ext: not on a floating base"):
        be.joint_wrenches(s.q, s.qd, s.qdd, f_ext={model.frame_names[-1]: np.ones(6)})
