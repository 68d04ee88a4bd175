"""JSON answers: schema validation (``json_schema``) and tool-call matching (``tool_call``).

Where the JSON comes from: the task's answer span when the completion has one, otherwise
exactly one fenced block (```` ```json … ``` ```` or ```` ``` … ``` ````). Several fenced blocks
without an answer span is ``unparseable`` (which one would count?); so is no JSON at all. Text
that is not valid JSON is ``wrong``, and so are duplicate keys and ``NaN``/``Infinity``, which
Python's parser would otherwise accept. JSON is parsed with ``json.loads`` (never evaluated)
and capped at ``max_chars`` (default 100,000).

Schemas are JSON Schema draft 2020-12 (``jsonschema``) or a pydantic model given as a dotted
path (its JSON schema is validated, then ``model_validate`` runs its validators). Extra keys are
forbidden by default: every object schema without an explicit ``additionalProperties`` gets
``additionalProperties: false`` (recursively, including ``$defs``), because an extra key is a
cheap way to smuggle text past a schema. ``extra_keys: true`` turns that off.

Tool calls: ``{"name": ..., "arguments": {...}}`` (``arguments`` may also be a JSON string, as
OpenAI returns it). The name must be one of ``tools`` (OpenAI function specs), the arguments
must validate against that tool's ``parameters`` schema (extra keys forbidden), and when the
row has an expected call (``expected_column``, default ``tool_call``) the name must be equal and
every expected argument must match under its per-field rule: ``exact`` (default; JSON
equality), ``casefold`` (strings, case and outer whitespace ignored), ``numeric`` (numbers within
``1e-9`` relative), ``set`` (lists compared as sets) or ``ignore``. Arguments the model adds
that the expected call lacks are wrong unless ``extra_arguments: true``. Partial credit (the
share of expected arguments matched, when the name is right and the arguments are valid) only
with ``partial_credit: true``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import VerifierError
from .base import BaseVerifier, Sample, Verdict
from .format import AnswerFormat, extract

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.S)
RULES = ("exact", "casefold", "numeric", "set", "ignore")


def forbid_extra(schema: Any) -> Any:
    """A copy of ``schema`` with ``additionalProperties: false`` on every object schema that
    does not set it (or ``unevaluatedProperties``)."""
    schema = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            is_object = node.get("type") == "object" or "properties" in node
            if is_object and "additionalProperties" not in node and "unevaluatedProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def _validator(schema: Any, where: str) -> Any:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise VerifierError(f"{where}: not a valid JSON Schema (draft 2020-12): {exc.message}") from None
    return Draft202012Validator(schema)


def _first_error(validator: Any, obj: Any) -> str | None:
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    e = errors[0]
    path = "/".join(str(p) for p in e.absolute_path) or "(root)"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{path}: {e.message[:200]}{more}"


def find_json(completion: str, fmt: AnswerFormat, max_chars: int) -> tuple[str | None, tuple[int, int] | None, str | None]:
    """(json text, span, problem): the answer span, else the one fenced block."""
    ex = extract(completion, fmt)
    if ex.ok and ex.answer is not None:
        text, span = ex.answer, ex.span
        m = _FENCE.search(text) if text.startswith("```") else None
        if m:  # a fenced block inside the answer span
            text = m.group(1)
    else:
        blocks = list(_FENCE.finditer(completion))
        if not blocks:
            return None, None, ex.problem or "no answer span and no fenced JSON block"
        if len(blocks) > 1:
            return None, None, f"{len(blocks)} fenced blocks and no answer span (exactly one is allowed)"
        text, span = blocks[0].group(1), (blocks[0].start(1), blocks[0].end(1))
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


def _load(text: str) -> tuple[Any, str | None]:
    """Strict JSON: no duplicate keys, no NaN/Infinity (Python's json accepts both)."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant), None
    except (json.JSONDecodeError, RecursionError, _Strict) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return None, f"not valid JSON: {msg}"


class JsonSchemaVerifier(BaseVerifier):
    """1.0 when the JSON answer validates against ``schema`` (a mapping, or a path to a JSON
    file), a pydantic ``model`` (dotted path), or the row's ``schema_column``."""

    kind = "json"

    def __init__(
        self,
        schema: Mapping[str, Any] | str | None = None,
        model: str | None = None,
        schema_column: str | None = None,
        extra_keys: bool = False,
        answer_format: AnswerFormat | None = None,
        max_chars: int = 100_000,
    ) -> None:
        given = [k for k, v in (("schema", schema), ("model", model), ("schema_column", schema_column)) if v]
        if len(given) != 1:
            raise VerifierError(f"json_schema needs exactly one of schema, model, schema_column (got {', '.join(given) or 'none'})")
        self.fmt = answer_format or AnswerFormat()
        self.extra_keys = extra_keys
        self.max_chars = max_chars
        self.schema_column = schema_column
        self.model_cls: Any = None
        self.validator: Any = None
        if isinstance(schema, str):
            try:
                with open(schema, encoding="utf-8") as f:
                    schema = json.load(f)
            except (OSError, json.JSONDecodeError) as exc:
                raise VerifierError(f"json_schema: cannot read schema file {schema!r}: {exc}") from None
        if model:
            from . import _import

            self.model_cls = _import(model)
            if not hasattr(self.model_cls, "model_json_schema"):
                raise VerifierError(f"json_schema: {model!r} is not a pydantic model")
            schema = self.model_cls.model_json_schema()
        if schema is not None:
            self.validator = _validator(schema if extra_keys else forbid_extra(schema), "json_schema.schema")

    def verify(self, sample: Sample) -> Verdict:
        validator = self.validator
        if validator is None:
            raw = sample.row.get(self.schema_column or "")
            if isinstance(raw, str):
                raw, problem = _load(raw)
                if problem:
                    return Verdict.error(f"row's {self.schema_column!r} is {problem}", kind="ground_truth")
            if not isinstance(raw, Mapping):
                return Verdict.error(f"row has no schema in column {self.schema_column!r}", kind="ground_truth")
            try:
                validator = _validator(dict(raw) if self.extra_keys else forbid_extra(dict(raw)), f"column {self.schema_column}")
            except VerifierError as exc:
                return Verdict.error(str(exc), kind="ground_truth")
        text, span, problem = find_json(sample.completion, self.fmt, self.max_chars)
        if problem and text is None and span is None:
            return Verdict.unparseable(problem)
        if problem:
            return Verdict.wrong(detail=problem, span=span)
        assert text is not None
        obj, problem = _load(text)
        if problem:
            return Verdict.wrong(detail=problem, answer=text[:200], span=span)
        err = _first_error(validator, obj)
        if err:
            return Verdict.wrong(detail=f"schema: {err}", answer=text[:200], span=span)
        if self.model_cls is not None:
            try:
                self.model_cls.model_validate(obj)
            except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError and validators' errors
                return Verdict.wrong(detail=f"model: {str(exc).splitlines()[0][:200]}", answer=text[:200], span=span)
        return Verdict.correct(answer=text[:200], span=span)


def _tool_specs(tools: Any) -> dict[str, Any]:
    if not isinstance(tools, Sequence) or isinstance(tools, str) or not tools:
        raise VerifierError("tool_call needs tools: a non-empty list of OpenAI function specs ({name, parameters})")
    specs = {}
    for i, t in enumerate(tools):
        fn = t.get("function", t) if isinstance(t, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise VerifierError(f"tool_call tools[{i}]: expected {{name, parameters}} or {{type: function, function: {{...}}}}")
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        specs[fn["name"]] = params
    return specs


def _match(rule: str, want: Any, got: Any) -> bool:
    if rule == "ignore":
        return True
    if rule == "casefold":
        return isinstance(want, str) and isinstance(got, str) and want.strip().casefold() == got.strip().casefold()
    if rule == "numeric":
        if isinstance(want, bool) or isinstance(got, bool) or not isinstance(want, (int, float)) or not isinstance(got, (int, float)):
            return False
        return abs(want - got) <= 1e-9 * max(abs(want), abs(got), 1e-300)
    if rule == "set":
        if not isinstance(want, list) or not isinstance(got, list):
            return False
        canon = lambda xs: sorted(json.dumps(x, sort_keys=True) for x in xs)  # noqa: E731
        return canon(want) == canon(got) and len(set(canon(want))) == len(set(canon(got)))
    return json.dumps(want, sort_keys=True) == json.dumps(got, sort_keys=True)


class ToolCallVerifier(BaseVerifier):
    """A tool call: known name, arguments valid for the tool, and (when the row has one) equal
    to the expected call under per-field rules."""

    kind = "tool_call"

    def __init__(
        self,
        tools: Sequence[Mapping[str, Any]],
        expected_column: str | None = "tool_call",
        fields: Mapping[str, str] | None = None,
        extra_arguments: bool = False,
        partial_credit: bool = False,
        answer_format: AnswerFormat | None = None,
        max_chars: int = 100_000,
    ) -> None:
        self.specs = _tool_specs(tools)
        self.validators = {name: _validator(forbid_extra(p), f"tool {name} parameters") for name, p in self.specs.items()}
        rules = dict(fields or {})
        bad = {k: v for k, v in rules.items() if v not in RULES}
        if bad:
            raise VerifierError(f"tool_call fields: unknown rule(s) {bad}; known: {', '.join(RULES)}")
        self.rules = rules
        self.expected_column = expected_column
        self.extra_arguments = extra_arguments
        self.partial_credit = partial_credit
        self.fmt = answer_format or AnswerFormat()
        self.max_chars = max_chars

    def _expected(self, row: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str | None]:
        if not self.expected_column or row.get(self.expected_column) is None:
            return None, None
        raw = row[self.expected_column]
        if isinstance(raw, str):
            raw, problem = _load(raw)
            if problem:
                return None, f"expected call in {self.expected_column!r} is {problem}"
        if not isinstance(raw, Mapping) or "name" not in raw:
            return None, f"expected call in {self.expected_column!r} must be an object with a name"
        args = raw.get("arguments", {})
        if isinstance(args, str):
            args, problem = _load(args)
            if problem:
                return None, f"expected arguments are {problem}"
        return {"name": raw["name"], "arguments": args or {}}, None

    def verify(self, sample: Sample) -> Verdict:
        expected, problem = self._expected(sample.row)
        if problem:
            return Verdict.error(problem, kind="ground_truth")
        text, span, problem = find_json(sample.completion, self.fmt, self.max_chars)
        if problem and text is None and span is None:
            return Verdict.unparseable(problem)
        if problem:
            return Verdict.wrong(detail=problem, span=span)
        assert text is not None
        call, problem = _load(text)
        kw = {"answer": text[:200], "span": span}
        if problem:
            return Verdict.wrong(detail=problem, **kw)
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return Verdict.wrong(detail="a tool call is an object with a string 'name'", **kw)
        extra = sorted(set(call) - {"name", "arguments"})
        if extra:
            return Verdict.wrong(detail=f"unexpected keys in the call: {extra}", **kw)
        args = call.get("arguments", {})
        if isinstance(args, str):
            args, problem = _load(args)
            if problem:
                return Verdict.wrong(detail=f"arguments are {problem}", **kw)
        if not isinstance(args, dict):
            return Verdict.wrong(detail="arguments must be an object", **kw)
        name = call["name"]
        if name not in self.validators:
            return Verdict.wrong(detail=f"unknown tool {name!r} (tools: {', '.join(sorted(self.validators))})", **kw)
        err = _first_error(self.validators[name], args)
        if err:
            return Verdict.wrong(detail=f"arguments: {err}", **kw)
        if expected is None:
            return Verdict.correct(**kw)
        if name != expected["name"]:
            return Verdict.wrong(detail=f"called {name!r}, expected {expected['name']!r}", **kw)
        want = expected["arguments"]
        missed = [k for k in want if not (k in args and _match(self.rules.get(k, "exact"), want[k], args[k]))]
        added = [] if self.extra_arguments else sorted(k for k in args if k not in want)
        if not missed and not added:
            return Verdict.correct(**kw)
        detail = "; ".join(filter(None, [f"arguments differ: {missed}" if missed else "", f"arguments not expected: {added}" if added else ""]))
        if self.partial_credit and want:
            return Verdict.wrong((len(want) - len(missed)) / len(want) * (0.0 if added else 1.0), detail=detail, **kw)
        return Verdict.wrong(detail=detail, **kw)
