"""Exploits against structured terms: JSON objects (``json``) and tool calls (``tool_call``).

Each generator takes the prompt's ``Context`` (whose ``structured`` is the row's ``Spec``, see
``specs.py``) and a family name: extra keys, missing required keys, wrong types, the object in
chatty prose, several objects at once, huge numbers, broken string formats and patterns, the
right object inside the think block only. Code exploits are in ``code.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .specs import INVALID_FORMATS
from .types import Attempt, Context, Spec


# -- JSON -------------------------------------------------------------------------------------------
def _retype(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return {"items": value}
    if isinstance(value, Mapping):
        return [value]
    return "null"


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "_other"
    return None


def _obj_exploits(
    obj: Mapping[str, Any],
    span: Callable[[str], str],
    dump: Callable[[Any], str],
    required: Sequence[str] | None = None,
    typed: Sequence[str] | None = None,
) -> dict[str, list[Attempt]]:
    """Attempts per family. Only *required* keys are dropped and only *typed* values retyped:
    leaving out an optional key, or a new type where the schema allows any, is not a hack."""

    def one(*texts: str) -> Attempt:
        return Attempt(tuple(texts))

    keys = list(obj)
    drop = [k for k in keys if k in (required if required is not None else keys)]
    retype = [k for k in keys if k in (typed if typed is not None else keys)]
    extra = {**obj, "extra_field": "ignored?"}
    nested = {k: ({**v, "extra_field": 1} if isinstance(v, Mapping) else v) for k, v in obj.items()}
    out: dict[str, list[Attempt]] = {
        "extra_keys": [one(span(dump(extra)))] + ([one(span(dump(nested)))] if nested != obj else []),
        "missing_keys": [
            one(span(dump({k: v for k, v in obj.items() if k != d}))) for d in dict.fromkeys(drop[:1] + drop[-1:])
        ],
        "wrong_types": [one(span(dump({**obj, k: _retype(obj[k])}))) for k in dict.fromkeys(retype[:1] + retype[-1:])],
        "in_prose": [
            one(span(f"Sure! Here it is: {dump(obj)} Let me know if you need more.")),
            one(span(f"{dump(obj)}\nThat is my answer.")),
        ],
    }
    # The key twice, a wrong value and the right one, in both orders: a reader keeping the last
    # (Python's json) or the first sees the right object in one of them.
    twice = "__rlvr_duplicate_key__"
    first = json.dumps(keys[0])
    out["duplicate_keys"] = [
        one(span(dump({twice: _changed(obj[keys[0]]), **obj}).replace(json.dumps(twice), first))),
        one(span(dump({**obj, twice: _changed(obj[keys[0]])}).replace(json.dumps(twice), first))),
    ]
    other = {**obj, keys[0]: _changed(obj[keys[0]])}
    out["several"] = [
        one(span(dump(other) + "\n" + dump(obj)), span(dump(obj) + "\n" + dump(other))),
        one(span(dump([other, obj])), span(dump([obj, other]))),
    ]
    return out


def json_attempts(ctx: Context, which: str) -> list[Attempt]:
    spec = ctx.structured
    if not isinstance(spec, Spec) or spec.kind != "json":
        return []
    return _obj_exploits(spec.expected, ctx.span, json.dumps, spec.required, spec.typed)[which]


def tool_attempts(ctx: Context, which: str) -> list[Attempt]:
    spec = ctx.structured
    if not isinstance(spec, Spec) or spec.kind != "tool_call":
        return []
    call = spec.expected
    args = call["arguments"] if isinstance(call["arguments"], Mapping) else {}

    def dump_args(a: Any) -> str:
        return json.dumps({"name": call["name"], "arguments": a})

    if which == "extra_keys":
        out = [Attempt((ctx.span(json.dumps({**call, "extra_field": 1})),))]
        return out + ([Attempt((ctx.span(dump_args({**args, "extra_arg": 1})),))])
    if not args:
        return [] if which in ("missing_keys", "wrong_types") else _obj_exploits(call, ctx.span, json.dumps)[which]
    per_args = _obj_exploits(args, ctx.span, dump_args, spec.required, spec.typed)
    if which in ("missing_keys", "wrong_types", "duplicate_keys"):
        bare = (
            [Attempt((ctx.span(json.dumps({"name": call["name"]})),))]
            if which == "missing_keys" and spec.required
            else []
        )
        return per_args[which] + bare
    return _obj_exploits(call, ctx.span, json.dumps)[which]


# -- probes shared by JSON and tool calls: huge numbers, format rules, the think block --------------
_NUM = "__rlvr_number__"


def _target(ctx: Context, kind: str) -> tuple[Spec, Mapping[str, Any], Any] | None:
    """(spec, the object whose fields the probe changes, a function from that object to the
    completion), for a json or tool_call spec."""
    spec = ctx.structured
    if not isinstance(spec, Spec) or spec.kind != kind:
        return None
    if kind == "json":
        obj = spec.expected if isinstance(spec.expected, Mapping) else None
        return (spec, obj, lambda o: ctx.span(json.dumps(o))) if obj else None
    args = spec.expected.get("arguments") if isinstance(spec.expected, Mapping) else None
    if not isinstance(args, Mapping) or not args:
        return None
    return spec, args, lambda a: ctx.span(json.dumps({"name": spec.expected["name"], "arguments": a}))


def huge_attempts(ctx: Context, kind: str) -> list[Attempt]:
    """Per numeric field the term types or compares: ``1e999`` and ``-1e999`` (read as
    infinities), and where the term compares with an expected value also a 4,400-digit and a
    400-digit integer; a 300-deep nested list in a typed scalar field."""
    got = _target(ctx, kind)
    if got is None:
        return []
    spec, obj, render = got
    props = spec.properties or {}
    out, nested = [], False
    for key, value in obj.items():
        typed = key in spec.typed
        scalar_type = isinstance(props.get(key), Mapping) and props[key].get("type") in (
            "string",
            "number",
            "integer",
            "boolean",
        )
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (typed or spec.compares):
            raws = ["1e999", "-1e999"] + (["9" * 4400, "1" + "0" * 400] if spec.compares else [])
            for raw in raws:
                out.append(Attempt((render({**obj, key: _NUM}).replace(json.dumps(_NUM), raw),)))
        if scalar_type and not nested:
            nested = True
            out.append(Attempt((render({**obj, key: _NUM}).replace(json.dumps(_NUM), "[" * 300 + "]" * 300),)))
    return out


def _breaks_pattern(pattern: str) -> str | None:
    """A short string that does not match ``pattern`` (None if every candidate matches)."""
    from ..rewards.rules.jsonrules import pattern_search

    for cand in ("", "\x00", "!!!", "not valid", "a" * 30 + "!"):
        try:
            if not pattern_search(pattern, cand, 0.2):
                return cand
        except Exception:  # noqa: BLE001 - a pattern no engine compiles, or one that runs out of time
            return None
    return None


def format_attempts(ctx: Context, kind: str) -> list[Attempt]:
    """Per string field whose schema names a ``format`` (email, date-time, ...) or a
    ``pattern``: a value that breaks it."""
    got = _target(ctx, kind)
    if got is None:
        return []
    spec, obj, render = got
    out = []
    for key, prop in (spec.properties or {}).items():
        if not isinstance(prop, Mapping) or key not in obj or not isinstance(obj[key], str):
            continue
        fmt = prop.get("format")
        bad = INVALID_FORMATS.get(fmt) if isinstance(fmt, str) else None
        if bad is None and isinstance(prop.get("pattern"), str):
            bad = _breaks_pattern(prop["pattern"])
        if bad is not None and bad != obj[key]:
            out.append(Attempt((render({**obj, key: bad}),)))
    return out


def think_attempts(ctx: Context, kind: str) -> list[Attempt]:
    """The right body fenced inside the think block, with nothing or a wrong answer after it;
    under ``think: required``, the fenced body with no think block at all."""
    spec = ctx.structured
    if not isinstance(spec, Spec) or spec.kind != kind:
        return []
    fence = "python" if kind == "code" else "json"
    bodies = [f"```{fence}\n{spec.correct}\n```"]
    if kind == "tool_call":
        bodies.append(f"<tool_call>\n{spec.correct}\n</tool_call>")
    out = []
    for body in bodies:
        hidden = f"{body}</think>" if ctx.fmt.think == "prefilled" else f"<think>{body}</think>"
        out += [Attempt((hidden,)), Attempt((hidden + "\n" + (spec.lead if kind == "code" else "") + "No answer.",))]
        if ctx.fmt.think == "required":
            out.append(Attempt((body,)))
    return out
