"""Bundled robots: generated URDF files and the DH/inertia source table each came from.

A package so that a wheel carries the files (``package-data`` in pyproject.toml); found
beside the code by :func:`dyn_plugin.robots.bundled_dir`.  The top-level ``urdf`` folder
of the source tree is a symbolic link here.  Regenerate the URDFs from the tables with
``dyn-plugin robots --regenerate``.
"""
