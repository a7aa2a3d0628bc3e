"""What the parser, the commands and :func:`~dyn_plugin.tools.cli.main` share: the exit
codes (the end of ``dyn-plugin --help``) and the value of ``--dask`` without an address."""

from __future__ import annotations

__all__ = ["EXIT_CODES", "EXIT_FAILED", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "LOCAL_CLUSTER"]

EXIT_CODES = """Exit codes: 0 all passed, 1 a tolerance exceeded, 2 usage or input error (one line on
stderr), 3 an internal error (a bug in dyn_plugin: the traceback is printed), 130
interrupted."""
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
LOCAL_CLUSTER = "local"  # --dask without an address
