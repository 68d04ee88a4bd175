"""The fast LaTeX subset parser agrees with latex2sympy2_extended wherever it answers."""

from __future__ import annotations

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards.math import fast as mathfast
from rlvr.rewards.math.sym import too_big

leaf = st.one_of(
    st.integers(0, 99).map(str),
    st.sampled_from(["x", "y", r"\pi", "e", "0.5", "2.25", "xy", r"\alpha", "a_1", "v_{0}", "c_{12}", r"\theta_2"]),
)
FUNCTIONS = [r"\sin", r"\cos", r"\tan", r"\ln", r"\exp", r"\arctan", r"\log_2", r"\log_{10}"]


def combine(children):
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "*", r"\cdot "]), children).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
        st.tuples(children, children).map(lambda t: rf"\frac{{{t[0]}}}{{{t[1]}}}"),
        children.map(lambda c: rf"\sqrt{{{c}}}"),
        children.map(lambda c: f"({c})"),
        st.tuples(children, st.integers(0, 4)).map(lambda t: f"({t[0]})^{{{t[1]}}}"),
        st.tuples(st.sampled_from(FUNCTIONS), children).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(
            st.sampled_from(FUNCTIONS), st.sampled_from(["x", "2x", "x y", r"\alpha", r"\frac{\pi}{3}", "a_1"])
        ).map(lambda t: f"{t[0]} {t[1]}"),
        st.tuples(st.sampled_from(FUNCTIONS[:3]), st.integers(2, 3), children).map(
            lambda t: f"{t[0]}^{{{t[1]}}}({t[2]})"
        ),
        st.tuples(st.integers(2, 5), children).map(lambda t: rf"\sqrt[{t[0]}]{{{t[1]}}}"),
    )


expressions = st.recursive(leaf, combine, max_leaves=6)


def grammar(s: str):
    from latex2sympy2_extended import latex2sympy

    return latex2sympy(s)


@settings(max_examples=150, deadline=None)
@given(expressions)
def test_fast_parser_agrees_with_the_grammar(s):
    fast = mathfast.parse(s)
    if fast is None:
        return
    try:
        slow = grammar(s)
    except Exception:  # noqa: BLE001 - the grammar rejects some of what we accept, e.g. 0/0 forms
        return
    names = sorted({str(v) for v in sympy.sympify(fast).free_symbols} | {str(v) for v in slow.free_symbols})
    # same name, same value: a subscripted or Greek name the two parsers spelled apart would differ
    values = [sympy.Rational(37, 100), sympy.Rational(-53, 100), sympy.Rational(171, 100), sympy.Rational(29, 10)]
    fpoint = {v: values[names.index(str(v)) % 4] for v in sympy.sympify(fast).free_symbols}
    spoint = {v: values[names.index(str(v)) % 4] for v in slow.free_symbols}
    a, b = sympy.N(sympy.sympify(fast).subs(fpoint), 20), sympy.N(sympy.sympify(slow).subs(spoint), 20)
    if not (a.is_number and b.is_number) or not (a.is_finite and b.is_finite):
        return
    if a.has(sympy.zoo, sympy.nan) or b.has(sympy.zoo, sympy.nan):
        return
    assert abs(a - b) <= 1e-12 * max(1, abs(a))


@pytest.mark.parametrize(
    "text",
    [
        r"\sin x / 2",
        r"\sin x \cdot y",
        r"\log x",
        r"\sin^{-1} x",
        "min",
        r"\sqrt[x]{2}",
        "I",
        r"\Phi(x)",
        r"\gcd(a, b)",
        "z1 + z2",
        r"x \approx 1 \approx 2",
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
        "2^{5000}",
        "(n-1)!",
        "1/[(x+1)(x+2)]",
        "(5/4)^10",
        "2^12 * 3^14",
        "(n-2)2^n + 1",
        r"2e^{1/2}-3",
        r"(\frac{2012}{2013})^{500}",
    ],
)
def test_factorials_binomials_and_large_powers_agree_with_the_grammar(text):
    fast = mathfast.parse(text)
    assert fast is not None and sympy.simplify(fast - grammar(text)) == 0


def test_functions_roots_greek_letters_and_subscripts_parse_as_the_grammar_reads_them():
    x = sympy.Symbol("x")
    assert mathfast.parse(r"\cos^3 x") == sympy.cos(x) ** 3
    assert mathfast.parse(r"\sin 2x") == sympy.sin(2 * x)
    assert mathfast.parse(r"\sqrt[3]{4}") == sympy.Pow(4, sympy.Rational(1, 3))
    assert mathfast.parse(r"\theta_1 + v_{0} + x_{12}") == sympy.Symbol("theta_1") + sympy.Symbol("v_0") + sympy.Symbol(
        "x_{12}"
    )
    assert mathfast.parse(r"\ln(e - 1)") == sympy.log(sympy.E - 1)


def test_a_double_factorial_is_the_double_factorial():
    assert mathfast.parse("5!!") == 15  # the grammar reads (5!)!
    assert mathfast.parse("(2n)!!") == sympy.factorial2(2 * sympy.Symbol("n"))


def test_common_forms_parse():
    x = sympy.Symbol("x")
    assert mathfast.parse(r"2\sqrt{3}") == 2 * sympy.sqrt(3)
    assert mathfast.parse(r"\frac{23\pi}{29}") == sympy.Rational(23, 29) * sympy.pi
    assert mathfast.parse("(x+1)(x-1)") == (x + 1) * (x - 1)
    assert mathfast.parse("2x + 1 = 0") == sympy.Eq(2 * x + 1, 0, evaluate=False)
    assert mathfast.parse("2^{10}") == 1024


HUGE_READ_UNEVALUATED = [
    r"10^{10^{10}}",
    r"10^{10^{10^{10}}}",
    "1001!",
    "2016!",
    r"1009! \cdot 1010!",
    r"\binom{6000}{3}",
    r"\binom{10^6}{5\cdot10^5}",
    "(10^7)!",
    "2^{20000}",
    r"3^{2018^{2}}",
    r"\frac{2013^{2013}-2012^{2013}}{2013^{2012}}",
    r"2013 (1 - (\frac{2012}{2013})^{2013})",
]


@pytest.mark.parametrize("text", HUGE_READ_UNEVALUATED)
def test_huge_powers_factorials_and_binomials_are_read_as_the_grammar_reads_them_unevaluated(text):
    fast = mathfast.parse(text)
    slow = grammar(text)
    assert fast is not None and len(str(fast)) < 200  # nothing was computed while parsing
    # the same tree, or (a size both can evaluate) the same value to 50 digits
    assert sympy.srepr(fast) == sympy.srepr(slow) or (not too_big(fast) and abs(sympy.N(fast - slow, 50)) < 1e-40)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (r"R \sqrt{3}", sympy.sqrt(3) * sympy.Symbol("r")),
        (r"\frac{16}{25}N", sympy.Rational(16, 25) * sympy.Symbol("n")),
        ("A_1 + P_{N}", sympy.Symbol("a_1") + sympy.Symbol("p_n")),
        (r"\hbar \omega + \Delta", sympy.Symbol("hbar") * sympy.Symbol("omega") + sympy.Symbol("delta")),
        (
            "|x-y||y-z|",
            sympy.Abs(sympy.Symbol("x") - sympy.Symbol("y")) * sympy.Abs(sympy.Symbol("y") - sympy.Symbol("z")),
        ),
        ("||x|-1|", sympy.Abs(sympy.Abs(sympy.Symbol("x")) - 1)),
        (r"x \leq 3", sympy.Le(sympy.Symbol("x"), 3)),
        (r"A_1 \ge A_2", sympy.Ge(sympy.Symbol("a_1"), sympy.Symbol("a_2"))),
        ("x > 2", sympy.Gt(sympy.Symbol("x"), 2)),
    ],
)
def test_uppercase_names_absolute_values_and_inequalities_read_as_the_grammar_reads_them(text, value):
    fast = mathfast.parse(text)
    assert fast == value
    assert sympy.simplify(fast - grammar(text)) == 0 if not fast.is_Relational else fast == grammar(text)
