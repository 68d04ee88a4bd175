"""The calculator tool: exact arithmetic by a hand-written parser, never eval, bounded in every way."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr.episodes.calculator import MAX_CHARS, CalculatorError, calculate, calculator


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1+2*3", "7"),
        ("(1+2)*3", "9"),
        ("2**10", "1024"),
        ("-2**2", "-4"),  # Python's precedence: the power binds first
        ("2**-1", "0.5"),
        ("0.1+0.2", "0.3"),  # exact, no binary rounding
        ("7//2", "3"),
        ("-7//2", "-4"),
        ("7%3", "1"),
        ("-7%3", "2"),
        ("1/3", "0.333333333333"),
        ("1_000 * 3", "3000"),
        (" 17 * 23 ", "391"),
        ("2**3**2", "512"),  # right-associative
    ],
)
def test_arithmetic_follows_python_exactly(text: str, value: str) -> None:
    assert calculator(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os')",
        "open('/etc/passwd')",
        "1 if 1 else 2",
        "[1,2]",
        "x+1",
        "1e9999",
        "9**9**9",  # exponent too large
        "2**100000",
        "1/0",
        "5%0",
        "0**-1",
        "(" * 100 + "1" + ")" * 100,  # too deep
        "-" * 100 + "1",  # unary chain too deep
        "1" * (MAX_CHARS + 1),
        "1..2",
        "",
        "1 +",
        "(1",
        "٣+1",  # a non-ASCII digit
        "2**0.5",
        "(10**60)**10",
    ],
)
def test_anything_but_bounded_arithmetic_is_a_calculator_error(text: str) -> None:
    with pytest.raises(CalculatorError):
        calculate(text)


def test_a_non_string_expression_is_refused() -> None:
    with pytest.raises(CalculatorError):
        calculate(12)  # type: ignore[arg-type]


_ints = st.integers(min_value=-(10**6), max_value=10**6)


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 3 or draw(st.booleans()):
        n = draw(_ints)
        return f"({n})" if n < 0 else str(n)
    op = draw(st.sampled_from(["+", "-", "*", "//", "%"]))
    left, right = draw(expressions(depth + 1)), draw(expressions(depth + 1))
    return f"({left} {op} {right})"


@given(expressions())
def test_integer_expressions_agree_with_python_or_are_refused_for_zero_division(text: str) -> None:
    """The rule that closes the class: on the integer subset both parse, the value is Python's."""
    try:
        want = eval(text)  # noqa: S307 - the reference, on text this test generated
    except ZeroDivisionError:
        with pytest.raises(CalculatorError):
            calculate(text)
        return
    assert calculate(text) == Fraction(want)


@given(st.text(max_size=60))
def test_any_text_gives_a_value_or_a_calculator_error_never_another_exception(text: str) -> None:
    try:
        calculate(text)
    except CalculatorError:
        pass
