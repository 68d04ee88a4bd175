"""Reading an episode back from the text a chat template rendered it as.

OpenRLHF's agent mode (``--agent_func_path``, ``MultiTurnAgentExecutor``) keeps an episode as one
text: the decoded prompt, each turn the model generated (decoded with its end-of-turn token) and,
after a turn that called tools, the environment's feedback, which an agent renders with the model's
chat template: the tool results and the next generation prompt -- what TRL appends
(``template.tool_suffix``). A reward read from that text (``/get_reward``) must see the episode
``/v1/score`` sees in the message list.

The delimiters come from the (prepared) template itself, never from per-template code:
``text_format`` renders a probe with sentinel contents and cuts out the literal strings around them
-- ``eos`` (the tokenizer's end-of-turn token, which ends every generated turn), ``pre`` (after a
turn with calls, before the first result), ``between`` (between two results) and ``post`` (after
the last result: the next generation prompt) -- then checks that a whole probe conversation renders
as exactly those pieces joined.

``messages_from_text`` reads, left to right, with ``str.find`` only (each delimiter's next
occurrence is looked up from a cached position that only moves forward, so the whole text is
scanned a bounded number of times: linear time, no pattern engine). A turn runs to the first
``eos``, or to the first ``pre`` when that comes first: the end-of-turn token may be missing before
a turn's results (OpenRLHF 0.11.2's agent joins vLLM's output text, which can leave out the token
that stopped it, and the feedback). A turn's ``<tool_call>`` blocks are read by
``parse.parse_turn`` (the strict JSON reader: duplicate keys, NaN and deep nesting refused). A turn
with well-formed calls is followed by ``pre``, one result per call separated by ``between``, and
``post``; a turn without calls (or with a malformed one) is the final turn. The message list then
goes through ``episode.from_messages``, the function ``/v1/score`` uses, so both endpoints score an
episode alike: a result that starts with ``error`` is a failed call, a last turn that still calls
tools is cut off. One difference: a text that ends in tool results or right after a generation
prompt gets an empty final turn (the model answered nothing after its results), where a message
list that ends in tool messages is cut off with its last call turn's text as the answer.

Text that does not follow that structure raises ``UnreadableEpisode`` (the server scores it as an
unparseable answer in every term: 0, not masked, counted; never as one turn of text, which could
credit what a tool returned, and never masked, which a policy could reach by typing a marker):

- text after the final turn (other than whitespace, ``eos`` or padding);
- a turn with calls followed by anything but ``pre`` (results rendered some other way);
- a results block with more results than the turn made calls (or fewer, when ``post`` follows);
- a turn whose text holds ``between`` or ``post``.

Forged markers in a tool result. Text cannot tell a marker a tool returned from the same marker
the template rendered, so a tool result (a searched document, what a ``python`` call printed) that
holds ``post`` and a turn can pass for an assistant turn the policy never wrote. What the reader
guarantees: the final answer is the first turn or the text after the last ``post`` in the text
(nothing after a results block gives an empty one), so a result never becomes the final answer as
long as every results block the client renders is followed by the generation prompt, as TRL's
suffix and an agent's feedback are (a client that ends a text inside a tool result gives this up:
its last result may hold ``post`` and a forged final turn). A forged turn without calls is followed by the real one and
makes the text unreadable; a forged ``between`` adds a result and makes the count wrong
(unreadable). A result that holds a whole well-formed forged turn with calls and its results is
read as that turn: it can add calls (and so move ``valid_calls``, ``required_tools`` and
``call_budget``), never the final answer; nothing in the text tells it apart. ``/v1/score``
with the message list has none of this: the list, not the text, says what a tool returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, Problem
from .episode import Episode, from_messages
from .parse import parse_turn
from .template import tool_suffix

__all__ = ["TextFormat", "UnreadableEpisode", "episode_from_text", "messages_from_text", "text_format"]

# Sentinel contents for the probe: plain ASCII words no template adds or escapes.
_NAME, _A1, _A2, _T1, _T2, _U = "rlvrprobetool", "rlvrprobeturn1", "rlvrprobeturn2", "rlvrprobe1", "rlvrprobe2", "q"


class UnreadableEpisode(ValueError):
    """The text does not read as an episode of the template (the message says where and why)."""


@dataclass(frozen=True)
class TextFormat:
    """The literal strings a template puts around turns and tool results (module docstring)."""

    eos: str
    pre: str
    between: str
    post: str
    pad: str = ""


def _fail(what: str) -> ConfigError:
    return ConfigError(
        Problem(
            "model",
            f"its chat template cannot be read back into episodes: {what}",
            "send episodes to POST /v1/score as message lists (docs/serve.md)",
        )
    )


def text_format(tokenizer: Any) -> TextFormat:
    """The delimiters of ``tokenizer``'s chat template (prepared with ``prepare_tokenizer``),
    read from a rendered probe (``ConfigError`` when the template does not render an episode as
    its turns joined by fixed strings)."""
    eos = str(tokenizer.eos_token or "")
    if not eos:
        raise _fail("the tokenizer has no end-of-turn (eos) token")

    def tool(content: str) -> dict[str, Any]:
        return {"role": "tool", "name": _NAME, "content": content}

    one = tool_suffix(tokenizer, [tool(_T1)])
    two = tool_suffix(tokenizer, [tool(_T1), tool(_T2)])
    if one.count(_T1) != 1 or two.count(_T1) != 1 or two.count(_T2) != 1:
        raise _fail("a tool result is not rendered exactly once")
    pre, post = one.split(_T1)
    pre2, rest = two.split(_T1)
    between, post2 = rest.split(_T2)
    if (pre2, post2) != (pre, post):
        raise _fail("two tool results are not rendered as one result's opening and closing")
    if not between or not post or between == post:
        raise _fail("the strings between results and after the last result cannot be told apart")
    call = {"type": "function", "function": {"name": _NAME, "arguments": {}}}
    probe = [
        {"role": "user", "content": _U},
        {"role": "assistant", "content": _A1, "tool_calls": [call]},
        tool(_T1),
        {"role": "assistant", "content": _A2},
    ]
    full: str = tokenizer.apply_chat_template(probe, tokenize=False, add_generation_prompt=False)
    start = full.find(_A1)
    turn_end = full.find(eos, start)
    if start < 0 or turn_end < 0:
        raise _fail(f"an assistant turn is not closed by the eos token {eos!r}")
    turn = parse_turn(full[start:turn_end])
    if turn.text != _A1 or [c.name for c in turn.calls] != [_NAME] or turn.malformed:
        raise _fail("a tool call is not rendered as a <tool_call> block in its turn")
    expected = eos + pre + _T1 + post + _A2 + eos
    if not full.startswith(expected, turn_end):
        raise _fail("an episode does not render as its turns and the tool suffix joined")
    pad = getattr(tokenizer, "pad_token", None)
    return TextFormat(eos, pre, between, post, str(pad) if pad and pad != eos else "")


class _Finder:
    """The next occurrence of a delimiter at or after a position, each delimiter's search
    resumed from where the last one stopped: positions only grow, so the text is scanned a
    bounded number of times per delimiter, however many turns and results it holds."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.cache: dict[str, tuple[int, int]] = {}

    def next(self, needle: str, pos: int) -> int:
        hit = self.cache.get(needle)
        if hit is not None and hit[0] <= pos and (hit[1] < 0 or hit[1] >= pos):
            return hit[1]
        at = self.text.find(needle, pos)
        self.cache[needle] = (pos, at)
        return at


def _blank(text: str, i: int) -> bool:
    """Whether ``text[i:]`` is only whitespace, without copying it (a copy per turn would make the
    reader quadratic in the number of turns)."""
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    return i == n


def _only_trailing(fmt: TextFormat, rest: str) -> bool:
    """Whether ``rest`` (after the final turn) holds nothing but whitespace, eos and padding."""
    i, n = 0, len(rest)
    while i < n:
        if rest[i].isspace():
            i += 1
        elif rest.startswith(fmt.eos, i):
            i += len(fmt.eos)
        elif fmt.pad and rest.startswith(fmt.pad, i):
            i += len(fmt.pad)
        else:
            return False
    return True


def messages_from_text(fmt: TextFormat, text: str) -> list[dict[str, Any]]:
    """The assistant and tool messages of the episode rendered as ``text`` (the response: what
    follows the prompt), or ``UnreadableEpisode`` (module docstring)."""
    find = _Finder(text)
    markers = [m for m in (fmt.pre, fmt.between, fmt.post) if m]
    out: list[dict[str, Any]] = []
    pos, n = 0, len(text)
    while True:
        e = find.next(fmt.eos, pos)
        r = find.next(fmt.pre, pos) if fmt.pre else -1
        if r >= 0 and (e < 0 or r < e):  # results right after the turn, its eos left out
            end = after = r
        else:
            end = e if e >= 0 else n
            after = end + len(fmt.eos) if e >= 0 else n
        raw = text[pos:end]
        held = next((m for m in markers if m in raw), None)
        if held is not None:
            raise UnreadableEpisode(f"turn {_turns(out) + 1}: its text holds the template's marker {held!r}")
        parsed = parse_turn(raw)
        if parsed.malformed or not parsed.calls:  # the final turn
            if not _only_trailing(fmt, text[after:]):
                raise UnreadableEpisode(
                    f"text after the final turn (turn {_turns(out) + 1}, which makes no well-formed call) "
                    f"at character {after}"
                )
            out.append({"role": "assistant", "content": raw if parsed.malformed else parsed.text})
            return out
        calls: list[dict[str, Any]] = [
            {"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in parsed.calls
        ]
        out.append({"role": "assistant", "content": parsed.text, "tool_calls": calls})
        if _blank(text, after):  # the text ends with this turn: cut off, no results
            return out
        if not text.startswith(fmt.pre, after):
            raise UnreadableEpisode(
                f"turn {_turns(out)} made calls but is not followed by the template's tool results "
                f"({fmt.pre!r}) at character {after}"
            )
        results, p, closed = _results(find, fmt, after + len(fmt.pre))
        if len(results) > len(calls) or (closed and len(results) != len(calls)):
            raise UnreadableEpisode(f"turn {_turns(out)} made {len(calls)} call(s) but {len(results)} results follow")
        out += [
            {"role": "tool", "name": c.name, "content": r}
            for c, r in zip(parsed.calls[: len(results)], results, strict=True)
        ]
        if not closed or _blank(text, p):
            # The text ends in results or at the generation prompt: the model wrote nothing after
            # them, so the final answer is empty. Scoring the last call turn's text instead (as a
            # list ending in tool messages is scored) would score a turn a forged result can hold.
            out.append({"role": "assistant", "content": ""})
            return out
        pos = p


def _results(find: _Finder, fmt: TextFormat, p: int) -> tuple[list[str], int, bool]:
    """The results starting at ``p``, where the text goes on after them, and whether ``post``
    closed them (False: the text ended inside them)."""
    text = find.text
    results: list[str] = []
    while True:
        b, q = find.next(fmt.between, p), find.next(fmt.post, p)
        if b < 0 and q < 0:
            results.append(text[p:])
            return results, len(text), False
        if q < 0 or (b >= 0 and (b < q or (b == q and len(fmt.between) > len(fmt.post)))):
            results.append(text[p:b])
            p = b + len(fmt.between)
        else:
            results.append(text[p:q])
            return results, q + len(fmt.post), True


def _turns(messages: list[dict[str, Any]]) -> int:
    return sum(m["role"] == "assistant" for m in messages)


def episode_from_text(fmt: TextFormat, text: str) -> Episode:
    """The episode rendered as ``text``, scored by the task's ``RewardSet`` exactly as ``/v1/score``
    scores the same message list (``episode.from_messages``); ``UnreadableEpisode`` otherwise."""
    messages: list[Mapping[str, Any]] = list(messages_from_text(fmt, text))
    return from_messages(messages)
