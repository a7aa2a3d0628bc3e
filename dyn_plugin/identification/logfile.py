"""Reading a robot log from a file: :func:`load_log` (``.npz`` or ``.csv``), and
:func:`read_arrays`, the one defensive reader of named arrays in an ``.npz`` archive.

File formats (SI units: s, rad or m, rad/s or m/s, N·m or N):

* ``.npz`` (``np.savez(path, t=..., q=..., qd=..., tau=...)``): arrays ``t`` (N,), ``q``
  (N, n), ``tau`` (N, n), and optionally ``qd`` (N, n).
* ``.csv``: comma-separated text, lines starting with ``#`` ignored, a first row of column
  names ``t, q1, ..., qn, [qd1, ..., qdn,] tau1, ..., taun`` (any order; other columns are
  ignored), then one row of numbers per sample.

A file that is not what its name says (a text file named .npz, a single ``.npy`` array, a
truncated archive, a CSV with a missing column or a cell that is not a number) is one
:class:`~dyn_plugin.errors.InputError` naming the file and what is wrong.
"""

from __future__ import annotations

import csv
import re
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..errors import InputError

LOG_ARRAYS = ("t", "q", "tau")
"""What a log must hold; ``qd`` is optional."""
_ZIP, _NPY = b"PK\x03\x04", b"\x93NUMPY"


def load_log(path) -> dict:
    """The raw arrays of a log file: ``{"t": (N,), "q": (N, n), "qd": (N, n) or None,
    "tau": (N, n), "source": path}``, ready for
    ``dp.prepare_log(**dp.load_log(path), cutoff=..., rate=..., trim=...)``.
    ``.npz`` or ``.csv`` (see the module); other suffixes are refused."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        arrays = read_arrays(path, LOG_ARRAYS, optional=("qd",))
    elif suffix == ".csv":
        arrays = _read_csv(path)
    else:
        raise InputError(f"{path}: a log is an .npz archive (arrays t, q, tau, optional qd) or a .csv file "
                         f"(columns t, q1..qn, [qd1..qdn,] tau1..taun), not {suffix or 'a file without suffix'}")
    return {"t": arrays["t"], "q": arrays["q"], "qd": arrays.get("qd"), "tau": arrays["tau"], "source": str(path)}


def read_arrays(path, required, optional=()) -> dict:
    """``{name: array}`` of the ``required`` and present ``optional`` arrays of the ``.npz``
    archive at ``path``; InputError naming the file when it is missing, not an archive, damaged,
    holds pickled objects, or lacks a required array."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file" if not path.exists() else f"{path}: is not a file")
    start = _first_bytes(path, 6)
    if start.startswith(_NPY):
        raise InputError(f"{path}: is a single numpy array (.npy), not an .npz archive of named arrays; "
                         f"save with np.savez(path, {', '.join(required)})")
    if not start.startswith(_ZIP):
        raise InputError(f"{path}: is not an .npz archive (no zip signature at its start; "
                         + ("it is empty)" if not start else f"it starts with {start!r})"))
    try:
        # np.load(path) leaks its file when the archive's directory is damaged (numpy 2.4:
        # load() gives the file to NpzFile, whose ZipFile raises): the file is ours to close.
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as stored:
            missing = [name for name in required if name not in stored.files]
            if missing:
                raise InputError(f"{path}: missing array(s) {', '.join(missing)} (needs {', '.join(required)}"
                                 + (f"; optional {', '.join(optional)})" if optional else ")"))
            return {name: np.asarray(stored[name]) for name in (*required, *optional) if name in stored.files}
    except InputError:
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise InputError(f"{path}: holds pickled Python objects, not arrays of numbers (numpy would have to "
                             "run code from the file to read them)") from None
        raise InputError(f"{path}: is damaged or truncated, numpy cannot read it ({_reason(exc)})") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, KeyError) as exc:
        raise InputError(f"{path}: is damaged or truncated, numpy cannot read it ({_reason(exc)})") from None


def _first_bytes(path: Path, count: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(count)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None


def _reason(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _read_csv(path: Path) -> dict:
    rows = _csv_rows(path)
    header, body = csv_header(path, rows), rows[1:]
    if not body:
        raise InputError(f"{path}: has a header row and no samples")
    index = {name: k for k, name in enumerate(header) if name}
    columns = {"t": _columns(path, index, "t", None)}
    n = _count(index, "q")
    if n == 0:
        raise InputError(f"{path}: no column q1 (the header needs t, q1..qn, [qd1..qdn,] tau1..taun); "
                         f"it has {', '.join(header)}")
    for name in ("q", "tau"):
        columns[name] = _columns(path, index, name, n)
    if _count(index, "qd"):
        columns["qd"] = _columns(path, index, "qd", n)
    values = _numbers(path, header, body, [k for ks in columns.values() for k in np.atleast_1d(ks)])
    return {name: values[:, ks] for name, ks in columns.items()}


def csv_header(path: Path, rows: list) -> list:
    """The column names of the first row (stripped); a name given twice is refused (which
    column is meant? the last one was read)."""
    header = [name.strip() for name in rows[0][1]]
    seen = {}
    for k, name in enumerate(header):
        if name and name in seen:
            raise InputError(f"{path}: column {name!r} appears twice in the header (columns {seen[name] + 1} and "
                             f"{k + 1}); name each column once")
        seen[name] = k
    return header


def _csv_rows(path: Path) -> list:
    """(line number, row) of every row that is not blank or a # comment; a UTF-8 byte-order
    mark (spreadsheets write one) is not part of the first name."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            rows = [(reader.line_num, row) for row in reader if row and not row[0].lstrip().startswith("#")]
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: is not a CSV text file (byte {exc.start} is not UTF-8)") from None
    except csv.Error as exc:
        raise InputError(f"{path}: cannot be read as CSV ({exc})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    if not rows:
        raise InputError(f"{path}: is empty (expected a header row t, q1..qn, [qd1..qdn,] tau1..taun)")
    return rows


def _count(index: dict, prefix: str) -> int:
    """How many columns prefix1, prefix2, ... the header has (from 1, without a gap)."""
    numbers = {int(m.group(1)) for name in index for m in [re.fullmatch(rf"{prefix}(\d+)", name)] if m}
    return max(numbers, default=0)


def _columns(path: Path, index: dict, prefix: str, n):
    """Column index of ``t`` (n None), or the indices of prefix1..prefixn."""
    names = [prefix] if n is None else [f"{prefix}{j}" for j in range(1, n + 1)]
    missing = [name for name in names if name not in index]
    if missing:
        known = f" (q has columns q1..q{n})" if n is not None else ""
        raise InputError(f"{path}: no column {missing[0]}{known}; the header needs t, q1..qn, [qd1..qdn,] "
                         "tau1..taun")
    return index[names[0]] if n is None else [index[name] for name in names]


def _numbers(path: Path, header: list, body: list, used: list) -> np.ndarray:
    values = np.empty((len(body), len(header)))
    for i, (line, row) in enumerate(body):
        if len(row) != len(header):
            raise InputError(f"{path}: line {line} has {len(row)} cells, the header {len(header)}")
        for k in used:
            try:
                values[i, k] = float(row[k])
            except ValueError:
                raise InputError(f"{path}: line {line}, column {header[k]}: {row[k].strip()!r} is not a number") \
                    from None
    return values
