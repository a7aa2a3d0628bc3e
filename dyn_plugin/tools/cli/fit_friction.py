"""``dyn-plugin fit-friction FILE --law LAW [LAW ...] [--test FILE ...] [--plot FILE.png] [--json FILE|-]``:
fit friction laws (:mod:`dyn_plugin.friction.laws`) to one joint's measured friction and score
them on other files (:func:`dyn_plugin.fit_friction`).

Files (SI units: s, rad, rad/s, N·m), one joint each:

* ``.npz``: arrays ``qd`` (N,) and ``tau_friction`` (or ``tau``) (N,); ``t`` (N,), the sample
  times, needed by the dynamic laws (dahl, lugre); optional ``q`` (N,); any
  ``published_<name>`` (N,) arrays (a model's predicted friction) are scored beside ours.
* ``.csv``: comma-separated text, ``#`` lines ignored, a header row naming the columns
  (``t, q, qd, tau_friction`` or ``tau``, ``published_<name>``; any order, others ignored),
  then one row of numbers per sample.

Output: a table of RMS errors (N·m), one row per law (fitted on FILE) and per published
model, one column per file; ``--json``: ``{"fit_file", "test_files", "units",
"laws": {law: {"fit": FrictionFit.to_dict(), "rms": {file: N·m}}}, "published": {name:
{file: N·m}}}`` (a published model that is not finite on a file scores null there);
``--plot``: friction against velocity, one panel per file, the measured points and each
law's curve (a static law) or its loop along the samples (a dynamic law).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...friction.fitting import fit_friction, undetermined_note
from ...friction.laws import FRICTION_LAWS, LAWS
from ...identification.logfile import _csv_rows, _numbers, csv_header, read_arrays
from ..output import console, one_line, write_or_print
from .common import EXIT_OK

__all__ = ["add_arguments", "command", "read_friction_file"]

PUBLISHED = "published_"
_COLUMNS = ("t", "q", "qd", "tau_friction", "tau")


def add_arguments(parser) -> None:
    """The verb's options on its argparse ``parser``."""
    parser.add_argument("file", metavar="FILE", help="one joint's measured friction: .npz (qd, tau_friction or tau, "
                                                     "t; optional q, published_*) or .csv with those column names")
    parser.add_argument("--law", nargs="+", choices=FRICTION_LAWS, default=list(FRICTION_LAWS), metavar="LAW",
                        help=f"laws to fit: {', '.join(FRICTION_LAWS)} (default: all)")
    parser.add_argument("--test", nargs="+", default=[], metavar="FILE", help="files to score the fitted laws on")
    parser.add_argument("--offset", action="store_true",
                        help="add a constant torque to every law (off by default: it belongs to a run, not a joint)")
    parser.add_argument("--plot", metavar="FILE.png", help="write the friction-velocity plot")
    parser.add_argument("--json", metavar="FILE", help="write the table as JSON ('-' for stdout)")


def command(args) -> int:
    """The ``fit-friction`` verb (``args`` from the parser)."""
    from ..activity import activity

    fit_data = read_friction_file(args.file)
    tests = {path: read_friction_file(path) for path in args.test}
    files = {args.file: fit_data, **tests}
    laws = list(dict.fromkeys(args.law))
    for law in laws:
        if LAWS[law].dynamic:
            for path, data in files.items():
                if data["t"] is None:
                    raise InputError(f"{path}: has no sample times t (s), which the {law} law needs")
    fits, scores = {}, {}
    with activity("fit-friction") as shown:
        done = shown.counter(len(laws), "fitting")
        for law in laws:
            fits[law] = _in_file(args.file, lambda: fit_friction(fit_data["qd"], fit_data["tau"], law=law,
                                                                  t=fit_data["t"], offset=args.offset))
            scores[law] = {path: _rms(_in_file(path, lambda: fits[law].predict(data["qd"], t=data["t"])), data["tau"])
                           for path, data in files.items()}
            done(f"{law}: RMS {fits[law].rms:.4g} N·m on {args.file}")
    published = _published_scores(files)
    result = {"fit_file": args.file, "test_files": list(args.test), "units": "N·m",
              "laws": {law: {"fit": fits[law].to_dict(), "rms": scores[law]} for law in laws},
              "published": published}
    if args.json:
        write_or_print(args.json, json.dumps(result, indent=2))
    if args.json != "-":
        _print_table(result, list(files))
    if args.plot:
        _plot(args.plot, files, fits)
    return EXIT_OK


# -- reading ------------------------------------------------------------------------------

def read_friction_file(path) -> dict:
    """``{"t": (N,) or None, "q": (N,) or None, "qd": (N,), "tau": (N,), "published": {name: (N,)}}``
    from an .npz or .csv file (the module's docstring); one InputError naming the file for
    anything else (a text file named .npz, a truncated archive, a missing column, arrays
    that are not one joint's (N,) samples or disagree in length)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        arrays = _read_npz(path)
    elif suffix == ".csv":
        arrays = _read_csv(path)
    else:
        raise InputError(f"{path}: a friction file is .npz (arrays qd, tau_friction or tau, t) or .csv (a header "
                         f"row naming those columns), not {suffix or 'a file without suffix'}")
    tau = arrays.get("tau_friction", arrays.get("tau"))
    if tau is None:
        raise InputError(f"{path}: no friction torque (an array or column tau_friction or tau, N·m); it has "
                         f"{', '.join(sorted(arrays))}")
    data = {"t": arrays.get("t"), "q": arrays.get("q"), "qd": arrays["qd"], "tau": tau,
            "published": {name[len(PUBLISHED):]: value for name, value in arrays.items() if name.startswith(PUBLISHED)}}
    _check_shapes(path, data)
    return data


def _read_npz(path: Path) -> dict:
    arrays = read_arrays(path, ("qd",), optional=("t", "q", "tau_friction", "tau"))
    with np.load(path, allow_pickle=False) as stored:          # read_arrays has checked the archive
        names = [name for name in stored.files if name.startswith(PUBLISHED)]
    arrays.update(read_arrays(path, (), optional=names))
    return arrays


def _read_csv(path: Path) -> dict:
    rows = _csv_rows(path)
    header, body = csv_header(path, rows), rows[1:]
    if not body:
        raise InputError(f"{path}: has a header row and no samples")
    wanted = [k for k, name in enumerate(header) if name in _COLUMNS or name.startswith(PUBLISHED)]
    if "qd" not in header:
        raise InputError(f"{path}: no column qd (the header needs qd, tau_friction or tau, and t for the dynamic "
                         f"laws); it has {', '.join(header)}")
    values = _numbers(path, header, body, wanted)
    return {header[k]: values[:, k] for k in wanted}


def _check_shapes(path: Path, data: dict) -> None:
    arrays = {"qd": data["qd"], "tau": data["tau"], **{k: data[k] for k in ("t", "q") if data[k] is not None},
              **{PUBLISHED + k: v for k, v in data["published"].items()}}
    for name, value in arrays.items():
        if value.ndim != 1:
            raise InputError(f"{path}: {name} has shape {value.shape}; fit-friction takes one joint, arrays of "
                             f"shape (N,)")
        if value.dtype.kind not in "fiu":
            raise InputError(f"{path}: {name} holds {value.dtype} values, not numbers")
        if not name.startswith(PUBLISHED) and not np.all(np.isfinite(value)):      # a published model may diverge
            raise InputError(f"{path}: {name} has a non-finite entry (NaN or inf) at sample "
                             f"{int(np.argmax(~np.isfinite(value)))}")
    lengths = {name: value.shape[0] for name, value in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise InputError(f"{path}: the arrays disagree in length: "
                         + ", ".join(f"{name} {length}" for name, length in lengths.items()))


def _in_file(path, compute):
    """``compute()``, its InputError prefixed with the file it is about."""
    try:
        return compute()
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


# -- scoring and output ----------------------------------------------------------------------

def _rms(predicted: np.ndarray, measured: np.ndarray):
    """RMS of predicted − measured, N·m; None when a prediction is not finite (a published model that diverged)."""
    if not np.all(np.isfinite(predicted)):
        return None
    with np.errstate(over="ignore"):
        value = float(np.sqrt(np.mean((predicted - measured) ** 2)))
    return value if np.isfinite(value) else None


def _published_scores(files: dict) -> dict:
    names = list(dict.fromkeys(name for data in files.values() for name in data["published"]))
    return {name: {path: _rms(data["published"][name], data["tau"]) for path, data in files.items()
                   if name in data["published"]} for name in names}


def _print_table(result: dict, paths: list) -> None:
    from rich.table import Table

    table = Table(title=f"friction laws fitted on {one_line(result['fit_file'])}: RMS error, N·m",
                  caption="published: the predictions stored in each file (published_*), as their authors fitted them")
    table.add_column("model")
    for k, path in enumerate(paths):
        table.add_column(one_line(Path(path).name) + (" (fit)" if k == 0 else ""), justify="right")

    def cell(value):
        return "diverges" if value is None else ("" if value == "" else f"{value:.4f}")
    for law, entry in result["laws"].items():
        table.add_row(law, *(cell(entry["rms"][path]) for path in paths))
    for name, scores in result["published"].items():
        table.add_row(f"published {name}", *(cell(scores.get(path, "")) for path in paths))
    console().print(table)
    for law, entry in result["laws"].items():
        if entry["fit"]["undetermined"]:
            console().print(f"{law}: {undetermined_note(entry['fit'])}", markup=False)


def _plot(path, files: dict, fits: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(files), figsize=(5.5 * len(files) + 2.5, 4.5), squeeze=False, sharey=True)
    for k, (ax, (name, data)) in enumerate(zip(axes[0], files.items())):
        qd = data["qd"]
        ax.plot(qd, data["tau"], ".", ms=1, color="0.65", label="measured", rasterized=True)
        for law, fit in fits.items():
            if LAWS[law].dynamic:
                ax.plot(qd, fit.predict(qd, t=data["t"]), lw=0.6, label=f"{law} (loop along the samples)")
            else:
                grid = np.linspace(qd.min(), qd.max(), 801)
                ax.plot(grid, fit.predict(grid), lw=1.2, label=law)
        ax.set_title(Path(name).name + (" (fitted)" if k == 0 else " (test)"), fontsize=9)
        ax.set_xlabel("joint velocity q̇ (rad/s)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("friction torque τ_f (N·m)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, markerscale=6, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
