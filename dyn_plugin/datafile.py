"""Reading the package's TOML data files (robot tables, friction data, validation suites)."""

from __future__ import annotations

from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib


def read_toml(path, error: type, what: str) -> dict:
    """Parse a TOML file; a syntax error becomes ``error`` naming the file and ``what`` it should be."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not a valid {what} (TOML): {exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a valid {what}: TOML is UTF-8 text, and byte {exc.start} is not") from None
