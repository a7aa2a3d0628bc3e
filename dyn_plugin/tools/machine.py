"""The machine and the software a figure was measured on: versions of the installed
distributions, CPU, cores, threads and load.  Shared by ``dyn-plugin bench`` (its
``environment``) and the validation report (its versions line)."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["OthersClock", "cpu_model", "environment", "installed_versions", "keep_freed_memory", "load_average",
           "numba_threads", "usable_cores"]

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4


def installed_versions(dists: Sequence[str]) -> dict:
    """{distribution: its installed version, or None when it is not installed}."""
    from importlib import metadata

    versions = {}
    for dist in dists:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return versions


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def load_average() -> Optional[list]:
    """1, 5 and 15 min load averages: other processes on the machine disturb timings."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


class OthersClock:
    """How many of our usable cores other processes kept busy since it was made: the busy
    time of those cores in ``/proc/stat`` (user, nice, system, irq, softirq and steal, which
    is a hypervisor's; not idle or I/O wait) less this process's own CPU time
    (``os.times``, its threads and children), over the wall time.  The load average cannot
    tell this: a bench that keeps 2 cores busy for a minute raises it by itself.  ``None``
    where ``/proc/stat`` is not (not Linux)."""

    def __init__(self):
        self.start = self._read()

    @staticmethod
    def _read():
        try:
            lines = Path("/proc/stat").read_text().splitlines()
            mine = {f"cpu{core}" for core in os.sched_getaffinity(0)}
        except (OSError, AttributeError):
            return None
        ticks = os.sysconf("SC_CLK_TCK")
        busy = 0
        for line in lines:
            name, *fields = line.split()
            if name in mine:   # user nice system idle iowait irq softirq steal ...
                busy += sum(int(fields[i]) for i in (0, 1, 2, 5, 6, 7) if i < len(fields))
        own = os.times()
        return time.monotonic(), busy / ticks, own.user + own.system + own.children_user + own.children_system

    def cores_busy(self) -> Optional[float]:
        """The average number of our usable cores that other processes kept busy so far."""
        now = self._read()
        if self.start is None or now is None or now[0] <= self.start[0]:
            return None
        others = (now[1] - self.start[1]) - (now[2] - self.start[2])
        return max(0.0, others / (now[0] - self.start[0]))


def keep_freed_memory() -> str:
    """Ask glibc's malloc to keep the memory this process frees, for its next allocations:
    no separate mapping per large block (``M_MMAP_MAX`` 0) and no returning the heap's top
    to the system below 2 GiB (``M_TRIM_THRESHOLD``).  A batch's results are fresh arrays;
    by default each large one is a new mapping whose pages the system zeroes on first
    touch, and on this 2-core VM those faults scale badly across threads: over 10⁵
    PUMA-560 states, the bias forces on 2 workers took 25 vs 16 ns/state, and ∂τ on 1
    worker 230 vs 170.  Returns what was done (for the bench's JSON); a no-op elsewhere than glibc."""
    import ctypes
    import ctypes.util

    if platform.libc_ver()[0] != "glibc":
        return "default (not glibc)"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        done = libc.mallopt(_M_MMAP_MAX, 0) == 1 and libc.mallopt(_M_TRIM_THRESHOLD, 2 ** 31 - 1) == 1
    except (OSError, AttributeError):
        done = False
    return "glibc, freed memory kept (mallopt M_MMAP_MAX=0, M_TRIM_THRESHOLD=2^31-1)" if done else "default"


def numba_threads() -> Optional[int]:
    try:
        import numba
    except ImportError:
        return None
    return int(numba.get_num_threads())


def environment(parallel_threads: Optional[int] = None) -> dict:
    """Versions, CPU, cores, threads and date: what a timing depends on."""
    from datetime import datetime, timezone

    from .._version import __version__

    versions = {"dyn_plugin": __version__, "python": platform.python_version()}
    versions.update(installed_versions(("numpy", "numba", "pin", "pybullet", "scipy")))
    return {
        "versions": versions,
        "cpu": cpu_model(),
        "machine": platform.machine(),
        "platform": platform.platform(),
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "numba_threads": numba_threads(),
        "pinocchio_parallel_threads": parallel_threads if parallel_threads is not None else usable_cores(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "timer": "time.perf_counter via timeit (garbage collector off while timing)",
    }
