"""Validation suites (TOML): which robots, backends, references, quantities and tolerances.

Installed as ``dyn_plugin.suites`` so that ``dyn-plugin validate`` finds them after any install.
"""
