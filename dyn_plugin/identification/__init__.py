"""Inertial-parameter regressor, base parameters and identification with friction.

* :func:`joint_torque_regressor` (also ``Backend.regressor``): τ = Y θ with θ =
  ``model.inertial_parameters(flat=True)`` (pinocchio's order and convention).
* :func:`base_parameters`: a minimal identifiable set by QR with column pivoting, with its
  regrouping formulas (``print(base_parameters(model))``).
* :func:`identify`: weighted, bounded least squares of the base inertial and the linear
  friction parameters (:mod:`.friction`, load-dependent friction included) on a recorded trajectory, with standard errors
  and the excitation's condition number; ``physical=True`` fits the standard parameters
  with every link a rigid body (:mod:`.physical`: pseudo-inertia LMIs, cvxpy + Clarabel),
  and ``result.to_model()`` gives the identified robot (``dp.write_urdf`` writes it).
* :func:`prepare_log` (a raw log: resampled, zero-phase filtered, differentiated, trimmed,
  decimated, :class:`Log`; ``Log.split``), :func:`load_log` (.npz / .csv), and
  :func:`holdout_rms` (torque RMS of a fit on held-out samples).
* :func:`fourier_trajectory`, :func:`simulate_measurements`, :func:`dhanaraj_friction`: a
  simulated experiment to try it on.
"""

from .base import BaseParameters, base_parameters
from .excitation import Measurements, dhanaraj_friction, fourier_trajectory, simulate_measurements
from .friction import LOADS, TERMS, friction_columns, friction_terms, friction_truth, load_magnitudes
from .identify import IdentificationResult, identify, plot_fit
from .log import Log, prepare_log
from .logfile import load_log
from .score import TorqueRMS, holdout_rms, plot_holdout, torque_rms
from ..algorithms.regressor import PARAMETERS, joint_torque_regressor, parameter_names

__all__ = ["BaseParameters", "IdentificationResult", "LOADS", "Measurements", "PARAMETERS", "TERMS", "base_parameters",
           "dhanaraj_friction", "fourier_trajectory", "friction_columns", "friction_terms", "friction_truth", "identify",
           "joint_torque_regressor", "load_magnitudes", "parameter_names", "plot_fit", "simulate_measurements",
           "Log", "TorqueRMS", "holdout_rms", "load_log", "plot_holdout", "prepare_log", "torque_rms"]
