"""Computed-torque control of a PUMA-560 in pybullet, with and without a friction model.

The plant is pybullet's own PUMA-560 (its integrator, its constraint solver) with
Corke's joint friction (viscous + asymmetric Coulomb) injected by
``dyn_plugin.pybullet_bridge.FrictionInjector``.  Two computed-torque controllers track
the same smooth joint-space trajectory from the same initial state:

    rigid only   τ = M(q) v + h(q, q̇)                     backend newton_euler
    full model   τ = M(q) v + h(q, q̇) + friction           backend newton_euler_friction

with v = q̈_d + Kp e + Kd ė, e = q_d − q.  The full model knows the plant's friction, the
rigid-only controller does not; the script prints the RMS tracking error of both.

    python examples/computed_torque_pybullet.py [--duration 2] [--plot errors.png] [--gui]
                                                [--compensation mixed|desired|measured]
"""

import argparse
import dataclasses
import time

import numpy as np

import dyn_plugin as dp
from dyn_plugin import pybullet_bridge as dpb

with dpb.c_level_output_silenced():          # pybullet's build banner
    import pybullet as p

KP, KD = 100.0, 20.0      # 1/s², 1/s: critically damped error dynamics ë + 20 ė + 100 e = 0 (ω = 10 rad/s)
DT = 1e-3                 # s, pybullet's fixedTimeStep and the control period
GRAVITY = (0.0, 0.0, -9.81)

# The desired trajectory: q_d = c − A cos(ω t), starting at rest, each joint reversing
# every half period (so the dry friction changes sign often), inside the joint limits.
CENTRE = np.array([0.0, -0.6, 0.5, 0.0, 0.5, 0.0])                    # rad
AMPLITUDE = np.array([0.6, 0.4, 0.4, 0.8, 0.6, 1.0])                  # rad
OMEGA = 2 * np.pi * np.array([0.5, 0.6, 0.7, 0.8, 0.9, 1.0])          # rad/s


def desired(t):
    """(q_d, q̇_d, q̈_d) at time t."""
    c, s = np.cos(OMEGA * t), np.sin(OMEGA * t)
    return CENTRE - AMPLITUDE * c, AMPLITUDE * OMEGA * s, AMPLITUDE * OMEGA ** 2 * c


parser = argparse.ArgumentParser(description="computed-torque control of a PUMA-560 in pybullet, "
                                             "rigid-body model vs rigid body + friction")
parser.add_argument("--duration", type=float, default=2.0, help="seconds per closed-loop run (default 2)")
parser.add_argument("--plot", metavar="FILE.png", help="save the tracking errors to this file")
parser.add_argument("--gui", action="store_true", help="watch in pybullet's GUI (default: headless)")
parser.add_argument("--compensation", choices=("mixed", "desired", "measured"), default="mixed",
                    help="velocity at which the full model evaluates friction (default: mixed, see below)")
args = parser.parse_args()

model = dp.load_robot("puma560")

# Corke's friction for the PUMA-560 (urdf/puma560_friction.toml, profile "corke") without
# its armature.  pybullet has no reflected motor inertia and FrictionInjector does not add
# it, so the plant is "rigid body + friction"; the full model must be the same, hence
# armature = 0 for both.  (Without the rotors the wrist is very light, 4e-5 to 2e-3 kg·m²,
# and its Coulomb friction of about 1 N·m dominates it.)
corke = dp.load_friction("puma560", model, "corke")
friction = dataclasses.replace(corke, armature=np.zeros(model.n), name="corke, no armature")
viscous = friction.velocity.viscous

rigid = dp.get_backend("newton_euler", model)
full = dp.get_backend("newton_euler_friction", model, friction=friction)


def rigid_only(q, qd, v, qd_d):
    return rigid.inverse_dynamics(q, qd, v)                             # M v + h


# The full model: at which velocity to evaluate the friction?  Measured on this plant (2 s):
#   "measured"  friction(q̇): RMS 1.6e-1 rad.  At a reversal the plant's dry friction holds
#               the joint at q̇ = 0 exactly, where friction(q̇) has no dry part, so the PD term
#               must build the whole breakaway torque; on the light wrist (joint 6: 0.3 N·m on
#               4e-5 kg·m²) it never does, and joint 6 stays stuck.
#   "desired"   friction(q̇_d): diverges.  Its dry part is right, but its viscous part no longer
#               cancels the plant's: pybullet's jointDamping is an explicit −b q̇, and on joint 6
#               b dt / I = 0.22 · 1e-3 / 4e-5 ≈ 5.5 > 2, past explicit Euler's stability limit.
#   "mixed"     viscous part at q̇ (cancels the plant's damping exactly), dry part at q̇_d
#               (pushes a joint off a stop the way the trajectory goes): RMS 7e-4 rad, the
#               best, and as good as the rigid-body controller on a frictionless plant (1e-3
#               rad: what remains is the discrete-time tracking error at dt = 1 ms).
def full_model(q, qd, v, qd_d):
    tau = full.inverse_dynamics(q, qd, v)                               # M v + h + friction(q̇)
    if args.compensation == "measured":
        return tau
    tau = tau - friction.velocity.dry_torque(qd) + friction.velocity.dry_torque(qd_d)
    if args.compensation == "desired":
        tau = tau + viscous * (qd_d - qd)
    return tau


# -- the plant: pybullet's PUMA-560 with friction injected ---------------------------------
client = p.connect(p.GUI if args.gui else p.DIRECT)
p.setGravity(*GRAVITY, physicsClientId=client)
# Many solver iterations: the velocity motors that carry the dry friction converge, and
# the injected friction is exact (pybullet then equals our own stick-slip simulation).
p.setPhysicsEngineParameter(fixedTimeStep=DT, numSolverIterations=1000, numNonContactInnerIterations=1000,
                            physicsClientId=client)
with dpb.c_level_output_silenced():
    body = p.loadURDF(model.source_path, useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE,
                      physicsClientId=client)
dpb.configure_reference_body(p, body, GRAVITY, client)     # no damping, limits out of reach, motors off
# Pass the friction explicitly: FrictionInjector's default is the body's URDF <dynamics>
# (none in the bundled PUMA), not the bundled data file.
injector = dpb.FrictionInjector(body, friction=friction, physicsClientId=client)
joints = injector.dynamics.joint_indices
# The controllers work in the model's joint order, the injector in pybullet's: here they agree.
assert [p.getJointInfo(body, j, physicsClientId=client)[1].decode() for j in joints] == list(model.joint_names)


def run(controller):
    """One closed loop from the trajectory's initial state; returns (t, e), e: (steps + 1, n)."""
    q0, qd0, _ = desired(0.0)
    for j, qi, vi in zip(joints, q0, qd0):
        p.resetJointState(body, j, qi, vi, physicsClientId=client)
    steps = int(round(args.duration / DT))
    t = np.arange(steps + 1) * DT
    errors = np.zeros((steps + 1, model.n))
    for k in range(steps + 1):
        states = p.getJointStates(body, joints, physicsClientId=client)
        q, qd = np.array([s[0] for s in states]), np.array([s[1] for s in states])
        q_d, qd_d, qdd_d = desired(t[k])
        errors[k] = q_d - q
        if k == steps:
            break
        v = qdd_d + KP * (q_d - q) + KD * (qd_d - qd)
        injector.apply(controller(q, qd, v, qd_d))        # our torque; the injector adds the plant's friction
        p.stepSimulation(physicsClientId=client)
        if args.gui:
            time.sleep(DT)
    return t, errors


def rms(e):
    return float(np.sqrt(np.mean(np.square(e))))


print(f"PUMA-560 in pybullet with Corke's friction (viscous + asymmetric Coulomb, no armature); "
      f"Kp = {KP:g} 1/s², Kd = {KD:g} 1/s, dt = {DT:g} s, {args.duration:g} s per run")
started = time.perf_counter()
runs = {}
for label, controller in (("rigid only", rigid_only), (f"full model ({args.compensation})", full_model)):
    begun = time.perf_counter()
    t, e = runs[label] = run(controller)
    per_joint = "  ".join(f"{rms(e[:, i]):.1e}" for i in range(model.n))
    print(f"{label:21s} RMS error = {rms(e):.3e} rad   max |e| = {np.abs(e).max():.2e} rad   "
          f"per joint: {per_joint}   ({time.perf_counter() - begun:.1f} s)")
p.disconnect(physicsClientId=client)

(rigid_label, rigid_run), (full_label, full_run) = runs.items()
ratio = rms(rigid_run[1]) / rms(full_run[1])
print(f"RMS ratio rigid only / full model = {ratio:.1f}")
print(f"elapsed {time.perf_counter() - started:.1f} s")

if args.plot:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(11, 5.5), sharex=True, sharey=True)
    for i, ax in enumerate(axes.flat):
        for (label, (t, e)), colour in zip(runs.items(), ("C3", "C0")):
            ax.semilogy(t, np.maximum(np.abs(e[:, i]), 1e-9), colour, lw=0.9, label=label)
        ax.set_title(model.joint_names[i])
        ax.set_ylim(1e-7, 10)
        ax.grid(True, alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("t [s]")
    for ax in axes[:, 0]:
        ax.set_ylabel("|q_d − q| [rad]")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"PUMA-560 computed-torque tracking in pybullet with Corke's friction "
                 f"(RMS ratio {ratio:.0f})")
    fig.tight_layout()
    fig.savefig(args.plot, dpi=110)
    print(f"wrote {args.plot}")
