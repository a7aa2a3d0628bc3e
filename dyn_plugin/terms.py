"""Which terms of the equation of motion to compute: the one switch every route shares.

    τ = M(q) q̈ + C(q, q̇) q̇ + g(q)          (Fu 3.2-26; Featherstone 2008, eq. 5.1)

Gravity itself lives in the model only (:meth:`~dyn_plugin.model.RobotModel.with_gravity`);
a :class:`Terms` value says which of the three parts an algorithm evaluates, e.g.
``Terms.GRAVITY`` for g(q) alone or ``Terms.VELOCITY`` for C(q, q̇) q̇ alone.  The numpy
references (:mod:`dyn_plugin.algorithms`), the compiled kernels and the code generator
all take it; compiled code receives ``int(terms)`` and tests the bits.
"""

from __future__ import annotations

import enum

import numpy as np

from .errors import InputError


class Terms(enum.IntFlag):
    """Bit set of the terms of τ: combine with ``|`` (``Terms.VELOCITY | Terms.GRAVITY``)."""

    INERTIA = 1        # M(q) q̈, with any armature (rotor inertia) on M's diagonal
    VELOCITY = 2       # C(q, q̇) q̇: Coriolis and centrifugal torques
    GRAVITY = 4        # g(q), from the model's gravity vector
    BIAS = VELOCITY | GRAVITY      # C q̇ + g: the torque for zero acceleration
    ALL = INERTIA | VELOCITY | GRAVITY


def as_terms(terms) -> Terms:
    """``terms`` as a :class:`Terms`, refusing anything else with a clear error."""
    if isinstance(terms, Terms):
        return terms
    if isinstance(terms, int) and not isinstance(terms, bool) and 0 <= terms <= int(Terms.ALL):
        return Terms(terms)
    raise InputError(f"terms must be a dyn_plugin.Terms (e.g. Terms.ALL, Terms.GRAVITY), got {terms!r}")


def resolve(model, terms):
    """``(model, Terms)`` for an algorithm called with ``terms`` (a :class:`Terms`; anything
    else is refused with a clear error).  Gravity is the model's only
    (``model.with_gravity(g)``)."""
    return model, as_terms(terms)


def selected(model, terms: Terms, qd, qdd):
    """``(q̇, q̈, g)`` with what ``terms`` leaves out set to zero: q̇ without VELOCITY, q̈
    without INERTIA, the gravity vector (3,) without GRAVITY (else ``model.gravity``)."""
    qd = qd if terms & Terms.VELOCITY else np.zeros_like(qd)
    qdd = qdd if terms & Terms.INERTIA else np.zeros_like(qdd)
    gravity = model.gravity if terms & Terms.GRAVITY else np.zeros(3)
    return qd, qdd, gravity
