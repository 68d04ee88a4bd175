"""Reading one assistant turn: its ``<tool_call>{json}</tool_call>`` blocks and the text around them.

Blocks are found with ``str.find`` (one left-to-right pass: linear time whatever the text), and
each body is read with the project's strict JSON reader (``rewards.jsontext.load_json``:
duplicate keys refused, no NaN, bounded nesting). A call is ``{"name": str, "arguments": {...}}``
(``arguments`` may be omitted for a call without any). A block that is not such a call, or an
opening tag without its closing tag, is a *malformed* call: it is recorded with its reason and
the turn is final -- as in TRL, whose ``parse_response`` falls back to plain text when a call
cannot be read, so the model's malformed call ends its episode in training too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPEN, CLOSE = "<tool_call>", "</tool_call>"
MAX_DEPTH = 16

__all__ = ["ParsedCall", "ParsedTurn", "parse_turn"]


@dataclass(frozen=True)
class ParsedCall:
    name: str | None
    arguments: Any
    error: str | None = None  # why the block is not a call
    source: str = ""  # the block's text


@dataclass(frozen=True)
class ParsedTurn:
    text: str  # the turn's text outside the blocks
    calls: tuple[ParsedCall, ...]

    @property
    def malformed(self) -> bool:
        return any(c.error for c in self.calls)


def _read(body: str) -> ParsedCall:
    from ..rewards.jsontext import load_json

    value, problem = load_json(body.strip(), max_depth=MAX_DEPTH)
    if problem:
        return ParsedCall(None, None, problem, body)
    if not isinstance(value, dict):
        return ParsedCall(None, None, "a call must be a JSON object", body)
    extra = sorted(set(value) - {"name", "arguments"})
    if extra:
        return ParsedCall(None, None, f"unexpected key(s) {extra}: a call has name and arguments", body)
    name, args = value.get("name"), value.get("arguments", {})
    if not isinstance(name, str) or not name:
        return ParsedCall(None, args, "a call needs a string name", body)
    if not isinstance(args, dict):
        return ParsedCall(name, args, "arguments must be a JSON object", body)
    return ParsedCall(name, args, None, body)


def parse_turn(text: str) -> ParsedTurn:
    """The calls of one assistant turn and the text outside them (see the module docstring)."""
    calls: list[ParsedCall] = []
    outside: list[str] = []
    pos = 0
    while True:
        start = text.find(OPEN, pos)
        if start < 0:
            outside.append(text[pos:])
            break
        outside.append(text[pos:start])
        end = text.find(CLOSE, start + len(OPEN))
        if end < 0:
            calls.append(ParsedCall(None, None, "a <tool_call> without </tool_call>", text[start:]))
            break
        calls.append(_read(text[start + len(OPEN) : end]))
        pos = end + len(CLOSE)
    return ParsedTurn("".join(outside).strip(), tuple(calls))
