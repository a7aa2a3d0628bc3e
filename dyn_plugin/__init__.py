"""dyn_plugin: robot-manipulator dynamics as interchangeable, validated backends.

>>> import dyn_plugin as dp
>>> model = dp.load_robot("puma560")                 # or a path to any URDF (floating_base=, mimic=)
>>> be = dp.get_backend("newton_euler", model)
>>> tau = be.inverse_dynamics(q, qd, qdd)            # (n,) or (N, n)

Backends: ``newton_euler`` and ``lagrange_euler`` (ours), the same with joint friction and
motor inertia (``newton_euler_friction``, ``lagrange_euler_friction``; see
:class:`FrictionModel`; :func:`with_friction` puts the same on any backend), ``pinocchio``
and ``pybullet`` (the references).  See :func:`list_backends`.

Large batches run in parallel on every core: ``get_backend(..., workers=2)``,
:func:`set_workers`, :func:`using_workers` or ``DYN_PLUGIN_WORKERS`` choose fewer
(results are bit-identical for any number).
"""

from . import configuration, floating, mimic
from .backends import Backend, get_backend, list_backends, register_backend, unregister_backend
from .backends.friction_backend import with_friction
from .dh import DHRow, model_from_dh, read_dh_table
from .errors import (BackendError, ClusterError, DynPluginError, InputError, ModelError, NumericalError, PhysicalValidityWarning,
                     UnknownRobotError, URDFError, URDFWarning)
from .friction.parameters import FrictionModel, load_friction
from .friction.fitting import FrictionFit, fit_friction
from .friction.laws import FRICTION_LAWS
from .locking import lock_joints
from .loops import set_workers, using_workers, workers
from .model import RobotModel
from .robots import list_robots, load_robot, robot_table
from .terms import Terms
from .identification import holdout_rms, identify, load_log, prepare_log
from .simulate import JointLimitWarning, SimulationError, Trajectory, simulate
from .urdf import load_urdf, load_urdf_string, to_urdf, write_urdf

from ._version import __version__

_LAZY = ("cluster", "dataset")   # need the [dask] extra (dask, zarr): imported on first use only


def __getattr__(name):
    """``dp.cluster`` (module dyn_plugin.cluster) and ``dp.dataset`` (module dyn_plugin.dataset,
    callable as its function ``dataset``), imported on first access so that
    ``import dyn_plugin`` never imports dask or zarr."""
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "lock_joints",
    "__version__", "Terms", "configuration", "floating", "mimic",
    "Backend", "BackendError", "ClusterError", "DHRow", "FrictionModel", "load_friction", "DynPluginError", "InputError", "JointLimitWarning", "ModelError", "NumericalError",
    "PhysicalValidityWarning", "RobotModel", "URDFError", "URDFWarning", "UnknownRobotError", "get_backend", "identify",
    "list_backends", "list_robots", "load_robot", "load_urdf", "load_urdf_string",
    "model_from_dh", "read_dh_table", "register_backend", "robot_table", "SimulationError", "simulate",
    "to_urdf", "Trajectory", "holdout_rms", "load_log", "prepare_log",
    "unregister_backend", "with_friction", "write_urdf", "set_workers", "using_workers", "workers",
    "FRICTION_LAWS", "FrictionFit", "fit_friction",
]
