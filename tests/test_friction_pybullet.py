"""Joint friction of our friction backends against pybullet's own friction, step by step.

REFERENCE: pybullet's ``jointDamping`` is exactly an explicit viscous torque −c q̇ in its
semi-implicit Euler step, and a velocity motor with targetVelocity 0 and maximum force F
is Coulomb friction with stiction applied as a velocity-level impulse |λ| ≤ F dt of
maximum dissipation (solved here to convergence).  Our ``forward_dynamics`` with viscous
friction and our ``velocity_step`` with Coulomb friction claim to be those same updates,
so one step from the same state must agree to rounding (1e-9 relative to the step's
acceleration), and so must a short stick-slip trajectory.

Besides ours == pybullet, the single-joint cases are also checked against closed forms
built from the frictionless rigid-body backend (τ ∓ F dynamics, exact stop, exact
Coulomb impulse), so that a shared mistake of both engines would not go unnoticed.

Every comparison is scaled by the motion: a wrong sign or level of friction changes the
step by far more than the tolerance (checked explicitly where it is not obvious).
"""

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.backends.registry import backends
from dyn_plugin.friction.parameters import FrictionModel
from dyn_plugin.sampling import random_states

FRICTION_BACKENDS = tuple(backends(can=("friction",)))
DT = 1e-3
RTOL = 1e-9      # relative to max(1, |q̈|) of the step
REST = 1e-12     # |q̇⁺| of a joint that must stay at / come to rest
LOCK = 1e4       # motor-friction level that holds a joint at rest (≫ any torque used here)


@pytest.fixture(scope="module")
def engines():
    """name -> (model, pybullet backend, frictionless newton_euler backend), each loaded once."""
    cache = {}

    def get(name):
        if name not in cache:
            model = dp.load_robot(name)
            cache[name] = model, dp.get_backend("pybullet", model), dp.get_backend("newton_euler", model)
        return cache[name]
    return get


@pytest.fixture(scope="module", params=dp.list_robots())
def robot(request, engines):
    return engines(request.param)


def step_error(qd_next, qd_ref, qd, dt=DT):
    """max over joints of |Δq̇⁺| / dt / max(1, |q̈_ref|), with q̈_ref = (q̇⁺_ref − q̇) / dt:
    the relative error of the step's acceleration."""
    qd_next, qd_ref, qd = (np.asarray(a, dtype=float) for a in (qd_next, qd_ref, qd))
    qdd_ref = (qd_ref - qd) / dt
    return float(np.max(np.abs(qd_next - qd_ref) / dt / np.maximum(1.0, np.abs(qdd_ref))))


def friction_backend(name, model, **friction):
    return dp.get_backend(name, model, friction=FrictionModel.create(model.n, **friction))


def inertia_scale(rigid, model):
    """diag M at the middle of the sampling range: per-joint scale for friction levels, so
    that a wrist joint of 1e-5 kg·m² and a base joint of 3 kg·m² see comparable effects."""
    s = random_states(model, 1, seed=0)
    return np.diag(rigid.mass_matrix(s.q[0]))


# -- 1. viscous friction = pybullet jointDamping ---------------------------------------------


@pytest.mark.parametrize("backend", FRICTION_BACKENDS)
def test_viscous_step_matches_pybullet_joint_damping(robot, backend):
    model, pb, rigid = robot
    n = model.n
    s = random_states(model, 20, seed=11)
    rng = np.random.default_rng(12)
    c = inertia_scale(rigid, model) * rng.uniform(0.0, 50.0, n)      # N·m·s/rad, ≥ 0 per joint
    be = friction_backend(backend, model, viscous=c)

    ours = s.qd + DT * be.forward_dynamics(s.q, s.qd, s.tau)
    q_pb, theirs = pb.step(s.q, s.qd, s.tau, DT, joint_damping=c)
    assert step_error(ours, theirs, s.qd) <= RTOL
    np.testing.assert_allclose(s.q + DT * ours, q_pb, rtol=0, atol=1e-12)
    # velocity_step without dry friction is the same explicit step
    stepped = np.array([be.velocity_step(q, qd, tau, DT) for q, qd, tau in zip(s.q[:5], s.qd[:5], s.tau[:5])])
    assert step_error(stepped, theirs[:5], s.qd[:5]) <= RTOL

    # the damping matters: without it (either engine) the step differs by ≫ the tolerance
    _, undamped = pb.step(s.q, s.qd, s.tau, DT)
    assert step_error(undamped, theirs, s.qd) > 1e4 * RTOL
    bare = s.qd + DT * rigid.forward_dynamics(s.q, s.qd, s.tau)
    assert step_error(bare, theirs, s.qd) > 1e4 * RTOL
    # and pybullet's damping is exactly the torque −c q̇ (sign and level): M Δq̇⁺ / dt = −c q̇
    torque = np.einsum("nij,nj->ni", rigid.mass_matrix(s.q), theirs - bare) / DT
    assert np.max(np.abs(torque + c * s.qd) / np.maximum(1.0, np.abs(c * s.qd))) <= RTOL


# -- 2. Coulomb friction with stiction, one joint at a time --------------------------------


def _single_joint_cases(model, rigid, seed):
    """(kind, label, joint i, q, q̇, τ, F, expected q̇⁺): every joint but i at rest and locked by LOCK.

    With the others locked, joint i is a 1-DOF system M_ii q̈_i = τ_i − h_i − λ_i, h the
    rigid-body bias at (q, q̇): the closed forms below follow from it.
    """
    n = model.n
    rng = np.random.default_rng(seed)
    states = random_states(model, 2 * n, seed=seed)
    cases = []
    for i in range(n):
        for q in states.q[2 * i: 2 * i + 2]:
            M = rigid.mass_matrix(q)
            m_ii = M[i, i]
            F = np.full(n, LOCK)
            F[i] = 50.0 * m_ii                               # stops 0.05 rad/s per 1 ms step
            others = np.diag(M) * rng.uniform(-20, 20, n)   # loads the locks
            rest = np.zeros(n)
            h = rigid.bias_forces(q, rest)
            # at rest: τ_i − h_i = frac · F_i; sticks when |frac| < 1, else slips against F
            for frac in (0.5, -0.9, 1.5, -3.0):
                tau = h + others
                tau[i] = h[i] + frac * F[i]
                expected = np.zeros(n)
                if abs(frac) > 1:
                    expected[i] = DT * (frac - np.sign(frac)) * F[i] / m_ii
                cases.append(("rest", frac, i, q, rest, tau, F, expected))
            for sign in (1.0, -1.0):
                # sliding slowly, pushed on by 0.5 F: would need an impulse 0.8 F dt to stop,
                # within the F dt available, so it stops exactly at zero
                qd = rest.copy()
                qd[i] = sign * 0.3 * DT * F[i] / m_ii
                h = rigid.bias_forces(q, qd)
                tau = h + others
                tau[i] = h[i] + sign * 0.5 * F[i]
                cases.append(("stop", sign, i, q, qd, tau, F, np.zeros(n)))
                # sliding fast: slowed by exactly the Coulomb impulse F dt
                qd = rest.copy()
                qd[i] = sign * rng.uniform(0.5, 2.0)
                h = rigid.bias_forces(q, qd)
                tau = h + others
                tau[i] = h[i] + m_ii * rng.uniform(-20, 20)
                expected = np.zeros(n)
                expected[i] = qd[i] + DT * (tau[i] - h[i] - sign * F[i]) / m_ii
                cases.append(("slide", sign, i, q, qd, tau, F, expected))
    return cases


@pytest.mark.parametrize("backend", FRICTION_BACKENDS)
def test_coulomb_single_joint_stick_slip_matches_pybullet_motor(robot, backend):
    """One joint free, the others locked: it sticks below its level, slips with τ ∓ F above,
    stops exactly at zero when the step would reverse it, and otherwise loses exactly F dt."""
    model, pb, rigid = robot
    n = model.n
    cases = _single_joint_cases(model, rigid, seed=21)
    seen = set()
    for kind, label, i, q, qd, tau, F, expected in cases:
        be = friction_backend(backend, model, coulomb=F)
        ours = be.velocity_step(q, qd, tau, DT)
        _, theirs = pb.step(q, qd, tau, DT, motor_friction=F)
        where = f"{model.name} joint {model.joint_names[i]} {kind} {label}"
        assert step_error(ours, theirs, qd) <= RTOL, where
        assert step_error(ours, expected, qd) <= RTOL, where
        locked = np.arange(n) != i
        assert np.all(np.abs(ours[locked]) <= REST) and np.all(np.abs(theirs[locked]) <= REST), where
        if kind == "stop" or (kind == "rest" and abs(label) < 1):
            assert abs(ours[i]) <= REST and abs(theirs[i]) <= REST, where
            seen.add("stick" if kind == "rest" else "stop")
        else:
            assert abs(theirs[i]) > 1e-6, where
            seen.add(kind)
        if kind == "rest":
            # all at rest: the step is dt × the acceleration-level stiction of forward_dynamics
            assert step_error(qd + DT * be.forward_dynamics(q, qd, tau), theirs, qd) <= RTOL, where
        if kind == "slide":
            # slowed by exactly the Coulomb impulse: M_ii Δq̇_i = −F_i dt sgn(q̇_i)
            F_off = F.copy()
            F_off[i] = 0.0
            _, free = pb.step(q, qd, tau, DT, motor_friction=F_off)
            impulse = rigid.mass_matrix(q)[i, i] * (ours[i] - free[i])
            assert impulse == pytest.approx(-np.sign(qd[i]) * F[i] * DT, rel=RTOL, abs=1e-15), where
    assert seen == {"stick", "stop", "slide", "rest"}


@pytest.mark.parametrize("backend", FRICTION_BACKENDS)
def test_coulomb_on_one_joint_with_the_others_moving_freely(robot, backend):
    """Only joint i has friction (F = 0 elsewhere, pybullet motors of force 0); the others
    move.  The torque λ that would hold joint i is set to frac·F_i: |frac| < 1 → it stays
    at rest under exactly λ, else it slips under τ + sgn(frac) F_i e_i (closed forms from
    the frictionless backend), and forward_dynamics' stiction gives the same q̈."""
    model, pb, rigid = robot
    n = model.n
    s = random_states(model, n, seed=31)
    rng = np.random.default_rng(32)
    scale = inertia_scale(rigid, model)
    for i in range(n):
        q, qd = s.q[i], s.qd[i].copy()
        qd[i] = 0.0
        F = np.zeros(n)
        F[i] = 50.0 * scale[i]
        be = friction_backend(backend, model, coulomb=F)
        base = rigid.inverse_dynamics(q, qd, rng.uniform(-5, 5, n))
        W = np.linalg.inv(rigid.mass_matrix(q))
        h = rigid.bias_forces(q, qd)
        hold = -(W @ (base - h))[i] / W[i, i]        # the torque at joint i that keeps q̈_i = 0
        for frac in (0.6, -0.6, 2.0, -2.0):
            tau = base.copy()
            tau[i] += hold - frac * F[i]            # now the holding torque is frac · F_i
            e_i = np.eye(n)[i]
            expected = qd + DT * rigid.forward_dynamics(q, qd, tau + np.clip(frac, -1, 1) * F[i] * e_i)
            ours = be.velocity_step(q, qd, tau, DT)
            _, theirs = pb.step(q, qd, tau, DT, motor_friction=F)
            where = f"{model.name} joint {model.joint_names[i]} frac {frac}"
            assert step_error(ours, theirs, qd) <= RTOL, where
            assert step_error(ours, expected, qd) <= RTOL, where
            assert step_error(qd + DT * be.forward_dynamics(q, qd, tau), theirs, qd) <= RTOL, where
            if abs(frac) < 1:
                assert abs(ours[i]) <= REST and abs(theirs[i]) <= REST, where
            else:
                assert np.sign(theirs[i]) == -np.sign(frac) and abs(theirs[i]) > 1e-6, where


# -- 3. whole robots: every joint sliding, and mixed stick / slip ---------------------------


@pytest.mark.parametrize("backend", FRICTION_BACKENDS)
def test_coulomb_all_joints_sliding(robot, backend):
    """|q̇| ≥ 1 with levels that remove ≤ 0.1 rad/s per step: every joint slides, and
    τ = ID(q, q̇, q̈*) + F sgn(q̇) must give exactly q̈*."""
    model, pb, rigid = robot
    n = model.n
    s = random_states(model, 8, seed=41)
    rng = np.random.default_rng(42)
    scale = inertia_scale(rigid, model)
    for q, target in zip(s.q, s.qdd):
        qd = rng.choice([-1.0, 1.0], n) * rng.uniform(1.0, 3.0, n)
        F = scale * rng.uniform(10.0, 100.0, n)
        tau = rigid.inverse_dynamics(q, qd, target) + F * np.sign(qd)
        be = friction_backend(backend, model, coulomb=F)
        ours = be.velocity_step(q, qd, tau, DT)
        _, theirs = pb.step(q, qd, tau, DT, motor_friction=F)
        assert step_error(ours, theirs, qd) <= RTOL
        assert step_error(ours, qd + DT * target, qd) <= RTOL
        assert np.all(np.sign(ours) == np.sign(qd)) and np.all(np.abs(ours) > 0.5)
        # friction matters: the frictionless step is far off
        assert step_error(qd + DT * rigid.forward_dynamics(q, qd, tau), theirs, qd) > 1e4 * RTOL


@pytest.mark.parametrize("backend", FRICTION_BACKENDS)
def test_coulomb_mixed_stick_and_slip(robot, backend):
    """Random levels spanning 10 … 10⁴ × diag M (some joints at rest to start with): some
    joints stick and some slide in the same step, identically in both engines."""
    model, pb, rigid = robot
    n = model.n
    s = random_states(model, 10, seed=51)
    rng = np.random.default_rng(52)
    scale = inertia_scale(rigid, model)
    stuck_total = sliding_total = 0
    for q, qd, qdd in zip(s.q, s.qd, s.qdd):
        qd = np.where(rng.random(n) < 0.3, 0.0, qd)
        F = scale * 10.0 ** rng.uniform(1.0, 4.0, n)
        tau = rigid.inverse_dynamics(q, qd, qdd)
        be = friction_backend(backend, model, coulomb=F)
        ours = be.velocity_step(q, qd, tau, DT)
        _, theirs = pb.step(q, qd, tau, DT, motor_friction=F)
        assert step_error(ours, theirs, qd) <= RTOL
        stuck = np.abs(theirs) <= REST
        np.testing.assert_array_equal(np.abs(ours) <= REST, stuck)
        assert np.all(np.abs(theirs[~stuck]) > 1e-6)  # no borderline cases
        stuck_total += int(stuck.sum())
        sliding_total += int((~stuck).sum())
    assert stuck_total >= 5 and sliding_total >= 5, (stuck_total, sliding_total)


# -- 4. a stick-slip trajectory ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["puma560", "scara"])
def test_stick_slip_trajectory_matches_pybullet_rollout(name, engines):
    """0.3 s at dt = 1e-3 under gravity compensation + a sinusoid that crosses the friction
    level: dp.simulate (velocity_step) with viscous + Coulomb friction vs pybullet's rollout
    with jointDamping + motor friction; joints start from rest, slip, stop and stick again."""
    model, pb, rigid = engines(name)
    n = model.n
    finite = np.isfinite(model.lower) & np.isfinite(model.upper)
    q0 = np.where(finite, 0.5 * (model.lower + model.upper), 0.0)
    scale = np.diag(rigid.mass_matrix(q0))
    F, c, amplitude = 20.0 * scale, 2.0 * scale, 40.0 * scale
    phase = np.linspace(0.0, np.pi, n)

    def torque(t, q, qd):
        return rigid.gravity_torques(q) + amplitude * np.sin(2 * np.pi * t / 0.15 + phase)

    steps = 300
    be = dp.get_backend("newton_euler_friction", model, friction=FrictionModel.create(n, viscous=c, coulomb=F))
    ours = dp.simulate(be, q0, np.zeros(n), torque, steps * DT, DT, on_limit="ignore")
    q_pb, qd_pb = pb.rollout(q0, np.zeros(n), torque, steps, DT, joint_damping=c, motor_friction=F)

    assert np.max(np.abs(ours.q - q_pb)) <= 1e-8
    assert np.max(np.abs(ours.qd - qd_pb)) <= 1e-8
    for qd in (ours.qd, qd_pb):
        stuck = np.abs(qd) <= REST
        starts = np.sum(stuck[:-1] & ~stuck[1:])     # a joint at rest breaks away
        stops = np.sum(~stuck[:-1] & stuck[1:])      # a sliding joint comes to rest
        assert starts >= 2 and stops >= 2, (starts, stops)
        assert stuck[1:].sum() >= 20 and (~stuck[1:]).sum() >= 20
        assert np.max(np.abs(qd)) > 0.3               # it really moves
    np.testing.assert_array_equal(np.abs(ours.qd) <= REST, np.abs(qd_pb) <= REST)
    # without the friction the motion is very different
    free = dp.simulate(rigid, q0, np.zeros(n), torque, steps * DT, DT, on_limit="ignore")
    assert np.max(np.abs(free.qd - qd_pb)) > 1e-2
