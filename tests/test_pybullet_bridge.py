"""Drop-in pybullet functions: our dynamics behind pybullet's own signatures."""

import numpy as np
import pybullet_data
import pytest

import dyn_plugin as dp
from dyn_plugin import pybullet_bridge as dpb
from dyn_plugin.backends.pybullet_backend import c_level_output_silenced, import_pybullet
from dyn_plugin.backends.registry import backends
from dyn_plugin.robots import robot_path

p = import_pybullet()
ROBOTS = [str(robot_path(name)) for name in dp.list_robots()] + \
    [f"{pybullet_data.getDataPath()}/kuka_iiwa/model.urdf", f"{pybullet_data.getDataPath()}/franka_panda/panda.urdf"]


@pytest.fixture(scope="module")
def scene():
    """One client holding every test robot side by side, gravity on."""
    client = p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    bodies = []
    with c_level_output_silenced():
        for k, path in enumerate(ROBOTS):
            bodies.append(p.loadURDF(path, basePosition=[2.0 * k, 0, 0], useFixedBase=True,
                                     flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client))
    yield client, bodies
    p.disconnect(physicsClientId=client)


def dof(client, body):
    return [j for j in range(p.getNumJoints(body, physicsClientId=client))
            if p.getJointInfo(body, j, physicsClientId=client)[2] in (p.JOINT_REVOLUTE, p.JOINT_PRISMATIC)]


def rel(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    return float(np.max(np.abs(ours - theirs) / np.maximum(1.0, np.abs(theirs))))


@pytest.mark.parametrize("index", range(len(ROBOTS)), ids=[path.split("/")[-1] for path in ROBOTS])
def test_drop_in_functions_equal_pybullets(scene, index):
    client, bodies = scene
    body = bodies[index]
    n = len(dof(client, body))
    rng = np.random.default_rng(index)
    for _ in range(10):
        q, qd, qdd = (rng.uniform(-1.5, 1.5, n).tolist() for _ in range(3))
        ours = dpb.calculateInverseDynamics(body, q, qd, qdd, physicsClientId=client)
        theirs = p.calculateInverseDynamics(body, q, qd, qdd, physicsClientId=client)
        assert type(ours) is type(theirs) and all(type(v) is float for v in ours)
        assert rel(ours, theirs) <= 1e-9
        M, M_pb = (dpb.calculateMassMatrix(body, q, physicsClientId=client),
                   p.calculateMassMatrix(body, q, physicsClientId=client))
        assert type(M) is type(M_pb) and type(M[0]) is type(M_pb[0]) and len(M) == n
        assert rel(M, M_pb) <= 1e-9
    # numpy arrays are accepted and give the same numbers
    assert dpb.calculateInverseDynamics(body, np.array(q), np.array(qd), np.array(qdd), physicsClientId=client) == ours


def test_what_pybullet_lacks_is_consistent(scene):
    client, bodies = scene
    body = bodies[-1]  # panda: fixed joints inside, fingers prismatic
    n = len(dof(client, body))
    rng = np.random.default_rng(1)
    q, qd, tau = (rng.uniform(-1, 1, n).tolist() for _ in range(3))
    zero = [0.0] * n
    assert rel(dpb.calculateGravity(body, q, physicsClientId=client),
               p.calculateInverseDynamics(body, q, zero, zero, physicsClientId=client)) <= 1e-9
    assert rel(dpb.calculateBiasForces(body, q, qd, physicsClientId=client),
               p.calculateInverseDynamics(body, q, qd, zero, physicsClientId=client)) <= 1e-9
    qdd = dpb.calculateForwardDynamics(body, q, qd, tau, physicsClientId=client)
    assert rel(p.calculateInverseDynamics(body, q, qd, list(qdd), physicsClientId=client), tau) <= 1e-9
    C = np.array(dpb.calculateCoriolisMatrix(body, q, qd, physicsClientId=client))
    velocity_terms = np.subtract(p.calculateInverseDynamics(body, q, qd, zero, physicsClientId=client),
                                 p.calculateInverseDynamics(body, q, zero, zero, physicsClientId=client))
    assert rel(C @ qd, velocity_terms) <= 1e-9


def test_any_registered_backend_and_several_clients(scene):
    client, bodies = scene
    other = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -9.81, physicsClientId=other)
        with c_level_output_silenced():
            body = p.loadURDF(ROBOTS[0], useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=other)
        q, qd, qdd = [0.3] * 6, [0.2] * 6, [0.1] * 6
        reference = p.calculateInverseDynamics(body, q, qd, qdd, physicsClientId=other)
        for backend in backends(cannot=("friction",)):   # friction would add to pybullet's rigid τ
            assert rel(dpb.calculateInverseDynamics(body, q, qd, qdd, physicsClientId=other, backend=backend),
                       reference) <= 1e-9
        assert dpb.body_dynamics(body, other) is not dpb.body_dynamics(bodies[0], client)
    finally:
        p.disconnect(physicsClientId=other)


def test_gravity_follows_the_base_orientation(scene):
    """A base turned upside down feels gravity reversed in its own frame."""
    client = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -9.81, physicsClientId=client)
        with c_level_output_silenced():
            body = p.loadURDF(ROBOTS[0], useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE,
                              baseOrientation=p.getQuaternionFromEuler([np.pi, 0, 0]), physicsClientId=client)
        q = [0.1, -0.4, 0.3, 0.2, 0.5, -0.1]
        flipped = np.array(dpb.calculateGravity(body, q, physicsClientId=client))
        upright = dp.get_backend("newton_euler", dp.load_robot("puma560"), gravity=[0, 0, 9.81]).gravity_torques(q)
        assert rel(flipped, upright) <= 1e-12
    finally:
        p.disconnect(physicsClientId=client)


def test_bad_input_names_the_body_and_the_expected_length(scene, tmp_path):
    client, bodies = scene
    with pytest.raises(dp.InputError, match="pybullet body 999"):
        dpb.calculateMassMatrix(999, [0.0] * 6, physicsClientId=client)
    with pytest.raises(dp.InputError, match=r"body \d+ \(robot 'puma560', base link '\w+', client \d+\) has 6 revolute or prismatic joints: "
                       r"objPositions must have length 6"):
        dpb.calculateInverseDynamics(bodies[0], [0.0] * 5, [0.0] * 6, [0.0] * 6, physicsClientId=client)
    with pytest.raises(dp.InputError, match="objVelocities must be 6 numbers"):
        dpb.calculateInverseDynamics(bodies[0], [0.0] * 6, ["a"] * 6, [0.0] * 6, physicsClientId=client)
    ball = tmp_path / "ball.urdf"
    ball.write_text("""<robot name="ball"><link name="a"><inertial><mass value="1"/>
      <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="j" type="spherical"><parent link="a"/><child link="b"/></joint></robot>""")
    with c_level_output_silenced():
        body = p.loadURDF(str(ball), useFixedBase=True, physicsClientId=client)
    with pytest.raises(dp.InputError, match="has spherical joints \\('j'\\); flags=0 .* call with flags=1"):
        dpb.calculateMassMatrix(body, [0.0] * 3, physicsClientId=client)
    assert np.array(dpb.calculateMassMatrix(body, [0.0] * 7 + [0, 0, 0, 1], 1, client)).shape == (11, 11)


@pytest.fixture
def stepping_scene():
    """A fresh client at dt = 1e-3 with two PUMA-560s far apart, the second a fair reference."""
    from dyn_plugin.backends.pybullet_backend import configure_reference_body

    client = p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    p.setPhysicsEngineParameter(fixedTimeStep=1e-3, numSolverIterations=1000, numNonContactInnerIterations=1000,
                                physicsClientId=client)
    with c_level_output_silenced():
        ours, native = (p.loadURDF(ROBOTS[0], basePosition=[3.0 * k, 0, 0], useFixedBase=True,
                                   flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client) for k in range(2))
    configure_reference_body(p, native, [0, 0, -9.81], client)
    q0, qd0 = [0.3, -0.5, 0.4, 0.1, 0.6, -0.2], [0.5, -0.4, 0.3, 0.6, -0.5, 0.7]
    for body in (ours, native):
        for j in range(6):
            p.resetJointState(body, j, q0[j], qd0[j], physicsClientId=client)
    yield client, ours, native, np.array(q0), np.array(qd0)
    p.disconnect(physicsClientId=client)


def joint_positions(client, body):
    return np.array([s[0] for s in p.getJointStates(body, range(6), physicsClientId=client)])


def test_stepper_without_friction_reproduces_pybullets_own_stepping(stepping_scene):
    client, ours, native, _, _ = stepping_scene
    stepper = dpb.DynamicsStepper(ours, backend="newton_euler", physicsClientId=client)
    worst = 0.0
    for k in range(1000):
        torque = [2.0 * np.sin(0.01 * k), 0.0, 1.0, 0.0, 0.0, 0.0]
        p.setJointMotorControlArray(native, range(6), p.TORQUE_CONTROL, forces=torque, physicsClientId=client)
        q, _ = stepper.step(torque)                      # steps the whole scene, native body included
        worst = max(worst, np.abs(np.subtract(q, joint_positions(client, native))).max())
    assert np.allclose(joint_positions(client, ours), q, rtol=0, atol=0)   # the state was written back
    assert worst <= 1e-8
    assert np.abs(np.subtract(q, [0.3, -0.5, 0.4, 0.1, 0.6, -0.2])).max() > 0.5   # it really moved


def test_friction_injector_equals_our_stick_slip_simulation(stepping_scene):
    """pybullet integrating with our friction injected = simulate() with the friction backend."""
    client, body, _, q0, qd0 = stepping_scene
    friction = dp.FrictionModel.create(6, viscous=[1, 1, 1, 0.1, 0.1, 0.1], coulomb=[5, 5, 3, 0.5, 0.4, 0.3])
    from dyn_plugin.backends.pybullet_backend import configure_reference_body

    configure_reference_body(p, body, [0, 0, -9.81], client)
    injector = dpb.FrictionInjector(body, friction=friction, physicsClientId=client)
    model = dp.load_robot("puma560")
    backend = dp.get_backend("newton_euler_friction", model, friction=friction)
    amplitude = np.array([3, 3, 3, 0.01, 0.01, 0.01])
    torque = lambda t, q, qd: backend.gravity_torques(q) + amplitude * np.sin(5 * t)  # noqa: E731
    expected = dp.simulate(backend, q0, qd0, torque, duration=0.5, dt=1e-3, on_limit="ignore")
    for k in range(500):
        states = p.getJointStates(body, range(6), physicsClientId=client)
        injector.apply(torque(k * 1e-3, np.array([s[0] for s in states]), np.array([s[1] for s in states])))
        p.stepSimulation(physicsClientId=client)
        assert np.abs(joint_positions(client, body) - expected.q[k + 1]).max() <= 1e-8
    stuck = (expected.qd[1:] == 0)
    assert stuck.any() and (~stuck).any()                 # the run has sticking and sliding phases


def test_bundled_robot_bodies_get_their_friction_data_and_changes_are_seen():
    client = p.connect(p.DIRECT)
    try:
        with c_level_output_silenced():
            body = p.loadURDF(ROBOTS[0], useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
        with pytest.warns(UserWarning, match="armature"):
            assert dpb.FrictionInjector(body, physicsClientId=client).friction.name == "corke"
        stepper = dpb.DynamicsStepper(body, physicsClientId=client, profile="dhanaraj")
        assert stepper.backend.friction.name == "dhanaraj"
        q = [0.1] * 6
        p.changeDynamics(body, 5, localInertiaDiagonal=[1.5e-4, 1.5e-4, 2e-4], physicsClientId=client)
        assert rel(dpb.calculateMassMatrix(body, q, physicsClientId=client),
                   p.calculateMassMatrix(body, q, physicsClientId=client)) <= 1e-12
    finally:
        p.disconnect(physicsClientId=client)


def test_non_finite_input_is_named_in_pybullets_terms(scene):
    client, bodies = scene
    with pytest.raises(dp.InputError, match=r"objVelocities has a non-finite entry \(NaN or inf\) at index 2"):
        dpb.calculateInverseDynamics(bodies[0], [0.0] * 6, [0, 0, np.nan, 0, 0, 0], [0.0] * 6, physicsClientId=client)


def test_friction_injector_holds_a_joint_whose_levels_differ_by_direction():
    """The bundled PUMA-560 friction (Corke: joint 2 holds 13.59 N·m forward, 7.66 backward)
    with 10 N·m more than gravity on joint 2: it must stick.  pybullet's velocity motor leaves
    a stopped joint at −7.7e-14 rad/s, whose sign picked the backward level: joint 2 slipped
    2.75e-3 rad in 1 s, its velocity changing sign on 239 of 240 steps.  At rest below
    RESTING_SPEED the level is that of the joint's frictionless acceleration."""
    from dyn_plugin.backends.pybullet_backend import configure_reference_body

    p = import_pybullet()
    q0 = [0.0, 0.6, -0.4, 0.0, 0.3, 0.0]
    client = p.connect(p.DIRECT)
    try:
        with c_level_output_silenced():
            body = p.loadURDF(str(robot_path("puma560")), useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE,
                              physicsClientId=client)
        configure_reference_body(p, body, [0, 0, -9.81], client)
        p.setPhysicsEngineParameter(numNonContactInnerIterations=10, physicsClientId=client)
        for j, value in enumerate(q0):
            p.resetJointState(body, j, value, 0.0, physicsClientId=client)
        with pytest.warns(UserWarning, match="no rotor inertia"):      # Corke's armature: not in pybullet's body
            injector = dpb.FrictionInjector(body, physicsClientId=client)
        levels = injector.friction.levels(np.zeros(6))
        assert levels[0][1] == 13.59 and levels[1][1] == 7.66      # forward, backward (corke)
        tau = np.array(dpb.calculateGravity(body, q0, physicsClientId=client))
        tau[1] += 10.0
        for _ in range(240):
            injector.apply(tau)
            p.stepSimulation(physicsClientId=client)
        q = [state[0] for state in p.getJointStates(body, range(6), physicsClientId=client)]
        assert abs(q[1] - q0[1]) <= 1e-9
    finally:
        p.disconnect(physicsClientId=client)


def test_friction_injector_follows_the_scene():
    """Dhanaraj's PUMA-560 profile (bearings and transmission: friction of the joint loads).
    An injector made before setGravity kept the old loads (sent −1.03, 0.11, −0.06 N·m
    where the breakdown at g = −9.81 gives −11.66, 21.37, −1.12); a body removed and replaced
    by another at the same id got PUMA friction motors.  Now it follows the scene's gravity,
    and refuses another body."""
    from dyn_plugin.backends.pybullet_backend import configure_reference_body

    p = import_pybullet()
    q0, qd0 = [0.0, 0.6, -0.4, 0.0, 0.3, 0.0], [0.5, -0.4, 0.3, 0.2, 0.1, 0.1]
    client = p.connect(p.DIRECT)
    try:
        with c_level_output_silenced():
            body = p.loadURDF(str(robot_path("puma560")), useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE,
                              physicsClientId=client)
        configure_reference_body(p, body, [0, 0, 0], client)
        for j in range(6):
            p.resetJointState(body, j, q0[j], qd0[j], physicsClientId=client)
        with pytest.warns(UserWarning, match="no rotor inertia"):
            injector = dpb.FrictionInjector(body, physicsClientId=client, profile="dhanaraj")
        p.setGravity(0, 0, -9.81, physicsClientId=client)
        sent = {}
        original = p.setJointMotorControlArray

        def record(*args, **kwargs):
            if args[2] == p.TORQUE_CONTROL:
                sent["tau"] = np.array(kwargs["forces"])
            return original(*args, **kwargs)
        p.setJointMotorControlArray = record
        try:
            injector.apply([0.0] * 6)
        finally:
            p.setJointMotorControlArray = original
        reference = dp.get_backend("newton_euler_friction", dp.load_robot("puma560"), profile="dhanaraj")
        parts = reference.inverse_dynamics_breakdown(np.array(q0), np.array(qd0), np.zeros(6))
        expected = -(parts.bearing + parts.transmission - np.sign(qd0) * reference.friction.transmission.breakaway)
        assert np.abs(sent["tau"] - expected).max() <= 1e-9 * np.abs(expected).max()
        p.removeBody(body, physicsClientId=client)
        with c_level_output_silenced():
            p.loadURDF(pybullet_data.getDataPath() + "/kuka_iiwa/model.urdf", useFixedBase=True, physicsClientId=client)
        with pytest.raises(dp.InputError, match="is not the body this injector was made for"):
            injector.apply([0.0] * 7)
    finally:
        p.disconnect(physicsClientId=client)
