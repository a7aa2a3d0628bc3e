"""What the parser, the commands and :func:`~dyn_plugin.tools.cli.main` share: the exit
codes (the end of ``dyn-plugin --help``), the value of ``--dask`` without an address, and
how validate's options name a suite's settings."""

from __future__ import annotations

__all__ = ["EXIT_CODES", "EXIT_FAILED", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "LOCAL_CLUSTER",
           "SUITE_OPTIONS", "suite_spelling"]

EXIT_CODES = """Exit codes: 0 all passed, 1 a tolerance exceeded, 2 usage or input error (one line on
stderr), 3 an internal error (a bug in dyn_plugin: the traceback is printed), 130
interrupted."""
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
LOCAL_CLUSTER = "local"  # --dask without an address

# validate's options named otherwise than the suite setting they override: {suite key: dest}
SUITE_OPTIONS = {"robots": "robot", "backends": "backend", "references": "against", "quantities": "quantity"}


def suite_spelling(args) -> dict:
    """How messages name each setting of the suite ``args.suite`` once validate's options
    are applied (for :func:`dyn_plugin.errors.arguments_spelled`): the option that set it
    (``--against``), else its key in the suite (``references of suite quick``)."""
    import dataclasses

    from ..validate import Suite

    spelling = {}
    for key in (field.name for field in dataclasses.fields(Suite)):
        dest = SUITE_OPTIONS.get(key, key)
        given = getattr(args, dest, None)
        spelling[key] = f"--{dest.replace('_', '-')}" if given is not None and given is not False else \
            f"{key} of suite {args.suite}"
    return spelling
