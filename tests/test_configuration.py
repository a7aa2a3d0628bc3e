"""The configuration space of a whole model (dyn_plugin.configuration) against pinocchio.

``integrate(model, q, v)`` and ``difference(model, q0, q1)`` against ``pin.integrate`` and
``pin.difference`` on random trees with every joint kind (``urdf_factory``'s, ``multi_dof=``:
revolute bounded and continuous, prismatic, spherical, planar, floating; with and without a
floating base), pinocchio's model built from the URDF text without our code
(``pinocchio_twin.UrdfTwin``, which also maps our angle form to pinocchio's (cos, sin)).
Tolerance 1e-12 entrywise, |v| up to ~3 (rotations up to π and beyond), and at tiny |v|
(the series branches).
"""

from __future__ import annotations

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin import configuration  # noqa: E402
from dyn_plugin.joints import FLOATING, PLANAR, SPHERICAL  # noqa: E402
from dyn_plugin.sampling import random_states  # noqa: E402
from pinocchio_twin import UrdfTwin  # noqa: E402
from urdf_factory import random_tree_urdf  # noqa: E402

KINDS = (SPHERICAL, PLANAR, FLOATING)


def _trees():
    for seed, floating in ((11, False), (12, True), (13, False)):
        xml = random_tree_urdf(seed, 8, multi_dof=KINDS, name=f"kinds{seed}")
        yield dp.load_urdf_string(xml, floating_base=floating), xml


TREES = list(_trees())
MODELS = [model for model, _ in TREES]
TWINS = {model.name: UrdfTwin(model, xml) for model, xml in TREES}


def test_the_trees_have_every_kind():
    for model in MODELS:
        assert set(model.joint_types) >= {"revolute", "prismatic", *KINDS}
        assert model.continuous.any() and (~model.continuous[np.array(model.joint_types) == "revolute"]).any()


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.name}{'-floating' if m.floating_base else ''}")
@pytest.mark.parametrize("scale", [1e-6, 1e-4, 0.3, 3.0])
def test_integrate_matches_pinocchio(model, scale):
    twin = TWINS[model.name]
    q = random_states(model, 6, seed=int(scale * 1e6) % 997).q
    v = scale * np.random.default_rng(5).normal(size=(6, model.nv))
    ours = twin.pin_q(configuration.integrate(model, q, v))
    for k in range(6):
        theirs = pin.integrate(twin.pm, twin.pin_q(q[k]), twin.pin_v(v[k]))
        np.testing.assert_allclose(ours[k], theirs, rtol=0, atol=1e-12, err_msg=f"integrate, state {k}")


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.name}{'-floating' if m.floating_base else ''}")
def test_difference_matches_pinocchio(model):
    """Between independent random configurations (rotations up to π, planar and continuous
    angles wrapped).  pinocchio's SE(2) logarithm divides sin ω by 1 − cos ω, which loses
    ε/(1 − cos ω) relative (1.7e-10 at ω = 5e-4, where ours agrees with a 50-digit
    evaluation to the last digit): pairs with a planar |ω| below 0.01 are left to the round
    trip below (at least 30 of the 40 pairs are compared)."""
    twin = TWINS[model.name]
    q0, q1 = random_states(model, 40, seed=1).q, random_states(model, 40, seed=2).q
    ours = configuration.difference(model, q0, q1)
    planar = [model.joint_slices[i][1].stop - 1 for i, kind in enumerate(model.joint_types) if kind == PLANAR]
    compared = np.nonzero(np.all(np.abs(ours[:, planar]) > 0.01, axis=1))[0]
    assert len(compared) >= 30
    for k in compared:
        theirs = twin.ours_v(pin.difference(twin.pm, twin.pin_q(q0[k]), twin.pin_q(q1[k])))
        np.testing.assert_allclose(ours[k], theirs, rtol=0, atol=1e-12, err_msg=f"difference, state {k}")


@pytest.mark.parametrize("model", MODELS[:2], ids=lambda m: m.name)
@pytest.mark.parametrize("scale", [1e-6, 1e-4, 1e-3, 0.4])
def test_difference_inverts_integrate(model, scale):
    """q₀ ⊖ (q₀ ⊕ v) = v (rotations below π), |error| ≤ 1e-12 |v| + 1e-15 (a few ulps of the
    O(1) entries of q, lost in q₁ − q₀; no cancellation in the series' neighbourhood: 1 − cos
    as 2 sin², cot as 1/tan; pinocchio's own round trip is off by 1e-8 |v| at |v| ~ 1e-4)."""
    q = random_states(model, 20, seed=3).q
    v = scale * np.random.default_rng(8).uniform(-1, 1, (20, model.nv))
    back = configuration.difference(model, q, configuration.integrate(model, q, v))
    np.testing.assert_allclose(back, v, rtol=0, atol=1e-12 * scale + 1e-15)


def test_chart_rate_is_the_derivative_of_the_chart():
    """ξ̇ of :func:`configuration.chart_rate` against finite differences of
    q₀ ⊕ ξ(t) = (q₀ ⊕ ξ) ⊕ t v: ξ(t) = difference(q₀, (q₀ ⊕ ξ) ⊕ t v), central, h = 1e-6; the
    chart rate's series is truncated at |ξ|² |v|, so ξ is small (1e-2): error ~|ξ|⁴ ~ 1e-8."""
    model = MODELS[1]
    q0 = random_states(model, 3, seed=4).q
    rng = np.random.default_rng(9)
    xi, v = 1e-2 * rng.normal(size=(3, model.nv)), rng.normal(size=(3, model.nv))
    moved = configuration.integrate(model, q0, xi)
    h = 1e-6
    numeric = (configuration.difference(model, q0, configuration.integrate(model, moved, h * v))
               - configuration.difference(model, q0, configuration.integrate(model, moved, -h * v))) / (2 * h)
    np.testing.assert_allclose(configuration.chart_rate(model, xi, v), numeric, rtol=0, atol=1e-7)


def test_a_one_dof_model_is_euclidean():
    model = dp.load_robot("puma560")
    assert configuration.is_euclidean(model)
    q, v = random_states(model, 2, seed=1).q, np.ones((2, model.nv))
    np.testing.assert_array_equal(configuration.integrate(model, q, v), q + v)
    assert not configuration.is_euclidean(MODELS[0])


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.name}{'-floating' if m.floating_base else ''}")
def test_trajectory_states_move_along_geodesics(model):
    """dyn_plugin.sampling.trajectory_states on joints of several degrees of freedom and a
    floating base: q (nq), q̇, q̈ (nv) rest to rest, and q̇, q̈ the rates of q, q̇ — pinocchio's
    ``difference`` between neighbouring samples equals the trapezoid of q̇ over the step (to
    O(h³): 2e-9 at 2001 samples), and q̇'s step that of q̈."""
    from dyn_plugin.sampling import trajectory_states

    twin = TWINS[model.name]
    q, qd, qdd, t, index = trajectory_states(model, 4002, np.random.default_rng(3), samples=2001)
    assert q.shape == (4002, model.nq) and qd.shape == qdd.shape == (4002, model.nv)
    assert list(np.unique(index)) == [0, 1]
    for k in (0, 1):
        one = index == k
        Q, V, A, h = q[one], qd[one], qdd[one], np.diff(t[one])[:, None]
        assert np.abs(V[[0, -1]]).max() < 1e-12 and np.abs(A[[0, -1]]).max() < 1e-12      # rest to rest
        steps = np.array([twin.ours_v(pin.difference(twin.pm, twin.pin_q(a), twin.pin_q(b)))
                          for a, b in zip(Q[:-1], Q[1:])])
        scale = np.abs(V).max()
        assert np.abs(steps - 0.5 * h * (V[1:] + V[:-1])).max() <= 2e-9 * max(1.0, scale)
        assert np.abs(np.diff(V, axis=0) - 0.5 * h * (A[1:] + A[:-1])).max() <= 2e-9 * max(1.0, np.abs(A).max())
        assert not np.allclose(V, 0.0)                                                          # it moves


def test_trajectory_states_of_reduced_mimic_coordinates():
    """A model in reduced coordinates (mimic=True) has fewer coordinates than joints: the
    trajectories are drawn over its independent joints (q (N, nq))."""
    from dyn_plugin.sampling import position_bounds, trajectory_states
    from test_mimic import MIMIC_URDF

    model = dp.load_urdf_string(MIMIC_URDF, mimic=True)
    assert model.nq < model.n
    q, qd, qdd, _, _ = trajectory_states(model, 300, np.random.default_rng(0))
    assert q.shape == (300, model.nq) and qd.shape == qdd.shape == (300, model.nv)
    lower, upper = (bound[model.independent_indices] for bound in position_bounds(model))
    assert np.all(q >= lower) and np.all(q <= upper)
    assert np.all(np.isfinite(dp.get_backend("newton_euler", model).inverse_dynamics(q, qd, qdd)))
