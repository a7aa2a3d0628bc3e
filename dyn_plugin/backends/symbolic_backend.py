"""The ``symbolic`` backend: customised code generated for one robot, cached on disk.

:mod:`dyn_plugin.symbolic.codegen` writes straight-line inverse dynamics and M(q) for
the model (constants folded, common subexpressions shared, base inertial parameters);
this backend writes that module once per model into the cache directory and imports it
from there afterwards.

Cache directory: ``$DYN_PLUGIN_CACHE`` if set, else ``$XDG_CACHE_HOME/dyn_plugin/symbolic``
(``~/.cache/dyn_plugin/symbolic`` when ``XDG_CACHE_HOME`` is unset).  The file name holds
:func:`dyn_plugin.symbolic.codegen.model_key`, a hash of every model parameter (gravity
included), the generator version and the language, so a changed model or generator never
reads an old file.  A file that does not load, carries another key, or disagrees with
the reference recursion at a test state is regenerated.
"""

from __future__ import annotations

import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Optional

import numpy as np

from ..algorithms import newton_euler as ne
from ..errors import BackendError
from ..symbolic import codegen
from ..compiled import NO_SINGLE_STATE_PATH, SingleStateKernels
from .base import Backend
from .ours import SingleStateFastPath

LANGS = ("python", "numba")
SELF_CHECK_RTOL = 1e-9


def cache_dir() -> Path:
    """Where generated modules live (see the module docstring); not created here."""
    explicit = os.environ.get("DYN_PLUGIN_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dyn_plugin" / "symbolic"


class _StaleCache(Exception):
    """A cached module that must be regenerated."""


def _module_name(path: Path) -> str:
    return "_dyn_plugin_symbolic_" + path.stem


def _import_file(path: Path, key: str) -> types.ModuleType:
    """Execute the cached source as a module (no bytecode cache: a regenerated file is
    never shadowed by the bytecode of an older one) and check its key."""
    try:
        source = path.read_text(encoding="utf-8")
        module = types.ModuleType(_module_name(path))
        module.__file__ = str(path)
        sys.modules[module.__name__] = module          # numba's cache looks the module up
        exec(compile(source, str(path), "exec"), module.__dict__)
    except Exception as exc:  # any damage to the file: regenerate
        sys.modules.pop(_module_name(path), None)
        raise _StaleCache(f"{path} does not load: {exc}") from None
    if getattr(module, "GENERATOR_KEY", None) != key or not all(
            callable(getattr(module, f, None)) for f in ("inverse_dynamics", "mass_matrix")):
        raise _StaleCache(f"{path} was generated for another model or generator")
    return module


def _self_check(module, model) -> None:
    """τ at one fixed state against the reference recursion (catches a damaged file
    that still imports)."""
    rng = np.random.default_rng(12345)
    q, qd, qdd = rng.uniform(-1.0, 1.0, (3, 1, model.n))
    ours = np.asarray(module.inverse_dynamics(q, qd, qdd))
    ref = ne.inverse_dynamics(model, q, qd, qdd, model.gravity)
    if ours.shape != ref.shape or not np.all(np.abs(ours - ref) <= SELF_CHECK_RTOL * np.maximum(1.0, np.abs(ref))):
        raise _StaleCache("cached module disagrees with the Newton-Euler recursion")


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_generated(model, lang: str = "python", directory: Optional[Path] = None):
    """The generated module for ``model`` (with ``inverse_dynamics`` and ``mass_matrix``),
    from the cache or freshly generated.  Returns ``(module, path, cache_hit)``."""
    key = codegen.model_key(model, lang)
    directory = Path(directory) if directory is not None else cache_dir()
    path = directory / f"{codegen.c_identifier(model.name)}_{lang}_{key[:24]}.py"
    if path.exists():
        try:
            module = _import_file(path, key)
            _self_check(module, model)
            return module, path, True
        except _StaleCache:
            pass
    generated = codegen.generate(model, lang, mass_matrix=True)
    _write_atomically(path, generated.source)
    module = _import_file(path, key)
    _self_check(module, model)
    return module, path, False


class SymbolicBackend(SingleStateFastPath, Backend):
    """Customised Newton-Euler code for this model (:mod:`dyn_plugin.symbolic.codegen`).

    Options: ``gravity`` (3,) m/s² (default: the model's); ``lang`` ``"python"`` (NumPy,
    vectorised over the batch; default) or ``"numba"`` (compiled loop, compiled code
    cached by numba next to the module).  ``cache_path`` is the generated file,
    ``cache_hit`` whether it came from the cache, ``counts`` the operations per τ.

    M(q) is generated too (unit-acceleration columns, gravity off, on one expression
    graph).  With ``lang="numba"`` one state goes straight to typed per-state functions,
    batches run in compiled loops (parallel from 2048 states), and forward dynamics solves
    M q̈ = τ − bias by Cholesky in compiled code; with ``"python"`` forward dynamics, bias,
    gravity and Coriolis use the base class's defaults.
    """

    name = "symbolic"
    description = "customised Newton-Euler code generated per robot (folded constants, shared subexpressions), cached on disk"

    def __init__(self, model, gravity=None, lang: str = "python"):
        super().__init__(model, gravity)
        if lang not in LANGS:
            raise BackendError(f"symbolic backend: lang must be one of {LANGS}, got {lang!r}")
        self.lang = lang
        self._module, self.cache_path, self.cache_hit = load_generated(self.model, lang)
        module = self._module
        self._single = (SingleStateKernels(module.inverse_dynamics_state, module.bias_forces_state,
                                           module.forward_dynamics_state, module.mass_matrix_state)
                        if lang == "numba" else NO_SINGLE_STATE_PATH)

    @property
    def counts(self) -> dict:
        """Multiplications, additions and sin/cos calls per evaluation of τ."""
        return dict(self._module.COUNTS)

    @staticmethod
    def _prepare(*arrays):
        return [np.ascontiguousarray(a, dtype=float) for a in arrays]

    def _batch_inverse_dynamics(self, q, qd, qdd):
        return self._module.inverse_dynamics(*self._prepare(q, qd, qdd))

    def _batch_mass_matrix(self, q):
        return self._module.mass_matrix(*self._prepare(q))

    def _batch_bias_forces(self, q, qd):
        if self.lang == "numba":
            return self._module.bias_forces(*self._prepare(q, qd))
        return super()._batch_bias_forces(q, qd)

    def _batch_forward_dynamics(self, q, qd, tau):
        if self.lang == "numba":
            return self._module.forward_dynamics(*self._prepare(q, qd, tau))
        return super()._batch_forward_dynamics(q, qd, tau)


class SymbolicNumbaBackend(SymbolicBackend):
    """The symbolic backend compiled with numba (``lang="numba"``): the fastest of ours."""

    name = "symbolic_numba"
    description = "the symbolic backend's generated code compiled with numba (single states, parallel batches)"

    def __init__(self, model, gravity=None):
        super().__init__(model, gravity, lang="numba")
