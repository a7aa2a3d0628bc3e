"""Backend names -> factories.

Built-in backends are registered by import path so that pinocchio and pybullet are only
imported when their backend is built.  Third-party packages add their own through the
``dyn_plugin.backends`` entry-point group (``name = "module:factory"``), or at run time
with :func:`register_backend`.  A factory is called as ``factory(model, **options)``.
"""

from __future__ import annotations

import importlib
import os
import inspect
from importlib import metadata
from typing import Callable, Optional, Union

import numpy as np

from ..errors import BackendError
from ..loops import check_workers
from .base import CAPABILITIES, KINDS

ENTRY_POINT_GROUP = "dyn_plugin.backends"

_BUILTIN = {
    "newton_euler": "dyn_plugin.backends.newton_euler_backend:NewtonEulerBackend",
    "lagrange_euler": "dyn_plugin.backends.lagrange_euler_backend:LagrangeEulerBackend",
    "newton_euler_friction": "dyn_plugin.backends.friction_backend:NewtonEulerFrictionBackend",
    "lagrange_euler_friction": "dyn_plugin.backends.friction_backend:LagrangeEulerFrictionBackend",
    "symbolic": "dyn_plugin.backends.symbolic_backend:SymbolicBackend",
    "symbolic_numba": "dyn_plugin.backends.symbolic_backend:SymbolicNumbaBackend",
    "pinocchio": "dyn_plugin.backends.pinocchio_backend:PinocchioBackend",
    "pybullet": "dyn_plugin.backends.pybullet_backend:PybulletBackend",
}
_factories: dict = dict(_BUILTIN)
_entry_points_loaded = False


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        _factories.setdefault(entry.name, entry)


def register_backend(name: str, factory: Callable, *, replace: bool = False) -> None:
    """Make ``get_backend(name, model, **options)`` call ``factory(model, **options)``.

    Raises :class:`BackendError` if ``name`` is taken, unless ``replace=True``.
    """
    _load_entry_points()
    if not callable(factory):
        raise BackendError(f"backend factory for {name!r} must be callable, got {factory!r}")
    if name in _factories and not replace:
        raise BackendError(f"a backend named {name!r} is already registered (pass replace=True to override it)")
    _factories[name] = factory


def unregister_backend(name: str) -> None:
    """Remove a backend added with :func:`register_backend` (built-ins stay)."""
    if name in _BUILTIN:
        raise BackendError(f"{name!r} is built in and cannot be removed")
    _factories.pop(name, None)


def list_backends() -> list:
    """Names of every registered backend: ours, the references, then added ones."""
    _load_entry_points()
    return list(_factories)


def _resolve(name: str) -> Callable:
    target: Union[str, Callable, metadata.EntryPoint] = _factories[name]
    if isinstance(target, str):
        module, attr = target.split(":")
        target = getattr(importlib.import_module(module), attr)
    elif hasattr(target, "load"):  # an entry point (importlib.metadata's, or the importlib_metadata backport's)
        try:
            target = target.load()
        except Exception as exc:
            raise BackendError(f"backend {name!r} from entry point {target.value!r} failed to load: {exc}") from None
    return target


def get_backend(name: str, model, *, workers: Optional[int] = None, **options):
    """Build backend ``name`` for ``model``, a :class:`~dyn_plugin.model.RobotModel` (or a
    bundled robot's name or a URDF path, loaded by :func:`dyn_plugin.robots.load_robot`
    with its defaults; TypeError for anything else); ``options`` (e.g. ``gravity=``) go to its factory.
    ``workers``: cores for its parallel batch loops (default: :func:`dyn_plugin.loops.workers`,
    every core unless ``DYN_PLUGIN_WORKERS`` or :func:`dyn_plugin.set_workers` says fewer);
    results are bit-identical for any number.

    A floating-base model goes to a backend declaring the ``floating_base`` capability as
    it is, and to any other through :mod:`.floating_base` (the backend runs on the
    robot's free-flyer chain); a model with mimic joints likewise through
    :mod:`.mimic_backend` (the backend runs on every joint) unless it declares ``mimic``, and
    one with spherical, planar or floating joints through :mod:`.multi_dof_backend` (the
    backend runs on their chain of one-dof joints) unless it declares ``multi_dof``."""
    backend = _build(name, model, **options)
    if workers is not None:
        backend.workers = check_workers(workers)
    return backend


def _build(name: str, model, **options):
    _load_entry_points()
    if name not in _factories:
        raise BackendError(f"unknown backend {name!r}; available: {', '.join(list_backends())}")
    model = _robot_model(model)
    factory = _resolve(name)
    if getattr(model, "mimic", ()) and "mimic" not in getattr(factory, "capabilities", ()):
        from .mimic_backend import mimic_backend

        return mimic_backend(name, factory, model, get_backend, **options)
    if getattr(model, "multi_dof_indices", ()) and "multi_dof" not in getattr(factory, "capabilities", ()):
        from .multi_dof_backend import multi_dof_backend

        return multi_dof_backend(name, factory, model, get_backend, **options)
    if getattr(model, "floating_base", False) and "floating_base" not in getattr(factory, "capabilities", ()):
        from .floating_base import floating_backend

        return floating_backend(name, factory, model, get_backend, **options)
    _check_armature(name, factory, model)
    return factory(model, **options)


def takes_armature(factory) -> bool:
    """True when a backend factory takes ``armature=`` (n,), rotor inertia on M's diagonal
    (as pinocchio's ``model.armature``), and so applies :attr:`RobotModel.armature`."""
    try:
        return "armature" in inspect.signature(factory).parameters
    except (TypeError, ValueError):          # a factory without a signature
        return False


def _check_armature(name: str, factory, model) -> None:
    """A model with armature (a DH table's motor inertia) goes only to a backend that applies
    it: one whose factory takes ``armature=``, or a friction backend (whose rigid backend is
    checked in turn).  Any other would leave the rotor inertia out of τ and M."""
    armature = getattr(model, "armature", None)
    if armature is None or not np.any(armature) or takes_armature(factory) or \
            "friction" in getattr(factory, "capabilities", ()):
        return
    joints = ", ".join(f"{joint} {value:g}" for joint, value in zip(model.joint_names, armature) if value)
    raise BackendError(f"backend {name!r} cannot apply the armature (rotor inertia) of model {model.name!r} "
                       f"({joints}); use a backend that does ({', '.join(_armature_backends())}), or a model "
                       "without it (dataclasses.replace(model, armature=None))")


def _armature_backends() -> list:
    return [name for name in list_backends() if takes_armature(_resolve(name))]


def _robot_model(model):
    """``model`` as a RobotModel: as given, or loaded from a bundled robot's name or a URDF path."""
    from ..model import RobotModel

    if isinstance(model, RobotModel):
        return model
    if isinstance(model, (str, os.PathLike)):
        from ..robots import load_robot

        return load_robot(model)
    module, kind = type(model).__module__.split(".")[0], type(model).__qualname__
    given = "None" if model is None else kind if module == "builtins" else f"{module}.{kind}"
    raise TypeError(f"get_backend needs a RobotModel: dp.load_robot('puma560') or dp.load_robot('path/to/robot.urdf') "
                    f"(or that name or path itself), got {given}")


def backend_class(name: str):
    """The class (or factory) registered as ``name``; importing it imports no reference
    engine (pinocchio and pybullet are imported when a backend is built)."""
    _load_entry_points()
    if name not in _factories:
        raise BackendError(f"unknown backend {name!r}; available: {', '.join(list_backends())}")
    return _resolve(name)


def declared(name: str) -> tuple:
    """``(kind, capabilities)`` that backend ``name`` declares; a factory that is not a
    :class:`~dyn_plugin.backends.base.Backend` class counts as ``("ours", frozenset())``."""
    factory = backend_class(name)
    return getattr(factory, "kind", "ours"), frozenset(getattr(factory, "capabilities", ()))


def backends(kind: Union[str, tuple, None] = None, *, can: tuple = (), cannot: tuple = ()) -> list:
    """Names of the registered backends of ``kind`` (one of ``KINDS``, a tuple of them, or
    None for all) that declare every capability in ``can`` and none in ``cannot``, in
    registration order.  ``backends("reference")``; ``backends("ours", can=("friction",))``."""
    kinds = (kind,) if isinstance(kind, str) else kind
    for k in kinds or ():
        if k not in KINDS:
            raise BackendError(f"unknown backend kind {k!r}; one of {', '.join(KINDS)}")
    for c in (*can, *cannot):
        if c not in CAPABILITIES:
            raise BackendError(f"unknown capability {c!r}; one of {', '.join(CAPABILITIES)}")
    chosen = []
    for name in list_backends():
        try:
            k, capabilities = declared(name)
        except BackendError:          # a third-party entry point that fails to load is left out
            continue
        if (kinds is None or k in kinds) and set(can) <= capabilities and not set(cannot) & capabilities:
            chosen.append(name)
    return chosen


def backend_description(name: str) -> str:
    """One line on what backend ``name`` is."""
    factory = _resolve(name)
    return getattr(factory, "description", "") or (factory.__doc__ or "").strip().split("\n")[0]
