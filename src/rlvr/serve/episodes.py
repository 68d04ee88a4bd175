"""``rlvr serve`` on an episode task: ``POST /v1/score`` scores whole episodes.

A sample's ``completion`` is then the episode as the message list after the prompt (assistant
turns with ``tool_calls``, ``tool`` messages with the results), the shape TRL passes reward
functions and an agent loop (verl, OpenRLHF's ``--agent_func_path``) holds after its last turn.
Each sample is scored like a training episode (``rlvr.episodes.EpisodeRewards``): the task's
terms on the final answer, plus the episode terms. The client ran the tools, so the server
knows a call's outcome only from its result: a result that starts with ``error`` is a failed
call (the form rlvr's own tools answer with). A plain-text completion is an episode of one turn.
``/get_reward`` (OpenRLHF's single-turn protocol) keeps scoring text. ``rlvr score --task`` on an
episode task scores a file's lines the same way (``score_episode_file``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..episodes import Episode, EpisodeRewards, from_messages
from ..rewards.base import Sample
from ..rewards.combine import Scored

if TYPE_CHECKING:
    from ..task import Task

__all__ = ["EpisodeSample", "ServedEpisodes", "TermInfo", "episode_samples", "score_episode_file"]


@dataclass(frozen=True)
class EpisodeSample(Sample):
    """A request's sample with its episode (``completion`` is the episode's final answer)."""

    episode: Episode | None = None


def episode_samples(body: Mapping[str, Any], samples: Sequence[Sample]) -> list[Sample]:
    """``samples`` (as ``rlvr_samples`` read them from ``body``) with each one's episode."""
    out: list[Sample] = []
    for raw, s in zip(body.get("samples") or [], samples, strict=True):
        completion = raw.get("completion") if isinstance(raw, Mapping) else None
        msgs = completion if isinstance(completion, list) else [{"role": "assistant", "content": str(completion)}]
        episode = from_messages([m for m in msgs if isinstance(m, Mapping)])
        out.append(EpisodeSample(episode.final, s.row, s.prompt, s.completion_ids, episode))
    return out


@dataclass(frozen=True)
class TermInfo:
    """A term's name and weight, as the server's ``meta`` lists them."""

    name: str
    weight: float


class ServedEpisodes:
    """The reward set the server scores an episode task with (``names``, ``terms``, ``score``,
    ``total``: what ``serve.scoring.Scorer`` reads of a ``RewardSet``)."""

    def __init__(self, task: Task) -> None:
        assert task.environment is not None
        self.rewards = EpisodeRewards(task.reward_set(), task.environment)
        self.terms = [
            *(TermInfo(t.name, t.weight) for t in self.rewards.base.terms),
            *(TermInfo(n, w) for n, w in task.environment.terms),
        ]

    @property
    def names(self) -> list[str]:
        return self.rewards.names

    def score(self, samples: Sequence[Sample], offset: int = 0) -> list[Scored]:
        episodes = [
            s.episode
            if isinstance(s, EpisodeSample) and s.episode is not None
            else from_messages([{"role": "assistant", "content": s.completion}])
            for s in samples
        ]
        return self.rewards.score(episodes, [s.row for s in samples], [s.prompt for s in samples])

    def total(self, scored: Scored) -> float | None:
        return self.rewards.total(scored)


def score_episode_file(task: Task, path: str | Path, out: str | Path | None = None) -> Any:
    """``rlvr score --task`` on an episode task: every line's ``completion`` (the episode's message
    list, or plain text) scored like ``/v1/score`` scores it; writes ``<name>.scored.jsonl`` (or
    ``out``) and returns the ``ScoreSummary``."""
    import time

    from ..errors import DataError
    from ..rewards.scoring import default_output, read_completions, scored_row, summarize, to_sample, write_jsonl

    start = time.monotonic()
    rows = read_completions(path)
    target = Path(out) if out is not None else default_output(path)
    if target.resolve() == Path(path).resolve():
        raise DataError(f"{path}: refusing to overwrite the input file with scores; choose another --out")
    rewards: Any = ServedEpisodes(task)
    samples = episode_samples({"samples": rows}, [to_sample(r) for r in rows])
    scored = rewards.score(samples)
    write_jsonl(target, [scored_row(r, s, rewards) for r, s in zip(rows, scored, strict=True)])
    return summarize(rewards, scored, str(path), str(target), time.monotonic() - start)
