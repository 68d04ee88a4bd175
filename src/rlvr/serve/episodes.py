"""``rlvr serve`` on an episode task: both endpoints score whole episodes.

- ``POST /v1/score``: a sample's ``completion`` is the episode as the message list after the
  prompt (assistant turns with ``tool_calls``, ``tool`` messages with the results), the shape TRL
  passes reward functions and an agent loop (verl, OpenRLHF's ``--agent_func_path``) holds after
  its last turn. A plain-text completion is an episode of one turn.
- ``POST /get_reward`` (OpenRLHF's ``{"query", "prompts", "labels"}``) and the OpenRLHF adapter:
  each query's response (the query after its prompt, as sent: ``scoring.QuerySample``) is the
  episode rendered as text, as OpenRLHF's multi-turn agent keeps it (each turn the model wrote,
  then the tool results and the next generation prompt rendered by the model's chat template).
  It is read back into the message list by ``rlvr.episodes.rendered`` with the delimiters of the
  model's own (prepared) template, loaded once, on the first such request (``text_format``), then
  scored exactly as ``/v1/score`` scores that list. A response that does
  not read as an episode is scored ``unparseable`` in every term (0, not masked, counted in the
  unparseable rates) with the reader's reason, never as one turn of text (which would credit what
  a tool returned). A model whose template cannot be read back answers ``/get_reward`` with 500.

Each episode is scored like a training episode, by the task's one ``RewardSet``: the answer
terms on the final answer, the episode terms (``rlvr.rewards.calls``) on its calls. The client
ran the tools, so the server knows a call's outcome only from its result: a result that starts
with ``error`` is a failed call (the form rlvr's own tools answer with). ``rlvr score --task``
on an episode task scores a file's lines the same way (``RewardSet.sample``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..episodes import Episode, from_messages
from ..episodes.rendered import TextFormat, UnreadableEpisode, episode_from_text
from ..rewards.base import Sample, Verdict
from ..rewards.combine import Scored

if TYPE_CHECKING:
    from ..task import Task

__all__ = ["ServedEpisodes", "TermInfo", "reader_problem"]


@dataclass(frozen=True)
class TermInfo:
    """A term's name and weight, as the server's ``meta`` lists them."""

    name: str
    weight: float


class ServedEpisodes:
    """The reward set the server scores an episode task with (``names``, ``terms``, ``score``,
    ``total``: what ``serve.scoring.Scorer`` reads of a ``RewardSet``). ``model``: the model whose
    chat template rendered the texts ``/get_reward`` reads (default: the task's)."""

    def __init__(self, task: Task, model: str | None = None) -> None:
        self.rewards = task.reward_set()
        self.terms = [TermInfo(t.name, t.weight) for t in self.rewards.terms]
        self.model = model or task.resolve(task.model)
        self._format: TextFormat | None = None
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        return self.rewards.names

    def text_format(self) -> TextFormat:
        """The model's template delimiters, built once (``ConfigError``/``ModelError`` when the
        tokenizer cannot be loaded or its template cannot be read back)."""
        with self._lock:
            if self._format is None:
                from ..episodes import prepare_tokenizer
                from ..episodes.rendered import text_format
                from ..models import load_tokenizer

                self._format = text_format(prepare_tokenizer(load_tokenizer(self.model)))
            return self._format

    def episode(self, sample: Sample) -> Episode:
        """``sample``'s episode: the message list it came with, its response read back from text
        (``UnreadableEpisode`` when it does not read), or its completion as one turn."""
        if sample.episode is not None:
            return sample.episode
        response = getattr(sample, "response", None)  # scoring.QuerySample: OpenRLHF's text
        if isinstance(response, str):
            return episode_from_text(self.text_format(), response)
        return from_messages([{"role": "assistant", "content": sample.completion}])

    def score(self, samples: Sequence[Sample], offset: int = 0) -> list[Scored]:
        episodes: list[Episode] = []
        keep: list[int] = []
        unread: dict[int, Scored] = {}
        for i, s in enumerate(samples):
            try:
                episodes.append(self.episode(s))
                keep.append(i)
            except UnreadableEpisode as exc:
                v = Verdict.unparseable(f"the response does not read as an episode of the model's template: {exc}")
                unread[i] = Scored(dict.fromkeys(self.names, v))
        scored = self.rewards.score(
            [Sample.of_episode(e, samples[i].row, samples[i].prompt) for e, i in zip(episodes, keep, strict=True)]
        )
        done = dict(zip(keep, scored, strict=True))
        return [unread[i] if i in unread else done[i] for i in range(len(samples))]

    def total(self, scored: Scored) -> float | None:
        return self.rewards.total(scored)

    def gold_verdicts(self, sample: Sample) -> dict[str, Verdict | None]:
        return self.rewards.gold_verdicts(sample)

    def sample(self, completion: Any, row: Mapping[str, Any], prompt: Any = "", completion_ids: Any = None) -> Sample:
        """A client's completion (a message list, or text) as an episode (``RewardSet.sample``)."""
        return self.rewards.sample(completion, row, prompt, completion_ids)


def reader_problem(reward_set: Any) -> str | None:
    """Why ``/get_reward`` cannot read this reward set's episodes from text (the model's tokenizer
    does not load, or its template cannot be read back), or None; builds the reader once. The
    reason names the model by its last path part: no path on the server's machine goes out. None as well for
    a reward set that reads no text back (a single-turn task's ``RewardSet``)."""
    from ..errors import ConfigError

    if not isinstance(reward_set, ServedEpisodes):
        return None
    name = Path(str(reward_set.model)).name
    try:
        reward_set.text_format()
    except ConfigError as exc:  # the template's problem, in words
        return f"cannot read episodes from text with the chat template of model {name!r}: {exc}"
    except Exception as exc:  # noqa: BLE001 - the server answers 500 with the reason, never a bare traceback
        return f"cannot read episodes from text: the tokenizer of model {name!r} does not load ({type(exc).__name__})"
    return None
