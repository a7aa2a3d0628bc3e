"""The compiled fast path (dyn_plugin.compiled) equals the readable numpy reference.

Every quantity of ``newton_euler`` (compiled, the default) against ``newton_euler`` with
``compiled=False`` (dyn_plugin.algorithms), on every bundled robot and on random trees
with prismatic joints, general axes and branches; the single-state path against the batch
path; the parallel path against the serial one; the terms switch (dyn_plugin.terms.Terms)
and the armature of CompiledDynamics; the friction backend over the compiled newton_euler
against the same over the numpy one.  Tolerance 1e-12 relative to max(1, |reference|).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.compiled import CompiledDynamics, entry_points, shifted_spd_solve, status
from dyn_plugin.errors import InputError
from dyn_plugin.loops import PARALLEL_FROM
from dyn_plugin.terms import Terms
from urdf_factory import random_tree_urdf

TOL = 1e-12
TREES = [(201, 6, dict(branched=False)), (202, 8, dict(branched=True)), (203, 5, dict(branched=True, prismatic=True))]


def rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / np.maximum(1.0, np.abs(b))))


def assert_same_accelerations(fast, reference, M):
    """q̈ from two backward-stable solvers differ by up to ~ε·cond(M) each (cond(M) reaches
    3e5 on the Stanford wrist), so compare per state, norm-wise, against 1e-15·cond(M)
    (never looser than 1e-12).  The torque-space check is in assert_solves."""
    error = np.linalg.norm(fast - reference, axis=-1) / np.maximum(1.0, np.linalg.norm(reference, axis=-1))
    assert np.all(error <= np.maximum(1e-12, 1e-15 * np.linalg.cond(M)))


def assert_solves(reference_backend, q, qd, tau, qdd):
    """Backward error: the reference's τ(q, q̇, q̈) reproduces τ to 1e-12."""
    assert rel(reference_backend.inverse_dynamics(q, qd, qdd), tau) <= TOL


def _models():
    models = [dp.load_robot(name) for name in dp.list_robots()]
    for seed, n, options in TREES:
        models.append(dp.load_urdf_string(random_tree_urdf(seed, n, **options)))
    return models


MODELS = _models()
IDS = [m.name + (f"-{i}" if i >= 3 else "") for i, m in enumerate(MODELS)]


def _states(model, N, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-np.pi, np.pi, (N, model.n)), rng.normal(0, 2, (N, model.n)), rng.normal(0, 5, (N, model.n))


@pytest.fixture(scope="module", params=range(len(MODELS)), ids=IDS)
def pair(request):
    model = MODELS[request.param]
    return dp.get_backend("newton_euler", model), dp.get_backend("newton_euler", model, compiled=False)


def test_every_quantity_equals_the_reference(pair):
    fast, ref = pair
    q, qd, qdd = _states(fast.model, 40)
    assert rel(fast.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd)) <= TOL
    assert rel(fast.mass_matrix(q), ref.mass_matrix(q)) <= TOL
    assert rel(fast.bias_forces(q, qd), ref.bias_forces(q, qd)) <= TOL
    assert rel(fast.gravity_torques(q), ref.gravity_torques(q)) <= TOL
    assert rel(fast.coriolis_matrix(q, qd), ref.coriolis_matrix(q, qd)) <= 1e-9   # polarisation: 1e-16/s
    tau = ref.inverse_dynamics(q, qd, qdd)
    qdd_fast = fast.forward_dynamics(q, qd, tau)
    assert_solves(ref, q, qd, tau, qdd_fast)
    assert_same_accelerations(qdd_fast, ref.forward_dynamics(q, qd, tau), ref.mass_matrix(q))
    for mine, theirs in zip(fast.joint_wrenches(q, qd, qdd), ref.joint_wrenches(q, qd, qdd)):
        assert rel(mine, theirs) <= TOL


def test_mass_matrix_is_exactly_symmetric_and_blocks_branches(pair):
    fast, _ = pair
    q, _, _ = _states(fast.model, 10)
    M = fast.mass_matrix(q)
    assert np.array_equal(M, np.swapaxes(M, 1, 2))
    model = fast.model
    for i in range(model.n):
        for j in range(model.n):
            if i not in model.ancestors(j) and j not in model.ancestors(i):
                assert np.all(M[:, i, j] == 0.0)         # different branches do not couple


def test_single_state_path_agrees_with_the_batch_path(pair):
    """One state runs the per-state kernels, a batch the recursions across SIMD lanes
    (the lanes forms of compiled.newton_euler, articulated_body, composite_rigid_body), whose sums are formed in another order: τ and M agree to 1e-12,
    q̈ to the accuracy of the solve (all three are held to pinocchio in
    tests/test_link_lanes.py)."""
    fast, _ = pair
    q, qd, qdd = _states(fast.model, 3, seed=1)
    for k in range(3):
        assert rel(fast.inverse_dynamics(q[k], qd[k], qdd[k]), fast.inverse_dynamics(q, qd, qdd)[k]) <= TOL
        assert rel(fast.mass_matrix(q[k]), fast.mass_matrix(q)[k]) <= TOL
        assert rel(fast.bias_forces(q[k], qd[k]), fast.bias_forces(q, qd)[k]) <= TOL
        single = fast.forward_dynamics(q[k], qd[k], qdd[k])
        assert_same_accelerations(single[None], fast.forward_dynamics(q, qd, qdd)[k:k + 1], fast.mass_matrix(q[k:k + 1]))


def test_parallel_batches_equal_serial_ones():
    fast = dp.get_backend("newton_euler", dp.load_robot("puma560"))
    q, qd, qdd = _states(fast.model, PARALLEL_FROM + 37)
    big = fast.inverse_dynamics(q, qd, qdd)
    small = np.concatenate([fast.inverse_dynamics(q[k:k + 500], qd[k:k + 500], qdd[k:k + 500])
                            for k in range(0, len(q), 500)])
    assert np.array_equal(big, small)
    assert np.array_equal(fast.mass_matrix(q)[-5:], fast.mass_matrix(q[-5:]))
    assert np.array_equal(fast.forward_dynamics(q, qd, qdd)[-5:], fast.forward_dynamics(q[-5:], qd[-5:], qdd[-5:]))


@pytest.mark.parametrize("convert", [list, lambda x: x.astype(np.float32).astype(np.int64),
                                     lambda x: np.repeat(x, 2)[::2], lambda x: np.asfortranarray(x)],
                         ids=["list", "int", "strided", "fortran"])
def test_other_array_kinds_take_the_validating_path(convert):
    """... which runs the batch code (across lanes: equal to the one-state kernel's to rounding)."""
    fast = dp.get_backend("newton_euler", dp.load_robot("puma560"))
    q, qd, qdd = (x[0] for x in _states(fast.model, 1, seed=2))
    q = np.round(q)
    expected = fast.inverse_dynamics(np.asarray(convert(q), dtype=float), qd, qdd)
    assert rel(fast.inverse_dynamics(convert(q), qd, qdd), expected) <= TOL
    readonly = qd.copy()
    readonly.setflags(write=False)
    assert rel(fast.bias_forces(q, readonly), fast.bias_forces(q, qd.copy())) <= TOL


@pytest.mark.parametrize("method, args, message", [
    ("inverse_dynamics", (np.zeros(5), np.zeros(6), np.zeros(6)), r"q must have shape \(6,\) or \(N, 6\), got \(5,\)"),
    ("inverse_dynamics", (np.zeros(6), np.array([0, 0, np.nan, 0, 0, 0.0]), np.zeros(6)), "qd has a non-finite entry"),
    ("forward_dynamics", (np.zeros(6), np.zeros(6), np.full(6, np.inf)), "tau has a non-finite entry"),
    ("mass_matrix", (np.zeros(7),), r"q must have shape \(6,\)"),
    ("bias_forces", (np.zeros(6), "fast"), "qd must be numbers"),
])
def test_bad_input_on_the_fast_path_is_named(method, args, message):
    fast = dp.get_backend("newton_euler", dp.load_robot("puma560"))
    with pytest.raises(InputError, match=message):
        getattr(fast, method)(*args)


@pytest.mark.parametrize("profile", ["corke", "dhanaraj"])
def test_friction_backend_over_compiled_equals_over_numpy(profile):
    """ID, FD (with joints at rest, which need stiction) and M of newton_euler_friction
    against the same wrapper over the numpy newton_euler (``compiled=False``), batches and
    one state; and its short path for one state against the composition of the breakdown."""
    model = dp.load_robot("puma560")
    fast = dp.get_backend("newton_euler_friction", model, profile=profile)
    ref = dp.get_backend("newton_euler_friction", model, profile=profile, compiled=False)
    assert fast.compiled and not ref.compiled and not ref.rigid.compiled
    q, qd, qdd = _states(model, 30, seed=3)
    qd[::3, 1] = 0.0                                     # joint 2 at rest in a third of the states
    assert rel(fast.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd)) <= TOL
    assert rel(fast.inverse_dynamics(q[1], qd[1], qdd[1]), ref.inverse_dynamics(q[1], qd[1], qdd[1])) <= TOL
    assert rel(fast.inverse_dynamics(q[1], qd[1], qdd[1]), ref.inverse_dynamics_breakdown(q[1], qd[1], qdd[1]).input) <= TOL
    assert rel(fast.mass_matrix(q), ref.mass_matrix(q)) <= TOL
    tau = ref.inverse_dynamics(q, qd, qdd) + np.random.default_rng(4).normal(0, 3, q.shape)
    M = ref.mass_matrix(q)
    assert_same_accelerations(fast.forward_dynamics(q, qd, tau), ref.forward_dynamics(q, qd, tau), M)
    for k in (0, 1):                                     # at rest (stiction) and sliding, one state
        assert_same_accelerations(fast.forward_dynamics(q[k], qd[k], tau[k]),
                                  ref.forward_dynamics(q[k], qd[k], tau[k]), M[k])
        assert_same_accelerations(fast.forward_dynamics(q[k], qd[k], tau[k]),
                                  fast.forward_dynamics(q[k:k + 1], qd[k:k + 1], tau[k:k + 1])[0], M[k])


def test_terms_select_the_parts_of_the_torque(pair):
    """CompiledDynamics.torques(q, q̇, q̈, terms): INERTIA is M q̈, VELOCITY C q̇, GRAVITY g;
    the parts add up to the whole; the named methods are their terms; gravity is the model's."""
    fast, _ = pair
    model = fast.model
    compiled = CompiledDynamics(model)
    q, qd, qdd = _states(model, 12, seed=5)
    parts = {terms: compiled.torques(q, qd, qdd, terms) for terms in (Terms.INERTIA, Terms.VELOCITY, Terms.GRAVITY)}
    whole = compiled.torques(q, qd, qdd, Terms.ALL)
    assert rel(np.einsum("nij,nj->ni", compiled.mass_matrix(q), qdd), parts[Terms.INERTIA]) <= TOL
    assert rel(sum(parts.values()), whole) <= TOL
    assert np.array_equal(whole, compiled.inverse_dynamics(q, qd, qdd))
    assert np.array_equal(compiled.torques(q, qd, qdd, Terms.BIAS), compiled.bias_forces(q, qd))
    assert np.array_equal(parts[Terms.GRAVITY], compiled.gravity_torques(q))
    assert np.array_equal(parts[Terms.VELOCITY], compiled.velocity_terms(q, qd))
    assert rel(compiled.torques(q, qd, qdd, Terms.INERTIA | Terms.GRAVITY),
               parts[Terms.INERTIA] + parts[Terms.GRAVITY]) <= TOL
    assert np.array_equal(compiled.torques(q, qd, qdd, Terms(0)), np.zeros_like(q))
    assert np.array_equal(compiled.torques(q, qd, qdd, int(Terms.BIAS)), compiled.bias_forces(q, qd))
    with pytest.raises(InputError, match="terms must be"):
        compiled.torques(q, qd, qdd, True)
    moon = CompiledDynamics(model.with_gravity(0.165 * np.asarray(model.gravity)))
    assert rel(moon.gravity_torques(q), 0.165 * compiled.gravity_torques(q)) <= TOL


def test_armature_is_on_the_diagonal_of_M_only():
    """CompiledDynamics(model, armature=a): M + diag(a), τ + a q̈ (INERTIA only), the
    articulated-body q̈ solves (M + diag a) q̈ = τ − bias; wrenches do not change."""
    model = dp.load_robot("stanford")                    # revolute and prismatic joints
    a = np.linspace(0.2, 1.2, model.n)
    plain, rotors = CompiledDynamics(model), CompiledDynamics(model, armature=a)
    q, qd, qdd = _states(model, 20, seed=6)
    assert rel(rotors.mass_matrix(q), plain.mass_matrix(q) + np.diag(a)) <= TOL
    assert rel(rotors.inverse_dynamics(q, qd, qdd), plain.inverse_dynamics(q, qd, qdd) + a * qdd) <= TOL
    assert np.array_equal(rotors.bias_forces(q, qd), plain.bias_forces(q, qd))
    tau = rotors.inverse_dynamics(q, qd, qdd)
    assert_same_accelerations(rotors.forward_dynamics(q, qd, tau), qdd, rotors.mass_matrix(q))
    solved = shifted_spd_solve(plain.mass_matrix(q), a, tau - plain.bias_forces(q, qd))
    assert_same_accelerations(solved, qdd, rotors.mass_matrix(q))
    one = np.empty(model.n)
    assert entry_points.single("shifted_spd_solve")(plain.mass_matrix(q[:1])[0], a, (tau - plain.bias_forces(q, qd))[0],
                                                one) == status.OK
    assert np.array_equal(one, solved[0])
    for mine, theirs in zip(rotors.joint_wrenches(q, qd, qdd), plain.joint_wrenches(q, qd, qdd)):
        assert np.array_equal(mine, theirs)


def test_a_million_states_stay_within_a_few_hundred_megabytes():
    """Inverse and forward dynamics of 10⁶ PUMA-560 states in one call: the peak memory
    beyond the inputs and outputs (48 MB per (10⁶, 6) array) stays small (chunked scratch)."""
    script = textwrap.dedent("""
        import resource, numpy as np, dyn_plugin as dp
        be = dp.get_backend("newton_euler", dp.load_robot("puma560"))
        be.inverse_dynamics(np.zeros((4, 6)), np.zeros((4, 6)), np.zeros((4, 6)))
        be.forward_dynamics(np.zeros((4, 6)), np.zeros((4, 6)), np.zeros((4, 6)))
        q, qd, x = np.random.default_rng(0).normal(size=(3, 1_000_000, 6))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        tau = be.inverse_dynamics(q, qd, x)
        qdd = be.forward_dynamics(q, qd, tau)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert np.abs(qdd - x).max() < 1e-6 * max(1.0, np.abs(x).max())
        print((after - before) / 1024)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    growth_mb = float(out.stdout.split()[-1])
    assert growth_mb < 200, f"peak memory grew by {growth_mb:.0f} MB for two 48 MB outputs"


@pytest.fixture(scope="module")
def symbolic_cache(tmp_path_factory):
    import os
    old = os.environ.get("DYN_PLUGIN_CACHE")
    os.environ["DYN_PLUGIN_CACHE"] = str(tmp_path_factory.mktemp("symbolic_cache"))
    yield
    if old is None:
        os.environ.pop("DYN_PLUGIN_CACHE")
    else:
        os.environ["DYN_PLUGIN_CACHE"] = old


@pytest.mark.parametrize("index", [0, 1, 2, 4], ids=[IDS[i] for i in (0, 1, 2, 4)])
def test_generated_numba_backend_equals_the_reference(index, symbolic_cache):
    """symbolic_numba (generated code: single states, serial and parallel batches, forward
    dynamics by M + bias + Cholesky) against the numpy reference, 1e-12."""
    model = MODELS[index]
    fast = dp.get_backend("symbolic_numba", model)
    ref = dp.get_backend("newton_euler", model, compiled=False)
    q, qd, qdd = _states(model, PARALLEL_FROM + 5, seed=7)
    tau = ref.inverse_dynamics(q, qd, qdd)
    assert rel(fast.inverse_dynamics(q, qd, qdd), tau) <= TOL
    M = ref.mass_matrix(q)
    assert rel(fast.mass_matrix(q), M) <= TOL
    assert rel(fast.bias_forces(q, qd), ref.bias_forces(q, qd)) <= TOL
    qdd_fast = fast.forward_dynamics(q, qd, tau)
    assert_solves(ref, q, qd, tau, qdd_fast)
    assert_same_accelerations(qdd_fast, qdd, M)
    for k in (0, 1):                                    # the single-state functions, and the serial loop
        assert rel(fast.inverse_dynamics(q[k], qd[k], qdd[k]), tau[k]) <= TOL
        assert rel(fast.mass_matrix(q[k]), M[k]) <= TOL
        assert_same_accelerations(fast.forward_dynamics(q[k], qd[k], tau[k]), qdd[k], M[k])
    assert rel(fast.forward_dynamics(q[:3], qd[:3], tau[:3]), qdd_fast[:3]) <= TOL
    with pytest.raises(InputError, match="qd has a non-finite entry"):
        fast.forward_dynamics(q[0], np.full(model.n, np.nan), tau[0])
    assert rel(fast.inverse_dynamics(list(q[0]), qd[0], qdd[0]), tau[0]) <= TOL


def test_the_kernels_cache_is_stamped_with_all_their_sources(tmp_path, monkeypatch):
    """numba keys cached machine code on the function's own file; ours on every file of
    dyn_plugin/compiled and the friction law (dyn_plugin.compiled.cache), since a kernel
    inlines helpers of another file (composite_rigid_body from lane_blocks, scratch and vectors)."""
    import hashlib
    from pathlib import Path

    import numba
    from numba.core.caching import CacheImpl

    from dyn_plugin.compiled import cache, composite_rigid_body

    package = Path(dp.__file__).resolve().parent
    files = sorted(package.joinpath("compiled").glob("*.py")) + [package / "friction" / "law.py"]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    assert CacheImpl._locator_classes[0] is cache.PackageLocator
    locator = composite_rigid_body.mass_matrix_lanes._cache._impl._locator
    assert isinstance(locator, cache.PackageLocator)
    assert locator.get_source_stamp()[1] == digest.hexdigest()
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text("def f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import elsewhere as module

    other = numba.njit(cache=True)(module.f)
    assert not isinstance(other._cache._impl._locator, cache.PackageLocator)
