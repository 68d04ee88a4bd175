"""Cohen's kappa: the one agreement measure of the judge calibration and the inspection gate.

``cohen_kappa(matrix)`` reads a confusion matrix (first rater's label -> second rater's label ->
count) and returns ``(kappa, observed agreement)``, with ``kappa = (p_o - p_e) / (1 - p_e)``.
``pair_kappa(first, second)`` counts two raters' labels, pair by pair, into such a matrix.

Edge cases, where the formula has no answer and a made-up number would mislead:

- empty (no counted pair): ``(None, None)`` -- nothing was measured;
- both raters used one and the same label for every item: chance agreement ``p_e`` is 1, so
  kappa is ``None`` (undefined) while the observed agreement is 1.0. Such a set cannot show
  agreement beyond chance however the raters behave (a too-easy or too-hard set; human labels
  all "correct"). Callers that must decide treat ``None`` as "not measured", never as 1.0;
- each rater constant but with different labels: ``p_e`` is 0 and kappa is 0.0, as the formula
  gives.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

Label = TypeVar("Label", bound=Hashable)


def cohen_kappa(
    matrix: Mapping[Label, Mapping[Label, int]], classes: Sequence[Label] | None = None
) -> tuple[float | None, float | None]:
    """(kappa, observed agreement) of a square confusion matrix over ``classes`` (default: every
    label either rater used); see the module docstring for the empty and one-label cases."""
    if classes is None:
        classes = list(dict.fromkeys([*matrix, *(b for row in matrix.values() for b in row)]))
    total = sum(matrix.get(a, {}).get(b, 0) for a in classes for b in classes)
    if total == 0:
        return None, None
    p_o = sum(matrix.get(c, {}).get(c, 0) for c in classes) / total
    rows = {c: sum(matrix.get(c, {}).get(b, 0) for b in classes) / total for c in classes}
    cols = {c: sum(matrix.get(a, {}).get(c, 0) for a in classes) / total for c in classes}
    p_e = sum(rows[c] * cols[c] for c in classes)
    if abs(1.0 - p_e) < 1e-12:
        return None, p_o
    return (p_o - p_e) / (1.0 - p_e), p_o


def pair_kappa(first: Sequence[Label], second: Sequence[Label]) -> float | None:
    """Cohen's kappa of two raters' labels for the same items, in order (``None`` when empty or
    when both used one and the same label throughout)."""
    matrix: dict[Label, dict[Label, int]] = {}
    for a, b in zip(first, second, strict=True):
        row = matrix.setdefault(a, {})
        row[b] = row.get(b, 0) + 1
    return cohen_kappa(matrix)[0]
