"""The physical limit of the generated code: its flops per state, divided by the machine's
measured peak (:mod:`.peak`), is the fewest ns a state can take; a measured time's
"% of peak" is that limit ÷ the time (the share of the peak flop rate it reaches).

Flops per state, from the generated code's exact operation counts (one multiplication or
addition = 1 flop; the compiler contracts pairs into FMAs, which the peak counts as 2):

* ``ID`` (τ): ``be.counts``, multiplications + additions, plus :data:`TRIG_FLOPS` per sine
  or cosine (see below);
* ``bias`` (C q̇ + g): the same code with q̈ = 0, so the same count;
* ``M``: ``codegen.generate(model, "python", mass_matrix=True).mass_matrix_counts`` likewise;
* ``FD``: the bias and M in one program (they share the sines and cosines), plus τ − bias
  (n), the Cholesky factorisation (n³/3) and the two triangular solves (2n²), the usual
  leading terms;
* ``dID`` (∂τ/∂q, ∂τ/∂q̇): the generated derivative code's counts
  (:mod:`dyn_plugin.symbolic.derivative_code`).

Trigonometry: the batch code takes sin and cos of an angle together from
:func:`dyn_plugin.compiled.lanes.sin_cos` (argument reduction in four parts, fdlibm's
degree-13/14 polynomials, the quadrant applied by arithmetic), about 60 floating-point
operations for the pair, counted by hand; so :data:`TRIG_FLOPS` = 30 per sine or cosine
that the counts name.  A library sin/cos would cost more, and not vectorise.

Everything else (loads, stores, transposing a chunk into lanes, loop control) is free in
this limit: it is a floor no implementation of the same operation counts can go below,
not a prediction.
"""

from __future__ import annotations

from typing import Optional

from .peak import peak_for

__all__ = ["TRIG_FLOPS", "TRIG_PAIR_FLOPS", "flops_per_state", "limit_rows", "operation_flops"]

TRIG_PAIR_FLOPS = 60              # one sin and cos pair by dyn_plugin.compiled.lanes.sin_cos
TRIG_FLOPS = TRIG_PAIR_FLOPS // 2  # per sine or cosine in the counts


def _flops(counts: dict) -> int:
    return int(counts["multiplications"] + counts["additions"] + TRIG_FLOPS * counts["trig"])


def _fd_program_counts(model) -> dict:
    """Counts of the bias and M in one program (what the generated forward dynamics runs)."""
    try:
        from ...symbolic.customise import prepare
        from ...symbolic.graph import Graph
        from ...symbolic.recursion import _bias_and_mass_program

        return _bias_and_mass_program(Graph(), *prepare(model, True)).counts()
    except (ImportError, AttributeError, TypeError):  # the generator's internals changed: bias + M apart
        from ...symbolic.emit import generate, operation_counts
        from ...terms import Terms

        bias, mass = operation_counts(model, terms=Terms.BIAS), generate(model, "python", mass_matrix=True)
        mm = mass.mass_matrix_counts
        return {"multiplications": bias["multiplications"] + mm["multiplications"],
                "additions": bias["additions"] + mm["additions"], "trig": max(bias["trig"], mm["trig"])}


def operation_flops(be) -> dict:
    """``{op: {"flops": int, "counts": {...}, "how": str}}`` for a generated backend ``be``
    (one with ``counts``); {} for any other."""
    counts = getattr(be, "counts", None)
    if not isinstance(counts, dict) or not {"multiplications", "additions", "trig"} <= set(counts):
        return {}
    from ...symbolic.codegen import generate

    model, n = be.model, be.model.n
    mm = generate(model, "python", mass_matrix=True).mass_matrix_counts
    fd = _fd_program_counts(model)
    solve = n + round(n ** 3 / 3) + 2 * n * n
    trig = f"{TRIG_FLOPS} per sin or cos"
    out = {"ID": {"flops": _flops(counts), "counts": dict(counts), "how": f"τ: mult + add + {trig}"},
           "bias": {"flops": _flops(counts), "counts": dict(counts), "how": f"τ with q̈ = 0: mult + add + {trig}"}}
    if mm is not None:
        out["M"] = {"flops": _flops(mm), "counts": dict(mm), "how": f"M(q): mult + add + {trig}"}
    out["FD"] = {"flops": _flops(fd) + solve, "counts": dict(fd, solve=solve),
                 "how": f"bias and M in one program: mult + add + {trig}; + τ − bias (n) + Cholesky (n³/3) + "
                        f"2 triangular solves (2n²) = {solve} for n = {n}"}
    derivatives = be.derivative_code.counts if hasattr(be, "derivative_code") else None
    if derivatives is not None:
        out["dID"] = {"flops": _flops(derivatives), "counts": dict(derivatives),
                      "how": f"(∂τ/∂q, ∂τ/∂q̇), forward mode over τ's expression graph: mult + add + {trig}"}
    return out


def flops_per_state(be, op: str) -> Optional[int]:
    """Flops of one state of ``op`` in generated backend ``be`` (None: not generated)."""
    entry = operation_flops(be).get(op)
    return entry["flops"] if entry else None


def limit_rows(result) -> list:
    """One row per robot × generated backend × op with flops (``result.flops``): the limit
    in ns per state on 1 core and on each measured number of cores (flops ÷ measured peak),
    and, at the largest N, the measured time and its % of peak for each worker count."""
    peak = result.environment.get("peak_flops")
    rows = []
    for entry in result.flops:
        robot, backend, op, flops = entry["robot"], entry["backend"], entry["op"], entry["flops"]
        ms = [m for m in result.measurements if (m.robot, m.op, m.backend) == (robot, op, backend)]
        if not ms:
            continue
        largest = max(m.N for m in ms)
        limits = {k: flops / gflops for k, gflops in ((peak or {}).get("gflops") or {}).items() if gflops}
        measured = {}
        for m in sorted((m for m in ms if m.N == largest), key=lambda m: m.workers or 0):
            k = m.workers or 1
            ns = m.median_us * 1e3
            limit = limits.get(str(k))
            measured[str(k)] = {"ns_per_state": ns, "limit_ns_per_state": limit,
                                "percent_of_peak": 100 * limit / ns if limit and ns > 0 else None}
        all_cores = peak_for(peak, None)
        rows.append({"robot": robot, "backend": backend, "op": op, "flops_per_state": flops,
                     "counts": entry["counts"], "how": entry["how"],
                     "limit_ns_per_state": limits,
                     "limit_ns_1_core": limits.get("1"),
                     "limit_ns_all_cores": flops / all_cores if all_cores else None,
                     "N": largest, "measured": measured})
    return rows
