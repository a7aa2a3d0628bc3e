"""pybullet's own example clients, headless, with our drop-ins swapped into the ``pybullet``
module (or installed on their BulletClient), a bounded number of steps each.

The clients are pybullet_utils/pd_controller_stable.py (PDControllerStable,
PDControllerStableMultiDof), run unchanged from the installed package, and faithful minimal
re-enactments of bullet3's examples/pybullet/gym/pybullet_examples/inverse_dynamics.py,
pdControl.py (cartpole, stable PD), jacobian.py and pybullet_envs/deep_mimic/env/testLaikago.py
and humanoid_stable_pd.py (the same calls with the same argument forms, a few steps, no GUI).
Fixed-base clients must reproduce pybullet's native trajectories to 1e-9; floating and
spherical ones must run with finite states (their numbers are held to physical oracles in
tests/test_pybullet_drop_in.py)."""

import math

import numpy as np
import pybullet_data
import pytest
from pybullet_utils import bullet_client, pd_controller_stable

from dyn_plugin import pybullet_bridge as dpb
from dyn_plugin.backends.pybullet_backend import c_level_output_silenced, import_pybullet

p = import_pybullet()


@pytest.fixture
def swapped(monkeypatch):
    """``pybullet.calculateX = dpb.calculateX`` for every drop-in (restored after the test)."""
    def swap():
        for name in dpb.DROP_INS:
            monkeypatch.setattr(p, name, getattr(dpb, name), raising=False)
    return swap


def connect():
    with c_level_output_silenced():
        client = bullet_client.BulletClient(connection_mode=p.DIRECT)
    client.setAdditionalSearchPath(pybullet_data.getDataPath())
    return client


def inverse_dynamics_client(steps=300):
    """inverse_dynamics.py: TwoJointRobot_w_fixedJoints, computed-torque tracking at 1e-4 s."""
    c = p.connect(p.DIRECT)
    try:
        p.setTimeStep(1e-4, physicsClientId=c)
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=c)
        joints = [0, 3]
        with c_level_output_silenced():
            robot = p.loadURDF("TwoJointRobot_w_fixedJoints.urdf", [0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0],
                               useFixedBase=True, physicsClientId=c)
        for link in (-1, 0, 1):
            p.changeDynamics(robot, link, linearDamping=0, angularDamping=0, physicsClientId=c)
        p.setJointMotorControlArray(robot, joints, p.VELOCITY_CONTROL, forces=[0.0, 0.0], physicsClientId=c)
        trajectory = []
        for s in range(steps):
            t = s * 1e-4
            states = p.getJointStates(robot, joints, physicsClientId=c)
            obj_pos, obj_vel = [states[0][0], states[1][0]], [states[0][1], states[1][1]]
            obj_acc = [-2.0 * math.pi * math.sin(2.0 * math.pi * t), 2.0 * math.pi * math.cos(2.0 * math.pi * t)]
            torque = p.calculateInverseDynamics(robot, obj_pos, obj_vel, obj_acc, physicsClientId=c)
            p.setJointMotorControlArray(robot, joints, p.TORQUE_CONTROL, forces=[torque[0], torque[1]],
                                        physicsClientId=c)
            p.stepSimulation(physicsClientId=c)
            trajectory.append(obj_pos + obj_vel + list(torque))
        return np.array(trajectory)
    finally:
        p.disconnect(physicsClientId=c)


def cartpole_stable_pd_client(steps=300, ours=False):
    """pdControl.py's stable-PD cartpole (pole4) with pybullet_utils' PDControllerStable; with
    ``ours`` the drop-ins are installed on its BulletClient, so that the controller's calls
    answer for this client whatever other clients the process holds."""
    c = connect()
    if ours:
        dpb.install(c)
    with c_level_output_silenced():
        pole = c.loadURDF("cartpole.urdf", [0, 3, 0])
    for i in range(c.getNumJoints(pole)):
        c.setJointMotorControl2(pole, i, c.POSITION_CONTROL, targetPosition=0, force=0)
    c.setGravity(0, 0, -10)
    c.setTimeStep(0.01)
    controller = pd_controller_stable.PDControllerStable(c)
    trajectory = []
    for _ in range(steps):
        taus = controller.computePD(pole, [0, 1], [2.0, 0.0], [0.0, 0.0], [1300, 1200], [150, 100], [1000, 1000], 0.01)
        for j in (0, 1):
            c.setJointMotorControlMultiDof(pole, j, controlMode=c.TORQUE_CONTROL, force=[taus[j]])
        c.stepSimulation()
        trajectory.append([s for state in c.getJointStates(pole, [0, 1]) for s in state[:2]] + list(taus))
    c.disconnect()
    return np.array(trajectory)


def jacobian_client():
    """jacobian.py: the end effector's velocity from J q̇ against getLinkState's."""
    c = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=c)
        p.setTimeStep(0.001, physicsClientId=c)
        p.setGravity(0.0, 0.0, -9.81, physicsClientId=c)
        with c_level_output_silenced():
            robot = p.loadURDF("TwoJointRobot_w_fixedJoints.urdf", useFixedBase=True, physicsClientId=c)
        n = p.getNumJoints(robot, physicsClientId=c)
        p.setJointMotorControlArray(robot, range(n), p.POSITION_CONTROL, targetPositions=[0.1] * n,
                                    targetVelocities=[0.0] * n, positionGains=[1.0] * n, velocityGains=[0.3] * n,
                                    physicsClientId=c)
        p.stepSimulation(physicsClientId=c)
        infos = [p.getJointInfo(robot, i, physicsClientId=c) for i in range(n)]
        states = [s for s, info in zip(p.getJointStates(robot, range(n), physicsClientId=c), infos) if info[3] > -1]
        mpos, mvel = [s[0] for s in states], [s[1] for s in states]
        result = p.getLinkState(robot, n - 1, computeLinkVelocity=1, computeForwardKinematics=1, physicsClientId=c)
        zero = [0.0] * len(mpos)
        jac_t, jac_r = p.calculateJacobian(robot, n - 1, result[2], mpos, zero, zero, physicsClientId=c)
        R = np.array(p.getMatrixFromQuaternion(result[1])).reshape(3, 3)
        point_velocity = np.array(result[6]) + np.cross(result[7], R @ np.array(result[2]))
        return np.array(jac_t) @ mvel, point_velocity, np.array(jac_r) @ mvel, np.array(result[7])
    finally:
        p.disconnect(physicsClientId=c)


def test_inverse_dynamics_client_reproduces_pybullets_trajectory(swapped):
    native = inverse_dynamics_client()
    swapped()
    ours = inverse_dynamics_client()
    assert np.all(np.isfinite(ours)) and np.abs(ours - native).max() <= 1e-9 * max(1.0, np.abs(native).max())


def test_cartpole_stable_pd_client_reproduces_pybullets_trajectory():
    native = cartpole_stable_pd_client()
    ours = cartpole_stable_pd_client(ours=True)
    assert np.all(np.isfinite(ours)) and np.abs(ours - native).max() <= 1e-9 * max(1.0, np.abs(native).max())


def test_jacobian_client_gets_the_point_velocity(swapped):
    swapped()
    linear, point_velocity, angular, link_angular = jacobian_client()
    assert np.abs(linear - point_velocity).max() <= 1e-9 * max(1.0, np.abs(point_velocity).max())
    assert np.abs(angular - link_angular).max() <= 1e-9 * max(1.0, np.abs(link_angular).max())


def test_laikago_client_runs_on_a_floating_quadruped(swapped):
    """testLaikago.py: PDControllerStable on laikago.urdf (floating, 7 + 12 positions) through a BulletClient."""
    swapped()
    c = connect()
    with c_level_output_silenced():
        c.loadURDF("plane.urdf")
        quadruped = c.loadURDF("laikago/laikago.urdf", [0.007, 0.031, 0.492], [0.0059, 0.7065, 0.7076, -0.0028],
                               flags=c.URDF_USE_SELF_COLLISION, useFixedBase=False)
    c.setGravity(0, 0, -10)
    c.setTimeStep(1.0 / 500)
    joint_ids = [j for j in range(c.getNumJoints(quadruped)) if c.getJointInfo(quadruped, j)[2] == c.JOINT_REVOLUTE]
    for j in range(c.getNumJoints(quadruped)):
        c.setJointMotorControl2(quadruped, j, c.POSITION_CONTROL, force=0)
        c.changeDynamics(quadruped, j, linearDamping=0, angularDamping=0)
    controller = pd_controller_stable.PDControllerStable(c)
    dpb.install(c)              # the BulletClient's own calls reach ours with its id
    for _ in range(20):
        desired = [0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0] + [0.0, -0.7, 0.7] * 4
        taus = controller.computePD(quadruped, joint_ids, desired, [0] * 18, [4000] * 18, [40] * 18, [120] * 18,
                                    1.0 / 500)
        assert len(taus) == 18 and np.all(np.isfinite(taus))
        for index, joint in enumerate(joint_ids):
            c.setJointMotorControlMultiDof(quadruped, joint, controlMode=c.TORQUE_CONTROL, force=[taus[6 + index]])
        c.stepSimulation()
    assert np.all(np.isfinite(c.getBasePositionAndOrientation(quadruped)[0]))
    c.disconnect()


@pytest.mark.parametrize("fixed", [False, True])
def test_humanoid_multi_dof_stable_pd_client_runs(swapped, fixed):
    """deep_mimic's HumanoidStablePD.computePDForces: PDControllerStableMultiDof (flags=1) on
    humanoid.urdf's spherical joints, the gains and layout of humanoid_stable_pd.py (43 entries)."""
    swapped()
    c = connect()
    with c_level_output_silenced():
        humanoid = c.loadURDF("humanoid/humanoid.urdf", [0, 0.889540259, 0], globalScaling=0.25,
                              useFixedBase=fixed, flags=c.URDF_MAINTAIN_LINK_ORDER)
    c.setGravity(0, -9.8, 0)
    c.setTimeStep(1.0 / 600)
    indices = [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13]
    for j in indices:
        c.setJointMotorControlMultiDof(humanoid, j, c.POSITION_CONTROL, targetPosition=[0, 0, 0, 1],
                                       targetVelocity=[0, 0, 0], positionGain=0, velocityGain=1, force=[0, 0, 0])
    dofs = [4 if c.getJointInfo(humanoid, j)[2] == c.JOINT_SPHERICAL else 1 for j in indices]
    size = 7 + sum(dofs)
    kp, kd = [0] * 7 + [1000] * (size - 7), [0] * 7 + [100] * (size - 7)
    desired = [0, 0.889540259, 0, 0, 0, 0, 1] + [x for d in dofs for x in ([0, 0, 0, 1] if d == 4 else [0])]
    controller = pd_controller_stable.PDControllerStableMultiDof(c)
    dpb.install(c)
    for _ in range(4):
        taus = controller.computePD(humanoid, indices, desired, [0] * size, kp, kd, [200] * size, 1.0 / 600)
        assert len(taus) == 43 and np.all(np.isfinite(taus))
        offset = 7
        for j, d in zip(indices, dofs):
            force = list(taus[offset:offset + 3]) if d == 4 else [taus[offset]]
            c.setJointMotorControlMultiDof(humanoid, j, c.TORQUE_CONTROL, force=force)
            offset += d
        c.stepSimulation()
    assert np.all(np.isfinite([x for s in c.getJointStatesMultiDof(humanoid, indices) for x in s[0]]))
    c.disconnect()
