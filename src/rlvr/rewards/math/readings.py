"""Readings of answer forms that graders outside rlvr accept and that have one meaning only.

Pure string and ``Fraction`` work with linear-time regexes, on text ``math.text.clean`` has capped
at ``MAX_ANSWER_CHARS``. Each rule is written next to the near miss that must stay wrong:

- ``\\\\frac`` (a doubled backslash, as JSON-escaped output writes it) is ``\\frac``; never inside
  a matrix, where ``\\\\`` ends a row.
- A degree sign inside a trigonometric function means ``×π/180`` whatever the ``angles`` policy:
  ``\\sin(90^\\circ - x)`` is ``\\cos x``; ``\\sin 30^\\circ`` is 1/2, not ``\\sin 30``.
- ``1 1/2`` is one and a half (a mixed number: a whole number, a space, a proper fraction);
  ``2 3/2`` is not a mixed number and is left alone.
- ``10weeks`` and ``10 cm^2`` carry a unit without ``\\text``: a known unit word, glued or not, or
  any word after a space; with an exponent only a known unit (``6 x^{3}`` is an expression).
  ``10cm`` and ``10m`` stay products (a short unit needs its space).
- ``08:34 \\text{P.M.}`` is ``20:34``; a time without a.m./p.m. is a 24-hour time.
- ``1,22`` and ``0,111`` are decimals with a comma when the other side is a decimal with a point
  and the comma cannot be a thousands separator (not three digits after it, or a leading 0);
  ``1,500`` stays fifteen hundred.
- A decimal with at least 10 significant digits is a decimal expansion of the other side when it
  is the other side correctly rounded to its last digit (``0.0833333333333333`` for
  ``\\frac{1}{12}``); ``0.3333`` stays another number than ``\\frac{1}{3}``, and ``0.99999999999999999999``
  than 1.
- ``\\{x \\mid -2 \\le x < 1\\}`` (set-builder notation) is the interval its condition describes.
- ``a \\le |x| \\le b`` is the union ``[-b, -a] \\cup [a, b]`` (numeric bounds only).
- ``y = …`` and ``f(x) = …`` name the same function.
"""

from __future__ import annotations

import re
from fractions import Fraction

from ..rules import untrusted

# -- escapes -------------------------------------------------------------------------------------
_DOUBLED = re.compile(
    r"(?<!\\)\\\\(?=(?:frac|dfrac|tfrac|sqrt|left|right|pi|le|ge|leq|geq|lt|gt|neq|cdot|times|infty|text"
    r"|mathrm|in|cup|cap|pm|mp|circ|alpha|beta|gamma|theta|sin|cos|tan|ln|log)(?![a-zA-Z]))"
)


def undouble(s: str) -> str:
    """``\\\\frac{1}{2}`` -> ``\\frac{1}{2}`` outside matrices (where ``\\\\`` ends a row)."""
    if "\\begin" in s or "\\\\" not in s:
        return s
    return _DOUBLED.sub(lambda _: "\\", s)


# -- degrees in trigonometric functions ----------------------------------------------------------
_TRIG = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc)(?![a-zA-Z])")
_NUM_DEGREE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![a-zA-Z])|\^\{\\text\{o\}\})")


def trig_degrees(s: str) -> str:
    """``\\sin(90^\\circ - x)`` -> ``\\sin((\\frac{90\\pi}{180}) - x)`` when a trigonometric
    function is present; ``s`` unchanged otherwise."""
    if not _TRIG.search(s):
        return s
    return _NUM_DEGREE.sub(lambda m: "(\\frac{" + m.group(1) + "\\pi}{180})", s)


# -- mixed numbers -----------------------------------------------------------------------------
_MIXED = re.compile(r"^([+-]?)(\d{1,12})\s+(\d{1,12})\s*/\s*(\d{1,12})$")


def mixed_number(s: str) -> Fraction | None:
    """``1 1/2`` -> 3/2; None unless the fraction is proper (``2 3/2`` is no mixed number)."""
    m = _MIXED.match(untrusted.strip(s))
    if not m:
        return None
    whole, num, den = int(m.group(2)), int(m.group(3)), int(m.group(4))
    if den == 0 or num >= den:
        return None
    value = whole + Fraction(num, den)
    return -value if m.group(1) == "-" else value


# -- units without \text ---------------------------------------------------------------------------
_UNIT_WORDS = (
    r"seconds?|minutes?|hours?|days?|weeks?|months?|years?|meters?|metres?|miles?|inch(?:es)?|feet|foot|yards?"
    r"|dollars?|cents?|units?|degrees?|pounds?|ounces?|grams?|kilograms?|liters?|litres?|people|persons?"
    r"|students?|apples?|books?|cookies?|marbles?|pages?|points?|steps?"
)
_GLUED_UNIT = re.compile(rf"^([-+]?\d[\d,]*(?:\.\d+)?)((?:square\s+)?(?:{_UNIT_WORDS}))$", re.I)
_SPACED_UNIT = re.compile(
    r"^([-+]?\d[\d,]*(?:\.\d+)?)\s+([A-Za-z][A-Za-z ]*\.?"
    r"|(?:square\s+|cubic\s+)?(?:[cmk]m|in|ft|yd|mi|units?|meters?|metres?|feet|inch(?:es)?)\s*\^\s*\{?[23]\}?)$"
)  # a squared unit must be one: 6 x^{3} is an expression


_CLOCK_MERIDIEM = re.compile(r"^(\d{1,2}:\d{2}(?::\d{2})?)\s*([AaPp]\.?\s*[Mm]\.?)$")


def plain_unit(s: str) -> tuple[str, str] | None:
    """``10weeks`` -> ("10", "weeks"); ``10 cm^2`` -> ("10", "cm^2"); ``8:34 p.m`` -> ("8:34",
    "p.m"); None otherwise."""
    m = _GLUED_UNIT.match(s) or _SPACED_UNIT.match(s) or _CLOCK_MERIDIEM.match(s)
    return (m.group(1), m.group(2)) if m else None


# -- clock times -------------------------------------------------------------------------------
def clock_24h(groups: tuple[str | None, ...], unit: tuple[str, ...]) -> list[int]:
    """(hours, minutes, seconds) of a clock time on the 24-hour clock, reading a.m./p.m."""
    h, mi, se = (int(x or 0) for x in groups)
    if unit in (("pm",), ("p", "m")) and h < 12:
        h += 12
    elif unit in (("am",), ("a", "m")) and h == 12:
        h = 0
    return [h, mi, se]


def is_meridiem(unit: tuple[str, ...]) -> bool:
    return unit in (("pm",), ("am",), ("p", "m"), ("a", "m"))


# -- decimal commas ---------------------------------------------------------------------------------
_COMMA_NUMBER = re.compile(r"^([+-]?\d{1,15}),(\d{1,30})$")
_POINT_NUMBER = re.compile(r"^[+-]?\d{0,15}\.\d{1,30}$")


def decimal_comma_pair(a: str, b: str) -> tuple[str, str]:
    """``("1,22", "1.22")`` -> ``("1.22", "1.22")``: a number with one comma reads as a decimal
    when the other side is a decimal with a point and the comma cannot separate thousands."""
    if len(a) > 64 or len(b) > 64:  # longer than any such number: no pattern sees a long text
        return a, b
    a, b = untrusted.strip(a), untrusted.strip(b)
    for x, y, swap in ((a, b, False), (b, a, True)):
        m = _COMMA_NUMBER.match(x)
        if m and _POINT_NUMBER.match(y) and (len(m.group(2)) != 3 or m.group(1).lstrip("+-") == "0"):
            x = f"{m.group(1)}.{m.group(2)}"
            return (y, x) if swap else (x, y)
    return a, b


# -- long decimals ----------------------------------------------------------------------------------
_LONG_DECIMAL = re.compile(
    r"^([+-]?)(\d*)\.(\d+)(?:\s*(?:\\times|\\cdot|\*)\s*10\s*\^\s*\{?\s*([+-]?\d{1,3})\s*\}?|[eE]([+-]?\d{1,3}))?$"
)
LONG_DIGITS = 10  # the agreement the old 1e-9 tolerance asked of a decimal


def long_decimal(s: str) -> tuple[Fraction, Fraction] | None:
    """A decimal written to at least ``LONG_DIGITS`` significant digits, as (value, one unit in
    its last digit); None for a shorter or other text."""
    m = _LONG_DECIMAL.match(untrusted.strip(s))
    if not m:
        return None
    digits = (m.group(2) + m.group(3)).lstrip("0")
    if len(digits) < LONG_DIGITS or len(m.group(3)) > 60:
        return None
    exp = int(m.group(4) or m.group(5) or 0)
    value = Fraction(int(m.group(2) + m.group(3)), 10 ** len(m.group(3))) * Fraction(10) ** exp
    ulp = Fraction(1, 10 ** len(m.group(3))) * Fraction(10) ** exp
    return (-value if m.group(1) == "-" else value), ulp


# -- set-builder notation -------------------------------------------------------------------------
_SET_BUILDER = re.compile(
    r"^\\\{\s*([a-zA-Z])\s*(?:\\in\s*(?:\\mathbb\s*\{?\s*R\s*\}?|\\R(?![a-zA-Z]))\s*)?"
    r"(?:\||\\mid(?![a-zA-Z])|:)\s*(.+?)\s*\\\}$"
)


def set_builder(s: str) -> str | None:
    """``\\{x \\mid -2 \\le x < 1\\}`` and ``\\{x \\in \\mathbb{R} : -2 \\le x < 1\\}`` -> ``-2 \\le x < 1``;
    ``\\{x \\mid x \\neq 1\\}`` -> ``(-\\infty, 1) \\cup (1, \\infty)``; None for other text."""
    m = _SET_BUILDER.match(untrusted.strip(s))
    if not m:
        return None
    var = m.group(1)
    cond = re.sub(rf"\s*,?\s*{var}\s*\\in\s*\\mathbb\s*\{{?\s*R\s*\}}?\s*$", "", m.group(2))
    ne = re.match(rf"^{var}\s*(?:\\neq?(?![a-zA-Z])|\\ne(?![a-zA-Z])|!=)\s*([^=<>]+)$", cond)
    if ne:  # the real line without one point
        point = untrusted.strip(ne.group(1))
        return f"(-\\infty, {point}) \\cup ({point}, \\infty)"
    return cond if re.search(rf"(?<![a-zA-Z\\]){var}(?![a-zA-Z])", cond) else None


# -- ISO 31-11 intervals ------------------------------------------------------------------------
_ISO_INTERVAL = re.compile(r"^([\[\]])([^\[\](){},]{1,80}),([^\[\](){},]{1,80})([\[\]])$")


def iso_interval(s: str) -> str | None:
    """``]1, 2]`` -> ``(1, 2]`` and ``[1, 2[`` -> ``[1, 2)``: a square bracket turned outwards is
    an open end (ISO 31-11, as taught in France and elsewhere). None unless one bracket is turned
    outwards (``[1, 2]`` is already plain)."""
    m = _ISO_INTERVAL.match(untrusted.strip(s))
    if not m or (m.group(1) == "[" and m.group(4) == "]"):
        return None
    left = "(" if m.group(1) == "]" else "["
    right = ")" if m.group(4) == "[" else "]"
    return f"{left}{m.group(2)},{m.group(3)}{right}"


# -- absolute-value inequalities ----------------------------------------------------------------
def abs_union(label: str, brackets: str, low: str, high: str) -> str | None:
    """An interval read from ``low ≤ |v| ≤ high`` as the interval text of the values of ``v``:
    ``(|z|, "[]", "1", "3/2")`` -> ``[-3/2, -1] \\cup [1, 3/2]``. None unless ``label`` is an
    absolute value and the bounds are plain non-negative rationals or infinity."""
    if not (label.startswith("|") and label.endswith("|")):
        return None
    lo = Fraction(0) if low == "-\\infty" else _rational(low)
    hi = None if high == "\\infty" else _rational(high)
    if lo is None or (hi is None and high != "\\infty") or lo < 0 or (hi is not None and hi < lo):
        return None
    left, right = brackets[0], brackets[1]
    if hi is None:
        if lo == 0 and left == "[":
            return "(-\\infty, \\infty)"
        return f"(-\\infty, -{low}{']' if left == '[' else ')'} \\cup {left}{low}, \\infty)"
    if lo == 0 and low == "-\\infty":  # |v| < b
        return f"{'[' if right == ']' else '('}-{high}, {high}{right}"
    flip = {"[": "]", "(": ")"}[left]
    mirror = {"]": "[", ")": "("}[right]
    return f"{mirror}-{high}, -{low}{flip} \\cup {left}{low}, {high}{right}"


_RATIONAL = re.compile(
    r"^(\d{1,12}(?:\.\d{1,12})?)$|^(\d{1,12})\s*/\s*(\d{1,12})$|^\\frac\{(\d{1,12})\}\{(\d{1,12})\}$"
)


def _rational(s: str) -> Fraction | None:
    m = _RATIONAL.match(untrusted.strip(s))
    if not m:
        return None
    if m.group(1):
        return Fraction(m.group(1))
    num, den = (m.group(2), m.group(3)) if m.group(2) else (m.group(4), m.group(5))
    return Fraction(int(num), int(den)) if int(den) else None


# -- function labels ----------------------------------------------------------------------------------
_FUNCTION_LABEL = re.compile(r"^[a-zA-Z]\(([a-z])\)$")


def same_function(a: str, b: str, value: str) -> bool:
    """``y`` and ``f(x)`` name one function when the value is an expression in ``x``; ``f(x)`` and
    ``f(t)`` name one function (its argument is a bound variable; ``f(2)`` and ``f(3)`` differ)."""
    ma, mb = _FUNCTION_LABEL.match(a), _FUNCTION_LABEL.match(b)
    if ma and mb and a[0] == b[0]:
        return True
    for x, y in ((a, b), (b, a)):
        m = _FUNCTION_LABEL.match(y)
        if x == "y" and m and re.search(rf"(?<![a-zA-Z\\]){m.group(1)}(?![a-zA-Z])", value):
            return True
    return False


# -- rounded golds ------------------------------------------------------------------------------------
_ROUNDED = re.compile(r"^([+-]?)(\d{0,30})\.(\d{1,30})$")


def rounded_decimal(s: str) -> tuple[Fraction, Fraction] | None:
    """A decimal written with a point and at least two significant digits, as (value, half a unit
    in its last digit): ``3.14`` -> (157/50, 1/200). None for an integer, ``0.3`` or other text."""
    m = _ROUNDED.match(untrusted.strip(s))
    if not m or len((m.group(2) + m.group(3)).lstrip("0")) < 2:
        return None
    value = Fraction(int(m.group(2) + m.group(3)), 10 ** len(m.group(3)))
    return (-value if m.group(1) == "-" else value), Fraction(1, 2 * 10 ** len(m.group(3)))


def terminates(q: Fraction) -> bool:
    """Whether ``q`` has a finite decimal expansion (its denominator has no prime but 2 and 5)."""
    d = q.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1
