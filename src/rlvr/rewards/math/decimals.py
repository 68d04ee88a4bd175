"""Decimals against exact values: a long decimal expansion of an exact value, and a rounded gold
read to its own precision (``MathPolicy.gold_precision``). Runs in the worker processes; sympy is
imported inside the functions."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from . import readings
from .policy import MathPolicy
from .sym import sym, too_big


def expansion_of(text: str, other: Any) -> bool:
    """``text`` is a decimal of at least 10 significant digits that is ``other``'s value correctly
    rounded to its last digit (``0.0833333333333333`` for 1/12)."""
    long = readings.long_decimal(text)
    if long is None or readings.long_decimal(str(other)) is not None or too_big(sym(other)):
        return False
    value, ulp = long
    ulp /= 2  # the correctly rounded expansion only: 0.99999999999999999999 is not 1
    if isinstance(other, Fraction):
        return abs(other - value) <= ulp
    import sympy

    try:
        diff = sympy.N(sym(other) - sym(value), 40)
    except (MemoryError, RecursionError):
        raise
    except Exception:  # noqa: BLE001 - not a number: not an expansion of one
        return False
    return bool(diff.is_real and diff.is_Number and abs(diff) <= sympy.Rational(ulp.numerator, ulp.denominator))


def rounds_to(gold_text: str, other: Any, policy: MathPolicy) -> bool:
    """The ``gold_precision`` rule: ``gold_text`` is a decimal of two or more significant digits,
    the task states no tolerance, and ``other`` is an exact number with no finite decimal
    expansion that rounds to it (within half a unit in the gold's last digit)."""
    if not policy.gold_precision or policy.rel_tol > 1e-9 or policy.abs_tol > 0:
        return False
    rounded = readings.rounded_decimal(gold_text)
    if rounded is None:
        return False
    value, half = rounded
    if isinstance(other, Fraction):
        return not readings.terminates(other) and abs(other - value) <= half
    import sympy

    if not isinstance(other, sympy.Expr) or other.free_symbols or other.has(sympy.Float) or too_big(other):
        return False  # a decimal answer is the answer's own rounding: it must equal the gold
    if other.is_Rational:
        return (
            not readings.terminates(Fraction(int(other.p), int(other.q)))
            and abs(Fraction(int(other.p), int(other.q)) - value) <= half
        )
    try:
        diff = sympy.N(other - sympy.Rational(value.numerator, value.denominator), 30)
    except (MemoryError, RecursionError):
        raise
    except Exception:  # noqa: BLE001 - not a number: no rounding of one
        return False
    if not (diff.is_real and diff.is_Number) or abs(diff) > sympy.Rational(half.numerator, half.denominator):
        return False
    rational = sympy.nsimplify(other)
    # \log_2 8 \cdot \frac{1}{8} is 3/8, a terminating value written another way: not a rounding
    return not (rational.is_Rational and _exactly_rational(other, rational))


def _exactly_rational(expr: Any, rational: Any) -> bool:
    import sympy

    try:
        return bool(sympy.simplify(expr - rational) == 0) and readings.terminates(
            Fraction(int(rational.p), int(rational.q))
        )
    except (MemoryError, RecursionError):
        raise
    except Exception:  # noqa: BLE001
        return False
