"""Pure functions over (model, batched arrays), one module per method.

* :mod:`.newton_euler` - recursive Newton-Euler in link frames (Fu Table 3.3 / 3.3-57).
* :mod:`.composite_rigid_body` - the joint-space inertia matrix in O(n²) (Featherstone Table 6.2).
* :mod:`.articulated_body` - forward dynamics in O(n) (Featherstone Table 7.1).
* :mod:`.lagrange_euler` - Uicker/Fu 4x4-matrix Lagrange-Euler (Fu §3.2), O(n⁴).
* :mod:`.regressor` - the inertial-parameter regressor τ = Y θ, on Newton-Euler's forward pass.
"""
