"""Reference episodes: what ``rlvr sft`` trains on for a task with an ``environment:`` section.

Answer-only SFT on an episode task teaches the one thing its episode terms punish: answering
without the tools (and, since the answer is in no prompt, learning train answers by heart). So a
row says which calls solve it, in a data column (``environment.reference_calls``, default
``reference_calls``): a JSON list of ``{"name": ..., "arguments": {...}}``, one call per turn, in
order. ``read_calls`` reads a cell with the project's strict JSON reader (``rewards.rules.strictjson``:
duplicate keys, NaN, deep nesting refused) and checks it against the environment: known tools,
arguments on the tool's schema (``Tool.check_arguments``, as a call in training is checked), the
``max_tool_calls`` and ``max_turns`` limits, every ``required`` tool called. ``column_problems``
reports each bad row as one line naming the file, the row (1-based) and the column.

``build_episode`` plays a row's calls through the real tools in a ``ToolSession`` (so the call
budget, the per-call timeout and ``tool_error`` apply exactly as in training) and renders the
episode with the run's prepared template: the prompt with the tools listed, then per call the
assistant turn as the template renders it (``<tool_call>{json}</tool_call>`` and the end-of-turn
token), ``tool_suffix`` (the tool's real result and the next generation prompt, what TRL appends
after a turn), and last the answer turn and EOS. A call that errors is a ``ReferenceError``: an
episode that teaches a failing call is not a reference.

``ReferenceEpisode.tokens`` tokenizes it segment by segment, as TRL's tool loop concatenates ids,
with a mask that is 0 on the prompt and on every tool suffix: TRL 1.16's ``SFTTrainer`` takes a
tokenized dataset with a ``completion_mask`` column and, with ``completion_only_loss``, builds its
labels from it (-100 where the mask is 0), so the warm start is not trained on tool results,
as GRPO is not (its ``tool_mask``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import Problem
from .environment import ToolSession
from .spec import EnvironmentSpec
from .template import render, tool_suffix
from .tools import ToolBox

__all__ = [
    "MAX_ROW_PROBLEMS",
    "ReferenceCall",
    "ReferenceEpisode",
    "ReferenceError",
    "build_episode",
    "column_problems",
    "read_calls",
    "sft_advice",
]

MAX_ROW_PROBLEMS = 20  # bad rows listed one by one per file; the rest are counted


class ReferenceError(ValueError):
    """Why a row's reference episode cannot be built (a sentence, without the row)."""


@dataclass(frozen=True)
class ReferenceCall:
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class ReferenceEpisode:
    """A rendered reference episode: ``prompt`` and the completion's segments, each with whether
    it is trained on (the model's turns) or not (tool results and the next generation prompt)."""

    prompt: str
    segments: tuple[tuple[str, bool], ...]

    @property
    def completion(self) -> str:
        return "".join(text for text, _ in self.segments)

    def tokens(self, tokenizer: Any) -> tuple[list[int], list[int]]:
        """(input_ids, completion_mask): the prompt's ids, then each segment's ids (concatenated,
        as TRL's tool loop does), all without added special tokens: the rendered template writes its
        own, as ``apply_chat_template(tokenize=True)`` does for a chat prompt in training. The mask
        is 1 only on the model's own turns."""
        ids = list(tokenizer(self.prompt, add_special_tokens=False)["input_ids"])
        mask = [0] * len(ids)
        for text, trained in self.segments:
            seg = list(tokenizer(text, add_special_tokens=False)["input_ids"])
            ids += seg
            mask += [int(trained)] * len(seg)
        return ids, mask


def read_calls(value: Any, toolbox: ToolBox, spec: EnvironmentSpec) -> tuple[ReferenceCall, ...]:
    """A cell of the reference column as calls, checked (``ReferenceError`` naming what is wrong).
    A string is read as JSON by the strict reader; a list (a JSONL row that holds the list
    itself) is taken as read."""
    from ..rewards.rules.strictjson import JsonError, read_json

    if isinstance(value, str):
        try:
            value = read_json(value, decimals="float")
        except JsonError as exc:
            raise ReferenceError(f"not valid JSON: {exc}") from None
    if not isinstance(value, list):
        raise ReferenceError(f"must be a JSON list of calls, got {type(value).__name__}")
    calls = []
    for j, item in enumerate(value, 1):
        if not isinstance(item, Mapping):
            raise ReferenceError(f"call {j} must be an object with name and arguments, got {type(item).__name__}")
        extra = sorted(set(item) - {"name", "arguments"})
        if extra:
            raise ReferenceError(f"call {j} has unexpected key(s) {extra}: a call has name and arguments")
        name, args = item.get("name"), item.get("arguments", {})
        if not isinstance(name, str) or name not in toolbox.tools:
            raise ReferenceError(f"call {j}: unknown tool {name!r}; tools: {', '.join(toolbox.names)}")
        problem = toolbox.tools[name].check_arguments(args)
        if problem:
            raise ReferenceError(f"call {j}: arguments off the schema of {name}: {problem}")
        calls.append(ReferenceCall(name, dict(args)))
    if len(calls) > spec.max_tool_calls:
        raise ReferenceError(f"{len(calls)} calls, environment.max_tool_calls allows {spec.max_tool_calls}")
    if len(calls) + 1 > spec.max_turns:
        raise ReferenceError(
            f"{len(calls)} calls and the answer need {len(calls) + 1} turns, environment.max_turns is {spec.max_turns}"
        )
    missing = [t for t in spec.required if t not in {c.name for c in calls}]
    if missing:
        raise ReferenceError(f"does not call the required tool(s) {', '.join(missing)}")
    return tuple(calls)


def column_problems(
    spec: EnvironmentSpec, toolbox: ToolBox, rows: Sequence[Mapping[str, Any]], source: str, required: bool
) -> list[Problem]:
    """One problem per bad row of ``source`` (at most ``MAX_ROW_PROBLEMS``, then a count). A file
    without the column has no problem unless ``required`` (then one, saying how to add it)."""
    col = spec.reference_column
    if not any(col in r for r in rows):
        return [missing_column(spec, source)] if required else []
    bad: list[Problem] = []
    for i, row in enumerate(rows, 1):
        try:
            if row.get(col) is None:
                raise ReferenceError("missing: every row needs its calls (an empty list [] for none)")
            read_calls(row[col], toolbox, spec)
        except ReferenceError as exc:
            bad.append(Problem(f"{source}:{i}", f"row {i}: {col}: {exc}", CALLS_FIX))
    if len(bad) > MAX_ROW_PROBLEMS:
        more = Problem(source, f"{len(bad) - MAX_ROW_PROBLEMS} more rows with a bad {col!r} (the first listed)", "")
        bad = [*bad[:MAX_ROW_PROBLEMS], more]
    return bad


CALLS_FIX = 'a JSON list of the calls that solve the row, e.g. [{"name": "search", "arguments": {"query": "..."}}]'


def missing_column(spec: EnvironmentSpec, source: str) -> Problem:
    col = spec.reference_column
    return Problem(
        f"{source}: {col}",
        "an episode task needs each train row's reference calls for rlvr sft: answer-only SFT would teach "
        "answering without the tools (and the train answers by heart)",
        f"add a column {col!r} ({CALLS_FIX}), or name yours with environment.reference_calls",
    )


def sft_advice(spec: EnvironmentSpec, has_column: bool) -> str:
    """What the probe's SFT route adds on an episode task."""
    col = spec.reference_column
    if has_column:
        return (
            f"On this episode task rlvr sft trains on reference episodes: each row's {col!r} calls played "
            "through the real tools, their results, then the answer."
        )
    return (
        f"This episode task's train rows have no {col!r} column, and rlvr sft refuses without it (answer-only SFT "
        f"teaches answering without the tools): add {CALLS_FIX}."
    )


def _call_turn(tokenizer: Any, prompt: Sequence[Mapping[str, Any]], tools: list[dict[str, Any]], call: Any) -> str:
    """One call's assistant turn as the template renders it, through its end-of-turn token."""
    start = render(tokenizer, prompt, tools)
    message = {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]}
    full = render(tokenizer, [*prompt, message], tools, generation=False)
    eos = tokenizer.eos_token or ""
    turn = full[len(start) :] if full.startswith(start) else ""
    if "<tool_call>" in turn and eos and eos in turn:
        return turn[: turn.rindex(eos) + len(eos)]
    # A template that renders the turn otherwise: the form the episode reader reads.
    return "<tool_call>" + json.dumps(call, ensure_ascii=False) + "</tool_call>" + eos


def build_episode(
    spec: EnvironmentSpec,
    toolbox: ToolBox,
    tokenizer: Any,
    prompt: Sequence[Mapping[str, Any]],
    row: Mapping[str, Any],
    calls: Sequence[ReferenceCall],
    answer: str,
) -> ReferenceEpisode:
    """The row's reference episode (module docstring). ``tokenizer`` is prepared
    (``prepare_tokenizer``); ``answer`` is the answer turn's text, in the task's answer format."""
    tools = toolbox.schemas()
    session = ToolSession(toolbox, spec)
    session.reset(**row)
    eos = tokenizer.eos_token or ""
    segments: list[tuple[str, bool]] = []
    for j, ref in enumerate(calls, 1):
        done = session.call(ref.name, dict(ref.arguments))
        if done.error is not None:
            raise ReferenceError(f"call {j} ({ref.name}) failed: {done.error}")
        segments.append((_call_turn(tokenizer, prompt, tools, {"name": ref.name, "arguments": ref.arguments}), True))
        segments.append((tool_suffix(tokenizer, [{"role": "tool", "name": ref.name, "content": done.result}]), False))
    segments.append((answer + eos, True))
    return ReferenceEpisode(render(tokenizer, prompt, tools), tuple(segments))
