"""What ``rlvr probe`` writes beside its report, as types: the settings (``probe.json``, a
``ProbeSettings``) and one ``ProbeSample`` per completion (``samples.jsonl``). The probe writes
both through ``to_json``; resume and the inspection gate read them back through ``from_json``,
so there is one format for each file and nothing is guessed.

A file this version cannot read (hand-edited, or written by an rlvr from before these types) is
a ``DataError`` naming the file and line and saying to rerun ``rlvr probe``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..data import read_objects
from ..errors import DataError, RunError
from ..rewards.base import Verdict
from ..rewards.episode import Episode, episode_metrics
from ..rollouts import Rollout

SETTINGS_NAME = "probe.json"
SAMPLES_NAME = "samples.jsonl"
REPORT_NAME = "report.json"
EPISODES_SUMMARY_NAME = "episodes.json"
FILTERED_NAME = "filtered.jsonl"
RERUN = "rerun rlvr probe (with another --out) to write it in the current format"


@dataclass(frozen=True)
class ProbeSettings:
    """How a probe sampled (``probe.json``): checked field by field on resume, and read by the
    gate to know which model the samples came from."""

    task: str
    model: str
    backend: str
    k: int
    temperature: float
    top_p: float
    max_new_tokens: int
    seed: int
    chunk: int
    prompt_indices: tuple[int, ...]
    terms: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["prompt_indices"] = list(self.prompt_indices)
        data["terms"] = list(self.terms)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProbeSettings:
        return cls(
            task=str(data["task"]),
            model=str(data["model"]),
            backend=str(data["backend"]),
            k=int(data["k"]),
            temperature=float(data["temperature"]),
            top_p=float(data["top_p"]),
            max_new_tokens=int(data["max_new_tokens"]),
            seed=int(data["seed"]),
            chunk=int(data["chunk"]),
            prompt_indices=tuple(int(i) for i in data["prompt_indices"]),
            terms=tuple(str(t) for t in data["terms"]),
        )

    def differences(self, other: ProbeSettings) -> list[str]:
        """The fields that differ from ``other``, except the backend (the same samples may be
        resumed with another backend)."""
        return [f.name for f in fields(self) if f.name != "backend" and getattr(self, f.name) != getattr(other, f.name)]


@dataclass(frozen=True)
class ProbeSample:
    """One completion the probe sampled (the rollout, with every term's verdict and the weighted
    total: None when masked), and how it was sampled (each line says so, and the gate checks it
    before reusing the sample). On disk the rollout's ``token_ids``, ``verdicts`` and ``total`` keep
    the names ``completion_ids``, ``scores`` and ``reward``."""

    rollout: Rollout
    sample_index: int  # 0..k-1 within the prompt
    success: bool | None  # the success term said correct; None when it could not decide
    temperature: float
    max_new_tokens: int
    messages: tuple[Mapping[str, Any], ...] | None = None  # the chat messages, for chat prompts

    def to_json(self) -> dict[str, Any]:
        r = self.rollout
        data: dict[str, Any] = {
            "prompt_index": r.prompt_index,
            "sample_index": self.sample_index,
            "prompt": r.prompt,
            "row": dict(r.row),
            "completion": r.completion,
            "completion_ids": list(r.token_ids),
            "n_tokens": len(r.token_ids),  # derived; written for readers of the file (jq, benches)
            "finish_reason": r.finish_reason,
            "scores": {name: v.to_json() for name, v in r.verdicts.items()},
            "reward": r.total,
            "success": self.success,
        }
        if self.messages is not None:
            data["messages"] = [dict(m) for m in self.messages]
        if r.episode is not None:
            data["episode"] = r.episode.to_json()
        data["temperature"] = self.temperature
        data["max_new_tokens"] = self.max_new_tokens
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProbeSample:
        messages, episode = data.get("messages"), data.get("episode")
        reward, success = data["reward"], data["success"]
        rollout = Rollout(
            prompt_index=int(data["prompt_index"]),
            prompt=str(data["prompt"]),
            row=dict(data["row"]),
            completion=str(data["completion"]),
            token_ids=tuple(int(i) for i in data["completion_ids"]),
            finish_reason=str(data["finish_reason"]),
            episode=None if episode is None else Episode.from_json(episode),
            verdicts={str(name): Verdict.from_json(v) for name, v in data["scores"].items()},
            total=None if reward is None else float(reward),
        )
        return cls(
            rollout=rollout,
            sample_index=int(data["sample_index"]),
            success=None if success is None else bool(success),
            temperature=float(data["temperature"]),
            max_new_tokens=int(data["max_new_tokens"]),
            messages=None if messages is None else tuple(dict(m) for m in messages),
        )

    def line(self) -> str:
        """The sample as one line of ``samples.jsonl``."""
        return json.dumps(self.to_json(), ensure_ascii=False, default=str) + "\n"


@dataclass(frozen=True)
class EpisodeSummary:
    """How an episode task's samples went (``episodes.json`` beside ``samples.jsonl``): the
    success rate beside the turns, calls, tool-call error rate, malformed-call rate, share cut off."""

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

    @classmethod
    def of(cls, samples: Sequence[ProbeSample]) -> EpisodeSummary | None:
        """The summary of the samples that are episodes (None when none is)."""
        episodes = [s.rollout.episode for s in samples if s.rollout.episode is not None]
        if not episodes:
            return None
        m = episode_metrics(episodes)
        decided = [s.success for s in samples if s.rollout.episode is not None and s.success is not None]
        return cls(
            n=len(episodes),
            success_rate=sum(decided) / len(decided) if decided else None,
            turns=m["episodes/turns"],
            calls=m["episodes/calls"],
            tool_error_rate=m["episodes/tool_error_rate"],
            invalid_call_rate=m["episodes/invalid_call_rate"],
            cut_off_rate=m["episodes/cut_off_rate"],
        )


def read_settings(folder: str | Path) -> ProbeSettings:
    """The settings of the probe in ``folder``; ``DataError`` naming the file when it is missing
    or not in this format."""
    path = Path(folder) / SETTINGS_NAME
    if not path.is_file():
        raise DataError(f"{path}: no probe settings beside the samples; {RERUN}")
    try:
        return ProbeSettings.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DataError(f"{path}: not probe settings ({type(exc).__name__}: {exc}); {RERUN}") from None


def read_samples(path: str | Path) -> Iterator[tuple[int, ProbeSample]]:
    """``(line number, sample)`` for every line of a ``samples.jsonl``; ``DataError`` naming
    ``file:line`` for a line that is not a probe sample."""
    for lineno, rec in read_objects(path):
        try:
            sample = ProbeSample.from_json(rec)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(f"{path}:{lineno}: not a probe sample ({type(exc).__name__}: {exc}); {RERUN}") from None
        yield lineno, sample


def read_done(path: Path, k: int, chunk: int, indices: list[int]) -> tuple[list[ProbeSample], int]:
    """The complete chunks already in ``samples.jsonl``; truncates an interrupted tail (a partial
    line or a chunk with missing lines) so resuming appends exactly what was lost."""
    if not path.exists():
        return [], 0
    raw = path.read_bytes()
    records: list[ProbeSample] = []
    offsets: list[int] = []
    pos = 0
    for line in raw.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break  # a line cut by the interruption
        try:
            rec = ProbeSample.from_json(json.loads(line))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            raise RunError(
                f"{path}: line {len(records) + 1} is not a probe sample; the file was edited, not just interrupted: "
                "move it away to start over"
            ) from None
        records.append(rec)
        pos += len(line)
        offsets.append(pos)
    per_chunk = k * chunk
    n_chunks = len(records) // per_chunk
    # The last chunk may be shorter (fewer prompts left).
    full = n_chunks * per_chunk
    rest = len(indices) - n_chunks * chunk
    if 0 < rest < chunk and len(records) - full == rest * k:
        n_chunks, full = n_chunks + 1, len(records)
    keep = offsets[full - 1] if full else 0
    for i, rec in enumerate(records[:full]):
        expected = indices[i // k]
        if rec.rollout.prompt_index != expected:
            raise RunError(
                f"{path}: line {i + 1} has prompt_index {rec.rollout.prompt_index}, expected {expected}: "
                "the file does not match probe.json; move it away to start over"
            )
    if keep < len(raw):
        with path.open("r+b") as fh:
            fh.truncate(keep)
    return records[:full], n_chunks
