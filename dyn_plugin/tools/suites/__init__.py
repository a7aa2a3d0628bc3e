"""Validation suites (TOML): which robots, backends, references, quantities and tolerances.

A package so that a wheel carries the files (``package-data`` in pyproject.toml); found
beside the code by ``dyn_plugin.tools.validate.suite_dir``.  The source tree's
``validation/suites`` is a symbolic link here.
"""
