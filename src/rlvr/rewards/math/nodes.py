"""Shapes of structured answers the comparison asks about (``math.core``): whether a gold list asks
for an order, whether a pair is an interval or may be a point."""

from __future__ import annotations

from collections.abc import Callable

from ..rules.patterns import compile_linear
from .text import Node, clean, fast_rational

_REL = compile_linear(r"[<>]|\\[lg]eq?(?:[^a-zA-Z]|$)|\\[lg]eqslant")


def unordered_gold(g: Node) -> bool:
    """A gold list of numbers not in increasing order asks for no order (a task that wants one
    asks for increasing order): a set answers it in any order (``\\{-12, 6\\}`` for ``6, -12``)."""
    values = []
    for c in g.items:
        if c.kind != "scalar":
            return False
        v = fast_rational(clean(c.value).text)
        if v is None:
            return False
        values.append(v)
    return any(b <= a for a, b in zip(values, values[1:], strict=False))


def inequality(n: Node) -> bool:
    """A ``seq`` read from an inequality (``0 < x < 1``): an interval, never a point."""
    return n.kind == "seq" and bool(n.value) and bool(_REL.search(n.value))


def plainly_interval(n: Node) -> bool:
    """A written pair that can only be an interval: a square bracket or an infinite end. ``(0, 1)``
    may be a point, so an inequality never equals it."""
    return "[" in n.brackets or "]" in n.brackets or any("infty" in c.value or "∞" in c.value for c in n.items)


def match_unordered(gs: tuple[Node, ...], ps: tuple[Node, ...], equal: Callable[[Node, Node], bool]) -> bool:
    """A one-to-one matching of the items in any order."""
    if len(gs) != len(ps):
        return False
    used = [False] * len(ps)
    for g in gs:
        for j, p in enumerate(ps):
            if not used[j] and equal(g, p):
                used[j] = True
                break
        else:
            return False
    return True


def cover(gs: tuple[Node, ...], ps: tuple[Node, ...], equal: Callable[[Node, Node], bool]) -> bool:
    """Every item of each side equals one of the other's (sets: repeats do not count)."""
    if len(ps) > 4 * max(len(gs), 1):
        return False
    return all(any(equal(g, p) for p in ps) for g in gs) and all(any(equal(g, p) for g in gs) for p in ps)
