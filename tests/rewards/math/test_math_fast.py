"""The fast LaTeX subset parser agrees with latex2sympy2_extended wherever it answers."""

from __future__ import annotations

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards.math import fast as mathfast

leaf = st.one_of(st.integers(0, 99).map(str), st.sampled_from(["x", "y", r"\pi", "e", "0.5", "2.25"]))


def combine(children):
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "*", r"\cdot "]), children).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
        st.tuples(children, children).map(lambda t: rf"\frac{{{t[0]}}}{{{t[1]}}}"),
        children.map(lambda c: rf"\sqrt{{{c}}}"),
        children.map(lambda c: f"({c})"),
        st.tuples(children, st.integers(0, 4)).map(lambda t: f"({t[0]})^{{{t[1]}}}"),
    )


expressions = st.recursive(leaf, combine, max_leaves=6)


def grammar(s: str):
    from latex2sympy2_extended import latex2sympy

    return latex2sympy(s)


@settings(max_examples=40, deadline=None)
@given(expressions)
def test_fast_parser_agrees_with_the_grammar(s):
    fast = mathfast.parse(s)
    if fast is None:
        return
    try:
        slow = grammar(s)
    except Exception:  # noqa: BLE001 - the grammar rejects some of what we accept, e.g. 0/0 forms
        return
    point = {sympy.Symbol("x"): sympy.Rational(37, 100), sympy.Symbol("y"): sympy.Rational(-53, 100)}
    a, b = sympy.N(sympy.sympify(fast).subs(point), 20), sympy.N(sympy.sympify(slow).subs(point), 20)
    if a.has(sympy.zoo, sympy.nan) or b.has(sympy.zoo, sympy.nan):
        return
    assert abs(a - b) <= 1e-12 * max(1, abs(a))


@pytest.mark.parametrize(
    "text",
    [
        r"\sin x",
        "ab",
        r"10^{10^{10}}",
        "5!!",
        "1001!",
        r"\binom{2000}{3}",
        "2^{5000}",
        r"\sqrt[3]{2}",
        "I",
        "x<3",
        "1/0",
        "x" * 400,
        "(" * 100 + "1" + ")" * 100,
    ],
)
def test_outside_the_subset_returns_none(text):
    assert mathfast.parse(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "5!",
        "1000!",
        "2+2n!",
        r"\binom{2k+1}{3} - k(2k+1)",
        r"\dbinom{30}{15}",
        "2^{3900}",
        r"(\frac{2012}{2013})^{500}",
    ],
)
def test_factorials_binomials_and_large_powers_agree_with_the_grammar(text):
    fast = mathfast.parse(text)
    assert fast is not None and sympy.simplify(fast - grammar(text)) == 0


def test_common_forms_parse():
    x = sympy.Symbol("x")
    assert mathfast.parse(r"2\sqrt{3}") == 2 * sympy.sqrt(3)
    assert mathfast.parse(r"\frac{23\pi}{29}") == sympy.Rational(23, 29) * sympy.pi
    assert mathfast.parse("(x+1)(x-1)") == (x + 1) * (x - 1)
    assert mathfast.parse("2x + 1 = 0") == sympy.Eq(2 * x + 1, 0, evaluate=False)
    assert mathfast.parse("2^{10}") == 1024
