"""``dyn-plugin validate``: our backends against pinocchio, pybullet and physical oracles.

Its modules, each importing only those above it in this list:

* :mod:`.plan` — the quantities a suite can name, and what each backend is asked for
  (by what it declares) or skips, and why;
* :mod:`.suite` — a :class:`Suite`, read from TOML (:func:`load_suite`, the bundled ones in
  :func:`suite_dir`) and checked before any work;
* :mod:`.compare` — the error measure, a :class:`Comparison`, a run's :class:`Report`;
* :mod:`.trajectories` — pybullet's stepping: one step and trajectories, ours in pybullet's
  scheme, with the friction pybullet reproduces;
* :mod:`.bristles` — the dynamic-friction checks against physical oracles;
* :mod:`.engine` — the run: :func:`tasks` (serially or on Dask, the same results) and
  :func:`run`.

Why pybullet disagrees with pinocchio is :mod:`dyn_plugin.backends.pybullet_diagnostics`
(a fact of pybullet's engine, used here, not part of the tools).  The Markdown report and
figures are :mod:`dyn_plugin.tools.reporting`.
"""

from .compare import Comparison, Report, comparison, relative_errors
from .engine import CHUNK, KEPT_SETUPS, Task, chunk_states, run, run_task, tasks
from .plan import BRISTLES, DERIVATIVES, QUANTITIES, STEPPING, TRAJECTORIES, WHY, Skip
from .suite import (MAX_SAMPLES, MAX_STEPS, SETTINGS, Suite, list_suites, load_suite, model_to_validate,
                    positive_number_problem, setting_problem, suite_dir, tolerance_problem, whole_number_problem)
from .trajectories import STIFFNESS, compare_trajectories, our_trajectory, pybullet_friction, validation_friction

__all__ = ["BRISTLES", "CHUNK", "DERIVATIVES", "KEPT_SETUPS", "MAX_SAMPLES", "MAX_STEPS", "QUANTITIES", "SETTINGS",
           "STEPPING", "STIFFNESS", "TRAJECTORIES", "WHY", "Comparison", "Report", "Skip", "Suite", "Task",
           "chunk_states", "compare_trajectories", "comparison", "list_suites", "load_suite", "model_to_validate",
           "our_trajectory", "positive_number_problem", "pybullet_friction", "relative_errors", "run", "run_task",
           "setting_problem", "suite_dir", "tasks", "tolerance_problem", "validation_friction",
           "whole_number_problem"]
