"""Our dynamics driving a body inside a pybullet scene: two SCARAs side by side, one
stepped by ``dyn_plugin.pybullet_bridge.DynamicsStepper`` (our Newton-Euler forward
dynamics), the other by pybullet itself (TORQUE_CONTROL + stepSimulation), under the
same torque law.  They move together to rounding error.

A second run gives both joints Coulomb friction: the stepper with the backend
``newton_euler_friction`` (friction impulses), pybullet through
``FrictionInjector`` (velocity motors); the joints stick and slip, identically.

    python examples/scara_stepper_pybullet.py [--plot scara.png] [--gui] [--no-friction]
"""

import argparse
import time

import numpy as np

import dyn_plugin as dp
from dyn_plugin import pybullet_bridge as dpb

with dpb.c_level_output_silenced():          # pybullet's build banner
    import pybullet as p

DT, STEPS = 1e-3, 2000
GRAVITY = (0.0, 0.0, -9.81)

parser = argparse.ArgumentParser(description="a SCARA stepped by our dynamics next to one stepped by pybullet")
parser.add_argument("--plot", metavar="FILE.png", help="save both joint trajectories to this file")
parser.add_argument("--gui", action="store_true", help="watch in pybullet's GUI (default: headless)")
parser.add_argument("--no-friction", action="store_true", help="skip the second run (Coulomb friction)")
args = parser.parse_args()

client = p.connect(p.GUI if args.gui else p.DIRECT)
p.setGravity(*GRAVITY, physicsClientId=client)
# Many solver iterations: the friction run's velocity motors then converge exactly.
p.setPhysicsEngineParameter(fixedTimeStep=DT, numSolverIterations=1000, numNonContactInnerIterations=1000,
                            physicsClientId=client)
with dpb.c_level_output_silenced():
    ours, native = (p.loadURDF(dp.load_robot("scara").source_path, basePosition=[x, 0.0, 0.0], useFixedBase=True,
                               flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client) for x in (-0.75, 0.75))
dpb.configure_reference_body(p, native, GRAVITY, client)   # pybullet's own body made fair: no damping, no limits
joints = dpb.body_dynamics(ours, client).joint_indices        # the movable joints, pybullet indices
names = [p.getJointInfo(ours, j, physicsClientId=client)[1].decode() for j in joints]

# The torque law, the same for both bodies, each from its own state: gravity compensation
# (ours, through the bridge) plus a PD toward a moving target, with gains of 10 rad/s,
# critically damped, on the diagonal of the mass matrix at q = 0.
CENTRE = np.array([0.0, 0.0, 0.10, 0.0])          # rad, rad, m, rad
AMPLITUDE = np.array([0.8, 1.2, 0.06, 2.0])
OMEGA = 2 * np.pi * np.array([0.5, 0.7, 1.0, 0.4])
inertia = np.diag(dpb.calculateMassMatrix(ours, [0.0] * len(joints), physicsClientId=client))
KP, KD = 100.0 * inertia, 20.0 * inertia


def target(t):
    return CENTRE + AMPLITUDE * np.sin(OMEGA * t)


def pd_gravity(body, q, qd, t):
    return np.array(dpb.calculateGravity(body, q, physicsClientId=client)) + KP * (target(t) - q) - KD * qd


def state(body):
    states = p.getJointStates(body, joints, physicsClientId=client)
    return np.array([s[0] for s in states]), np.array([s[1] for s in states])


def reset(q0):
    for body in (ours, native):
        for j, qi in zip(joints, q0):
            p.resetJointState(body, j, qi, 0.0, physicsClientId=client)


def run(stepper, torque_law, drive_native):
    """STEPS steps of both bodies; returns t and (q, q̇) of each, (STEPS + 1, dof)."""
    t = np.arange(STEPS + 1) * DT
    record = {name: np.zeros((2, STEPS + 1, len(joints))) for name in ("ours", "native")}
    tips = [None, None]
    for k in range(STEPS + 1):
        for name, body in (("ours", ours), ("native", native)):
            record[name][:, k] = state(body)
        if k == STEPS:
            break
        tau_native = torque_law(native, *record["native"][:, k], t[k])
        tau_ours = torque_law(ours, *record["ours"][:, k], t[k])
        drive_native(tau_native)                   # set before the stepper steps the scene
        stepper.step(tau_ours)                     # our step of `ours` + stepSimulation for the scene
        if args.gui:
            # The rest of the scene keeps working: debug lines trace both tool tips.
            for i, body in enumerate((ours, native)):
                tip = p.getLinkState(body, joints[-1], physicsClientId=client)[0]
                if tips[i] is not None and k % 10 == 0:
                    p.addUserDebugLine(tips[i], tip, [1, 0, 0] if i == 0 else [0, 0, 1], 2.0, 0,
                                       physicsClientId=client)
                if k % 10 == 0:
                    tips[i] = tip
            time.sleep(DT)
    return t, record


def torque_control(tau):
    p.setJointMotorControlArray(native, joints, p.TORQUE_CONTROL, forces=list(tau), physicsClientId=client)


# -- run 1: rigid body, our stepper vs pybullet's ----------------------------------------
started = time.perf_counter()
q0 = target(0.0)
reset(q0)
stepper = dpb.DynamicsStepper(ours, backend="newton_euler", physicsClientId=client)
t, rigid = run(stepper, pd_gravity, torque_control)
dq = np.abs(rigid["ours"][0] - rigid["native"][0]).max()
travel = np.ptp(rigid["ours"][0], axis=0)
print(f"SCARA ({', '.join(names)}): {STEPS} steps of {DT:g} s, PD + gravity compensation")
print(f"joint travel: {'  '.join(f'{x:.3f}' for x in travel)} (rad, rad, m, rad)")
print(f"rigid body, DynamicsStepper(newton_euler) vs pybullet: max |Δq| = {dq:.2e}  "
      f"({time.perf_counter() - started:.1f} s)")

# -- run 2: Coulomb friction, our friction impulses vs pybullet's velocity motors --------
if not args.no_friction:
    began = time.perf_counter()
    levels = np.array([3.0, 1.0, 4.0, 0.02])         # N·m, N·m, N, N·m; symmetric, no viscous term
    friction = dp.FrictionModel.create(len(joints), coulomb=levels)
    reset(q0)
    stepper = dpb.DynamicsStepper(ours, backend="newton_euler_friction", physicsClientId=client, friction=friction)
    injector = dpb.FrictionInjector(native, friction=friction, physicsClientId=client)
    # Open loop: gravity compensation plus a sinusoid of 1.6 times the friction level.  A
    # joint stays stuck while the torque is below its level, then slips.
    push_omega = 2 * np.pi * np.array([0.6, 0.8, 1.0, 1.5])
    push = lambda body, q, qd, t: (np.array(dpb.calculateGravity(body, q, physicsClientId=client))  # noqa: E731
                                   + 1.6 * levels * np.sin(push_omega * t))
    t, dry = run(stepper, push, injector.apply)
    dq_friction = np.abs(dry["ours"][0] - dry["native"][0]).max()
    stuck = dry["ours"][1][1:] == 0.0
    phases = np.count_nonzero(np.diff(stuck.astype(int), axis=0) == 1, axis=0) + stuck[0]
    print(f"Coulomb friction {levels.tolist()}: steps at rest per joint {stuck.sum(axis=0).tolist()}, "
          f"stick phases {phases.tolist()}")
    print(f"friction, DynamicsStepper(newton_euler_friction) vs pybullet + FrictionInjector: "
          f"max |Δq| = {dq_friction:.2e}  ({time.perf_counter() - began:.1f} s)")
p.disconnect(physicsClientId=client)
print(f"elapsed {time.perf_counter() - started:.1f} s")

if args.plot:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = 1 if args.no_friction else 2
    fig, axes = plt.subplots(rows, len(joints), figsize=(14, 3.2 * rows + 0.8), squeeze=False, sharex=True)
    units = ["rad", "rad", "m", "rad"]                  # joint3 is prismatic
    effort = ["N·m", "N·m", "N", "N·m"]
    for i, ax in enumerate(axes[0]):
        ax.plot(t, rigid["ours"][0][:, i], "C0", lw=2.5, alpha=0.5, label="ours: DynamicsStepper (newton_euler)")
        ax.plot(t, rigid["native"][0][:, i], "k--", lw=1, label="pybullet stepping its own body")
        ax.plot(t, target(t[:, None])[:, i], "C1:", lw=1, label="PD target")
        ax.set_title(f"{names[i]}, no friction", fontsize=10)
        ax.set_ylabel(f"position q [{units[i]}]")
    if rows == 2:
        for i, ax in enumerate(axes[1]):
            ax.plot(t, dry["ours"][1][:, i], "C0", lw=2.5, alpha=0.5,
                    label="ours: DynamicsStepper (newton_euler_friction)")
            ax.plot(t, dry["native"][1][:, i], "k--", lw=1, label="pybullet + FrictionInjector")
            ax.set_title(f"{names[i]}, Coulomb friction {levels[i]:g} {effort[i]}", fontsize=10)
            ax.set_ylabel(f"velocity q̇ [{units[i]}/s]")
    for ax in axes[-1]:
        ax.set_xlabel("time t [s]")
    for ax in axes[:, -1]:                              # one legend per row, right of the last panel
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.03, 0.5))
    rows_said = f"top: PD + gravity compensation, max |Δq| = {dq:.1e}"
    if rows == 2:
        rows_said += (f"; bottom: open-loop push against Coulomb friction (stick and slip), "
                      f"max |Δq| = {dq_friction:.1e}")
    fig.suptitle(f"SCARA: our dynamics stepping a body inside pybullet vs pybullet stepping its twin\n({rows_said})",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(args.plot, dpi=110)
    print(f"wrote {args.plot}")
