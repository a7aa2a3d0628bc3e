"""FrictionInjector on whole bodies — a floating base and spherical joints, forces in
pybullet's multi-DOF layout (flags=1) — against what pybullet has of the same laws (viscous
friction = jointDamping, Coulomb friction = a velocity motor at the level), against
DynamicsStepper with the same friction where it has it (a floating body of revolute and
prismatic joints), and against physical closed forms (stiction holds, energy is lost at the
rate the friction dissipates).  pybullet's solver runs numNonContactInnerIterations=10
(MOTOR_ITERATIONS) unless a test says otherwise: with its default single inner iteration
the coupled motors of such a body do not converge (measured below)."""

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin import pybullet_bridge as dpb
from dyn_plugin.friction.bristles import Bristles
from dyn_plugin.friction.parameters import BearingFriction, FrictionModel
from dyn_plugin.pybullet_friction import MOTOR_ITERATIONS
from test_pybullet_drop_in import DATA, kinetic_energy, load, multi_dof_state, p, set_random_state

GRAVITY = (0.3, -0.5, -9.81)
REVOLUTE = ("left_elbow", "right_elbow", "left_knee", "right_knee")   # the humanoid's one-dof joints


def scene(h, gravity=GRAVITY, iterations=MOTOR_ITERATIONS):
    c = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(DATA, physicsClientId=c)
    p.setGravity(*gravity, physicsClientId=c)
    p.setTimeStep(h, physicsClientId=c)
    p.setPhysicsEngineParameter(numNonContactInnerIterations=iterations, physicsClientId=c)
    return c


def prepare(c, path, fixed, rest=(), seed=1):
    """Load ``path``, give it a random state (motors off, no damping) with the revolute or
    prismatic joints numbered ``rest`` (pybullet's order) at rest; (body, moving joints)."""
    body = load(c, path, fixed)
    moving = set_random_state(c, body, np.random.default_rng(seed), fixed)
    joints = dpb.body_dynamics(body, c).joint_indices
    for i in rest:
        p.resetJointState(body, joints[i], p.getJointState(body, joints[i], physicsClientId=c)[0], 0.0,
                          physicsClientId=c)
    return body, moving


def random_forces(c, body, seed=3, scale=2.0):
    """Forces in the multi-DOF layout: normal(0, scale) on every real entry, 0 on the padding."""
    layout = dpb.MultiDofLayout(dpb.body_dynamics(body, c))
    f = np.random.default_rng(seed).normal(size=layout.size) * scale
    f[layout.padding] = 0.0
    return list(f)


def one_step(path, fixed, h, how, friction=None, rest=(), iterations=MOTOR_ITERATIONS):
    """(positions, velocities) in the multi-DOF layout after one step of h from a random state
    under random forces (base and spherical joints included): ``how`` = "injector" (pybullet
    steps, our friction injected) or "stepper" (DynamicsStepper; with ``friction`` a friction
    backend's step).  ``friction``: keyword arguments of FrictionModel.create(model, ...)."""
    c = scene(h, iterations=iterations)
    try:
        body, moving = prepare(c, path, fixed, rest)
        model = dpb.body_dynamics(body, c).model
        friction = "none" if friction is None else FrictionModel.create(model, **friction)
        forces = random_forces(c, body)
        if how == "injector":
            dpb.FrictionInjector(body, friction=friction, physicsClientId=c).apply(forces)
            p.stepSimulation(physicsClientId=c)
        else:
            backend = "newton_euler" if friction == "none" else "newton_euler_friction"
            options = {} if friction == "none" else {"friction": friction}
            dpb.DynamicsStepper(body, backend=backend, physicsClientId=c, **options).step(forces, step_scene=False)
        positions, velocities = multi_dof_state(c, body, moving)
        return np.array(positions), velocities
    finally:
        p.disconnect(physicsClientId=c)


def gap(path, fixed, h, friction=None, rest=(), iterations=MOTOR_ITERATIONS):
    """(positions, velocities relative): injector against stepper after one step."""
    (q_a, u_a), (q_b, u_b) = (one_step(path, fixed, h, how, friction, rest, iterations)
                              for how in ("injector", "stepper"))
    return np.abs(q_a - q_b).max(), np.abs(u_a - u_b).max() / np.abs(u_b).max()


R2D2_FRICTION = dict(viscous=0.7, coulomb=0.3, coulomb_negative=0.8)
R2D2_REST = (0, 4, 7)      # a wheel, the gripper's slide and the head start at rest


def test_friction_on_a_floating_body_steps_as_the_stepper_with_the_same_friction():
    """Floating r2d2 under random base forces and joint torques, viscous and asymmetric
    Coulomb friction on its eight joints, three of them at rest: pybullet with jointDamping
    and the injector's motors (levels by heading, at rest from the whole body's frictionless
    dynamics) = DynamicsStepper's friction impulses on the same floating body, to O(h²) —
    the gap of the base's integration (pybullet steps its world velocities, ours its body
    velocity): a hundredth for a tenth of the step, ≤ 1e-9 at 1e-5 s."""
    coarse, fine = (gap("r2d2.urdf", False, h, R2D2_FRICTION, R2D2_REST) for h in (1e-4, 1e-5))
    assert max(fine) <= 1e-9
    for a, b in zip(coarse, fine):
        assert 80 <= a / b <= 120
    # the step has joints sticking and slipping from rest; the friction moves it ≫ the gap
    _, u = one_step("r2d2.urdf", False, 1e-4, "injector", R2D2_FRICTION, R2D2_REST)
    _, free = one_step("r2d2.urdf", False, 1e-4, "injector", None, R2D2_REST)
    joints = u[7:]
    assert abs(joints[0]) <= 1e-15 and abs(joints[7]) > 1e-6
    assert np.abs(u - free).max() > 1e3 * coarse[1] * np.abs(u).max()


def test_pybullets_default_solver_leaves_the_motors_of_a_floating_body_unconverged():
    """With pybullet's default numNonContactInnerIterations=1 the injector warns, and the
    step is off DynamicsStepper's by O(h) (a tenth for a tenth of the step: an O(1) error in
    the acceleration), not O(h²)."""
    with pytest.warns(UserWarning, match="numNonContactInnerIterations=1 it does not converge"):
        coarse, fine = (gap("r2d2.urdf", False, h, R2D2_FRICTION, R2D2_REST, iterations=1) for h in (1e-4, 1e-5))
    assert 8 <= coarse[1] / fine[1] <= 12 and fine[1] > 1e-9


@pytest.mark.parametrize("fixed", [True, False])
def test_spherical_torques_and_base_forces_act_as_in_the_stepper(fixed):
    """The humanoid (8 spherical joints) with no friction under random forces in the
    multi-DOF layout: pybullet's step with the injector's torques (a spherical joint's in its
    child frame, the base's force at its centre of mass and moment in the world) = the
    stepper's — to rounding on a fixed base (both are semi-implicit Euler with the same
    exponential), to O(h²) on a floating one."""
    if fixed:
        assert max(gap("humanoid/humanoid.urdf", True, 1e-3)) <= 1e-12
        return
    coarse, fine = (gap("humanoid/humanoid.urdf", False, h) for h in (1e-4, 1e-5))
    assert max(fine) <= 1e-9
    for a, b in zip(coarse, fine):
        assert 80 <= a / b <= 120


def pybullet_level(c, body, joints, positive, negative, torques, spherical):
    """pybullet's own version of the law: each joint's level by its direction of motion, at
    rest (|q̇| ≤ RESTING_SPEED: pybullet's motor leaves a stopped joint at solver residue) by
    the direction pybullet's own frictionless step (motors at force 0) takes it."""
    from dyn_plugin.pybullet_friction import RESTING_SPEED

    velocities = np.array([s[1] for s in p.getJointStates(body, joints, physicsClientId=c)])
    velocities[np.abs(velocities) <= RESTING_SPEED] = 0.0
    if np.all(velocities != 0):
        return np.where(velocities > 0, positive, negative)
    state = p.saveState(physicsClientId=c)
    apply_native(c, body, joints, np.zeros(len(joints)), torques, spherical)
    p.stepSimulation(physicsClientId=c)
    trial = np.array([s[1] for s in p.getJointStates(body, joints, physicsClientId=c)])
    p.restoreState(state, physicsClientId=c)
    p.removeState(state, physicsClientId=c)
    heading = np.where(velocities != 0, velocities, trial)
    return np.where(heading > 0, positive, negative)


def apply_native(c, body, joints, level, torques, spherical):
    """Velocity motors at ``level`` and the torques, set by hand as a pybullet user would."""
    p.setJointMotorControlArray(body, joints, p.VELOCITY_CONTROL, targetVelocities=[0.0] * len(joints),
                                forces=list(level), physicsClientId=c)
    p.setJointMotorControlArray(body, joints, p.TORQUE_CONTROL, forces=list(torques), physicsClientId=c)
    for j in spherical:
        p.setJointMotorControlMultiDof(body, j, p.POSITION_CONTROL, targetPosition=[0, 0, 0, 1], positionGain=0,
                                       velocityGain=0, force=[0, 0, 0], physicsClientId=c)


def test_the_heading_at_rest_on_a_floating_humanoid_is_pybullets_own():
    """Floating humanoid, asymmetric Coulomb levels (1 and 4 N·m) on its elbows and knees,
    which start at rest under random torques: 60 steps of the injector = pybullet with
    jointDamping and motors set by hand, each level chosen by pybullet's own frictionless
    trial step.  Joints stick and slip; at rest the injector takes the direction from our
    forward dynamics of the whole body (floating base and spherical joints included)."""
    runs = []
    for how in ("injector", "native"):
        c = scene(1 / 240)
        body, moving = prepare(c, "humanoid/humanoid.urdf", False, rest=range(4))
        bd = dpb.body_dynamics(body, c)
        joints, spherical = bd.joint_indices, [j for j, k in bd.moving if bd.model.joint_types[k] == "spherical"]
        positive = np.array([1.0, 4.0, 1.0, 4.0])
        negative = 5.0 - positive
        levels = dict(zip((bd.model.joint_names[k] for k in bd.dof_to_model), zip(positive, negative)))
        friction = FrictionModel.create(bd.model, viscous={name: 0.3 for name in REVOLUTE},
                                        coulomb={name: levels[name][0] for name in REVOLUTE},
                                        coulomb_negative={name: levels[name][1] for name in REVOLUTE})
        rng = np.random.default_rng(7)
        injector = dpb.FrictionInjector(body, friction=friction, physicsClientId=c) if how == "injector" else None
        for j in joints:
            p.changeDynamics(body, j, jointDamping=0.3, physicsClientId=c)
        velocities = []
        for _ in range(60):
            torques = rng.uniform(-6, 6, 4)
            if injector is not None:
                forces = np.zeros(injector.layout.size)
                forces[[offset for k, offset, kind in injector.layout.entries if kind != "spherical"]] = torques
                injector.apply(list(forces))
            else:
                apply_native(c, body, joints, pybullet_level(c, body, joints, positive, negative, torques, spherical),
                             torques, spherical)
            p.stepSimulation(physicsClientId=c)
            velocities.append(multi_dof_state(c, body, moving)[1])
        runs.append(np.array(velocities))
        p.disconnect(physicsClientId=c)
    ours, theirs = runs
    assert np.abs(ours - theirs).max() <= 1e-12 * np.abs(theirs).max()
    revolute = theirs[:, [7 + 4 * 2, 7 + 4 * 4 + 1, 7 + 4 * 6 + 2, 7 + 4 * 8 + 3]]
    stuck = np.abs(revolute) <= 1e-12
    assert stuck.sum() >= 10 and (~stuck).sum() >= 10          # sticking and slipping phases
    assert np.all(np.isfinite(theirs))


@pytest.mark.parametrize("fixed", [True, False])
def test_friction_above_every_load_holds_the_revolute_joints_exactly(fixed):
    """Levels of 10⁴ N·m on the humanoid's elbows and knees (far above any load): over 1 s at
    1/240 s they stay at rest (|q̇| ≤ 1e-12) while its spherical joints and base move."""
    c = scene(1 / 240)
    try:
        body, moving = prepare(c, "humanoid/humanoid.urdf", fixed, rest=range(4))
        model = dpb.body_dynamics(body, c).model
        injector = dpb.FrictionInjector(body, physicsClientId=c,
                                        friction=FrictionModel.create(model, coulomb={n: 1e4 for n in REVOLUTE}))
        start = multi_dof_state(c, body, moving)
        for _ in range(240):
            injector.apply([0.0] * injector.layout.size)
            p.stepSimulation(physicsClientId=c)
        positions, velocities = multi_dof_state(c, body, moving)
        held = [s[1] for s in p.getJointStates(body, injector.dynamics.joint_indices, physicsClientId=c)]
        assert np.abs(held).max() <= 1e-12
        assert np.all(np.isfinite(positions)) and np.abs(np.subtract(positions, start[0])).max() > 0.1
    finally:
        p.disconnect(physicsClientId=c)


def energy_balance(h, duration=0.25):
    """Weightless floating humanoid, Coulomb 0.5 N·m and viscous 0.3 N·m·s/rad on its
    elbows and knees: (kinetic energy change with friction, dissipation Σ h (b_v q̇² +
    F |q̇|) over the steps, energy change of the same run without friction)."""
    changes, dissipated = [], 0.0
    for friction in (True, False):
        c = scene(h, gravity=(0, 0, 0))
        try:
            body, _ = prepare(c, "humanoid/humanoid.urdf", False)
            model = dpb.body_dynamics(body, c).model
            levels = FrictionModel.create(model, coulomb={n: 0.5 for n in REVOLUTE}, viscous={n: 0.3 for n in REVOLUTE})
            injector = dpb.FrictionInjector(body, physicsClientId=c, friction=levels if friction else "none")
            joints = injector.dynamics.joint_indices
            start = kinetic_energy(c, body)
            for _ in range(round(duration / h)):
                injector.apply([0.0] * injector.layout.size)
                p.stepSimulation(physicsClientId=c)
                qd = np.array([s[1] for s in p.getJointStates(body, joints, physicsClientId=c)])
                dissipated += friction * h * np.sum(0.5 * np.abs(qd) + 0.3 * qd ** 2)
            changes.append(kinetic_energy(c, body) - start)
        finally:
            p.disconnect(physicsClientId=c)
    return changes[0], dissipated, changes[1]


def test_energy_is_lost_at_the_rate_the_friction_dissipates():
    """Kinetic energy (from pybullet's own link velocities) of a weightless floating humanoid
    whose joints rub: its change = −∫ (b_v q̇² + F |q̇|) dt + the frictionless run's drift
    (pybullet's semi-implicit Euler gains energy at O(h)); what remains is O(h) too: it
    halves with the step, and is ≤ 2 % of the dissipation at 1/240 s (measured 0.94 %)."""
    residuals = []
    for h in (1 / 240, 1 / 480):
        change, dissipated, drift = energy_balance(h)
        assert change < 0 and dissipated > 0.02
        residuals.append(abs(change + dissipated - drift) / dissipated)
    assert residuals[0] <= 0.02 and 1.7 <= residuals[0] / residuals[1] <= 2.3


# -- what it refuses --------------------------------------------------------------------------


@pytest.fixture
def client():
    c = scene(1 / 240)
    yield c
    p.disconnect(physicsClientId=c)


def test_friction_on_a_spherical_joint_is_refused(client, tmp_path):
    humanoid = load(client, "humanoid/humanoid.urdf", False)
    model = dpb.body_dynamics(humanoid, client).model
    for friction in (FrictionModel.create(model, coulomb={"left_knee": 1.0, "neck": 0.2}),
                     FrictionModel.create(model, viscous=0.1)):          # a scalar gives every joint some
        with pytest.raises(dp.ModelError, match="gives spherical joint '(neck|chest)'.* a spherical joint gets none"):
            dpb.FrictionInjector(humanoid, friction=friction, physicsClientId=client)
    table = tmp_path / "humanoid_friction.toml"
    table.write_text('default_profile = "rubbing"\n[profiles.rubbing]\ncoulomb = {left_knee = 1.0, chest = 0.3}\n'
                     '[profiles.knees]\ncoulomb = {left_knee = 1.0, right_knee = 1.0}\n')
    with pytest.raises(dp.ModelError, match=r"'rubbing' gives spherical joint 'chest'.*coulomb = 0\.3"):
        dpb.FrictionInjector(humanoid, friction=str(table), physicsClientId=client)
    knees = dpb.FrictionInjector(humanoid, friction=str(table), profile="knees", physicsClientId=client)
    assert knees.friction.velocity.coulomb_positive[model.joint_names.index("right_knee")] == 1.0


def test_what_a_whole_body_injector_refuses(client):
    r2d2 = load(client, "r2d2.urdf", False)
    model = dpb.body_dynamics(r2d2, client).model
    bearing = FrictionModel.create(model, bearing=BearingFriction.create(model, {"head_swivel": "journal"}, 0.01,
                                                                                  radius=0.01))
    with pytest.raises(dp.ModelError, match="bearing or transmission friction.*joint reaction wrenches"):
        dpb.FrictionInjector(r2d2, friction=bearing, physicsClientId=client)
    lugre = FrictionModel.create(model.n, dynamic=Bristles.lugre(model.n, sigma0=1e4, coulomb=0.1, static=0.2))
    with pytest.raises(dp.InputError, match="law, which pybullet's velocity motors"):
        dpb.FrictionInjector(r2d2, friction=lugre, physicsClientId=client)
    injector = dpb.FrictionInjector(r2d2, friction=FrictionModel.create(model, coulomb=0.2), physicsClientId=client)
    size = injector.layout.size
    for forces, message in (([0.0] * (size - 1), f"must have length {size}"),
                            ([0.0] * 6 + [1.0] + [0.0] * (size - 7), r"objTorques\[6\] is a padding entry"),
                            ([np.nan] + [0.0] * (size - 1), r"non-finite entry \(NaN or inf\) at index 0")):
        with pytest.raises(dp.InputError, match=message):
            injector.apply(forces)
    p.stepSimulation(physicsClientId=client)
    position, orientation = p.getBasePositionAndOrientation(r2d2, physicsClientId=client)
    assert np.all(np.isfinite(position + orientation))
