"""What the question says about the answer's form, read from the prompt (issue 45).

One rule so far: a question that asks for *all* solutions asks for a collection with no order.
"Find all real x ...", "Determine all positive integers n ...", "Enter all the solutions,
separated by commas" -- then a bare list answers in any order (``ordered_lists`` is off for that
sample), as a set would. The phrases are anchored: "find all" / "determine all" / "list all" /
"give all" / "compute all", or "all (the) (possible) (real|integer|complex) solutions / roots /
zeros / values". "For all real x" (a condition, not a request) and "find a and b" (an ordered
pair of named values) do not match, so their lists keep their order.

Linear: one RE2 pattern over the prompt (``rules.patterns``).
"""

from __future__ import annotations

from ..rules.patterns import compile_linear

_ASKS_ALL = compile_linear(
    r"(?i)\b(?:find|determine|list|give|compute|enter)\s+all\b"
    r"|\ball\s+(?:of\s+)?(?:the\s+)?(?:possible\s+)?(?:(?:real|integer|integral|complex|positive|negative)\s+)?"
    r"(?:solutions|roots|zeros|zeroes|values)\b"
)


def asks_for_all(prompt: str) -> bool:
    """Whether the question asks for all solutions (then a list has no order)."""
    return bool(prompt) and _ASKS_ALL.search(prompt) is not None
