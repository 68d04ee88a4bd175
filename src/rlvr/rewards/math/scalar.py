"""A scalar's value: a plain rational as an exact ``Fraction``, the common LaTeX subset through
``math.fast``, anything else through ``latex2sympy2_extended`` (its ANTLR grammar; nothing is ever
``eval``-ed). Runs in the worker processes of ``rlvr.rewards.math``; sympy is imported lazily."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..rules import untrusted
from .sym import too_big
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
    if inf:  # an interval's open end: as the grammar reads it, without the grammar
        import sympy

        return -sympy.oo if inf.group(1) == "-" else sympy.oo
    imag = imaginary(latex)
    value = mathfast.parse(latex, imaginary=imag)  # the common subset, 50x faster than the grammar
    if value is not None:
        return value
    from latex2sympy2_extended import latex2sympy
    from latex2sympy2_extended.math_normalization import NormalizationConfig

    config = NormalizationConfig(
        basic_latex=True, units=False, malformed_operators=False, nits=False, boxed="none", equations=False
    )
    try:
        value = latex2sympy(latex, normalization_config=config)
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - the grammar raises plain Exception
        raise ParseFailure(f"cannot parse {s[:80]!r}: {untrusted.text_lines(str(exc))[0][:120]}") from None
    if value is None:
        raise ParseFailure(f"cannot parse {s[:80]!r}")
    try:
        if imag and hasattr(value, "subs"):
            import sympy

            value = value.subs(sympy.Symbol("i"), sympy.I)
        if hasattr(value, "doit") and type(value).__name__ in ("MatMul", "MatAdd", "MatPow") and not too_big(value):
            value = value.doit()  # 2\\begin{pmatrix}1\\\\2\\end{pmatrix} is a matrix
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - sympy refusing the text's meaning (i < 0): not math we read
        raise ParseFailure(f"cannot read {s[:80]!r}: {type(exc).__name__}: {str(exc)[:120]}") from None
    return value
