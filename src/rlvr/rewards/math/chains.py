"""Chained equations: ``x = 5+5+1 = 11`` and ``2 + 3 = 5`` answer with their last side when every
side equals it (by default), and any chain counts as its last side under the opt-in ``chained``
policy."""

from __future__ import annotations

from typing import Any

from ..rules import untrusted
from ..rules.patterns import compile_linear
from . import forms
from .policy import MathPolicy
from .scalar import parse_scalar
from .sym import expr_equal
from .text import ParseFailure, clean


def _value_text(s: str, policy: MathPolicy) -> str:
    lab = forms.split_label(s) if policy.assignment else None
    return lab[1] if lab else s


_CALCULUS = compile_linear(r"\\(?:int|iint|iiint|oint|lim)(?:[^a-zA-Z]|$)")


def _constant(value: Any) -> bool:
    return not getattr(value, "free_symbols", None)


def settled(text: str, policy: MathPolicy) -> str:
    """``x = 5+5+1 = 11`` -> ``x = 11`` and ``2 + 3 = 5`` -> ``5`` when every side after the label
    equals the last (a worked answer; without a label every side must be a constant, so
    ``x + 1 = 5`` stays an equation); anything else, a false chain such as ``3+3 = 2`` or a side
    with an integral or a limit, is left as written. Every comparison of the chain runs here,
    under the caller's guard: an exception is the caller's to charge (``compare_texts``)."""
    if "=" not in text:
        return text
    try:
        t = clean(text, policy.decimal_comma).text
    except ParseFailure:
        return text
    eq = forms.top_equals(t)
    if not eq:
        return text
    sides = [t[i + 1 : j] for i, j in zip([-1, *eq], [*eq, len(t)], strict=True)]
    label = sides.pop(0) if forms.is_label(sides[0]) else ""
    if len(sides) < 2 or not all(untrusted.strip(x) for x in sides) or any(_CALCULUS.search(x) for x in sides):
        return text
    try:
        values = [parse_scalar(untrusted.strip(x)) for x in sides]
    except ParseFailure:
        return text
    if not label and not all(_constant(v) for v in values):
        return text
    if not all(expr_equal(v, values[-1], policy) for v in values[:-1]):
        return text
    last = untrusted.strip(sides[-1])
    return f"{label}={last}" if label else last


def last_sides(gold: str, pred: str, policy: MathPolicy) -> tuple[str, str]:
    """The opt-in ``chained`` policy: a chain ``a = b = c`` counts as its last side ``c`` (on
    either side), and so does a prediction's one equation ``2 + 3 = 5``, unless the gold's value
    is itself an equation (then equations are compared as equations)."""
    try:
        cg, cp = clean(gold, policy.decimal_comma), clean(pred, policy.decimal_comma)
    except ParseFailure:
        return gold, pred
    eg = forms.top_equals(cg.text)
    if len(eg) >= 2:
        gold = cg.text[eg[-1] + 1 :]
    elif "=" in _value_text(cg.text, policy):
        return gold, pred  # an equation is the answer
    ep = forms.top_equals(cp.text)
    if len(ep) >= 2 or (len(ep) == 1 and not forms.split_label(cp.text)):
        pred = cp.text[ep[-1] + 1 :]
    return gold, pred


def settled_gold(gold: str, policy: MathPolicy) -> str:
    """The gold's chain settled; a gold whose chain cannot be compared stays as written (and is
    then judged by ``gold_problem`` like any other gold)."""
    try:
        return settled(gold, policy)
    except (MemoryError, RecursionError):
        raise
    except Exception:  # noqa: BLE001 - the gold's own failure: it is read as written
        return gold
