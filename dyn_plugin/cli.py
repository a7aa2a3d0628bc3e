"""``dyn-plugin``: the command line.  Parsing and printing only; the work is elsewhere.

Exit codes: 0 all passed, 1 a tolerance exceeded, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, as for every input error
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dyn-plugin", description="Robot-manipulator dynamics backends, validated.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    val = sub.add_parser("validate", help="compare our backends with pinocchio and pybullet")
    val.add_argument("--suite", default="default", help="suite name or TOML file (default: default)")
    val.add_argument("--robot", nargs="+", metavar="NAME_OR_URDF", help="robots (default: the suite's)")
    val.add_argument("--backend", nargs="+", metavar="NAME", help="backends to check (default: ours)")
    val.add_argument("--against", nargs="+", metavar="REF", help="references (default: pinocchio pybullet)")
    val.add_argument("--quantity", nargs="+", metavar="Q", help="quantities (default: all)")
    val.add_argument("--samples", type=_positive_int, help="random states per robot")
    val.add_argument("--seed", type=int, help="random seed")
    val.add_argument("--rtol", type=_positive_float, help="tolerance on |diff| / max(1, |ref|)")
    val.add_argument("--json", metavar="FILE", help="write every figure as JSON ('-' for stdout)")
    val.add_argument("--report", metavar="FILE.md", help="write a Markdown report")
    val.add_argument("--plots", metavar="DIR", help="write error histograms and trajectory overlays (PNG)")

    fr = sub.add_parser("friction", help="friction share of the input torque along a trajectory (Dhanaraj ch. 3)")
    fr.add_argument("robot", metavar="NAME_OR_URDF")
    fr.add_argument("--backend", default="newton_euler_friction",
                    help="newton_euler_friction (default) or lagrange_euler_friction")
    fr.add_argument("--friction", metavar="FILE|urdf|none",
                    help="friction data (default: the robot's bundled data file, else the URDF <dynamics>)")
    fr.add_argument("--profile", help="profile of the data file (PUMA-560: corke, dhanaraj)")
    fr.add_argument("--duration", type=_positive_float, default=2.0, help="trajectory duration, s (default 2)")
    fr.add_argument("--samples", type=_positive_int, default=201, help="samples along it (default 201)")
    fr.add_argument("--at", type=float, default=0.6, help="time of the torque table, s (default 0.6, Table 3.5)")
    fr.add_argument("--plot", metavar="FILE.png", help="write the torque-by-cause plot")
    fr.add_argument("--json", metavar="FILE", help="write the figures as JSON ('-' for stdout)")

    from .bench import add_arguments as bench_arguments      # imports nothing heavy
    bench_arguments(sub.add_parser("bench", help="time per state against pinocchio and pybullet (table, --json, --plot)"))

    gen = sub.add_parser("codegen", help="customised straight-line inverse dynamics for one robot (Python, C, numba)")
    gen.add_argument("robot", metavar="NAME_OR_URDF")
    gen.add_argument("--lang", choices=("python", "c", "numba"), default="python", help="output language (default python)")
    gen.add_argument("--out", metavar="FILE", help="write the source here (default: stdout)")
    gen.add_argument("--counts", action="store_true",
                     help="print only the operation counts, next to the published customised algorithms")
    gen.add_argument("--mass-matrix", action="store_true", help="also generate M(q)")

    eq = sub.add_parser("equations", help="closed-form M, B, C, G (ROBMAT's configuration-space form)")
    eq.add_argument("robot", metavar="NAME_OR_URDF")
    eq.add_argument("--latex", action="store_true", help="LaTeX instead of pretty-printed text")
    eq.add_argument("--symbols", nargs="+", metavar="GROUP", default=(),
                    help="parameter groups kept symbolic (e.g. masses lengths inertias gravity)")
    eq.add_argument("--route", choices=("newton_euler", "lagrange_euler"), default="newton_euler",
                    help="derivation route (the result is the same)")

    robots = sub.add_parser("robots", help="list the bundled robots")
    robots.add_argument("--regenerate", action="store_true",
                        help="rewrite urdf/NAME.urdf from the source tables urdf/NAME.toml")
    sub.add_parser("backends", help="list the registered backends")
    info = sub.add_parser("info", help="joints, limits and masses of a robot")
    info.add_argument("robot", metavar="NAME_OR_URDF")
    return parser


def main(argv=None) -> int:
    from .errors import DynPluginError

    args = build_parser().parse_args(argv)
    try:
        commands = {"validate": _validate, "friction": _friction, "robots": _robots, "backends": _backends,
                    "info": _info, "bench": _bench, "codegen": _codegen, "equations": _equations}
        return commands[args.command](args)
    except DynPluginError as exc:
        print(f"dyn-plugin: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _console():
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # piped or captured: room for the whole table
        console = Console(width=max(console.width, 160))
    return console


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
        Path(args.out).write_text(code.source)
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


def _validate(args) -> int:
    from rich.progress import Progress

    from . import validation
    from .backends import list_backends
    from .errors import BackendError
    from .robots import load_robot

    suite = validation.load_suite(args.suite)
    for key, value in (("robots", args.robot), ("backends", args.backend), ("references", args.against),
                       ("quantities", args.quantity), ("samples", args.samples), ("seed", args.seed),
                       ("rtol", args.rtol)):
        if value is not None:
            setattr(suite, key, value)
    available = list_backends()
    for name in suite.backends + suite.references:
        if name not in available:
            raise BackendError(f"unknown backend {name!r}; available: {', '.join(available)}")
    for robot in suite.robots:
        load_robot(robot)  # fail early, before any sampling, on a bad name or file
    suite.check()

    console = _console()
    quiet = args.json == "-"
    with Progress(console=console, transient=True, disable=quiet) as bar:
        task = bar.add_task("validating", total=len(suite.robots) * len(suite.backends))
        report = validation.run(suite, progress=lambda label: bar.update(task, advance=1, description=label))

    if args.json:
        text = json.dumps(report.as_dict(), indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    if args.report:
        from .reporting import markdown_report

        Path(args.report).write_text(markdown_report(report))
    if args.plots:
        from .reporting import plot_report

        written = plot_report(report, args.plots)
        if not quiet:
            console.print(f"wrote {len(written)} plots to {args.plots}")
    if not quiet:
        _print_report(console, report)
    return EXIT_OK if report.passed else EXIT_FAILED


def _print_report(console, report) -> None:
    """One row per robot x backend x reference, one column per quantity (max rel error)."""
    from rich.table import Table

    suite = report.suite
    table = Table(title=f"max |ours - ref| / max(1, |ref|) over {suite.samples} random states per robot "
                        f"(seed {suite.seed}); pass at <= {suite.rtol:g}")
    for column in ("robot", "backend", "reference"):
        table.add_column(column)
    for quantity in suite.quantities:
        table.add_column(quantity, justify="right")
    rows = {}
    for c in report.comparisons:
        rows.setdefault((c.robot, c.backend, c.reference), {})[c.quantity] = (
            f"[green]{c.max_rel:.1e}[/]" if c.passed else f"[bold red]{c.max_rel:.1e}[/]")
    for key, cells in rows.items():
        table.add_row(*key, *(cells.get(q, "[dim]–[/]") for q in suite.quantities))
    console.print(table)
    for c in report.failures():
        console.print(f"[bold red]FAIL[/] {c.robot} {c.backend} vs {c.reference} {c.quantity}: max rel "
                      f"{c.max_rel:.3e} (abs {c.max_abs:.3e}) at state {c.worst_sample}, entry {list(c.worst_entry)}")
    verdict = "[green]all passed[/]" if report.passed else f"[bold red]{len(report.failures())} failed[/]"
    console.print(f"{len(report.comparisons)} comparisons, {verdict} in {report.seconds:.1f} s")


def _friction(args) -> int:
    from rich.table import Table

    from .backends import get_backend
    from .backends.registry import WITH_FRICTION
    from .errors import InputError
    from .friction.study import COLUMNS, plot_study, run_study
    from .robots import load_robot

    if args.samples < 2:
        raise InputError("--samples must be at least 2")
    if args.backend not in WITH_FRICTION:
        raise InputError(f"--backend must be one with friction: {', '.join(WITH_FRICTION)}; got {args.backend!r}")
    model = load_robot(args.robot)
    backend = get_backend(args.backend, model, friction=args.friction, profile=args.profile)
    study = run_study(backend, duration=args.duration, samples=args.samples)
    if args.json:
        text = json.dumps(study.as_dict(args.at), indent=2)
        if args.json == "-":
            print(text)
            return EXIT_OK
        Path(args.json).write_text(text + "\n")
    console = _console()
    at = study.t[study.index(args.at)]
    table = Table(title=f"{model.name}, friction '{backend.friction.name}': torques at t = {at:.3g} s "
                        f"(N·m; N for prismatic joints), as Dhanaraj Table 3.5")
    columns = study.table_at(args.at)
    table.add_column("joint")
    table.add_column("q̇", justify="right")
    for label, _ in COLUMNS:
        table.add_column(label, justify="right")
    k = study.index(args.at)
    for i, name in enumerate(model.joint_names):
        table.add_row(name, f"{study.qd[k, i]:+.3f}", *(f"{columns[label][i]:+.4f}" for label, _ in COLUMNS))
    console.print(table)
    summary = Table(title=f"along the {args.duration:g} s rest-to-rest trajectory ({args.samples} samples)")
    for column in ("joint", "mean |rigid + armature|", "mean |friction|", "peak |friction|", "friction share",
                   "dissipated J"):
        summary.add_column(column, justify="right")
    basic, friction = np.abs(study.basic).mean(axis=0), np.abs(study.parts.friction)
    share, lost = study.friction_share(), study.dissipated_energy()
    for i, name in enumerate(model.joint_names):
        summary.add_row(name, f"{basic[i]:.3f}", f"{friction[:, i].mean():.3f}", f"{friction[:, i].max():.3f}",
                        f"{100 * share[i]:.1f} %", f"{lost[i]:.3f}")
    console.print(summary)
    if not np.any(friction):
        console.print(f"[yellow]note:[/] {model.name} has no friction in '{backend.friction.name}' "
                      "(give --friction FILE, or <dynamics damping friction> in its URDF)")
    if args.plot:
        console.print(f"wrote {plot_study(study, args.plot, mark=args.at)}")
    return EXIT_OK


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
    import warnings

    from rich.table import Table

    from .errors import PhysicalValidityWarning
    from .robots import load_robot

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PhysicalValidityWarning)
        model = load_robot(args.robot)
    table = Table(title=f"{model.name}: {model.n} joints, {model.total_mass():.3f} kg")
    for column in ("#", "joint", "type", "parent link", "lower", "upper", "link", "mass kg", "COM m"):
        table.add_column(column)
    for i in range(model.n):
        parent = model.base_link if model.parents[i] < 0 else model.link_names[model.parents[i]]
        table.add_row(str(i), model.joint_names[i], model.joint_types[i], parent, f"{model.lower[i]:.4g}",
                      f"{model.upper[i]:.4g}", model.link_names[i], f"{model.masses[i]:.4g}",
                      np.array2string(model.coms[i], precision=4))
    console = _console()
    console.print(table)
    notes = [str(w.message) for w in caught] + [f"{n} (pybullet comparisons will differ)"
                                                for n in model.pybullet_alterations() if "<inertial>" in n]
    for note in notes:
        console.print(f"[yellow]warning:[/] {note}")
    if not notes:
        console.print("[green]every link is physically valid[/] (mass >= 0, inertia PSD, triangle inequality)")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
