"""Combined exploits: the weighted total, not one term at a time.

TRL trains on ``sum(weight * score)``. A set of terms can each look sound alone and still let a
wrong answer outscore a correct one: with ``format`` at weight 2 and ``exact`` at 1, a wrong
well-formed answer scores 2 and a correct one with a sentence after the span scores 1. So the
audit scores, on each sampled prompt, correct completions that a shaping term may dislike (the
bare answer span; the span followed by a sentence; the span without the think block the format
asks for) against wrong completions of the *same length in characters* (the wrong answer in a
well-formed span, padded with reasoning text before the span), with every term, and compares the
weighted totals, on the prompts where the success term itself scores the correct answer above the
wrong one (where it does not, the per-term audit says so). A wrong completion above a correct one
is a task-level problem; a tie is a note.
The weights are also read directly (``rlvr.rewards.ranking.weighting_check``).

Approximation: "same length" is the same number of characters; token counts of the two may
differ by a few tokens, which a length term at these lengths does not see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..rewards.base import Sample, ground_truth
from ..rewards.combine import RewardSet
from ..rewards.ranking import weighting_check
from .answers import perturb
from .tokens import TokenLengths

if TYPE_CHECKING:
    from ..task.spec import Task

__all__ = ["combined_problems"]

EPS = 1e-9
_TRAILING = " That is my final answer; I hope this helps with the rest of the problem set."
_FILLER = "Let me work through this carefully step by step before answering. "


def _pad(completion: str, n: int) -> str:
    """``completion`` with ``n`` characters of reasoning text before its answer (inside the think
    block when it has one)."""
    filler = (_FILLER * (n // len(_FILLER) + 1))[:n]
    at = completion.find("</think>")
    return completion[:at] + filler + completion[at:] if at != -1 else filler + completion


def _corrects(task: Task, gold: str) -> list[tuple[str, str]]:
    fmt = task.answer
    plain = fmt.wrap(gold)
    out = [("the correct answer", plain), ("the correct answer, then a sentence", plain + _TRAILING)]
    if fmt.think in ("required", "prefilled"):
        bare = replace(fmt, think="none").wrap(gold)
        out.append(("the correct answer without the think block", bare))
    return out


def combined_problems(
    task: Task, reward_set: RewardSet, rows: Sequence[Mapping[str, Any]], lengths: TokenLengths, seed: int = 0
) -> tuple[list[str], list[str]]:
    """(problems, notes): where the weighted total ranks a wrong answer above (problem) or level
    with (note) a correct one of the same length, on the sampled rows and from the weights."""
    success = getattr(task, "success", None) or None
    static, notes = weighting_check(reward_set.terms, success, f"{task.path}: rewards")
    problems = [f"{p.what} (fix: {p.fix})" for p in static]
    column = task.answer_column
    golds = [ground_truth(r, column) for r in rows]
    distractors = tuple(dict.fromkeys(g for g in golds if g))
    plan: list[tuple[int, str, str, str]] = []  # (row, what the correct one is, correct, wrong)
    for i, gold in enumerate(golds):
        if not gold:
            continue
        wrong = task.answer.wrap(perturb(gold, distractors, seed))
        for what, correct in _corrects(task, gold):
            if len(correct) >= len(wrong):
                plan.append((i, what, correct, _pad(wrong, len(correct) - len(wrong))))
    if not plan:
        return problems, notes
    samples = []
    for i, _, correct, wrong in plan:
        prompt = str(task.render_prompt(rows[i]))
        for text in (correct, wrong):
            samples.append(Sample(text, rows[i], prompt, lengths.ids(text)))
    scored = reward_set.score(samples)
    worst: tuple[float, str, str, str, float, float] | None = None
    ties = 0
    for k, (_, what, _, wrong) in enumerate(plan):
        right_total = reward_set.total(scored[2 * k])
        wrong_total = reward_set.total(scored[2 * k + 1])
        if right_total is None or wrong_total is None:
            continue
        if success in reward_set.names:
            # Only where the success term itself tells them apart: a term that accepts the wrong
            # answer is the per-term audit's finding, not the weights'.
            own_right = scored[2 * k].verdicts[success].score or 0.0
            own_wrong = scored[2 * k + 1].verdicts[success].score or 0.0
            if own_right <= own_wrong + EPS:
                continue
        margin = wrong_total - right_total
        if margin > EPS and (worst is None or margin > worst[0]):
            terms = ", ".join(
                f"{name} {scored[2 * k].verdicts[name].score:g}/{scored[2 * k + 1].verdicts[name].score:g}"
                for name in reward_set.names
            )
            worst = (margin, what, wrong, terms, right_total, wrong_total)
        elif abs(margin) <= EPS:
            ties += 1
    if worst is not None:
        _, what, wrong, terms, right_total, wrong_total = worst
        problems.append(
            f"weighted total: a wrong answer of the same length ({wrong[-60:]!r}) scores {wrong_total:g}, above "
            f"{what} at {right_total:g} (per term, correct/wrong: {terms}); raise the success term's weight "
            "or lower the shaping terms'"
        )
    elif ties:
        notes.append(
            f"weighted total: on {ties} case(s) a wrong answer of the same length scores as much as a correct one"
        )
    return problems, notes
