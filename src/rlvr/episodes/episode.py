"""``from_messages``: an episode (``rlvr.rewards.episode``, re-exported here) from the message
list TRL passes reward functions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..rewards.episode import Call, Episode, Turn
from .parse import parse_turn

__all__ = ["Call", "Episode", "Turn", "from_messages"]


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
