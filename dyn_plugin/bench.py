"""Deprecated alias of :mod:`dyn_plugin.tools.bench`, ``dyn-plugin bench``: re-exports
its public names and warns when imported.
"""

import warnings

from .tools import bench as _new

warnings.warn("dyn_plugin.bench is deprecated: import dyn_plugin.tools.bench instead", DeprecationWarning,
              stacklevel=1 if __name__ == "__main__" else 2)

__all__ = list(_new.__all__)
globals().update({name: getattr(_new, name) for name in __all__})
