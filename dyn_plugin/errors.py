"""One exception family for the whole package.

Every message names the file, element, link, joint or array at fault and says what
would be valid.  Each class also derives from the matching built-in exception so that
``except ValueError`` / ``except LookupError`` keeps working for callers who prefer it.

A message that tells the caller what to pass names the argument with :func:`argument`,
so that it speaks the caller's language: the keyword (``overwrite=True``) to Python,
the option (``--overwrite``) on the command line, which declares its options for the
run of a verb with :func:`arguments_spelled`.
"""

import contextlib
import contextvars
from typing import Mapping, Optional

# {argument name: how the caller spells it} while a front end (the CLI) runs; None: Python
_SPELLING: contextvars.ContextVar = contextvars.ContextVar("dyn_plugin_argument_spelling", default=None)


def argument(name: str, *value) -> str:
    """How a message names the caller's argument ``name`` (given as ``value``, if any):
    ``name`` or ``name=value`` to a Python caller (``out``, ``overwrite=True``); the
    option (``--out``, ``--overwrite``) while a front end that has one for ``name`` runs
    (:func:`arguments_spelled`), and the keyword marked "(Python API)" while one that has
    none runs."""
    spelling: Optional[Mapping[str, str]] = _SPELLING.get()
    keyword = f"{name}={value[0]!r}" if value else name
    if spelling is None:
        return keyword
    return spelling.get(name, f"{keyword} (Python API)")


@contextlib.contextmanager
def arguments_spelled(spelling: Optional[Mapping[str, str]]):
    """Within the block, :func:`argument` names ``name`` as ``spelling[name]`` (e.g.
    ``{"out": "--out", "overwrite": "--overwrite"}``); None: every name as Python does
    (also the keys of a data file, which are the keywords)."""
    token = _SPELLING.set(None if spelling is None else dict(spelling))
    try:
        yield
    finally:
        _SPELLING.reset(token)


class DynPluginError(Exception):
    """Base class of every error raised by dyn_plugin."""


class URDFError(DynPluginError, ValueError):
    """A URDF file that cannot be read as a fixed-base kinematic tree."""


class ModelError(DynPluginError, ValueError):
    """A robot description that is not physically valid (mass, inertia, DH table)."""


class InputError(DynPluginError, ValueError):
    """An array argument of the wrong shape, or with NaN / infinite entries."""


class UnknownRobotError(DynPluginError, LookupError):
    """A robot name that is neither bundled nor a path to an existing URDF file."""


class BackendError(DynPluginError, LookupError):
    """An unknown backend name, or a backend that cannot be built for a model."""


class SimulationError(DynPluginError, RuntimeError):
    """A simulation that cannot go on: a state that became NaN or infinite (the message
    names the step, the time and the joint), or a joint limit with on_limit='raise'."""


class ClusterError(DynPluginError, ConnectionError):
    """A Dask scheduler that cannot be reached (the message names its address)."""


class URDFWarning(UserWarning):
    """A URDF element the model does not follow as written: ``<mimic>`` joints, kept as
    independent degrees of freedom (as pinocchio's ``buildModel`` does by default)."""


class PhysicalValidityWarning(UserWarning):
    """A user URDF whose inertia breaks the triangle inequality.

    pinocchio accepts such a link, pybullet silently zeroes its inertia; results from
    the two then differ.  Bundled robots raise :class:`ModelError` instead.
    """


class NumericalError(InputError, ArithmeticError):
    """A result that is not finite although every input is: float64 overflowed.

    Raised instead of returning NaN or inf, e.g. for q̇ = 1e300 (whose square does not
    fit in a double).  The message names the quantity, the state and joint where the
    result broke down and the largest input there.  An :class:`InputError` because
    inputs that large are what causes it with a valid model; also an ``ArithmeticError``.
    """
