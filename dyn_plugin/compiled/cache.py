"""numba's on-disk cache of our kernels, stale when any of their source files changes.

numba keys a function's cached machine code on the content of the function's own source
file only.  Our kernels reach across files: each algorithm's module inlines the helpers of
vectors.py, scratch.py and lane_blocks.py, freezes the offsets of layout.py and lanes.py,
derivatives.py inlines the per-state recursions, and the friction law's fused kernels
compile a rigid kernel in.  After an edit of one file, a kernel of another would load the old machine code.  So
every function defined in :data:`SOURCES` is cached under a stamp of all of them: an
edit of any recompiles them all, once (a minute or two; users, who do not edit, never pay
it).

:func:`install` puts :class:`PackageLocator` first among numba's cache locators (numba's
``CacheImpl._locator_classes``, internal; should it change, numba's own behaviour stays).
It must run before a cached function is decorated: ``dyn_plugin.compiled`` runs it before
importing its modules, the friction law before compiling.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent
SOURCES = tuple(sorted(_PACKAGE.joinpath("compiled").glob("*.py"))) + (_PACKAGE / "friction" / "law.py",)


@functools.lru_cache(maxsize=None)
def sources_digest() -> str:
    """sha256 of the files of :data:`SOURCES`, names and contents."""
    digest = hashlib.sha256()
    for path in SOURCES:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class PackageLocator:
    """numba's own locator for a function of :data:`SOURCES` (same cache directory, same
    file names), with :func:`sources_digest` added to the stamp its index is checked
    against.  Built by :meth:`from_function` (numba's locator protocol); None for any other
    function."""

    def __init__(self, inner):
        self._inner = inner

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve() not in SOURCES:
            return None
        from numba.core.caching import CacheImpl

        for locator_class in CacheImpl._locator_classes:
            if locator_class is not cls:
                inner = locator_class.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner)
        return None

    def get_source_stamp(self):
        return self._inner.get_source_stamp(), sources_digest()

    def __getattr__(self, name):                 # cache path, disambiguator, _py_file, ...: numba's
        return getattr(self._inner, name)


@functools.lru_cache(maxsize=None)
def install() -> bool:
    """Put :class:`PackageLocator` first among numba's cache locators; False if numba's
    internals have changed (its default behaviour then)."""
    try:
        from numba.core.caching import CacheImpl

        if PackageLocator not in CacheImpl._locator_classes:
            CacheImpl._locator_classes.insert(0, PackageLocator)
        return True
    except (ImportError, AttributeError):
        return False
