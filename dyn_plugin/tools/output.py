"""What the tools write through: a file or stdout, one-line messages, the stdout console."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["console", "one_line", "write_or_print"]


def write_or_print(path, text: str) -> None:
    """``text`` to the file ``path``, or to stdout for ``-``."""
    if str(path) == "-":
        print(text)
    else:
        Path(path).write_text(text + "\n")


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped (a name can hold them)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def console():
    """Standard output: as wide as the terminal, or $COLUMNS; in a pipe without $COLUMNS,
    160 columns (room for the widest tables; the validate table needs at most 80)."""
    from rich.console import Console

    out = Console(emoji=False)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out = Console(emoji=False, width=160)
    return out
