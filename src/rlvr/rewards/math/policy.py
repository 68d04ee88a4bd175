"""``MathPolicy``: how the ``math`` verifier compares two answers (every field is a task-file option).

Its own module so that the comparison modules (``math.core``, ``math.sym``) can both read it
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class MathPolicy:
    """How two answers are compared. Every field is a task-file option of the ``math`` term.

    ordered_lists: a bare list ``1, 2, 3`` must match in order (hendrycks MATH's convention);
        False compares bare lists as multisets. Sets ``\\{…\\}`` are always unordered, tuples and
        intervals always ordered. A question that asks for all solutions ("Find all real x",
        "Enter all the solutions"; ``math.question``) turns it off for its own samples.
    rel_tol / abs_tol: numeric tolerance; the default is exact up to 30-digit evaluation noise.
        Raise ``rel_tol`` (e.g. 1e-4) only when the task accepts rounded decimals.
    form: ``equivalent`` (any equal value counts) or ``structural`` (the parsed expressions must
        be identical after sympy's automatic canonicalisation: ``x^2-1`` does not match
        ``(x-1)(x+1)``; ``2x+1`` matches ``1+2x``; an unsimplified answer -- ``2/4``, ``3/1``,
        ``\\sqrt{8}`` -- does not match a simplified ground truth).
    angles: ``plain`` (a degree sign is dropped: 45° equals 45), ``degrees`` (a degree sign
        means ×π/180: 45° equals π/4, and no longer 45) or ``either`` (both readings: 45° equals
        π/4 and 45; a task whose golds mix degrees and radians). Plain by default: a gold of
        ``\\frac{\\pi}{4}`` accepts ``45^\\circ`` only where the task says so.
    percent: ``strip`` (50% equals 50), ``fraction`` (50% equals 0.5) or ``either``.
    assignment: ``x = 3`` counts as ``3``, and so does any labelled value (``f(2) = 3``,
        ``|AB| = 3``, ``(p, q) = (3, 2)``); when both sides give labels they must match label by
        label. False compares ``x = 3`` as an equation.
    decimal_comma: ``1000,99`` is 1000.99 and ``1{,}5`` is 1.5 (then a list needs ``;`` or a
        space after its commas). Off by default: ``1,500`` is then fifteen hundred.
    gold_precision: a decimal gold of two or more significant digits is read to its own precision
        when the task states no tolerance (``rel_tol``/``abs_tol`` at their defaults): an exact
        answer that rounds to it counts (``\\pi`` answers ``3.14``, ``\\frac{1}{3}`` answers
        ``0.33``). Only an answer whose value has no finite decimal expansion -- an irrational
        number or a fraction such as 1/3 -- can be a rounding; a decimal answer (``3.141``) or a
        terminating fraction (``\\frac{157}{50}``) must equal the gold, and ``0.3`` (one digit)
        is read exactly. False: every gold is exact.
    rename: an answer that names its free variables differently is equal when one renaming of the
        names the gold does not use onto the ones the answer does not use makes them equal
        (alpha-equivalence: ``k(k+1)/2`` answers ``n(n+1)/2``; ``f(t) = t^2`` answers ``f(x) = x^2``).
        A name both sides use keeps its meaning, and the verifier keeps every name the question
        mentions (``2y+1`` does not answer ``2x+1`` for a question about ``x`` and ``y``).
    chained: the last side of a chained equation counts (``x = 2 + 3 = 5`` answers 5; a gold
        ``z = 1 + 1 = 2`` is 2), unless the gold's value is itself an equation. Off by default:
        such an answer is compared as written.
    """

    ordered_lists: bool = True
    rel_tol: float = 1e-9
    abs_tol: float = 0.0
    form: Literal["equivalent", "structural"] = "equivalent"
    angles: Literal["plain", "degrees", "either"] = "plain"
    percent: Literal["strip", "fraction", "either"] = "strip"
    assignment: bool = True
    decimal_comma: bool = False
    chained: bool = False
    gold_precision: bool = True
    rename: bool = True
