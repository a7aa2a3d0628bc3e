"""DynamicsStepper at pybullet's default time step: implicit damping,
sub-steps, and never a NaN written into a scene.

pybullet_data's kuka_iiwa has URDF damping 0.5 N·m·s/rad on every joint and a last link of
6e-4 kg·m²: at 1/240 s, dt·λ_max(M⁻¹D) = 3.6 > 2, so explicit damping (pybullet's
jointDamping) diverges; without damping, semi-implicit Euler gains energy until it blows up
(step 661).  References: closed forms of a damped rotor, the implicit-Euler equation
itself, energy dissipation, and pybullet's own stepping at a time step where it is stable.
"""

import re

import numpy as np
import pybullet as p
import pybullet_data
import pytest

import dyn_plugin as dp
from dyn_plugin import pybullet_bridge as dpb
from dyn_plugin.backends.pybullet_backend import c_level_output_silenced, configure_reference_body
from dyn_plugin.simulate import kinetic_energy, potential_energy

KUKA = f"{pybullet_data.getDataPath()}/kuka_iiwa/model.urdf"
DT = 1 / 240                                     # pybullet's default time step
ROTOR = """<robot name="rotor"><link name="base"/>
<link name="disc"><inertial><mass value="1"/>
<inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="spin" type="continuous"><parent link="base"/><child link="disc"/><axis xyz="0 0 1"/>
<dynamics damping="{c}"/></joint></robot>"""


@pytest.fixture
def kuka():
    """A fresh client at pybullet's defaults (dt = 1/240 s) with the kuka_iiwa, fixed base."""
    client = p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    with c_level_output_silenced():
        body = p.loadURDF(KUKA, useFixedBase=True, physicsClientId=client)
    yield client, body
    p.disconnect(physicsClientId=client)


def states(client, body):
    rows = p.getJointStates(body, range(7), physicsClientId=client)
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def energy(stepper, q, qd):
    be, model = stepper.backend, stepper.dynamics.model
    return float(kinetic_energy(be, q[None], qd[None])[0] + potential_energy(model, q[None], be.gravity)[0])


def test_a_diverging_step_raises_and_writes_nothing(kuka):
    """Undamped, semi-implicit Euler gains energy at 1/240 s until a step is NaN (step 661
    today; chaos makes the exact step sensitive to rounding): the stepper names the step,
    time and joint, and leaves the last finite state in the scene."""
    client, body = kuka
    stepper = dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=client, damping=[0.0] * 7)
    last = None
    with pytest.raises(dp.SimulationError, match=r"joint 'lbr_iiwa_joint_\d'.*nothing was written to the scene") as info:
        for _ in range(1000):
            last = stepper.step([0.0] * 7)
    step, t = re.search(r"diverged at step (\d+) \(t = ([0-9.]+) s", str(info.value)).groups()
    assert int(step) == stepper.steps + 1 > 500 and abs(float(t) - int(step) * DT) < 1e-4
    q, qd = states(client, body)
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(qd))
    assert np.array_equal(q, last[0]) and np.array_equal(qd, last[1])   # the last good step stayed


@pytest.mark.parametrize("backend", ["newton_euler", "newton_euler_friction"])
def test_kuka_at_default_time_step_settles_for_10_s(kuka, backend):
    """Both backends apply the URDF damping implicitly: finite for 2400 steps, the arm falls
    and comes to rest (energy drops by the ~100 J it had to lose, never rises above E(0))."""
    client, body = kuka
    stepper = dpb.DynamicsStepper(body, backend=backend, physicsClientId=client)
    q0, qd0 = states(client, body)
    e0, peak = energy(stepper, q0, qd0), -np.inf
    for k in range(2400):
        q, qd = (np.array(v) for v in stepper.step([0.0] * 7))
        if k % 40 == 0:
            peak = max(peak, energy(stepper, q, qd))
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(qd))
    assert peak <= e0
    assert energy(stepper, q, qd) < e0 - 90.0
    assert np.abs(qd).max() < 2.0
    assert np.ptp(q) > 1.0                                             # it really fell


def test_friction_and_rigid_steppers_agree_on_urdf_damping(kuka):
    """newton_euler with the body's damping = newton_euler_friction with the URDF friction."""
    client, body = kuka
    rigid = dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=client)
    friction = dpb.DynamicsStepper(body, backend="newton_euler_friction", physicsClientId=client)
    np.testing.assert_array_equal(rigid.damping, np.full(7, 0.5))
    np.testing.assert_array_equal(friction.backend.friction.velocity.viscous, np.full(7, 0.5))
    rng = np.random.default_rng(1)
    for _ in range(20):
        q, qd, tau = rng.uniform(-1, 1, 7), rng.uniform(-2, 2, 7), rng.uniform(-5, 5, 7)
        a, b = rigid._advance(q, qd, tau, DT), friction._advance(q, qd, tau, DT)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-12, atol=1e-12)


def test_one_step_solves_the_implicit_damping_equation(kuka):
    """(M + h D)(q̇⁺ − q̇) = h (τ − bias − D q̇) with q̇ at the step's start, to rounding."""
    client, body = kuka
    stepper = dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=client, damping=np.linspace(0.1, 2, 7))
    be, D = stepper.backend, np.diag(np.linspace(0.1, 2, 7))
    rng = np.random.default_rng(2)
    q, qd, tau = rng.uniform(-1, 1, 7), rng.uniform(-3, 3, 7), rng.uniform(-5, 5, 7)
    q1, qd1 = stepper._advance(q, qd, tau, DT)
    lhs = (be.mass_matrix(q) + DT * D) @ (qd1 - qd)
    rhs = DT * (tau - be.bias_forces(q, qd) - D @ qd)
    assert np.abs(lhs - rhs).max() <= 1e-12 * np.abs(rhs).max()
    np.testing.assert_array_equal(q1, q + DT * qd1)


def test_damped_rotor_closed_form():
    """A free rotor I = 6e-4 kg·m², c = 0.5 N·m·s/rad: implicit Euler q̇⁺ = q̇ I / (I + dt c)
    (a monotone decay), where the explicit step multiplies by 1 − dt c / I = −2.47."""
    inertia, c = 6e-4, 0.5
    model = dp.load_urdf_string(ROTOR.format(i=inertia, c=c))
    be = dp.get_backend("newton_euler_friction", model, friction="urdf", gravity=(0, 0, -9.81))
    implicit = be.velocity_step([0.3], [2.0], [0.0], DT, viscous="implicit")
    explicit = be.velocity_step([0.3], [2.0], [0.0], DT)
    assert abs(implicit[0] - 2.0 * inertia / (inertia + DT * c)) <= 1e-15 * 2.0
    assert abs(explicit[0] - 2.0 * (1 - DT * c / inertia)) <= 1e-14 * 2.0
    # with Coulomb friction F: slides on while F dt is less than what the step leaves, else stops
    friction = dp.FrictionModel.create(1, viscous=c, coulomb=0.01)
    be = dp.get_backend("newton_euler_friction", model, friction=friction, gravity=(0, 0, -9.81))
    sliding = be.velocity_step([0.0], [2.0], [0.0], DT, viscous="implicit")
    assert abs(sliding[0] - (inertia * 2.0 - DT * 0.01) / (inertia + DT * c)) <= 1e-15 * 2.0
    assert be.velocity_step([0.0], [0.01], [0.0], DT, viscous="implicit")[0] == 0.0


def test_tracks_pybullet_where_pybullet_is_stable(kuka):
    """Same physics (URDF damping only): pybullet's explicit damping diverges at 1/240 s,
    also with numSubSteps (it holds the damping torque over the sub-steps); at 1/3840 s it is
    stable.  Over 1 s our stepper at 1/240 s is within first-order error of it, and with 16
    sub-steps it is 4x closer (both first order: the gap is the integrators', not the model's)."""
    client, body = kuka
    reference = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -9.81, physicsClientId=reference)
        with c_level_output_silenced():
            native = p.loadURDF(KUKA, useFixedBase=True, physicsClientId=reference)
        configure_reference_body(p, native, [0, 0, -9.81], reference)
        for j in range(7):
            p.changeDynamics(native, j, jointDamping=0.5, physicsClientId=reference)
        for _ in range(24):
            p.stepSimulation(physicsClientId=reference)
        assert np.abs(states(reference, native)[1]).max() > 1e3           # pybullet at 1/240 s: unstable
        for j in range(7):
            p.resetJointState(native, j, 0.0, 0.0, physicsClientId=reference)
        p.setPhysicsEngineParameter(fixedTimeStep=DT / 16, physicsClientId=reference)
        coarse = dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=client)
        fine = dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=client, substeps=16)
        q, qd = np.zeros(7), np.zeros(7)
        qf, qdf = q, qd
        gaps = np.zeros((240, 2))
        for k in range(240):
            q, qd = coarse._advance(q, qd, np.zeros(7), DT)
            qf, qdf = fine._advance(qf, qdf, np.zeros(7), DT)
            for _ in range(16):
                p.stepSimulation(physicsClientId=reference)
            theirs = states(reference, native)[0]
            gaps[k] = np.abs(q - theirs).max(), np.abs(qf - theirs).max()
    finally:
        p.disconnect(physicsClientId=reference)
    assert np.abs(q).max() > 0.2                                           # it moved (0.25 rad)
    assert gaps[:, 0].max() < 5e-3                                         # measured 3.46e-3 rad
    assert gaps[:, 1].max() < gaps[:, 0].max() / 3                         # measured 8.2e-4 rad (4.2x closer)


def test_substeps_are_equal_sub_steps(kuka):
    client, body = kuka
    split = dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=client, substeps=3)
    plain = dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=client)
    q, qd, tau = np.full(7, 0.2), np.full(7, -0.5), np.arange(7.0)
    expected = (q, qd)
    for _ in range(3):
        expected = plain._advance(*expected, tau, DT / 3)
    got = split._advance(q, qd, tau, DT)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(substeps=0), "substeps must be an integer >= 1"),
    (dict(substeps=1.5), "substeps must be an integer >= 1"),
    (dict(substeps=True), "substeps must be an integer >= 1"),
    (dict(damping=[0.1] * 6), "damping must have length 7"),
    (dict(damping=[-0.1] * 7), "damping must be >= 0"),
    (dict(damping=[np.nan] * 7), "damping has a non-finite entry"),
    (dict(backend="newton_euler_friction", damping=[0.1] * 7), "viscous friction is its damping"),
])
def test_bad_stepper_options(kuka, kwargs, fragment):
    client, body = kuka
    kwargs.setdefault("backend", "newton_euler")
    with pytest.raises(dp.InputError, match=fragment):
        dpb.DynamicsStepper(body, physicsClientId=client, **kwargs)


def test_several_steppers_in_one_scene_step_together_as_each_alone():
    """A PUMA-560 and a kuka in one scene, and the PUMA alone in another client: with each
    stepper's step(..., step_scene=False) after the scene's stepSimulation, as the docstring
    said, the PUMA read a body pybullet had already moved and ended 2.2 rad from the one
    stepped alone after 0.25 s.  step_together reads every body before the scene's step and
    writes every body after: the same states as alone, to rounding; its bad inputs refused."""
    from dyn_plugin.robots import robot_path

    def scene(*urdfs):
        client = p.connect(p.DIRECT)
        p.setGravity(0, 0, -9.81, physicsClientId=client)
        steppers = []
        for k, urdf in enumerate(urdfs):
            with c_level_output_silenced():
                body = p.loadURDF(urdf, [2.0 * k, 0, 0], useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE,
                                  physicsClientId=client)
            n = p.getNumJoints(body, physicsClientId=client)
            for j in range(n):
                p.resetJointState(body, j, 0.3, 0.0, physicsClientId=client)
            steppers.append(dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=client,
                                                damping=[0.0] * n))
        return client, steppers

    puma, kuka_urdf = str(robot_path("puma560")), pybullet_data.getDataPath() + "/kuka_iiwa/model.urdf"
    shared, (s1, s2) = scene(puma, kuka_urdf)
    alone, (sa,) = scene(puma)
    try:
        for _ in range(60):
            (q1, v1), _ = dpb.step_together([s1, s2], [[0.0] * 6, [0.0] * 7])
            qa, va = sa.step([0.0] * 6)
        assert np.abs(np.subtract(q1, qa)).max() <= 1e-12 and np.abs(np.subtract(v1, va)).max() <= 1e-12
        assert np.abs(np.subtract(qa, 0.3)).max() > 0.1                       # the arm fell
        with pytest.raises(dp.InputError, match="one torque vector per stepper"):
            dpb.step_together([s1, s2], [[0.0] * 6])
        with pytest.raises(dp.InputError, match="steps one scene"):
            dpb.step_together([s1, sa], [[0.0] * 6, [0.0] * 6])
    finally:
        p.disconnect(physicsClientId=shared)
        p.disconnect(physicsClientId=alone)


def test_a_torque_beyond_what_pybullet_can_step_is_refused(kuka):
    """A finite torque of 1e300 N·m gave q̇ = 1.4e297 rad/s, written into the scene; pybullet's
    next stepSimulation made every joint and the base pose NaN, and later calls failed with
    an error about gravity.  The stepper refuses a state beyond STEPPABLE, writing nothing."""
    client, body = kuka
    stepper = dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=client, damping=[0.0] * 7)
    before = states(client, body)
    with pytest.raises(dp.SimulationError, match=r"pybullet steps states up to 1e\+150.*nothing was written"):
        stepper.step([1e300] + [0.0] * 6)
    after = states(client, body)
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    p.stepSimulation(physicsClientId=client)
    assert np.all(np.isfinite(states(client, body)[0]))
