"""What identifies generated code: the generator's version and the model key.

Bump :data:`GENERATOR_VERSION` whenever the generated source changes for some model (the
emitters, the recursion, the customisation, or anything the generated modules call, such
as :func:`dyn_plugin.compiled.cholesky.spd_solve`): it is part of :func:`model_key`, so
on-disk caches (:mod:`dyn_plugin.symbolic.code_cache`) never serve an older file.
"""

from __future__ import annotations

import hashlib

import numpy as np

GENERATOR_VERSION = "26"


def model_key(model, lang: str = "", regroup: bool = True) -> str:
    """SHA-256 (hex) of every model parameter the dynamics depend on, the generator
    version, the states per chunk of lanes, the language and the options: the on-disk
    cache key."""
    from ..compiled.lanes import LANES     # numba freezes it into the generated module's machine code

    h = hashlib.sha256()
    for item in (GENERATOR_VERSION, str(LANES), lang, str(regroup), model.name, "|".join(model.joint_types)):
        h.update(item.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    for array in (model.parents, model.joint_rotations, model.joint_positions, model.axes,
                  model.masses, model.coms, model.inertias, model.gravity):
        h.update(np.ascontiguousarray(array, dtype=float).tobytes())
    return h.hexdigest()
