"""Where a completion's JSON is: ``find_json`` (the answer span, else the one ``<tool_call>``
block or fenced block after the think block); reading it is ``rlvr.rewards.rules.strictjson``'s.
``load_json`` here is that reader with numbers as floats, for callers that hand the value to
code (the episodes' tools); the JSON terms compare exact numbers (``strictjson.load_json``).

Both patterns run on RE2 (``rlvr.rewards.rules.patterns``): on Python's ``re`` a fence followed by
80,000 spaces, or thousands of unclosed ``<tool_call>`` tags, cost quadratic time.

See ``rlvr.rewards.schema`` for the rules these implement and why.
"""

from __future__ import annotations

from typing import Any

from .format import FENCE, AnswerFormat, Extraction, fenced_json, read_answer
from .rules import untrusted
from .rules.patterns import compile_linear
from .rules.strictjson import MAX_DEPTH, MAX_DIGITS, JsonError, depth, has_lone_surrogate, read_json

__all__ = ["MAX_INT_DIGITS", "depth", "find_json", "load_json"]

_FENCE = compile_linear(r"(?s)```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)```")
_TOOL_TAG = compile_linear(r"(?s)<tool_call>(.*?)</tool_call>")
MAX_INT_DIGITS = MAX_DIGITS


def load_json(text: str, max_depth: int | None = None) -> tuple[Any, str | None]:
    """``(value, None)`` or ``(None, problem)``: the strict reader (duplicate keys, NaN, digit and
    depth limits refused), numbers other than integers as finite floats."""
    try:
        return read_json(text, max_depth=MAX_DEPTH if max_depth is None else max_depth, decimals="float"), None
    except JsonError as exc:
        return None, f"not valid JSON: {exc}"


def find_json(
    completion: str, fmt: AnswerFormat, max_chars: int, tool_tags: bool = False
) -> tuple[str | None, tuple[int, int] | None, str | None]:
    """(json text, span, problem): the answer span; else, when the completion has no answer-span
    marker at all, the one ``<tool_call>`` block (with ``tool_tags``) or the one fenced block
    after the think block. Nothing inside the think block counts. Fences open on ``\\n`` or
    ``\\r\\n``. With ``tool_tags`` (one call expected) a second carrier of a call after the think
    block -- another ``<tool_call>`` block, a fenced JSON block beside the one read, a ``<tool_call>``
    beside the answer span -- is a problem with a span (a wrong answer). A completion holding a
    lone surrogate is not valid text: a problem with a span."""
    if has_lone_surrogate(completion):
        return None, (0, len(completion)), "not valid JSON: the completion holds a lone surrogate (not valid Unicode)"
    start, think_problem, ex = read_answer(completion, fmt)
    text, span, problem = _find(completion, fmt, max_chars, tool_tags, (start, think_problem, ex))
    if tool_tags and problem is None and span is not None:
        region = completion[start:]
        carriers = [(start + m.start(), start + m.end()) for m in _TOOL_TAG.finditer(region)]
        carriers += [
            (start + m.start(), start + m.end())
            for m in _FENCE.finditer(region)
            if untrusted.strip(m.group(1))[:1] in ("{", "[")  # a fenced block of JSON: a call, read or not
        ]
        others = [c for c in carriers if not (c[0] <= span[0] and span[1] <= c[1]) and not (span[0] <= c[0] < span[1])]
        if others:
            return None, span, f"{len(others) + 1} tool calls where one is expected (a second beside the one read)"
    return text, span, problem


def _find(
    completion: str, fmt: AnswerFormat, max_chars: int, tool_tags: bool, reading: tuple[int, str | None, Extraction]
) -> tuple[str | None, tuple[int, int] | None, str | None]:
    start, problem, ex = reading  # rlvr.rewards.format.read_answer: read once for the caller too
    if fmt.style != "json" and ex.ok and ex.answer is not None:
        text, span = ex.answer, ex.span
        m = _FENCE.search(text) if text.startswith("```") else None
        if m:  # a fenced block inside the answer span
            text = m.group(1)
    else:
        if problem:
            return None, None, problem
        region = completion[start:]
        if fmt.style != "json":
            markers = (fmt.open_tag, fmt.close_tag) if fmt.style == "tags" else ("\\boxed{",)
            if any(m in region for m in markers):
                return None, None, ex.problem or "malformed answer span"
        found: list[Any] = []
        if tool_tags:
            found = list(_TOOL_TAG.finditer(region))
            if len(found) > 1:
                return None, None, f"{len(found)} <tool_call> blocks (exactly one call is expected)"
        if found:
            text, span = found[0].group(1), (start + found[0].start(1), start + found[0].end(1))
            inner = _FENCE.search(text) if untrusted.strip(text).startswith("```") else None
            if inner:
                text = inner.group(1)
            text = untrusted.strip(text)
        else:
            # The json format's answer (bare or fenced), or the one fenced block of a tags/boxed
            # format's completion that has no answer span: one rule (rlvr.rewards.format.fenced_json).
            if fmt.style != "json" and FENCE not in region:
                return None, None, ex.problem or "no answer span and no fenced JSON block"
            found_ex = ex if fmt.style == "json" else fenced_json(completion, start)
            if not found_ex.ok or found_ex.answer is None:
                return None, None, found_ex.problem or "no JSON answer"
            text, span = found_ex.answer, found_ex.span
    if len(text) > max_chars:
        return None, span, f"JSON is {len(text)} characters, over max_chars {max_chars}"
    return text, span, None
