"""Stick-slip: the PUMA-560 wrist set in motion and left to Corke's joint friction
(viscous + asymmetric Coulomb), simulated with velocity-level friction impulses; then
the same joints with friction smoothed for RK4.

    python examples/friction_stick_slip.py [output.png]
"""

import sys

import numpy as np

import dyn_plugin as dp

model = dp.load_robot("puma560")
sharp = dp.get_backend("newton_euler_friction", model, profile="corke")   # urdf/puma560_friction.toml
print(sharp, "| armature", sharp.friction.armature, sharp.friction.armature_form)

# Start moving, with a torque that holds the arm against gravity on joints 1-3 only:
# the wrist joints slide and slow down under viscous and Coulomb friction.  Joints 4 and 5
# stop and stay stuck: the gravity torques on them (below 0.02 N·m here) are far below
# their Coulomb levels (0.67 to 1.29 N·m).  Joint 6, started fastest, still slides at t = 1 s.
q0 = np.array([0.0, -0.6, 0.4, 0.0, 0.8, 0.0])
qd0 = np.array([0.0, 0.0, 0.0, 2.0, -1.5, 3.0])
hold = lambda t, q, qd: np.r_[sharp.gravity_torques(q)[:3], 0.0, 0.0, 0.0]  # noqa: E731
traj = dp.simulate(sharp, q0, qd0, hold, duration=1.0, dt=1e-3, on_limit="ignore")

for i in (3, 4, 5):
    still = np.nonzero(np.abs(traj.qd[:, i]) == 0)[0]
    when = f"stops at t = {traj.t[still[0]]:.3f} s and stays" if len(still) and \
        np.all(traj.qd[still[0]:, i] == 0) else "keeps moving"
    print(f"{model.joint_names[i]}: q̇0 = {qd0[i]:+.1f} rad/s, {when}")
print(f"kinetic energy {traj.kinetic[0]:.3f} J -> {traj.kinetic[-1]:.3g} J "
      f"(never increases: {np.all(np.diff(traj.kinetic) <= 1e-12)})")

# The smooth variant (tanh of width 0.02 rad/s) is an ordinary ODE: RK4 can integrate it.
smooth = dp.get_backend("newton_euler_friction", model, friction=sharp.friction.with_smoothing(0.02))
soft = dp.simulate(smooth, q0, qd0, hold, duration=1.0, dt=1e-3, integrator="rk4", on_limit="ignore")
print(f"smooth (RK4) vs sharp (impulses): max |Δq| = {np.abs(soft.q - traj.q).max():.2e} rad")

if len(sys.argv) > 1:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for i in (3, 4, 5):
        ax.plot(traj.t, traj.qd[:, i], label=f"{model.joint_names[i]}, friction impulses")
        ax.plot(soft.t, soft.qd[:, i], "k:", lw=0.8, label="smoothed friction, RK4" if i == 5 else None)
    ax.set(xlabel="time t [s]", ylabel="joint velocity q̇ [rad/s]",
           title="PUMA-560 wrist with Coulomb friction: slip, then stick")
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=110)
    print(f"wrote {sys.argv[1]}")
