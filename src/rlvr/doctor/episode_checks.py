"""Checks of multi-turn tool use (``rlvr.episodes``): what ``rlvr train`` logs per batch as
``episodes/calls``, ``episodes/turns``, ``episodes/tool_error_rate``, ``episodes/invalid_call_rate``
and ``episodes/cut_off_rate``.

- ``tool_call_inflation``: calls per episode climb (a real trend, at least half a call more) while
  held-out accuracy (else the success term's training reward) does not: the policy is learning to
  call, not to answer -- looping on a tool that pays, or a reward that counts calls.
- ``tool_failures``: late in the run most calls fail or most episodes are cut off, so the episodes
  the policy learns from are mostly not the task.

Thresholds are heuristics of this project (half a call; a majority), not published constants.
"""

from __future__ import annotations

from .findings import Finding
from .readings import REWARD_RISE, Result, correctness_term, eval_noise, held_out_accuracy
from .stats import late_mean, shift
from .table import Run

CALLS_RISE = 0.5  # calls per episode: a smaller climb is not read as inflation
FAILING = 0.5  # late tool-error or cut-off rate above which the episodes are mostly broken

__all__ = ["check_tool_call_inflation", "check_tool_failures"]


def check_tool_call_inflation(run: Run) -> Result:
    calls = shift(run.series("episodes/calls"))
    if calls is None or calls.delta < CALLS_RISE or not calls.rising():
        return []
    acc = held_out_accuracy(run)
    if len(acc) >= 2:
        first, last = acc.values[0], acc.values[-1]
        if last - first > eval_noise(run, first):
            return []
        quality = f"held-out accuracy went from {first:.3g} to {last:.3g} over {len(acc)} evals"
    else:
        term = correctness_term(run)
        reward = shift(run.series(f"rewards/{term}/mean")) if term else None
        if reward is None or (reward.delta >= REWARD_RISE and reward.rising()):
            return []
        quality = f"the {term} reward went from {reward.early:.3g} to {reward.late:.3g}"
    return [
        Finding(
            "tool_call_inflation",
            "warning",
            "episodes/calls",
            f"tool calls per episode rose from {calls.span()} while {quality}",
            "The policy is learning to call tools, not to answer: read the kept rollouts for repeated calls, then "
            "add a call_budget term (environment.terms) or lower environment.max_tool_calls; rlvr.audit.episodes "
            "says whether the reward pays for repeated calls.",
            None,
            {"calls_early": calls.early, "calls_late": calls.late},
        )
    ]


def check_tool_failures(run: Run) -> Result:
    out: Result = []
    for key, what in (
        ("episodes/tool_error_rate", "of tool calls failed"),
        ("episodes/cut_off_rate", "of episodes were cut off"),
    ):
        lm = late_mean(run.series(key))
        if lm is None or lm[0] <= FAILING:
            continue
        value, (start, end) = lm
        out.append(
            Finding(
                "tool_failures",
                "warning",
                key,
                f"{value:.0%} {what} over steps {start}-{end}",
                "Most episodes are not the task: read the kept rollouts; raise environment.timeout or "
                "max_completion_length (tool results count against it), or fix the tool."
                if key.endswith("cut_off_rate")
                else "Most calls fail: read the kept rollouts' tool errors (bad arguments, timeouts, the tool itself).",
                None,
                {"late": value},
            )
        )
    return out
