"""The drop-ins in pybullet's multi-DOF layout (flags=1) and calculateJacobian, against
physical oracles from pybullet's own kinematics: the kinetic energy of its link velocities
(getLinkState with computeLinkVelocity), its semi-implicit Euler step (u⁺ = u + h u̇, which
our inverse dynamics must explain with zero torque) and finite differences of its link poses."""

import re

import numpy as np
import pybullet_data
import pytest
from scipy.spatial.transform import Rotation

import dyn_plugin as dp
from dyn_plugin import pybullet_bridge as dpb
from dyn_plugin.backends.pybullet_backend import c_level_output_silenced, import_pybullet
from dyn_plugin.pybullet_jacobian import calculateJacobian
from urdf_factory import random_tree_urdf

p = import_pybullet()
DATA = pybullet_data.getDataPath()


@pytest.fixture
def client():
    c = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(DATA, physicsClientId=c)
    yield c
    p.disconnect(physicsClientId=c)


def unit_axes(text: str) -> str:
    """The URDF with every joint axis scaled to unit length: pybullet keeps a non-unit axis as
    written and its link velocities and its step then scale with it (see
    test_a_non_unit_axis_turns_pybullets_step_and_link_velocities_not_ours)."""
    def unit(match):
        axis = np.array(match.group(1).split(), dtype=float)
        return '<axis xyz="{} {} {}"/>'.format(*(axis / np.linalg.norm(axis)))
    return re.sub(r'<axis xyz="([^"]*)"\s*/>', unit, text)


def load(c, path, fixed, tmp_path=None, rng=None, **kw):
    """Load a file of pybullet_data, or ``"random"``: a tree of tests/urdf_factory.py (with
    spherical joints unless ``spherical=False``; axes made unit: :func:`unit_axes`).  Its
    elements are written in a shuffled order, which pybullet's URDF_MAINTAIN_LINK_ORDER
    cannot take (pybullet 3.2.7 crashes: segmentation fault), so random trees load without it."""
    order = p.URDF_MAINTAIN_LINK_ORDER
    if path == "random":
        file = tmp_path / f"tree{rng.integers(1 << 30)}.urdf"
        multi_dof = ("spherical",) if kw.pop("spherical", True) else ()
        file.write_text(unit_axes(random_tree_urdf(rng, 6, multi_dof=multi_dof, name="tree")))
        path, order = str(file), 0
    with c_level_output_silenced():
        return p.loadURDF(path, [0.1, 0.2, 1.0], [0.1, 0.3, -0.2, 0.9], useFixedBase=fixed,
                          flags=order | p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=c, **kw)


def unit(x):
    return x / np.linalg.norm(x)


def set_random_state(c, body, rng, fixed):
    """A random state (joints inside their limits); returns the moving joints' indices."""
    moving = []
    p.changeDynamics(body, -1, linearDamping=0, angularDamping=0, physicsClientId=c)
    for j in range(p.getNumJoints(body, physicsClientId=c)):
        info = p.getJointInfo(body, j, physicsClientId=c)
        p.changeDynamics(body, j, linearDamping=0, angularDamping=0, jointDamping=0, physicsClientId=c)
        if info[2] == p.JOINT_SPHERICAL:
            p.setJointMotorControlMultiDof(body, j, p.POSITION_CONTROL, targetPosition=[0, 0, 0, 1], positionGain=0,
                                           velocityGain=0, force=[0, 0, 0], physicsClientId=c)
            p.resetJointStateMultiDof(body, j, list(unit(rng.normal(size=4))), list(rng.normal(size=3)),
                                      physicsClientId=c)
        elif info[2] in (p.JOINT_REVOLUTE, p.JOINT_PRISMATIC):
            p.setJointMotorControl2(body, j, p.VELOCITY_CONTROL, force=0, physicsClientId=c)
            lower, upper = (info[8], info[9]) if info[8] < info[9] else (-3.0, 3.0)
            p.resetJointState(body, j, rng.uniform(lower, upper) * 0.9, rng.normal(), physicsClientId=c)
        else:
            continue
        moving.append(j)
    if not fixed:
        p.resetBasePositionAndOrientation(body, list(rng.normal(size=3)), list(unit(rng.normal(size=4))),
                                          physicsClientId=c)
        p.resetBaseVelocity(body, list(rng.normal(size=3)), list(rng.normal(size=3)), physicsClientId=c)
    return moving


def multi_dof_state(c, body, moving):
    """Positions and velocities as PDControllerStableMultiDof.computePD builds them."""
    position, orientation = p.getBasePositionAndOrientation(body, physicsClientId=c)
    linear, angular = p.getBaseVelocity(body, physicsClientId=c)
    q1, u = list(position) + list(orientation), list(linear) + list(angular) + [0]
    for state in p.getJointStatesMultiDof(body, moving, physicsClientId=c):
        q1 += list(state[0])
        u += list(state[1]) + ([0] if len(state[0]) == 4 else [])
    return q1, np.array(u)


def kinetic_energy(c, body):
    """Σ ½ m |v_c|² + ½ ωᵀ R I Rᵀ ω over the base and every link, from pybullet's own velocities."""
    def part(mass, inertia, orientation, v, w):
        R = np.array(p.getMatrixFromQuaternion(orientation)).reshape(3, 3)
        return 0.5 * mass * np.dot(v, v) + 0.5 * np.asarray(w) @ R @ np.diag(inertia) @ R.T @ np.asarray(w)
    info = p.getDynamicsInfo(body, -1, physicsClientId=c)
    energy = part(info[0], info[2], p.getBasePositionAndOrientation(body, physicsClientId=c)[1],
                  *p.getBaseVelocity(body, physicsClientId=c))
    for j in range(p.getNumJoints(body, physicsClientId=c)):
        state = p.getLinkState(body, j, computeLinkVelocity=1, physicsClientId=c)
        info = p.getDynamicsInfo(body, j, physicsClientId=c)
        energy += part(info[0], info[2], state[1], state[6], state[7])
    return energy


BODIES = [("humanoid/humanoid.urdf", False), ("humanoid/humanoid.urdf", True), ("laikago/laikago_toes.urdf", False),
          ("random", False), ("random", True)]


@pytest.mark.parametrize("path,fixed", BODIES)
def test_multi_dof_mass_matrix_is_the_kinetic_energy_of_pybullets_link_velocities(client, tmp_path, path, fixed):
    rng = np.random.default_rng(11)
    body = load(client, path, fixed, tmp_path, rng)
    for _ in range(3):
        moving = set_random_state(client, body, rng, fixed)
        q1, u = multi_dof_state(client, body, moving)
        M = np.array(dpb.calculateMassMatrix(body, q1, flags=1, physicsClientId=client))
        assert M.shape == (len(u), len(u)) and np.allclose(M, M.T, rtol=0, atol=1e-12 * np.abs(M).max())
        energy = kinetic_energy(client, body)
        assert abs(0.5 * u @ M @ u - energy) <= 1e-9 * energy


@pytest.mark.parametrize("path,fixed", BODIES + [("random-one-dof", False), ("random-one-dof", True)])
def test_multi_dof_inverse_dynamics_explains_pybullets_step(client, tmp_path, path, fixed):
    """pybullet's step is u⁺ = u + h u̇ with u̇ its forward dynamics (no damping, motors off,
    inside the limits, no contact): our ID at that u̇ must be zero torque, gravity on.  The
    random trees have spherical joints under turned joint and inertial frames, full inertias
    and physically valid ones (pybullet zeroes the others: see the test below)."""
    rng = np.random.default_rng(12)
    body = load(client, "random", fixed, tmp_path, rng, spherical=False) if path == "random-one-dof" else \
        load(client, path, fixed, tmp_path, rng)
    p.setGravity(0.3, -0.5, -9.81, physicsClientId=client)
    h = 1e-4
    p.setTimeStep(h, physicsClientId=client)
    moving = set_random_state(client, body, rng, fixed)
    q1, u = multi_dof_state(client, body, moving)
    p.stepSimulation(physicsClientId=client)
    du = (multi_dof_state(client, body, moving)[1] - u) / h
    tau = np.array(dpb.calculateInverseDynamics(body, q1, list(u), list(du), flags=1, physicsClientId=client))
    M = np.array(dpb.calculateMassMatrix(body, q1, flags=1, physicsClientId=client))
    assert np.abs(tau).max() <= 1e-9 * np.abs(M @ du).max()
    # forward dynamics inverts it; the Coriolis matrix holds C u = bias − gravity and Ṁ − 2C skew
    back = dpb.calculateForwardDynamics(body, q1, list(u), list(tau), flags=1, physicsClientId=client)
    assert np.abs(np.array(back) - du).max() <= 1e-8 * np.abs(du).max()
    C = np.array(dpb.calculateCoriolisMatrix(body, q1, list(u), flags=1, physicsClientId=client))
    bias = np.array(dpb.calculateBiasForces(body, q1, list(u), flags=1, physicsClientId=client))
    gravity = np.array(dpb.calculateGravity(body, q1, flags=1, physicsClientId=client))
    assert np.abs(C @ u - (bias - gravity)).max() <= 1e-9 * max(1.0, np.abs(bias).max())


BALL_WITH_BAD_INERTIA = """<robot name="ball"><link name="base"/>
<link name="bob"><inertial><origin xyz="0.2 -0.1 0.15" rpy="0.9 0.3 -0.5"/><mass value="1.3"/>
<inertia ixx="0.1" iyy="0.2" izz="0.31" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="ball" type="spherical"><parent link="base"/><child link="bob"/><origin xyz="0.1 0.2 0.3" rpy="0.4 -0.7 1.1"/>
</joint></robot>"""


def test_a_zeroed_inertia_on_a_ball_joint_is_refused_where_pybullet_steps_on(client, tmp_path):
    """An inertia that breaks the triangle inequality (0.1 + 0.2 < 0.31) is zeroed by pybullet
    ("Bad inertia tensor properties"; getDynamicsInfo reads 0).  The bob is then a point mass
    on a ball joint: nothing resists a spin about the line from the pivot to it (its kinetic
    energy is 0), the mass matrix is singular there and the acceleration is undefined.  Ours
    says so (ModelError); pybullet's step answers anyway, with an acceleration that breaks
    Newton's law even in the determined directions (measured 1.6 relative; this was the open
    disagreement of #31: the random trees then drew such inertias)."""
    file = tmp_path / "ball.urdf"
    file.write_text(BALL_WITH_BAD_INERTIA)
    body = load(client, str(file), True)
    assert p.getDynamicsInfo(body, 0, physicsClientId=client)[2] == (0.0, 0.0, 0.0)
    p.setGravity(0.3, -0.5, -9.81, physicsClientId=client)
    p.setTimeStep(1e-5, physicsClientId=client)
    moving = set_random_state(client, body, np.random.default_rng(0), True)
    q1, u = multi_dof_state(client, body, moving)
    M = np.array(dpb.calculateMassMatrix(body, q1, flags=1, physicsClientId=client))
    eigenvalues, vectors = np.linalg.eigh(M[7:10, 7:10])
    assert eigenvalues[0] <= 1e-14 * eigenvalues[-1]
    with pytest.raises(dp.ModelError, match="robot 'ball'.*mass matrix is singular"):
        dpb.calculateForwardDynamics(body, q1, list(u), [0.0] * len(u), flags=1, physicsClientId=client)
    p.stepSimulation(physicsClientId=client)
    du = (multi_dof_state(client, body, moving)[1] - u) / 1e-5
    tau = np.array(dpb.calculateInverseDynamics(body, q1, list(u), list(du), flags=1, physicsClientId=client))
    determined = vectors[:, 1:].T @ tau[7:10]            # the equations M u̇ = f that do fix u̇
    assert np.abs(determined).max() > 0.1 * np.abs(M @ du).max()


PENDULUM_WITH_LONG_AXIS = """<robot name="pendulum"><link name="base"/>
<link name="arm"><inertial><origin xyz="0.3 0 0"/><mass value="1.3"/>
<inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 0 2"/></joint></robot>"""


def test_a_non_unit_axis_turns_pybullets_step_and_link_velocities_not_ours(client, tmp_path):
    """URDF leaves an axis's length unsaid and turns the link by q about its direction.
    pybullet keeps "0 0 2" as written: its poses turn by q (about the unit axis) and its
    calculateInverseDynamics normalizes it, but its link velocities (getLinkState) report
    2 q̇ and its step uses the long axis, so the pendulum released at rest accelerates at
    half the physical rate.  Ours is the physics (closed form: q̈ = −m g r / (I_zz + m r²);
    the Jacobian's angular column is the unit axis, the rate at which the pose turns)."""
    file = tmp_path / "pendulum.urdf"
    file.write_text(PENDULUM_WITH_LONG_AXIS)
    with c_level_output_silenced():
        body = p.loadURDF(str(file), useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
    p.changeDynamics(body, 0, linearDamping=0, angularDamping=0, jointDamping=0, physicsClientId=client)
    p.setJointMotorControl2(body, 0, p.VELOCITY_CONTROL, force=0, physicsClientId=client)
    p.setGravity(0.0, -9.81, 0.0, physicsClientId=client)
    physical = -1.3 * 9.81 * 0.3 / (0.02 + 1.3 * 0.3 ** 2)
    ours = dpb.calculateForwardDynamics(body, [0.0], [0.0], [0.0], physicsClientId=client)[0]
    assert abs(ours - physical) <= 1e-12 * abs(physical)
    h = 1e-4
    p.setTimeStep(h, physicsClientId=client)
    p.stepSimulation(physicsClientId=client)
    assert abs(p.getJointState(body, 0, physicsClientId=client)[1] / h / physical - 0.5) <= 1e-9
    p.resetJointState(body, 0, 0.4, 1.0, physicsClientId=client)
    spin = p.getLinkState(body, 0, computeLinkVelocity=1, physicsClientId=client)[7][2]
    turn = [p.getEulerFromQuaternion(point_and_rotation_at(client, body, 0.4 + e)[1])[2] for e in (1e-6, -1e-6)]
    assert abs((turn[0] - turn[1]) / 2e-6 - 1.0) <= 1e-7 and abs(spin - 2.0) <= 1e-12
    angular = np.array(calculateJacobian(body, 0, [0.0, 0.0, 0.0], [0.4], [0.0], [0.0], client)[1])
    assert np.abs(angular[:, 0] - [0.0, 0.0, 1.0]).max() <= 1e-15


def point_and_rotation_at(c, body, angle):
    p.resetJointState(body, 0, angle, physicsClientId=c)
    return p.getLinkState(body, 0, computeForwardKinematics=1, physicsClientId=c)[:2]


def test_multi_dof_layout_refuses_what_it_cannot_read(client):
    body = load(client, "humanoid/humanoid.urdf", False)
    q1, u = multi_dof_state(client, body, set_random_state(client, body, np.random.default_rng(0), False))
    with pytest.raises(dp.InputError, match=r"robot 'dumpUrdf'.*must have length 43"):
        dpb.calculateMassMatrix(body, q1[:-1], flags=1, physicsClientId=client)
    bad = list(q1)
    bad[7:11] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(dp.InputError, match=r"spherical joint 'chest', must be a unit quaternion"):
        dpb.calculateMassMatrix(body, bad, flags=1, physicsClientId=client)
    padded = list(u)
    padded[6] = 1.0
    with pytest.raises(dp.InputError, match=r"objVelocities\[6\] is a padding entry"):
        dpb.calculateInverseDynamics(body, q1, padded, [0.0] * 43, flags=1, physicsClientId=client)
    with pytest.raises(dp.InputError, match="flags must be 0 .* or 1"):
        dpb.calculateMassMatrix(body, q1, flags=2, physicsClientId=client)


def test_floating_mass_matrix_takes_the_positions_calculate_inverse_dynamics_takes(client):
    """PDControllerStable passes 7 + n positions; pybullet's own then reads the base pose as joint angles."""
    body = load(client, "laikago/laikago.urdf", False)
    set_random_state(client, body, np.random.default_rng(1), False)
    joints = [s[0] for s in p.getJointStates(body, range(12), physicsClientId=client)]
    position, orientation = p.getBasePositionAndOrientation(body, physicsClientId=client)
    full = list(position) + list(orientation) + joints
    ours = np.array(dpb.calculateMassMatrix(body, full, physicsClientId=client))
    reference = np.array(p.calculateMassMatrix(body, joints, physicsClientId=client))
    assert ours.shape == (18, 18) and np.abs(ours - reference).max() <= 1e-9 * np.abs(reference).max()
    assert np.abs(np.array(p.calculateMassMatrix(body, full, physicsClientId=client)) - reference).max() > 1e-2


def point_and_rotation(c, body, link, local):
    if link < 0:
        position, orientation = p.getBasePositionAndOrientation(body, physicsClientId=c)
    else:
        position, orientation = p.getLinkState(body, link, computeForwardKinematics=1, physicsClientId=c)[:2]
    R = np.array(p.getMatrixFromQuaternion(orientation)).reshape(3, 3)
    return np.array(position) + R @ local, R


def finite_difference_jacobian(c, body, link, local, joints, q, base, h=1e-6):
    """Central differences of pybullet's own pose of the point (and of the link's rotation)
    along each joint and, for a floating base (``base`` its (position, quaternion) of the
    centre-of-mass frame), along u's base entries (angular then linear, in that frame)."""
    def pose_at(qj, position, orientation):
        for j, x in zip(joints, qj):
            p.resetJointState(body, j, x, physicsClientId=c)
        p.resetBasePositionAndOrientation(body, list(position), list(orientation), physicsClientId=c)
        return point_and_rotation(c, body, link, local)

    def column(plus, minus):
        (xp, Rp), (xm, Rm) = plus, minus
        W = (Rp @ Rm.T - Rm @ Rp.T) / (4 * h)
        return np.concatenate([(xp - xm) / (2 * h), [W[2, 1], W[0, 2], W[1, 0]]])

    columns = []
    if base is not None:
        R = Rotation.from_quat(base[1])
        for k in range(6):
            step = lambda s: (base[0], (R * Rotation.from_rotvec(s * np.eye(3)[k])).as_quat()) if k < 3 else \
                (np.asarray(base[0]) + s * R.apply(np.eye(3)[k - 3]), base[1])       # noqa: E731
            columns.append(column(pose_at(q, *step(h)), pose_at(q, *step(-h))))
    fixed = p.getBasePositionAndOrientation(body, physicsClientId=c) if base is None else base
    for k in range(len(q)):
        e = h * np.eye(len(q))[k]
        columns.append(column(pose_at(q + e, *fixed), pose_at(q - e, *fixed)))
    return np.array(columns).T


@pytest.mark.parametrize("path,fixed", [("kuka_iiwa/model.urdf", True), ("r2d2.urdf", False), ("random", True),
                                        ("random", False)])
def test_jacobian_equals_finite_differences(client, tmp_path, path, fixed):
    rng = np.random.default_rng(13)
    body = load(client, path, fixed, tmp_path, rng, **({"spherical": False} if path == "random" else {}))
    joints = [j for j in range(p.getNumJoints(body, physicsClientId=client))
              if p.getJointInfo(body, j, physicsClientId=client)[2] in (p.JOINT_REVOLUTE, p.JOINT_PRISMATIC)]
    q = rng.uniform(-1.0, 1.0, len(joints))
    zeros = [0.0] * len(joints)
    worst, pybullet_worst = 0.0, 0.0
    for link in range(-1, p.getNumJoints(body, physicsClientId=client)):
        local = rng.normal(size=3) * 0.2
        if fixed:
            J = np.vstack(calculateJacobian(body, link, local, q, zeros, zeros, client))
            theirs = np.vstack(p.calculateJacobian(body, link, list(local), list(q), zeros, zeros,
                                                   physicsClientId=client))
            pybullet_worst = max(pybullet_worst, np.abs(theirs - finite_difference_jacobian(
                client, body, link, local, joints, q, None)).max())
            reference = finite_difference_jacobian(client, body, link, local, joints, q, None)
            worst = max(worst, np.abs(J - reference).max() / max(1.0, np.abs(reference).max()))
        for base in ([(0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)],
                     [tuple(rng.normal(size=3)), tuple(unit(rng.normal(size=4)))]) if not fixed else ():
            positions = q if base[0] == (0.0, 0.0, 0.0) else list(base[0]) + list(base[1]) + list(q)
            J = np.vstack(calculateJacobian(body, link, local, positions, zeros, zeros, client))
            reference = finite_difference_jacobian(client, body, link, local, joints, q, base)
            worst = max(worst, np.abs(J - reference).max() / max(1.0, np.abs(reference).max()))
    assert worst <= 1e-7
    if fixed:     # pybullet's own, on a base turned in the world: documented off (pybullet_jacobian)
        assert pybullet_worst > 1e-2


def test_jacobian_refuses_what_pybullet_refuses(client):
    body = load(client, "humanoid/humanoid.urdf", True)
    with pytest.raises(dp.InputError, match="has spherical joints"):
        calculateJacobian(body, 1, [0, 0, 0], [0.0] * 4, [0.0] * 4, [0.0] * 4, client)
    kuka = load(client, "kuka_iiwa/model.urdf", True)
    with pytest.raises(dp.InputError, match=r"linkIndex must be an integer from -1 .* to 6"):
        calculateJacobian(kuka, 7, [0, 0, 0], [0.0] * 7, [0.0] * 7, [0.0] * 7, client)
    with pytest.raises(dp.InputError, match="localPosition must be 3 finite numbers"):
        calculateJacobian(kuka, 2, [0, 0], [0.0] * 7, [0.0] * 7, [0.0] * 7, client)
    with pytest.raises(dp.InputError, match="objVelocities must have length 7"):
        calculateJacobian(kuka, 2, [0, 0, 0], [0.0] * 7, [0.0] * 6, [0.0] * 7, client)


def test_jacobian_answers_for_the_right_client():
    """Two clients, each with a kuka at a different base pose: a call that names no client is
    refused, and one through a BulletClient with the drop-ins installed is that client's
    (pybullet's calculateJacobian has no ``flags`` (3.2.7: "'flags' is an invalid keyword
    argument"), so neither has ours)."""
    from pybullet_utils import bullet_client

    with c_level_output_silenced():
        clients = [bullet_client.BulletClient(connection_mode=p.DIRECT) for _ in range(2)]
    try:
        q, zeros = [0.3, -0.2, 0.5, 1.0, -0.4, 0.2, 0.1], [0.0] * 7
        for k, c in enumerate(clients):
            c.setAdditionalSearchPath(DATA)
            with c_level_output_silenced():
                body = c.loadURDF("kuka_iiwa/model.urdf", [0.0, 0.0, 0.0], unit(np.array([0.3 * k, 0.0, 0.0, 1.0])),
                                  useFixedBase=True)
        with pytest.raises(dp.InputError, match=r"\d+ pybullet clients are connected .* pass physicsClientId"):
            calculateJacobian(body, 3, [0.1, 0.0, 0.0], q, zeros, zeros)
        answers = [np.vstack(dpb.install(c).calculateJacobian(body, 3, [0.1, 0.0, 0.0], q, zeros, zeros))
                   for c in clients]
        for c, J in zip(clients, answers):
            expected = np.vstack(calculateJacobian(body, 3, [0.1, 0.0, 0.0], q, zeros, zeros, c._client))
            assert np.array_equal(J, expected)
        assert np.abs(answers[0] - answers[1]).max() > 0.05        # the two bases are turned differently
    finally:
        for c in clients:
            c.disconnect()
