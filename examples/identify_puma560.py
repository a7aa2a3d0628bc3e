"""Identify the PUMA-560's base inertial parameters and Dhanaraj's friction from a
simulated excitation trajectory, and plot measured vs predicted torques.

The "measured" torques come from the newton_euler_friction backend with Dhanaraj's
journal-bearing friction and transmission breakaway (thesis Table 3.4) plus Corke's
viscous friction on the rigid PUMA-560 (no motor inertia: see
dyn_plugin.identification.dhanaraj_friction), along a random Fourier-series trajectory,
with 1 % Gaussian torque noise.  dp.identify then fits the 36 base inertial parameters and
the viscous, Coulomb(+breakaway) and bearing-μ parameters by weighted least squares, and
again with physical=True (every link a rigid body, dyn_plugin.identification.physical).

    python examples/identify_puma560.py [--plot FILE.png] [--quick]
"""

import argparse

import numpy as np

import dyn_plugin as dp
from dyn_plugin.identification import dhanaraj_friction, friction_truth, plot_fit, simulate_measurements

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--plot", metavar="FILE.png", help="plot measured vs predicted torques to FILE.png")
parser.add_argument("--quick", action="store_true", help="fewer samples")
args = parser.parse_args()

model = dp.load_robot("puma560")
friction = dhanaraj_friction(model)
terms = ("viscous", "coulomb", "bearing")
for noise in (0.0, 0.01):
    data = simulate_measurements(model, friction, noise=noise, samples=200 if args.quick else 600, seed=1)
    result = dp.identify(model, data.q, data.qd, data.qdd, data.tau, friction=terms, bearing=friction,
                         nominal=data.rigid_model)
    truth = np.concatenate([result.base.values(data.theta),
                            [friction_truth(friction, model, terms)[name] for name in result.friction_names]])
    error = result.values - truth
    scale = np.maximum(np.abs(truth), 1e-3 * np.abs(truth).max())
    print(f"noise {100 * noise:g} %: condition number {result.condition_number:.4g}, "
          f"max relative error {np.max(np.abs(error) / scale):.3g}, "
          f"max |error| / σ = {np.max(np.abs(error) / result.std_errors):.3g}, "
          f"residual {100 * result.relative_rms_error:.3g} % RMS")
print()
print("bearing friction coefficients (true 0.1):")
for name in ("mu_joint1", "mu_joint2", "mu_joint3"):
    value, sigma = result.parameter(name)
    print(f"  {name} = {value:.4f} ± {sigma:.4f}")
physical = dp.identify(model, data.q, data.qd, data.qdd, data.tau, friction=terms, bearing=friction,
                       nominal=data.rigid_model, physical=True)
bad = [link for link, ok in physical.consistency.items() if not ok]
print(f"physical=True (rigid-body constraints): residual {100 * physical.relative_rms_error:.3g} % RMS, "
      + ("every link consistent" if not bad else "not consistent for " + ", ".join(bad))
      + f", distance to nominal {physical.distance_to_nominal['total']:.3g}")
print()
print(result.report())
if args.plot:
    print(f"wrote {plot_fit(result, args.plot, data.t)}")
