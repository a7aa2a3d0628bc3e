"""simulate reports the joint limits of mimic followers (``mimic=True``, reduced coordinates).

A follower is no coordinate: its position is multiplier · q_leader + offset, computed here
from ``trajectory.q`` and the URDF's numbers, not from dyn_plugin.mimic.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.simulate import LimitEvent

MULTIPLIER, OFFSET, FOLLOWER_LIMIT = -1.5, 0.2, 1.0


def _link(name, mass, com):
    return (f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/>'
            '<inertia ixx="0.02" iyy="0.03" izz="0.025" ixy="0" ixz="0" iyz="0"/></inertial></link>')


def _joint(name, parent, child, xyz, axis, limit, mimic=""):
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>'
            f'<limit lower="{-limit}" upper="{limit}" effort="10" velocity="5"/>{mimic}</joint>')


# j1 (leader) → j2 (follows j1: −1.5 q + 0.2, limits ±1) → j3 (independent); all limits but j2's wide
URDF = "<robot name='follower_limits'>" + "".join([
    '<link name="base"/>',
    _link("l1", 1.0, "0.1 0 0"),
    _link("l2", 0.8, "0.1 0 0"),
    _link("l3", 0.5, "0 0.1 0"),
    _joint("j1", "base", "l1", "0 0 0.1", "0 0 1", 10),
    _joint("j2", "l1", "l2", "0.2 0 0", "0 0 1", FOLLOWER_LIMIT,
           f'<mimic joint="j1" multiplier="{MULTIPLIER}" offset="{OFFSET}"/>'),
    _joint("j3", "l2", "l3", "0.2 0 0", "1 0 0", 10),
]) + "</robot>"

PLAIN_URDF = URDF.replace(f'<mimic joint="j1" multiplier="{MULTIPLIER}" offset="{OFFSET}"/>', "")   # no follower
assert PLAIN_URDF != URDF

DURATION, DT = 0.4, 1e-3


def _run(model, on_limit):
    """From rest at the neutral configuration, a constant torque on j1 (the axes are vertical:
    gravity does not turn it) drives the follower j2 past its lower limit."""
    be = dp.get_backend("newton_euler", model)
    tau = np.zeros(model.nv)
    tau[model.velocity_names.index("j1")] = 1.0
    return dp.simulate(be, model.neutral(), np.zeros(model.nv), tau, DURATION, DT, on_limit=on_limit)


def _first_outside(values, lower, upper):
    outside = np.nonzero((values < lower) | (values > upper))[0]
    assert len(outside), "the joint never left its limits: the test drives it too weakly"
    return int(outside[0])


@pytest.mark.parametrize("floating_base", [False, True], ids=["fixed", "floating"])
def test_a_mimic_follower_leaving_its_limits_is_reported(floating_base):
    model = dp.load_urdf_string(URDF, mimic=True, floating_base=floating_base)
    assert "j2" not in model.velocity_names                      # a follower, not a coordinate
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traj = _run(model, "warn")
    leader = traj.q[:, model.configuration_names.index("j1")]
    follower = MULTIPLIER * leader + OFFSET                      # from the URDF's numbers
    k = _first_outside(follower, -FOLLOWER_LIMIT, FOLLOWER_LIMIT)
    assert k > 1 and abs(follower[k - 1]) <= FOLLOWER_LIMIT < abs(follower[k])
    assert follower[k] < -FOLLOWER_LIMIT and follower[-1] < -FOLLOWER_LIMIT - 0.2     # well past it: not clamped
    assert np.all(np.abs(traj.q[:, model.configuration_names.index("j3")]) < 10)     # the others stay inside
    assert np.all(np.abs(leader) < 10)

    assert len(traj.limit_events) == 1
    event = traj.limit_events[0]
    assert event.joint == "j2"
    assert event.time == pytest.approx(traj.t[k], abs=1e-12)
    assert event.position == pytest.approx(follower[k], rel=1e-12, abs=1e-12)
    assert event.position < event.bound == -FOLLOWER_LIMIT

    limit_warnings = [str(w.message) for w in caught if issubclass(w.category, dp.JointLimitWarning)]
    assert len(limit_warnings) == 1
    assert "joint 'j2'" in limit_warnings[0] and "'j1'" in limit_warnings[0]      # the follower, and its leader
    assert f"t = {traj.t[k]:.6g} s" in limit_warnings[0] and "(not clamped)" in limit_warnings[0]

    with pytest.raises(dp.SimulationError, match="'j2'.*follows 'j1'"):
        _run(model, "raise")


def test_without_mimic_the_reports_are_unchanged():
    """The same robot without the <mimic> element: j2 is a coordinate, driven past its limit
    by a torque of its own; the event and message as simulate has always written them."""
    model = dp.load_urdf_string(PLAIN_URDF)
    assert not model.mimic and model.nq == 3
    be = dp.get_backend("newton_euler", model)
    tau = np.array([0.0, -1.0, 0.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traj = dp.simulate(be, np.zeros(3), np.zeros(3), tau, DURATION, DT)
    k = _first_outside(traj.q[:, 1], -FOLLOWER_LIMIT, FOLLOWER_LIMIT)
    q = traj.q[k, 1]
    assert traj.limit_events == (LimitEvent(float(traj.t[k]), "j2", float(q), -1.0),)
    messages = [str(w.message) for w in caught if issubclass(w.category, dp.JointLimitWarning)]
    assert messages == [f"joint 'j2' left its limits at t = {traj.t[k]:.6g} s: q = {q:.6g}, limit -1 (not clamped)"]
    with pytest.raises(dp.SimulationError, match="^joint 'j2' left its limits"):
        dp.simulate(be, np.zeros(3), np.zeros(3), tau, DURATION, DT, on_limit="raise")
