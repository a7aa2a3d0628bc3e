"""The real-data report (validation/real/): identification of the Panda log of Gaz et al.
2019 with each friction set, least squares and physical, scored on held-out torques beside
the published model (:mod:`.panda`), and the friction laws fitted to one Franka joint at
three speeds beside the published classical models (:mod:`.franka`); :mod:`.report` writes
README.md, real_data.json and the figures.

Regenerate: ``python -m dyn_plugin.tools.real_data`` from the repository root (reads
``../shared/data``, writes ``validation/real``; ``--data DIR``, ``--out DIR``, ``--panda
FILE``, ``--franka SLOW MIDDLE HIGH`` override).
"""

from .franka import PUBLISHED_README, SPEEDS, franka_study
from .panda import FRICTION_SETS, METHODS, PROTOCOL, PUBLISHED, panda_model, panda_study
from .report import COMMAND, write_report

__all__ = ["COMMAND", "FRICTION_SETS", "METHODS", "PROTOCOL", "PUBLISHED", "PUBLISHED_README", "SPEEDS",
           "franka_study", "panda_model", "panda_study", "write_report"]
