"""Rollouts: the one way every stage samples a task (``rollout_sampler``), the one record of a sample
(``Rollout``).

A sample is an episode: a single-turn sample is one turn without calls (its ``Completion`` has no
``episode``); on a task with an ``environment:`` section every completion is a whole episode
played by ``rlvr.episodes.EpisodeRunner`` (the way TRL's tool loop plays it in training), its
``text`` the final answer the answer terms judge and its ``episode`` the turns, calls and results
the episode terms and the review read. The probe, the gate, the held-out eval and the length
check sample through ``rollout_sampler``; it is the one place outside the task file's reader that
asks whether a task has an environment (``tests/test_structure.py`` counts them).

The bounded sample of them a training run keeps on disk is ``rlvr.keptrollouts``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .rewards.base import Sample, Verdict
from .rewards.combine import completion_text, prompt_text
from .rewards.episode import Episode

if TYPE_CHECKING:
    from .episodes.spec import EnvironmentSpec
    from .generate import Completion, Sampler
    from .task import Task


@dataclass(frozen=True)
class Rollout:
    """One sample and what the reward said of it: the record the probe (``ProbeSample``), the gate
    (``InspectionSample``) and the kept training rollouts (``Rollout.from_line``) share, each adding
    only its own fields. ``completion`` is the text the answer terms judge (an episode's final
    answer), ``episode`` the turns, calls and results (None: one turn, no calls). ``verdicts`` (term
    -> verdict) is empty until the sample is scored; ``total`` is the weighted reward (None: masked,
    or not scored yet)."""

    prompt_index: int  # the row index in the split (a kept training rollout: its group in the step)
    prompt: str  # the prompt as text (chat prompts rendered)
    row: Mapping[str, Any]
    completion: str
    token_ids: tuple[int, ...]
    finish_reason: str  # "stop", "length" (cut off), or "unknown" (a kept training rollout)
    episode: Episode | None = None
    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    total: float | None = None

    @property
    def sample(self) -> Sample:
        """What the reward scores of it."""
        return Sample(self.completion, self.row, self.prompt, list(self.token_ids), self.episode)

    @classmethod
    def from_line(cls, line: Mapping[str, Any]) -> Rollout:
        """A line ``rlvr.keptrollouts.Recorder`` wrote, unscored (a kept episode is the message list
        TRL passed the reward: turns, calls, results)."""
        from .episodes import from_messages
        from .keptrollouts import LINE_KEYS

        episode = from_messages(line["completion"]) if isinstance(line["completion"], list) else None
        return cls(
            int(line["rollout"].get("group", 0)),
            prompt_text(line.get("prompt") or ""),
            {k: v for k, v in line.items() if k not in LINE_KEYS},
            completion_text(line["completion"]) if episode is None else episode.final,
            tuple(line.get("completion_ids") or ()),
            "unknown",
            episode,
        )


def rollout_sampler(sampler: Sampler, task: Task, tokenizer: Any = None, *, watch: Any = None) -> Sampler:
    """``sampler`` as the task's samples come from it (see the module docstring): itself for a
    single-turn task, an ``EpisodeSampler`` for an episode task. ``tokenizer``: the sampler's, when
    it has none of its own; ``watch`` (``rlvr.episodes.tools.CallWatch``) counts the tool calls."""
    if task.environment is None:
        return sampler
    return EpisodeSampler(sampler, task, task.environment, tokenizer, watch=watch)


class EpisodeSampler:
    """A ``Sampler`` whose completions are episodes: each ``Completion``'s text is an episode's final
    answer, its token ids those of that answer, ``finish_reason`` ``length`` when the episode was
    cut off, and ``episode`` the whole episode."""

    def __init__(
        self, sampler: Sampler, task: Task, environment: EnvironmentSpec, tokenizer: Any = None, *, watch: Any = None
    ) -> None:
        from .episodes import EpisodeRunner, build_toolbox, prepare_tokenizer

        self.inner = sampler
        self.backend = str(getattr(sampler, "backend", "episodes"))
        tokenizer = tokenizer if tokenizer is not None else getattr(sampler, "tokenizer", None)
        if tokenizer is None:
            from .models import load_tokenizer

            tokenizer = load_tokenizer(task.resolve(task.model))
        self.tokenizer = prepare_tokenizer(tokenizer)
        toolbox = build_toolbox(environment, str(task.path))
        toolbox.watch = watch
        self.runner = EpisodeRunner(sampler, self.tokenizer, environment, toolbox)

    def sample(
        self,
        prompts: Sequence[Any],
        n: int,
        temperature: float,
        max_new_tokens: int,
        top_p: float = 1.0,
        seed: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[list[Completion]]:
        groups = self.runner.run(prompts, [{}] * len(prompts), n, temperature, max_new_tokens, top_p, seed)
        if progress is not None:
            progress(len(prompts))
        return [[self._completion(e) for e in group] for group in groups]

    def _completion(self, e: Episode) -> Completion:
        from .generate import Completion

        ids = tuple(self.tokenizer(e.final, add_special_tokens=False)["input_ids"])
        return Completion(e.final, ids, "length" if e.cut_off else "stop", e)
