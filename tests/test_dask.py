"""dyn_plugin.cluster and dyn_plugin.dataset on a real 2-process LocalCluster.

Lazy dynamics equal to the direct batch calls bit for bit; one backend build per worker
process; datasets identical serially and on two workers, after resuming, and after a
worker is killed mid-run; τ checked against pinocchio itself; clear errors.
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("zarr")

import dask.array as da  # noqa: E402

import dyn_plugin as dp  # noqa: E402
import dyn_plugin.cluster as dpc  # noqa: E402
from dyn_plugin.dataset import read_dataset  # noqa: E402
from dyn_plugin.sampling import random_states  # noqa: E402

OPS = {  # operation: the random_states fields it takes
    "inverse_dynamics": ("q", "qd", "qdd"),
    "forward_dynamics": ("q", "qd", "tau"),
    "mass_matrix": ("q",),
    "gravity_torques": ("q",),
    "bias_forces": ("q", "qd"),
}


@pytest.fixture
def client(dask_client):
    """The session's 2-process cluster (tests/conftest.py)."""
    return dask_client


@pytest.fixture(scope="module")
def puma():
    return dp.load_robot("puma560")


def _pinocchio_rows(model, q, qd, qdd):
    """τ and M from pinocchio itself (rnea, crba), joints matched by name."""
    import pinocchio as pin

    pm = pin.buildModelFromXML(model.source_urdf)
    pm.gravity.linear = np.asarray(model.gravity, dtype=float)
    data = pm.createData()
    assert pm.nq == pm.nv == model.n
    index = np.array([pm.joints[pm.getJointId(name)].idx_v for name in model.joint_names])
    taus, masses = [], []
    for a, b, c in zip(q, qd, qdd):
        x, v, w = (np.zeros(pm.nv) for _ in range(3))
        x[index], v[index], w[index] = a, b, c
        taus.append(pin.rnea(pm, data, x, v, w)[index])
        M = pin.crba(pm, data, x)
        M = np.triu(M) + np.triu(M, 1).T
        masses.append(M[np.ix_(index, index)])
    return np.array(taus), np.array(masses)


def _rel(ours, ref):
    return float(np.max(np.abs(ours - ref) / np.maximum(1.0, np.abs(ref))))


def test_import_dyn_plugin_does_not_import_dask_or_zarr():
    code = ("import sys, dyn_plugin as dp; dp.dataset; dp.cluster; "
            "bad = [m for m in ('dask', 'distributed', 'zarr') if m in sys.modules]; "
            "assert not bad, bad; assert callable(dp.dataset)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize("backend", ["newton_euler", "symbolic_numba", "newton_euler_friction", "lagrange_euler"])
def test_lazy_dynamics_equal_direct_batch_bit_for_bit(client, puma, backend):
    be = dp.get_backend(backend, puma)
    s = random_states(puma, 3000 if backend != "lagrange_euler" else 1500, seed=4)
    direct = {op: getattr(be, op)(*(getattr(s, f) for f in fields)) for op, fields in OPS.items()}
    # q in chunks of 700, the others chunked otherwise (and the joint axis split): realigned
    lazy = {"q": da.from_array(s.q, chunks=(700, 6)), "qd": da.from_array(s.qd, chunks=(1100, 3)),
            "qdd": s.qdd, "tau": da.from_array(s.tau, chunks=(len(s), 2))}
    for op, fields in OPS.items():
        result = getattr(dpc, op)(be, *(lazy[f] for f in fields))
        assert result.chunks[0] == lazy["q"].chunks[0]
        computed = result.compute()
        assert computed.shape == direct[op].shape
        assert np.array_equal(computed, direct[op]), (backend, op)


@pytest.mark.parametrize("backend", ["newton_euler", "symbolic_numba"])
def test_the_spec_is_one_node_and_the_backend_is_built_once_per_worker(client, backend):
    from dyn_plugin.symbolic.code_cache import cache_dir

    model = dp.load_robot("scara")
    be = dp.get_backend(backend, model)          # generated code, if any, is on disk from here on
    cached = {p.name: p.stat().st_mtime_ns for p in cache_dir().glob("*.py")} if cache_dir().is_dir() else {}
    s = random_states(model, 12000, seed=5)
    tau = dpc.inverse_dynamics(be, da.from_array(s.q, chunks=(500, -1)), s.qd, s.qdd)
    graph = dict(tau.__dask_graph__())
    assert len([k for k in graph if "dyn-plugin-spec" in str(k)]) == 1
    before = client.run(dpc.cache_info)
    assert np.array_equal(tau.compute(), be.inverse_dynamics(s.q, s.qd, s.qdd))
    assert np.array_equal(dpc.gravity_torques(be, da.from_array(s.q, chunks=(500, -1))).compute(),
                          be.gravity_torques(s.q))
    after = client.run(dpc.cache_info)
    built = {w: after[w].misses - before[w].misses for w in after}
    calls = sum(after[w].hits + after[w].misses - before[w].hits - before[w].misses for w in after)
    assert calls == 48 and all(b <= 1 for b in built.values()), built
    assert ({p.name: p.stat().st_mtime_ns for p in cache_dir().glob("*.py")} if cache_dir().is_dir() else {}) == cached


def test_lazy_errors_name_the_chunk_and_the_state(client, puma):
    be = dp.get_backend("newton_euler", puma)
    q = random_states(puma, 2000, seed=1).q
    q[1234, 2] = np.nan
    with pytest.raises(dp.InputError, match=r"states 1000 to 1499.*joint3.*state 234"):
        dpc.gravity_torques(be, da.from_array(q, chunks=(500, 6))).compute()
    with pytest.raises(dp.InputError, match=r"q must have shape \(N, 6\)"):
        dpc.mass_matrix(be, q[:, :5])
    with pytest.raises(dp.InputError, match="batch sizes differ"):
        dpc.bias_forces(be, q, q[:10])


def test_dataset_two_workers_equal_serial_and_pinocchio(client, puma, tmp_path):
    kwargs = dict(states=6000, chunk=1000, seed=3, mass_matrix=True, progress=False)
    serial = dp.dataset("puma560", out=tmp_path / "serial.zarr", **kwargs)
    spread = dp.dataset("puma560", out=tmp_path / "spread.zarr", client=client, **kwargs)
    assert (serial.computed, spread.computed, spread.skipped) == (6, 6, 0)
    a, b = read_dataset(tmp_path / "serial.zarr"), read_dataset(tmp_path / "spread.zarr")
    assert set(a) == set(b) == {"q", "qd", "qdd", "tau", "M", "done", "attributes"} - {"done"}
    for name in ("q", "qd", "qdd", "tau", "M"):
        assert np.array_equal(a[name], b[name]), name
    rows = np.array([0, 999, 1000, 3777, 5999])
    tau, M = _pinocchio_rows(puma, a["q"][rows], a["qd"][rows], a["qdd"][rows])
    assert _rel(a["tau"][rows], tau) <= 1e-12
    assert _rel(a["M"][rows], M) <= 1e-12
    assert b["attributes"]["complete"] and b["attributes"]["robot"] == "puma560"


def test_dataset_with_friction_on_workers(client, tmp_path):
    model = dp.load_robot("puma560")
    kwargs = dict(states=3000, chunk=1000, backend="newton_euler_friction", progress=False)   # bundled data
    dp.dataset(model, out=tmp_path / "serial.zarr", **kwargs)
    dp.dataset(model, out=tmp_path / "spread.zarr", client=client, **kwargs)
    a, b = read_dataset(tmp_path / "serial.zarr"), read_dataset(tmp_path / "spread.zarr")
    for name in ("q", "qd", "qdd", "tau", "tau_friction"):
        assert np.array_equal(a[name], b[name]), name
    be = dp.get_backend("newton_euler_friction", model)
    parts = be.inverse_dynamics_breakdown(a["q"], a["qd"], a["qdd"])
    assert np.array_equal(a["tau"], be.inverse_dynamics(a["q"], a["qd"], a["qdd"]))
    assert np.array_equal(a["tau_friction"], parts.friction)
    assert np.abs(a["tau_friction"]).max() > 0 and a["attributes"]["friction"]["name"] == be.friction.name


def test_resume_on_workers_computes_only_missing_chunks(client, tmp_path):
    import zarr

    kwargs = dict(states=8000, chunk=1000, seed=9, progress=False)
    fresh = read_dataset(_made(tmp_path / "fresh.zarr", **kwargs))
    out = _made(tmp_path / "resumed.zarr", client=client, **kwargs)
    group = zarr.open_group(str(out), mode="r+")
    for c in (1, 6):
        group["done"][c] = False
        group["tau"][c * 1000:(c + 1) * 1000] = 7.0          # damaged data behind a cleared marker
    summary = dp.dataset("puma560", out=out, client=client, **kwargs)
    assert (summary.computed, summary.skipped) == (2, 6)
    resumed = read_dataset(out)
    for name in ("q", "qd", "qdd", "tau"):
        assert np.array_equal(resumed[name], fresh[name]), name


def _made(out, **kwargs):
    dp.dataset("puma560", out=out, **kwargs)
    return out


def test_unreachable_scheduler_is_a_clear_error_quickly():
    start = time.perf_counter()
    with pytest.raises(dpc.ClusterError, match=r"tcp://127\.0\.0\.1:1"):
        dpc.connect("tcp://127.0.0.1:1", timeout=1.0, quiet=True)
    assert time.perf_counter() - start < 10
    assert issubclass(dpc.ClusterError, dp.DynPluginError)
    with pytest.raises(dp.InputError, match="timeout"):
        dpc.connect("tcp://127.0.0.1:1", timeout=0)
    with pytest.raises(dp.InputError, match="client must be a distributed.Client"):
        dp.dataset("scara", 10, out="unused.zarr", chunk=5, client="tcp://127.0.0.1:8786")


def test_a_killed_worker_does_not_change_the_dataset(client, tmp_path):
    """SIGKILL one worker process after two chunks: the run completes, every chunk once,
    equal to the serial run.  (Last in the file: the nanny restarts the worker.)"""
    kwargs = dict(states=20000, chunk=1000, seed=11, mass_matrix=True)
    serial = read_dataset(_made(tmp_path / "serial.zarr", progress=False, **kwargs))
    pids = client.run(os.getpid)
    killed = []

    def kill_one(done, total):
        """After two chunks, SIGKILL a worker that is busy with a chunk."""
        if done >= 2 and not killed:
            busy = [w for w, keys in client.processing().items() if any("dyn-plugin-chunk" in str(k) for k in keys)]
            if busy:
                killed.append(pids[busy[0]])
                os.kill(killed[0], signal.SIGKILL)

    summary = dp.dataset("puma560", out=tmp_path / "killed.zarr", client=client, progress=kill_one, **kwargs)
    assert killed and summary.computed == 20 and summary.skipped == 0
    assert killed[0] not in client.run(os.getpid).values()
    result = read_dataset(tmp_path / "killed.zarr")
    assert result["attributes"]["complete"]
    for name in ("q", "qd", "qdd", "tau", "M"):
        assert np.array_equal(result[name], serial[name]), name
    client.wait_for_workers(2, timeout=60)
