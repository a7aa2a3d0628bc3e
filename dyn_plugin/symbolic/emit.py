"""The customised programs printed as Python/NumPy, numba or C source: :func:`generate`,
:class:`GeneratedCode`, :func:`operation_counts`.

Operation counts (``counts`` of :class:`GeneratedCode`, :func:`operation_counts`), per
evaluation of τ for one state, gravity included:

* ``multiplications``: every product of two numbers, also by a model constant;
* ``additions``: every addition or subtraction;
* ``trig``: the sine and cosine calls (one each per revolute joint whose angle matters),
  counted apart from the above;
* free: sign changes (unary minus), reading inputs, storing outputs, and the model
  constants, which are folded into literals at generation time (the Macsyma counts in
  H. Jack's 1990 thesis, Appendix B.7, likewise leave out the constant pre-computation).

Each counted operation appears exactly once in the emitted source as one binary
``*``, ``+``, ``-`` or one ``sin``/``cos`` call (the tests count them); the numba code
takes the sine and cosine of an angle from one call, ``s, c = sin_cos(q)``
(:func:`dyn_plugin.compiled.lanes.sin_cos`), which counts as the ones it names.

Function names
--------------
``ident`` is the robot name made a C identifier (:func:`c_identifier`).

* ``python``: ``inverse_dynamics(q, qd, qdd)`` vectorised over the batch: arrays (N, n)
  → τ (N, n), or one state (n,) → (n,); with ``mass_matrix=True`` also
  ``mass_matrix(q)`` → (N, n, n) or (n, n).  Inputs of another shape, or not finite,
  raise ``dyn_plugin.errors.InputError`` (``ValueError`` where dyn_plugin is not
  installed).
* ``numba``: the same names and shapes, ``@njit`` loops over the batch in chunks of
  SIMD lanes, in parallel for large batches (read-only inputs are copied); also
  ``forward_dynamics`` and ``bias_forces``; ``<name>_state`` for one state (typed,
  returning a status) and ``_<name>_lanes``, the body over lanes.
* ``c``: ``void <ident>_inverse_dynamics(const double *q, const double *qd,
  const double *qdd, double *tau)`` for one state (arrays of n doubles) and
  ``void <ident>_inverse_dynamics_batch(long N, const double *q, ...)`` for N states stored
  row by row; with ``mass_matrix=True`` also ``<ident>_mass_matrix(const double *q,
  double *M)`` (M row-major n×n) and ``<ident>_mass_matrix_batch(long N, ...)``.

Units are SI: rad, rad/s, rad/s² or m, m/s, m/s²; τ in N·m or N; M in kg·m² (or kg).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Optional

from ..kinematics import REVOLUTE
from ..terms import Terms, as_terms
from .customise import prepare
from .graph import Graph
from .lanes_code import (NUMBA_OPTIONS, _compact_matrix, _copy_compact, _emit_lanes_batch, _emit_lanes_body,
                         _trig_joints)
from .recursion import _bias_and_mass_program, _id_program, _mass_matrix_program, _Program
from .version import GENERATOR_VERSION, model_key

_log = logging.getLogger(__name__)   # DEBUG: the steps of generate (shown by dyn-plugin's heartbeat)

LANGS = ("python", "numba", "c")

_PREC = {"+": 1, "-": 1, "*": 2, "neg": 3}


class _Printer:
    """Straight-line statements for one program: a node gets a variable when it is named,
    used twice or more, or a trig call; other nodes are written inline where used."""

    def __init__(self, program: _Program, lang: str):
        self.g, self.lang = program.graph, lang
        self.nodes = program.reachable()
        uses: dict = {}
        for node in self.nodes:
            for a in self.g.args[node]:
                uses[a] = uses.get(a, 0) + 1
        for _, _, node in program.outputs:
            uses[node] = uses.get(node, 0) + 1
        self.var_name: dict = {}
        counter = 0
        for node in self.nodes:
            op = self.g.op[node]
            if op in ("const", "var", "neg"):
                continue
            if node in self.g.names or uses.get(node, 0) > 1 or op in ("sin", "cos"):
                name = self.g.names.get(node)
                if name is None:
                    counter += 1
                    name = f"t{counter}"
                self.var_name[node] = name

    def literal(self, x: float) -> str:
        text = repr(float(x))
        return text if self.lang != "c" or "e" in text or "." in text else text + ".0"

    def expr(self, node: int, top: bool = False) -> str:
        """Text of ``node`` (its variable, or the expression inline)."""
        g = self.g
        op = g.op[node]
        if not top and node in self.var_name:
            return self.var_name[node]
        if op == "const":
            text = self.literal(g.value[node])
            return f"({text})" if g.value[node] < 0 and not top else text
        if op == "var":
            return g.value[node]
        if op in ("sin", "cos"):
            prefix = "" if self.lang == "c" else ("math." if self.lang == "numba" else "np.")
            return f"{prefix}{op}({self.expr(g.args[node][0])})"
        if op == "neg":
            inner = self.expr(g.args[node][0])
            text = "-" + (inner if self._prec(g.args[node][0]) >= 3 else f"({inner})")
            return text if top else f"({text})"
        a, b = g.args[node]
        left, right = self.expr(a), self.expr(b)
        if self._prec(a) < _PREC[op]:
            left = f"({left})"
        if self._prec(b) <= _PREC[op]:
            right = f"({right})"
        return f"{left} {op} {right}" if op != "*" else f"{left}*{right}"

    def output(self, node: int) -> str:
        """Text of an output: its variable if it has one, else the expression."""
        return self.var_name.get(node) or self.expr(node, top=True)

    def _prec(self, node: int) -> int:
        if node in self.var_name:
            return 4
        op = self.g.op[node]
        if op == "const" and self.g.value[node] < 0:
            return 4                     # printed in parentheses
        return _PREC.get(op, 4)

    def assignments(self) -> list:
        """``(name, expression)`` for every variable, in dependency order."""
        return [(self.var_name[node], self.expr(node, top=True)) for node in self.nodes
                if node in self.var_name]

    def arithmetic(self) -> list:
        """``(name, expression)`` for every variable but the sines and cosines, in order."""
        return [(self.var_name[node], self.expr(node, top=True)) for node in self.nodes
                if node in self.var_name and self.g.op[node] not in ("sin", "cos")]

    def trig_pairs(self) -> list:
        """``(angle, sine variable or "_", cosine variable or "_")`` per angle the program
        takes the sine or cosine of."""
        pairs: dict = {}
        for node, name in self.var_name.items():
            if self.g.op[node] in ("sin", "cos"):
                pair = pairs.setdefault(self.expr(self.g.args[node][0]), ["_", "_"])
                pair[self.g.op[node] == "cos"] = name
        return [(angle, sine, cosine) for angle, (sine, cosine) in pairs.items()]

    def inputs(self) -> list:
        """``(variable, array, column)`` of the inputs the program reads."""
        out = []
        for node in self.nodes:
            if self.g.op[node] == "var":
                name = self.g.value[node]
                array, index = re.fullmatch(r"([a-z]+)(\d+)", name).groups()
                out.append((name, array, int(index) - 1))
        order = {"q": 0, "qd": 1, "qdd": 2}
        return sorted(out, key=lambda t: (order[t[1]], t[2]))


def c_identifier(name: str) -> str:
    """The robot name as a C identifier (letters, digits, ``_``; not starting with a digit)."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII) or "robot"
    return ident if not ident[0].isdigit() else "robot_" + ident


_AS_STATES = '''
def _as_states(*arrays):
    """The arrays as (N, N_JOINTS) float64 (C-contiguous, writable) and whether they were
    one state of shape (N_JOINTS,); all must have the same shape, and be finite."""
    arrays = [np.require(a, np.float64, ("C", "W")) for a in arrays]
    shape = arrays[0].shape
    if len(shape) not in (1, 2) or shape[-1] != N_JOINTS or any(a.shape != shape for a in arrays):
        raise InputError(f"inputs must all have shape ({N_JOINTS},) or (N, {N_JOINTS}); got "
                         + ", ".join(str(a.shape) for a in arrays))
    for a in arrays:
        if not np.isfinite(a).all():
            raise InputError("inputs must be finite (no NaN or infinity)")
    return [a if a.ndim == 2 else a[None] for a in arrays], len(shape) == 1
'''

_IMPORT_INPUT_ERROR = ["try:", "    from dyn_plugin.errors import InputError",
                       "except ImportError:      # the generated code used without dyn_plugin",
                       "    InputError = ValueError"]


def _emit_python(printer, function, args, result, outputs, shape, docstring) -> str:
    """A NumPy function vectorised over the batch; one state (n,) gives a result without
    the batch axis."""
    lines = [f"def {function}({', '.join(args)}):", f'    """{docstring}"""',
             f"    ({', '.join(args)},), single = _as_states({', '.join(args)})",
             f"    {result} = np.empty({shape})"]
    lines += [f"    {name} = {array}[:, {col}]" for name, array, col in printer.inputs()]
    lines += [f"    {name} = {text}" for name, text in printer.assignments()]
    lines += [f"    {array}[:, {', '.join(map(str, index))}] = {printer.output(node)}" for array, index, node in outputs]
    lines.append(f"    return {result}[0] if single else {result}")
    return "\n".join(lines) + "\n"


_NUMBA_TYPES = {1: "float64[::1]", 2: "float64[:, ::1]"}


def _emit_numba_state(printer, function, args, results, outputs, n) -> str:
    """One state, typed: ``function(*args, *results) -> status`` (0; 1 wrong length; 2 a
    non-finite input; 4 a result that is not finite, float64 overflow, as the compiled
    kernels' NOT_FINITE_RESULT), so a caller can fall back to its validating path.
    ``results`` are (name, ndim) pairs: (n,) vectors or (n, n) matrices."""
    names = [name for name, _ in results]
    types = ", ".join([_NUMBA_TYPES[1]] * len(args) + [_NUMBA_TYPES[ndim] for _, ndim in results])
    lengths = " or ".join(f"{a}.shape[0] != {n}" for a in args + names)
    finite = " and ".join(f"math.isfinite({a}[i])" for a in args)
    lines = [f'@njit("int64({types})", {NUMBA_OPTIONS})',
             f"def {function}({', '.join(args + names)}):",
             f'    """One state into {", ".join(names)}; returns 0, or 1 (a length is not {n}) / 2 (non-finite input)."""',
             f"    if {lengths}:", "        return 1", f"    for i in range({n}):",
             f"        if not ({finite}):", "            return 2"]
    lines += [f"    {name} = {array}[{col}]" for name, array, col in printer.inputs()]
    lines += [f"    {sine}, {cosine} = sin_cos({angle})" for angle, sine, cosine in printer.trig_pairs()]
    lines += [f"    {name} = {text}" for name, text in printer.arithmetic()]
    lines += [f"    {array}[{', '.join(map(str, index))}] = {printer.output(node)}" for array, index, node in outputs]
    lines += _finite_result(results, n) + ["    return 0"]
    return "\n".join(lines) + "\n"


def _finite_result(results, n) -> list:
    """Lines returning status 4 when a result has a non-finite entry (a sum with one is NaN
    or inf; a finite result whose sum overflows is told apart by the caller).  A matrix is
    summed row by row into independent partial sums, short chains of additions instead of
    one long one.  Written as loops of ``+=``: not operations of the dynamics, so the
    operation counts leave them out."""
    lines = ["    total = 0.0"]
    for name, ndim in results:
        if ndim == 2:
            lines += [f"    for i in range({n}):", "        row = 0.0", f"        for j in range({n}):",
                      f"            row += {name}[i, j]", "        total += row"]
        else:
            lines += [f"    for i in range({n}):", f"        total += {name}[i]"]
    return lines + ["    if not math.isfinite(total):", "        return 4"]


def _emit_numba_entry(function, args, result, shape) -> str:
    """The Python entry point of a batch function: checks and converts the inputs
    (:data:`_AS_STATES`) and runs the blocks of states (:func:`dyn_plugin.compiled.lanes.run_blocks`:
    in parallel by batch size and the number of workers)."""
    return "\n".join([
        f"def {function}({', '.join(args)}):",
        f'    """{function.replace("_", " ").capitalize()}: inputs (N, n), or (n,) for one state."""',
        f"    ({', '.join(args)},), single = _as_states({', '.join(args)})",
        f"    {result} = np.empty({shape})",
        f"    run_blocks(_{function}_blocks, {args[0]}.shape[0], LANES, {', '.join(args)}, "
        f"{result}.reshape({args[0]}.shape[0], -1))",
        f"    return {result}[0] if single else {result}", ""])


def _numba_mass_matrix(program, n) -> list:
    """:func:`_numba_function` for M(q), its batch in compact form: the lanes body writes
    only the distinct entries that are not constant (in a solo12 chain's M, 107 of 324), and
    the copy out of each chunk completes M (:func:`_copy_compact`)."""
    printer = _Printer(program, "numba")
    outputs, entries = _compact_matrix(printer, program, n)
    compact = _Program(program.graph, outputs)
    slots = [("M", len(outputs))]
    compact_printer = _Printer(compact, "numba")
    return [_emit_numba_state(printer, "mass_matrix_state", ["q"], [("M", 2)], program.outputs, n),
            _emit_lanes_body(compact_printer, "_mass_matrix_lanes", outputs, slots, n),
            _emit_lanes_batch("mass_matrix", ["q"], "_mass_matrix_lanes", slots, _trig_joints(compact_printer, n), n,
                              copy=_copy_compact(entries, n)),
            _emit_numba_entry("mass_matrix", ["q"], "M", f"(q.shape[0], {n}, {n})")]


def _numba_function(function, program, args, results, n, shape=None, padded: bool = True) -> list:
    """The typed one-state function ``<function>_state``, the body over lanes
    ``_<function>_lanes`` (its results ``padded``, :class:`_Chunk`, unless forward dynamics
    solves with them) and, given the result's ``shape``, its batch loops and entry point."""
    printer = _Printer(program, "numba")
    state_results = [(name, 2 if name == "M" else 1) for name, _ in results]      # M (n, n), the others (n,)
    parts = [_emit_numba_state(printer, f"{function}_state", args, state_results, program.outputs, n),
             _emit_lanes_body(printer, f"_{function}_lanes", program.outputs, results, n, padded)]
    if shape is not None:
        parts += [_emit_lanes_batch(function, args, f"_{function}_lanes", results, _trig_joints(printer, n), n),
                  _emit_numba_entry(function, args, results[0][0], shape)]
    return parts


def _numba_forward_dynamics_state(n) -> str:
    """One state: the bias alone, and q̈ = M⁻¹ (τ − τ(q, q̇, 0)) from the generated τ and M,
    solved by Cholesky."""
    return "\n".join([
        f'@njit("int64(float64[::1], float64[::1], float64[::1])", {NUMBA_OPTIONS})',
        "def bias_forces_state(q, qd, tau):",
        '    """C(q, q̇) q̇ + g(q) of one state into tau; status as inverse_dynamics_state."""',
        "    return inverse_dynamics_state(q, qd, np.zeros(q.shape[0]), tau)",
        "",
        f"@njit({NUMBA_OPTIONS})",
        "def _forward_dynamics_core(q, qd, tau, qdd, M, rhs, zero):",
        "    status = bias_and_mass_state(q, qd, rhs, M)",
        f"    if status == 0 and (tau.shape[0] != {n} or qdd.shape[0] != {n}):",
        "        status = 1",
        "    if status != 0:",
        "        return status",
        f"    for i in range({n}):",
        "        if not math.isfinite(tau[i]):",
        "            return 2",
        "        rhs[i] = tau[i] - rhs[i]",
        "    spd_solve(M, rhs, qdd)",
        *_finite_result([("qdd", 1)], n),
        "    return 0",
        "",
        f'@njit("int64(float64[::1], float64[::1], float64[::1], float64[::1])", {NUMBA_OPTIONS})',
        "def forward_dynamics_state(q, qd, tau, qdd):",
        '    """q̈ of one state into qdd (M q̈ = τ − bias, Cholesky); status as inverse_dynamics_state."""',
        f"    return _forward_dynamics_core(q, qd, tau, qdd, np.empty(({n}, {n})), np.empty({n}), np.zeros({n}))",
        "",
    ])



def _emit_c(printer, function, args, result, outputs, n_out, n) -> str:
    """One state, then a batch wrapper over N states stored row by row."""
    params = ", ".join([f"const double *{a}" for a in args] + [f"double *{result}"])
    lines = [f"void {function}({params})", "{"]
    for name, array, col in printer.inputs():
        lines.append(f"    const double {name} = {array}[{col}];")
    for name, text in printer.assignments():
        lines.append(f"    const double {name} = {text};")
    for array, index, node in outputs:
        flat = index[0] if len(index) == 1 else index[0] * n + index[1]
        lines.append(f"    {array}[{flat}] = {printer.output(node)};")
    call = ", ".join([f"{a} + {n}*k" for a in args] + [f"{result} + {n_out}*k"])
    lines += ["}", "", f"void {function}_batch(long N, {params})", "{",
              "    for (long k = 0; k < N; ++k)", f"        {function}({call});", "}"]
    return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True)
class GeneratedCode:
    """Generated source for one robot.

    ``source`` (str) is the whole file; ``counts`` the operations per evaluation of τ
    (``multiplications``, ``additions``, ``trig``; rules in the module docstring);
    ``mass_matrix_counts`` the same for M(q) when it was generated, else None;
    ``functions`` maps ``"inverse_dynamics"`` (and ``"mass_matrix"``) to the function
    names in ``source``; ``key`` identifies model + generator (:func:`model_key`).
    """

    robot: str
    lang: str
    source: str
    counts: dict
    functions: dict
    mass_matrix_counts: Optional[dict] = None
    key: str = ""


def _counts_text(counts: dict) -> str:
    return f"{counts['multiplications']} multiplications, {counts['additions']} additions, {counts['trig']} sin/cos"


def _header(model, lang, counts, mm_counts, key, comment) -> list:
    kinds = "".join("R" if t == REVOLUTE else "P" for t in model.joint_types)
    lines = [f"Customised inverse dynamics of robot {model.name!r} ({model.n} joints, {kinds}),",
             f"gravity {tuple(float(x) for x in model.gravity)} m/s^2, language {lang}.",
             f"Generated by dyn_plugin.symbolic.codegen version {GENERATOR_VERSION}: Newton-Euler",
             "(Dhanaraj's lambda matrix, Khalil's base parameters) over an expression DAG with",
             "constant folding, shared subexpressions and dead-code elimination.",
             f"Per evaluation of tau: {_counts_text(counts)} (sign changes free).",
             ]
    if mm_counts is not None:
        lines.append(f"Per evaluation of M(q): {_counts_text(mm_counts)}.")
    lines.append(f"Model key: {key}. Do not edit: regenerate instead.")
    return [f"{comment} {line}" for line in lines]


def generate(model, lang: str = "python", *, mass_matrix: bool = False,
             regroup: bool = True) -> GeneratedCode:
    """Customised straight-line inverse dynamics (and optionally M(q)) for ``model``.

    ``lang``: ``"python"`` (NumPy, vectorised over a batch), ``"numba"`` (``@njit`` loop
    over the batch) or ``"c"``.  See the module docstring for the function names,
    shapes and the counting rules.
    """
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    _log.debug("generating %s code for robot %r: customising the model", lang, model.name)
    links, base_acc = prepare(model, regroup)
    g = Graph()
    _log.debug("generating %s code for robot %r: inverse dynamics", lang, model.name)
    id_program = _id_program(g, links, base_acc)
    if mass_matrix:
        _log.debug("generating %s code for robot %r: mass matrix", lang, model.name)
    mm_program = _mass_matrix_program(Graph(), links) if mass_matrix else None
    counts = id_program.counts()
    mm_counts = mm_program.counts() if mm_program else None
    key = model_key(model, lang, regroup)
    n = model.n
    ident = c_identifier(model.name)
    comment = "//" if lang == "c" else "#"
    parts = ["\n".join(_header(model, lang, counts, mm_counts, key, comment)), ""]
    if lang == "c":
        functions = {"inverse_dynamics": f"{ident}_inverse_dynamics"}
        parts += ["#include <math.h>", "",
                  _emit_c(_Printer(id_program, "c"), functions["inverse_dynamics"], ["q", "qd", "qdd"],
                          "tau", id_program.outputs, n, n)]
        if mm_program:
            functions["mass_matrix"] = f"{ident}_mass_matrix"
            parts.append(_emit_c(_Printer(mm_program, "c"), functions["mass_matrix"], ["q"],
                                 "M", mm_program.outputs, n * n, n))
    elif lang == "numba":
        functions = {"inverse_dynamics": "inverse_dynamics"}
        parts += ["import math", "import numpy as np", "from numba import njit", "",
                  "from dyn_plugin.compiled.cholesky import spd_solve",
                  "from dyn_plugin.compiled.lanes import LANES, cholesky_solve_lanes, run_blocks, sin_cos, sin_cos_lanes",
                  "from dyn_plugin.errors import InputError", "",
                  f"ROBOT = {model.name!r}", f"N_JOINTS = {n}", f"GENERATOR_KEY = {key!r}", f"COUNTS = {counts!r}",
                  _AS_STATES]
        parts += _numba_function("inverse_dynamics", id_program, ["q", "qd", "qdd"], [("tau", n)], n, "q.shape")
        if mm_program:
            functions.update(mass_matrix="mass_matrix", forward_dynamics="forward_dynamics", bias_forces="bias_forces")
            _log.debug("generating numba code for robot %r: bias and mass matrix (forward dynamics)", model.name)
            fd_program = _bias_and_mass_program(Graph(), links, base_acc)
            parts += _numba_mass_matrix(mm_program, n)
            parts += _numba_function("bias_and_mass", fd_program, ["q", "qd"], [("bias", n), ("M", n * n)], n,
                                     padded=False)
            id_trig = _trig_joints(_Printer(id_program, lang), n)
            parts += [_numba_forward_dynamics_state(n),
                      _emit_lanes_batch("bias_forces", ["q", "qd"], "_inverse_dynamics_lanes", [("tau", n)], id_trig, n),
                      _emit_numba_entry("bias_forces", ["q", "qd"], "tau", "q.shape"),
                      _emit_lanes_batch("forward_dynamics", ["q", "qd", "tau"], "_bias_and_mass_lanes",
                                        [("bias", n), ("M", n * n)], _trig_joints(_Printer(fd_program, lang), n), n,
                                        solve=True),
                      _emit_numba_entry("forward_dynamics", ["q", "qd", "tau"], "qdd", "q.shape")]
    else:
        functions = {"inverse_dynamics": "inverse_dynamics"}
        parts += ["import numpy as np", "", *_IMPORT_INPUT_ERROR, "", f"ROBOT = {model.name!r}",
                  f"N_JOINTS = {n}", f"GENERATOR_KEY = {key!r}", f"COUNTS = {counts!r}", _AS_STATES]
        parts.append(_emit_python(
            _Printer(id_program, lang), "inverse_dynamics", ["q", "qd", "qdd"], "tau", id_program.outputs,
            "q.shape", f"Joint torques/forces tau (N, {n}) for q, qd, qdd of shape (N, {n}); ({n},) for one state."))
        if mm_program:
            functions["mass_matrix"] = "mass_matrix"
            parts.append(_emit_python(
                _Printer(mm_program, lang), "mass_matrix", ["q"], "M", mm_program.outputs,
                f"(q.shape[0], {n}, {n})", f"Joint-space inertia matrix M (N, {n}, {n}) for q (N, {n}); ({n}, {n}) for q ({n},)."))
    source = "\n".join(parts)
    return GeneratedCode(robot=model.name, lang=lang, source=source, counts=counts,
                         functions=functions, mass_matrix_counts=mm_counts, key=key)


def operation_counts(model, regroup: bool = True, terms: Terms = Terms.ALL) -> dict:
    """Operations per evaluation of τ of the customised code:
    ``{"multiplications", "additions", "trig"}``; rules in the module docstring.
    ``terms`` (:class:`~dyn_plugin.terms.Terms`): the terms of τ counted, by default all
    (gravity included, as in :attr:`GeneratedCode.counts`); e.g. ``Terms.GRAVITY`` for
    g(q) alone.  The customisation is the one chosen for the whole τ."""
    links, base_acc = prepare(model, regroup)
    return _id_program(Graph(), links, base_acc, as_terms(terms)).counts()

