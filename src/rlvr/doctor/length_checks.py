"""Checks of completion length: length climbing with (or without) reward while quality does not
(Dr. GRPO), held-out incorrect answers growing longer, and completions truncated at the budget.
"""

from __future__ import annotations

from .findings import Finding, Patch
from .readings import REWARD_RISE, Result, setting
from .stats import late_mean, shift
from .table import Run

LENGTH_RISE = 1.25  # mean completion length up by a quarter
TRUNCATION_MAX = 0.1  # verl: clipped_ratio over 0.1 "often means you are truncating too much"


def check_length(run: Run) -> Result:
    from ..settings.recipe import VARIANTS

    dr_grpo: Patch | None = Patch(
        "Dr. GRPO", dict(VARIANTS["dr_grpo"]), why="no per-sequence length normalisation, no std scaling of advantages"
    )
    if setting(run, "loss_type") == "dr_grpo":
        dr_grpo = None
    evidence: list[str] = []
    numbers: dict[str, float | int | None] = {}
    length, reward = shift(run.series("completions/mean_length")), shift(run.series("reward"))
    has_length_term = any(w in t.lower() for t in run.term_names() for w in ("length", "overlong", "concise"))
    if (
        length is not None
        and reward is not None
        and length.early > 0
        and length.ratio >= LENGTH_RISE
        and length.rising()
    ):
        if reward.delta < REWARD_RISE or not reward.rising():
            how = "fell" if reward.falling() else "stayed flat"
            evidence.append(
                f"mean completion length rose from {length.span()} ({length.ratio:.2f}x) while reward {how} "
                f"({reward.early:.3g} to {reward.late:.3g})"
            )
        elif not has_length_term:
            evidence.append(
                f"mean completion length rose from {length.span()} ({length.ratio:.2f}x) together with reward "
                f"({reward.early:.3g} to {reward.late:.3g}), and no reward term asks for length"
            )
        if evidence:
            numbers.update(
                length_early=length.early, length_late=length.late, reward_early=reward.early, reward_late=reward.late
            )
    inc = run.series("eval/mean_length_incorrect", evals=True)
    if (
        len(inc) >= 3
        and inc.values[0] > 0
        and inc.values[-1] / inc.values[0] >= LENGTH_RISE
        and inc.values[-1] >= inc.values[-2] >= inc.values[-3]
    ):
        trail = ", ".join(f"{v:.1f}@{s}" for s, v in zip(inc.steps, inc.values, strict=True))
        evidence.append(f"held-out incorrect answers grew longer over {len(inc)} evals ({trail})")
        numbers.update(incorrect_length_first=inc.values[0], incorrect_length_last=inc.values[-1])
    if not evidence:
        return []
    return [
        Finding(
            "length_hacking",
            "warning",
            "completions/mean_length" if "length_early" in numbers else "eval/mean_length_incorrect",
            "; ".join(evidence),
            "GRPO's 1/|o| normalisation penalises long wrong answers less, so they keep growing (Dr. GRPO). Drop the "
            "length normalisation and the std scaling."
            if dr_grpo
            else "Dr. GRPO is already on: add a soft overlong punishment term, or a length budget in the reward.",
            dr_grpo,
            numbers,
        )
    ]


def check_truncation(run: Run) -> Result:
    s = run.series("completions/clipped_ratio")
    lm = late_mean(s)
    if lm is None or len(s) < 3 or lm[0] <= TRUNCATION_MAX:
        return []
    L = setting(run, "max_completion_length")
    patch = (
        Patch(
            "raise the completion budget",
            {"max_completion_length": int(L) * 2},
            why="truncated completions get a reward for text that never ended",
        )
        if isinstance(L, int)
        else None
    )
    return [
        Finding(
            "truncation",
            "warning",
            "completions/clipped_ratio",
            f"{lm[0]:.0%} of completions hit max_completion_length (={L if L is not None else 'unknown'}) over steps "
            f"{lm[1][0]}-{lm[1][1]}",
            "Over 0.1 usually means the budget is too small (verl). Raise max_completion_length; if the extra length "
            "is rambling, mask truncated completions instead.",
            patch,
            {"clipped_ratio": lm[0]},
        )
    ]
