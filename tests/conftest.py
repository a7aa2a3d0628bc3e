"""Shared fixtures: bundled models and seeded random states; hypothesis profiles; the
worst-error log of the property tests (test_properties.py).

Hypothesis profiles (select with ``DYN_PLUGIN_HYPOTHESIS_PROFILE``):

* ``ci`` (default): 30 examples per property, derandomized (the same examples on every
  run, no example database), no deadline - CI is reproducible;
* ``campaign``: 600 examples per property, random, failures kept in the example database
  (``.hypothesis/``) so that a rerun replays them first - a fuzzing campaign.

The worst relative errors against pinocchio seen by the property tests are printed at the
end of the session, and written as JSON to ``$DYN_PLUGIN_WORST_ERRORS`` when it is set.
"""

import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=30, deadline=None, derandomize=True, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.register_profile(
    "campaign", max_examples=600, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
PROFILE_VARIABLE = "DYN_PLUGIN_HYPOTHESIS_PROFILE"
settings.load_profile(os.environ.get(PROFILE_VARIABLE, "ci"))

# pytest-xdist sets COLUMNS=80 and LINES=24 in its workers; the CLI's tests read its output as
# it is in a pipe without them (dyn_plugin.tools.output: 160 columns), as in a run with -n 0.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

import dyn_plugin as dp
from dyn_plugin.backends.registry import backends
from dyn_plugin.sampling import random_states

# From the registry: our rigid-body backends (newton_euler, lagrange_euler), and ours with
# joint friction (newton_euler_friction, lagrange_euler_friction).
OURS = tuple(backends("ours", cannot=("friction",)))
WITH_FRICTION = tuple(backends("ours", can=("friction",)))


@pytest.fixture(scope="session", params=dp.list_robots())
def bundled(request):
    return dp.load_robot(request.param)


def rel_err(ours, reference):
    """max |ours − ref| / max(1, |ref|), the measure of the validation CLI."""
    ours, reference = np.asarray(ours), np.asarray(reference)
    return float(np.max(np.abs(ours - reference) / np.maximum(1.0, np.abs(reference))))


@pytest.fixture
def states():
    return lambda model, count=50, seed=0: random_states(model, count, seed=seed)


# -- worst errors of the property tests ----------------------------------------------------


class WorstErrors:
    """The largest error seen per (backend, quantity), with what produced it, and how many
    examples each backend ran."""

    def __init__(self):
        self.worst = {}      # (backend, quantity) -> (error, info)
        self.examples = {}   # backend -> examples checked

    def count(self, backend):
        self.examples[backend] = self.examples.get(backend, 0) + 1

    def record(self, backend, quantity, error, info=None):
        error = float(error)
        key = (backend, quantity)
        if key not in self.worst or not error <= self.worst[key][0]:   # NaN counts as worst
            self.worst[key] = (error, info)

    def merge(self, other):
        """Another process's :meth:`as_dict` into this one (a pytest-xdist worker's)."""
        for backend, count in other["examples"].items():
            self.examples[backend] = self.examples.get(backend, 0) + count
        for row in other["worst"]:
            self.record(row["backend"], row["quantity"], row["error"], row["example"])

    def as_dict(self):
        return {
            "profile": os.environ.get(PROFILE_VARIABLE, "ci"),
            "examples": dict(self.examples),
            "worst": [{"backend": b, "quantity": q, "error": e, "example": info}
                      for (b, q), (e, info) in sorted(self.worst.items())],
        }


_WORST = WorstErrors()


@pytest.fixture(scope="session")
def worst_errors():
    return _WORST


def pytest_sessionfinish(session):
    """A pytest-xdist worker hands its worst errors to the controller, which prints them."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["worst_errors"] = json.loads(json.dumps(_WORST.as_dict(), default=str))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """The controller gathers each pytest-xdist worker's worst errors as it finishes."""
    worker = getattr(node, "workeroutput", {}).get("worst_errors")
    if worker:
        _WORST.merge(worker)


def pytest_terminal_summary(terminalreporter):
    if not _WORST.worst and not _WORST.examples:
        return
    tr = terminalreporter
    tr.section(f"property tests: worst errors vs pinocchio (profile {os.environ.get(PROFILE_VARIABLE, 'ci')})")
    tr.write_line(f"{'backend':<26}{'quantity':<46}{'worst error':>14}   examples")
    for (backend, quantity), (error, _) in sorted(_WORST.worst.items()):
        tr.write_line(f"{backend:<26}{quantity:<46}{error:>14.3e}   {_WORST.examples.get(backend, 0)}")
    for key, count in sorted(_WORST.examples.items()):
        if ":" in key:   # the URDF reader's fuzz tests: inputs loaded / refused
            tr.write_line(f"{key}: {count}")
    path = os.environ.get("DYN_PLUGIN_WORST_ERRORS")
    if path:
        with open(path, "w") as handle:
            json.dump(_WORST.as_dict(), handle, indent=1, default=str)
        tr.write_line(f"written to {path}")


@pytest.fixture(scope="session")
def dask_client():
    """One 2-process LocalCluster for every Dask test (it starts in a few seconds)."""
    pytest.importorskip("distributed")
    import dyn_plugin.cluster as dpc

    client = dpc.connect(workers=2, quiet=True)
    client.wait_for_workers(2, timeout=60)
    yield client
    cluster = client.cluster
    client.close()
    cluster.close()


@pytest.fixture(scope="session")
def dask_address(dask_client):
    """The scheduler address of that cluster, for ``--dask ADDRESS``."""
    return dask_client.scheduler.address
