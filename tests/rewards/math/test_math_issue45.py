"""Issue 45's answer forms, one rule each: text answers, labelled parts, Unicode math, plain-text
exponents; each accepted form next to the near miss that must stay wrong."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards.math.core import MathPolicy, compare_texts, fast_compare, gold_problem
from rlvr.rewards.math.glyphs import to_ascii_math
from rlvr.rewards.math.prose import normal


def decide(gold: str, pred: str, **policy: object) -> str:
    pol = MathPolicy(**policy)  # type: ignore[arg-type]
    fast = fast_compare(gold, pred, pol)
    if fast is not None:
        return "equal" if fast else "unequal"
    return compare_texts(gold, pred, pol)[0]


def check(cases: list[tuple[str, str]], expected: str, **policy: object) -> None:
    got = {(g, p): decide(g, p, **policy) for g, p in cases}
    assert {k: v for k, v in got.items() if v != expected} == {}


# -- text answers ------------------------------------------------------------------------------
def test_a_text_gold_is_decided_as_normalised_text():
    check(
        [
            ("n \\text{ is even}", "\\text{n is even}"),
            ("\\text{No real roots}", "no real roots."),
            ("\\textbf{Alice}", "\\text{alice}"),
            ("12 \\text{ apples}", "12 \\text{ Apples}"),
        ],
        "equal",
    )
    check(
        [
            ("n \\text{ is even}", "n \\text{ is odd}"),
            ("n \\text{ is even}", "n"),
            ("12 \\text{ apples}", "12"),
            ("\\text{no real roots}", "\\text{no roots}"),
        ],
        "unequal",
    )


def test_a_text_gold_is_no_gold_problem_and_a_broken_one_still_is():
    assert gold_problem("n \\text{ is even}") is None
    assert gold_problem("\\frac{") is not None


def test_a_wrong_text_answer_gets_a_reason():
    status, detail = compare_texts("n \\text{ is even}", "n \\text{ is odd}", MathPolicy())
    assert status == "unequal" and "compared as text" in detail


def test_only_and_exactly_stress_a_value_without_changing_it():
    check([("\\text{only } x=0", "0"), ("0", "x = 0 \\text{ only}"), ("3", "\\text{exactly } 3")], "equal")
    check([("\\text{only } x=0", "1"), ("0", "\\text{only } x = 1")], "unequal")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["even", "odd", "Alice", "wins", "no", "real", "roots", "n", "is"]), min_size=2, max_size=5
    )
)
def test_text_equals_itself_rewritten_and_not_with_a_word_dropped(words):
    gold = "\\text{" + " ".join(words) + "}"
    assert decide(gold, " ".join(w.upper() for w in words) + ".") == "equal"
    if len(set(words)) == len(words):
        assert decide(gold, "\\text{" + " ".join(words[1:]) + "}") != "equal"


def test_normal_form_unwraps_folds_and_collapses():
    assert normal("\\textbf{\\text{No}}\\,  Solution.") == "no solution"


# -- labelled parts ----------------------------------------------------------------------------
def test_labelled_parts_in_words_answer_in_the_golds_order_or_by_label():
    gold = "\\text{Maximum} = 2, \\text{Minimum} = -1"
    check(
        [
            (gold, "2, -1"),
            (gold, "\\max = 2, \\min = -1"),
            (gold, "\\text{minimum} = -1, \\text{maximum} = 2"),
            (gold, "\\text{the maximum value} = 2, \\text{the minimum value} = -1"),
        ],
        "equal",
    )
    check(
        [
            (gold, "-1, 2"),
            (gold, "\\text{minimum} = 2, \\text{maximum} = -1"),
            (gold, "\\max = 2, \\min = 1"),
            (gold, "2"),
        ],
        "unequal",
    )


def test_a_function_name_is_no_label():
    from rlvr.rewards.math.forms import is_label

    assert not is_label("sin x") and is_label("Maximum") and is_label("\\max")


# -- Unicode math and plain-text exponents ------------------------------------------------------
def test_unicode_math_reads_as_its_latex():
    check(
        [
            ("(2, \\infty)", "(2, ∞)"),
            ("[2, \\infty)", "x ≥ 2"),
            ("(-\\infty, \\infty)", "ℝ"),
            ("[1,2) \\cup (3,4]", "[1,2) ∪ (3,4]"),
            ("3 \\times 10^{-5}", "3 × 10⁻⁵"),
            ("x^2+1", "x²+1"),
            ("10", "⑩"),
            ("2", "②"),
            ("\\frac{1}{2}", "½"),
            ("\\{1, 2\\}", "{1, 2}"),
        ],
        "equal",
    )
    check([("(2, \\infty)", "[2, ∞)"), ("x^2+1", "x2+1"), ("3", "②"), ("x^3", "x²")], "unequal")


def test_superscripts_are_exponents_and_other_text_is_unchanged():
    assert to_ascii_math("x²⁻¹") == "x^{2-1}"
    assert to_ascii_math("plain ascii") == "plain ascii"


@pytest.mark.parametrize(("gold", "pred"), [("10^{-10}", "10^(-10)"), ("2^{n+1}", "2^(n+1)"), ("1e-10", "10^(-10)")])
def test_parenthesised_exponents_are_exponents(gold, pred):
    assert decide(gold, pred) == "equal"


def test_a_parenthesised_exponent_keeps_its_value():
    assert decide("10^{-10}", "10^(-9)") == "unequal"
    assert decide("2^{n+1}", "2^(n)+1") == "unequal"


# -- unordered collections when the question asks for all solutions -----------------------------
@pytest.mark.parametrize(
    "prompt",
    [
        "Find all real x such that x^3 - 6x^2 + 11x - 6 = 0.",
        "Determine all positive integers n for which n^2 + 2 divides 6n.",
        "Enter all the solutions, separated by commas.",
        "What are all possible values of k?",
        "List all roots of the polynomial.",
    ],
)
def test_a_question_for_all_solutions_takes_a_list_in_any_order(prompt):
    from rlvr.rewards import Outcome, Sample
    from rlvr.rewards.math import MathVerifier

    v = MathVerifier(pool=_NoPool())
    good = v.verify(Sample("<answer>3, 2, 1</answer>", {"answer": "1, 2, 3"}, prompt=prompt))
    bad = v.verify(Sample("<answer>3, 2, 2</answer>", {"answer": "1, 2, 3"}, prompt=prompt))
    assert good.outcome is Outcome.CORRECT and bad.outcome is not Outcome.CORRECT


@pytest.mark.parametrize(
    "prompt",
    [
        "Find a, b and c such that the identity holds for all real numbers x.",
        "Solve for x and y.",
        "Compute f(1), f(2), f(3).",
        "",
    ],
)
def test_a_question_that_does_not_ask_for_all_solutions_keeps_the_lists_order(prompt):
    from rlvr.rewards import Outcome, Sample
    from rlvr.rewards.math import MathVerifier

    v = MathVerifier(pool=_NoPool())
    assert v.verify(Sample("<answer>3, 2, 1</answer>", {"answer": "1, 2, 3"}, prompt=prompt)).outcome is Outcome.WRONG


class _NoPool:
    """Runs the worker's function in this process (a fake of rewards.pool.WorkerPool)."""

    def map(self, target: str, args: list[tuple[object, ...]], timeout: float) -> list[object]:
        import importlib

        from rlvr.rewards.pool import Result

        module, name = target.split(":")
        fn = getattr(importlib.import_module(module), name)
        return [Result(True, fn(*a)) for a in args]


# -- set-builder and interval forms ---------------------------------------------------------------
def test_set_builder_and_iso_intervals_read_as_their_interval():
    check(
        [
            ("(2, \\infty)", "\\{x \\in \\mathbb{R} \\mid x > 2\\}"),
            ("[2, \\infty)", "\\{x \\in \\mathbb{R} : x \\geq 2\\}"),
            ("(-\\infty,1)\\cup(1,\\infty)", "\\{x \\mid x \\neq 1\\}"),
            ("(1, 2]", "]1, 2]"),
            ("[1, 2)", "[1, 2["),
            ("(2,3)", "]2,3["),
            ("(-\\infty, \\infty)", "\\text{all real numbers}"),
            ("(-\\infty, -1] \\cup [1, \\infty)", "|x| \\ge 1"),
        ],
        "equal",
    )
    check(
        [
            ("(1, 2)", "]1, 2]"),
            ("[1, 2]", "[1, 2["),
            ("(-\\infty,1)\\cup(1,\\infty)", "\\{x \\mid x \\neq 2\\}"),
            ("(-\\infty, -1) \\cup (1, \\infty)", "|x| \\ge 1"),
            ("(0, \\infty)", "\\text{all real numbers}"),
        ],
        "unequal",
    )


# -- an ellipsis is a pattern, compared as written ---------------------------------------------------
def test_a_product_with_an_ellipsis_and_an_extra_factor_is_not_equal():
    check(
        [
            ("1 \\cdot 2 \\cdot 3 \\cdots n", "1 \\cdot 2 \\cdots n \\cdot (n+1)"),
            ("1 \\cdot 2 \\cdots n", "2 \\cdots n"),
            ("\\frac{1}{2} \\cdot \\frac{2}{3} \\cdots \\frac{n-1}{n}", "\\frac{1}{2} \\cdots \\frac{n-1}{n}"),
            ("2n", "1 \\cdot 2 \\cdots n"),
        ],
        "unequal",
    )


def test_an_ellipsis_answer_written_the_same_way_is_equal():
    check([("1 \\cdot 2 \\cdots n", "1\\times 2\\cdots n"), ("1, 2, \\ldots, n", "1,2,...,n")], "equal")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=2, max_size=5), st.integers(1, 30))
def test_an_ellipsis_product_with_another_factor_is_never_equal(factors, extra):
    gold = " \\cdot ".join(map(str, factors)) + " \\cdots n"
    assert decide(gold, gold.replace(" \\cdots n", f" \\cdot {extra} \\cdots n")) == "unequal"
    assert decide(gold, gold) == "equal"


# -- renamed free variables ---------------------------------------------------------------------
def test_an_answer_with_renamed_free_variables_is_equal():
    check(
        [
            ("\\frac{n(n+1)}{2}", "\\frac{k(k+1)}{2}"),
            ("f(x) = x^2 + 1", "f(t) = t^2 + 1"),
            ("a x^2 + b", "p x^2 + q"),
            ("x^2 + 2x", "t^2 + 2t"),
        ],
        "equal",
    )


def test_renaming_never_swaps_shared_names_or_reads_a_bare_name_as_a_function():
    check(
        [
            ("x + 2y", "y + 2x"),
            ("\\text{A}", "\\text{B}"),
            ("x", "y"),
            ("x^2 + 1", "t^2 + 2"),
            ("n^2", "k^2 + k"),
            ("x + y", "x + y + z"),
            ("f(2) = 4", "f(3) = 4"),
        ],
        "unequal",
    )
    assert decide("x^2 + 2x", "t^2 + 2t", rename=False) == "unequal"


@settings(max_examples=40, deadline=None)
@given(st.sampled_from("abcmnpqrstuvwxyz"), st.sampled_from("abcmnpqrstuvwxyz"), st.integers(1, 9), st.integers(1, 9))
def test_a_renamed_polynomial_is_equal_and_a_perturbed_one_is_not(old, new, a, b):
    gold = f"{a}{old}^2 + {b}{old}"
    assert decide(gold, f"{a}{new}^2 + {b}{new}") == "equal"
    assert decide(gold, f"{a}{new}^2 + {b + 1}{new}") == "unequal"


def test_a_subscripted_name_is_one_member_of_a_family_and_never_renamed():
    check(
        [
            ("a_1 + b", "a_2 + b"),
            ("a_{n-1}+a_{n+1}", "a_{n-2}+a_{n+1}"),
            ("v_0 t + 1", "v_1 t + 1"),
            ("x_1 + 1", "y_1 + 1"),
        ],
        "unequal",
    )
    assert decide("a_{n-1}+a_{n+1}", "a_{n+1}+a_{n-1}") == "equal"


@settings(max_examples=40, deadline=None)
@given(st.sampled_from("abcxyz"), st.integers(0, 9), st.integers(0, 9), st.integers(1, 9))
def test_two_members_of_one_family_are_never_renamed_into_each_other(base, i, j, c):
    gold, pred = f"{c}{base}_{{{i}}} + 1", f"{c}{base}_{{{j}}} + 1"
    assert decide(gold, pred) == ("equal" if i == j else "unequal")


def test_a_name_the_question_mentions_is_not_renamed():
    from rlvr.rewards import Outcome, Sample
    from rlvr.rewards.math import MathVerifier

    v = MathVerifier(pool=_NoPool())
    row = {"answer": "2x + 1"}
    asked = "Let y = 2x + 1 and z = y. Express z in terms of x."
    assert v.verify(Sample("<answer>2y + 1</answer>", row, prompt=asked)).outcome is Outcome.WRONG
    assert v.verify(Sample("<answer>2t + 1</answer>", row, prompt=asked)).outcome is Outcome.CORRECT


# -- units through the closed list ------------------------------------------------------------------
def test_one_unit_spelled_several_ways_is_one_unit():
    check(
        [
            ("5 \\text{ cm}^2", "5 \\text{ square centimeters}"),
            ("5 \\text{ cm}^2", "5 \\text{ sq cm}"),
            ("5\\text{ m/s}", "5 \\text{ meters per second}"),
            ("5 \\text{ km/h}", "5 \\text{ kilometers per hour}"),
            ("5 \\text{ km/h}", "5 \\text{ kph}"),
            ("60", "60 \\text{ mph}"),
            ("\\$5.", "5"),
            ("$5.", "\\$5"),
        ],
        "equal",
    )
    check(
        [
            ("5 \\text{ cm}^2", "5 \\text{ cm}"),
            ("5 \\text{ cm}^2", "5 \\text{ cubic centimeters}"),
            ("5 \\text{ km/h}", "5 \\text{ mph}"),
            ("5\\text{ m/s}", "5 \\text{ meters}"),
            ("\\$5.", "6"),
        ],
        "unequal",
    )


# -- a rounded gold read to its own precision ---------------------------------------------------------
def test_an_exact_answer_that_rounds_to_the_gold_is_equal():
    check(
        [
            ("3.14", "\\pi"),
            ("0.33", "\\frac{1}{3}"),
            ("1.41", "\\sqrt{2}"),
            ("1.414", "\\sqrt{2}"),
            ("-0.67", "-\\frac{2}{3}"),
            ("2.72", "e"),
            ("0.577", "\\frac{\\sqrt{3}}{3}"),
        ],
        "equal",
    )


def test_a_decimal_or_terminating_answer_or_a_one_digit_gold_is_read_exactly():
    check(
        [
            ("3.14", "3.141"),
            ("3.14", "3.1"),
            ("3.14", "\\frac{157}{50} + \\frac{1}{1000}"),
            ("0.3", "\\frac{1}{3}"),
            ("3", "\\pi"),
            ("3.15", "\\pi"),
            ("0.33", "\\frac{1}{3} + \\frac{1}{100}"),
            ("1.41", "\\sqrt{3}"),
            ("0.375", "\\log_2 8 \\cdot \\frac{1}{8} + \\frac{1}{10000}"),
        ],
        "unequal",
    )
    assert decide("3.14", "\\pi", gold_precision=False) == "unequal"
    assert decide("3.14", "\\pi", rel_tol=1e-6) == "unequal"  # a stated tolerance governs


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 500), st.integers(3, 97), st.integers(2, 4))
def test_a_fraction_rounded_to_the_golds_digits_is_equal_and_one_off_is_not(num, den, digits):
    from fractions import Fraction

    from hypothesis import assume

    from rlvr.rewards.math.readings import terminates

    q = Fraction(num, den)
    assume(not terminates(q))
    gold = f"{float(q):.{digits}f}"
    assume(len(gold.replace(".", "").lstrip("0")) >= 2 and abs(float(q) - float(gold)) < 0.5 * 10**-digits * 0.999)
    assert decide(gold, f"\\frac{{{num}}}{{{den}}}") == "equal"
    off = q + Fraction(1, 10**digits)
    assert decide(gold, f"\\frac{{{off.numerator}}}{{{off.denominator}}}") == "unequal"


# -- degrees and radians, where the task says so -------------------------------------------------------
def test_angles_either_reads_a_degree_sign_both_ways_and_plain_stays_the_default():
    check(
        [("\\frac{\\pi}{4}", "45^\\circ"), ("45", "45^\\circ"), ("90^\\circ", "\\frac{\\pi}{2}")],
        "equal",
        angles="either",
    )
    check(
        [("\\frac{\\pi}{4}", "46^\\circ"), ("\\frac{\\pi}{4}", "45"), ("30", "30^\\circ + 1")],
        "unequal",
        angles="either",
    )
    assert decide("\\frac{\\pi}{4}", "45^\\circ") == "unequal"
    assert decide("\\frac{\\pi}{4}", "45°", angles="degrees") == "equal"


def test_the_argument_of_a_function_the_answer_defines_is_bound_whatever_the_question_calls_it():
    from rlvr.rewards import Outcome, Sample
    from rlvr.rewards.math import MathVerifier

    v = MathVerifier(pool=_NoPool())
    asked = "Find all f such that f(x + f(y)) = f(x + y) + f(y) for all x, y > 0."
    row = {"answer": "f(x) = 2x"}
    assert v.verify(Sample("<answer>f(y) = 2y</answer>", row, prompt=asked)).outcome is Outcome.CORRECT
    assert v.verify(Sample("<answer>f(y) = 3y</answer>", row, prompt=asked)).outcome is Outcome.WRONG
    assert v.verify(Sample("<answer>f(x) = 2y</answer>", row, prompt=asked)).outcome is Outcome.WRONG


def test_greek_letters_in_unicode_are_their_latex_names():
    check([("\\sin \\alpha + \\beta", "\\sin α + β"), ("2\\theta", "2θ")], "equal")
    check([("\\sin \\alpha", "\\cos α")], "unequal")


def test_a_greek_letter_the_question_mentions_is_not_renamed():
    from rlvr.rewards import Outcome, Sample
    from rlvr.rewards.math import MathVerifier

    v = MathVerifier(pool=_NoPool())
    asked = "Let α and β be the angles of the triangle. Find sin α."
    row = {"answer": "\\sin \\alpha"}
    assert v.verify(Sample("<answer>\\sin β</answer>", row, prompt=asked)).outcome is Outcome.WRONG
    assert v.verify(Sample("<answer>\\sin α</answer>", row, prompt=asked)).outcome is Outcome.CORRECT
