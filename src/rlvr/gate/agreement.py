"""Agreement between the reward and the reviewer: per-sample state, confusion matrix, Cohen's kappa.

The reward puts each sample in one class: ``pass`` (the correctness term said correct), ``fail``
(wrong or unparseable) or ``masked`` (a term could not decide, so TRL leaves it out). The
reviewer's verdict implies a class too:

- ``right``: the class the reward gave *when the reviewer looked* (stored with the verdict);
- ``higher``: ``pass`` (a failed or masked sample should have scored; a passing one should have
  scored more, e.g. partial credit);
- ``lower``: ``fail``.

The confusion matrix counts (reward class now, reviewer class) over reviewed samples, and Cohen's
kappa is computed from it: ``(p_o - p_e) / (1 - p_e)`` (``rlvr.rewards.kappa.cohen_kappa``, the
same function the judge calibration uses; it is importable from here too). Kappa is ``None``
(undefined) when ``p_e == 1``, i.e. reward and reviewer each used a single class, the same one -- common on a
too-easy or too-hard set, and the reason status always prints the raw counts too. The gate does
not use kappa to pass; it needs every sample read and no open disagreement.

A sample's state, from its latest verdict:

- ``unreviewed``: no verdict yet;
- ``agrees``: marked right, and the reward has not changed since;
- ``changed``: marked right, but a rescore changed the reward since -- open, read it again;
- ``open``: marked higher/lower and the reward has not moved that way;
- ``resolved``: marked higher/lower and a rescore moved the reward that way, into the reviewer's
  class (a format fix that adds 0.1 to a wrong answer does not resolve "should pass");
- ``accepted``: marked higher/lower with a recorded reason why it is acceptable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..rewards.kappa import cohen_kappa
from .store import CLASSES, InspectionSample, Review, same_total

OPEN_STATES = ("unreviewed", "changed", "open")


def reviewer_class(review: Review) -> str:
    if review.label == "right":
        return review.reward_class
    return "pass" if review.label == "higher" else "fail"


def sample_state(sample: InspectionSample, review: Review | None) -> str:
    if review is None:
        return "unreviewed"
    if review.label == "right":
        unchanged = same_total(review.reward_total, sample.rollout.total) and review.reward_class == sample.reward_class
        return "agrees" if unchanged else "changed"
    if review.accepted:
        return "accepted"
    if sample.reward_class == reviewer_class(review) and sample.rollout.total is not None:
        before = review.reward_total
        if before is None:  # was masked: any decided score in the reviewer's class resolves it
            return "resolved"
        moved = sample.rollout.total > before if review.label == "higher" else sample.rollout.total < before
        if moved and not same_total(sample.rollout.total, before):
            return "resolved"
    return "open"


@dataclass(frozen=True)
class SampleStatus:
    sample: InspectionSample
    review: Review | None
    state: str

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    @property
    def is_disagreement(self) -> bool:
        return self.state in ("changed", "open")


@dataclass(frozen=True)
class Agreement:
    """Everything ``rlvr inspect status`` prints, and what the gate record stores."""

    n: int
    reviewed: int
    states: Mapping[str, int]
    labels: Mapping[str, int]
    matrix: Mapping[str, Mapping[str, int]]  # reward class -> reviewer class -> count
    kappa: float | None
    observed_agreement: float | None
    open_ids: tuple[int, ...]
    disagreement_ids: tuple[int, ...]

    @property
    def passed(self) -> bool:
        """Every sample has a verdict and no disagreement is open."""
        return self.n > 0 and not self.open_ids

    def to_json(self) -> dict[str, Any]:
        return {
            "samples": self.n,
            "reviewed": self.reviewed,
            "states": dict(self.states),
            "labels": dict(self.labels),
            "confusion": {
                "rows": "reward",
                "columns": "reviewer",
                "classes": list(CLASSES),
                "counts": {k: dict(v) for k, v in self.matrix.items()},
            },
            "kappa": self.kappa,
            "observed_agreement": self.observed_agreement,
            "open": list(self.open_ids),
            "passed": self.passed,
        }


def statuses(samples: Sequence[InspectionSample], latest: Mapping[int, Review]) -> list[SampleStatus]:
    return [SampleStatus(s, latest.get(s.id), sample_state(s, latest.get(s.id))) for s in samples]


def agreement(samples: Sequence[InspectionSample], latest: Mapping[int, Review]) -> Agreement:
    sts = statuses(samples, latest)
    matrix: dict[str, dict[str, int]] = {a: dict.fromkeys(CLASSES, 0) for a in CLASSES}
    states: dict[str, int] = dict.fromkeys(("unreviewed", "agrees", "changed", "open", "resolved", "accepted"), 0)
    labels: dict[str, int] = dict.fromkeys(("right", "higher", "lower"), 0)
    for st in sts:
        states[st.state] += 1
        if st.review is not None:
            labels[st.review.label] += 1
            matrix[st.sample.reward_class][reviewer_class(st.review)] += 1
    kappa, p_o = cohen_kappa(matrix, CLASSES)
    return Agreement(
        n=len(sts),
        reviewed=sum(st.review is not None for st in sts),
        states=states,
        labels=labels,
        matrix=matrix,
        kappa=kappa,
        observed_agreement=p_o,
        open_ids=tuple(st.sample.id for st in sts if st.is_open),
        disagreement_ids=tuple(st.sample.id for st in sts if st.is_disagreement),
    )


def format_agreement(a: Agreement) -> str:
    """The status report as plain text (what ``rlvr inspect status`` prints)."""
    lines = [f"{a.reviewed}/{a.n} samples reviewed; " + ", ".join(f"{k} {v}" for k, v in a.states.items() if v)]
    lines.append("confusion matrix (rows: reward, columns: reviewer):")
    lines.append(f"  {'':>8} " + " ".join(f"{c:>7}" for c in CLASSES))
    for r in CLASSES:
        lines.append(f"  {r:>8} " + " ".join(f"{a.matrix[r][c]:>7}" for c in CLASSES))
    kappa = (
        "undefined (both sides used one and the same class)"
        if a.kappa is None and a.reviewed
        else ("n/a" if a.kappa is None else f"{a.kappa:.3f}")
    )
    agree = "" if a.observed_agreement is None else f", observed agreement {a.observed_agreement:.3f}"
    lines.append(f"Cohen's kappa: {kappa}{agree}")
    lines.append(
        "gate: PASSES (every sample read, no open disagreement)"
        if a.passed
        else f"gate: not passing ({len(a.open_ids)} samples unreviewed or open)"
    )
    return "\n".join(lines)
