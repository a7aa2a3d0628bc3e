"""The ``symbolic`` backend: customised code generated for one robot, cached on disk.

:mod:`dyn_plugin.symbolic.codegen` writes straight-line inverse dynamics and M(q) for
the model (constants folded, common subexpressions shared, base inertial parameters);
this backend writes that module once per model into the cache directory and imports it
from there afterwards.

Cache directory: ``$DYN_PLUGIN_CACHE`` if set, else ``$XDG_CACHE_HOME/dyn_plugin/symbolic``
(``~/.cache/dyn_plugin/symbolic`` when ``XDG_CACHE_HOME`` is unset).  The file name is a
prefix of the robot name (made an identifier, at most 40 characters), the language and
24 hex digits of :func:`dyn_plugin.symbolic.codegen.model_key`, a hash of every model
parameter (gravity included), the generator version and the language, so a changed
model or generator never reads an old file.

Nothing in a cached file runs before it is verified: its first line holds its model key
and the SHA-256 of the bytes after that line, and a file whose key or digest does not
match is regenerated (atomically: a temporary file, then ``os.replace``, so processes
sharing the cache never see half a file).  After loading, a self-check compares every
function the backend serves from the file (τ and M; with numba also the bias, the
forward dynamics and the single-state kernels) with the reference recursion; a cached
file that fails it is regenerated, a freshly generated one raises
:class:`~dyn_plugin.errors.BackendError`.

Generating and compiling a new robot's code takes a while (numba: 15-60 s for 2-6 joints
on 2 cores, up to 15 s for a single function): each step is an INFO message of the
``dyn_plugin`` logger (:mod:`logging`; shown by ``dyn-plugin``, quiet in a library call),
and numba announces each function it compiles (dyn_plugin/tools/activity.py).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import os
import re
import sys
import tempfile
import types
from pathlib import Path
from typing import Optional

import numpy as np

from ..algorithms import newton_euler as ne
from ..errors import BackendError
from ..symbolic import codegen
from ..terms import Terms
from ..compiled import NO_SINGLE_STATE_PATH, SingleStateKernels
from ..compiled.lanes import run_blocks
from .base import Backend
from .ours import SingleStateFastPath

LANGS = ("python", "numba")
SELF_CHECK_RTOL = 1e-9
_log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """Where generated modules live (see the module docstring); not created here."""
    explicit = os.environ.get("DYN_PLUGIN_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dyn_plugin" / "symbolic"


class _StaleCache(Exception):
    """A cached module that must be regenerated (never leaves this module)."""


_HEADER = re.compile(rb"# dyn_plugin symbolic cache: key ([0-9a-f]{64}) sha256 ([0-9a-f]{64})")
NAME_PREFIX = 40          # characters of the robot name in a cache file's name


def cache_file_name(robot: str, lang: str, key: str) -> str:
    """``<robot name as an identifier, ≤ 40 characters>_<lang>_<24 hex digits of key>.py``:
    bounded whatever the name (file systems refuse names over 255 bytes)."""
    return f"{codegen.c_identifier(robot)[:NAME_PREFIX]}_{lang}_{key[:24]}.py"


def _sign(body: str, key: str) -> str:
    """The file's text: a first line with ``key`` and the SHA-256 of ``body``'s UTF-8
    bytes, then ``body``."""
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return f"# dyn_plugin symbolic cache: key {key} sha256 {digest}\n" + body


def _verified_source(path: Path, key: str) -> str:
    """The file's text if its first line names ``key`` and the digest of the rest; else
    _StaleCache.  Nothing of the file is executed here."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _StaleCache(f"{path} cannot be read: {exc}") from None
    first, _, body = data.partition(b"\n")
    match = _HEADER.fullmatch(first)
    if match is None:
        raise _StaleCache(f"{path} has no digest line")
    if match.group(1).decode() != key:
        raise _StaleCache(f"{path} was generated for another model or generator")
    if not hmac.compare_digest(hashlib.sha256(body).hexdigest(), match.group(2).decode()):
        raise _StaleCache(f"{path} does not match its digest (edited or damaged)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _StaleCache(f"{path} is not UTF-8: {exc}") from None


def _module_name(path: Path) -> str:
    return "_dyn_plugin_symbolic_" + path.stem


REQUIRED = {"python": ("inverse_dynamics", "mass_matrix"),
            "numba": ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics",
                      "inverse_dynamics_state", "mass_matrix_state", "bias_forces_state",
                      "forward_dynamics_state")}


def _import_file(path: Path, key: str, lang: str) -> types.ModuleType:
    """Verify the cached file (:func:`_verified_source`), then execute exactly the bytes
    verified as a module (no bytecode cache: a regenerated file is never shadowed by the
    bytecode of an older one)."""
    source = _verified_source(path, key)
    try:
        module = types.ModuleType(_module_name(path))
        module.__file__ = str(path)
        sys.modules[module.__name__] = module          # numba's cache looks the module up
        exec(compile(source, str(path), "exec"), module.__dict__)
    except Exception as exc:  # a file that verifies but does not load: regenerate
        sys.modules.pop(_module_name(path), None)
        raise _StaleCache(f"{path} does not load: {type(exc).__name__}: {exc}") from None
    if getattr(module, "GENERATOR_KEY", None) != key or not all(
            callable(getattr(module, f, None)) for f in REQUIRED[lang]):
        raise _StaleCache(f"{path} was generated for another model or generator")
    return module


def _close(ours, ref) -> bool:
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    return ours.shape == ref.shape and bool(
        np.all(np.abs(ours - ref) <= SELF_CHECK_RTOL * np.maximum(1.0, np.abs(ref))))


# The self-check judges forward dynamics (by the torque it reproduces) only where
# cond(M) < 1e8: there a correct q̈ gives τ back to ~1e-8; τ, M and the bias are checked always.
WELL_CONDITIONED = 1e-8


def _self_check(module, model, lang: str) -> None:
    """Every function the backend serves from the file, at fixed states, against the
    reference recursion (catches a file that verifies and imports but computes wrong
    numbers): τ and M; with numba also the bias, the forward dynamics (ours, put back
    into the reference τ, where M is well conditioned: a correct q̈ reproduces τ only to
    about ε·cond(M)) and the four single-state kernels."""
    rng = np.random.default_rng(12345)
    n = model.n
    q, qd, qdd = rng.uniform(-1.0, 1.0, (3, 2, n))
    checks = []
    try:
        tau_ref = ne.inverse_dynamics(model, q, qd, qdd)               # gravity: the model's
        M_ref = ne.mass_matrix(model, q)
        checks += [("inverse_dynamics", module.inverse_dynamics(q, qd, qdd), tau_ref),
                   ("mass_matrix", module.mass_matrix(q), M_ref)]
        if lang == "numba":
            bias_ref = ne.inverse_dynamics(model, q, qd, qdd, Terms.BIAS)
            moments = np.linalg.eigvalsh(M_ref) if n else np.ones((len(q), 1))
            fd_defined = bool(np.all(moments[:, 0] > WELL_CONDITIONED * moments[:, -1]))
            checks += [("bias_forces", module.bias_forces(q, qd), bias_ref)]
            if fd_defined:
                fd = module.forward_dynamics(q, qd, tau_ref)
                checks += [("forward_dynamics", ne.inverse_dynamics(model, q, qd, fd), tau_ref)]
            tau_one, bias_one, fd_one, M_one = np.empty(n), np.empty(n), np.empty(n), np.empty((n, n))
            status = (module.inverse_dynamics_state(q[0], qd[0], qdd[0], tau_one),
                      module.mass_matrix_state(q[0], M_one),
                      module.bias_forces_state(q[0], qd[0], bias_one),
                      module.forward_dynamics_state(q[0], qd[0], tau_ref[0], fd_one))
            checks += [("inverse_dynamics_state", tau_one if status[0] == 0 else np.nan, tau_ref[0]),
                       ("mass_matrix_state", M_one if status[1] == 0 else np.nan, M_ref[0]),
                       ("bias_forces_state", bias_one if status[2] == 0 else np.nan, bias_ref[0])]
            if fd_defined:
                checks += [("forward_dynamics_state", ne.inverse_dynamics(model, q[:1], qd[:1], fd_one[None])[0]
                            if status[3] == 0 else np.nan, tau_ref[0])]
    except Exception as exc:  # a damaged file may fail in any way when called
        raise _StaleCache(f"cached module fails when called: {type(exc).__name__}: {exc}") from None
    bad = [name for name, ours, ref in checks if not _close(ours, ref)]
    if bad:
        raise _StaleCache(f"cached module disagrees with the Newton-Euler recursion ({', '.join(bad)})")


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_generated(model, lang: str = "python", directory: Optional[Path] = None):
    """The generated module for ``model`` (with ``inverse_dynamics`` and ``mass_matrix``),
    from the cache or freshly generated.  Returns ``(module, path, cache_hit)``.

    Raises :class:`BackendError` if the cache cannot be written, or if freshly generated
    code fails its self-check (a generator bug: please report the model)."""
    key = codegen.model_key(model, lang)
    directory = Path(directory) if directory is not None else cache_dir()
    path = directory / cache_file_name(model.name, lang, key)
    if path.exists():
        try:
            module = _import_file(path, key, lang)
            _self_check(module, model, lang)
            return module, path, True
        except _StaleCache:
            pass
    _log.info("generating %s code for robot %r (none in the cache %s)", lang, model.name, directory)
    generated = codegen.generate(model, lang, mass_matrix=True)
    try:
        _write_atomically(path, _sign(generated.source, key))
    except OSError as exc:
        raise BackendError(f"symbolic backend: cannot write the generated code to {path} ({exc}); "
                           "set DYN_PLUGIN_CACHE to a writable directory") from None
    _log.info("%s the code generated for robot %r against the Newton-Euler recursion", "compiling (numba) and checking"
              if lang == "numba" else "checking", model.name)
    try:
        module = _import_file(path, key, lang)
        _self_check(module, model, lang)
    except _StaleCache as exc:
        try:
            path.unlink()
        except OSError:
            pass
        raise BackendError(f"symbolic backend: the code generated for robot {model.name!r} ({lang}) "
                           f"disagrees with the reference recursion or does not load ({exc}); this is a bug "
                           "of dyn_plugin.symbolic.codegen: use the 'newton_euler' backend for this model") from None
    return module, path, False


class SymbolicBackend(SingleStateFastPath, Backend):
    """Customised Newton-Euler code for this model (:mod:`dyn_plugin.symbolic.codegen`).

    Options: ``gravity`` (3,) m/s² (default: the model's); ``lang`` ``"python"`` (NumPy,
    vectorised over the batch; default) or ``"numba"`` (compiled loop, compiled code
    cached by numba next to the module).  ``cache_path`` is the generated file,
    ``cache_hit`` whether it came from the cache, ``counts`` the operations per τ.

    M(q) is generated too (unit-acceleration columns, gravity off, on one expression
    graph).  With ``lang="numba"`` one state goes straight to typed per-state functions,
    batches run in compiled loops over chunks of SIMD lanes (parallel from 2048 states), and forward dynamics solves
    M q̈ = τ − bias by Cholesky in compiled code; with ``"python"`` forward dynamics, bias,
    gravity and Coriolis use the base class's defaults.
    """

    name = "symbolic"
    capabilities = frozenset({"derivatives"})
    description = "customised Newton-Euler code generated per robot (folded constants, shared subexpressions), cached on disk"
    kind = "generated"

    def __init__(self, model, gravity=None, lang: str = "python"):
        super().__init__(model, gravity)
        if lang not in LANGS:
            raise BackendError(f"symbolic backend: lang must be one of {LANGS}, got {lang!r}")
        self.lang = lang
        self._module, self.cache_path, self.cache_hit = load_generated(self.model, lang)
        module = self._module
        self._single = (SingleStateKernels(module.inverse_dynamics_state, module.bias_forces_state,
                                           module.forward_dynamics_state, module.mass_matrix_state,
                                           checks_result=True)
                        if lang == "numba" else NO_SINGLE_STATE_PATH)

    @property
    def counts(self) -> dict:
        """Multiplications, additions and sin/cos calls per evaluation of τ."""
        return dict(self._module.COUNTS)

    @staticmethod
    def _prepare(*arrays):
        """C-contiguous, writable float64 (numba's typed kernels refuse read-only arrays)."""
        return [np.require(a, np.float64, ("C", "W")) for a in arrays]

    def _loop(self, function: str, shape: tuple, *arrays, module=None, checked: bool = False):
        """A generated batch function of numba code (of ``module``, by default the τ code's)
        without its entry point's checks: blocks of chunks of SIMD lanes, in parallel threads
        for large batches.  The inputs' shapes were validated by Backend._run; with
        ``checked``, returns ``(result, every input and result entry finite)`` from the
        check the blocks make as they go (:func:`dyn_plugin.symbolic.emit._emit_lanes_batch`),
        else the result (Backend._run checks it)."""
        module = self._module if module is None else module
        if self.lang != "numba":
            return getattr(module, function)(*arrays)
        arrays = self._prepare(*arrays)
        out = np.empty(shape)
        total = run_blocks(getattr(module, f"_{function}_blocks"), len(out), module.LANES, *arrays,
                           out.reshape(len(out), -1))
        return (out, total == 0.0) if checked else out

    _CHECKING = frozenset({"_batch_inverse_dynamics", "_batch_mass_matrix", "_batch_bias_forces",
                           "_batch_forward_dynamics", "_batch_inverse_dynamics_derivatives"})

    def _checking_batch(self, method):
        if self.lang == "numba" and getattr(method, "__self__", None) is self and method.__name__ in self._CHECKING:
            return functools.partial(method, checked=True)
        return None

    @functools.cached_property
    def derivative_code(self):
        """The generated ∂τ/∂q, ∂τ/∂q̇ of this model (:mod:`dyn_plugin.symbolic.derivative_code`;
        ``.counts``, ``.source``), generated (and for numba compiled) on first use."""
        from ..symbolic.derivative_code import derivative_code

        return derivative_code(self.model, self.lang)

    @functools.cached_property
    def _derivatives_state(self):
        """The generated one-state derivatives (numba), typed: (q, qd, qdd, dq, dv) -> status."""
        return self.derivative_code.module.inverse_dynamics_derivatives_state

    @functools.cached_property
    def _implicit_single(self):
        """The compiled one-state (A, dq, dv, A⁻¹) -> status of :mod:`dyn_plugin.compiled.derivatives`."""
        from ..compiled import entry_points

        return entry_points.single("implicit")

    def inverse_dynamics_derivatives(self, q, qd, qdd):
        if self.lang == "numba" and getattr(q, "ndim", 0) == 1:      # one state: the typed generated function
            dq, dv = np.empty(self._square), np.empty(self._square)
            try:
                if self._derivatives_state(q, qd, qdd, dq, dv) == 0:
                    return dq, dv
            except TypeError:
                pass
        return super().inverse_dynamics_derivatives(q, qd, qdd)

    def forward_dynamics_derivatives(self, q, qd, tau):
        if self.lang == "numba" and getattr(q, "ndim", 0) == 1:      # one state: typed functions throughout
            qdd, M = np.empty(self._n), np.empty(self._square)
            dq, dv, inverse = np.empty(self._square), np.empty(self._square), np.empty(self._square)
            try:
                if self._single.forward_dynamics(q, qd, tau, qdd) == 0 and self._single.mass_matrix(q, M) == 0 \
                        and self._derivatives_state(q, qd, qdd, dq, dv) == 0 \
                        and self._implicit_single(M, dq, dv, inverse) == 0:
                    return dq, dv, inverse
            except TypeError:
                pass
        return super().forward_dynamics_derivatives(q, qd, tau)

    def _batch_inverse_dynamics_derivatives(self, q, qd, qdd, checked=False):
        from ..symbolic.derivative_code import STACKED

        n = self.model.n
        D = self._loop(STACKED, (len(q), 2, n, n), q, qd, qdd, module=self.derivative_code.module, checked=checked)
        if checked:
            D, finite = D
            return (D[:, 0], D[:, 1]), finite
        return D[:, 0], D[:, 1]

    def _batch_inverse_dynamics(self, q, qd, qdd, checked=False):
        return self._loop("inverse_dynamics", q.shape, q, qd, qdd, checked=checked)

    def _batch_mass_matrix(self, q, checked=False):
        return self._loop("mass_matrix", q.shape + q.shape[-1:], q, checked=checked)

    def _batch_bias_forces(self, q, qd, checked=False):
        if self.lang == "numba":
            return self._loop("bias_forces", q.shape, q, qd, checked=checked)
        return super()._batch_bias_forces(q, qd)

    def _batch_forward_dynamics(self, q, qd, tau, checked=False):
        if self.lang == "numba":
            return self._loop("forward_dynamics", q.shape, q, qd, tau, checked=checked)
        return super()._batch_forward_dynamics(q, qd, tau)


class SymbolicNumbaBackend(SymbolicBackend):
    """The symbolic backend compiled with numba (``lang="numba"``): the fastest of ours."""

    name = "symbolic_numba"
    description = "the symbolic backend's generated code compiled with numba (single states, parallel batches)"

    def __init__(self, model, gravity=None):
        super().__init__(model, gravity, lang="numba")
