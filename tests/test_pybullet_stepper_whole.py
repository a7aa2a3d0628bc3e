"""DynamicsStepper on whole bodies: a floating base and spherical joints, in pybullet's
multi-DOF layout (flags=1), against pybullet's own step where pybullet is right (valid
inertias, unit axes: tests/test_pybullet_drop_in.py) — and never a NaN in the scene."""

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin import pybullet_bridge as dpb
from dyn_plugin.friction.bristles import Bristles
from dyn_plugin.friction.parameters import FrictionModel
from test_pybullet_drop_in import DATA, load, multi_dof_state, p, set_random_state

GRAVITY = (0.3, -0.5, -9.81)


def one_step(path, fixed, h, tmp_path, ours, damping=0.0, friction=False):
    """(positions, velocities) in the multi-DOF layout after one step of h seconds from a
    random state (motors off, no link damping; ``damping`` N·m·s/rad on every revolute or
    prismatic joint), by pybullet's stepSimulation or by our stepper (``friction``: with a
    friction backend whose viscous friction is the damping)."""
    c = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(DATA, physicsClientId=c)
        p.setGravity(*GRAVITY, physicsClientId=c)
        p.setTimeStep(h, physicsClientId=c)
        body = load(c, path, fixed, tmp_path, np.random.default_rng(5))
        moving = set_random_state(c, body, np.random.default_rng(1), fixed)
        dof = dpb.body_dynamics(body, c).dof
        for j in dpb.body_dynamics(body, c).joint_indices:
            p.changeDynamics(body, j, jointDamping=damping, physicsClientId=c)
        if ours:
            options = dict(backend="newton_euler_friction", friction=FrictionModel.create(
                dpb.body_dynamics(body, c).model.n, viscous=damping)) if friction else \
                dict(backend="newton_euler", damping=[damping] * dof)
            stepper = dpb.DynamicsStepper(body, physicsClientId=c, **options)
            answer = stepper.step([0.0] * len(multi_dof_state(c, body, moving)[1]), step_scene=False)
        else:
            p.stepSimulation(physicsClientId=c)
        positions, velocities = multi_dof_state(c, body, moving)
        if ours:    # what step returns is what it wrote into the scene
            assert np.abs(np.array(answer[0]) - positions).max() <= 1e-15 and np.abs(np.array(answer[1]) - velocities).max() <= 1e-15
        return np.array(positions), velocities
    finally:
        p.disconnect(physicsClientId=c)


def step_gap(path, fixed, h, tmp_path, damping=0.0, friction=False):
    """Largest differences (positions, velocities relative) between pybullet's step and ours."""
    (q_pb, u_pb), (q_ours, u_ours) = (one_step(path, fixed, h, tmp_path, ours, damping, friction)
                                      for ours in (False, True))
    return np.abs(q_pb - q_ours).max(), np.abs(u_pb - u_ours).max() / np.abs(u_pb).max()


@pytest.mark.parametrize("path", ["humanoid/humanoid.urdf", "random"])
def test_a_fixed_body_with_spherical_joints_steps_as_pybullet(tmp_path, path):
    """Fixed base: both are semi-implicit Euler, each spherical joint's quaternion turned by
    the exponential of h ω⁺ in its child frame: one step agrees to rounding."""
    gap_q, gap_u = step_gap(path, True, 1e-3, tmp_path)
    assert gap_q <= 1e-12 and gap_u <= 1e-12


@pytest.mark.parametrize("path", ["humanoid/humanoid.urdf", "random", "r2d2.urdf"])
def test_a_floating_body_steps_as_pybullet_to_second_order(tmp_path, path):
    """Floating base: pybullet steps the base's world velocities, ours its body velocity on
    SE(3) (q ⊕ h v⁺); the two one-step updates are equal to first order, so they differ by
    O(h²): a hundredth for a tenth of the step (measured 100.0), and ≤ 1e-9 at 1e-5 s."""
    coarse, fine = step_gap(path, False, 1e-4, tmp_path), step_gap(path, False, 1e-5, tmp_path)
    assert max(fine) <= 1e-9
    for a, b in zip(coarse, fine):
        assert 80 <= a / b <= 120


@pytest.mark.parametrize("friction", [False, True])
def test_joint_damping_on_a_floating_body_acts_on_the_joints_as_pybullets(tmp_path, friction):
    """pybullet's jointDamping (explicit −c q̇ on each revolute or prismatic joint) and ours
    (implicit) agree to O(h²) on a floating body, where the damping itself moves the
    velocities a thousand times more than that; ours as ``damping`` of a rigid-body backend
    or as the viscous friction of a friction backend (its floating-base form)."""
    coarse, fine = (step_gap("r2d2.urdf", False, h, tmp_path, 0.7, friction) for h in (1e-4, 1e-5))
    assert max(fine) <= 1e-9 and 80 <= coarse[1] / fine[1] <= 120
    (_, u_damped), (_, u_free) = (one_step("r2d2.urdf", False, 1e-5, tmp_path, True, c) for c in (0.7, 0.0))
    assert np.abs(u_damped - u_free).max() > 1e3 * fine[1] * np.abs(u_free).max()


@pytest.fixture
def scene():
    c = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(DATA, physicsClientId=c)
    p.setGravity(*GRAVITY, physicsClientId=c)
    yield c
    p.disconnect(physicsClientId=c)


def test_a_diverging_whole_body_step_writes_nothing(scene):
    body = load(scene, "humanoid/humanoid.urdf", False)
    moving = set_random_state(scene, body, np.random.default_rng(2), False)
    before = multi_dof_state(scene, body, moving)
    stepper = dpb.DynamicsStepper(body, physicsClientId=scene)
    forces = np.zeros(len(before[1]))
    forces[7:10] = 1e308                                  # the chest's spherical joint
    with pytest.raises(dp.SimulationError, match=r"DynamicsStepper: body \d+ \(dumpUrdf\) diverged at step 1.*"
                                                 r"overflowed.*'chest.wx'.*nothing was written to the scene"):
        stepper.step(list(forces))
    after = multi_dof_state(scene, body, moving)
    assert after[0] == before[0] and np.array_equal(after[1], before[1])


def test_whole_body_stepper_refuses_what_it_cannot_do(scene):
    humanoid = load(scene, "humanoid/humanoid.urdf", False)
    with pytest.raises(dp.ModelError, match="spherical joints: friction laws are written for revolute and prismatic"):
        dpb.DynamicsStepper(humanoid, backend="newton_euler_friction", physicsClientId=scene)
    stepper = dpb.DynamicsStepper(humanoid, physicsClientId=scene)
    with pytest.raises(dp.InputError, match=r"robot 'dumpUrdf'.*multi-DOF layout \(flags=1\) must have length 43"):
        stepper.step([0.0] * 42)
    with pytest.raises(dp.InputError, match=r"objTorques\[10\] is a padding entry"):
        stepper.step([0.0] * 10 + [1.0] + [0.0] * 32)
    with pytest.raises(dp.InputError, match="has 4 revolute or prismatic joints: damping must be 4 finite numbers"):
        dpb.DynamicsStepper(humanoid, physicsClientId=scene, damping=[0.1] * 12)
    r2d2 = load(scene, "r2d2.urdf", False)
    joints = dpb.body_dynamics(r2d2, scene).model.n
    lugre = FrictionModel.create(joints, dynamic=Bristles.lugre(joints, sigma0=1e4, coulomb=0.1, static=0.2))
    with pytest.raises(dp.InputError, match="floating base or spherical joints; friction model .* law"):
        dpb.DynamicsStepper(r2d2, physicsClientId=scene, friction=lugre)
