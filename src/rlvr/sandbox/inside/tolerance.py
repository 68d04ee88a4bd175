"""Float tolerance, in one place: the test child's ``float_tolerance`` and the stdin/stdout
``float`` checker both call ``numbers_close``. In the inside package (standard library only),
because the test child runs it; the trainer's ``checkers.py`` imports it from there.

The rule: ``a`` and ``b`` are close when they are equal, or both finite and
``|a - b| <= max(rel_tol * max(|a|, |b|), abs_tol)``. So an infinity is close only to the same
infinity, NaN to nothing (not even NaN), and a finite number never to an infinity, whatever the
tolerance: ``abs(a - b) <= tol * max(1, |a|, |b|)`` would make infinity equal to every number.
"""

from __future__ import annotations

import math


def numbers_close(a: float, b: float, rel_tol: float, abs_tol: float) -> bool:
    """Are the doubles ``a`` and ``b`` within the tolerance? (See the module docstring.)"""
    if a == b:
        return True  # equal finite numbers, or the same infinity (NaN is never equal)
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(a - b) <= max(rel_tol * max(abs(a), abs(b)), abs_tol)
