"""The verbs of ``dyn-plugin``: each runs its work (in the library, or in the tools'
validation and bench) and prints or writes the result; :data:`COMMANDS` maps names to them."""

from __future__ import annotations

import contextlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from rich.markup import escape
from rich.text import Text

from ...errors import InputError, arguments_spelled
from .. import validate
from ..validate import bristles
from ..output import console as _console
from ..output import write_or_print
from ..reporting import floor_verdict
from .common import EXIT_FAILED, EXIT_OK, LOCAL_CLUSTER, suite_spelling
from .robot import load_model, lock_of

__all__ = ["COMMANDS", "LITERATURE_COUNTS"]


@contextlib.contextmanager
def _progress(total: int):
    """``callback(label)`` for each of ``total`` steps done, and meanwhile what is being
    compiled or generated, at least every few seconds (:mod:`dyn_plugin.tools.activity`):
    a progress display on a terminal, otherwise lines on stderr."""
    from ..activity import activity

    with activity("validate") as shown:
        yield shown.counter(total, "validating")


def _announce_compilation(command: str, backends) -> None:
    """Say on stderr, before any backend is built, that numba is about to compile
    dyn_plugin's kernels (10-15 s of silence otherwise): when one of ``backends`` runs them
    (newton_euler, and the friction backends over it) and :func:`_kernels_cached` is False."""
    from ...backends.registry import declared, list_backends

    if any(declared(name)[1] & {"single_state_kernels", "friction"} for name in backends if name in list_backends()) \
            and not _kernels_cached():
        print(f"{command}: compiling kernels for first use (cached afterwards)", file=sys.stderr, flush=True)


def _kernels_cached() -> bool:
    """True when numba's on-disk cache (``__pycache__`` next to dyn_plugin/compiled/entry_points.py,
    or ``NUMBA_CACHE_DIR``) holds machine code, for this source and this machine, of the
    single-state kernels that building a newton_euler backend compiles
    (``entry_points.single``): the index entry numba itself looks up (numba/core/caching.py,
    ``Cache._index_key`` and ``IndexDataCacheFile._load_index``).  Reads four small index
    files and compiles nothing; should numba's internals change, it answers True (silence)."""
    try:
        import numba
        from numba.core.registry import cpu_target

        from ...compiled import entry_points, jit

        codegen = cpu_target.target_context.codegen()
        for name in ("inverse_dynamics", "bias", "forward_dynamics", "mass_matrix"):
            py_func, signature = entry_points.SIGNATURES[name]
            cache = numba.njit(**jit.OPTIONS)(py_func)._cache   # lazy: compiles only when called
            if cache._index_key(signature, codegen) not in cache._cache_file._load_index():
                return False
        return True
    except Exception:  # numba's private cache layout changed: do not guess
        return True


def _bench(args) -> int:
    from ..bench.command import run
    from ..bench.operations import DEFAULT_BACKENDS

    _announce_compilation("bench", args.backend or DEFAULT_BACKENDS)
    return run(args, _console())


# Published operation counts of customised inverse dynamics, per evaluation of τ (mult, add):
# Dhanaraj 1990, Table 2.10 (PUMA-560 and Stanford arm: his customised algorithm, and Khalil's).
LITERATURE_COUNTS = {
    "puma560": [("Dhanaraj (customised, Table 2.10)", 208, 152), ("Khalil (Table 2.10)", 214, 176)],
    "stanford": [("Dhanaraj (customised, Table 2.10)", 183, 140), ("Khalil (Table 2.10)", 187, 152)],
}


def _codegen(args) -> int:
    from ...symbolic.codegen import generate

    model = load_model(args)
    if args.derivatives:
        return _derivative_code(model, args)
    code = generate(model, args.lang, mass_matrix=args.mass_matrix)
    counts = code.counts
    if args.counts:
        print(f"{model.name}: inverse dynamics, {counts['multiplications']} multiplications, "
              f"{counts['additions']} additions, {counts['trig']} sin/cos (generated {args.lang})")
        for source, mult, add in LITERATURE_COUNTS.get(model.name, []):
            print(f"  {source}: {mult} multiplications, {add} additions")
        if code.mass_matrix_counts:
            m = code.mass_matrix_counts
            print(f"{model.name}: mass matrix, {m['multiplications']} multiplications, {m['additions']} additions, "
                  f"{m['trig']} sin/cos")
        return EXIT_OK
    if args.out:
        Path(args.out).write_text(code.source, encoding="utf-8")  # robot names may be any unicode
        print(f"wrote {args.out}: {args.lang}, {counts['multiplications']} mult / {counts['additions']} add / "
              f"{counts['trig']} trig per τ", file=sys.stderr)
    else:
        sys.stdout.write(code.source)
    return EXIT_OK


def _derivative_code(model, args) -> int:
    """``codegen --derivatives``: the generated (∂τ/∂q, ∂τ/∂q̇), or their counts beside τ's."""
    from ...symbolic.derivative_code import derivative_code

    code = derivative_code(model, args.lang)
    text = ", ".join(f"{code.counts[k]} {word}" for k, word in (("multiplications", "multiplications"),
                                                                 ("additions", "additions"), ("trig", "sin/cos")))
    if args.counts:
        print(f"{model.name}: ∂τ/∂q and ∂τ/∂q̇, {text} (τ alone: {code.tau_counts['multiplications']} "
              f"multiplications, {code.tau_counts['additions']} additions; generated {args.lang})")
    elif args.out:
        Path(args.out).write_text(code.source, encoding="utf-8")
        print(f"wrote {args.out}: {args.lang}, ∂τ/∂q and ∂τ/∂q̇: {text}", file=sys.stderr)
    else:
        sys.stdout.write(code.source)
    return EXIT_OK


def _equations(args) -> int:
    from ...symbolic.derive import format_equations

    print(format_equations(load_model(args), latex=args.latex, symbols=tuple(args.symbols), route=args.route))
    return EXIT_OK


@contextlib.contextmanager
def _dask_client(args):
    """None without --dask; else a ``distributed.Client`` (to a new local cluster when no
    address is given), closed afterwards with its cluster."""
    if getattr(args, "dask", None) is None:
        yield None
        return
    from ...cluster import close, connect

    client = connect(None if args.dask == LOCAL_CLUSTER else args.dask, quiet=True)
    print(f"dask: {len(client.scheduler_info(n_workers=-1)['workers'])} workers; dashboard {client.dashboard_link}",
          file=sys.stderr, flush=True)
    interrupted = False
    try:
        yield client
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        close(client, quiet=interrupted)


def _validate(args) -> int:
    from .. import zoo

    if zoo.is_zoo(args.suite) and lock_of(args):
        raise InputError("--lock applies to named robots; the zoo suite validates every file as it is")
    if zoo.is_zoo(args.suite):  # one line per file; refusals are given to pinocchio (tools/zoo.py)
        return zoo.command(args, _console())
    suite = _suite(args)
    _announce_compilation("validate", suite.backends)
    with _dask_client(args) as client, _progress(len(validate.tasks(suite))) as progress:
        report = validate.run(suite, progress=progress, client=client)
    quiet = args.json == "-"
    written = []                                         # (path, what it holds)
    if args.json:
        write_or_print(args.json, json.dumps(report.as_dict(), indent=2))
        if not quiet:
            written.append((args.json, "every figure, JSON"))
    if args.report:
        from ..reporting import markdown_report

        Path(args.report).write_text(markdown_report(report))
        written.append((args.report, "the report, Markdown"))
    if args.plots:
        from ..reporting import plot_report

        written += [(path, "plot") for path in plot_report(report, args.plots)]
    console = _console()
    if not quiet:
        _print_report(console, report)
    for path, what in written:                           # on stderr when stdout is the JSON
        print(f"wrote {path} ({what})", file=sys.stderr if quiet else sys.stdout)
    return EXIT_OK if report.passed else EXIT_FAILED


def _suite(args) -> "validate.Suite":
    """The suite with the command line's overrides, checked (names, numbers, robots) before any work."""
    suite = validate.load_suite(args.suite)
    for key, value in (("robots", args.robot), ("backends", args.backend), ("references", args.against),
                       ("quantities", args.quantity), ("samples", args.samples), ("seed", args.seed),
                       ("rtol", args.rtol), ("dt", args.dt), ("floating_base", args.floating_base or None),
                       ("mimic", args.mimic or None), ("lock", lock_of(args))):
        if value is not None:
            setattr(suite, key, value)
    with arguments_spelled(suite_spelling(args)):
        suite.check()
    for robot in suite.robots:
        suite.model(robot)  # a bad name or file fails here, before any sampling
    return suite


def _print_report(console, report) -> None:
    """The largest error of each quantity: per robot and reference, one row per backend and
    one column per quantity; the pybullet stepping in a second table.  Fits 80 columns:
    names wrap, figures never do (the JSON has them in full precision)."""
    suite = report.suite
    trajectories = f", trajectories at <= {suite.trajectory_tol:g}" if any(
        c.quantity in validate.STEPPING for c in report.comparisons) else ""
    console.print(Text(f"max |ours - ref| / max(1, |ref|) over {suite.samples} random states per robot "
                       f"(seed {suite.seed}); pass at <= {suite.rtol:g}{trajectories}{report.own_tolerances()}"))
    for group, title in ((validate.QUANTITIES, ""), (validate.DERIVATIVES, "derivatives: error / largest entry"),
                         (validate.STEPPING, f"pybullet stepping, dt = {suite.dt:g} s")):
        rows = [c for c in report.comparisons if c.quantity in group]
        if rows:
            console.print(_error_table(rows, [q for q in suite.quantities if q in group], title))
    physics = [c for c in report.comparisons if c.reference == bristles.REFERENCE]
    if physics:          # the dynamic-friction checks (closed forms, energy, Radau IIA)
        console.print(_error_table(physics, list(dict.fromkeys(c.quantity for c in physics)),
                                   "dynamic friction vs physics (order: |p - 1|)"))
    for line in report.disagreement_lines():
        console.print(Text(line, style="yellow"))
    for line in report.skip_lines():     # not asked of a backend (what it declares, or a model it refuses)
        console.print(Text(f"skipped: {line}", style="dim"))
    if any(c.within_floor for c in report.comparisons):
        console.print(Text("* above the tolerance, within the reference disagreement: passes at <= tolerance + floor "
                           "with ours within the tolerance of pinocchio's prediction"))
    for c in report.failures():
        console.print(Text.assemble(("FAIL", "bold red"), f" {c.robot} {c.backend} vs {c.reference} {c.quantity}: "
                                    f"max rel {c.max_rel:.3e} (abs {c.max_abs:.3e}) at state {c.worst_sample}, "
                                    f"entry {list(c.worst_entry)}{floor_verdict(c)}"))
    verdict = ("all passed", "green") if report.passed else (f"{len(report.failures())} failed", "bold red")
    console.print(Text.assemble(f"{len(report.comparisons)} comparisons, ", verdict, f" in {report.seconds:.1f} s"))


def _error_table(comparisons, quantities, title: str):
    """Section "robot vs reference", then a row per backend: max rel error per quantity."""
    from rich import box
    from rich.table import Table

    table = Table(title=title or None, box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False, show_edge=False)
    table.add_column("backend", overflow="fold")
    for quantity in quantities:      # bristles_steady etc. under the title that says so: steady, ...
        table.add_column(quantity.removeprefix("bristles_"), justify="right", no_wrap=True)
    cells = {}
    for c in comparisons:
        cells.setdefault((c.robot, c.reference), {}).setdefault(c.backend, {})[c.quantity] = Text(
            f"{c.max_rel:.1e}" + ("*" if c.within_floor else ""),
            style="yellow" if c.within_floor else "green" if c.passed else "bold red")
    for (robot, reference), backends in cells.items():
        table.add_row(Text(f"{robot} vs {reference}", style="bold"))
        last = list(backends)[-1]
        for backend, values in backends.items():
            table.add_row(Text(backend), *(values.get(q, Text("–", style="dim")) for q in quantities),
                          end_section=backend == last)
    return table


def _friction(args) -> int:
    from ...backends.registry import get_backend
    from ...backends.registry import backends as registered_backends
    from ...studies.friction_study import plot_study, run_study, table_time

    with_friction = registered_backends(can=("friction",))
    if args.backend not in with_friction:
        raise InputError(f"--backend must be one with friction: {', '.join(with_friction)}; got {args.backend!r}")
    if args.at is None:
        args.at = table_time(args.duration)
    if not 0 <= args.at <= args.duration:
        raise InputError(f"--at must be a time within the trajectory, from 0 to {args.duration:g} s; got {args.at:g}")
    model = load_model(args)
    if args.monte_carlo:
        return _friction_envelope(args, model)
    if args.dask is not None:
        raise InputError("--dask applies to --monte-carlo K (the one friction study runs in a moment)")
    backend = get_backend(args.backend, model, friction=args.friction, profile=args.profile)
    study = run_study(backend, duration=args.duration, samples=args.samples)
    if args.json:
        write_or_print(args.json, json.dumps(study.as_dict(args.at), indent=2))
    if args.json != "-":                                 # stdout is the JSON otherwise
        console = _console()
        _print_friction(console, model, backend, study, args)
        if backend.friction.frictionless:
            console.print(f"[yellow]note:[/] {escape(model.name)} has no friction in "
                          f"'{escape(backend.friction.name)}' (give --friction FILE, or <dynamics damping friction> "
                          "in its URDF)")
    if args.plot:
        _wrote(plot_study(study, args.plot, mark=args.at), args)
    return EXIT_OK


def _wrote(path, args) -> None:
    """``wrote PATH``: on stderr when stdout is the JSON (``--json -``)."""
    print(f"wrote {path}", file=sys.stderr if args.json == "-" else sys.stdout)


def _friction_envelope(args, model) -> int:
    """``friction --monte-carlo K``: percentiles of the friction torque over K parameter samples."""
    from rich.table import Table

    from ...studies.friction_monte_carlo import friction_envelope, plot_envelope
    from ...studies.friction_study import reference_trajectory

    trajectory = reference_trajectory(model, args.duration, args.samples)
    with _dask_client(args) as client:
        envelope = friction_envelope(model, friction=args.friction, profile=args.profile, backend=args.backend,
                                     samples=args.monte_carlo, trajectory=trajectory, client=client)
    if args.json:
        write_or_print(args.json, json.dumps(envelope.as_dict(), indent=2))
    if args.plot:
        _wrote(plot_envelope(envelope, args.plot), args)
    if args.json == "-":
        return EXIT_OK
    console = _console()
    low, high = envelope.percentile(envelope.levels[0]), envelope.percentile(envelope.levels[-1])
    table = Table(title=f"{escape(model.name)}: friction torque over {args.monte_carlo} samples of "
                        f"{escape(envelope.uncertainty.describe())} (N·m; N for prismatic joints)")
    for column in ("joint", "peak |nominal|", f"peak p{envelope.levels[0]:g}-p{envelope.levels[-1]:g} band",
                   "band / peak"):
        table.add_column(column, justify="left" if column == "joint" else "right")
    for i, name in enumerate(model.joint_names):
        peak, band = np.abs(envelope.nominal[:, i]).max(), (high[:, i] - low[:, i]).max()
        table.add_row(escape(name), f"{peak:.4g}", f"{band:.4g}", f"{band / peak:.1%}" if peak else "–")
    console.print(table)
    return EXIT_OK


def _dataset(args) -> int:
    from ...dataset import dataset

    with _resumed_by_a_rerun(args.store), _dask_client(args) as client:
        summary = dataset(load_model(args), args.states, out=args.store, backend=args.backend, friction=args.friction,
                          chunk=args.chunk, seed=args.seed, trajectories=args.trajectories,
                          mass_matrix=args.mass_matrix, client=client, overwrite=args.overwrite)
    print(f"{summary.path}: {summary.states:,} states in {summary.chunks} chunks; computed {summary.computed}, "
          f"skipped {summary.skipped} (done before), {summary.seconds:.1f} s, {summary.states_per_second:,.0f} states/s")
    return EXIT_OK


@contextlib.contextmanager
def _resumed_by_a_rerun(store: str):
    """An interrupt (Ctrl-C) says that the dataset at ``store`` resumes where it stopped."""
    try:
        yield
    except KeyboardInterrupt:
        raise KeyboardInterrupt(f"the chunks done are kept in {store}: run the same command again to resume "
                                "(it computes only the missing chunks)") from None


def _print_friction(console, model, backend, study, args) -> None:
    """Dhanaraj's Table 3.5 at ``--at``, and the friction share along the trajectory."""
    from rich.table import Table

    from ...studies.friction_study import COLUMNS

    k = study.index(args.at)
    table = Table(title=f"{escape(model.name)}, friction '{escape(backend.friction.name)}': torques at "
                        f"t = {study.t[k]:.3g} s (N·m; N for prismatic joints), as Dhanaraj Table 3.5")
    columns = study.table_at(args.at)
    table.add_column("joint")
    table.add_column("q̇", justify="right")
    for label, _ in COLUMNS:
        table.add_column(label, justify="right")
    for i, name in enumerate(model.joint_names):
        table.add_row(escape(name), f"{study.qd[k, i]:+.3f}", *(f"{columns[label][i]:+.4f}" for label, _ in COLUMNS))
    console.print(table)
    summary = Table(title=f"along the {args.duration:g} s rest-to-rest trajectory ({args.samples} samples)")
    for column in ("joint", "mean |rigid + armature|", "mean |friction|", "peak |friction|", "friction share",
                   "dissipated J"):
        summary.add_column(column, justify="right")
    basic, friction = np.abs(study.basic).mean(axis=0), np.abs(study.parts.friction)
    share, lost = study.friction_share(), study.dissipated_energy()
    for i, name in enumerate(model.joint_names):
        summary.add_row(escape(name), f"{basic[i]:.3f}", f"{friction[:, i].mean():.3f}", f"{friction[:, i].max():.3f}",
                        f"{100 * share[i]:.1f} %", f"{lost[i]:.3f}")
    console.print(summary)


def _robots(args) -> int:
    from ...robots import list_robots, regenerate, robot_table

    if args.regenerate:
        for path in regenerate():
            print(f"wrote {path}")
        return EXIT_OK
    for name in list_robots():
        print(f"{name:10s} {robot_table(name).get('description', '')}")
    return EXIT_OK


def _backends(args) -> int:
    from rich.table import Table

    from ...backends.registry import backend_description, declared, list_backends

    table = Table(box=None, padding=(0, 2, 0, 0), pad_edge=False)   # columns as wide as their longest entry
    for column in ("backend", "kind", "description"):
        table.add_column(column, no_wrap=column != "description", overflow="fold")
    for name in list_backends():
        table.add_row(escape(name), declared(name)[0], escape(backend_description(name)))
    _console().print(table)
    return EXIT_OK


def _info(args) -> int:
    from rich.table import Table

    from ...errors import PhysicalValidityWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PhysicalValidityWarning)
        model = load_model(args)
    base = (f", floating base (nq = {model.nq}, nv = {model.nv}; base link {model.base_link!r}: "
            f"{model.base_mass:.4g} kg)" if model.floating_base else ", fixed base")
    table = Table(title=f"{escape(model.name)}: {model.n} joints{escape(base)}, {model.total_mass():.3f} kg")
    for column in ("#", "joint", "type", "parent link", "lower", "upper", "link", "mass kg", "COM m"):
        table.add_column(column)
    for i in range(model.n):
        parent = model.base_link if model.parents[i] < 0 else model.link_names[model.parents[i]]
        table.add_row(str(i), escape(model.joint_names[i]), _joint_type(model, i), escape(parent),
                      f"{model.lower[i]:.4g}", f"{model.upper[i]:.4g}", escape(model.link_names[i]),
                      f"{model.masses[i]:.4g}", np.array2string(model.coms[i], precision=4))
    console = _console()
    console.print(table)
    notes = [str(w.message) for w in caught] + [f"{n} (pybullet comparisons will differ)"
                                                for n in model.pybullet_alterations() if "<inertial>" in n]
    for note in notes:
        console.print(f"[yellow]warning:[/] {escape(note)}")
    if not notes:
        console.print("[green]every link is physically valid[/] (mass >= 0, inertia PSD, triangle inequality)")
    if not model.floating_base and model.base_mass > 0:
        console.print(f"[yellow]note:[/] the base link {escape(repr(model.base_link))} ({model.base_mass:.4g} kg) is "
                      "fixed to the world here; for a robot that flies, walks or drives, add --floating-base")
    if model.nv == 0:                 # a floating base alone moves: its six degrees of freedom are compared
        console.print(f"[yellow]note:[/] {escape(model.name)} has no moving joint (only fixed joints): "
                      "dyn-plugin validate has nothing to compare")
    continuous = [name for name, free in zip(model.joint_names, model.continuous) if free]
    if continuous:
        console.print(f"[yellow]note:[/] continuous joint(s) {escape(', '.join(continuous))}: one coordinate each "
                      f"here (the angle, rad), two in pinocchio's q (cos, sin); nq = {model.nq} here, "
                      f"{model.nq + len(continuous)} in pinocchio")
    return EXIT_OK


def _joint_type(model, i: int) -> str:
    """The joint's URDF type: revolute, continuous (a revolute joint without limits, one
    coordinate here, two in pinocchio's q: (cos, sin)), prismatic."""
    return "continuous" if model.continuous[i] else model.joint_types[i]


def _schedule(args) -> int:
    """``dyn-plugin schedule``: Dhanaraj's ch. 4 task graph of one robot, scheduled."""
    from rich.table import Table

    from ...parallel import max_concurrency, plot_study, schedule_study, window_lower_bound
    from ...parallel.study import task_graph

    model = load_model(args)
    processors = args.processors
    if args.max:      # an empty graph is refused here, before its maximum concurrency (0) is taken for a count
        processors = [max_concurrency(task_graph(model, args.mode, friction=args.friction))]
    study = schedule_study(model, args.mode, processors, rules=args.rule, friction=args.friction)
    quiet = args.json == "-"                       # stdout holds the JSON alone; the rest goes to stderr
    if args.json:
        write_or_print(args.json, study.to_json())
    console = _console()
    if not quiet:
        flops = study.graph.flops_per_task
        console.print(Text(f"{model.name} ({args.mode}{', friction' if args.friction else ''}): {study.tasks} "
                           f"{'subtasks of 3 flops' if flops == 3 else 'operations of 1 flop'}, critical path "
                           f"{study.critical_path} levels, maximum concurrency {study.max_concurrency} "
                           f"({'Dhanaraj' if flops == 3 else 'ASAP'} layering)"))
        table = Table(box=None, padding=(0, 0, 0, 2), pad_edge=False)
        for column in ("rule", "p", "levels", "S_p", "E_p", "lower bound", "window bound", "Dhanaraj App. C"):
            table.add_column(column, justify="left" if column == "rule" else "right")
        for s in study.schedules:
            table.add_row(s.rule, str(s.processors), str(s.levels), f"{s.speedup:.2f}",
                          f"{100 * s.efficiency:.1f} %", str(s.lower_bound),
                          str(window_lower_bound(study.graph, s.processors)),
                          str(study.thesis_levels(s.processors) or "–"))
        console.print(table)
        if len(study.schedules) == 1:
            s = study.schedules[0]
            console.print(Text(f"{s.rule} schedule on {s.processors} processors (task code = link * 100 + subtask "
                               "of Table 4.1):"))
            console.print(_schedule_table(s))
        for note in study.graph.notes:
            console.print(f"[yellow]note:[/] {escape(note)}")
    if args.plot:
        for path in plot_study(study, args.plot):  # the Gantt chart, the speed-up and efficiency
            _wrote(path, args)
    return EXIT_OK


def _schedule_table(schedule):
    """One schedule: a row per level, a column per processor, task codes (link·100 + subtask)."""
    from rich.table import Table

    table = Table(box=None, padding=(0, 0, 0, 1), pad_edge=False)
    table.add_column("level", justify="right")
    for p in range(1, max(map(len, schedule.table), default=0) + 1):      # the processors it uses
        table.add_column(f"P{p}", justify="right")
    for level, tasks in enumerate(schedule.table, start=1):
        table.add_row(str(level), *map(str, tasks))
    return table


def _identify(args) -> int:
    """``identify ROBOT --log FILE | --data FILE.npz | --simulate``: :mod:`.identify`."""
    from .identify import command

    return command(args)


def _fit_friction(args) -> int:
    """``fit-friction FILE --law LAW ... [--test FILE ...]``: :mod:`.fit_friction`."""
    from .fit_friction import command

    return command(args)


COMMANDS = {"identify": _identify, "fit-friction": _fit_friction, "validate": _validate, "friction": _friction, "dataset": _dataset, "robots": _robots, "backends": _backends,
            "info": _info, "bench": _bench, "codegen": _codegen, "equations": _equations, "schedule": _schedule}
