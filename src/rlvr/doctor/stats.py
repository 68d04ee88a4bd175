"""Trend statistics over one metric series: early window vs late window.

A trend compares the mean of an early window with the mean of a late window (each a fifth of the
logged points, at least 3) with a Welch z-score. It is deliberately simple and approximate: a
short noisy run can miss a real trend or, rarely, show one; fewer than ``MIN_POINTS`` logged steps
are not judged at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .table import Series

MIN_POINTS = 6  # fewer logged steps than this and trends are not judged
WINDOW_FRACTION = 0.2  # early / late window: this share of the logged points (at least 3)
Z_SIGNIFICANT = 3.0  # a trend is real when the late-vs-early shift is this many standard errors


@dataclass(frozen=True)
class Shift:
    early: float
    late: float
    early_steps: tuple[int, int]
    late_steps: tuple[int, int]
    z: float  # Welch z of late - early; inf when both windows are constant and differ

    @property
    def delta(self) -> float:
        return self.late - self.early

    @property
    def ratio(self) -> float:
        return self.late / self.early if self.early else math.inf

    def rising(self) -> bool:
        return self.z >= Z_SIGNIFICANT

    def falling(self) -> bool:
        return self.z <= -Z_SIGNIFICANT

    def span(self) -> str:
        return (
            f"{self.early:.4g} (steps {self.early_steps[0]}-{self.early_steps[1]}) to {self.late:.4g} (steps "
            f"{self.late_steps[0]}-{self.late_steps[1]})"
        )


def mean(xs: tuple[float, ...]) -> float:
    return sum(xs) / len(xs)


def var(xs: tuple[float, ...]) -> float:
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1) if len(xs) > 1 else 0.0


def window(n: int) -> int:
    return max(3, math.ceil(n * WINDOW_FRACTION))


def shift(s: Series) -> Shift | None:
    """Early-window mean vs late-window mean, or ``None`` with too few points."""
    n = len(s)
    if n < MIN_POINTS:
        return None
    w = min(window(n), n // 2)
    e, lt = s.slice(0, w), s.slice(n - w)
    diff = mean(lt.values) - mean(e.values)
    se = math.sqrt(var(e.values) / w + var(lt.values) / w)
    z = diff / se if se > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    return Shift(mean(e.values), mean(lt.values), (e.steps[0], e.steps[-1]), (lt.steps[0], lt.steps[-1]), z)


def late_mean(s: Series) -> tuple[float, tuple[int, int]] | None:
    if len(s) == 0:
        return None
    w = min(window(len(s)), len(s))
    tail = s.slice(len(s) - w)
    return mean(tail.values), (tail.steps[0], tail.steps[-1])
