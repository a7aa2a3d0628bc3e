"""Terms: which parts of τ = M q̈ + C q̇ + g an algorithm computes (dyn_plugin/terms.py), held
to pinocchio's mass matrix; anything but a Terms value is refused."""

from __future__ import annotations

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.algorithms import lagrange_euler as le
from dyn_plugin.algorithms import newton_euler as ne
from dyn_plugin.terms import Terms


@pytest.fixture(scope="module")
def states():
    model = dp.load_robot("stanford")
    rng = np.random.default_rng(3)
    return model, *rng.normal(size=(3, 5, model.n))


def test_terms_select_the_parts_of_tau(states):
    """τ = M q̈ + C q̇ + g: the three Terms add up to ALL, and BIAS is VELOCITY + GRAVITY."""
    model, q, qd, qdd = states
    for algorithm in (ne.inverse_dynamics, le.inverse_dynamics):
        part = {t: algorithm(model, q, qd, qdd, t) for t in (Terms.INERTIA, Terms.VELOCITY, Terms.GRAVITY,
                                                             Terms.BIAS, Terms.ALL)}
        np.testing.assert_allclose(part[Terms.INERTIA] + part[Terms.VELOCITY] + part[Terms.GRAVITY],
                                   part[Terms.ALL], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(part[Terms.VELOCITY] + part[Terms.GRAVITY], part[Terms.BIAS],
                                   rtol=1e-12, atol=1e-12)
        M = dp.get_backend("pinocchio", model).mass_matrix(q)
        np.testing.assert_allclose(part[Terms.INERTIA], np.einsum("nij,nj->ni", M, qdd), rtol=1e-10, atol=1e-10)
    with pytest.raises(dp.InputError, match="Terms"):
        ne.inverse_dynamics(model, q, qd, qdd, "gravity")
    for algorithm in (ne.inverse_dynamics, le.inverse_dynamics):      # gravity lives in the model only
        with pytest.raises(dp.InputError, match="Terms"):
            algorithm(model, q, qd, qdd, np.array([0.4, -1.3, -9.7]))
