"""Throughput of the Dask layer (issue #17): not run by the tests (a few minutes).

    python validation/dask/throughput.py [--states 2e6] [--chunk 1e5] [--big 1e7] [--json FILE]

1. dp.dataset for the PUMA-560 (newton_euler inverse dynamics: q, qd, qdd, tau stored, Zarr,
   zstd) serially in this process (numba over every core) and on a LocalCluster of 1 and 2
   worker processes: states/s = states / wall time of the call (sampling, dynamics,
   compression and writing included; the cluster's start-up and the workers' one backend
   build excluded).  The stores go to a temporary directory, deleted after each run.
2. The overhead of dpc.inverse_dynamics at 10^7 states against be.inverse_dynamics on the
   same numpy arrays (numba over every core):
   overhead = t(dask) / t(direct) − 1, wall time, for
   * ``synchronous``: the dask graph run in this process (the cost of the graph and chunking);
   * ``distributed_on_workers``: 2 workers, inputs already on the workers (scattered
     beforehand, untimed), τ computed and kept on the workers (persist + wait);
   * ``distributed_gathered``: the same plus bringing τ (480 MB) back to this process.
   Every dask result is checked equal to the direct one bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import dyn_plugin as dp
import dyn_plugin.cluster as dpc
from dyn_plugin.sampling import random_states

ROBOT = "puma560"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _build_backend(spec) -> None:
    dpc.backend_of(spec)


def dataset_throughput(states: int, chunk: int, workers, scratch: Path) -> dict:
    """states/s of dp.dataset serially (workers None) or on a LocalCluster of ``workers``."""
    client = None if workers is None else dpc.connect(workers=workers, quiet=True)
    out = scratch / f"puma_{workers or 'serial'}.zarr"
    try:
        if client is not None:                # every worker builds its backend before the clock starts
            client.wait_for_workers(workers, timeout=120)
            client.run(_build_backend, dpc.BackendSpec.create("newton_euler", dp.load_robot(ROBOT)))
        summary = dp.dataset(ROBOT, states, out=out, chunk=chunk, client=client, progress=False)
        size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    finally:
        shutil.rmtree(out, ignore_errors=True)
        if client is not None:
            cluster = client.cluster
            client.close()
            cluster.close()
    return {"workers": workers or "serial (this process)", "states": states, "chunk": chunk,
            "seconds": round(summary.seconds, 3), "states_per_second": round(summary.states_per_second),
            "store_bytes": size}


def overhead(big: int, chunk: int, repeats: int = 3) -> dict:
    """Wall times (best of ``repeats``, the three ways interleaved: the machine is shared)."""
    import dask
    import dask.array as da
    from distributed import wait

    model = dp.load_robot(ROBOT)
    be = dp.get_backend("newton_euler", model)
    s = random_states(model, big, seed=0)
    q, qd, qdd = s.q, s.qd, s.qdd
    del s
    be.inverse_dynamics(q[:4096], qd[:4096], qdd[:4096])                      # warm
    lazy = [da.from_array(a, chunks=(chunk, -1)) for a in (q, qd, qdd)]
    client = dpc.connect(workers=2, quiet=True)
    times = {"direct": [], "synchronous": [], "distributed_on_workers": [], "distributed_gathered": []}
    try:
        client.wait_for_workers(2, timeout=120)
        on_workers = [_scattered(client, a, chunk) for a in (q, qd, qdd)]
        dpc.inverse_dynamics(be, *(x[:4096] for x in on_workers)).compute()     # workers build the backend
        for _ in range(repeats):
            start = time.perf_counter()
            direct = be.inverse_dynamics(q, qd, qdd)
            times["direct"].append(time.perf_counter() - start)
            with dask.config.set(scheduler="synchronous"):
                start = time.perf_counter()
                result = dpc.inverse_dynamics(be, *lazy).compute()
                times["synchronous"].append(time.perf_counter() - start)
            assert np.array_equal(result, direct)
            del result
            start = time.perf_counter()
            tau = dpc.inverse_dynamics(be, *on_workers).persist()
            wait(tau)
            kept = time.perf_counter()
            gathered = tau.compute()
            times["distributed_on_workers"].append(kept - start)
            times["distributed_gathered"].append(time.perf_counter() - start)
            assert np.array_equal(gathered, direct)
            del tau, gathered                                 # released: the next repeat recomputes
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    t_direct = min(times["direct"])
    out = {"states": big, "chunk": chunk, "repeats": repeats, "direct_seconds": round(t_direct, 3),
           "direct_states_per_second": round(big / t_direct), "distributed_workers": 2,
           "all_seconds": {k: [round(t, 3) for t in v] for k, v in times.items()}}
    for way in ("synchronous", "distributed_on_workers", "distributed_gathered"):
        out[way] = _figures(min(times[way]), t_direct, big)
    return out


def _scattered(client, array, chunk):
    """``array`` as a dask array whose chunks already live on the workers."""
    import dask.array as da

    pieces = [array[i:i + chunk] for i in range(0, len(array), chunk)]
    futures = client.scatter(pieces)
    return da.concatenate([da.from_delayed(f, shape=p.shape, dtype=p.dtype) for f, p in zip(futures, pieces)])


def _figures(t, t_direct, states) -> dict:
    return {"seconds": round(t, 3), "states_per_second": round(states / t), "overhead": round(t / t_direct - 1, 3)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--states", type=float, default=2e6)
    parser.add_argument("--chunk", type=float, default=1e5)
    parser.add_argument("--big", type=float, default=1e7)
    parser.add_argument("--big-chunk", type=float, default=1e6)
    parser.add_argument("--json", default=str(Path(__file__).with_name("throughput.json")))
    args = parser.parse_args(argv)
    states, chunk, big, big_chunk = int(args.states), int(args.chunk), int(args.big), int(args.big_chunk)
    scratch = Path(tempfile.mkdtemp(prefix="dyn_plugin_throughput_"))
    try:
        runs = []
        for workers in (None, 1, 2):
            runs.append(dataset_throughput(states, chunk, workers, scratch))
            print(f"dataset, {runs[-1]['workers']}: {runs[-1]['states_per_second']:.3g} states/s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    costs = overhead(big, big_chunk)
    print(json.dumps(costs, indent=1), flush=True)
    import dask
    import distributed
    import numba
    import zarr

    report = {
        "what": "dyn_plugin Dask layer throughput (validation/dask/throughput.py); see its docstring for definitions",
        "robot": ROBOT, "backend": "newton_euler", "dataset": runs, "overhead_vs_direct_batch": costs,
        "machine": {"cpus": os.cpu_count(), "cpu": _cpu(), "python": sys.version.split()[0]},
        "versions": {"dyn_plugin": dp.__version__, "dask": dask.__version__, "distributed": distributed.__version__,
                     "zarr": zarr.__version__, "numba": numba.__version__, "numpy": np.__version__},
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_average_at_end": list(os.getloadavg()),
        "note": "a shared 2-core VM: other jobs ran meanwhile; figures are best-of-repeats wall times",
    }
    Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(f"written: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
