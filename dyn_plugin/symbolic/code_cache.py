"""The cache of generated code: one signed file per robot, language and generator version.

The ``symbolic`` backends (dyn_plugin/backends/symbolic_backend.py) load the code
:mod:`dyn_plugin.symbolic.codegen` writes for a model through :func:`load_generated`; the
numba derivative code (:mod:`dyn_plugin.symbolic.derivative_code`) is kept in the same
directory with the same signature (:func:`sign`, :func:`verified_source`).

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
from ..terms import Terms
from . import codegen

SELF_CHECK_RTOL = 1e-9
_log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """Where generated modules live (see the module docstring); not created here."""
    explicit = os.environ.get("DYN_PLUGIN_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dyn_plugin" / "symbolic"


class StaleCache(Exception):
    """A cached module that must be regenerated (never leaves :mod:`dyn_plugin.symbolic`)."""


_HEADER = re.compile(rb"# dyn_plugin symbolic cache: key ([0-9a-f]{64}) sha256 ([0-9a-f]{64})")
NAME_PREFIX = 40          # characters of the robot name in a cache file's name


def cache_file_name(robot: str, lang: str, key: str) -> str:
    """``<robot name as an identifier, ≤ 40 characters>_<lang>_<24 hex digits of key>.py``:
    bounded whatever the name (file systems refuse names over 255 bytes)."""
    return f"{codegen.c_identifier(robot)[:NAME_PREFIX]}_{lang}_{key[:24]}.py"


def sign(body: str, key: str) -> str:
    """The file's text: a first line with ``key`` and the SHA-256 of ``body``'s UTF-8
    bytes, then ``body``."""
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return f"# dyn_plugin symbolic cache: key {key} sha256 {digest}\n" + body


def verified_source(path: Path, key: str) -> str:
    """The file's text if its first line names ``key`` and the digest of the rest; else
    StaleCache.  Nothing of the file is executed here."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StaleCache(f"{path} cannot be read: {exc}") from None
    first, _, body = data.partition(b"\n")
    match = _HEADER.fullmatch(first)
    if match is None:
        raise StaleCache(f"{path} has no digest line")
    if match.group(1).decode() != key:
        raise StaleCache(f"{path} was generated for another model or generator")
    if not hmac.compare_digest(hashlib.sha256(body).hexdigest(), match.group(2).decode()):
        raise StaleCache(f"{path} does not match its digest (edited or damaged)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StaleCache(f"{path} is not UTF-8: {exc}") from None


def _module_name(path: Path) -> str:
    return "_dyn_plugin_symbolic_" + path.stem


def execute(path: Path, source: str) -> types.ModuleType:
    """``source`` (the verified text of the cache file ``path``) executed as a module named
    after the file and registered in ``sys.modules`` (numba's cache looks the module up)."""
    module = types.ModuleType(_module_name(path))
    module.__file__ = str(path)
    sys.modules[module.__name__] = module
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


REQUIRED = {"python": ("inverse_dynamics", "mass_matrix"),
            "numba": ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics",
                      "inverse_dynamics_state", "mass_matrix_state", "bias_forces_state",
                      "forward_dynamics_state")}


def _import_file(path: Path, key: str, lang: str) -> types.ModuleType:
    """Verify the cached file (:func:`verified_source`), then execute exactly the bytes
    verified as a module (no bytecode cache: a regenerated file is never shadowed by the
    bytecode of an older one)."""
    source = verified_source(path, key)
    try:
        module = execute(path, source)
    except Exception as exc:  # a file that verifies but does not load: regenerate
        sys.modules.pop(_module_name(path), None)
        raise StaleCache(f"{path} does not load: {type(exc).__name__}: {exc}") from None
    if getattr(module, "GENERATOR_KEY", None) != key or not all(
            callable(getattr(module, f, None)) for f in REQUIRED[lang]):
        raise StaleCache(f"{path} was generated for another model or generator")
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
        raise StaleCache(f"cached module fails when called: {type(exc).__name__}: {exc}") from None
    bad = [name for name, ours, ref in checks if not _close(ours, ref)]
    if bad:
        raise StaleCache(f"cached module disagrees with the Newton-Euler recursion ({', '.join(bad)})")


def write_atomically(path: Path, text: str) -> None:
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
        except StaleCache:
            pass
    _log.info("generating %s code for robot %r (none in the cache %s)", lang, model.name, directory)
    generated = codegen.generate(model, lang, mass_matrix=True)
    try:
        write_atomically(path, sign(generated.source, key))
    except OSError as exc:
        raise BackendError(f"symbolic backend: cannot write the generated code to {path} ({exc}); "
                           "set DYN_PLUGIN_CACHE to a writable directory") from None
    _log.info("%s the code generated for robot %r against the Newton-Euler recursion", "compiling (numba) and checking"
              if lang == "numba" else "checking", model.name)
    try:
        module = _import_file(path, key, lang)
        _self_check(module, model, lang)
    except StaleCache as exc:
        try:
            path.unlink()
        except OSError:
            pass
        raise BackendError(f"symbolic backend: the code generated for robot {model.name!r} ({lang}) "
                           f"disagrees with the reference recursion or does not load ({exc}); this is a bug "
                           "of dyn_plugin.symbolic.codegen: use the 'newton_euler' backend for this model") from None
    return module, path, False
