"""``dyn-plugin bench``: time per state of our backends against pinocchio and pybullet.

For each robot × operation (``ID`` inverse dynamics, ``FD`` forward dynamics, ``M`` mass
matrix, ``bias`` C q̇ + g) × backend × batch size N, the median time per state in µs, and
its ratio to pinocchio's per-call loop of the same operation at the same N, measured in
the same run:

===================  =================================================================
``ours``             ``be.inverse_dynamics(q, qd, qdd)`` etc. through the public API:
                     q of shape (n,) for N = 1 (the call a control loop makes), (N, n)
                     for batches, always timed on the full batch
``pinocchio``        the per-call loop ``for k in range(N): pin.rnea(m, d, Q[k], V[k], A[k])``
                     (``aba``, ``crba``, ``nonLinearEffects``); for N = 1 one call.  The
                     denominator of every ratio
``pinocchio_parallel``  ``pin.rneaInParallel`` / ``pin.abaInParallel`` on a ``ModelPool``,
                     column-major (nq, N) inputs, output preallocated; none for M and bias
``pybullet``         ``calculateInverseDynamics`` / ``calculateMassMatrix`` loops (bias: with
                     zero q̈), lists prepared beforehand; none for FD
===================  =================================================================

Cores: our batch loops run on ``workers`` cores (``--workers K [K ...]``, through
:func:`dyn_plugin.using_workers`, the repeats of the numbers interleaved so that load from
elsewhere falls on each alike; default every usable core), pinocchio's
parallel functions on as many threads (or a fixed ``--threads``); single states and the
per-call loops are serial and timed once (``workers`` null in JSON).  Batch figures,
ratios and targets are read at the largest number measured; with 1 worker and more the
parallel efficiency ``E = t(1) / (K · t(K))`` of every op × backend × N is the JSON's
``scaling`` (and a table).

Physical limit: the machine's peak double-precision rate is measured once per run
(:mod:`.peak`: an FMA kernel in L1, on 1 core and on each number of cores; JSON
``environment.peak_flops``), and the generated backends' flops per state
(:mod:`.limits`: their exact operation counts, trig and the FD solve as stated there) ÷ the
peak is the fewest ns a state can take: JSON ``limits`` with each measured time's
``percent_of_peak`` at the largest N, a table, and a dashed line on the plot.

Inputs are converted (pinocchio's q, pybullet's lists) outside the timed region.  The
command keeps the memory the process frees for its next allocations
(:func:`dyn_plugin.tools.machine.keep_freed_memory`; ``--fresh-memory`` leaves the
allocator alone): our batches return fresh result arrays, and otherwise each large one
would be a new mapping whose first touch the system pays for, page by page (pinocchio's
parallel functions write into a preallocated ``out``).  Every
measurement starts with an untimed warm-up call at its own N (one that takes ≥ 5 ms is
followed by more, of everything it is compared with in turn, until the warm-up has lasted
1 s: a large batch's first calls can be several times slower; and each of our backends
is called once per operation, single state and batch, before its first measurement:
JIT compilation happens there; its time is reported under ``warmup``).  Then ``timeit``-style:
the statement runs ``number`` times per repeat (chosen so a repeat lasts ≥ ``target``
seconds, 20 ms by default; local names, garbage collector off), and the figure is the
median over repeats of time / (number × states).  Default repeats: 9 for N ≤ 100, 5
above, cut short when a measurement has used ``budget`` seconds (2 s); an explicit
``repeat`` is always honoured.  A per-call loop (pinocchio, pybullet) whose full pass
would exceed ``loop_budget`` (1 s) is timed on a prefix of at least 2000 states: its time
per state does not depend on N (marked † in the table, ``extrapolated`` in JSON).

Before timing, each robot gets correctness checks (untimed): ours against pinocchio
(rigid backends; single state and batch), pinocchio's parallel functions against its
loop (``abaInParallel`` uses ``Convention.WORLD``, compared with ``aba(..., WORLD)``), and
whether ``pin.crba`` returns the full symmetric matrix.

API (what ``dyn-plugin bench`` uses)

Modules
-------
* :mod:`.command` — :func:`add_arguments` ``(parser)``, the sub-command's options, and
  :func:`run` ``(args, console) -> exit code`` (0; 1 with ``--check`` when a target is
  missed; bad input raises :class:`~dyn_plugin.errors.DynPluginError`, which
  ``dyn_plugin.tools.cli.main`` turns into exit code 2); :func:`exit_code`.
* :mod:`.runner` — :func:`run_bench` ``(...) -> BenchResult``, the engine; :func:`resolve`
  and :func:`resolve_workers` (every option checked before any timing);
  :func:`check_pinocchio_parallel`.
* :mod:`.peak` — :func:`measure_peak`, the machine's GFLOP/s on 1 and more cores;
  :func:`best_peak` (the best of several measurements).
* :mod:`.limits` — :func:`operation_flops` (flops per state of a generated backend) and
  :func:`limit_rows` (the limits and % of peak); :data:`TRIG_FLOPS`.
* :mod:`.timing` — :func:`measure`, one statement ``timeit``-style.
* :mod:`.results` — :class:`Measurement`, :class:`BenchResult` (``--json``),
  :func:`parallel_scaling`.
* :mod:`.targets` — :func:`evaluate_targets`, the PUMA-560 speed targets (at N = 1 and
  10⁵ only; the generated backend's on all cores and from 1 to 2 workers),
  :func:`target_label`.
* :mod:`.tables` — :func:`print_report`, :func:`format_tables` (rich), :func:`legend_lines`
  (the tables' legend in words), :func:`environment_line`, :func:`write_json`.
* :mod:`.figures` — :func:`plot_scaling` (PNG: ns per state vs N, a panel per operation,
  with the limit), :func:`plot_cores` (vs cores at the largest N, for a sweep).
* :mod:`.operations` — the operations and each engine's call for them; the defaults.
* :mod:`dyn_plugin.tools.machine` — :func:`environment` (versions, CPU, threads, date).
"""

from ..machine import environment, usable_cores
from .command import add_arguments, exit_code, run
from .operations import (DEFAULT_BACKENDS, DEFAULT_SIZES, OP_ARGS, OP_DESCRIPTIONS, OPS, OUR_METHODS, PIN_CALLS,
                         PIN_PARALLEL_CALLS, PYBULLET_CALLS, QUICK_SIZES, REFERENCE_KINDS)
from .limits import TRIG_FLOPS, limit_rows, operation_flops
from .peak import best_peak, measure_peak
from .results import BenchResult, Measurement, parallel_scaling
from .runner import (CHECK_RTOL, CHECK_STATES, PARALLEL_RTOL, check_pinocchio_parallel, resolve, resolve_workers,
                     run_bench)
from .figures import plot_cores, plot_scaling
from .tables import environment_line, format_tables, legend_lines, print_report, write_json
from .targets import (BATCH_TIME_TARGETS, EFFICIENCY_TARGET, FRICTION_LIMIT, GENERATED_BACKEND,
                      PARALLEL_SPEEDUP_TARGETS, TARGET_BATCH, TARGET_ROBOT, TARGET_SIZES, TARGETS, evaluate_targets,
                      target_label)
from .timing import BUDGET, LOOP_BUDGET, LOOP_MIN_STATES, SMALL_N, TARGET, measure

__all__ = ["BATCH_TIME_TARGETS", "BUDGET", "BenchResult", "CHECK_RTOL", "CHECK_STATES", "DEFAULT_BACKENDS",
           "DEFAULT_SIZES", "EFFICIENCY_TARGET", "FRICTION_LIMIT", "GENERATED_BACKEND", "LOOP_BUDGET", "LOOP_MIN_STATES",
           "Measurement", "OPS", "OP_ARGS", "OP_DESCRIPTIONS", "OUR_METHODS", "PARALLEL_RTOL",
           "PARALLEL_SPEEDUP_TARGETS", "PIN_CALLS", "PIN_PARALLEL_CALLS", "PYBULLET_CALLS", "QUICK_SIZES",
           "REFERENCE_KINDS", "SMALL_N", "TARGET", "TARGETS", "TARGET_BATCH", "TARGET_ROBOT", "TARGET_SIZES",
           "TRIG_FLOPS", "add_arguments", "best_peak", "check_pinocchio_parallel", "environment", "environment_line",
           "evaluate_targets", "exit_code", "format_tables", "legend_lines", "limit_rows", "measure", "measure_peak",
           "operation_flops", "parallel_scaling", "plot_cores", "plot_scaling", "print_report", "resolve",
           "resolve_workers", "run", "run_bench", "target_label", "usable_cores", "write_json"]
