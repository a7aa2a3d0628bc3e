"""Studies that use the dynamics: evaluations over a backend from the registry, not laws.

* :mod:`.friction_study` — the input torque by cause (rigid body, armature, bearing,
  transmission, velocity friction) along a rest-to-rest trajectory, after Dhanaraj's
  PUMA-560 case study (``dyn-plugin friction``);
* :mod:`.friction_uncertainty` — how well each friction parameter is known (a data file's
  ``[uncertainty]`` table) and friction models drawn within it;
* :mod:`.friction_monte_carlo` — the envelope of the friction torque over such draws,
  serially or on a dask cluster (``dyn-plugin friction --monte-carlo K``).

The laws and their parameters are in :mod:`dyn_plugin.friction`, below the backends; a
study builds backends by name (:mod:`dyn_plugin.backends.registry`), so it sits above them.
``import dyn_plugin`` does not import this package.
"""
