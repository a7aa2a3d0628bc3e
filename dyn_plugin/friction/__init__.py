"""Joint friction: the models (:mod:`.models`), the dynamic (bristle) laws LuGre and Dahl
(:mod:`.bristles`), a robot's complete friction description (:mod:`.parameters`), and the
set-valued stiction solver used by forward dynamics and simulation (:mod:`.stiction`).
"""

from .bristles import Bristles
from .models import (BEARINGS, BearingFriction, EfficiencyCurve, TransmissionFriction, VelocityFriction,
                     direction, efficiency_factor, journal_bearing, journal_bearing_pair, linear_bearing, sgn,
                     thrust_bearing, transmission_input_torque)

__all__ = [
    "BEARINGS", "BearingFriction", "Bristles", "EfficiencyCurve", "TransmissionFriction", "VelocityFriction", "direction",
    "efficiency_factor", "journal_bearing", "journal_bearing_pair", "linear_bearing", "sgn", "thrust_bearing",
    "transmission_input_torque",
]
