"""The probe on an episode task: every sample is a whole episode (``rlvr.episodes``).

``EpisodeSampler`` wraps the model's sampler so that ``run_probe`` samples episodes where it would
sample single completions: each completion it returns is an episode's *final answer* (what the
task's terms judge), ``finish_reason`` ``length`` when the episode was cut off, and its token ids
those the model generated over every turn. The episodes themselves are kept in order, and
``summarize_episodes`` turns them into the episode half of the report: success rate beside the
turns, calls, tool-call error rate and share cut off, written as ``episodes.json`` next to
``samples.jsonl`` (one line per episode in ``episodes.jsonl``, in the samples' order).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..episodes import Episode, EpisodeRunner, build_toolbox, prepare_tokenizer
from ..rewards import untrusted
from ..rewards.episode import episode_metrics

if TYPE_CHECKING:
    from ..generate import Completion, Sampler
    from ..task import Task

EPISODES_NAME = "episodes.jsonl"
SUMMARY_NAME = "episodes.json"

__all__ = [
    "EPISODES_NAME",
    "SUMMARY_NAME",
    "EpisodeSampler",
    "EpisodeSummary",
    "read_episodes",
    "summarize_episodes",
    "write_episodes",
]


class EpisodeSampler:
    """A ``Sampler`` whose completions are episodes' final answers (see the module docstring)."""

    def __init__(self, sampler: Sampler, task: Task, tokenizer: Any = None) -> None:
        assert task.environment is not None
        self.inner = sampler
        self.backend = str(getattr(sampler, "backend", "episodes"))
        if tokenizer is None:
            tokenizer = getattr(sampler, "tokenizer", None)
        if tokenizer is None:
            from ..models import load_tokenizer

            tokenizer = load_tokenizer(task.resolve(task.model))
        self.tokenizer = prepare_tokenizer(tokenizer)
        toolbox = build_toolbox(task.environment, str(task.path))
        self.runner = EpisodeRunner(sampler, self.tokenizer, task.environment, toolbox)
        self.episodes: list[Episode] = []

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
        from ..generate import Completion

        groups = self.runner.run(prompts, [{}] * len(prompts), n, temperature, max_new_tokens, top_p, seed)
        out = []
        for group in groups:
            self.episodes.extend(group)
            out.append(
                [
                    Completion(
                        e.final,
                        tuple(self.tokenizer(e.final, add_special_tokens=False)["input_ids"]),
                        "length" if e.cut_off else "stop",
                        e,
                    )
                    for e in group
                ]
            )
        if progress is not None:
            progress(len(prompts))
        return out


@dataclass(frozen=True)
class EpisodeSummary:
    n: int
    success_rate: float | None  # over decided episodes
    turns: float
    calls: float
    tool_error_rate: float
    invalid_call_rate: float
    cut_off_rate: float

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def lines(self) -> list[str]:
        rate = "n/a" if self.success_rate is None else f"{self.success_rate:.1%}"
        return [
            f"episodes: {self.n}, success {rate}, {self.turns:.2f} turns and {self.calls:.2f} tool calls per episode",
            f"tool calls: {self.tool_error_rate:.1%} errors, {self.invalid_call_rate:.1%} malformed or off-schema; "
            f"{self.cut_off_rate:.1%} of episodes cut off",
        ]


def summarize_episodes(episodes: Sequence[Episode], successes: Sequence[bool | None]) -> EpisodeSummary:
    m = episode_metrics(episodes)
    decided = [s for s in successes if s is not None]
    return EpisodeSummary(
        n=len(episodes),
        success_rate=sum(decided) / len(decided) if decided else None,
        turns=m["episodes/turns"],
        calls=m["episodes/calls"],
        tool_error_rate=m["episodes/tool_error_rate"],
        invalid_call_rate=m["episodes/invalid_call_rate"],
        cut_off_rate=m["episodes/cut_off_rate"],
    )


def write_episodes(out: Path, episodes: Sequence[Episode], successes: Sequence[bool | None]) -> EpisodeSummary:
    """``episodes.jsonl`` and ``episodes.json`` in ``out``; returns the summary."""
    with (out / EPISODES_NAME).open("w", encoding="utf-8") as fh:
        for e, s in zip(episodes, successes, strict=True):
            fh.write(json.dumps({**e.to_json(), "success": s}, ensure_ascii=False, default=str) + "\n")
    summary = summarize_episodes(episodes, successes)
    (out / SUMMARY_NAME).write_text(json.dumps(summary.to_json(), indent=2) + "\n")
    return summary


def read_episodes(out: Path) -> list[tuple[Episode, Mapping[str, Any]]]:
    """The episodes a probe wrote, each with its line (``success``)."""
    path = out / EPISODES_NAME
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    rows = [json.loads(x) for x in untrusted.jsonl_lines(text) if not untrusted.is_blank(x)]
    return [(Episode.from_json(r), r) for r in rows]
