"""What the question says about the answer's form, read from the prompt (issue 45).

One rule so far: a question that asks for *all* solutions asks for a collection with no order.
"Find all real x ...", "Determine all positive integers n ...", "Enter all the solutions,
separated by commas" -- then a bare list answers in any order (``ordered_lists`` is off for that
sample), as a set would. The phrases are anchored: "find all" / "determine all" / "list all" /
"give all" / "compute all", or "all (the) (possible) (real|integer|complex) solutions / roots /
zeros / values". "For all real x" (a condition, not a request) and "find a and b" (an ordered
pair of named values) do not match, so their lists keep their order.

A second: a letter the question mentions has the question's meaning, so an answer may not rename
it (``rename``): "y = 2x + 1 ... find y in terms of x" keeps ``2y + 1`` from answering ``2x + 1``.
The names are the single letters and Greek letters (``\\beta``, ``β``) that stand alone in the
answer and the question (a letter inside a word or another command is none).

Linear: RE2 patterns over the prompt and the answer (``rules.patterns``).
"""

from __future__ import annotations

from ..rules.patterns import compile_linear
from . import glyphs
from .fast import GREEK

_ASKS_ALL = compile_linear(
    r"(?i)\b(?:find|determine|list|give|compute|enter)\s+all\b"
    r"|\ball\s+(?:of\s+)?(?:the\s+)?(?:possible\s+)?(?:(?:real|integer|integral|complex|positive|negative)\s+)?"
    r"(?:solutions|roots|zeros|zeroes|values)\b"
)


def asks_for_all(prompt: str) -> bool:
    """Whether the question asks for all solutions (then a list has no order)."""
    return bool(prompt) and _ASKS_ALL.search(prompt) is not None


_LETTERS = compile_linear(r"\\?[A-Za-z]+")


def _names(text: str) -> set[str]:
    """Single letters and Greek letters (``\\beta`` or ``β``) standing alone in ``text``."""
    text = glyphs.to_ascii_math(text)
    return {m.group(0) for m in _LETTERS.finditer(text) if len(m.group(0)) == 1 or m.group(0) in GREEK}


_BOUND = compile_linear(r"^\s*[A-Za-z]\s*\(\s*([a-z])\s*\)\s*=")


def renames_a_mentioned_name(prompt: str, gold: str, answer: str) -> bool:
    """Whether the answer uses a single-letter name the gold does not and the question mentions:
    renaming it onto the gold's would change what the question means by it. The argument of a
    function the answer defines (``y`` in ``f(y) = 2y``) is bound there, whatever the question
    calls ``y``."""
    new = _names(answer) - _names(gold)
    bound = _BOUND.match(answer)
    if bound is not None:
        new.discard(bound.group(1))
    return bool(new & _names(prompt))
