"""Analytic derivatives of inverse and forward dynamics against pinocchio and finite differences.

References:
* pinocchio's ``computeRNEADerivatives`` / ``computeABADerivatives`` on pinocchio's own
  model of the same URDF text (free-flyer root for a floating base: the derivative along
  the tangent, q ⊕ δ), mapped to our joint order;
* five-point central differences of our own τ and q̈ (step 1e-3 · max(1, |x|); along
  ``configuration.integrate`` for a floating base): accurate to ~1e-10 relative, checked at 1e-8;
* for mimic joints (pinocchio's derivatives do not take them) the finite differences.

Tolerance against pinocchio: max|ours − ref| ≤ 1e-9 · max(1, max|ref|) per matrix
(M⁻¹ of the PUMA-560 has entries up to ~3e4 and a condition number ~1e5, so entry-wise
relative errors of single small entries say nothing; measured: ≤ 2e-13 relative).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin import configuration  # noqa: E402
from dyn_plugin.errors import BackendError, InputError, ModelError  # noqa: E402
from dyn_plugin.sampling import random_states  # noqa: E402
from test_external import CASES, case_of  # noqa: E402
from test_mimic import MIMIC_URDF  # noqa: E402
from test_silent_numbers import joint, link, robot  # noqa: E402

TOL = 1e-9
BACKENDS = ("newton_euler", "lagrange_euler", "symbolic", "pinocchio")


def assert_matrices_close(ours, ref, what, tol=TOL):
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape}, expected {ref.shape}"
    for k, (a, b) in enumerate(zip(ours.reshape(-1, *ours.shape[-2:]), ref.reshape(-1, *ref.shape[-2:]))):
        err = np.abs(a - b).max() / max(1.0, np.abs(b).max())
        assert err <= tol, f"{what}, state {k}: relative error {err:.3e} > {tol:g}"


def pinocchio_derivatives(case):
    """(∂τ/∂q, ∂τ/∂v, ∂q̈/∂q, ∂q̈/∂v, M⁻¹) (N, nv, nv) of raw pinocchio at the case's states,
    forward dynamics at τ = the states' τ."""
    s, ix = case.states, np.ix_(case.iv, case.iv)
    out = []
    for k in range(len(s.q)):
        q, v = case.pin_q(s.q[k]), case.pin_v(s.qd[k])
        dq, dv, _ = pin.computeRNEADerivatives(case.pm, case.pd, q, v, case.pin_v(s.qdd[k]))
        dq, dv = dq[ix].copy(), dv[ix].copy()
        pin.computeABADerivatives(case.pm, case.pd, q, v, case.pin_v(s.tau[k]))
        inverse = np.triu(case.pd.Minv)
        out.append((dq, dv, case.pd.ddq_dq[ix].copy(), case.pd.ddq_dv[ix].copy(),
                    (inverse + np.triu(inverse, 1).T)[ix]))
    return tuple(np.array(part) for part in zip(*out))


@functools.lru_cache(maxsize=None)
def reference(label):
    return pinocchio_derivatives(case_of(label))


@functools.lru_cache(maxsize=None)
def backend(name, label):
    return dp.get_backend(name, case_of(label).model)


LABELS = [label for label in CASES if label in (*dp.list_robots(), "tree5", "tree7", "chain4",
                                                   "puma560-floating", "tree5-floating")]


# generating code for the floating PUMA-560's 12-joint chain takes ~10 s; the same wrapper is
# covered by tree5-floating
PAIRS = [(label, name) for label in LABELS for name in BACKENDS if (label, name) != ("puma560-floating", "symbolic")]
PAIRS.append(("scara", "symbolic_numba"))     # its typed one-state functions and its lanes (compiles in seconds)


@pytest.mark.parametrize("label, name", PAIRS)
def test_derivatives_equal_pinocchios(label, name):
    case = case_of(label)
    be, s = backend(name, label), case.states
    dq, dv, fq, fv, minv = reference(label)
    ours = be.inverse_dynamics_derivatives(s.q, s.qd, s.qdd)
    assert_matrices_close(ours[0], dq, f"{name} ∂τ/∂q")
    assert_matrices_close(ours[1], dv, f"{name} ∂τ/∂q̇")
    ours = be.forward_dynamics_derivatives(s.q, s.qd, s.tau)
    for mine, ref, what in zip(ours, (fq, fv, minv), ("∂q̈/∂q", "∂q̈/∂q̇", "M⁻¹")):
        assert_matrices_close(mine, ref, f"{name} {what}")
    k = 1                                               # one state: the single-state paths
    ours = be.inverse_dynamics_derivatives(s.q[k], s.qd[k], s.qdd[k]) + be.forward_dynamics_derivatives(
        s.q[k], s.qd[k], s.tau[k])
    for mine, ref, what in zip(ours, (dq, dv, fq, fv, minv), ("∂τ/∂q", "∂τ/∂q̇", "∂q̈/∂q", "∂q̈/∂q̇", "M⁻¹")):
        assert_matrices_close(mine, ref[k], f"{name} {what}, one state")


def central_differences(function, model, q, qd, x, rate_step=1e-3):
    """(∂f/∂q, ∂f/∂q̇) (nv, nv) of f(q, q̇, x) at one state by the five-point central
    difference (error O(h⁴) + O(ε/h)) with h_j = rate_step · max(1, |q̇_j|) for q̇ (1e-3
    for q, moved along configuration.integrate)."""
    nv = len(qd)
    dq, dv = np.empty((nv, nv)), np.empty((nv, nv))

    def stencil(f, h):
        return (f(-2 * h) - 8 * f(-h) + 8 * f(h) - f(2 * h)) / (12 * h)

    for j in range(nv):
        e = np.eye(nv)[j]
        dv[:, j] = stencil(lambda t: function(q, qd + t * e, x), rate_step * max(1.0, abs(qd[j])))
        dq[:, j] = stencil(lambda t: function(configuration.integrate(model, q[None], t * e[None])[0], qd, x), 1e-3)
    return dq, dv


@pytest.mark.parametrize("label", ["puma560", "tree7", "tree5-floating"])
def test_derivatives_equal_central_differences_of_our_own_dynamics(label):
    case = case_of(label)
    be, s = backend("newton_euler", label), case.states
    k = 1
    q, qd, qdd, tau = s.q[k], s.qd[k], s.qdd[k], s.tau[k]
    ref_q, ref_v = central_differences(be.inverse_dynamics, case.model, q, qd, qdd)
    dq, dv = be.inverse_dynamics_derivatives(q, qd, qdd)
    assert_matrices_close(dq, ref_q, "∂τ/∂q", 1e-8)
    assert_matrices_close(dv, ref_v, "∂τ/∂q̇", 1e-8)
    ref_q, ref_v = central_differences(be.forward_dynamics, case.model, q, qd, tau)
    fq, fv, minv = be.forward_dynamics_derivatives(q, qd, tau)
    assert_matrices_close(fq, ref_q, "∂q̈/∂q", 1e-8)
    assert_matrices_close(fv, ref_v, "∂q̈/∂q̇", 1e-8)
    step = 1e-3 * max(1.0, np.abs(tau).max())
    columns = [(be.forward_dynamics(q, qd, tau + step * e) - be.forward_dynamics(q, qd, tau - step * e)) / (2 * step)
               for e in np.eye(len(tau))]
    assert_matrices_close(minv, np.array(columns).T, "∂q̈/∂τ", 1e-9)     # q̈ is affine in τ


@pytest.mark.parametrize("floating_base", [False, True])
def test_mimic_joints_against_central_differences(floating_base):
    model = dp.load_urdf_string(MIMIC_URDF, mimic=True, floating_base=floating_base)
    be = dp.get_backend("newton_euler", model)
    s = random_states(model, 2, seed=5)
    ref_q, ref_v = central_differences(be.inverse_dynamics, model, s.q[0], s.qd[0], s.qdd[0])
    dq, dv = be.inverse_dynamics_derivatives(s.q[0], s.qd[0], s.qdd[0])
    assert_matrices_close(dq, ref_q, "mimic ∂τ/∂q", 1e-8)
    assert_matrices_close(dv, ref_v, "mimic ∂τ/∂q̇", 1e-8)
    ref_q, ref_v = central_differences(be.forward_dynamics, model, s.q[0], s.qd[0], s.tau[0])
    fq, fv, minv = be.forward_dynamics_derivatives(s.q[0], s.qd[0], s.tau[0])
    assert_matrices_close(fq, ref_q, "mimic ∂q̈/∂q", 1e-8)
    assert_matrices_close(fv, ref_v, "mimic ∂q̈/∂q̇", 1e-8)
    assert_matrices_close(minv, np.linalg.inv(be.mass_matrix(s.q[0])), "mimic M⁻¹")


def test_batches_are_the_single_states_and_independent_of_the_workers():
    case = case_of("tree7")
    model = case.model
    s = random_states(model, 2100, seed=3)          # above PARALLEL_FROM: the parallel loop
    one = dp.get_backend("newton_euler", model, workers=1)
    two = dp.get_backend("newton_euler", model, workers=2)
    for method, args in (("inverse_dynamics_derivatives", (s.q, s.qd, s.qdd)),
                         ("forward_dynamics_derivatives", (s.q, s.qd, s.tau))):
        serial, parallel = getattr(one, method)(*args), getattr(two, method)(*args)
        for a, b in zip(serial, parallel):
            np.testing.assert_array_equal(a, b)
        single = getattr(one, method)(*(x[7] for x in args))
        for a, b in zip(single, serial):
            np.testing.assert_array_equal(a, b[7])


def test_bad_input_is_refused_clearly():
    model = dp.load_robot("puma560")
    be = dp.get_backend("newton_euler", model)
    with pytest.raises(InputError, match=r"\(6,\)"):
        be.inverse_dynamics_derivatives(np.zeros(5), np.zeros(6), np.zeros(6))
    with pytest.raises(InputError, match="finite"):
        be.forward_dynamics_derivatives(np.full(6, np.nan), np.zeros(6), np.zeros(6))
    with pytest.raises(BackendError, match="no analytic derivatives"):
        dp.get_backend("pybullet", model).inverse_dynamics_derivatives(np.zeros(6), np.zeros(6), np.zeros(6))



@pytest.mark.parametrize("name", ["newton_euler", "lagrange_euler", "pinocchio"])
def test_forward_dynamics_derivatives_name_a_joint_moving_nothing(name):
    """A leaf link without <inertial>: M is singular, q̈ and its derivatives undefined."""
    xml = robot(link("a"), '<link name="b"/>', joint("j1", "base", "a"), joint("j2", "a", "b", axis="0 1 0"))
    be = dp.get_backend(name, dp.load_urdf_string(xml))
    for q in (np.zeros(2), np.zeros((3, 2))):
        with pytest.raises(ModelError, match="singular.*joints moving no mass or inertia: 'j2'"):
            be.forward_dynamics_derivatives(q, np.zeros_like(q), np.ones_like(q))


# -- friction: the chain rule through Dhanaraj's input torque ---------------------------------

def _moving_states(model, count, seed, slowest=0.2):
    """Random states whose joint rates are all at least ``slowest`` (rad/s or m/s) from 0,
    so that sharp dry friction is differentiable and the differences do not cross q̇ = 0."""
    s = random_states(model, count, seed=seed)
    return dataclasses.replace(s, qd=np.where(np.abs(s.qd) < slowest, np.copysign(slowest, s.qd), s.qd))


def _friction_backend(profile, smoothing, rigid="newton_euler"):
    model = dp.load_robot("puma560")
    be = dp.get_backend("newton_euler_friction", model, profile=profile)
    friction = be.friction.with_smoothing(smoothing) if smoothing else be.friction
    return dp.get_backend("newton_euler_friction", model, friction=friction, rigid=rigid)


@pytest.mark.parametrize("profile, smoothing", [("corke", 0.0), ("dhanaraj", 0.0), ("dhanaraj", 0.5)])
def test_friction_derivatives_equal_central_differences(profile, smoothing):
    """Viscous + asymmetric Coulomb (corke); bearings from the joint wrenches, transmission
    efficiency and breakaway, link armature (dhanaraj, the thesis's Table 3.4), sharp and
    smoothed: ∂τ_in and ∂q̈ against the five-point differences of our own τ_in and q̈."""
    be = _friction_backend(profile, smoothing)
    s = _moving_states(be.model, 2, seed=8)
    for k in range(2):
        q, qd = s.q[k], s.qd[k]
        ref_q, ref_v = central_differences(be.inverse_dynamics, be.model, q, qd, s.qdd[k], rate_step=1e-4)
        dq, dv = be.inverse_dynamics_derivatives(q, qd, s.qdd[k])
        assert_matrices_close(dq, ref_q, f"{profile} ∂τ/∂q", 1e-8)
        assert_matrices_close(dv, ref_v, f"{profile} ∂τ/∂q̇", 1e-8)
        ref_q, ref_v = central_differences(be.forward_dynamics, be.model, q, qd, s.tau[k], rate_step=1e-4)
        fq, fv, _ = be.forward_dynamics_derivatives(q, qd, s.tau[k])
        assert_matrices_close(fq, ref_q, f"{profile} ∂q̈/∂q", 1e-8)
        assert_matrices_close(fv, ref_v, f"{profile} ∂q̈/∂q̇", 1e-8)


def test_friction_derivatives_do_not_depend_on_the_rigid_backend():
    """The same friction on pinocchio's derivatives (rigid="pinocchio") and on ours."""
    ours, theirs = _friction_backend("dhanaraj", 0.0), _friction_backend("dhanaraj", 0.0, rigid="pinocchio")
    s = _moving_states(ours.model, 3, seed=9)
    for a, b in zip(ours.forward_dynamics_derivatives(s.q, s.qd, s.tau),
                    theirs.forward_dynamics_derivatives(s.q, s.qd, s.tau)):
        assert_matrices_close(a, b, "friction on ours vs on pinocchio")


def test_friction_on_a_floating_base():
    case = case_of("tree5-floating")
    friction = dp.FrictionModel.create(case.model.n, viscous=0.7, coulomb=1.5, smoothing=0.3)
    be = dp.get_backend("newton_euler_friction", case.model, friction=friction)
    s = case.states
    ref_q, ref_v = central_differences(be.inverse_dynamics, case.model, s.q[0], s.qd[0], s.qdd[0], rate_step=1e-4)
    dq, dv = be.inverse_dynamics_derivatives(s.q[0], s.qd[0], s.qdd[0])
    assert_matrices_close(dq, ref_q, "floating friction ∂τ/∂q", 1e-8)
    assert_matrices_close(dv, ref_v, "floating friction ∂τ/∂q̇", 1e-8)


def test_sharp_dry_friction_at_rest_has_no_derivative():
    be = _friction_backend("corke", 0.0)
    s = _moving_states(be.model, 1, seed=10)
    qd = s.qd[0].copy()
    qd[2] = 0.0
    with pytest.raises(InputError, match="joint3.*smoothing > 0"):
        be.inverse_dynamics_derivatives(s.q[0], qd, s.qdd[0])
    with pytest.raises(InputError, match="joint3.*smoothing > 0"):
        be.forward_dynamics_derivatives(s.q[0], qd, s.tau[0])
