"""Shared fixtures: bundled models and seeded random states."""

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.sampling import random_states

OURS = ("newton_euler", "lagrange_euler")


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
