"""``python -m dyn_plugin.tools.cli``: the ``dyn-plugin`` command."""

import sys

from . import main

sys.exit(main())
