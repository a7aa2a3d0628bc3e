"""The engine behind ``dyn-plugin validate``: sample states, compare backends with the
references, and report the largest errors.

The error measure of one entry is ``|ours − reference| / max(1, |reference|)`` (relative
for large values, absolute for small ones); a quantity passes when its largest such error
over all samples and entries is at most ``rtol``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from .backends import get_backend
from .errors import DynPluginError
from .robots import load_robot
from .sampling import States, random_states

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _coriolis_times_velocity(backend, s: States) -> np.ndarray:
    return np.einsum("nij,nj->ni", backend.coriolis_matrix(s.q, s.qd), s.qd)


QUANTITIES: dict = {
    "tau": (lambda be, s: be.inverse_dynamics(s.q, s.qd, s.qdd), "inverse dynamics τ(q, q̇, q̈)"),
    "M": (lambda be, s: be.mass_matrix(s.q), "mass matrix M(q)"),
    "bias": (lambda be, s: be.bias_forces(s.q, s.qd), "bias forces C(q, q̇) q̇ + g(q)"),
    "gravity": (lambda be, s: be.gravity_torques(s.q), "gravity torques g(q)"),
    "Cqd": (_coriolis_times_velocity, "Coriolis matrix times velocity C(q, q̇) q̇"),
    "qdd": (lambda be, s: be.forward_dynamics(s.q, s.qd, s.tau), "forward dynamics q̈(q, q̇, τ)"),
}


@dataclasses.dataclass
class Suite:
    """What to compare; loaded from a TOML file in ``validation/suites``."""

    robots: list
    backends: list
    references: list
    quantities: list
    samples: int = 200
    seed: int = 0
    rtol: float = 1e-9
    description: str = ""
    name: str = "custom"

    def check(self) -> None:
        unknown = [q for q in self.quantities if q not in QUANTITIES]
        if unknown:
            raise DynPluginError(f"unknown quantities {unknown}; known: {', '.join(QUANTITIES)}")
        if self.samples < 1:
            raise DynPluginError(f"samples must be at least 1, got {self.samples}")
        if not self.rtol > 0:
            raise DynPluginError(f"rtol must be positive, got {self.rtol}")


def suite_dir() -> Path:
    try:
        return Path(str(resources.files("dyn_plugin.suites")))
    except ModuleNotFoundError:  # source tree, not installed
        return Path(__file__).resolve().parent.parent / "validation" / "suites"


def list_suites() -> list:
    return sorted(p.stem for p in suite_dir().glob("*.toml"))


def load_suite(name_or_path: str = "default") -> Suite:
    """A suite by name (``default``, ``quick``) or from a TOML file path."""
    path = Path(name_or_path)
    if not path.is_file():
        path = suite_dir() / f"{name_or_path}.toml"
    if not path.is_file():
        raise DynPluginError(f"unknown suite {name_or_path!r}; available: {', '.join(list_suites())}")
    data = tomllib.loads(path.read_text())
    fields = {f.name for f in dataclasses.fields(Suite)}
    unknown = set(data) - fields
    if unknown:
        raise DynPluginError(f"{path}: unknown keys {sorted(unknown)}; known: {sorted(fields)}")
    suite = Suite(**data)
    if suite.name == "custom":
        suite.name = path.stem
    suite.check()
    return suite


@dataclasses.dataclass
class Comparison:
    """The largest error of one quantity of one backend against one reference."""

    robot: str
    backend: str
    reference: str
    quantity: str
    samples: int
    max_abs: float
    max_rel: float
    worst_sample: int
    worst_entry: tuple
    rtol: float

    @property
    def passed(self) -> bool:
        return bool(self.max_rel <= self.rtol)

    def as_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["worst_entry"] = list(self.worst_entry)
        out["passed"] = self.passed
        return out


def compare_arrays(ours: np.ndarray, reference: np.ndarray):
    """``(max_abs, max_rel, worst_index)`` with rel = |diff| / max(1, |reference|)."""
    ours, reference = np.asarray(ours, dtype=float), np.asarray(reference, dtype=float)
    diff = np.abs(ours - reference)
    rel = diff / np.maximum(1.0, np.abs(reference))
    rel = np.where(np.isfinite(rel), rel, np.inf)
    worst = np.unravel_index(int(np.argmax(rel)), rel.shape)
    return float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))), float(rel.max()), worst


@dataclasses.dataclass
class Report:
    suite: Suite
    comparisons: list
    seconds: float

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    def failures(self) -> list:
        return [c for c in self.comparisons if not c.passed]

    def as_dict(self) -> dict:
        from . import __version__

        return {
            "dyn_plugin_version": __version__,
            "suite": dataclasses.asdict(self.suite),
            "passed": self.passed,
            "seconds": round(self.seconds, 3),
            "results": [c.as_dict() for c in self.comparisons],
        }


def run(suite: Suite, progress: Optional[Callable[[str], None]] = None) -> Report:
    """Compare every backend with every reference on every robot of the suite.

    ``progress(label)`` is called after each robot x backend pair is done.
    """
    suite.check()
    start = time.perf_counter()
    comparisons = []
    for robot in suite.robots:
        model = load_robot(robot)
        states = random_states(model, suite.samples, seed=suite.seed)
        reference_values = {ref: _evaluate(get_backend(ref, model), states, suite.quantities)
                            for ref in suite.references}
        for backend_name in suite.backends:
            ours = _evaluate(get_backend(backend_name, model), states, suite.quantities)
            for ref, values in reference_values.items():
                for quantity in suite.quantities:
                    max_abs, max_rel, worst = compare_arrays(ours[quantity], values[quantity])
                    comparisons.append(Comparison(
                        robot=model.name, backend=backend_name, reference=ref, quantity=quantity,
                        samples=len(states), max_abs=max_abs, max_rel=max_rel,
                        worst_sample=int(worst[0]), worst_entry=tuple(int(i) for i in worst[1:]),
                        rtol=suite.rtol))
            if progress:
                progress(f"{robot} / {backend_name}")
    return Report(suite, comparisons, time.perf_counter() - start)


def _evaluate(backend, states: States, quantities: Sequence[str]) -> dict:
    return {name: QUANTITIES[name][0](backend, states) for name in quantities}
