"""dyn_plugin.body_sums states the Coriolis matrix and the regressor a second time (as sums
over the bodies, for joints of any kind); on one-dof joints on a fixed base, where the
first statements apply (the polarised ½ ∂h/∂q̇ of Backend, algorithms/regressor.py), the
two agree to rounding on random trees (coordinate axes of either sign and random ones)."""

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.algorithms.regressor import joint_torque_regressor as recursive_regressor
from dyn_plugin.body_sums import coriolis_matrix, joint_torque_regressor
from dyn_plugin.sampling import random_states
from urdf_factory import random_tree_urdf


def relative(a, b) -> float:
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("seed, n, options", [(11, 6, {}), (12, 9, {"branched": True}), (13, 5, {"prismatic": True})])
def test_the_body_sums_equal_the_first_statements_on_one_dof_joints(seed, n, options):
    model = dp.load_urdf_string(random_tree_urdf(np.random.default_rng(seed), n, name=f"tree{seed}", **options))
    s = random_states(model, 6, seed=seed)
    assert relative(joint_torque_regressor(model, s.q, s.qd, s.qdd), recursive_regressor(model, s.q, s.qd, s.qdd)) <= 1e-13
    polarised = dp.get_backend("newton_euler", model).coriolis_matrix(s.q, s.qd)
    assert relative(coriolis_matrix(model, s.q, s.qd), polarised) <= 1e-13
