"""A scalar's value: a plain rational as an exact ``Fraction``, anything else through the
hand-written parser ``math.fast`` (nothing is ever ``eval``-ed). What that parser does not read is
a ``ParseFailure`` with its reason (the answer is not equal; a gold that fails is the task's), never
a second, looser reading: the ANTLR grammar ``latex2sympy2_extended`` is not on this path (it stays
a test oracle, ``tests/rewards/math/test_math_fast.py``). Runs in the worker processes of
``rlvr.rewards.math``; sympy is imported lazily."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..rules import untrusted
from .text import ParseFailure, fast_rational, to_latex

_IMAGINARY = re.compile(r"(?<![\\a-zA-Z])i(?![a-zA-Z])")
_BOUND_I = re.compile(r"_\{?\s*i\b|(?<![a-zA-Z])i\s*(?:=|\\in)|\\sum|\\prod")


def imaginary(s: str) -> bool:
    """Whether a standalone ``i`` in ``s`` is the imaginary unit: it is, unless something binds
    it as an index (``\\sum_{i=1}``, ``a_i``, ``i = 1``)."""
    return bool(_IMAGINARY.search(s)) and not _BOUND_I.search(s)


_INFINITY = re.compile(r"^\s*([+-]?)\s*\\infty\s*$")

# Text is never algebra (issue 34, rule 3): a run of three or more letters outside a command is a
# word, and a word is not a product of symbols ("42 squared", "7 factorial" do not parse). The
# names below are the ones the parser reads as functions or constants.
MATH_NAMES = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan arccot arcsec arccsc sinh cosh tanh coth sech csch "
    "log ln lg exp sqrt pi inf infty infinity mod gcd lcm max min det".split()
)
_COMMANDS = re.compile(
    r"\\(?:begin|end|operatorname|mathrm|mathbf|mathbb|mathcal|text|textbf|textnormal|mbox)\s*\{[^{}]*\}|\\[a-zA-Z]+"
)
_LETTERS = re.compile(r"[a-zA-Z]{3,}")
_POINT_NAME = re.compile(r"[A-Z]{3,4}")  # CAB in \\angle CAB, ABCD: points, not a word
# A whole answer in words ("no solution", "neon", "on"): compared as text, never as algebra.
_TEXT_ANSWER = re.compile(r"[A-Za-z]+(?:[ '-][A-Za-z]+)*")


def word_in(latex: str) -> str | None:
    """The first word (three or more letters that are not a command or a known function or
    constant name) in ``latex``, or None."""
    for m in _LETTERS.finditer(_COMMANDS.sub(" ", latex)):
        if untrusted.fold_case(m.group(0)) not in MATH_NAMES and not _POINT_NAME.fullmatch(m.group(0)):
            return m.group(0)
    return None


def text_answer(s: str) -> str | None:
    """An answer written only in letters (two or more; no digits, operators or commands) as its
    case-folded letters, or None: such answers compare as text, letter by letter in order, never
    as a product of commuting symbols (``on`` is not ``no``; ``c x`` is ``cx``)."""
    t = untrusted.collapse(s)
    if not _TEXT_ANSWER.fullmatch(t) or untrusted.fold_case(t) in MATH_NAMES:
        return None
    letters = "".join(untrusted.words(untrusted.fold_case(t)))
    return letters if len(letters) >= 2 else None


OUTSIDE = "outside the forms rlvr.rewards.math.fast reads"


@lru_cache(maxsize=8192)
def parse_scalar(s: str) -> Any:
    """A scalar's value: a ``Fraction`` or a sympy object. Cached: ground truths repeat."""
    q = fast_rational(s)
    if q is not None:
        return q
    from . import fast as mathfast

    latex = to_latex(s)
    word = word_in(latex)
    if word is not None:
        raise ParseFailure(f"{word!r} is a word, not math")
    inf = _INFINITY.match(latex)
    if inf:  # an interval's open end
        import sympy

        return -sympy.oo if inf.group(1) == "-" else sympy.oo
    imag = imaginary(latex)
    try:
        value = mathfast.parse(latex, imaginary=imag, undefined=True)
    except mathfast.Undefined as exc:
        raise ParseFailure(f"{s[:80]!r} is undefined: {exc}") from None
    if value is not None:
        return value
    raise ParseFailure(f"cannot parse {s[:80]!r}: {OUTSIDE}")
