"""Drop-in pybullet functions: our dynamics behind pybullet's own signatures."""

import numpy as np
import pybullet_data
import pytest

import dyn_plugin as dp
from dyn_plugin import pybullet_bridge as dpb
from dyn_plugin.backends.pybullet_backend import c_level_output_silenced, import_pybullet
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
        for backend in ("newton_euler", "lagrange_euler", "pinocchio"):
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
    with pytest.raises(dp.InputError, match=r"body \d+ \(puma560\) has 6 degrees of freedom: objPositions must have length 6"):
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
    with pytest.raises(dp.InputError, match="spherical or planar"):
        dpb.calculateMassMatrix(body, [0.0] * 3, physicsClientId=client)
