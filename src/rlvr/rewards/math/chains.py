"""Chained equations: ``x = 5+5+1 = 11`` answers with its last side when every side equals it (by
default), and any chain counts as its last side under the opt-in ``chained`` policy."""

from __future__ import annotations

from . import forms
from .policy import MathPolicy
from .scalar import parse_scalar
from .sym import expr_equal
from .text import ParseFailure, clean


def _value_text(s: str, policy: MathPolicy) -> str:
    lab = forms.split_label(s) if policy.assignment else None
    return lab[1] if lab else s


def settled(text: str, policy: MathPolicy) -> str:
    """``x = 5+5+1 = 11`` -> ``x = 11`` when every side after the label equals the last (a worked
    answer); anything else, a false chain such as ``3+3 = 2`` included, is left as written."""
    if text.count("=") < 2:
        return text
    try:
        t = clean(text, policy.decimal_comma).text
        eq = forms.top_equals(t)
        sides = [t[i + 1 : j] for i, j in zip([-1, *eq], [*eq, len(t)], strict=True)]
        label = sides.pop(0) if forms.is_label(sides[0]) else ""
        if len(sides) < 2 or not all(sides):
            return text
        last = parse_scalar(sides[-1])
        if not all(expr_equal(parse_scalar(x), last, policy) for x in sides[:-1]):
            return text
    except ParseFailure:
        return text
    return f"{label}={sides[-1]}" if label else sides[-1]


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
