"""``dyn-plugin``: the command line.  Parsing (:mod:`.parser`) and printing (:mod:`.commands`)
only; the work is elsewhere.  Exit codes: :data:`.common.EXIT_CODES` (also the end of
``dyn-plugin --help``).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from ...errors import DynPluginError, InputError, arguments_spelled
from ..output import one_line
from .commands import COMMANDS, LITERATURE_COUNTS
from .common import (EXIT_CODES, EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE,
                     LOCAL_CLUSTER)
from .parser import build_parser, option_spelling

__all__ = ["EXIT_CODES", "EXIT_FAILED", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE",
           "LITERATURE_COUNTS", "LOCAL_CLUSTER", "OUTPUTS", "build_parser", "main"]


def main(argv=None) -> int:
    """Run ``dyn-plugin`` with ``argv`` (default: the command line); returns the exit code.
    While the verb runs, the library's messages name its options (``--out``), not the
    keywords of the Python API (``out``): :func:`dyn_plugin.errors.argument`."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        print("dyn-plugin: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    spelling = option_spelling(parser, args.command)
    with warnings.catch_warnings(), arguments_spelled(spelling):
        warnings.showwarning = _show_warning
        # ours (URDFWarning, PhysicalValidityWarning) are a line each, whatever filters the caller
        # set (pytest's "error" included)
        warnings.simplefilter("default", UserWarning)
        try:
            _check_outputs(args, spelling)
            return COMMANDS[args.command](args)
        except BrokenPipeError:                   # the reader of stdout stopped (dyn-plugin ... | head): done
            _quiet_stdout()
            return EXIT_OK
        except (DynPluginError, OSError, UnicodeDecodeError) as exc:
            return _input_error(_describe(exc))
        except KeyboardInterrupt as interrupt:    # a verb may say what to do next (dataset: how to resume)
            print(f"dyn-plugin: interrupted{f'; {interrupt}' if str(interrupt) else ''}", file=sys.stderr)
            return EXIT_INTERRUPTED
        except Exception:  # a bug: keep the traceback, and an exit code no check or input error uses
            import traceback

            traceback.print_exc()
            print("dyn-plugin: internal error (a bug in dyn_plugin, not in your input): please report it with "
                  "the traceback above", file=sys.stderr)
            return EXIT_INTERNAL


def _quiet_stdout() -> None:
    """stdout to /dev/null, so that Python's flush at exit does not fail again on the closed
    pipe (the Python documentation's advice for SIGPIPE)."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):   # a stdout without a file descriptor (a test's)
        pass


def _describe(exc: Exception) -> str:
    """The message of an input error: ours, or a file the user named that is missing,
    unreadable or not text (OSError, UnicodeDecodeError)."""
    if isinstance(exc, OSError):
        return f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return f"a file given is not UTF-8 text ({exc.reason} at byte {exc.start})"
    return str(exc)


def _input_error(message: str) -> int:
    print(f"dyn-plugin: error: {one_line(message)}", file=sys.stderr)
    return EXIT_USAGE


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"dyn-plugin: warning: {one_line(str(message))}", file=sys.stderr)


# Options that name an output, and what they name.
OUTPUTS = {"json": "file", "report": "file", "out": "file", "plot": "image", "plots": "folder", "store": "folder",
           "urdf": "file"}


def _check_outputs(args, spelling: dict) -> None:
    """Fail before any work when an output cannot be written, for every command alike:
    the folder that will hold it must exist, a file must not be a folder (nor a folder a
    file), an image needs a format matplotlib writes.  ``--json -`` is stdout.  Messages
    name the option as typed (``spelling``: :func:`.parser.option_spelling`)."""
    for key, kind in OUTPUTS.items():
        path = getattr(args, key, None)
        if path is None or (key == "json" and path == "-"):
            continue
        target, where = Path(path), f"{spelling.get(key, '--' + key)} {path}"
        if kind == "folder" and target.exists() and not target.is_dir():
            raise InputError(f"{where}: is a file; give a folder")
        if kind != "folder" and target.is_dir():
            raise InputError(f"{where}: is a folder; give a file name")
        if not target.parent.is_dir():
            raise InputError(f"{where}: folder {target.parent} does not exist")
        if kind == "image":
            _check_image_format(where, target.suffix.lstrip(".").lower())
        _check_writable(where, target if kind != "folder" or not target.is_dir() else target / ".dyn-plugin-probe")


def _check_writable(where: str, target: Path) -> None:
    """Create ``target`` (or open it to append, if it exists) and remove what was created:
    what the run will do at its end, tried first (a read-only folder, /proc, a full disk)."""
    existed = target.exists()
    try:
        with open(target, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise InputError(f"{where}: cannot be written ({exc.strerror or exc})") from None
    if not existed:
        target.unlink(missing_ok=True)


def _check_image_format(where: str, suffix: str) -> None:
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix and suffix not in formats:
        raise InputError(f"{where}: unknown image format {suffix!r}; use one of {', '.join(sorted(formats))}")

