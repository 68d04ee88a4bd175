"""Rewards over an episode: the task's terms on the final answer, plus the episode terms.

- The task's own terms (``rewards:``) score ``Episode.final``, the text of the last turn outside
  its tool-call blocks -- never the tool results, never an earlier turn.
- ``valid_calls``: the share of the episode's calls that were well-formed and fit their tool's
  schema (1.0 for an episode without calls: having no calls is the other terms' business).
- ``required_tools``: 1.0 when every tool of ``required`` was called and answered without error
  at least once, else 0.0.
- ``call_budget``: 0.0 up to ``call_budget`` calls, then -1/(budget+1) per extra call, down to -1.

Masking follows ``rewards.combine``: a row the final-answer terms could not decide is masked in
every term, the episode terms included (a number from them alone would be summed by TRL as if
the row were decided).

``EpisodeRewards`` has the interface ``rlvr train`` and ``rollouts.Recorder`` use of a
``RewardSet`` (``names``, ``weights``, ``trl_functions``, ``scored_trl_batch``, ``total``): TRL
passes it each completion as the episode's message list and ``environments`` (the tool sessions),
from which the episode is rebuilt (``episode.from_messages``); a kept rollout's ``completion`` is
that whole message list, tool results included.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..rewards.base import Sample, Verdict
from ..rewards.combine import RewardSet, Scored, prompt_text, reward_functions
from .environment import session_of
from .episode import Episode, from_messages
from .spec import EnvironmentSpec

__all__ = ["EpisodeRewards", "episode_metrics", "episode_verdict"]


def episode_verdict(term: str, episode: Episode, spec: EnvironmentSpec) -> Verdict:
    """One episode term's verdict (see the module docstring)."""
    calls = episode.calls
    if term == "valid_calls":
        if not calls:
            return Verdict.correct(1.0, detail="no calls")
        good = sum(c.valid for c in calls)
        score = good / len(calls)
        detail = f"{good}/{len(calls)} calls well-formed"
        return Verdict.correct(score, detail=detail) if good == len(calls) else Verdict.wrong(score, detail=detail)
    if term == "required_tools":
        used = {c.name for c in calls if c.error is None}
        missing = [t for t in spec.required if t not in used]
        if missing:
            return Verdict.wrong(0.0, detail=f"never used: {', '.join(missing)}")
        return Verdict.correct(1.0, detail=f"used {', '.join(spec.required)}")
    if term == "call_budget":
        extra = len(calls) - spec.budget
        if extra <= 0:
            return Verdict.correct(0.0, detail=f"{len(calls)} calls, budget {spec.budget}")
        return Verdict.wrong(max(-1.0, -extra / (spec.budget + 1)), detail=f"{len(calls)} calls, budget {spec.budget}")
    raise ValueError(f"unknown episode term {term!r}")


def episode_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """Means over a batch: turns, calls, tool-error and malformed-call rates, share cut off."""
    n = max(1, len(episodes))
    calls = [c for e in episodes for c in e.calls]
    return {
        "episodes/turns": sum(len(e.turns) for e in episodes) / n,
        "episodes/calls": len(calls) / n,
        "episodes/tool_error_rate": sum(c.error is not None for c in calls) / max(1, len(calls)),
        "episodes/invalid_call_rate": sum(not c.valid for c in calls) / max(1, len(calls)),
        "episodes/cut_off_rate": sum(e.cut_off for e in episodes) / n,
    }


class EpisodeRewards:
    """The reward of an episode task (see the module docstring)."""

    def __init__(self, base: RewardSet, spec: EnvironmentSpec) -> None:
        self.base = base
        self.spec = spec
        self.episode_terms = dict(spec.terms)
        self._cache_key: Any = None
        self._cache: list[Scored] = []

    @property
    def names(self) -> list[str]:
        return self.base.names + list(self.episode_terms)

    @property
    def weights(self) -> list[float]:
        return self.base.weights + list(self.episode_terms.values())

    def score(
        self, episodes: Sequence[Episode], rows: Sequence[Mapping[str, Any]], prompts: Sequence[Any]
    ) -> list[Scored]:
        """Every term's verdict for each episode (the runner's episodes: probe, gate, serve)."""
        samples = [
            Sample(completion=e.final, row=dict(r), prompt=prompt_text(p))
            for e, r, p in zip(episodes, rows, prompts, strict=True)
        ]
        return self._with_episode_terms(self.base.score(samples), episodes)

    def _with_episode_terms(self, scored: list[Scored], episodes: Sequence[Episode]) -> list[Scored]:
        out = []
        for s, e in zip(scored, episodes, strict=True):
            verdicts = dict(s.verdicts)
            for term in self.episode_terms:
                verdicts[term] = episode_verdict(term, e, self.spec)
            out.append(Scored(verdicts))
        return out

    def total(self, scored: Scored) -> float | None:
        if scored.masked:
            return None
        w = dict(zip(self.names, self.weights, strict=True))
        return sum(w[name] * (v.score or 0.0) for name, v in scored.verdicts.items() if name in w)

    def episodes(self, kwargs: Mapping[str, Any]) -> list[Episode]:
        """The batch's episodes, rebuilt from TRL's message lists and the environments' records."""
        completions = kwargs.get("completions") or []
        envs = kwargs.get("environments") or [None] * len(completions)
        out = []
        for c, env in zip(completions, envs, strict=True):
            session = session_of(env)
            records = session.calls if session is not None else []
            msgs = c if isinstance(c, list) else [{"role": "assistant", "content": str(c)}]
            out.append(from_messages(msgs, records))
        return out

    def scored_trl_batch(self, **kwargs: Any) -> list[Scored]:
        episodes = self.episodes(kwargs)
        state = kwargs.get("trainer_state")
        key = (json.dumps(kwargs.get("completions"), default=str), id(state), getattr(state, "global_step", None))
        if key == self._cache_key:
            return self._cache
        base_kwargs = {**kwargs, "completions": [e.final for e in episodes]}
        base_kwargs.pop("environments", None)
        scored = self._with_episode_terms(self.base.scored_trl_batch(**base_kwargs), episodes)
        log_metric: Callable[[str, float], None] | None = kwargs.get("log_metric")
        if log_metric is not None and episodes:
            for name, value in episode_metrics(episodes).items():
                log_metric(name, value)
        self._cache_key, self._cache = key, scored
        return scored

    def trl_functions(self) -> list[Callable[..., list[float | None]]]:
        """One TRL reward function per term (the task's, then the episode's), named after it."""
        return reward_functions(self.names, self.scored_trl_batch)
