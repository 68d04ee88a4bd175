"""The weighted total, read from the weights: can a wrong answer outscore a correct one of the same
length? (``rlvr task check`` refuses such a weighting; the audit also tries it on real rows.)

TRL adds the terms: ``total = sum(weight * score)``. The success term separates a correct
answer from a wrong one by ``weight * gap`` (``gap`` = 1 for a built-in that scores 1 or 0).
Every other *shaping* term can move the total the other way by ``weight * (max - min)`` of its
score: a format term scores a wrong but well-formed answer 1 and a correct answer with trailing
text 0; a repetition penalty can fall on the correct answer and not on the wrong one. So a
wrong answer can outscore a correct one of the same length exactly when

    sum over shaping terms of weight * swing  >  success weight * gap

(with ``format`` at weight 2 and ``exact`` at 1: 2 > 1, and a wrong well-formed answer scores 2
against the correct one's 1). Equality is a tie, reported as a note.

What moves with the length alone (``length_penalty``, ``overlong``: the same for two answers of
the same length) has no swing here. Other correctness terms (exact, math, json, tool_call,
unit_tests, judge) are assumed to agree with the success term on which answers are right and
are left out; a custom term's range is unknown unless it declares ``score_range = (lo, hi)``,
and a success term with partial credit has no fixed gap: both are named in the notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import Problem
from .base import kind_of
from .combine import Term

__all__ = ["swing_of", "weighting_check"]

CORRECTNESS_KINDS = frozenset({"answer", "json", "tool_call", "code", "judge"})


def swing_of(verifier: Any) -> float | None:
    """How far the term can move the total against a correct answer, relative to a wrong one of
    the same length, per unit of weight; None when unknown (a custom term without
    ``score_range``). Correctness terms: 0 (see the module docstring)."""
    declared = getattr(verifier, "score_range", None)
    if isinstance(declared, tuple) and len(declared) == 2 and all(isinstance(x, int | float) for x in declared):
        return float(declared[1] - declared[0])
    kind = kind_of(verifier)
    name = type(verifier).__name__
    # A wrapped length term takes its base's kind: recognise it by its class first.
    if kind == "length" or name in ("LengthPenalty", "OverlongPenalty", "RepetitionPenalty"):
        # Between two answers of the same length only the repetition penalty (content) and a
        # penalty that falls on correct answers alone (apply_to: correct) can differ.
        largest = float(getattr(verifier, "largest_penalty", 1.0))
        content = name == "RepetitionPenalty" or getattr(verifier, "apply_to", "all") == "correct"
        penalty = largest if content else 0.0
        base = getattr(verifier, "base", None)
        if base is None:
            return penalty
        if kind_of(base) in CORRECTNESS_KINDS:
            # The wrapped base gives the correct answer its gap (1) first.
            return max(0.0, penalty - 1.0)
        inner = swing_of(base)
        return None if inner is None else penalty + inner
    if kind == "format":
        return 1.0
    if kind in CORRECTNESS_KINDS:
        return 0.0
    return None


def weighting_check(terms: Sequence[Term], success: str | None, where: str) -> tuple[list[Problem], list[str]]:
    """(problems, notes) for the task's weights: a problem when a wrong answer can outscore a
    correct one of the same length, a note for a tie or for what could not be checked."""
    term = next((t for t in terms if t.name == success), None)
    if term is None or not math.isfinite(term.weight) or term.weight <= 0:
        return [], []
    notes = []
    gap = 1.0
    if getattr(term.verifier, "partial_credit", False):
        notes.append(
            f"the success term {term.name!r} gives partial credit, so a wrong answer can score close to a correct "
            "one: the weights cannot guarantee that a correct answer outscores it"
        )
        gap = 0.0
    swings, unknown = [], []
    for t in terms:
        if t is term or t.weight == 0:
            continue
        s = swing_of(t.verifier)
        if s is None:
            unknown.append(t.name)
        elif s > 0:
            swings.append((t.name, abs(t.weight) * s))
    if unknown:
        notes.append(
            f"term(s) {', '.join(unknown)}: score range unknown (a custom verifier can declare "
            "score_range = (lo, hi)); not counted in the weighted-total check"
        )
    against = sum(s for _, s in swings)
    favour = term.weight * gap
    parts = " + ".join(f"{name} {s:g}" for name, s in swings)
    if gap and against > favour + 1e-12:
        return [
            Problem(
                where,
                f"a wrong answer can outscore a correct one of the same length: the shaping terms can move the "
                f"total by {against:g} ({parts}) against the correct answer, more than the success term "
                f"{term.name!r} gives it ({term.weight:g} x {gap:g})",
                f"give {term.name!r} a weight above {against:g}, or lower the shaping terms' weights "
                "(e.g. success 1.0, format 0.1)",
            )
        ], notes
    if gap and swings and abs(against - favour) <= 1e-12:
        notes.append(
            f"a wrong answer can tie a correct one of the same length: the shaping terms ({parts}) can move the "
            f"total by as much as the success term {term.name!r} gives ({favour:g})"
        )
    return [], notes
