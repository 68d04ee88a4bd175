"""The episode terms: reward terms over a sample's tool calls (``Sample.episode``).

- ``valid_calls``: the share of the episode's calls that were well-formed and fit their tool's
  schema (1.0 for an episode without calls: having no calls is the other terms' business).
- ``required_tools``: 1.0 when every tool of ``tools`` was called and answered without error at
  least once, else 0.0.
- ``call_budget``: 0.0 up to ``budget`` calls, then -1/(budget+1) per extra call, down to -1.

They are ordinary verifiers in the task's ``RewardSet`` (``rlvr.task`` adds them from the
``environment:`` section, their options from it), so the probe, the gate, the audit, the reward
server and training score the same terms. A sample without an episode is one turn and no calls.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import BaseVerifier, Reads, Sample, Verdict
from .episode import Episode

__all__ = ["EPISODE_TERMS", "CallBudget", "RequiredTools", "ValidCalls"]

EPISODE_TERMS = ("valid_calls", "required_tools", "call_budget")


def _episode(sample: Sample) -> Episode:
    return sample.episode if sample.episode is not None else Episode.single(sample.completion)


class _EpisodeTerm(BaseVerifier):
    kind = "episode"

    def reads(self) -> Reads:
        return Reads()  # no row column: only the sample's calls


class ValidCalls(_EpisodeTerm):
    score_range = (0.0, 1.0)  # rlvr.rewards.ranking: how far it can move the total against a correct answer

    def verify(self, sample: Sample) -> Verdict:
        calls = _episode(sample).calls
        if not calls:
            return Verdict.correct(1.0, detail="no calls")
        good = sum(c.valid for c in calls)
        score, detail = good / len(calls), f"{good}/{len(calls)} calls well-formed"
        return Verdict.correct(score, detail=detail) if good == len(calls) else Verdict.wrong(score, detail=detail)


class RequiredTools(_EpisodeTerm):
    score_range = (0.0, 1.0)

    def __init__(self, tools: Sequence[str] = ()) -> None:
        self.tools = tuple(tools)

    def verify(self, sample: Sample) -> Verdict:
        used = {c.name for c in _episode(sample).calls if c.error is None}
        missing = [t for t in self.tools if t not in used]
        if missing:
            return Verdict.wrong(0.0, detail=f"never used: {', '.join(missing)}")
        return Verdict.correct(1.0, detail=f"used {', '.join(self.tools)}")


class CallBudget(_EpisodeTerm):
    score_range = (-1.0, 0.0)

    def __init__(self, budget: int = 0) -> None:
        self.budget = int(budget)

    def verify(self, sample: Sample) -> Verdict:
        n = len(_episode(sample).calls)
        extra, detail = n - self.budget, f"{n} calls, budget {self.budget}"
        if extra <= 0:
            return Verdict.correct(0.0, detail=detail)
        return Verdict.wrong(max(-1.0, -extra / (self.budget + 1)), detail=detail)
