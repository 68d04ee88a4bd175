"""A sample as every stage reads it: an episode of turns, each with its tool calls and their
results, the final answer and whether it was cut off. A single-turn sample is an episode of one
turn and no calls (``Episode.single``). Frozen, plain data: the runner builds it from sampled text,
``rlvr.episodes.from_messages`` from the message list TRL passes reward functions; the reward
terms read it from ``Sample.episode`` (``rlvr.rewards.calls``).

It lives in ``rewards`` (not ``episodes``) because the reward terms read it and ``rewards`` sits
below ``episodes`` (tests/test_structure.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Call", "Episode", "Turn", "episode_metrics"]


@dataclass(frozen=True)
class Call:
    """One tool call: what the model asked for and what it read back."""

    name: str | None
    arguments: Any
    result: str  # the text the model read (an error's text included)
    error: str | None = None  # why the call failed (None when it did not)
    kind: str | None = None  # malformed (not a readable call), invalid (unknown tool, bad arguments),
    # failed (the tool raised), timeout, budget (past max_tool_calls); None when it succeeded

    @property
    def malformed(self) -> bool:
        return self.kind == "malformed"

    @property
    def valid(self) -> bool:
        """Well-formed and fitting its tool's schema (whatever the tool then did)."""
        return self.kind not in ("malformed", "invalid")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arguments": self.arguments,
            "result": self.result,
            "error": self.error,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class Turn:
    text: str  # the model's text outside its tool-call blocks
    calls: tuple[Call, ...] = ()
    n_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "calls": [c.to_json() for c in self.calls], "n_tokens": self.n_tokens}


@dataclass(frozen=True)
class Episode:
    """``cut_off``: the episode ended before a turn without calls (turn or token budget);
    ``final`` is then the last turn's text, scored like any answer."""

    turns: tuple[Turn, ...]
    cut_off: bool = False
    cut_reason: str | None = None  # "turns" or "tokens"
    n_tokens: int = 0  # tokens the model generated, over all turns
    tool_tokens: int = 0  # tokens of tool results (never trained on)

    @classmethod
    def single(cls, text: str) -> Episode:
        """A single-turn sample: one turn, no calls."""
        return cls((Turn(text),))

    @property
    def final(self) -> str:
        return self.turns[-1].text if self.turns else ""

    @property
    def calls(self) -> tuple[Call, ...]:
        return tuple(c for t in self.turns for c in t.calls)

    @property
    def results(self) -> tuple[str, ...]:
        return tuple(c.result for c in self.calls)

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(c.error for c in self.calls if c.error)

    def messages(self) -> list[dict[str, Any]]:
        """The episode as the assistant/tool message list TRL passes reward functions."""
        out: list[dict[str, Any]] = []
        for turn in self.turns:
            msg: dict[str, Any] = {"role": "assistant", "content": turn.text}
            good = [c for c in turn.calls if not c.malformed]
            if good:
                msg["tool_calls"] = [
                    {"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in good
                ]
            out.append(msg)
            out += [{"role": "tool", "name": c.name, "content": c.result} for c in good]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": [t.to_json() for t in self.turns],
            "cut_off": self.cut_off,
            "cut_reason": self.cut_reason,
            "n_tokens": self.n_tokens,
            "tool_tokens": self.tool_tokens,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Episode:
        turns = tuple(
            Turn(
                str(t.get("text", "")),
                tuple(
                    Call(c.get("name"), c.get("arguments"), str(c.get("result", "")), c.get("error"), c.get("kind"))
                    for c in t.get("calls", ())
                ),
                int(t.get("n_tokens", 0)),
            )
            for t in data.get("turns", ())
        )
        return cls(
            turns,
            bool(data.get("cut_off")),
            data.get("cut_reason"),
            int(data.get("n_tokens", 0)),
            int(data.get("tool_tokens", 0)),
        )


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
