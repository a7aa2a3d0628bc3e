"""Deprecated alias of :mod:`dyn_plugin.tools.bench`, ``dyn-plugin bench``: re-exports
its public names and warns when imported.
"""

import warnings

from .tools import bench as _new

warnings.warn("dyn_plugin.bench is deprecated: import dyn_plugin.tools.bench instead", DeprecationWarning,
              stacklevel=1 if __name__ == "__main__" else 2)

__all__ = list(_new.__all__)
globals().update({name: getattr(_new, name) for name in __all__})


def __getattr__(name):
    if name == "KNOWN_OURS":        # was a hand-kept tuple; now what the registry says
        from .backends.registry import backends

        warnings.warn("dyn_plugin.bench.KNOWN_OURS is deprecated: use "
                      "dyn_plugin.backends.registry.backends(('ours', 'generated'))", DeprecationWarning, stacklevel=2)
        return tuple(backends(("ours", "generated")))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
