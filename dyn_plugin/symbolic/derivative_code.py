"""Generated partial derivatives of inverse dynamics, ∂τ/∂q and ∂τ/∂q̇, with exact
operation counts: :func:`derivative_code`, :func:`derivative_operation_counts`.

The τ program of the code generator (:func:`~dyn_plugin.symbolic.recursion._id_program`,
the customised Newton-Euler recursion of dyn_plugin/symbolic/recursion.py) is
differentiated in forward mode over its own expression DAG
(:class:`~dyn_plugin.symbolic.graph.Graph`): for each variable x ∈ {q_j, q̇_j}, every node
that depends on x gets a tangent node dx, in topological (creation) order, by

* ``d(a ± b) = da ± db``, ``d(−a) = −da``, ``d(a b) = da·b + a·db`` (product rule),
* ``d(sin a) = cos a · da``, ``d(cos a) = −(sin a · da)`` (chain rule),

built with the Graph's own operations, so constants fold (a tangent times a model
constant, ``d q_j / d q_j = 1``), tangents shared between variables or with τ itself are
built once, and a node that does not depend on x has no tangent (derivative 0).  The
outputs ``D[0, i, j] = ∂τ_i/∂q_j`` and ``D[1, i, j] = ∂τ_i/∂q̇_j`` form a program printed by
the emitters of dyn_plugin/symbolic/emit.py, unchanged: Python/NumPy (vectorised over the
batch), numba (the lanes body, blocks and entry point of the τ code) or C (one state and a
batch wrapper).  ∂τ/∂q̈ = M(q) is the mass matrix (``generate(..., mass_matrix=True)``).

Operation counts follow the rules of :mod:`dyn_plugin.symbolic.emit` (every binary
``*``, ``+``, ``-`` and every sin/cos once; sign changes, inputs, outputs and constants
free) and cover everything the derivative code computes, the values of τ's subexpressions
it needs included (not τ itself, which is not an output).

Generated functions (``python`` and ``numba``): ``inverse_dynamics_derivatives(q, qd,
qdd)`` → ``(dtau_dq, dtau_dqd)``, each (N, n, n) for inputs (N, n), (n, n) for one state
(n,); ``inverse_dynamics_derivatives_stacked`` → D (N, 2, n, n); numba also
``inverse_dynamics_derivatives_state(q, qd, qdd, dq, dqd) -> status`` for one state, typed
(the status codes of the τ code's ``*_state`` functions).  ``c``:
``void <ident>_inverse_dynamics_derivatives(const double *q, const double *qd, const
double *qdd, double *D)`` with D the 2·n·n doubles of D (row-major), and ``..._batch(long
N, ...)``.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import types
from pathlib import Path
from typing import Optional

from . import code_cache
from .customise import prepare
from .emit import (_AS_STATES, _IMPORT_INPUT_ERROR, LANGS, _counts_text, _emit_c, _emit_numba_entry, _emit_numba_state,
                   _emit_python, _Printer, c_identifier)
from .graph import Graph
from .lanes_code import _emit_lanes_batch, _emit_lanes_body, _trig_joints
from .recursion import _id_program, _Program
from .version import GENERATOR_VERSION, model_key

_log = logging.getLogger(__name__)

DERIVATIVE_VERSION = "2"      # bump when the derivative code changes (part of its key)
STACKED = "inverse_dynamics_derivatives_stacked"
STATE = "inverse_dynamics_derivatives_state"     # numba: one state, typed, (q, qd, qdd, dq, dqd) -> status


# -- forward-mode differentiation over the DAG -----------------------------------------------

def _tangent(g: Graph, node: int, d: dict) -> int:
    """The tangent of ``node`` from its operands' tangents ``d`` (absent: 0), by the rules
    of the module docstring; Graph operations fold the zeros away."""
    op, args = g.op[node], g.args[node]
    da = [d.get(a, g.ZERO) for a in args]
    if op == "neg":
        return g.neg(da[0])
    if op == "+":
        return g.add(da[0], da[1])
    if op == "-":
        return g.sub(da[0], da[1])
    if op == "*":
        a, b = args
        return g.add(g.mul(da[0], b), g.mul(a, da[1]))
    if op == "sin":
        return g.mul(g.cos(args[0]), da[0])
    if op == "cos":
        return g.neg(g.mul(g.sin(args[0]), da[0]))
    raise ValueError(f"no derivative rule for operation {op!r}")


def _differentiate(g: Graph, nodes: list, var: int, label: str) -> dict:
    """Tangents ``{node: d node / d var}`` of the nodes (topological order) that depend on
    ``var`` (a ``var`` node); a tangent that folds to 0 is dropped.  A tangent of a named
    node is named ``d<name>_d<label>`` (readability of the source only)."""
    d = {var: g.const(1.0)}
    for node in nodes:
        if g.op[node] in ("const", "var") or not any(a in d for a in g.args[node]):
            continue
        t = _tangent(g, node, d)
        if not g.is_const(t, 0.0):
            d[node] = t
            if node in g.names:
                g.name(t, f"d{g.names[node]}_d{label}")
    return d


def _derivative_program(g: Graph, links, base_acc) -> tuple:
    """``(τ program, derivative program)`` over one graph; the latter's outputs are
    ``("D", (k, i, j), node)``: k = 0 for ∂τ_i/∂q_j, 1 for ∂τ_i/∂q̇_j."""
    tau = _id_program(g, links, base_acc)
    nodes = tau.reachable()
    n = len(links)
    outputs = []
    for k, prefix in enumerate(("q", "qd")):
        for j in range(n):
            label = f"{prefix}{j + 1}"
            d = _differentiate(g, nodes, g.var(label), label)
            for i, (_, _, node) in enumerate(tau.outputs):
                t = d.get(node, g.ZERO)
                g.name(t, f"dtau{i + 1}_d{label}")
                outputs.append(("D", (k, i, j), t))
    return tau, _Program(g, outputs)


def _flat(outputs: list, n: int) -> list:
    """Outputs indexed into the flat 2·n·n entries of D (row-major), as the numba lanes and
    C emitters index a result."""
    return [(array, ((k * n + i) * n + j,), node) for array, (k, i, j), node in outputs]


# -- source ----------------------------------------------------------------------------------

_SPLIT = '''
def inverse_dynamics_derivatives(q, qd, qdd):
    """(dtau/dq, dtau/dqd), each (N, n, n) for q, qd, qdd of shape (N, n); (n, n) for one state (n,)."""
    D = inverse_dynamics_derivatives_stacked(q, qd, qdd)
    return D[..., 0, :, :], D[..., 1, :, :]
'''


def _header(model, lang, counts, tau_counts, key, comment) -> str:
    lines = [f"Partial derivatives dtau/dq, dtau/dqd of the customised inverse dynamics of robot {model.name!r}",
             f"({model.n} joints), language {lang}: forward mode over the expression DAG of tau",
             f"(dyn_plugin.symbolic.derivative_code {DERIVATIVE_VERSION}, generator {GENERATOR_VERSION}).",
             f"Per evaluation of both: {_counts_text(counts)} (sign changes free);",
             f"tau alone: {_counts_text(tau_counts)}.", f"Model key: {key}. Do not edit: regenerate instead."]
    return "\n".join(f"{comment} {line}" for line in lines)


def _python_body(program, n) -> list:
    doc = f"D (N, 2, {n}, {n}): D[:, 0] = dtau/dq, D[:, 1] = dtau/dqd for q, qd, qdd (N, {n}); (2, {n}, {n}) for one state."
    return [_emit_python(_Printer(program, "python"), STACKED, ["q", "qd", "qdd"], "D", program.outputs,
                         f"(q.shape[0], 2, {n}, {n})", doc)]


def _numba_body(program, n) -> list:
    printer = _Printer(program, "numba")
    args, results = ["q", "qd", "qdd"], [("D", 2 * n * n)]
    state_outputs = [(("dtau_dq", "dtau_dqd")[k], (i, j), node) for _, (k, i, j), node in program.outputs]
    return [_emit_numba_state(_Printer(program, "numba"), STATE, args, [("dtau_dq", 2), ("dtau_dqd", 2)],
                              state_outputs, n),
            _emit_lanes_body(printer, f"_{STACKED}_lanes", _flat(program.outputs, n), results, n),
            _emit_lanes_batch(STACKED, args, f"_{STACKED}_lanes", results, _trig_joints(printer, n), n),
            _emit_numba_entry(STACKED, args, "D", f"(q.shape[0], 2, {n}, {n})")]


def _c_body(program, model) -> list:
    n = model.n
    return ["#include <math.h>", "",
            _emit_c(_Printer(program, "c"), f"{c_identifier(model.name)}_inverse_dynamics_derivatives",
                    ["q", "qd", "qdd"], "D", _flat(program.outputs, n), 2 * n * n, n)]


_IMPORTS = {"python": ["import numpy as np", "", *_IMPORT_INPUT_ERROR],
            "numba": ["import math", "import numpy as np", "from numba import njit", "",
                      "from dyn_plugin.compiled.lanes import LANES, run_blocks, sin_cos, sin_cos_lanes",
                      "from dyn_plugin.errors import InputError"]}


# -- the result --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DerivativeCode:
    """Generated derivative code for one robot (module docstring).

    ``source`` (str) the whole file; ``counts`` the operations per evaluation of
    (∂τ/∂q, ∂τ/∂q̇) for one state, ``tau_counts`` those of τ alone (same customisation;
    rules in :mod:`dyn_plugin.symbolic.emit`); ``key`` identifies model + generator.
    ``function`` (python, numba): ``(q, qd, qdd) -> (dtau_dq, dtau_dqd)``.
    """

    robot: str
    lang: str
    source: str
    counts: dict
    tau_counts: dict
    key: str

    @functools.cached_property
    def module(self) -> types.ModuleType:
        """The generated code as a module: executed in memory (python), or from a file in
        the symbolic cache directory (numba caches its machine code there)."""
        if self.lang == "c":
            raise ValueError("C derivative code has no Python callable: compile .source")
        if self.lang == "numba":
            return _import_cached(self)
        module = types.ModuleType(f"dyn_plugin_derivatives_{c_identifier(self.robot)}")
        exec(compile(self.source, f"<derivatives of {self.robot}>", "exec"), module.__dict__)
        return module

    @property
    def function(self):
        """The generated ``inverse_dynamics_derivatives(q, qd, qdd) -> (dtau_dq, dtau_dqd)``."""
        return self.module.inverse_dynamics_derivatives


def _import_cached(code: DerivativeCode, directory: Optional[Path] = None) -> types.ModuleType:
    """The numba source as a module of a signed file in the symbolic cache
    (:mod:`dyn_plugin.symbolic.code_cache`: verified digest, atomic writes)."""
    directory = Path(directory) if directory is not None else code_cache.cache_dir()
    path = directory / code_cache.cache_file_name(code.robot, "numba_derivatives", code.key)
    try:
        source = code_cache.verified_source(path, code.key)
        _log.debug("loading the derivative code of robot %r from %s", code.robot, path)
    except code_cache.StaleCache:
        _log.info("compiling (numba) the derivative code generated for robot %r", code.robot)
        code_cache.write_atomically(path, code_cache.sign(code.source, code.key))
        source = code_cache.verified_source(path, code.key)
    return code_cache.execute(path, source)


def derivative_code(model, lang: str = "python", regroup: bool = True) -> DerivativeCode:
    """Straight-line ∂τ/∂q and ∂τ/∂q̇ for ``model`` (module docstring) in ``lang``
    (``"python"``, ``"numba"`` or ``"c"``); ``regroup``: base inertial parameters, as
    :func:`~dyn_plugin.symbolic.emit.generate`."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    _log.debug("generating the derivative code of robot %r (%s)", model.name, lang)
    links, base_acc = prepare(model, regroup)
    tau, program = _derivative_program(Graph(), links, base_acc)
    counts, tau_counts = program.counts(), tau.counts()
    key = model_key(model, f"{lang}/derivatives {DERIVATIVE_VERSION}", regroup)
    n = model.n
    parts = [_header(model, lang, counts, tau_counts, key, "//" if lang == "c" else "#"), ""]
    if lang == "c":
        parts += _c_body(program, model)
    else:
        parts += [*_IMPORTS[lang], "", f"ROBOT = {model.name!r}", f"N_JOINTS = {n}", f"GENERATOR_KEY = {key!r}",
                  f"COUNTS = {counts!r}", _AS_STATES]
        parts += (_python_body(program, n) if lang == "python" else _numba_body(program, n)) + [_SPLIT]
    return DerivativeCode(robot=model.name, lang=lang, source="\n".join(parts), counts=counts,
                          tau_counts=tau_counts, key=key)


def derivative_operation_counts(model, regroup: bool = True) -> dict:
    """Operations per evaluation of (∂τ/∂q, ∂τ/∂q̇) of :func:`derivative_code`:
    ``{"multiplications", "additions", "trig"}`` (rules of dyn_plugin/symbolic/emit.py)."""
    links, base_acc = prepare(model, regroup)
    return _derivative_program(Graph(), links, base_acc)[1].counts()
