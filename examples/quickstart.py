"""Inverse and forward dynamics of the PUMA-560 with our Newton-Euler backend, checked
against pinocchio on a batch of random states.

    python examples/quickstart.py
"""

import numpy as np

import dyn_plugin as dp

model = dp.load_robot("puma560")             # or dp.load_robot("path/to/robot.urdf")
ours = dp.get_backend("newton_euler", model)
reference = dp.get_backend("pinocchio", model)

rng = np.random.default_rng(0)
q = rng.uniform(model.lower, model.upper, (500, model.n))
qd = rng.uniform(-2, 2, (500, model.n))
qdd = rng.uniform(-5, 5, (500, model.n))

tau = ours.inverse_dynamics(q, qd, qdd)       # (500, 6) N·m
M = ours.mass_matrix(q)                       # (500, 6, 6) kg·m²
back = ours.forward_dynamics(q, qd, tau)      # (500, 6) rad/s²

print(f"τ  vs pinocchio rnea: max |Δ| = {np.abs(tau - reference.inverse_dynamics(q, qd, qdd)).max():.2e} N·m")
print(f"M  vs pinocchio crba: max |Δ| = {np.abs(M - reference.mass_matrix(q)).max():.2e} kg·m²")
print(f"forward(inverse(q̈)) − q̈:      max |Δ| = {np.abs(back - qdd).max():.2e} rad/s²")
print(f"M symmetric to {np.abs(M - M.transpose(0, 2, 1)).max():.1e}; "
      f"smallest eigenvalue {np.linalg.eigvalsh(M).min():.2e} kg·m² (positive definite)")
