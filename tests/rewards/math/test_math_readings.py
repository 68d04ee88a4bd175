"""Forms an outside suite rejected before issue 25 (issue 25's list): each
accepted, each with the near miss that must stay wrong (rules in rlvr.rewards.math.readings)."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards.math.core import MathPolicy, compare_texts, fast_compare
from rlvr.rewards.math.readings import abs_union, decimal_comma_pair, mixed_number, plain_unit


def decide(gold: str, pred: str, **policy) -> str:
    pol = MathPolicy(**policy)
    fast = fast_compare(gold, pred, pol)
    if fast is not None:
        return "equal" if fast else "unequal"
    return compare_texts(gold, pred, pol)[0]


def check(cases: list[tuple[str, str]], expected: str, **policy) -> None:
    got = {(g, p): decide(g, p, **policy) for g, p in cases}
    assert {k: v for k, v in got.items() if v != expected} == {}


def test_a_unit_without_text_is_a_unit():
    check(
        [("10weeks", "10"), ("10 weeks", "10"), ("10 cm^2", "10"), ("10", "10 \\text{cm}^2"), ("7days", "7")], "equal"
    )


def test_a_glued_short_unit_stays_a_product_and_another_unit_stays_another():
    check([("10cm", "10"), ("10m", "10"), ("10weeks", "10days"), ("10 cm^2", "10 m^2"), ("10weeks", "11")], "unequal")
    assert plain_unit("10cm") is None and plain_unit("10abcd") is None
    check([("6x^3", "6 x^{3}")], "equal")  # an expression, not 6 with a unit
    check([("6", "6 x^{3}"), ("6", "6 m^{2}")], "unequal")


def test_degrees_inside_a_trigonometric_function_are_radians_times_pi_over_180():
    check([("\\sin(90^{\\circ}-x)", "\\cos(x)"), ("\\sin 30^\\circ", "\\frac{1}{2}"), ("\\cos 60°", "0.5")], "equal")


def test_degrees_inside_trig_never_make_a_different_function_equal():
    check(
        [("\\sin(90^{\\circ}-x)", "\\sin x"), ("\\sin 30^\\circ", "\\sin 30"), ("\\sin(90^{\\circ}-x)", "-\\cos x")],
        "unequal",
    )


def test_a_bare_digit_numerator_or_denominator_is_a_fraction():
    check([("\\sec x", "\\frac1{\\cos x}"), ("\\frac{\\pi}2", "\\frac{\\pi}{2}")], "equal")
    check([("\\sec x", "\\frac1{\\sin x}"), ("\\frac{\\pi}2", "\\frac{\\pi}{3}")], "unequal")


def test_y_and_f_of_x_name_the_same_function():
    check([("f(x) = 2x + 3", "y = 2x + 3"), ("y = x^2", "g(x) = x^2")], "equal")


def test_other_labels_and_other_functions_stay_wrong():
    check(
        [
            ("f(x) = 2x + 3", "y = 2x + 4"),
            ("f(x) = 2x + 3", "z = 2x + 3"),
            ("f(2) = 7", "y = 7"),
            ("y = 2t", "f(x) = 2t"),
        ],
        "unequal",
    )


def test_a_mixed_number_is_its_value():
    check([("1 1/2", "1.5"), ("1.5", "1 1/2"), ("-2 3/4", "-\\frac{11}{4}"), ("1\\frac12", "1.5")], "equal")
    check([("1 1/2", "0.5"), ("1 1/2", "11/2"), ("1.5", "1 1/3")], "unequal")
    assert mixed_number("2 3/2") is None  # not proper: no mixed number


def test_twelve_and_twenty_four_hour_times_are_one_clock():
    check(
        [
            ("20:34", "08:34 \\text{P.M.}"),
            ("8:34 p.m.", "20:34"),
            ("00:15", "12:15 \\text{ AM}"),
            ("20:34", "20:34:00"),
        ],
        "equal",
    )
    check([("20:34", "08:34 \\text{A.M.}"), ("08:34", "08:34 \\text{P.M.}"), ("8:34 a.m.", "8:34 p.m.")], "unequal")


def test_a_column_matrix_is_the_list_in_its_own_brackets():
    check(
        [
            ("\\begin{matrix} \\frac12 \\\\ 1 \\end{matrix}", "[0.5, 1]"),
            ("\\begin{bmatrix} 1 \\\\ 2 \\end{bmatrix}", "[1, 2]"),
            ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "(1, 2)"),
        ],
        "equal",
    )
    check(
        [
            ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "[1, 2]"),  # a closed interval
            ("\\begin{matrix} 1 \\\\ 2 \\end{matrix}", "[2, 1]"),
            ("\\begin{bmatrix} 1 \\\\ 2 \\end{bmatrix}", "[1, 2, 3]"),
        ],
        "unequal",
    )


def test_a_set_builder_gold_is_the_interval_its_condition_describes():
    check(
        [
            ("\\{x|-2\\leq x<1\\}", "[-2, 1)"),
            ("\\{x \\mid x > 3\\}", "(3, \\infty)"),
            ("\\{x : x \\le 0\\}", "x \\le 0"),
        ],
        "equal",
    )
    check(
        [
            ("\\{x|-2\\leq x<1\\}", "[-2, 1]"),
            ("\\{x|-2\\leq x<1\\}", "(-2, 1)"),
            ("\\{x \\mid x > 3\\}", "[3, \\infty)"),
        ],
        "unequal",
    )


def test_subscripted_and_ratio_labels_are_labels():
    check(
        [
            ("m_{\\max}=5", "5"),
            ("\\frac{NO}{BO}=\\frac{1}{\\sqrt6}", "\\frac{1}{\\sqrt{6}}"),
            ("S_{MBCN}:S=7:32", "7:32"),
        ],
        "equal",
    )
    check(
        [
            ("m_{\\max}=5", "6"),
            ("\\frac{NO}{BO}=\\frac{1}{\\sqrt6}", "\\frac{1}{\\sqrt{5}}"),
            ("m_{\\max}=5", "m_{\\min}=5"),
        ],
        "unequal",
    )


def test_several_solutions_in_another_order_are_the_same_solutions():
    check(
        [
            ("(11,7)or(7,11)", "(7,11),\\ (11,7)"),
            ("a=4,\\,-8,\\,-10", "-10,-8,4"),
            ("(37,3,3,13),(17,3,3,7),(3,3,2,3)", "(3,3,2,3), (17,3,3,7), (37,3,3,13), (17,3,3,7)"),
        ],
        "equal",
    )


def test_a_missing_or_extra_solution_stays_wrong():
    check(
        [
            ("(11,7)or(7,11)", "(7,11)"),
            ("a=4,\\,-8,\\,-10", "-10,-8"),
            ("a=4,\\,-8,\\,-10", "-10,-8,4,5"),
            ("(1,2),(3,4)", "(1,2),(3,4),(5,6)"),
            ("(1,2),(3,4)", "(1,2),(1,2)"),
            ("1, 2, 3", "3, 2, 1"),  # a bare list keeps its order by default
        ],
        "unequal",
    )


def test_an_absolute_value_inequality_is_also_the_union_it_describes():
    check(
        [
            (
                "1\\leq|z|\\leq \\frac{3}{2}",
                "z \\in \\left[-\\frac{3}{2}, -1\\right] \\cup \\left[1, \\frac{3}{2}\\right]",
            ),
            ("1\\leq|z|\\leq \\frac{3}{2}", "[1, \\frac{3}{2}]"),  # the values of |z|
            ("|x| < 3", "(-3, 3)"),
            ("|x| > 2", "(-\\infty, -2) \\cup (2, \\infty)"),
        ],
        "equal",
    )
    check(
        [
            ("1\\leq|z|\\leq \\frac{3}{2}", "[-\\frac{3}{2}, -1) \\cup [1, \\frac{3}{2}]"),
            ("|x| > 2", "(-\\infty, -2] \\cup (2, \\infty)"),
            ("|x| < 3", "(-3, 3]"),
        ],
        "unequal",
    )
    assert abs_union("x", "[]", "1", "2") is None and abs_union("|x|", "[]", "-1", "2") is None


def test_a_decimal_comma_is_read_where_the_other_side_is_a_decimal_and_no_thousands_fit():
    check([("1000.99", "1000,99"), ("1,22", "1.22"), ("0,111", "0.111"), ("2.74", "2,74")], "equal")
    check([("1.5", "1,500"), ("1,500", "1.5"), ("1.22", "1, 22"), ("1.22", "1,23"), ("1,22", "12.2")], "unequal")
    assert decimal_comma_pair("1,5", "15") == ("1,5", "15")


def test_a_consistent_chain_answers_with_its_last_side():
    check([("11", "x = 5+5+1 = 11"), ("x = 11", "x = 5 + 6 = 11"), ("z = 1 + 1 = 2", "2")], "equal")
    check([("11", "x = 5+5+1 = 7 = 11"), ("11", "x = 5+5 = 11"), ("7", "x = 5+5+1 = 7 = 11")], "unequal")


def test_a_long_decimal_that_is_the_value_rounded_is_its_expansion():
    check(
        [
            ("\\frac{1}{12}", "0.0833333333333333"),
            ("\\frac{\\sqrt{3}}{2}", "0.8660254037844386"),
            ("2.314814814815 \\times 10^{-3}", "\\frac{1}{432}"),
            ("\\frac{1}{3}", "0.333333333333"),
        ],
        "equal",
    )
    check(
        [
            ("\\frac{1}{12}", "0.0833"),
            ("\\frac{1}{12}", "0.0833333333333343"),
            ("1", "0.99999999999999999999"),
            ("\\frac{\\sqrt{3}}{2}", "0.8660254037844396"),
            ("\\frac{2}{3}", "0.666666666666"),  # truncated, not rounded
        ],
        "unequal",
    )


def test_percent_against_a_fraction_is_the_documented_option():
    assert decide("10\\%", "10") == "equal"
    assert decide("10\\%", "0.1") == "unequal"
    assert decide("10\\%", "0.1", percent="either") == "equal"
    assert decide("10\\%", "0.1", percent="fraction") == "equal"
    assert decide("10\\%", "10", percent="fraction") == "unequal"


def test_doubled_backslashes_are_one_outside_matrices():
    check(
        [
            ("\\left(\\frac{1}{5},\\frac{1}{6}\\right)", "\\\\left(\\\\frac{1}{5},\\\\frac{1}{6}\\\\right)"),
            ("[-2, 7]", "-2 \\\\le x \\\\le 7"),
        ],
        "equal",
    )
    check([("\\left(\\frac{1}{5},\\frac{1}{6}\\right)", "\\\\left(\\\\frac{1}{6},\\\\frac{1}{5}\\\\right)")], "unequal")


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 99), st.integers(2, 100))
def test_a_mixed_number_is_never_the_product_or_the_juxtaposed_digits(whole, num, den):
    if num >= den:
        return
    value = whole + Fraction(num, den)
    assert decide(f"{value.numerator}/{value.denominator}", f"{whole} {num}/{den}") == "equal"
    if whole not in (0, 1):
        assert decide(f"{whole * num}/{den}", f"{whole} {num}/{den}") == "unequal"


@settings(max_examples=80, deadline=None)
@given(st.fractions(min_value=-1000, max_value=1000, max_denominator=10**6), st.integers(10, 20), st.integers(1, 9))
def test_a_long_decimal_is_accepted_rounded_and_refused_one_digit_off(value, digits, off):
    with localcontext() as ctx:
        ctx.prec = digits
        rounded = Decimal(value.numerator) / Decimal(value.denominator)
    if Fraction(rounded) == value:
        return  # a terminating decimal is exact: nothing to round
    gold = f"{value.numerator}/{value.denominator}"
    assert decide(gold, format(rounded, "f")) == "equal"
    ulp = Decimal(1).scaleb(rounded.adjusted() - digits + 1)
    with localcontext() as ctx:
        ctx.prec = 80
        shifted = rounded + off * ulp
    if abs(Fraction(shifted) - value) > Fraction(ulp) / 2:  # a tie is as near as the rounding
        assert decide(gold, format(shifted, "f")) == "unequal"
