"""The parser of ``dyn-plugin``: every sub-command's options and their types.  Each type
refuses a bad value with a message that says what is valid (exit code 2, one line)."""

from __future__ import annotations

import argparse
from typing import Optional

from ..._version import __version__
from ...backends.registry import backends as registered_backends
from .. import validate
from ..bench.command import add_arguments as bench_arguments
from ..machine import installed_versions
from ..output import one_line
from .common import EXIT_CODES, EXIT_USAGE, LOCAL_CLUSTER
from .fit_friction import add_arguments as fit_friction_arguments
from .robot import add_lock_argument

__all__ = ["build_parser"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, as for every input error
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


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
    return _checked(parse, lambda value: validate.setting_problem(key, value), key)


def _within(lowest: float, highest: float, unit: str):
    return _checked(_number, lambda value: None if lowest <= value <= highest else
                    f"must be from {lowest:g} to {highest:g}{unit}, got {value:g}", "number")


def _count(lowest: int, highest: Optional[int] = validate.MAX_SAMPLES, name: str = "count"):
    """A whole number from ``lowest`` to ``highest`` (None: no upper limit)."""
    return _checked(_whole_number, lambda v: validate.whole_number_problem(v, lowest, highest), name)


def _version() -> str:
    # the installed distribution's, else (a source tree that is not installed) the package's
    return installed_versions(("dyn_plugin",))["dyn_plugin"] or __version__


def option_spelling(parser: argparse.ArgumentParser, command: str) -> dict:
    """{name: option} of the sub-command ``command``: each option under its ``dest`` and
    under its own name (``--out`` whose dest is ``store``: both ``store`` and ``out``;
    ``--floating-base``: ``floating_base``).  :func:`dyn_plugin.errors.arguments_spelled`
    takes it, so that the library's messages name ``--out`` where Python has ``out=``."""
    verb = next(action for action in parser._actions
                if isinstance(action, argparse._SubParsersAction)).choices[command]
    spelling = {}
    for action in verb._actions:
        option = max(action.option_strings, key=len, default=None)
        if option is not None and action.dest != "help":
            spelling[action.dest] = spelling[option.lstrip("-").replace("-", "_")] = option
    return spelling


# -- the parser

def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dyn-plugin", description="Robot-manipulator dynamics backends, validated.",
                     epilog=EXIT_CODES, formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add(name, help):
        return sub.add_parser(name, help=help, description=help, formatter_class=_HelpFormatter)

    _validate_arguments(add("validate", "compare our backends with pinocchio and pybullet"))
    _friction_arguments(add("friction", "friction share of the input torque along a trajectory (Dhanaraj ch. 3)"))
    _dataset_arguments(add("dataset", "states and their dynamics in a chunked, resumable Zarr store"))
    bench = add("bench", "time per state against pinocchio and pybullet (table, --json, --plot)")
    bench_arguments(bench)
    add_lock_argument(bench)
    _codegen_arguments(add("codegen", "customised straight-line inverse dynamics for one robot (Python, C, numba)"))
    _schedule_arguments(add("schedule", "static multiprocessor schedules of the Newton-Euler subtasks (Dhanaraj ch. 4)"))

    _identify_arguments(add("identify", "fit base inertial and friction parameters to a recorded trajectory"))
    fit_friction_arguments(add("fit-friction", "fit friction laws (Coulomb-viscous ... LuGre) to one joint's measured friction, score them on other files"))

    eq = add("equations", "closed-form M, B, C, G (ROBMAT's configuration-space form)")
    eq.add_argument("robot", metavar="NAME_OR_URDF")
    add_lock_argument(eq)
    eq.add_argument("--latex", action="store_true", help="LaTeX instead of pretty-printed text")
    eq.add_argument("--symbols", nargs="+", metavar="GROUP", default=(),
                    help="parameter groups kept symbolic (e.g. masses lengths inertias gravity; default: none)")
    eq.add_argument("--route", choices=("newton_euler", "lagrange_euler"), default="newton_euler",
                    help="derivation route (the result is the same)")

    robots = add("robots", "list the bundled robots")
    robots.add_argument("--regenerate", action="store_true",
                        help="rewrite dyn_plugin/bundled/NAME.urdf from the source tables NAME.toml beside them")
    add("backends", "list the registered backends")
    info = add("info", "joints, limits and masses of a robot")
    info.add_argument("robot", metavar="NAME_OR_URDF")
    add_lock_argument(info)
    info.add_argument("--floating-base", action="store_true", help=FLOATING_HELP)
    return parser


FLOATING_HELP = ("the root link floats freely (pinocchio's free-flyer: q = [position, quaternion x y z w, joints], "
                 "v = [linear, angular velocity in the base frame, joint rates]); default: fixed to the world")


def _validate_arguments(val) -> None:
    suite = validate.load_suite("default")

    def from_suite(text, value):
        shown = " ".join(map(str, value)) if isinstance(value, list) else f"{value:g}"
        return f"{text} (default: the suite's; {shown} in the default suite)"

    val.add_argument("--suite", default="default", metavar="NAME|FILE.toml",
                     help=f"suite: {', '.join(validate.list_suites())}, or a TOML file")
    val.add_argument("--robot", nargs="+", metavar="NAME_OR_URDF", help=from_suite("robots", suite.robots))
    val.add_argument("--backend", nargs="+", metavar="NAME", help=from_suite("backends to check", suite.backends))
    val.add_argument("--against", nargs="+", metavar="REF", help=from_suite("references", suite.references))
    quantities = [*validate.QUANTITIES, *validate.DERIVATIVES, *validate.STEPPING, *validate.BRISTLES]
    shown = "all" if suite.quantities == quantities else " ".join(suite.quantities)
    val.add_argument("--quantity", nargs="+", metavar="Q", choices=quantities,
                     help=f"quantities: {' '.join(quantities)} (default: the suite's; {shown} in the default suite)")
    val.add_argument("--samples", type=_suite_setting("samples", _whole_number), metavar="N",
                     help=from_suite(f"random states per robot, at most {validate.MAX_SAMPLES}", suite.samples))
    val.add_argument("--seed", type=_suite_setting("seed", _whole_number), metavar="S",
                     help=from_suite("random seed", suite.seed))
    val.add_argument("--rtol", type=_suite_setting("rtol"),
                     help=from_suite("tolerance on |diff| / max(1, |ref|), below 1", suite.rtol))
    val.add_argument("--dt", type=_suite_setting("dt"), metavar="SECONDS",
                     help=from_suite("time step of the pybullet stepping comparisons (step, traj_zero, "
                                     "traj_gravity)", suite.dt))
    val.add_argument("--floating-base", action="store_true", help=FLOATING_HELP)
    val.add_argument("--mimic", action="store_true",
                     help="<mimic> joints follow their leaders (reduced coordinates, pinocchio's mimic=True); "
                          "default: independent joints, with a warning")
    val.add_argument("--json", metavar="FILE", help="write every figure as JSON ('-' for stdout)")
    val.add_argument("--report", metavar="FILE.md", help="write a Markdown report")
    val.add_argument("--plots", metavar="DIR", help="write error histograms and trajectory overlays (PNG)")
    _dask_argument(val, "run the chunks of states on Dask: the same results as serially")
    add_lock_argument(val)


def _dask_argument(parser, what: str) -> None:
    parser.add_argument("--dask", nargs="?", const=LOCAL_CLUSTER, metavar="ADDRESS",
                        help=f"{what}; ADDRESS of a scheduler (tcp://host:8786), or none for a local cluster of "
                             "one process per core (needs the [dask] extra; default: no Dask)")


def _friction_arguments(fr) -> None:
    fr.add_argument("robot", metavar="NAME_OR_URDF")
    add_lock_argument(fr)
    fr.add_argument("--backend", default="newton_euler_friction",
                    help=f"one of {', '.join(registered_backends(can=('friction',)))}")
    fr.add_argument("--friction", metavar="FILE|urdf|none",
                    help="friction data (default: the robot's bundled data file, else the URDF <dynamics>)")
    fr.add_argument("--profile", help="profile of the data file (PUMA-560: corke, dhanaraj; default: the file's)")
    fr.add_argument("--duration", type=_within(1e-3, 1e4, " s"), default=2.0, metavar="SECONDS",
                    help="trajectory duration, from 0.001 to 10000 s")
    fr.add_argument("--samples", type=_count(2), default=201, metavar="N",
                    help=f"samples along it, from 2 to {validate.MAX_SAMPLES}")
    fr.add_argument("--at", type=_number, metavar="SECONDS",
                    help="time of the torque table, within the trajectory (default 0.6 s, Dhanaraj's Table 3.5; "
                         "in a trajectory shorter than that, 0.3 of it, where 0.6 s is in his 2 s)")
    fr.add_argument("--plot", metavar="FILE.png", help="write the torque-by-cause plot")
    fr.add_argument("--json", metavar="FILE", help="write the figures as JSON ('-' for stdout)")
    fr.add_argument("--monte-carlo", type=_count(1), metavar="K",
                    help="sample the friction parameters K times within their stated uncertainties (the data "
                         "file's [uncertainty] table, else ±20 %%) and report the envelope of the friction torque")
    _dask_argument(fr, "with --monte-carlo: run the samples on Dask (the same envelope as serially)")


def _identify_arguments(ident) -> None:
    ident.add_argument("robot", metavar="NAME_OR_URDF")
    add_lock_argument(ident)
    source = ident.add_mutually_exclusive_group(required=True)
    source.add_argument("--log", metavar="FILE", help="a raw robot log, .npz (arrays t, q, tau, optional qd) or "
                        ".csv (header t, q1..qn, [qd1..qdn,] tau1..taun): resampled, filtered, differentiated, "
                        "fitted on its first part and scored on the rest")
    source.add_argument("--data", metavar="FILE.npz", help="recorded trajectory: arrays q, qd, qdd, tau, each (N, n)")
    source.add_argument("--simulate", action="store_true",
                        help="a simulated PUMA-560-style excitation (Fourier series) with the robot's friction "
                             "(Dhanaraj's bearings and breakaway + viscous for the PUMA-560) and --noise")
    ident.add_argument("--friction", default="viscous,coulomb", metavar="TERMS",
                       help="friction terms to identify, comma-separated: viscous, coulomb, armature, bearing, "
                            "load, or none (bearing: the geometry from the robot's bundled 'dhanaraj' friction profile; "
                            "load: radial, bending, axial and transmitted loads of the joint wrenches of a first fit)")
    ident.add_argument("--noise", type=_number, default=0.01,
                       help="--simulate: torque noise as a fraction of each joint's RMS torque")
    ident.add_argument("--samples", type=_count(20), default=300, help="--simulate: number of samples")
    ident.add_argument("--seed", type=_count(0, None, "seed"), default=0, metavar="S", help="--simulate: random seed")
    ident.add_argument("--cutoff", type=_number, metavar="HZ", help="--log: low-pass cutoff (default: 10x the band "
                       "holding 99 %% of the motion's q̇ power, at least 1 Hz)")
    ident.add_argument("--rate", type=_number, metavar="HZ", help="--log: sample rate after filtering (default: the "
                       "log's median rate)")
    ident.add_argument("--trim", type=_number, metavar="S", help="--log: seconds dropped at each end (default: 7 "
                       "time constants of the filter)")
    ident.add_argument("--holdout", type=_number, metavar="FRACTION", help="--log: the last part scored, not fitted "
                       "(default 0.4)")
    ident.add_argument("--physical", action="store_true", help="fit physically consistent standard parameters "
                       "(every link a rigid body; a semidefinite program)")
    ident.add_argument("--urdf", metavar="OUT.urdf", help="write the identified robot as URDF")
    ident.add_argument("--json", metavar="FILE", help="write the result as JSON (- for stdout)")
    ident.add_argument("--plot", metavar="FILE.png", help="plot measured vs predicted torques (--log: on the "
                       "held-out part)")


def _dataset_arguments(ds) -> None:
    from ...dataset import CHUNK

    ds.add_argument("robot", metavar="NAME_OR_URDF")
    add_lock_argument(ds)
    ds.add_argument("--floating-base", action="store_true", help=FLOATING_HELP)
    ds.add_argument("--states", type=_count(1, None), required=True, metavar="N", help="how many states")
    ds.add_argument("--out", dest="store", required=True, metavar="DIR.zarr",
                    help="the Zarr store (a folder; a rerun resumes it, computing only missing chunks)")
    ds.add_argument("--backend", default="newton_euler", metavar="NAME", help="backend computing the dynamics")
    ds.add_argument("--friction", metavar="FILE|urdf|none",
                    help="friction data for a friction backend (also stores tau_friction)")
    ds.add_argument("--chunk", type=_count(1, None), metavar="K",
                    help=f"states per chunk (one task each; default: {CHUNK}, or --states when fewer)")
    ds.add_argument("--seed", type=_count(0, None, "seed"), default=0, metavar="S", help="random seed")
    ds.add_argument("--trajectories", action="store_true",
                    help="states along rest-to-rest quintics instead of independent random states")
    ds.add_argument("--mass-matrix", action="store_true", help="also store M (N, nv, nv)")
    ds.add_argument("--overwrite", action="store_true", help="replace a store made with other settings")
    _dask_argument(ds, "compute the chunks on Dask: the same data as serially")


def _codegen_arguments(gen) -> None:
    gen.add_argument("robot", metavar="NAME_OR_URDF")
    add_lock_argument(gen)
    gen.add_argument("--lang", choices=("python", "c", "numba"), default="python", help="output language")
    gen.add_argument("--out", metavar="FILE", help="write the source here (default: stdout)")
    gen.add_argument("--counts", action="store_true",
                     help="print only the operation counts, next to the published customised algorithms")
    what = gen.add_mutually_exclusive_group()
    what.add_argument("--mass-matrix", action="store_true", help="also generate M(q)")
    what.add_argument("--derivatives", action="store_true",
                      help="generate ∂τ/∂q and ∂τ/∂q̇ instead (forward mode over τ's expression graph)")


def _schedule_arguments(sc) -> None:
    from ...parallel.scheduling import RULES

    sc.add_argument("robot", metavar="NAME_OR_URDF")
    add_lock_argument(sc)
    count = sc.add_mutually_exclusive_group()
    count.add_argument("--processors", nargs="+", type=_count(1, None, "processors"), metavar="P",
                       help="processor counts to schedule (default: 1 to the maximum concurrency)")
    count.add_argument("--max", action="store_true",
                       help="only as many processors as the maximum concurrency (the layered schedule)")
    mode = sc.add_mutually_exclusive_group()
    mode.add_argument("--general", dest="mode", action="store_const", const="general",
                      help="Table 4.2's eliminations only, the thesis's general arm (default: --customised)")
    mode.add_argument("--customised", dest="mode", action="store_const", const="customised",
                      help="also remove the subtasks of the model's zero offsets and centres of mass, "
                           "Tables 4.4-4.6 (default)")
    mode.add_argument("--operations", dest="mode", action="store_const", const="operations",
                      help="beyond the thesis: the generated customised code's operations (1 flop each, "
                           "dyn-plugin codegen's exact counts) instead of 3-flop subtasks (default: --customised)")
    sc.set_defaults(mode="customised")
    sc.add_argument("--rule", nargs="+", choices=RULES, default=["critical-path"], metavar="RULE",
                    help=f"list-scheduling priority, one or more of: {', '.join(RULES)} (thesis: layer by layer "
                         "with look-ahead, §4.3.3; critical-path: longest remaining chain first) "
                         "(default: critical-path)")
    sc.add_argument("--friction", action="store_true",
                    help="add the bearing and transmission friction subtasks of each joint (Table 3.3)")
    sc.add_argument("--json", metavar="FILE", help="write the schedules as JSON ('-' for stdout)")
    sc.add_argument("--plot", metavar="FILE.png", help="write a Gantt chart to FILE.png, and the speed-up and "
                                                       "efficiency against p to FILE-speedup.png")
