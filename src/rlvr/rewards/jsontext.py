"""Where a completion's JSON is, and reading it strictly: ``find_json`` (the answer span, else
the one ``<tool_call>`` block or fenced block after the think block) and ``load_json`` (no
duplicate keys, no NaN/Infinity, no number a float cannot hold, bounded size and nesting).

See ``rlvr.rewards.schema`` for the rules these implement and why.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .format import AnswerFormat, answer_start, extract

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.S)
_TOOL_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
MAX_INT_DIGITS = 4300  # Python's own default limit for int(str)


def find_json(
    completion: str, fmt: AnswerFormat, max_chars: int, tool_tags: bool = False
) -> tuple[str | None, tuple[int, int] | None, str | None]:
    """(json text, span, problem): the answer span; else, when the completion has no answer-span
    marker at all, the one ``<tool_call>`` block (with ``tool_tags``) or the one fenced block
    after the think block. Nothing inside the think block counts."""
    ex = extract(completion, fmt)
    if ex.ok and ex.answer is not None:
        text, span = ex.answer, ex.span
        m = _FENCE.search(text) if text.startswith("```") else None
        if m:  # a fenced block inside the answer span
            text = m.group(1)
    else:
        start, problem = answer_start(completion, fmt)
        if problem:
            return None, None, problem
        region = completion[start:]
        markers = (fmt.open_tag, fmt.close_tag) if fmt.style == "tags" else ("\\boxed{",)
        if any(m in region for m in markers):
            return None, None, ex.problem or "malformed answer span"
        found: list[re.Match[str]] = []
        if tool_tags:
            found = list(_TOOL_TAG.finditer(region))
            if len(found) > 1:
                return None, None, f"{len(found)} <tool_call> blocks (exactly one call is expected)"
        if not found:
            found = list(_FENCE.finditer(region))
            if not found:
                return None, None, ex.problem or "no answer span and no fenced JSON block"
            if len(found) > 1:
                return None, None, f"{len(found)} fenced blocks and no answer span (exactly one is allowed)"
        text, span = found[0].group(1), (start + found[0].start(1), start + found[0].end(1))
        inner = _FENCE.search(text) if text.strip().startswith("```") else None
        if inner:
            text = inner.group(1)
        text = text.strip()
    if len(text) > max_chars:
        return None, span, f"JSON is {len(text)} characters, over max_chars {max_chars}"
    return text, span, None


class _Strict(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        # {"ok": false, "ok": true}: which one a consumer reads depends on the parser.
        raise _Strict(f"duplicate key {next(k for k in keys if keys.count(k) > 1)!r}")
    return dict(pairs)


def _constant(name: str) -> Any:
    raise _Strict(f"{name} is not JSON")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        # 1e999 reads as infinity, which passes every numeric tolerance.
        raise _Strict(f"the number {text[:40]} does not fit a float")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Strict(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (a scalar is 0), without recursion."""
    best, stack = 0, [(value, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            best = max(best, d)
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            best = max(best, d)
            stack.extend((v, d + 1) for v in node)
    return best


def load_json(text: str, max_depth: int | None = None) -> tuple[Any, str | None]:
    """Strict JSON: no duplicate keys, no NaN/Infinity (Python's json accepts both), no number
    that overflows a float, no integer over ``MAX_INT_DIGITS`` digits, at most ``max_depth``
    levels of nesting."""
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except (json.JSONDecodeError, RecursionError, _Strict, ValueError) as exc:
        msg = (
            exc.msg
            if isinstance(exc, json.JSONDecodeError)
            else "nested too deeply"
            if isinstance(exc, RecursionError)
            else str(exc)
        )
        return None, f"not valid JSON: {msg}"
    if max_depth is not None and (d := depth(value)) > max_depth:
        return None, f"nested {d} levels deep (at most {max_depth})"
    return value, None
