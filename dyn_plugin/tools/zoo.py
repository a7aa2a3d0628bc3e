"""``dyn-plugin validate --suite zoo``: every URDF file of example-robot-data and
pybullet_data, each validated, or refused with a reason pinocchio shares.

A zoo suite (``validation/suites/zoo.toml``) says ``robots = "zoo"``; :func:`robots`
expands that into the discovered files.  Each file gets one line of result
(:class:`Result`):

* ``pass``: each backend agrees with each reference (pinocchio, pybullet) at ``rtol`` over
  ``samples`` random states, through :func:`dyn_plugin.tools.validate.run` (which holds
  pybullet to its own disagreement with pinocchio where it changes the model); a model
  pybullet cannot load is compared with pinocchio only, and the line says so;
* ``refused: <reason>``: our loader's or model's error; pinocchio then gives its verdict
  on the same file (:func:`pinocchio_verdict`);
* ``no moving joints``: an object, a plane;
* ``FAIL <quantity> <error>``: the worst comparison above ``rtol``;
* ``ERROR <exception>``: any other exception (a bug); the run goes on.

The zoo passes (exit code 0) when every file passes, has no moving joint, or is refused
for a reason pinocchio shares (it refuses the file too, or its M is NaN or not positive
definite).  ``validation/zoo.md`` and ``validation/zoo.json`` hold the last full run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ..backends.registry import get_backend
from ..datafile import read_toml
from ..errors import DynPluginError, InputError, PhysicalValidityWarning, URDFWarning
from ..robots import load_robot
from . import validate
from .validate import plan
from .output import one_line
from .zoo_files import ERD, PYBULLET_FLOATING, Entry, discover, robots  # noqa: F401 (re-exported)

__all__ = ["PYBULLET_FLOATING", "STATUSES", "ZOO", "Entry", "Result", "ZooReport", "command",
           "discover", "is_zoo", "markdown", "pinocchio_verdict", "robots", "run", "validate_entry"]

ZOO = "zoo"  # the value of ``robots`` in a zoo suite
STATUSES = ("pass", "refused", "no moving joints", "FAIL", "ERROR")


def is_zoo(name_or_path: str) -> bool:
    """Whether the suite ``name_or_path`` (as ``validate.load_suite`` finds it) is a zoo
    suite (``robots = "zoo"``); a suite that cannot be read is not (load_suite says why)."""
    path = Path(name_or_path)
    if not path.is_file():
        path = validate.suite_dir() / f"{name_or_path}.toml"
    try:
        return path.is_file() and read_toml(path, DynPluginError, "suite file").get("robots") == ZOO
    except (DynPluginError, OSError):
        return False


@dataclasses.dataclass
class Result:
    """The outcome of one file."""

    label: str
    path: str
    floating: bool
    status: str                       # "pass", "refused", "no moving joints", "FAIL" or "ERROR"
    detail: str = ""                  # the refusal's reason, the failing comparison, or a note on a pass
    dof: Optional[int] = None         # moving joints (None when the loader refuses the file)
    pinocchio: str = ""               # pinocchio's verdict on a refused file
    shared: Optional[bool] = None     # whether pinocchio shares the refusal
    max_error: Optional[float] = None  # largest |ours − ref| / max(1, |ref|) over every comparison (_error)
    warnings: list = dataclasses.field(default_factory=list)  # URDFWarning / PhysicalValidityWarning, short
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "no moving joints") or (self.status == "refused" and bool(self.shared))

    @property
    def line(self) -> str:
        """The one-line result, e.g. ``pass``, ``refused: <reason>``, ``FAIL M 2.6e-09 (...)``."""
        text = f"refused: {self.detail}" if self.status == "refused" else " ".join(
            part for part in (self.status, self.detail) if part)
        return text


@dataclasses.dataclass
class ZooReport:
    suite: validate.Suite
    results: list
    notes: list
    seconds: float

    @property
    def passed(self) -> bool:
        return all(r.ok for r in self.results)

    def counts(self) -> dict:
        out = {s: sum(r.status == s for r in self.results) for s in STATUSES}
        out["refused, pinocchio shares"] = sum(r.status == "refused" and bool(r.shared) for r in self.results)
        return out

    def summary(self) -> str:
        """``N files: a pass, b refused (c shared by pinocchio), ...``"""
        c = self.counts()
        return (f"{len(self.results)} files: {c['pass']} pass, {c['refused']} refused "
                f"({c['refused, pinocchio shares']} shared by pinocchio), {c['no moving joints']} without moving "
                f"joints, {c['FAIL']} FAIL" + (f", {c['ERROR']} ERROR" if c["ERROR"] else ""))

    def as_dict(self) -> dict:
        from .._version import __version__
        from .machine import installed_versions

        suite = {**dataclasses.asdict(self.suite), "robots": ZOO}
        return {"dyn_plugin_version": __version__, "versions": installed_versions((ERD, "pybullet", "pin")),
                "suite": suite, "notes": self.notes, "passed": self.passed, "seconds": round(self.seconds, 1),
                "files": len(self.results), "counts": self.counts(),
                "results": [{**{k: v for k, v in dataclasses.asdict(r).items() if k != "path"}, "line": r.line,
                             "seconds": round(r.seconds, 2)} for r in self.results]}


def run(entries: list, suite: validate.Suite, progress: Optional[Callable[[int, Result], None]] = None,
        notes: tuple = ()) -> ZooReport:
    """Validate each entry with ``suite``'s backends, references, quantities and settings
    (its ``robots`` are ignored); ``progress(i, result)`` after each file."""
    start, results = time.perf_counter(), []
    for i, entry in enumerate(entries):
        results.append(validate_entry(entry, suite))
        if progress:
            progress(i, results[-1])
    return ZooReport(suite, results, list(notes), time.perf_counter() - start)


def validate_entry(entry: Entry, suite: validate.Suite) -> Result:
    """The result of one file; a DynPluginError (ours, or pybullet's BackendError) is a
    refusal, any other exception an ``ERROR`` (a bug), so that no file stops the run."""
    start = time.perf_counter()
    result = Result(entry.label, entry.path, entry.floating, "refused")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = load_robot(entry.path, floating_base=entry.floating)
            result.dof = model.nv
            if result.dof == 0:
                result.status = "no moving joints"
            else:
                references, result.detail = _references(model, suite.references)
                report = validate.run(dataclasses.replace(suite, robots=[entry.path], references=references,
                                                            floating_base=entry.floating))
                _judge(result, report)
        except DynPluginError as error:
            result.status, result.detail = "refused", _short(str(error), entry.path)
        except Exception as error:  # a bug (ours or a reference's): recorded, and the run goes on
            result.status, result.detail = "ERROR", _short(f"{type(error).__name__}: {error}", entry.path)
    result.warnings = list(dict.fromkeys(_short(str(w.message), entry.path) for w in caught
                                         if issubclass(w.category, (URDFWarning, PhysicalValidityWarning))))
    if result.status == "refused":
        result.shared, result.pinocchio = pinocchio_verdict(entry.path, entry.floating, suite.samples, suite.seed)
    result.seconds = time.perf_counter() - start
    return result


def _references(model, references: list) -> tuple:
    """``(references, note)``: pybullet is left out, when another reference remains, for a
    model it cannot load.  Where it loads a model it changes (a link without <inertial>, an
    inertia it diagonalises or zeroes), validate.Comparison judges it against its own
    disagreement with pinocchio."""
    if "pybullet" not in references or len(references) == 1:
        return list(references), ""
    try:
        get_backend("pybullet", model)
        return list(references), ""
    except DynPluginError as error:
        others = [r for r in references if r != "pybullet"]
        return others, f"({', '.join(others)} only; {one_line(str(error))})"


def _judge(result: Result, report) -> None:
    """``pass`` or ``FAIL <quantity> <error> (<backend> vs <reference>; ...)`` from a
    validation report, keeping the note on the references in ``result.detail``; ``refused``
    where a backend's factory refused the file (which the validation lists and goes on)."""
    result.max_error = max(_error(c) for c in report.comparisons)
    refusal = next((s for s in report.skips if s.reason.startswith(plan.REFUSED)), None)
    if refusal is not None:
        result.status, result.detail = "refused", _short(f"{refusal.backend}: {refusal.reason}", result.path)
        return
    notes = [result.detail] if result.detail else []
    failures = report.failures()
    if failures:
        worst = max(failures, key=lambda c: c.max_rel / c.rtol)
        others = [c.max_rel for c in report.comparisons if c.reference != worst.reference]
        result.status = "FAIL"
        notes.insert(0, f"{worst.quantity} {worst.max_rel:.1e} ({worst.backend} vs {worst.reference}"
                        + (f"; {max(others):.1e} against the other references)" if others else ")"))
    else:
        result.status = "pass"
        floors = [c.floor for c in report.comparisons if getattr(c, "within_floor", False)]
        if floors:  # validate.Comparison: above rtol against pybullet, within pybullet's own error vs pinocchio
            notes.append(f"(against pybullet within pybullet's own disagreement with pinocchio, {max(floors):.1e})")
    result.detail = " ".join(notes)


def _error(c) -> float:
    """A comparison's error: against pybullet, where pybullet's own disagreement with
    pinocchio excused it, the error against pinocchio's prediction of the same quantity."""
    return c.pinocchio_error if getattr(c, "within_floor", False) else c.max_rel


def _short(message: str, path: str) -> str:
    """A message on one line, the file named by its name only, at most 300 characters."""
    text = one_line(message.replace(path, Path(path).name))
    return text if len(text) <= 300 else text[:299] + "…"


@contextlib.contextmanager
def _c_stderr():
    """The lines C code writes to file descriptor 2 inside the block (urdfdom's parse
    errors), in the list yielded, filled when the block ends."""
    lines = []
    sys.stderr.flush()
    with tempfile.TemporaryFile() as capture:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            lines += capture.read().decode(errors="replace").splitlines()


def pinocchio_verdict(path: str, floating: bool = False, samples: int = 20, seed: int = 0) -> tuple:
    """``(shares, verdict)``: pinocchio's verdict on a file we refuse, one line.

    pinocchio shares the refusal when ``buildModelFromUrdf`` refuses the file (urdfdom's
    first error line is the reason), or when ``computeAllTerms`` at ``samples`` random
    configurations (within the joint limits, clipped to ±π) gives a non-finite M, bias or
    g, or an M that is not positive definite (λ_min ≤ nv·ε·λ_max: numerically singular).
    """
    import pinocchio as pin

    with _c_stderr() as printed:
        try:
            model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else \
                pin.buildModelFromUrdf(str(path))
        except Exception as error:  # urdfdom's ValueError ("does not contain a valid URDF model"), RuntimeError
            model = error
    if isinstance(model, Exception):
        errors = [line.split(":", 1)[1].strip() for line in printed if line.startswith("Error:")]
        return True, f"pinocchio also refuses: {_short(errors[0] if errors else str(model), str(path))}"
    if model.nv == 0:
        return False, "pinocchio loads it: no degree of freedom"
    pin.seed(seed)
    data, rng = model.createData(), np.random.default_rng(seed)
    lower = np.clip(model.lowerPositionLimit, -np.pi, np.pi)
    upper = np.maximum(np.clip(model.upperPositionLimit, -np.pi, np.pi), lower)
    worst = np.inf
    for _ in range(samples):
        pin.computeAllTerms(model, data, pin.randomConfiguration(model, lower, upper), rng.standard_normal(model.nv))
        M = np.triu(data.M) + np.triu(data.M, 1).T
        if not (np.all(np.isfinite(M)) and np.all(np.isfinite(data.nle)) and np.all(np.isfinite(data.g))):
            return True, "pinocchio loads it, but its M, bias or g is not finite at a random state"
        eigenvalues = np.linalg.eigvalsh(M)
        worst = min(worst, eigenvalues[0] / eigenvalues[-1])
    if worst <= model.nv * np.finfo(float).eps:
        return True, f"pinocchio loads it, but its M is not positive definite (λ_min/λ_max = {worst:.1e})"
    return False, f"pinocchio loads it: M positive definite at {samples} random states (λ_min/λ_max ≥ {worst:.1e})"


def markdown(report: ZooReport) -> str:
    """The zoo as Markdown: settings, counts, one row per file with moving joints or
    refused, then the files without moving joints by folder, then the loader's warnings."""
    from .._version import __version__
    from .machine import installed_versions

    suite, counts = report.suite, report.counts()
    versions = ", ".join(f"{d} {v}" for d, v in installed_versions((ERD, "pybullet", "pin")).items() if v)
    lines = [f"# dyn-plugin validate --suite {suite.name}", "",
             f"dyn_plugin {__version__}, {versions}.  {', '.join(suite.backends)} against "
             f"{', '.join(suite.references)} on {', '.join(suite.quantities)}; {suite.samples} random states per "
             f"robot (seed {suite.seed}); pass at max |ours − ref| / max(1, |ref|) ≤ {suite.rtol:g}.  A refused "
             "file is given to pinocchio (buildModelFromUrdf, then computeAllTerms at random states).", ""]
    lines += [f"{note}." for note in report.notes] + ([""] if report.notes else [])
    lines += [f"**{report.summary()}, in {report.seconds:.0f} s.  Verdict: "
              + ("every file passes or is refused for a reason pinocchio shares**" if report.passed else
                 f"{sum(not r.ok for r in report.results)} files do not**"), "",
              "| robot | DOF | result | pinocchio | largest error |", "|---|---:|---|---|---:|"]
    for r in report.results:
        if r.status != "no moving joints":
            error = "–" if r.max_error is None else f"{r.max_error:.1e}"
            lines.append(f"| {_cell(r.label)} | {'–' if r.dof is None else r.dof} | {_cell(r.line)} | "
                         f"{_cell(r.pinocchio) or '–'} | {error} |")
    still = {}  # package/robot folder: file names
    for r in report.results:
        if r.status == "no moving joints":
            parts = r.label.split("/")
            cut = 2 if len(parts) > 2 else 1
            still.setdefault("/".join(parts[:cut]), []).append("/".join(parts[cut:]))
    if still:
        lines += ["", f"## Without moving joints ({counts['no moving joints']} files)", ""]
        lines += [f"- {folder}/: " + (", ".join(names) if len(names) <= 30 else f"{len(names)} files")
                  for folder, names in still.items()]
    warned = [r for r in report.results if r.warnings]
    if warned:
        lines += ["", "## Loader warnings", ""]
        lines += [f"- {_cell(r.label)}: {_cell(r.warnings[0])}" + (f" (+{len(r.warnings) - 1} more)"
                                                                   if len(r.warnings) > 1 else "") for r in warned]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


# -- the command: dyn-plugin validate --suite zoo

def command(args, console) -> int:
    """``dyn-plugin validate --suite zoo``: one line per file on stderr, a summary on
    ``console``; writes --report / --json (default: validation/zoo.md and zoo.json when the
    current directory has a validation/ folder).  0 when the zoo passes, else 1."""
    from ..errors import arguments_spelled
    from .cli.common import EXIT_FAILED, EXIT_OK, suite_spelling
    from .output import write_or_print

    for option in ("dask", "plots", "dt"):
        if getattr(args, option, None) is not None:
            raise InputError(f"--{option} does not apply to a zoo suite (each file runs serially, no stepping)")
    suite = validate.load_suite(args.suite)  # robots = "zoo" expands to every file (validate/suite.py's _selected)
    for key, value in (("backends", args.backend), ("references", args.against), ("quantities", args.quantity),
                       ("samples", args.samples), ("seed", args.seed), ("rtol", args.rtol)):
        if value is not None:
            setattr(suite, key, value)
    with arguments_spelled(suite_spelling(args)):
        suite.check()     # also the backends' names
    entries, notes = discover()
    if args.robot:  # a sample of the zoo, or other files (fixed-base)
        missing = [p for p in args.robot if not Path(p).is_file()]
        if missing:
            raise InputError(f"--robot of a zoo suite takes URDF files; not a file: {', '.join(missing)}")
        known = {e.path: e for e in entries}
        entries = [known.get(str(Path(p).resolve()), Entry(str(Path(p).resolve()), p, False)) for p in args.robot]
    for note in notes:
        print(f"zoo: {note}", file=sys.stderr)
    report = run(entries, suite, _progress(len(entries)), notes)
    folder = Path("validation")
    json_path = args.json or (folder / "zoo.json" if folder.is_dir() and not args.robot else None)
    report_path = args.report or (folder / "zoo.md" if folder.is_dir() and not args.robot else None)
    if json_path:
        write_or_print(json_path, json.dumps(report.as_dict(), indent=1, ensure_ascii=False))
    if report_path:
        Path(report_path).write_text(markdown(report), encoding="utf-8")
    if args.json != "-":
        _summary(console, report, [p for p in (json_path, report_path) if p])
    return EXIT_OK if report.passed else EXIT_FAILED


def _progress(total: int):
    def report(i: int, result: Result) -> None:
        verdict = f" — {result.pinocchio}" if result.pinocchio else ""
        print(f"zoo: [{i + 1}/{total}] {result.label}: {'' if result.dof is None else f'{result.dof} DOF, '}"
              f"{result.line}{verdict} ({result.seconds:.1f} s)", file=sys.stderr, flush=True)
    return report


def _summary(console, report: ZooReport, written: list) -> None:
    from rich.text import Text

    console.print(Text(f"{report.summary()}, in {report.seconds:.0f} s"))
    for r in report.results:
        if not r.ok:
            console.print(Text.assemble(("NOT OK", "bold red"), f" {r.label}: {r.line}" +
                                        (f" — {r.pinocchio}" if r.pinocchio else "")))
    for path in written:
        console.print(Text(f"wrote {path}"))
    console.print(Text("zoo passed", style="green") if report.passed else
                  Text(f"{sum(not r.ok for r in report.results)} files neither pass nor are refused for a reason "
                       "pinocchio shares", style="bold red"))
