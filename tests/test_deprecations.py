"""Names that changed keep working, with a DeprecationWarning, and give the same numbers
as their replacements (the replacements themselves are checked against pinocchio elsewhere)."""

from __future__ import annotations

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.algorithms import lagrange_euler as le
from dyn_plugin.algorithms import newton_euler as ne
from dyn_plugin.terms import Terms

GRAVITY = np.array([0.4, -1.3, -9.7])


@pytest.fixture(scope="module")
def states():
    model = dp.load_robot("stanford")
    rng = np.random.default_rng(3)
    return model, *rng.normal(size=(3, 5, model.n))


def test_a_gravity_vector_in_place_of_terms_means_that_gravity(states):
    model, q, qd, qdd = states
    tilted = model.with_gravity(GRAVITY)
    for algorithm in (ne.inverse_dynamics, le.inverse_dynamics):
        with pytest.warns(DeprecationWarning, match="with_gravity"):
            old = algorithm(model, q, qd, qdd, GRAVITY)
        np.testing.assert_array_equal(old, algorithm(tilted, q, qd, qdd, Terms.ALL))
    with pytest.warns(DeprecationWarning):
        np.testing.assert_array_equal(le.gravity_vector(model, q, GRAVITY), le.gravity_vector(tilted, q))
    with pytest.warns(DeprecationWarning):
        old = le.configuration_space(model, q, GRAVITY)
    for a, b in zip(old, le.configuration_space(tilted, q)):
        np.testing.assert_array_equal(a, b)


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


def test_old_backend_lists_still_answer():
    from dyn_plugin.backends import registry

    import warnings

    with warnings.catch_warnings():                # the import warns once per process (see test_cli)
        warnings.simplefilter("ignore", DeprecationWarning)
        import dyn_plugin.bench as old_bench
    with pytest.warns(DeprecationWarning, match="registry"):
        assert set(old_bench.KNOWN_OURS) == set(registry.backends(("ours", "generated")))
