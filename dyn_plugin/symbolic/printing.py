"""The closed form as text for people: :func:`format_equations` (unicode or LaTeX, Fu's
S2 / C23 shorthand) and :func:`compact` (sums of angles contracted)."""

from __future__ import annotations

import sympy
from sympy.printing.pretty.pretty import PrettyPrinter
from sympy.printing.pretty.stringpict import prettyForm, stringPict
from sympy.simplify.fu import TR10i

from ..kinematics import REVOLUTE
from .closed_form import ClosedForm, _pairs


def compact(expr):
    """``expr`` (or a matrix) with products of sines and cosines contracted into sines and
    cosines of sums of angles (sympy's ``TR10i``; cos q2 cos q3 − sin q2 sin q3 -> cos(q2 + q3)).
    For reading only: cheap on 6-DoF arms, where ``trigsimp`` can take minutes."""
    if isinstance(expr, sympy.MatrixBase):
        return expr.applyfunc(compact)
    if not expr.has(sympy.sin, sympy.cos):
        return expr
    # TR10i pairs terms, O(terms²): contract each group of terms with the same parameter
    # monomial apart (only those can combine), which keeps 6-DoF symbolic arms fast
    groups: dict = {}
    for term in sympy.Add.make_args(sympy.expand(expr)):
        number, rest = term.as_coeff_Mul()
        factors = sympy.Mul.make_args(rest)
        key = sympy.Mul(*[f for f in factors if not f.has(sympy.sin, sympy.cos)])
        trig = sympy.Mul(*[f for f in factors if f.has(sympy.sin, sympy.cos)])
        groups.setdefault(key, []).append(number * trig)
    return sympy.Add(*[key * t for key, terms in groups.items()
                       for t in sympy.Add.make_args(TR10i(sympy.Add(*terms)))])


def _abbreviation(fn, latex: bool, wide: bool = False):
    """Fu's shorthand S2 = sin q2, C23 = cos(q2 + q3), C1-2 = cos(q1 − q2); None if the
    argument is not a sum of joint angles with coefficients ±1.  ``wide`` (a robot of ten
    joints or more): the indices joined by commas, C1,2 = cos(q1 + q2), C12 = cos q12."""
    coeffs = fn.args[0].as_coefficients_dict()
    if not coeffs or any(abs(c) != 1 or not (isinstance(v, sympy.Symbol) and v.name[:1] == "q")
                         for v, c in coeffs.items()):
        return None
    terms = sorted(coeffs.items(), key=lambda vc: (vc[1] < 0, int(vc[0].name[1:])))
    index = ("," if wide else "").join(("-" if c < 0 else "") + v.name[1:] for v, c in terms)
    letter = "S" if isinstance(fn, sympy.sin) else "C"
    return sympy.Symbol(f"{letter}_{{{index}}}" if latex else f"{letter}{index}")


def _abbreviate(expr, latex: bool, legend: dict, wide: bool = False):
    """Replace sin/cos of joint-angle sums by their shorthand symbols, noting them in ``legend``."""
    table = {}
    for fn in expr.atoms(sympy.sin, sympy.cos):
        short = _abbreviation(fn, latex, wide)
        if short is not None:
            table[fn] = short
            legend[short] = fn
    return expr.xreplace(table)


def _decimal_looking(r: sympy.Rational, all_numeric: bool) -> bool:
    """Numbers from data (terminating decimals such as 87/5 = 17.4, long denominators) as
    opposed to the small fractions of mechanics (1/2, 1/3, 1/4, 1/12) in symbolic models."""
    if all_numeric:
        return r.q != 1
    q = int(r.q)
    while q % 2 == 0:
        q //= 2
    while q % 5 == 0:
        q //= 5
    return r.q > 1000 or (q == 1 and r.q not in (1, 2, 4))


def _short_float(r: sympy.Rational, digits: int) -> sympy.Float:
    """``r`` rounded to ``digits`` significant digits, printed without trailing zeros."""
    text = f"{float(r):.{digits}g}"
    mantissa = text.split("e")[0].replace("-", "").replace(".", "").lstrip("0").rstrip("0")
    return sympy.Float(text, max(1, len(mantissa)))


def _display(expr, all_numeric: bool, digits: int = 6) -> sympy.Expr:
    """Numbers from data shown as decimals of ``digits`` significant digits."""
    decimals = {r: _short_float(r, digits) for r in expr.atoms(sympy.Rational) if _decimal_looking(r, all_numeric)}
    return expr.xreplace(decimals) if decimals else expr


def _pretty_wrapped(label: str, expr, width: int = 100) -> str:
    """sympy's unicode pretty print of ``label = expr``, wrapped between terms (never inside one)."""
    printer = PrettyPrinter({"use_unicode": True, "wrap_line": False})
    line = prettyForm(label + " = ")
    lines, indent = [], " " * len(label + " = ")
    for position, term in enumerate(expr.as_ordered_terms()):
        negative = term.could_extract_minus_sign()
        form = printer._print(-term if negative else term)
        sign = ("-" if negative else "") if position == 0 else (" - " if negative else " + ")
        piece = prettyForm(*stringPict.next(prettyForm(sign), form))
        if position and line.width() + piece.width() > width:
            lines.append(line)
            line = prettyForm(indent)
        line = prettyForm(*stringPict.next(line, piece))
    lines.append(line)
    return "\n".join("\n".join(row.rstrip() for row in form.picture) for form in lines)


def _entry_lines(name: str, matrix, latex: bool, legend: dict, symmetric: bool = False,
                 all_numeric: bool = False, wide: bool = False) -> list:
    """``name[i,j] = expr`` for the non-zero entries (upper triangle when symmetric); in
    LaTeX ``name_{i,j}`` once an index has two digits (B_{110}: row 1, column 10 or row 11,
    column 0?)."""
    lines = []
    comma = "," if max(matrix.rows, matrix.cols) >= 10 else ""
    for i in range(matrix.rows):
        for j in range(matrix.cols):
            if (symmetric and j < i) or matrix[i, j] == 0:
                continue
            expr = _abbreviate(_display(compact(matrix[i, j]), all_numeric), latex, legend, wide)
            vector = name == "G"
            if latex:
                label = f"{name}_{{{i + 1}}}" if vector else f"{name}_{{{i + 1}{comma}{j + 1}}}"
                lines.append(f"{label} &= {sympy.latex(expr)} \\\\")
            else:
                label = f"{name}[{i + 1}]" if vector else f"{name}[{i + 1},{j + 1}]"
                lines.append(_pretty_wrapped(label, expr))
    return lines or ([f"\\text{{all entries of }} {name} &= 0 \\\\"] if latex else [f"all entries of {name} are 0"])


def _header(cf: ClosedForm, latex: bool) -> list:
    sm = cf.model
    kinds = " ".join("R" if t == REVOLUTE else "P" for t in sm.joint_types)
    pairs = ", ".join(f"qd{j + 1}*qd{k + 1}" for j, k in _pairs(sm.n)) or "none"
    params = ", ".join(f"{s.name} = {sm.values[s]:g}" if s in sm.values else s.name for s in sm.parameters)
    joints = f"{sm.n} joint{'s' if sm.n != 1 else ''}"
    lines = [f"Equations of motion of {sm.name} ({joints}: {kinds}), {cf.route.replace('_', '-')} route",
             "F = M(q) qdd + 2 B(q) [qd qd] + C(q) [qd^2] + G(q)   (Horn & Linge, ROBMAT §4.2)",
             f"[qd qd] = ({pairs});  [qd^2] = ({', '.join(f'qd{k + 1}^2' for k in range(sm.n))})",
             f"parameters: {params or 'all numeric (SI units)'}"]
    return [f"% {line}" for line in lines] if latex else lines


def _legend(legend: dict, latex: bool) -> str:
    items = sorted(legend.items(), key=lambda kv: (len(kv[0].name), kv[0].name))
    if latex:
        return "% where " + ", ".join(f"${sympy.latex(k)} = {sympy.latex(v)}$" for k, v in items)
    return "where " + ", ".join(f"{k.name} = {v}" for k, v in items)


def _assemble(cf: ClosedForm, latex: bool) -> str:
    out, legend = _header(cf, latex), {}
    parts = (("M", cf.M, True, "M(q), symmetric: entries on and above the diagonal"),
             ("B", cf.B, False, "B(q), Coriolis coefficients, columns in [qd qd] order"),
             ("C", cf.C, False, "C(q), centrifugal coefficients, columns qd1^2 ... qdn^2"),
             ("G", cf.G, False, "G(q), gravity"))
    for name, matrix, symmetric, title in parts:
        body = _entry_lines(name, matrix, latex, legend, symmetric, all_numeric=not cf.model.parameters,
                            wide=cf.model.n >= 10)
        if latex:
            out += ["", f"% {title}", "\\begin{align*}", *body, "\\end{align*}"]
        else:
            out += ["", f"{title}:", *body]
    if legend:
        out += ["", _legend(legend, latex)]
    return "\n".join(out) + "\n"
