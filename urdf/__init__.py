"""Bundled robots: generated URDF files and the DH/inertia source table each came from.

Installed as the package ``dyn_plugin.bundled`` so the files are found after any install.
Regenerate the URDFs from the tables with ``dyn-plugin robots --regenerate``.
"""
