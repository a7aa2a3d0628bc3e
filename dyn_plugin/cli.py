"""Deprecated alias of :mod:`dyn_plugin.tools.cli`, the command line: re-exports its
public names and warns when imported.  ``dyn-plugin`` and ``python -m dyn_plugin.tools.cli``
run the command line; ``python -m dyn_plugin.cli`` still does, with the warning.
"""

import sys
import warnings

from .tools import cli as _new

warnings.warn("dyn_plugin.cli is deprecated: import dyn_plugin.tools.cli instead", DeprecationWarning,
              stacklevel=1 if __name__ == "__main__" else 2)

__all__ = list(_new.__all__)
globals().update({name: getattr(_new, name) for name in __all__})

if __name__ == "__main__":
    sys.exit(_new.main())
