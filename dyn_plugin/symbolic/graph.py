"""The expression DAG of the code generator (:mod:`dyn_plugin.symbolic.codegen`), and
3-vectors and 3×3 matrices of its nodes.

The recursion is run over :class:`Graph` nodes instead of numbers; every model constant
is known then, so

* multiplications by 0 and 1 and additions of 0 disappear, constant products are folded
  and a sign change is pushed outwards until an addition absorbs it (constant folding);
* identical subexpressions are built once (hash-consing, with commutative operands in a
  canonical order), e.g. ``ω_xω_y`` is shared by the λ matrix and the gyroscopic moment;
* only what feeds τ is emitted (dead-code elimination): at each joint only the axis
  component of the wrench is used, the full wrench only where it propagates to a parent.
"""

from __future__ import annotations

from typing import Optional

import numpy as np


class Graph:
    """Expression DAG; nodes are ints.

    Operations: ``const``, ``var``, ``+``, ``-``, ``*``, ``neg``, ``sin``, ``cos``.  Each
    constructor folds constants and returns an existing node for an identical
    expression.  Canonical forms keep sign changes out of products and sums: ``neg`` is
    only ever the outermost operation of an expression, so it never costs anything.
    """

    def __init__(self):
        self.op, self.args, self.value = [], [], []
        self.names: dict = {}
        self._table: dict = {}
        self._used_names: set = set()
        self.ZERO = self.const(0.0)

    # -- construction -------------------------------------------------------------------

    def _node(self, op, args=(), value=None) -> int:
        key = (op, args, value)
        node = self._table.get(key)
        if node is None:
            node = len(self.op)
            self.op.append(op)
            self.args.append(args)
            self.value.append(value)
            self._table[key] = node
        return node

    def const(self, x: float) -> int:
        x = float(x)
        return self._node("const", (), 0.0 if x == 0.0 else x)

    def var(self, name: str) -> int:
        return self._node("var", (), name)

    def is_const(self, a: int, value: Optional[float] = None) -> bool:
        return self.op[a] == "const" and (value is None or self.value[a] == value)

    def _neg_arg(self, a: int):
        return self.args[a][0] if self.op[a] == "neg" else None

    def neg(self, a: int) -> int:
        if self.op[a] == "const":
            return self.const(-self.value[a])
        if self.op[a] == "neg":
            return self.args[a][0]
        return self._node("neg", (a,))

    def mul(self, a: int, b: int) -> int:
        if self.is_const(b):
            a, b = b, a
        if self.is_const(a):
            v = self.value[a]
            if self.is_const(b):
                return self.const(v * self.value[b])
            if v == 0.0:
                return self.ZERO
            if v == 1.0:
                return b
            if v < 0.0 or self.op[b] == "neg":     # −c·x = −(c·x): the sign moves out
                inner = self.mul(self.const(abs(v)), self.neg(b) if self.op[b] == "neg" else b)
                return inner if (v < 0.0) == (self.op[b] == "neg") else self.neg(inner)
            if self.op[b] == "*" and self.is_const(self.args[b][0]):   # c·(d·x) = (cd)·x
                return self.mul(self.const(v * self.value[self.args[b][0]]), self.args[b][1])
            return self._node("*", (a, b))
        na, nb = self._neg_arg(a), self._neg_arg(b)
        if na is not None or nb is not None:
            inner = self.mul(a if na is None else na, b if nb is None else nb)
            return inner if (na is None) == (nb is None) else self.neg(inner)
        return self._node("*", (min(a, b), max(a, b)))

    def add(self, a: int, b: int) -> int:
        if self.is_const(a) and self.is_const(b):
            return self.const(self.value[a] + self.value[b])
        if self.is_const(a, 0.0):
            return b
        if self.is_const(b, 0.0):
            return a
        na, nb = self._neg_arg(a), self._neg_arg(b)
        if na is not None and nb is not None:
            return self.neg(self.add(na, nb))
        if nb is not None:
            return self.sub(a, nb)
        if na is not None:
            return self.sub(b, na)
        if self.is_const(b) and self.value[b] < 0:
            return self.sub(a, self.const(-self.value[b]))
        if self.is_const(a) and self.value[a] < 0:
            return self.sub(b, self.const(-self.value[a]))
        return self._node("+", (min(a, b), max(a, b)))

    def sub(self, a: int, b: int) -> int:
        if self.is_const(a) and self.is_const(b):
            return self.const(self.value[a] - self.value[b])
        if self.is_const(b, 0.0):
            return a
        if self.is_const(a, 0.0):
            return self.neg(b)
        if a == b:
            return self.ZERO
        na, nb = self._neg_arg(a), self._neg_arg(b)
        if nb is not None:
            return self.add(a, nb)
        if na is not None:
            return self.neg(self.add(na, b))
        if self.is_const(b) and self.value[b] < 0:
            return self.add(a, self.const(-self.value[b]))
        if self.is_const(a) and self.value[a] < 0:
            return self.neg(self.add(self.const(-self.value[a]), b))
        if a > b:                                   # canonical order: b − a = −(a − b)
            return self.neg(self._node("-", (b, a)))
        return self._node("-", (a, b))

    def sin(self, a: int) -> int:
        return self._node("sin", (a,))

    def cos(self, a: int) -> int:
        return self._node("cos", (a,))

    # -- naming (readability of the emitted code) -----------------------------------------

    def name(self, node: int, name: str) -> None:
        """Give a computed node a variable name, unless it has one or is a leaf (a sign
        change names its operand ``<name>_neg``)."""
        if self.op[node] == "neg":
            node, name = self.args[node][0], name + "_neg"
        if self.op[node] in ("const", "var") or node in self.names:
            return
        unique, k = name, 2
        while unique in self._used_names:
            unique, k = f"{name}_{k}", k + 1
        self._used_names.add(unique)
        self.names[node] = unique

    def name_vec(self, vec, prefix: str) -> None:
        for node, axis in zip(vec, "xyz"):
            self.name(node, prefix + axis)


# -- 3-vectors of nodes ---------------------------------------------------------------------

def _vadd(g, a, b):
    return tuple(g.add(x, y) for x, y in zip(a, b))


def _vscale(g, s, v):
    return tuple(g.mul(s, x) for x in v)


def _dot(g, row, v):
    total = g.ZERO
    for a, b in zip(row, v):
        total = g.add(total, g.mul(a, b))
    return total


def _matvec(g, M, v):
    """``M v`` for a 3×3 tuple of nodes."""
    return tuple(_dot(g, row, v) for row in M)


def _const_mat(g, M):
    return tuple(tuple(g.const(x) for x in row) for row in np.asarray(M))


def _const_vec(g, v):
    return tuple(g.const(x) for x in np.asarray(v))


def _cross(g, a, b):
    return (g.sub(g.mul(a[1], b[2]), g.mul(a[2], b[1])),
            g.sub(g.mul(a[2], b[0]), g.mul(a[0], b[2])),
            g.sub(g.mul(a[0], b[1]), g.mul(a[1], b[0])))

