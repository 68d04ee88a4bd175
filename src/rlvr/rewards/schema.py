"""JSON answers: schema validation (``json_schema``) and tool-call matching (``tool_call``).

Where the JSON comes from: the task's answer span when the completion has one, otherwise
exactly one fenced block (```` ```json … ``` ```` or ```` ``` … ``` ````). Several fenced blocks
without an answer span is ``unparseable`` (which one would count?); so is no JSON at all. Text
that is not valid JSON is ``wrong``. JSON is read by the one strict reader,
``rlvr.rewards.rules.strictjson`` (never evaluated), capped at ``max_chars`` (default 100,000):
duplicate keys and ``NaN``/``Infinity`` are refused, integers stay ``int`` and every other number
is read exactly (``10000000000000001.0`` is not ``1e16``); a number of more than 4,300 digits
(or an exponent past 4,300) and nesting deeper than ``max_depth`` (default 64) are *wrong*
answers, not errors: an error would mask the sample out of its group, so a wrong answer could
hide itself from its negative advantage. The same holds for anything that raises while the
parsed value is validated or compared, and for a check that runs out of time on the answer's
account (see below).

Where the JSON may be: never inside the think block (a fenced block there is reasoning, not the
answer), and not at all when the think policy is broken (``think: required`` without a block).
Tool calls are also read from ``<tool_call>…</tool_call>`` blocks (the Hermes/Qwen chat format;
the TRL adapter writes structured ``tool_calls`` messages this way too); exactly one call is
expected.

Schemas are JSON Schema draft 2020-12 (``jsonschema``) or a pydantic model given as a dotted
path (its JSON schema is validated, then ``model_validate`` runs its validators). Extra keys are
forbidden by default, because an extra key is a cheap way to smuggle text past a schema: an
object schema that lists ``properties`` and sets neither ``additionalProperties`` nor
``unevaluatedProperties`` gets ``additionalProperties: false`` (recursively, including
``$defs``); one that composes subschemas (``allOf``, ``anyOf``, ``oneOf``, ``$ref``, ``if``) gets
``unevaluatedProperties: false`` instead, and its branches are left open, so ``allOf`` of two
partial objects still accepts their union. A bare ``{"type": "object"}`` is a free-form object
and stays one. ``extra_keys: true`` turns all of this off.

``format`` keywords are enforced (``email``, ``date``, ``date-time``, ``time``, ``uri``,
``hostname``, ``ipv4``, ``ipv6``, ``uuid``, ``duration``, ``regex``...); a schema naming a format
that cannot be checked is refused when the term is built, unless ``check_formats: false``.
``pattern`` and ``patternProperties`` run on the ``regex`` engine with a time limit per match
(``pattern_timeout``, default 0.5 s); a match that runs out of time is a *wrong* answer.

Every sample of a batch (``verify_batch``: what scoring, the audit and the TRL adapter call) is
bounded by a hard timeout (``timeout``, default 10 s): the check runs in a worker process of
``rlvr.rewards.pool`` that is killed past it (an ``error``, ``error_kind="timeout"``).
``timeout: null`` checks in-process, unbounded; ``verify`` on one sample always runs in-process.
Who pays for a timeout is the fail-closed rule's to say (``rlvr.rewards.fault``): the answer,
unless the row's gold fails the same way (a tool call's expected call, checked through the same
worker); a ``json_schema`` term has no gold, so its timeouts are always the answer's. A schema
that cannot be applied (a ``$ref`` that does not resolve, a
``$ref`` cycle) is the row's problem too: masked (``error_kind="ground_truth"``), never wrong.

Tool calls: ``{"name": ..., "arguments": {...}}`` (``arguments`` may also be a JSON string, as
OpenAI returns it). The name must be one of ``tools`` (OpenAI function specs), the arguments
must validate against that tool's ``parameters`` schema (extra keys forbidden), and when the
row has an expected call (``expected_column``, default ``tool_call``) the name must be equal and
every expected argument must match under its per-field rule: ``exact`` (default; JSON
equality, numbers by exact value), ``casefold`` (strings, case and outer whitespace ignored),
``numeric`` (numbers within ``1e-9`` relative), ``set`` (lists compared as sets) or ``ignore``. Arguments the model adds
that the expected call lacks are wrong unless ``extra_arguments: true``. Partial credit (the
share of expected arguments matched, when the name is right and the arguments are valid) only
with ``partial_credit: true``.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..errors import VerifierError
from .base import BaseVerifier, Reads, Sample, Verdict
from .format import AnswerFormat
from .jsontext import find_json
from .rules import untrusted
from .rules.jsonrules import SchemaBroken, build_validator, first_error, forbid_extra
from .rules.strictjson import exact_number, json_equal, json_key, load_json, safe_dumps

RULES = ("exact", "casefold", "numeric", "set", "ignore")


# -- hard timeouts: the check runs in a worker process ------------------------------------------
_REMOTE: dict[str, Any] = {}


def _remote_verify(
    cls_name: str, kwargs: dict[str, Any], key: str, samples: list[Sample]
) -> list[Verdict]:  # pragma: no cover - runs in a worker
    verifier = _REMOTE.get(key)
    if verifier is None:
        verifier = _REMOTE[key] = globals()[cls_name](**kwargs, timeout=None)
    return [verifier.verify(s) for s in samples]


class _Bounded(BaseVerifier):
    """Runs ``verify`` in a worker process of ``rlvr.rewards.pool`` under a hard timeout per
    sample, or in-process when ``timeout`` is None."""

    timeout: float | None = None
    _kwargs: dict[str, Any]

    def reads(self) -> Reads:  # pragma: no cover - overridden
        raise NotImplementedError

    def _remote(self, kwargs: dict[str, Any], timeout: float | None) -> None:
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise VerifierError(f"timeout must be a positive number of seconds or null, got {timeout!r}")
        self.timeout = None if timeout is None else float(timeout)
        self._kwargs = kwargs
        self._key = hashlib.sha256(pickle.dumps((type(self).__name__, kwargs))).hexdigest()

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        if self.timeout is None:
            return super().verify_batch(samples)
        from .pool import shared_pool

        pool = shared_pool(preload=("rlvr.rewards.schema",))
        # Only the columns the check reads travel to the worker (a dataset row may hold values
        # that do not pickle, such as images, and need not pay for the trip).
        cols = self.reads().columns
        plain = [Sample(s.completion, {k: s.row[k] for k in cols if k in s.row}, "", None) for s in samples]
        results = pool.map(
            "rlvr.rewards.schema:_remote_verify",
            [(type(self).__name__, self._kwargs, self._key, [s]) for s in plain],
            timeout=self.timeout,
        )
        # A timeout, memory or crash is an error here; whose fault it is, the answer's or the
        # row's, is decided in one place for every term (rlvr.rewards.fault).
        return [
            r.value[0] if r.ok else Verdict.error(f"row {i}: {r.detail}", kind=r.error_kind or "crash")
            for i, r in enumerate(results)
        ]


class JsonSchemaVerifier(_Bounded):
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
        max_depth: int = 64,
        check_formats: bool = True,
        pattern_timeout: float = 0.5,
        timeout: float | None = 10.0,
    ) -> None:
        given = [k for k, v in (("schema", schema), ("model", model), ("schema_column", schema_column)) if v]
        if len(given) != 1:
            raise VerifierError(
                f"json_schema needs exactly one of schema, model, schema_column (got {', '.join(given) or 'none'})"
            )
        _check_limits(max_chars, max_depth, pattern_timeout)
        self.fmt = answer_format or AnswerFormat()
        self.extra_keys = extra_keys
        self.max_chars = max_chars
        self.max_depth = max_depth
        self.check_formats = check_formats
        self.pattern_timeout = float(pattern_timeout)
        self.schema_column = schema_column
        self.model_cls: Any = None
        self.validator: Any = None
        self._declared: Any = None
        if isinstance(schema, str):
            try:
                with open(schema, encoding="utf-8") as f:
                    schema = json.load(f)
            except (OSError, json.JSONDecodeError) as exc:
                raise VerifierError(f"json_schema: cannot read schema file {schema!r}: {exc}") from None
        if model:
            from . import import_object

            self.model_cls = import_object(model)
            if not hasattr(self.model_cls, "model_json_schema"):
                raise VerifierError(f"json_schema: {model!r} is not a pydantic model")
            schema = self.model_cls.model_json_schema()
        if schema is not None:
            # A pydantic model checks its own formats (model_validate): formats its schema names
            # that jsonschema cannot check are left to it.
            self.validator = self._build(schema, "json_schema.schema", strict_formats=model is None)
            # What reads() declares: the schema as written (the validator's copy holds Decimals).
            self._declared = schema if extra_keys else forbid_extra(schema)
        self._remote(
            {
                "schema": schema if model is None else None,
                "model": model,
                "schema_column": schema_column,
                "extra_keys": extra_keys,
                "answer_format": self.fmt,
                "max_chars": max_chars,
                "max_depth": max_depth,
                "check_formats": check_formats,
                "pattern_timeout": pattern_timeout,
            },
            timeout,
        )

    def reads(self) -> Reads:
        return Reads(
            columns=(self.schema_column,) if self.schema_column else (),
            schema=self._declared if self.validator is not None else None,
            schema_column=self.schema_column,
        )

    def _build(self, schema: Any, where: str, strict_formats: bool = True) -> Any:
        return build_validator(
            schema if self.extra_keys else forbid_extra(schema),
            where,
            self.check_formats,
            self.pattern_timeout,
            strict_formats,
        )

    def verify(self, sample: Sample) -> Verdict:
        validator = self.validator
        if validator is None:
            raw = sample.row.get(self.schema_column or "")
            if isinstance(raw, str):
                raw, problem = load_json(raw)
                if problem:
                    return Verdict.error(f"row's {self.schema_column!r} is {problem}", kind="ground_truth")
            if not isinstance(raw, Mapping):
                return Verdict.error(f"row has no schema in column {self.schema_column!r}", kind="ground_truth")
            try:
                validator = self._build(dict(raw), f"column {self.schema_column}")
            except VerifierError as exc:
                return Verdict.error(str(exc), kind="ground_truth")
        text, span, problem = find_json(sample.completion, self.fmt, self.max_chars)
        if problem and text is None and span is None:
            return Verdict.unparseable(problem)
        if problem:
            return Verdict.wrong(detail=problem, span=span)
        assert text is not None
        obj, problem = load_json(text, self.max_depth)
        if problem:
            return Verdict.wrong(detail=problem, answer=text[:200], span=span)
        try:
            err = first_error(validator, obj)
        except SchemaBroken as exc:
            return Verdict.error(f"the row's schema: {exc}", kind="ground_truth")
        if err:
            return Verdict.wrong(detail=f"schema: {err}", answer=text[:200], span=span)
        if self.model_cls is not None:
            try:
                self.model_cls.model_validate(obj)
            except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError and validators' errors
                return Verdict.wrong(
                    detail=f"model: {untrusted.text_lines(str(exc))[0][:200]}", answer=text[:200], span=span
                )
        return Verdict.correct(answer=text[:200], span=span)


def _check_limits(max_chars: Any, max_depth: Any, pattern_timeout: Any) -> None:
    for name, value in (("max_chars", max_chars), ("max_depth", max_depth)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise VerifierError(f"{name} must be a positive integer, got {value!r}")
    if (
        isinstance(pattern_timeout, bool)
        or not isinstance(pattern_timeout, (int, float))
        or not math.isfinite(pattern_timeout)
        or pattern_timeout <= 0
    ):
        raise VerifierError(f"pattern_timeout must be a positive number of seconds, got {pattern_timeout!r}")


def _tool_specs(tools: Any) -> dict[str, Any]:
    if not isinstance(tools, Sequence) or isinstance(tools, str) or not tools:
        raise VerifierError("tool_call needs tools: a non-empty list of OpenAI function specs ({name, parameters})")
    specs = {}
    for i, t in enumerate(tools):
        fn = t.get("function", t) if isinstance(t, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise VerifierError(
                f"tool_call tools[{i}]: expected {{name, parameters}} or {{type: function, function: {{...}}}}"
            )
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        specs[fn["name"]] = params
    return specs


def argument_matches(rule: str, want: Any, got: Any) -> bool:
    """Whether ``got`` matches ``want`` under ``rule``. Numbers compare by exact value
    (``rlvr.rewards.rules.strictjson.json_equal``), so ``3.0`` equals ``3``, a 400-digit integer compares
    without overflowing a float, and ``10000000000000001.0`` is not ``1e16``."""
    if rule == "ignore":
        return True
    if rule == "casefold":
        return (
            isinstance(want, str)
            and isinstance(got, str)
            and untrusted.fold_case(untrusted.strip(want)) == untrusted.fold_case(untrusted.strip(got))
        )
    if rule == "numeric":
        a, b = exact_number(want), exact_number(got)
        if a is None or b is None:
            return False
        return abs(a - b) <= Fraction(1, 10**9) * max(abs(a), abs(b))
    if rule == "set":
        if not isinstance(want, list) or not isinstance(got, list):
            return False
        w, g = sorted(json_key(x) for x in want), sorted(json_key(x) for x in got)
        return w == g and len(set(w)) == len(set(g))
    return json_equal(want, got)


class ToolCallVerifier(_Bounded):
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
        max_depth: int = 64,
        check_formats: bool = True,
        pattern_timeout: float = 0.5,
        timeout: float | None = 10.0,
    ) -> None:
        _check_limits(max_chars, max_depth, pattern_timeout)
        self.specs = _tool_specs(tools)
        self.validators = {
            name: build_validator(forbid_extra(p), f"tool {name} parameters", check_formats, float(pattern_timeout))
            for name, p in self.specs.items()
        }
        self.max_depth = max_depth
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
        self._remote(
            {
                "tools": [dict(t) for t in tools],
                "expected_column": expected_column,
                "fields": rules,
                "extra_arguments": extra_arguments,
                "partial_credit": partial_credit,
                "answer_format": self.fmt,
                "max_chars": max_chars,
                "max_depth": max_depth,
                "check_formats": check_formats,
                "pattern_timeout": pattern_timeout,
            },
            timeout,
        )

    def reads(self) -> Reads:
        return Reads(
            columns=(self.expected_column,) if self.expected_column else (),
            expected_column=self.expected_column,
            tools=self.specs,
        )

    def gold_completion(self, row: Mapping[str, Any]) -> str | None:
        """The row's expected call as a completion (in the answer span), or None when the row has
        none: what ``rlvr.rewards.fault`` scores to tell the answer's failures from the row's."""
        expected, problem = self._expected(row)
        if expected is None or problem:
            return None
        text = safe_dumps(dict(expected))
        return None if text is None else self.fmt.wrap(text)

    def _expected(self, row: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str | None]:
        if not self.expected_column or row.get(self.expected_column) is None:
            return None, None
        raw = row[self.expected_column]
        if isinstance(raw, str):
            raw, problem = load_json(raw)
            if problem:
                return None, f"expected call in {self.expected_column!r} is {problem}"
        if not isinstance(raw, Mapping) or "name" not in raw:
            return None, f"expected call in {self.expected_column!r} must be an object with a name"
        args = raw.get("arguments", {})
        if isinstance(args, str):
            args, problem = load_json(args)
            if problem:
                return None, f"expected arguments are {problem}"
        return {"name": raw["name"], "arguments": args or {}}, None

    def verify(self, sample: Sample) -> Verdict:
        expected, problem = self._expected(sample.row)
        if problem:
            return Verdict.error(problem, kind="ground_truth")
        text, span, problem = find_json(sample.completion, self.fmt, self.max_chars, tool_tags=True)
        if problem and text is None and span is None:
            return Verdict.unparseable(problem)
        if problem:
            return Verdict.wrong(detail=problem, span=span)
        assert text is not None
        call, problem = load_json(text, self.max_depth)
        kw: dict[str, Any] = {"answer": text[:200], "span": span}
        if problem:
            return Verdict.wrong(detail=problem, **kw)
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return Verdict.wrong(detail="a tool call is an object with a string 'name'", **kw)
        extra = sorted(set(call) - {"name", "arguments"})
        if extra:
            return Verdict.wrong(detail=f"unexpected keys in the call: {extra}", **kw)
        args = call.get("arguments", {})
        if isinstance(args, str):
            args, problem = load_json(args, self.max_depth)
            if problem:
                return Verdict.wrong(detail=f"arguments are {problem}", **kw)
        if not isinstance(args, dict):
            return Verdict.wrong(detail="arguments must be an object", **kw)
        name = call["name"]
        if name not in self.validators:
            return Verdict.wrong(detail=f"unknown tool {name!r} (tools: {', '.join(sorted(self.validators))})", **kw)
        try:
            err = first_error(self.validators[name], args)
        except SchemaBroken as exc:
            return Verdict.error(f"tool {name} parameters: {exc}", kind="ground_truth")
        if err:
            return Verdict.wrong(detail=f"arguments: {err}", **kw)
        if expected is None:
            return Verdict.correct(**kw)
        if name != expected["name"]:
            return Verdict.wrong(detail=f"called {name!r}, expected {expected['name']!r}", **kw)
        want = expected["arguments"]
        missed = [k for k in want if not (k in args and argument_matches(self.rules.get(k, "exact"), want[k], args[k]))]
        added = [] if self.extra_arguments else sorted(k for k in args if k not in want)
        if not missed and not added:
            return Verdict.correct(**kw)
        detail = "; ".join(
            filter(
                None,
                [f"arguments differ: {missed}" if missed else "", f"arguments not expected: {added}" if added else ""],
            )
        )
        if self.partial_credit and want:
            return Verdict.wrong((len(want) - len(missed)) / len(want) * (0.0 if added else 1.0), detail=detail, **kw)
        return Verdict.wrong(detail=detail, **kw)
