"""The free-flyer map inside the compiled kernels (dyn_plugin/compiled/free_flyer.py): one
floating state goes straight to their entry points, batches get d(q, v) from a compiled
loop; both against pinocchio's free flyer (built here from the URDF text), against the
numpy map of dyn_plugin.floating, and with the clear errors of the validating path.  The
batches of τ and q̈ started from the base link (dyn_plugin/compiled/free_flyer_lanes.py):
their count of quaternions that are not unit (and the InputError naming the state through
the backend's parallel batches), and solo12's and talos's batches (example-robot-data)
against dyn_plugin's pinocchio backend.

Tolerance: |ours − pinocchio| ≤ 1e-9 · max(1, |pinocchio|), entry by entry (test_floating_base's);
the lanes batches 1e-12 relative per state (test_statements._relative), 1e-13 against our
per-state kernels.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin import floating  # noqa: E402
from dyn_plugin.compiled import NO_SINGLE_STATE_PATH, free_flyer, free_flyer_lanes, newton_euler  # noqa: E402
from dyn_plugin.compiled.lane_blocks import BLOCK  # noqa: E402
from dyn_plugin.compiled.lanes import EXACT_RANGE  # noqa: E402
from dyn_plugin.compiled.layout import MASS  # noqa: E402
from dyn_plugin.errors import InputError, NumericalError, UnknownRobotError  # noqa: E402
from dyn_plugin.kinematics import PRISMATIC  # noqa: E402
from dyn_plugin.loops import PARALLEL_FROM  # noqa: E402
from dyn_plugin.sampling import random_states  # noqa: E402
from test_floating_base import floating_tree  # noqa: E402
from test_random_trees import assert_close  # noqa: E402
from test_statements import _relative  # noqa: E402

OPERATIONS = {  # method -> (its arguments among q, v, a, tau; pinocchio's reference key or None)
    "inverse_dynamics": (("q", "v", "a"), "tau"), "forward_dynamics": (("q", "v", "tau"), "qdd"),
    "mass_matrix": (("q",), "M"), "bias_forces": (("q", "v"), "bias"),
    "inverse_dynamics_derivatives": (("q", "v", "a"), None), "forward_dynamics_derivatives": (("q", "v", "tau"), None),
}


def numpy_route(backend):
    """The same backend with the kernels' route switched off: the numpy map of
    dyn_plugin.floating and the chain backend's public methods."""
    other = dp.get_backend("newton_euler", backend.model)
    other._kernels = other._packed = None
    other._inverse_entry, other._bias_entry, other._forward_entry, other._mass_entry = NO_SINGLE_STATE_PATH[:4]
    return other


@pytest.mark.parametrize("tree", ["chain3", "tree7-prismatic"])
def test_one_state_takes_the_kernels_and_matches_pinocchio(tree):
    t = floating_tree(tree)
    be = dp.get_backend("newton_euler", t.model)
    assert be._kernels is not None                     # newton_euler's chain has them
    args = {"q": t.q, "v": t.v, "a": t.a, "tau": t.tau}
    tau = np.empty(t.model.nv)
    assert be._inverse_entry(be._packed, t.q[0], t.v[0], t.a[0], tau) == 0     # the entry point itself computes
    assert_close(tau, t.ref["tau"][0], "entry point τ")
    for name, (keys, ref) in OPERATIONS.items():
        method, slow = getattr(be, name), getattr(numpy_route(be), name)
        for k in range(3):
            ours, theirs = method(*(args[key][k] for key in keys)), slow(*(args[key][k] for key in keys))
            if ref is not None:
                assert_close(ours, t.ref[ref][k], f"{name} state {k} vs pinocchio")
            for part, other in zip(ours if isinstance(ours, tuple) else (ours,),
                                   theirs if isinstance(theirs, tuple) else (theirs,)):
                assert_close(part, other, f"{name} state {k} vs the numpy map")


def test_derivatives_match_pinocchio_one_state_and_batch():
    t = floating_tree("tree5")
    be = dp.get_backend("newton_euler", t.model)
    pq = np.array([t.pin_q(q) for q in t.q])
    dq_ref, dv_ref = [], []
    for k in range(len(t.q)):
        pin.computeRNEADerivatives(t.pm, t.pd, pq[k], t.pin_v(t.v[k]), t.pin_v(t.a[k]))
        order = np.concatenate([np.arange(6), t.iv])
        dq_ref.append(t.pd.dtau_dq[np.ix_(order, order)].copy())
        dv_ref.append(t.pd.dtau_dv[np.ix_(order, order)].copy())
    dq, dv = be.inverse_dynamics_derivatives(t.q, t.v, t.a)
    assert_close(dq, np.array(dq_ref), "∂τ/∂q batch")
    assert_close(dv, np.array(dv_ref), "∂τ/∂v batch")
    one = be.inverse_dynamics_derivatives(t.q[0], t.v[0], t.a[0])
    assert_close(one[0], dq_ref[0], "∂τ/∂q one state")
    assert_close(one[1], dv_ref[0], "∂τ/∂v one state")


def test_parallel_batches_equal_the_numpy_map():
    """Batches large enough for the parallel loops: the kernels' route equals the numpy map."""
    t = floating_tree("tree5")
    be = dp.get_backend("newton_euler", t.model)
    s = random_states(t.model, PARALLEL_FROM + 3, seed=7)
    args = {"q": s.q, "v": s.qd, "a": s.qdd, "tau": s.tau}
    slow = numpy_route(be)
    for name in ("inverse_dynamics", "forward_dynamics", "mass_matrix", "bias_forces", "gravity_torques",
                 "inverse_dynamics_derivatives"):
        keys = OPERATIONS.get(name, (("q",), None))[0]
        ours, theirs = getattr(be, name)(*(args[k] for k in keys)), getattr(slow, name)(*(args[k] for k in keys))
        for part, other in zip(ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple)
                               else (theirs,)):
            assert_close(part, other, f"{name} batch vs the numpy map")


def test_nearly_unit_quaternions_are_normalised_others_refused():
    t = floating_tree("chain3")
    be = dp.get_backend("newton_euler", t.model)
    q = t.q[0].copy()
    q[3:7] *= 1.0 + 0.5 * free_flyer.UNIT_TOLERANCE
    assert_close(be.inverse_dynamics(q, t.v[0], t.a[0]), t.ref["tau"][0], "τ at a quaternion within the tolerance")
    assert_close(be.mass_matrix(q), t.ref["M"][0], "M at a quaternion within the tolerance")
    q[3:7] *= 1.0 + 3.0 * free_flyer.UNIT_TOLERANCE
    for call in (lambda: be.inverse_dynamics(q, t.v[0], t.a[0]), lambda: be.forward_dynamics(q, t.v[0], t.tau[0]),
                 lambda: be.mass_matrix(q), lambda: be.bias_forces(q, t.v[0]),
                 lambda: be.inverse_dynamics_derivatives(q, t.v[0], t.a[0]),
                 lambda: be.forward_dynamics_derivatives(q, t.v[0], t.tau[0])):
        with pytest.raises(InputError, match="unit quaternion"):
            call()
    batch = np.repeat(t.q[:1], PARALLEL_FROM + 1, axis=0)
    batch[PARALLEL_FROM - 5, 3:7] = [0.0, 0.0, 0.0, 2.0]
    v = np.repeat(t.v[:1], len(batch), axis=0)
    with pytest.raises(InputError, match=f"state {PARALLEL_FROM - 5} has norm 2"):
        be.inverse_dynamics(batch, v, v)
    with pytest.raises(InputError, match="unit quaternion"):
        be.mass_matrix(batch)


def test_bad_shapes_nan_and_overflow_take_the_validating_path():
    t = floating_tree("chain3")
    be = dp.get_backend("newton_euler", t.model)
    nq, nv = t.model.nq, t.model.nv
    with pytest.raises(InputError, match=rf"shape \({nq},\)"):
        be.inverse_dynamics(t.q[0, :-1], t.v[0], t.a[0])
    with pytest.raises(InputError, match=rf"shape \({nv},\)"):
        be.forward_dynamics(t.q[0], t.v[0], t.tau[0, :-1])
    with pytest.raises(InputError, match=rf"shape \({nq},\)"):
        be.mass_matrix(t.v[0])
    v = t.v[0].copy()
    v[2] = np.nan
    with pytest.raises(InputError, match="finite"):
        be.inverse_dynamics(t.q[0], v, t.a[0])
    v[2], v[3], v[4] = 1.0, 1e300, 1e300                       # ω_x ω_y overflows
    with pytest.raises(NumericalError):
        be.bias_forces(t.q[0], v)
    assert np.all(np.isfinite(be.inverse_dynamics(list(t.q[0]), list(t.v[0]), list(t.a[0]))))   # lists: Backend's path


def test_mass_matrix_batches_check_states_and_result_as_they_go():
    """The batch M kernel checks q and M itself (no pass over the arrays after): a NaN in
    the base position (never read by M) is named by the validating path, a result that
    overflows (here a model of masses 1e308) gives a NaN check, and a prismatic joint far
    out (1e200 m: beyond the lanes' sine range, the per-state kernel) a NumericalError."""
    t = floating_tree("tree7-prismatic")
    be = dp.get_backend("newton_euler", t.model)
    batch = np.repeat(t.q[:1], PARALLEL_FROM + 1, axis=0)
    M, fine = be._kernels.mass_matrix(batch)
    assert fine
    assert_close(M, np.repeat(t.ref["M"][:1], len(batch), axis=0), "M batch vs pinocchio")
    batch[7, 1] = np.nan
    assert not be._kernels.mass_matrix(batch)[1]
    with pytest.raises(InputError, match="finite"):
        be.mass_matrix(batch)
    heavy = be._kernels.packed.copy()
    heavy[:-1, MASS] = 1e308                              # their sum overflows
    check = np.empty(1)
    free_flyer.mass_matrix_batch[0](heavy, t.q, np.empty((len(t.q), t.model.nv, t.model.nv)), check)
    assert np.isnan(check[0])
    prismatic = 6 + t.model.joint_types.index(PRISMATIC)
    batch[7, 1], batch[3, prismatic + 1] = 0.0, 1e200
    with pytest.raises(NumericalError, match="overflowed"):
        be.mass_matrix(batch)


def test_chain_without_kernels_keeps_the_numpy_map():
    """A chain backend without compiled kernels (newton_euler compiled=False, a friction
    backend) is served through dyn_plugin.floating's numpy map, as before."""
    t = floating_tree("chain3")
    for be in (dp.get_backend("newton_euler", t.model, compiled=False),
               dp.get_backend("newton_euler_friction", t.model,
                                  friction=dp.FrictionModel.create(t.model.n, viscous=0.7))):
        assert be._kernels is None
    be = dp.get_backend("newton_euler", t.model, compiled=False)
    assert_close(be.inverse_dynamics(t.q[0], t.v[0], t.a[0]), t.ref["tau"][0], "τ, numpy route")
    assert floating.BASE_V == free_flyer.BASE_V


# -- the lanes batches started from the base (compiled/free_flyer_lanes.py) ----------------------

def test_lanes_batches_count_quaternions_that_are_not_unit():
    """free_flyer_lanes' τ and q̈ batches, serial and parallel, over two tasks (BLOCK + 45
    states): a quaternion of norm 1 + 3·UNIT_TOLERANCE is counted in its task's ``bad``, in a
    block of lanes (state 9) as in a block that falls back on the per-state kernels (state
    BLOCK + 40, beside a joint at 2·EXACT_RANGE); one of norm 1 + 0.5·UNIT_TOLERANCE (state 20)
    is not, and is read normalised: every other state's τ, bias and q̈ match pinocchio's at
    the unit quaternion, 1e-12 relative, and state 20's the per-state kernel's, 1e-13."""
    t = floating_tree("tree7-prismatic")
    be = dp.get_backend("newton_euler", t.model)
    N, off_unit, near, far = BLOCK + 45, (9, BLOCK + 40), 20, BLOCK + 38
    rows = np.arange(N) % len(t.q)                                   # the states of t, repeated
    q, v, a, tau = t.q[rows], t.v[rows], t.a[rows], t.tau[rows]
    q[list(off_unit), 3:7] *= 1.0 + 3.0 * free_flyer.UNIT_TOLERANCE
    q[near, 3:7] *= 1.0 + 0.5 * free_flyer.UNIT_TOLERANCE
    q[far, 7 + t.model.joint_types.index("revolute")] = 2.0 * EXACT_RANGE
    fine = np.setdiff1d(np.arange(N), off_unit + (far,))
    one_tau, one_qdd = np.empty(t.model.nv), np.empty(t.model.nv)    # the per-state kernels at state `near`
    assert be._inverse_entry(be._packed, q[near], v[near], a[near], one_tau) == 0
    assert be._forward_entry(be._packed, q[near], v[near], tau[near], one_qdd) == 0
    for serial_or_parallel in (0, 1):
        for terms, key in ((newton_euler.TERM_BIAS, "bias"), (newton_euler.TERM_ALL, "tau")):
            out, bad = np.empty(v.shape), np.empty(2, dtype=np.int64)
            free_flyer_lanes.torques_batch[serial_or_parallel](be._packed, q, v, a, terms, out, bad)
            assert bad.tolist() == [1, 1], key
            assert _relative(out[fine], t.ref[key][rows[fine]]) <= 1e-12, key
        assert _relative(out[near:near + 1], one_tau[None]) <= 1e-13          # τ (TERM_ALL)
        out, bad = np.empty(v.shape), np.empty(2, dtype=np.int64)
        free_flyer_lanes.forward_dynamics_batch[serial_or_parallel](be._packed, q, v, tau, out, bad)
        assert bad.tolist() == [1, 1]
        assert _relative(out[fine], t.ref["qdd"][rows[fine]]) <= 1e-12
        assert _relative(out[near:near + 1], one_qdd[None]) <= 1e-13


@pytest.mark.parametrize("method", ["inverse_dynamics", "forward_dynamics", "bias_forces", "gravity_torques"])
def test_parallel_batch_names_the_quaternion_that_is_not_unit(method):
    """A batch of PARALLEL_FROM + 3 states (the parallel loop, three tasks) with one
    quaternion of norm 1 + 3·UNIT_TOLERANCE, in the last task: the backend's InputError names
    that state (the kernels report it, dyn_plugin.floating names it)."""
    t = floating_tree("tree5")
    be = dp.get_backend("newton_euler", t.model)
    s = random_states(t.model, PARALLEL_FROM + 3, seed=3)
    k = PARALLEL_FROM + 1
    s.q[k, 3:7] *= 1.0 + 3.0 * free_flyer.UNIT_TOLERANCE
    args = {"inverse_dynamics": (s.q, s.qd, s.qdd), "forward_dynamics": (s.q, s.qd, s.tau),
            "bias_forces": (s.q, s.qd), "gravity_torques": (s.q,)}[method]
    with pytest.raises(InputError, match=rf"unit quaternion.*; state {k} has norm 1\.000003 "):
        getattr(be, method)(*args)


def legged_robot(name: str):
    """example-robot-data's ``name`` ("solo12", "talos") with its free flyer, or a skip
    where that package is not installed (tools.bench.robots' UnknownRobotError)."""
    from dyn_plugin.tools.bench.robots import load_bench_robot

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dp.URDFWarning)      # talos: mimic joints kept independent
            return load_bench_robot(name)
    except UnknownRobotError as error:
        pytest.skip(str(error))


@pytest.mark.parametrize("robot", ["solo12", "talos"])
def test_legged_batches_match_pinocchio(robot):
    """The batch routes started from the base (free_flyer_lanes through FloatingBaseBackend):
    τ, q̈, bias and gravity of solo12 (nv 18) and talos (nv 50) against pinocchio's
    free flyer (dyn_plugin's pinocchio backend), 1e-12 relative, on PARALLEL_FROM + 3
    states (the parallel loop), one with a joint at 2·EXACT_RANGE (its block of lanes falls
    back on the per-state kernels) and one with a quaternion of norm 1 + 0.5·UNIT_TOLERANCE."""
    model = legged_robot(robot)
    ours, pinocchio = dp.get_backend("newton_euler", model), dp.get_backend("pinocchio", model)
    N = PARALLEL_FROM + 3
    s = random_states(model, N, seed=5)
    s.q[N - 2, 7 + 3] = 2.0 * EXACT_RANGE
    s.q[5, 3:7] *= 1.0 + 0.5 * free_flyer.UNIT_TOLERANCE
    for method, args in {"inverse_dynamics": (s.q, s.qd, s.qdd), "forward_dynamics": (s.q, s.qd, s.tau),
                         "bias_forces": (s.q, s.qd), "gravity_torques": (s.q,)}.items():
        assert _relative(getattr(ours, method)(*args), getattr(pinocchio, method)(*args)) <= 1e-12, method
