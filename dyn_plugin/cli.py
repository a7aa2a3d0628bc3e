"""``dyn-plugin``: the command line.  Parsing and printing only; the work is elsewhere.

Exit codes: 0 all passed, 1 a tolerance exceeded, 2 usage or input error (one line on
stderr), 3 an internal error (a bug in dyn_plugin: the traceback is printed), 130
interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from rich.markup import escape
from rich.text import Text

from . import validation
from .errors import DynPluginError, InputError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, as for every input error
        self.exit(EXIT_USAGE, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default, unless it has none or names it already."""

    def _get_help_string(self, action):
        text, default = action.help or "", action.default
        if default is None or default is False or default == () or default is argparse.SUPPRESS or \
                "(default" in text or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


# -- argument types: each raises ArgumentTypeError with a message that says what is valid

def _whole_number(text: str) -> int:
    """An integer, also written as 1e3."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not value.is_integer():
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    return int(value)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _checked(parse, problem, name: str):
    """An argument type: ``parse(text)``, refused when ``problem(value)`` says why."""
    def convert(text: str):
        value = parse(text)
        reason = problem(value)
        if reason:
            raise argparse.ArgumentTypeError(reason)
        return value
    convert.__name__ = name  # argparse names the type in some messages
    return convert


def _suite_setting(key: str, parse=_number):
    """The type of the validate option that overrides the suite's numeric setting ``key``."""
    return _checked(parse, lambda value: validation.setting_problem(key, value), key)


def _within(lowest: float, highest: float, unit: str):
    return _checked(_number, lambda value: None if lowest <= value <= highest else
                    f"must be from {lowest:g} to {highest:g}{unit}, got {value:g}", "number")


def _count(lowest: int):
    return _checked(_whole_number, lambda v: validation.whole_number_problem(v, lowest, validation.MAX_SAMPLES),
                    "count")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dyn_plugin")
    except PackageNotFoundError:  # a source tree that is not installed
        from . import __version__
        return __version__


# -- the parser

def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dyn-plugin", description="Robot-manipulator dynamics backends, validated.",
                     epilog=__doc__.split("\n\n", 1)[1], formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add(name, help):
        return sub.add_parser(name, help=help, description=help, formatter_class=_HelpFormatter)

    _validate_arguments(add("validate", "compare our backends with pinocchio and pybullet"))
    _friction_arguments(add("friction", "friction share of the input torque along a trajectory (Dhanaraj ch. 3)"))
    _dataset_arguments(add("dataset", "states and their dynamics in a chunked, resumable Zarr store"))
    from .bench import add_arguments as bench_arguments      # imports nothing heavy
    bench_arguments(add("bench", "time per state against pinocchio and pybullet (table, --json, --plot)"))
    _codegen_arguments(add("codegen", "customised straight-line inverse dynamics for one robot (Python, C, numba)"))

    eq = add("equations", "closed-form M, B, C, G (ROBMAT's configuration-space form)")
    eq.add_argument("robot", metavar="NAME_OR_URDF")
    eq.add_argument("--latex", action="store_true", help="LaTeX instead of pretty-printed text")
    eq.add_argument("--symbols", nargs="+", metavar="GROUP", default=(),
                    help="parameter groups kept symbolic (e.g. masses lengths inertias gravity; default: none)")
    eq.add_argument("--route", choices=("newton_euler", "lagrange_euler"), default="newton_euler",
                    help="derivation route (the result is the same)")

    robots = add("robots", "list the bundled robots")
    robots.add_argument("--regenerate", action="store_true",
                        help="rewrite urdf/NAME.urdf from the source tables urdf/NAME.toml")
    add("backends", "list the registered backends")
    add("info", "joints, limits and masses of a robot").add_argument("robot", metavar="NAME_OR_URDF")
    return parser


def _validate_arguments(val) -> None:
    suite = validation.load_suite("default")

    def from_suite(text, value):
        shown = " ".join(map(str, value)) if isinstance(value, list) else f"{value:g}"
        return f"{text} (default: the suite's; {shown} in the default suite)"

    val.add_argument("--suite", default="default", metavar="NAME|FILE.toml",
                     help=f"suite: {', '.join(validation.list_suites())}, or a TOML file")
    val.add_argument("--robot", nargs="+", metavar="NAME_OR_URDF", help=from_suite("robots", suite.robots))
    val.add_argument("--backend", nargs="+", metavar="NAME", help=from_suite("backends to check", suite.backends))
    val.add_argument("--against", nargs="+", metavar="REF", help=from_suite("references", suite.references))
    quantities = [*validation.QUANTITIES, *validation.STEPPING]
    shown = "all" if suite.quantities == quantities else " ".join(suite.quantities)
    val.add_argument("--quantity", nargs="+", metavar="Q", choices=quantities,
                     help=f"quantities: {' '.join(quantities)} (default: the suite's; {shown} in the default suite)")
    val.add_argument("--samples", type=_suite_setting("samples", _whole_number), metavar="N",
                     help=from_suite(f"random states per robot, at most {validation.MAX_SAMPLES}", suite.samples))
    val.add_argument("--seed", type=_suite_setting("seed", _whole_number), metavar="S",
                     help=from_suite("random seed", suite.seed))
    val.add_argument("--rtol", type=_suite_setting("rtol"),
                     help=from_suite("tolerance on |diff| / max(1, |ref|), below 1", suite.rtol))
    val.add_argument("--dt", type=_suite_setting("dt"), metavar="SECONDS",
                     help=from_suite("time step of the pybullet stepping comparisons (step, traj_zero, "
                                     "traj_gravity)", suite.dt))
    val.add_argument("--json", metavar="FILE", help="write every figure as JSON ('-' for stdout)")
    val.add_argument("--report", metavar="FILE.md", help="write a Markdown report")
    val.add_argument("--plots", metavar="DIR", help="write error histograms and trajectory overlays (PNG)")
    _dask_argument(val, "run the chunks of states on Dask: the same results as serially")


def _dask_argument(parser, what: str) -> None:
    parser.add_argument("--dask", nargs="?", const=LOCAL_CLUSTER, metavar="ADDRESS",
                        help=f"{what}; ADDRESS of a scheduler (tcp://host:8786), or none for a local cluster of "
                             "one process per core (needs the [dask] extra; default: no Dask)")


def _friction_arguments(fr) -> None:
    from .backends.registry import WITH_FRICTION

    fr.add_argument("robot", metavar="NAME_OR_URDF")
    fr.add_argument("--backend", default="newton_euler_friction", help=f"one of {', '.join(WITH_FRICTION)}")
    fr.add_argument("--friction", metavar="FILE|urdf|none",
                    help="friction data (default: the robot's bundled data file, else the URDF <dynamics>)")
    fr.add_argument("--profile", help="profile of the data file (PUMA-560: corke, dhanaraj; default: the file's)")
    fr.add_argument("--duration", type=_within(1e-3, 1e4, " s"), default=2.0, metavar="SECONDS",
                    help="trajectory duration, from 0.001 to 10000 s")
    fr.add_argument("--samples", type=_count(2), default=201, metavar="N",
                    help=f"samples along it, from 2 to {validation.MAX_SAMPLES}")
    fr.add_argument("--at", type=_number, default=0.6, metavar="SECONDS",
                    help="time of the torque table, within the trajectory (0.6 s: Dhanaraj's Table 3.5)")
    fr.add_argument("--plot", metavar="FILE.png", help="write the torque-by-cause plot")
    fr.add_argument("--json", metavar="FILE", help="write the figures as JSON ('-' for stdout)")
    fr.add_argument("--monte-carlo", type=_count(1), metavar="K",
                    help="sample the friction parameters K times within their stated uncertainties (the data "
                         "file's [uncertainty] table, else ±20 %%) and report the envelope of the friction torque")
    _dask_argument(fr, "with --monte-carlo: run the samples on Dask (the same envelope as serially)")


def _dataset_arguments(ds) -> None:
    ds.add_argument("robot", metavar="NAME_OR_URDF")
    ds.add_argument("--states", type=_checked(_whole_number, lambda v: None if v >= 1 else
                                              f"must be a whole number, at least 1, got {v}", "count"),
                    required=True, metavar="N", help="how many states")
    ds.add_argument("--out", dest="store", required=True, metavar="DIR.zarr",
                    help="the Zarr store (a folder; a rerun resumes it, computing only missing chunks)")
    ds.add_argument("--backend", default="newton_euler", metavar="NAME", help="backend computing the dynamics")
    ds.add_argument("--friction", metavar="FILE|urdf|none",
                    help="friction data for a friction backend (also stores tau_friction)")
    ds.add_argument("--chunk", type=_checked(_whole_number, lambda v: None if v >= 1 else
                                             f"must be a whole number, at least 1, got {v}", "count"),
                    default=10_000, metavar="K", help="states per chunk (one task each)")
    ds.add_argument("--seed", type=_checked(_whole_number, lambda v: validation.whole_number_problem(v, 0), "seed"),
                    default=0, metavar="S", help="random seed")
    ds.add_argument("--trajectories", action="store_true",
                    help="states along rest-to-rest quintics instead of independent random states")
    ds.add_argument("--mass-matrix", action="store_true", help="also store M (N, n, n)")
    ds.add_argument("--overwrite", action="store_true", help="replace a store made with other settings")
    _dask_argument(ds, "compute the chunks on Dask: the same data as serially")


def _codegen_arguments(gen) -> None:
    gen.add_argument("robot", metavar="NAME_OR_URDF")
    gen.add_argument("--lang", choices=("python", "c", "numba"), default="python", help="output language")
    gen.add_argument("--out", metavar="FILE", help="write the source here (default: stdout)")
    gen.add_argument("--counts", action="store_true",
                     help="print only the operation counts, next to the published customised algorithms")
    gen.add_argument("--mass-matrix", action="store_true", help="also generate M(q)")


# -- running a command

def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    commands = {"validate": _validate, "friction": _friction, "dataset": _dataset, "robots": _robots, "backends": _backends,
                "info": _info, "bench": _bench, "codegen": _codegen, "equations": _equations}
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            _check_outputs(args)
            return commands[args.command](args)
        except (DynPluginError, OSError, UnicodeDecodeError) as exc:
            return _input_error(_describe(exc))
        except KeyboardInterrupt:
            print("dyn-plugin: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except Exception:  # a bug: keep the traceback, and an exit code no check or input error uses
            import traceback

            traceback.print_exc()
            print("dyn-plugin: internal error (a bug in dyn_plugin, not in your input): please report it with "
                  "the traceback above", file=sys.stderr)
            return EXIT_INTERNAL


def _describe(exc: Exception) -> str:
    """The message of an input error: ours, or a file the user named that is missing,
    unreadable or not text (OSError, UnicodeDecodeError)."""
    if isinstance(exc, OSError):
        return f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return f"a file given is not UTF-8 text ({exc.reason} at byte {exc.start})"
    return str(exc)


def _input_error(message: str) -> int:
    print(f"dyn-plugin: error: {_one_line(message)}", file=sys.stderr)
    return EXIT_USAGE


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"dyn-plugin: warning: {_one_line(str(message))}", file=sys.stderr)


def _one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped (a name can hold them)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


# Options that name an output, and what they name.
OUTPUTS = {"json": "file", "report": "file", "out": "file", "plot": "image", "plots": "folder", "store": "folder"}
LOCAL_CLUSTER = "local"  # --dask without an address


def _check_outputs(args) -> None:
    """Fail before any work when an output cannot be written, for every command alike:
    the folder that will hold it must exist, a file must not be a folder (nor a folder a
    file), an image needs a format matplotlib writes.  ``--json -`` is stdout."""
    for key, kind in OUTPUTS.items():
        path = getattr(args, key, None)
        if path is None or (key == "json" and path == "-"):
            continue
        target, where = Path(path), f"--{key} {path}"
        if kind == "folder" and target.exists() and not target.is_dir():
            raise InputError(f"{where}: is a file; give a folder")
        if kind != "folder" and target.is_dir():
            raise InputError(f"{where}: is a folder; give a file name")
        if not target.parent.is_dir():
            raise InputError(f"{where}: folder {target.parent} does not exist")
        if kind == "image":
            _check_image_format(where, target.suffix.lstrip(".").lower())


def _check_image_format(where: str, suffix: str) -> None:
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix and suffix not in formats:
        raise InputError(f"{where}: unknown image format {suffix!r}; use one of {', '.join(sorted(formats))}")


def _console():
    """Standard output: as wide as the terminal, or $COLUMNS; in a pipe without $COLUMNS,
    160 columns (room for the widest tables; the validate table needs at most 80)."""
    from rich.console import Console

    console = Console(emoji=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(emoji=False, width=160)
    return console


@contextlib.contextmanager
def _progress(total: int):
    """``callback(label)`` for each of ``total`` steps done: a progress bar on a terminal,
    otherwise one line per step, on stderr."""
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True, emoji=False)
    if err.is_terminal:
        with Progress(console=err, transient=True) as bar:
            task = bar.add_task("validating", total=total)
            yield lambda label: bar.update(task, advance=1, description=escape(label))
        return
    start, done = time.perf_counter(), []

    def report(label: str) -> None:
        done.append(label)
        print(f"validate: {len(done)}/{total} done, {_one_line(label)} ({time.perf_counter() - start:.0f} s)",
              file=sys.stderr, flush=True)
    yield report


# -- the commands

def _bench(args) -> int:
    from .bench import run

    return run(args, _console())


# Published operation counts of customised inverse dynamics, per evaluation of τ (mult, add):
# Dhanaraj 1990 Table 2.10 (PUMA-560, Stanford), seed 000 (Macsyma two-link; Raibert-Horn minimum).
LITERATURE_COUNTS = {
    "puma560": [("Dhanaraj (customised, Table 2.10)", 208, 152), ("Khalil (Table 2.10)", 214, 176)],
    "stanford": [("Dhanaraj (customised, Table 2.10)", 183, 140), ("Khalil (Table 2.10)", 187, 152)],
}


def _codegen(args) -> int:
    from .robots import load_robot
    from .symbolic.codegen import generate

    model = load_robot(args.robot)
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


def _equations(args) -> int:
    from .robots import load_robot
    from .symbolic import format_equations

    print(format_equations(load_robot(args.robot), latex=args.latex, symbols=tuple(args.symbols), route=args.route))
    return EXIT_OK


@contextlib.contextmanager
def _dask_client(args):
    """None without --dask; else a ``distributed.Client`` (to a new local cluster when no
    address is given), closed afterwards with its cluster."""
    if getattr(args, "dask", None) is None:
        yield None
        return
    from .dask import connect

    client = connect(None if args.dask == LOCAL_CLUSTER else args.dask, quiet=True)
    print(f"dask: {len(client.scheduler_info(n_workers=-1)['workers'])} workers; dashboard {client.dashboard_link}",
          file=sys.stderr, flush=True)
    try:
        yield client
    finally:
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()


def _validate(args) -> int:
    suite = _suite(args)
    with _dask_client(args) as client, _progress(len(validation.tasks(suite))) as progress:
        report = validation.run(suite, progress=progress, client=client)
    quiet = args.json == "-"
    if args.json:
        _write_or_print(args.json, json.dumps(report.as_dict(), indent=2))
    if args.report:
        from .reporting import markdown_report

        Path(args.report).write_text(markdown_report(report))
    console = _console()
    if args.plots:
        from .reporting import plot_report

        written = plot_report(report, args.plots)
        if not quiet:
            console.print(f"wrote {len(written)} plots to {escape(args.plots)}")
    if not quiet:
        _print_report(console, report)
    return EXIT_OK if report.passed else EXIT_FAILED


def _suite(args) -> "validation.Suite":
    """The suite with the command line's overrides, checked (names, numbers, robots) before any work."""
    from .backends import list_backends
    from .errors import BackendError

    suite = validation.load_suite(args.suite)
    for key, value in (("robots", args.robot), ("backends", args.backend), ("references", args.against),
                       ("quantities", args.quantity), ("samples", args.samples), ("seed", args.seed),
                       ("rtol", args.rtol), ("dt", args.dt)):
        if value is not None:
            setattr(suite, key, value)
    suite.check()
    available = list_backends()
    for name in suite.backends + suite.references:
        if name not in available:
            raise BackendError(f"unknown backend {name!r}; available: {', '.join(available)}")
    for robot in suite.robots:
        validation.model_to_validate(robot)  # a bad name or file fails here, before any sampling
    return suite


def _write_or_print(path: str, text: str) -> None:
    """``text`` to the file ``path``, or to stdout for ``-``."""
    if path == "-":
        print(text)
    else:
        Path(path).write_text(text + "\n")


def _print_report(console, report) -> None:
    """The largest error of each quantity: per robot and reference, one row per backend and
    one column per quantity; the pybullet stepping in a second table.  Fits 80 columns:
    names wrap, figures never do (the JSON has them in full precision)."""
    suite = report.suite
    trajectories = f", trajectories at <= {suite.trajectory_tol:g}" if any(
        c.quantity in validation.STEPPING for c in report.comparisons) else ""
    console.print(Text(f"max |ours - ref| / max(1, |ref|) over {suite.samples} random states per robot "
                       f"(seed {suite.seed}); pass at <= {suite.rtol:g}{trajectories}"))
    for group, title in ((validation.QUANTITIES, ""), (validation.STEPPING, f"pybullet stepping, dt = {suite.dt:g} s")):
        rows = [c for c in report.comparisons if c.quantity in group]
        if rows:
            console.print(_error_table(rows, [q for q in suite.quantities if q in group], title))
    for c in report.failures():
        console.print(Text.assemble(("FAIL", "bold red"), f" {c.robot} {c.backend} vs {c.reference} {c.quantity}: "
                                    f"max rel {c.max_rel:.3e} (abs {c.max_abs:.3e}) at state {c.worst_sample}, "
                                    f"entry {list(c.worst_entry)}"))
    verdict = ("all passed", "green") if report.passed else (f"{len(report.failures())} failed", "bold red")
    console.print(Text.assemble(f"{len(report.comparisons)} comparisons, ", verdict, f" in {report.seconds:.1f} s"))


def _error_table(comparisons, quantities, title: str):
    """Section "robot vs reference", then a row per backend: max rel error per quantity."""
    from rich import box
    from rich.table import Table

    table = Table(title=title or None, box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False, show_edge=False)
    table.add_column("backend", overflow="fold")
    for quantity in quantities:
        table.add_column(quantity, justify="right", no_wrap=True)
    cells = {}
    for c in comparisons:
        cells.setdefault((c.robot, c.reference), {}).setdefault(c.backend, {})[c.quantity] = Text(
            f"{c.max_rel:.1e}", style="green" if c.passed else "bold red")
    for (robot, reference), backends in cells.items():
        table.add_row(Text(f"{robot} vs {reference}", style="bold"))
        last = list(backends)[-1]
        for backend, values in backends.items():
            table.add_row(Text(backend), *(values.get(q, Text("–", style="dim")) for q in quantities),
                          end_section=backend == last)
    return table


def _friction(args) -> int:
    from .backends import get_backend
    from .backends.registry import WITH_FRICTION
    from .friction.study import plot_study, run_study
    from .robots import load_robot

    if args.backend not in WITH_FRICTION:
        raise InputError(f"--backend must be one with friction: {', '.join(WITH_FRICTION)}; got {args.backend!r}")
    if not 0 <= args.at <= args.duration:
        raise InputError(f"--at must be a time within the trajectory, from 0 to {args.duration:g} s; got {args.at:g}")
    model = load_robot(args.robot)
    if args.monte_carlo:
        return _friction_envelope(args, model)
    if args.dask is not None:
        raise InputError("--dask applies to --monte-carlo K (the one friction study runs in a moment)")
    backend = get_backend(args.backend, model, friction=args.friction, profile=args.profile)
    study = run_study(backend, duration=args.duration, samples=args.samples)
    if args.json:
        _write_or_print(args.json, json.dumps(study.as_dict(args.at), indent=2))
        if args.json == "-":
            return EXIT_OK
    console = _console()
    _print_friction(console, model, backend, study, args)
    if not np.any(study.parts.friction):
        console.print(f"[yellow]note:[/] {escape(model.name)} has no friction in '{escape(backend.friction.name)}' "
                      "(give --friction FILE, or <dynamics damping friction> in its URDF)")
    if args.plot:
        console.print(f"wrote {escape(str(plot_study(study, args.plot, mark=args.at)))}")
    return EXIT_OK


def _friction_envelope(args, model) -> int:
    """``friction --monte-carlo K``: percentiles of the friction torque over K parameter samples."""
    from rich.table import Table

    from .friction.monte_carlo import friction_envelope, plot_envelope
    from .friction.study import reference_trajectory

    trajectory = reference_trajectory(model, args.duration, args.samples)
    with _dask_client(args) as client:
        envelope = friction_envelope(model, friction=args.friction, profile=args.profile, backend=args.backend,
                                     samples=args.monte_carlo, trajectory=trajectory, client=client)
    if args.json:
        _write_or_print(args.json, json.dumps(envelope.as_dict(), indent=2))
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
    if args.plot:
        console.print(f"wrote {escape(str(plot_envelope(envelope, args.plot)))}")
    return EXIT_OK


def _dataset(args) -> int:
    from .dataset import dataset

    with _dask_client(args) as client:
        summary = dataset(args.robot, args.states, out=args.store, backend=args.backend, friction=args.friction,
                          chunk=args.chunk, seed=args.seed, trajectories=args.trajectories,
                          mass_matrix=args.mass_matrix, client=client, overwrite=args.overwrite)
    print(f"{summary.path}: {summary.states:,} states in {summary.chunks} chunks; computed {summary.computed}, "
          f"skipped {summary.skipped} (done before), {summary.seconds:.1f} s, {summary.states_per_second:,.0f} states/s")
    return EXIT_OK


def _print_friction(console, model, backend, study, args) -> None:
    """Dhanaraj's Table 3.5 at ``--at``, and the friction share along the trajectory."""
    from rich.table import Table

    from .friction.study import COLUMNS

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
    from .robots import list_robots, regenerate, robot_table

    if args.regenerate:
        for path in regenerate():
            print(f"wrote {path}")
        return EXIT_OK
    for name in list_robots():
        print(f"{name:10s} {robot_table(name).get('description', '')}")
    return EXIT_OK


def _backends(args) -> int:
    from .backends.registry import backend_description, list_backends

    for name in list_backends():
        print(f"{name:16s} {backend_description(name)}")
    return EXIT_OK


def _info(args) -> int:
    from rich.table import Table

    from .errors import PhysicalValidityWarning
    from .robots import load_robot

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PhysicalValidityWarning)
        model = load_robot(args.robot)
    table = Table(title=f"{escape(model.name)}: {model.n} joints, {model.total_mass():.3f} kg")
    for column in ("#", "joint", "type", "parent link", "lower", "upper", "link", "mass kg", "COM m"):
        table.add_column(column)
    for i in range(model.n):
        parent = model.base_link if model.parents[i] < 0 else model.link_names[model.parents[i]]
        table.add_row(str(i), escape(model.joint_names[i]), model.joint_types[i], escape(parent),
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
    if model.n == 0:
        console.print(f"[yellow]note:[/] {escape(model.name)} has no moving joint (only fixed joints): "
                      "dyn-plugin validate has nothing to compare")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
