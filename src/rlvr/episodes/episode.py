"""An episode as every stage reads it: turns, each with its calls and their results, the final
answer and whether it was cut off. Frozen, plain data: the runner builds it from sampled text,
``from_messages`` from the message list TRL passes reward functions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .parse import parse_turn

__all__ = ["Call", "Episode", "Turn", "from_messages"]


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


def from_messages(messages: Sequence[Mapping[str, Any]], records: Sequence[Call] = ()) -> Episode:
    """An episode from TRL's completion (assistant and tool messages). ``records``: the calls as
    the environment saw them (with their errors), in order; without them (a client's episode) a
    result that starts with ``error`` is a failed call, as ``ToolSession`` writes one. A turn
    whose text still holds a ``<tool_call>`` block is a malformed call (TRL's parser fell back to
    text). A last turn that still made calls marks the episode cut off (the turn limit ended it)."""
    turns: list[Turn] = []
    recs = list(records)
    i = 0
    msgs = list(messages)
    while i < len(msgs):
        m = msgs[i]
        i += 1
        if m.get("role") != "assistant":
            continue
        calls: list[Call] = []
        content = str(m.get("content") or "")
        parsed = parse_turn(content)
        for tc in m.get("tool_calls") or ():
            fn = tc.get("function", tc) if isinstance(tc, Mapping) else {}
            result = ""
            if i < len(msgs) and msgs[i].get("role") == "tool":
                raw = msgs[i].get("content")
                result = raw if isinstance(raw, str) else json.dumps(raw, default=str)
                i += 1
            # TRL answers a call to a tool that does not exist itself (the environment never sees
            # it): such a call has no record, and the records of the calls after it stay in line.
            rec = recs.pop(0) if recs and recs[0].name == fn.get("name") else None
            if rec is not None:
                calls.append(Call(fn.get("name"), fn.get("arguments"), result, rec.error, rec.kind))
            elif records:
                calls.append(
                    Call(fn.get("name"), fn.get("arguments"), result, f"no tool {fn.get('name')!r}", "invalid")
                )
            elif result.startswith("error"):  # the form ToolSession gives a failed call (tool_error)
                calls.append(Call(fn.get("name"), fn.get("arguments"), result, result, "failed"))
            else:
                calls.append(Call(fn.get("name"), fn.get("arguments"), result))
        for pc in parsed.calls:  # blocks TRL could not read stayed in the text
            calls.append(
                Call(pc.name, pc.arguments, "", pc.error or "not read as a call by the chat parser", "malformed")
            )
        turns.append(Turn(parsed.text, tuple(calls)))
    cut = bool(turns) and bool(turns[-1].calls) and not any(c.malformed for c in turns[-1].calls)
    return Episode(tuple(turns), cut_off=cut, cut_reason="turns" if cut else None)
