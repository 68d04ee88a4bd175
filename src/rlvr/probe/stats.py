"""The probe's statistics: the Wilson interval, the zero-variance share and expected group std at
a group size G, and the per-prompt pass-rate histogram. Pure functions of counts (no model, no
files); what each estimator assumes is stated in ``rlvr.probe``'s docstring."""

from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054
HIST_BINS = (
    (0.0, 0.0, "0"),
    (0.0, 0.25, "(0, 0.25)"),
    (0.25, 0.5, "[0.25, 0.5)"),
    (0.5, 0.75, "[0.5, 0.75)"),
    (0.75, 1.0, "[0.75, 1)"),
    (1.0, 1.0, "1"),
)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when n == 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # Exact at the edges: with 0 successes the lower bound is 0, with n it is 1 at the top.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def _group_law(successes: int, n: int, g: int) -> list[float]:
    """Estimated probability that a group of ``g`` has j successes, j = 0..g, from s of n
    samples: hypergeometric (unbiased for the binomial law) when n >= g, plug-in otherwise."""
    if n >= g:
        total = math.comb(n, g)
        return [math.comb(successes, j) * math.comb(n - successes, g - j) / total for j in range(g + 1)]
    p = successes / n
    return [math.comb(g, j) * p**j * (1 - p) ** (g - j) for j in range(g + 1)]


def zero_variance_share(counts: Sequence[tuple[int, int]], g: int) -> float:
    """Expected share of groups of size ``g`` with no reward variance, from (successes, n) per
    prompt: the mean of p^G + (1-p)^G (see the module docstring for the estimator)."""
    laws = [_group_law(s, n, g) for s, n in counts if n > 0]
    if not laws:
        return 1.0
    return sum(law[0] + law[g] for law in laws) / len(laws)


def expected_group_std(counts: Sequence[tuple[int, int]], g: int) -> float:
    """Expected Bessel-corrected std of the success indicator within a group of ``g``."""
    laws = [_group_law(s, n, g) for s, n in counts if n > 0]
    if not laws or g < 2:
        return 0.0
    stds = [math.sqrt(j * (g - j) / (g * (g - 1))) for j in range(g + 1)]
    return sum(sum(pj * sd for pj, sd in zip(law, stds, strict=True)) for law in laws) / len(laws)


def histogram(rates: Sequence[float]) -> tuple[tuple[str, int], ...]:
    """How many prompts fall in each pass-rate bin of ``HIST_BINS`` (0 and 1 are bins of their own)."""
    out = []
    for lo, hi, label in HIST_BINS:
        if lo == hi:
            out.append((label, sum(r == lo for r in rates)))
        else:
            out.append((label, sum(lo <= r < hi and r not in (0.0, 1.0) for r in rates)))
    return tuple(out)


def bound_text(rate: float) -> str:
    """A bound as a percentage with the digits it needs: 0.024 %, not 0.0 %, for 0 of 16000."""
    return f"{rate:.1%}" if rate >= 0.001 or rate == 0 else f"{rate * 100:.2g}%"


def percent(k: int, n: int) -> str:
    """``k`` of ``n`` as a percentage with the digits it needs: 2 of 512 is "0.4%", not "0%"; only
    exactly none is "0%" and exactly all "100%"."""
    if n <= 0:
        return "n/a"
    if k == 0 or k == n:
        return f"{100 * k // n}%"
    value = 100 * k / n
    for digits in (0, 1, 2, 3):
        text = f"{value:.{digits}f}"
        if 0 < float(text) < 100:
            return f"{text}%"
    return f"{value:.4g}%"
