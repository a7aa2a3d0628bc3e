"""Simulation: energy conservation, the pendulum's period, agreement with pybullet's own
stepping, and clear reports of limits and blow-ups."""

import warnings

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.sampling import random_states
from dyn_plugin.tools.validate import compare_trajectories

PENDULUM = """<robot name="pendulum"><link name="base"/>
<link name="bob"><inertial><origin xyz="0 0 -{l}"/><mass value="{m}"/>
<inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="swing" type="continuous"><parent link="base"/><child link="bob"/><axis xyz="0 1 0"/></joint>
</robot>"""


def test_energy_conserved_rk4_puma_falling():
    """Zero torque, RK4 at dt = 1e-3 for 2 s from a random state: |ΔE| / E_scale < 1e-6."""
    model = dp.load_robot("puma560")
    s = random_states(model, 1, seed=4)
    be = dp.get_backend("newton_euler", model)
    traj = dp.simulate(be, s.q[0], s.qd[0], np.zeros(model.n), duration=2.0, dt=1e-3, integrator="rk4",
                       on_limit="ignore")
    assert np.ptp(traj.potential) > 1.0  # it really falls: joules of potential energy exchanged
    assert traj.relative_energy_drift() < 1e-6


def test_pendulum_small_angle_period():
    """A compound pendulum's period equals 2π √(I_O / (m g l)) within 0.1 % (as in Jack 1990, App. B.8)."""
    m, l, i_c, g = 1.5, 0.8, 0.02, 9.81
    model = dp.load_urdf_string(PENDULUM.format(m=m, l=l, i=i_c))
    be = dp.get_backend("newton_euler", model)
    expected = 2 * np.pi * np.sqrt((i_c + m * l**2) / (m * g * l))
    traj = dp.simulate(be, [0.01], [0.0], [0.0], duration=3 * expected, dt=1e-3, integrator="rk4")
    angle = traj.q[:, 0]
    rising = np.nonzero((angle[:-1] < 0) & (angle[1:] >= 0))[0]
    crossings = traj.t[rising] - angle[rising] * 1e-3 / (angle[rising + 1] - angle[rising])  # interpolated
    period = np.mean(np.diff(crossings))
    assert abs(period / expected - 1) < 1e-3


@pytest.mark.parametrize("robot", ["puma560", "scara"])
def test_trajectory_matches_pybullet_stepping(robot):
    """Semi-implicit Euler at pybullet's dt reproduces pybullet's own stepping to 1e-8 after 1 s."""
    model = dp.load_robot(robot)
    s = random_states(model, 1, seed=5)
    ours, theirs = compare_trajectories(dp.get_backend("newton_euler", model), dp.get_backend("pybullet", model),
                                        s.q[0], s.qd[0], lambda t, q, qd: np.zeros(model.n), 1.0, 1e-3)
    assert np.max(np.abs(ours.q - theirs)) < 1e-8
    assert np.ptp(ours.q) > 0.1  # the arm moved


def test_semi_implicit_euler_is_pybullets_update():
    model = dp.load_robot("scara")
    be = dp.get_backend("newton_euler", model)
    s = random_states(model, 1, seed=6)
    traj = dp.simulate(be, s.q[0], s.qd[0], s.tau[0], duration=3e-3, dt=1e-3, on_limit="ignore")
    q, qd = s.q[0], s.qd[0]
    for k in range(3):
        qd = qd + 1e-3 * be.forward_dynamics(q, qd, s.tau[0])
        q = q + 1e-3 * qd
        np.testing.assert_allclose(traj.q[k + 1], q, rtol=0, atol=1e-15)


def test_leaving_limits_is_reported_not_clamped():
    model = dp.load_robot("scara")  # joint3 (the quill) is limited to [0, 0.21] m
    be = dp.get_backend("newton_euler", model)
    q0 = np.array([0.0, 0.0, 0.2, 0.0])
    with pytest.warns(dp.JointLimitWarning, match="joint3"):
        traj = dp.simulate(be, q0, np.zeros(4), np.zeros(4), duration=0.5, dt=1e-3)
    assert traj.q[-1, 2] > 0.21 + 0.5  # fell on, past the stop: not clamped
    assert traj.limit_events[0].joint == "joint3"
    with pytest.raises(dp.SimulationError, match="joint3"):
        dp.simulate(be, q0, np.zeros(4), np.zeros(4), duration=0.5, dt=1e-3, on_limit="raise")


def test_non_finite_state_stops_with_a_clear_error():
    model = dp.load_robot("scara")
    be = dp.get_backend("newton_euler", model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow and limit warnings on the way to inf
        with pytest.raises(dp.SimulationError, match=r"diverged at step 1 of 10 \(t = 0\.01 s\).*smaller dt"):
            dp.simulate(be, [0, 0, 0.1, 0], np.zeros(4), np.full(4, 1e308), duration=0.1, dt=1e-2)


STIFF_VISCOUS = dp.FrictionModel.create(6, viscous=2.0)   # PUMA wrist: dt·λ_max(M⁻¹D) ≈ 46 at dt = 1 ms


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_divergence_names_the_step_and_suggests_a_smaller_dt(integrator):
    """Explicit stiff damping blows up within a few steps: reported as a divergence at step k
    (not as a bad input 'qd has a non-finite entry' from an RK4 stage)."""
    be = dp.get_backend("newton_euler_friction", dp.load_robot("puma560"), friction=STIFF_VISCOUS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(dp.SimulationError, match=r"diverged at step \d+ of 500 \(t = .*joint.*dt = 0\.001 s"):
            dp.simulate(be, np.zeros(6), np.zeros(6), np.zeros(6), duration=0.5, dt=1e-3, integrator=integrator)


def test_implicit_viscous_friction_is_stable_and_dissipative():
    """The same stiff damping with viscous='implicit': finite, and with zero torque the energy
    never rises (viscous + Coulomb friction only dissipate).  Validation's random friction
    (seed 2) made the explicit step diverge inside the stiction problem at step 13."""
    from dyn_plugin.sampling import random_states

    model = dp.load_robot("puma560")
    s = random_states(model, 1, seed=2)
    rng = np.random.default_rng([2, model.n])  # what validation drew before it bounded dt·λ_max(M⁻¹D)
    friction = dp.FrictionModel.create(model.n, viscous=rng.uniform(0, 2, 6), coulomb=rng.uniform(0, 10, 6))
    be = dp.get_backend("newton_euler_friction", model, friction=friction)
    with pytest.raises(dp.SimulationError, match=r"diverged at step 13 of 1000.*stiction"):
        dp.simulate(be, s.q[0], s.qd[0], np.zeros(6), duration=1.0, dt=1e-3, on_limit="ignore")
    traj = dp.simulate(be, s.q[0], s.qd[0], np.zeros(6), duration=1.0, dt=1e-3, on_limit="ignore", viscous="implicit")
    assert np.all(np.isfinite(traj.q)) and np.all(np.isfinite(traj.qd))
    assert np.max(np.diff(traj.energy)) <= 0.0
    assert traj.energy[0] - traj.energy[-1] > 40.0                      # J: it fell and came to rest
    stiff = dp.get_backend("newton_euler_friction", model, friction=STIFF_VISCOUS)
    traj = dp.simulate(stiff, s.q[0], s.qd[0], np.zeros(6), duration=0.5, dt=1e-3, on_limit="ignore",
                       viscous="implicit")
    assert np.max(np.diff(traj.energy)) <= 0.0 and np.all(np.isfinite(traj.qd))


def test_implicit_viscous_equals_explicit_without_viscous_friction():
    """viscous='implicit' changes nothing when there is no viscous term (Coulomb only)."""
    model = dp.load_robot("scara")
    be = dp.get_backend("newton_euler_friction", model, friction=dp.FrictionModel.create(4, coulomb=[2, 1, 3, 0.1]))
    s = random_states(model, 1, seed=7)
    args = (s.q[0], s.qd[0], s.tau[0])
    kwargs = dict(duration=0.2, dt=1e-3, on_limit="ignore")
    np.testing.assert_array_equal(dp.simulate(be, *args, **kwargs).q,
                                  dp.simulate(be, *args, viscous="implicit", **kwargs).q)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(integrator="leapfrog"), "integrator"),
    (dict(torque=np.zeros(3)), r"\(4,\)"),
    (dict(dt=0.0), "positive"),
    (dict(torque=lambda t, q, qd: np.zeros(2)), "4 finite numbers"),
    (dict(duration=0.01, dt=0.05), "longer than duration"),     # once returned one sample silently
    (dict(duration=0.01, dt=0.011), "longer than duration"),    # once took one step, to t = 0.011 s
    (dict(viscous="semi"), "viscous must be"),
])
def test_bad_simulation_input(kwargs, fragment):
    model = dp.load_robot("scara")
    args = dict(q0=[0, 0, 0.1, 0], qd0=np.zeros(4), torque=np.zeros(4), duration=0.01, dt=1e-3)
    args.update(kwargs)
    with pytest.raises(dp.InputError, match=fragment):
        dp.simulate(dp.get_backend("newton_euler", model), **args)


def test_a_batch_of_initial_states_is_refused_not_cut_to_its_first():
    """simulate integrates one trajectory: (N, n) initial states with N > 1 used to run from
    row 0 alone, silently."""
    be = dp.get_backend("newton_euler", dp.load_robot("puma560"))
    q0 = np.zeros((3, 6))
    with pytest.raises(dp.InputError, match=r"q0 must be one state of shape \(6,\).*\(3, 6\)"):
        dp.simulate(be, q0, np.zeros(6), np.zeros(6), 0.01, 0.001)
    with pytest.raises(dp.InputError, match=r"qd0 must be one state"):
        dp.simulate(be, np.zeros(6), np.zeros((2, 6)), np.zeros(6), 0.01, 0.001)
    one = dp.simulate(be, q0[:1], np.zeros((1, 6)), np.zeros(6), 0.01, 0.001)
    assert np.array_equal(one.q, dp.simulate(be, np.zeros(6), np.zeros(6), np.zeros(6), 0.01, 0.001).q)


def test_rk4_holds_a_torque_array_row_over_its_step():
    """A (steps, n) torque array: row k over step k, every RK4 stage of it (the stages at
    t + dt/2 and t + dt were given rows k or k + 1 by rounding t/dt, half to even: q̇ was
    off by 42 rad/s after one millisecond).  Reference: classic RK4 on pinocchio's aba."""
    model = dp.load_robot("puma560")
    dt, steps = 1e-3, 6
    torques = np.zeros((steps, model.n))
    torques[1::2] = 10.0
    ours = dp.simulate(dp.get_backend("newton_euler", model), np.zeros(model.n), np.zeros(model.n), torques,
                       steps * dt, dt, integrator="rk4")
    fd = dp.get_backend("pinocchio", model).forward_dynamics
    q, v = np.zeros(model.n), np.zeros(model.n)
    for k in range(steps):
        k1q, k1v = v, fd(q, v, torques[k])
        k2q, k2v = v + 0.5 * dt * k1v, fd(q + 0.5 * dt * k1q, v + 0.5 * dt * k1v, torques[k])
        k3q, k3v = v + 0.5 * dt * k2v, fd(q + 0.5 * dt * k2q, v + 0.5 * dt * k2v, torques[k])
        k4q, k4v = v + dt * k3v, fd(q + dt * k3q, v + dt * k3v, torques[k])
        q, v = q + dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q), v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        assert np.abs(ours.q[k + 1] - q).max() <= 1e-13 and np.abs(ours.qd[k + 1] - v).max() <= 1e-11 * max(1, np.abs(v).max())
    assert np.array_equal(ours.tau[:steps], torques)
