"""pybullet as a floating-base reference, and floating bodies in the pybullet bridge.

The conventions held here are stated in dyn_plugin/backends/pybullet_backend.py (module
docstring); each test below fails if pybullet's coordinates are read otherwise.
"""

import numpy as np
import pybullet_data
import pytest

import dyn_plugin as dp
from dyn_plugin import configuration, floating
from dyn_plugin import pybullet_bridge as dpb
from dyn_plugin.backends.pybullet_backend import c_level_output_silenced, import_pybullet

p = import_pybullet()
R2D2 = f"{pybullet_data.getDataPath()}/r2d2.urdf"


def rel(ours, theirs):
    """Largest difference relative to the reference's largest entry."""
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


def random_states(model, rng, count, speed=2.0):
    base_q, base_v, base_a = floating.random_base_states(rng, count, speed, 3.0)
    return (np.concatenate([base_q, rng.uniform(-1.5, 1.5, (count, model.n))], axis=1),
            np.concatenate([base_v, rng.uniform(-speed, speed, (count, model.n))], axis=1),
            np.concatenate([base_a, rng.uniform(-3, 3, (count, model.n))], axis=1))


@pytest.fixture(scope="module")
def r2d2():
    model = dp.load_robot(R2D2, floating_base=True)
    return model, dp.get_backend("pinocchio", model), dp.get_backend("pybullet", model)


# -- the reference backend --------------------------------------------------------------------


def test_reference_agrees_with_pinocchio_on_a_floating_r2d2(r2d2):
    model, pin, pb = r2d2
    assert type(pb).can("floating_base") and pb.base is not None
    q, v, a = random_states(model, np.random.default_rng(0), 10)
    tau = np.random.default_rng(1).uniform(-5, 5, (10, model.nv))
    assert pb.mass_matrix(q).shape == (10, model.nv, model.nv)
    for M_pb, M_pin in zip(pb.mass_matrix(q), pin.mass_matrix(q)):
        assert rel(M_pb, M_pin) <= 1e-9
    for ours, theirs in ((pb.inverse_dynamics(q, v, a), pin.inverse_dynamics(q, v, a)),
                         (pb.gravity_torques(q), pin.gravity_torques(q)),
                         (pb.bias_forces(q, v), pin.bias_forces(q, v)),
                         (pb.forward_dynamics(q, v, tau), pin.forward_dynamics(q, v, tau))):
        for x, y in zip(ours, theirs):
            assert rel(x, y) <= 1e-9


def test_reference_on_a_random_tree_with_a_turned_inertial_frame(tmp_path):
    """A base whose centre of mass is off its origin and whose inertial frame is turned,
    held against pinocchio on the inertias pybullet simulates (it diagonalises them)."""
    from urdf_factory import random_tree_urdf

    from dyn_plugin.backends.pybullet_diagnostics import pybullet_model

    path = tmp_path / "tree.urdf"
    path.write_text(random_tree_urdf(np.random.default_rng(3), 7))
    model = dp.load_robot(path, floating_base=True)
    pb = dp.get_backend("pybullet", model)
    assert np.abs(pb.base.com).max() > 0.05 and np.abs(pb.base.rotation - np.eye(3)).max() > 0.5
    simulated = pybullet_model(model)
    pin = dp.get_backend("pinocchio", (simulated or model).with_floating_base(True))
    q, v, a = random_states(model, np.random.default_rng(4), 5)
    for M_pb, M_pin in zip(pb.mass_matrix(q), pin.mass_matrix(q)):
        assert rel(M_pb, M_pin) <= 1e-9
    for x, y in zip(pb.inverse_dynamics(q, v, a), pin.inverse_dynamics(q, v, a)):
        assert rel(x, y) <= 1e-9


def test_pybullets_own_gravity_on_a_turned_floating_base_is_the_documented_wrong_one(tmp_path):
    """Why the backend passes the identity orientation: pybullet applies (R_x R_y R_z)ᵀ g
    for a base at R = R_z R_y R_x (roll x, pitch y, yaw z), not Rᵀ g."""
    path = tmp_path / "box.urdf"
    path.write_text('<robot name="box"><link name="base"><inertial><mass value="2"/>'
                    '<inertia ixx="1" iyy="2" izz="3" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>')
    client = p.connect(p.DIRECT)
    try:
        body = p.loadURDF(str(path), flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
        g = np.array([0.3, -1.2, -9.81])
        p.setGravity(*g, physicsClientId=client)
        roll, pitch, yaw = 0.4, -0.7, 1.1
        quaternion = p.getQuaternionFromEuler([roll, pitch, yaw])
        force = np.array(p.calculateInverseDynamics(body, [0, 0, 0, *quaternion], [0.0] * 6, [0.0] * 6,
                                                    physicsClientId=client))[0:3]
        R = np.array(p.getMatrixFromQuaternion(quaternion)).reshape(3, 3)
        c, s = np.cos, np.sin
        Rx = np.array([[1, 0, 0], [0, c(roll), -s(roll)], [0, s(roll), c(roll)]])
        Ry = np.array([[c(pitch), 0, s(pitch)], [0, 1, 0], [-s(pitch), 0, c(pitch)]])
        Rz = np.array([[c(yaw), -s(yaw), 0], [s(yaw), c(yaw), 0], [0, 0, 1]])
        assert rel(R, Rz @ Ry @ Rx) <= 1e-12
        assert rel(force, -2.0 * (Rx @ Ry @ Rz).T @ g) <= 1e-12        # what pybullet does
        assert np.abs(force + 2.0 * R.T @ g).max() > 1.0               # not the physics
    finally:
        p.disconnect(physicsClientId=client)


def test_one_pybullet_step_is_bullets_scheme_in_our_coordinates(r2d2):
    """pybullet's step (base wrench and joint torques applied) is PybulletBase.bullet_step
    of pinocchio's acceleration to round-off; acceleration_of_step recovers that
    acceleration, where (v⁺ − v)/dt is off by O(dt) on the base's linear entries."""
    model, pin, pb = r2d2
    rng = np.random.default_rng(5)
    q, v, _ = random_states(model, rng, 10)
    tau = rng.uniform(-3, 3, (10, model.nv))
    dt = 1e-3
    q_next, v_next = pb.step(q, v, tau, dt)
    a = pin.forward_dynamics(q, v, tau)
    q_bullet, v_bullet = pb.base.bullet_step(q, v, a, dt)
    assert np.abs(q_next - q_bullet).max() <= 1e-12 and np.abs(v_next - v_bullet).max() <= 1e-12
    assert rel(pb.base.acceleration_of_step(q, v, q_next, v_next, dt), a) <= 1e-9
    assert rel((v_next - v) / dt, a) > 1e-5
    # our semi-implicit Euler turns the base and moves the joints exactly as pybullet does
    v_ours = v + dt * a
    q_ours = configuration.integrate(model, q, dt * v_ours)
    assert np.abs(q_next[:, 3:] - q_ours[:, 3:]).max() <= 1e-12
    assert np.abs(v_next[:, 3:] - v_ours[:, 3:]).max() <= 1e-12


@pytest.mark.parametrize("g", [0.0, -9.81])
def test_free_floating_rollout_against_ours(r2d2, g):
    """0.2 s of r2d2 floating freely from a random state, zero joint torques: pybullet's
    trajectory is Bullet's scheme to round-off; ours turns and bends the robot identically,
    and its base translation differs by a first-order term (half the step, half the gap)."""
    model, _, _ = r2d2
    model = model.with_gravity(np.array([0.0, 0.0, g]))
    pin, pb = dp.get_backend("pinocchio", model), dp.get_backend("pybullet", model)
    q0, v0, _ = random_states(model, np.random.default_rng(2), 1, speed=1.0)
    zero = np.zeros(model.nv)

    def ours(dt, bullet=False):
        q, v = q0.copy(), v0.copy()
        for _ in range(int(round(0.2 / dt))):
            a = pin.forward_dynamics(q, v, zero[None])
            if bullet:
                q, v = pb.base.bullet_step(q, v, a, dt)
            else:
                v = v + dt * a
                q = configuration.integrate(model, q, dt * v)
        return q[0], v[0]

    gaps = []
    for dt in (2e-3, 1e-3):
        q_pb, v_pb = pb.rollout(q0[0], v0[0], lambda t, q, v: zero, int(round(0.2 / dt)), dt)
        q_bullet, v_bullet = ours(dt, bullet=True)
        assert np.abs(q_pb[-1] - q_bullet).max() <= 1e-12 and np.abs(v_pb[-1] - v_bullet).max() <= 1e-11
        q_ours, v_ours = ours(dt)
        assert np.abs(q_pb[-1, 3:] - q_ours[3:]).max() <= 1e-12 and np.abs(v_pb[-1, 3:] - v_ours[3:]).max() <= 1e-11
        gaps.append(np.abs(q_pb[-1, :3] - q_ours[:3]).max())
    assert gaps[1] > 1e-6 and 1.9 <= gaps[0] / gaps[1] <= 2.1


def test_pybullets_trajectory_takes_uniform_gravity_exactly(r2d2):
    """Bullet adds dt g to the world velocity of the base's centre of mass, so its linear
    momentum (read through our conversion) under gravity is the weightless run's plus
    m g t to round-off; our body-frame update is off by O(dt) there."""
    model, _, _ = r2d2
    q0, v0, _ = random_states(model, np.random.default_rng(2), 1, speed=1.0)
    zero, dt, steps = np.zeros(model.nv), 1e-3, 200
    momenta, ours = [], []
    for g in (0.0, -9.81):
        m = model.with_gravity(np.array([0.0, 0.0, g]))
        pin, pb = dp.get_backend("pinocchio", m), dp.get_backend("pybullet", m)
        q, v = pb.rollout(q0[0], v0[0], lambda t, q, v: zero, steps, dt)
        momenta.append(floating.momentum(pin, q[-1:], v[-1:])[0, :3])
        q, v = q0, v0
        for _ in range(steps):
            v = v + dt * pin.forward_dynamics(q, v, zero[None])
            q = configuration.integrate(m, q, dt * v)
        ours.append(floating.momentum(pin, q, v)[0, :3])
    weight = model.total_mass() * np.array([0.0, 0.0, -9.81]) * steps * dt
    assert rel(momenta[1] - momenta[0], weight) <= 1e-12
    assert rel(ours[1] - ours[0], weight) > 1e-5


def test_a_massless_base_cannot_float_in_pybullet(tmp_path):
    path = tmp_path / "massless.urdf"
    path.write_text('<robot name="m"><link name="base"><inertial><mass value="0"/>'
                    '<inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>'
                    '<link name="arm"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" '
                    'iyz="0"/></inertial></link><joint name="j" type="continuous"><parent link="base"/>'
                    '<child link="arm"/><axis xyz="0 0 1"/></joint></robot>')
    with pytest.raises(dp.BackendError, match="mass 0.*fixes"):
        dp.get_backend("pybullet", dp.load_robot(path, floating_base=True))


# -- the bridge on a floating body ------------------------------------------------------------


@pytest.fixture(scope="module")
def floating_scene():
    client = p.connect(p.DIRECT)
    with c_level_output_silenced():
        body = p.loadURDF(R2D2, basePosition=[0.3, -0.2, 1.0], flags=p.URDF_USE_INERTIA_FROM_FILE,
                          baseOrientation=p.getQuaternionFromEuler([0.3, -0.5, 1.1]), physicsClientId=client)
    yield client, body
    p.disconnect(physicsClientId=client)


def dof(client, body):
    return sum(p.getJointInfo(body, j, physicsClientId=client)[2] in (p.JOINT_REVOLUTE, p.JOINT_PRISMATIC)
               for j in range(p.getNumJoints(body, physicsClientId=client)))


def test_bridge_mass_matrix_of_a_floating_body_is_pybullets(floating_scene):
    client, body = floating_scene
    n = dof(client, body)
    assert dpb.body_dynamics(body, client).model.floating_base
    for q in np.random.default_rng(0).uniform(-1.5, 1.5, (5, n)).tolist():
        ours, theirs = (dpb.calculateMassMatrix(body, q, physicsClientId=client),
                        p.calculateMassMatrix(body, q, physicsClientId=client))
        assert type(ours) is type(theirs) and type(ours[0]) is type(theirs[0]) and len(ours) == n + 6
        assert rel(ours, theirs) <= 1e-9


def test_bridge_inverse_dynamics_of_a_floating_body(floating_scene):
    """pybullet's own answer where it is right (no gravity, or a base turned about z only),
    and pybullet's at the identity orientation with gravity set in the base's inertial frame
    (its correct form) on a base turned about all three axes."""
    client, body = floating_scene
    n = dof(client, body)
    rng = np.random.default_rng(1)
    position, turned = p.getBasePositionAndOrientation(body, physicsClientId=client)
    about_z = p.getQuaternionFromEuler([0, 0, 0.8])
    g = np.array([0.0, 0.0, -9.81])
    try:
        for gravity, orientation in (([0, 0, 0], turned), (g, about_z)):
            p.setGravity(*gravity, physicsClientId=client)
            for _ in range(3):
                q = [*position, *orientation, *rng.uniform(-1, 1, n)]
                u, du = rng.uniform(-1, 1, n + 6).tolist(), rng.uniform(-1, 1, n + 6).tolist()
                ours = dpb.calculateInverseDynamics(body, q, u, du, physicsClientId=client)
                assert type(ours) is tuple and len(ours) == n + 6
                assert rel(ours, p.calculateInverseDynamics(body, q, u, du, physicsClientId=client)) <= 1e-9
                assert rel(dpb.calculateForwardDynamics(body, q, u, list(ours), physicsClientId=client), du) <= 1e-9
        p.setGravity(*g, physicsClientId=client)
        q = [*position, *turned, *rng.uniform(-1, 1, n)]
        u, du = rng.uniform(-1, 1, n + 6).tolist(), rng.uniform(-1, 1, n + 6).tolist()
        ours = dpb.calculateInverseDynamics(body, q, u, du, physicsClientId=client)
        weight = dpb.calculateGravity(body, q, physicsClientId=client)
        assert rel(dpb.calculateBiasForces(body, q, u, physicsClientId=client),
                   dpb.calculateInverseDynamics(body, q, u, [0.0] * (n + 6), physicsClientId=client)) <= 1e-12
        inertial = np.array(p.getMatrixFromQuaternion(turned)).reshape(3, 3)    # the inertial frame in the world
        p.setGravity(*(inertial.T @ g), physicsClientId=client)
        at_rest = [0, 0, 0, 0, 0, 0, 1, *q[7:]]
        assert rel(ours, p.calculateInverseDynamics(body, at_rest, u, du, physicsClientId=client)) <= 1e-9
        assert rel(weight, p.calculateInverseDynamics(body, at_rest, [0.0] * (n + 6), [0.0] * (n + 6),
                                                      physicsClientId=client)) <= 1e-9
    finally:
        p.setGravity(0, 0, 0, physicsClientId=client)


def test_bridge_refuses_what_it_cannot_do_for_a_floating_body(floating_scene):
    client, body = floating_scene
    n = dof(client, body)
    with pytest.raises(dp.InputError, match=r"floating base and 8 joints: objPositions must have length 15"):
        dpb.calculateInverseDynamics(body, [0.0] * n, [0.0] * (n + 6), [0.0] * (n + 6), physicsClientId=client)
    with pytest.raises(dp.InputError, match=r"objPositions\[3:7\] must be a unit quaternion"):
        dpb.calculateGravity(body, [0.0] * (n + 7), physicsClientId=client)
    with pytest.raises(dp.InputError, match="has a floating base.*call with flags=1"):
        dpb.calculateCoriolisMatrix(body, [0.0] * n, [0.0] * n, physicsClientId=client)


def test_bridge_tells_a_fixed_base_by_its_mass(tmp_path):
    """pybullet fixes a base of mass 0 even without useFixedBase: such a body stays fixed here."""
    path = tmp_path / "massless.urdf"
    path.write_text('<robot name="m"><link name="base"><inertial><mass value="0"/>'
                    '<inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>'
                    '<link name="arm"><inertial><origin xyz="0.2 0 0"/><mass value="1"/><inertia ixx="1" iyy="1" '
                    'izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j" type="continuous">'
                    '<parent link="base"/><child link="arm"/><axis xyz="0 0 1"/></joint></robot>')
    client = p.connect(p.DIRECT)
    try:
        body = p.loadURDF(str(path), flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
        assert not dpb.body_dynamics(body, client).model.floating_base
        assert rel(dpb.calculateMassMatrix(body, [0.3], physicsClientId=client),
                   p.calculateMassMatrix(body, [0.3], physicsClientId=client)) <= 1e-12
    finally:
        p.disconnect(physicsClientId=client)
