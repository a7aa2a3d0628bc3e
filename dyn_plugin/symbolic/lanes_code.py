"""The generated numba code's batches over SIMD lanes: the chunk layout, the straight-line
program as the body of one loop over a chunk's lanes, and the blocks of chunks that
:func:`dyn_plugin.compiled.lanes.run_blocks` runs on every core (used by
:mod:`.emit` and :mod:`.derivative_code`)."""

from __future__ import annotations

NUMBA_OPTIONS = 'cache=True, error_model="numpy", fastmath={"contract"}'    # of every generated numba function


# -- batches over SIMD lanes --------------------------------------------------------------
# A batch runs in chunks of LANES states stored flat over lanes (dyn_plugin.compiled.lanes):
# the straight-line program is the body of one loop over the chunk's lanes, which LLVM
# vectorises (four states per AVX instruction), sin/cos come from a vectorised pass before it,
# and blocks of chunks run in parallel threads.  Entries ("rows") of the chunk's input X: q (n), q̇ (n),
# q̈ (n), then sin q_j (n) and cos q_j (n).
#
# The loop reads X and writes its results in ONE array W (X's rows, a row of checks, then the
# results' entries: :class:`_Chunk`), indexed by unsigned integers.  LLVM vectorises it only so: with separate
# arrays it must check at run time that they do not overlap, and from about a hundred stores
# (an 18-joint M) it gives up; a signed index carries numba's negative-index wraparound,
# which hides that the addresses advance by one double per lane.  Measured on the solo12
# chain's M body: 650-750 ns per state with separate arrays, 190 ns in W (AVX-512).

_INPUT_ROW = {"q": 0, "qd": 1, "qdd": 2}


def _lane_rows(printer, n) -> dict:
    """Variable → row of X for every input and every sin/cos the program reads."""
    rows = {name: _INPUT_ROW[array] * n + col for name, array, col in printer.inputs()}
    g = printer.g
    for node, name in printer.var_name.items():
        if g.op[node] in ("sin", "cos"):
            (angle,) = g.args[node]
            rows[name] = (3 if g.op[node] == "sin" else 4) * n + rows[g.value[angle]]
    return rows


def _trig_joints(printer, n) -> list:
    """Joints whose sin/cos the program reads."""
    return sorted({row % n for name, row in _lane_rows(printer, n).items() if row >= 3 * n})


ROW_PAD = 8                                # doubles, a cache line, between padded result entries
PADDED_STRIDE = f"(LANES + {ROW_PAD})"


class _Chunk:
    """The layout of W (see above) for ``results`` (name, width) pairs: X's 5n rows of
    LANES, the check row, then the results' entries, each ``stride`` doubles apart: LANES, or
    with ``padded`` LANES + ROW_PAD, so that a copy out, which reads across the entries of
    a lane, does not find them all in the same few cache sets (rows 1 KB apart alias in L1:
    the solo12 chain's M, 107 distinct entries, copied out in 300 ns per state at a stride
    of LANES, 155 at LANES + 8)."""

    def __init__(self, results, n, padded: bool = True):
        self.stride = PADDED_STRIDE if padded else "LANES"
        self.check, self._start, self._first, entries = 5 * n, 5 * n + 1, {}, 0
        for name, width in results:
            self._first[name], entries = entries, entries + width
        self.size = self.offset(entries)

    def offset(self, entry: int) -> str:
        """W's offset of result entry ``entry`` (over all results, in order), as text."""
        return f"{self._start} * LANES + {entry} * {self.stride}"

    def entry(self, name: str, index: int) -> str:
        """W's offset of entry ``index`` of result ``name``."""
        return self.offset(self._first[name] + index)

    def view(self, name: str, width: int) -> str:
        """The slice of W that holds result ``name`` (``width`` entries)."""
        return f"W[{self.entry(name, 0)}:{self.entry(name, width)}]"


def _lane(offset) -> str:
    """W's entry at ``offset`` (text) of lane l, by an unsigned index (see above)."""
    return f"W[np.uint64({offset}) + l]"


def _emit_lanes_body(printer, function, outputs, results, n, padded: bool = True) -> str:
    """``function(W, m)``: the program for lanes 0..m−1 of the chunk W (its layout:
    :class:`_Chunk`, ``padded`` or not): inputs from X's rows, results into theirs
    (``results`` are (name, width) pairs; a matrix row-major).  Each lane adds (sum of its
    distinct results)·0 to the check row: 0 when they are finite (or NaN for a sum that
    overflows, which the caller's exact check then clears), a short tree of vector additions
    instead of a pass over the result rows."""
    chunk = _Chunk(results, n, padded)
    lines = [f"@njit({NUMBA_OPTIONS})", f"def {function}(W, m):", "    for l in range(np.uint64(m)):"]
    lines += [f"        {name} = {_lane(f'{row} * LANES')}" for name, row in _lane_rows(printer, n).items()]
    lines += [f"        {name} = {text}" for name, text in printer.arithmetic()]
    lines += [f"        {_lane(chunk.entry(array, index[0] if len(index) == 1 else index[0] * n + index[1]))} = "
              f"{printer.output(node)}" for array, index, node in outputs]
    terms = [f"({printer.output(node)})" for node in dict.fromkeys(node for _, _, node in outputs)
             if printer.g.op[node] != "const"]
    if terms:
        lines.append(f"        {_lane(f'{chunk.check} * LANES')} += {_balanced_sum(terms)} * 0.0")
    else:                                             # no joint: nothing to compute
        lines.append("        pass")
    return "\n".join(lines) + "\n"


def _balanced_sum(terms: list) -> str:
    """``terms`` added pairwise, a tree of depth log₂ of their number."""
    while len(terms) > 1:
        terms = [f"({a} + {b})" for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) - len(terms) % 2:]
    return terms[0]


def _emit_lanes_batch(function, args, body, results, trig, n, solve: bool = False, copy=None) -> str:
    """``_<function>_blocks(*args, out, start, stop)`` (``args`` padded to three,
    :func:`_three_inputs`): states start..stop−1 (start a multiple of LANES) chunk by
    chunk: inputs ``args`` (N, n) transposed into X (absent q̇/q̈ rows are 0, set once; X
    and the results are in one chunk W, :class:`_Chunk`), sin/cos of the ``trig`` joints,
    the ``body``, and the first result written back to ``out`` (N, width) -- with
    ``solve``, q̈ = M⁻¹(τ − bias) instead, from the body's results bias and M; with ``copy``
    (lines), those lines write each chunk's ``out`` instead (:func:`_copy_compact`).
    Without the GIL, so that threads run blocks side by side
    (:func:`dyn_plugin.compiled.lanes.run_blocks`).

    Returns 0.0 when every entry of the inputs and of the result is finite, else NaN (or
    rarely a false NaN, from a finite result whose sum overflows): each lane adds x·0 of
    every input entry (0 for a finite x, NaN for NaN or ±inf) and the body adds its results'
    (:func:`_emit_lanes_body`; with ``solve``, q̈'s too, into which τ enters), vectorised like
    the rest, so a batch needs no separate pass over its arrays to refuse non-finite ones
    (Backend._run, which checks exactly when this is not 0)."""
    present = {_INPUT_ROW[a]: a for a in args if a in _INPUT_ROW}
    assert sorted(present) == list(range(len(present))), "the inputs in X are q, then q̇, then q̈"
    result, width = results[0]
    chunk = _Chunk(results, n, padded=not solve)       # cholesky_solve_lanes reads rows LANES apart
    fill = [f"                X[({row * n} + j) * LANES + l] = {present[row]}[c + l, j]" for row in present]
    absent = f"{len(present) * n} * LANES:{3 * n} * LANES"
    lines = [f"@njit(nogil=True, {NUMBA_OPTIONS})",
             f"def _{function}_blocks({', '.join(_three_inputs(args))}, out, start, stop):",
             f"    W = np.empty({chunk.size})",
             f"    X = W[:{5 * n} * LANES]",
             *([f"    X[{absent}] = 0.0"] if len(present) < 3 else []),      # absent q̇, q̈: once, nothing writes them
             *[f"    {name} = {chunk.view(name, width)}" for name, width in results],
             f"    check = W[{chunk.check} * LANES:{chunk.check + 1} * LANES]",
             "    check[:] = 0.0",
             "    for c in range(start, stop, LANES):",
             "        m = min(stop - c, LANES)",
             "        for l in range(m):", f"            for j in range({n}):", *fill,
             *_check_rows("X", 0, len(present) * n)]
    lines += [f"        sin_cos_lanes(X, {j}, {3 * n + j}, {4 * n + j}, m)" for j in trig]
    lines.append(f"        {body}(W, m)")
    if solve:
        lines += ["        for l in range(m):", f"            for i in range({n}):",
                  f"                bias[i * LANES + l] = {args[-1]}[c + l, i] - bias[i * LANES + l]",
                  f"        cholesky_solve_lanes(M, bias, bias, {n}, m)", *_check_rows(result, 0, width)]
    lines += copy or ["        for l in range(m):", f"            for i in range({width}):",
                      f"                out[c + l, i] = {result}[i * {chunk.stride} + l]"]
    lines += ["    return check.sum()", ""]
    return "\n".join(lines) + "\n"


def _three_inputs(args) -> list:
    """``args`` padded to three names, the signature every ``_<f>_blocks`` shares so that
    one compiled parallel loop runs them all (:func:`dyn_plugin.compiled.lanes.run_blocks` passes the
    first input again for the padding, which is not read)."""
    return list(args) + [f"_unused_{k}" for k in range(len(args), 3)]


def _check_rows(array, first, stop) -> list:
    """Lines adding x·0 of the entries ``first``..``stop``−1 of ``array`` (over lanes) to
    each lane's ``check`` (see :func:`_emit_lanes_batch`)."""
    return [f"        for r in range({first}, {stop}):", "            for l in range(m):",
            f"                check[l] += {array}[r * LANES + l] * 0.0"]


def _compact_matrix(printer, program, n) -> tuple:
    """A mass-matrix program's distinct entries that are not constant, as outputs ``("M",
    (slot,), node)``, and each of the n·n entries of M: its slot (int) or its constant
    (the literal's text)."""
    slots, outputs, entries = {}, [], [None] * (n * n)
    for _, (i, k), node in program.outputs:
        if program.graph.op[node] == "const":
            entries[i * n + k] = printer.literal(program.graph.value[node])
            continue
        if node not in slots:
            slots[node] = len(slots)
            outputs.append(("M", (slots[node],), node))
        entries[i * n + k] = slots[node]
    return outputs, entries


def _copy_compact(entries, n) -> list:
    """Lines writing each lane's M (n·n ``entries``, :func:`_compact_matrix`) into ``out``,
    entry by entry of the lower triangle, each with its mirror: a slot is read from the
    chunk once and written twice at once, so that no value stays live across the copy.  A
    transposing copy reads a chunk's row per entry; the slots are padded (:class:`_Chunk`).
    A robot without joints has nothing to write."""
    body = []
    for i in range(n):
        for k in range(i + 1):
            value = entries[i * n + k]
            if isinstance(value, int):                   # a slot, read from the chunk
                body.append(f"            x{value} = M[{value} * {PADDED_STRIDE} + l]")
                value = f"x{value}"
            body.append(f"            out[c + l, {i * n + k}] = {value}")
            if k != i:
                body.append(f"            out[c + l, {k * n + i}] = {value}")
    return ["        for l in range(m):"] + (body or ["            pass"])
