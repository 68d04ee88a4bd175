"""JSON answers: schema validation (``json_schema``) and tool-call matching (``tool_call``).

Where the JSON comes from: the task's answer span when the completion has one, otherwise
exactly one fenced block (```` ```json … ``` ```` or ```` ``` … ``` ````). Several fenced blocks
without an answer span is ``unparseable`` (which one would count?); so is no JSON at all. Text
that is not valid JSON is ``wrong``, and so are duplicate keys and ``NaN``/``Infinity``, which
Python's parser would otherwise accept. JSON is parsed with ``json.loads`` (never evaluated)
and capped at ``max_chars`` (default 100,000). A number that does not fit a float (``1e999``,
which Python reads as infinity), an integer longer than Python converts (4,300 digits) and
nesting deeper than ``max_depth`` (default 64) are *wrong* answers, not errors: an error would
mask the sample out of its group, so a wrong answer could hide itself from its negative
advantage. The same holds for anything that raises while the parsed value is validated or
compared.

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
import datetime
import hashlib
import json
import math
import pickle
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..errors import VerifierError
from .base import BaseVerifier, Sample, Verdict
from .format import AnswerFormat, answer_start, extract

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.S)
_TOOL_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
RULES = ("exact", "casefold", "numeric", "set", "ignore")
_COMPOSING = ("allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "if", "then", "else", "dependentSchemas")
MAX_INT_DIGITS = 4300  # Python's own default limit for int(str)


def forbid_extra(schema: Any) -> Any:
    """A copy of ``schema`` where objects take no keys beyond the ones it names (see the module
    docstring): ``additionalProperties: false`` on plain object schemas with ``properties``,
    ``unevaluatedProperties: false`` on object schemas that compose others, nothing on the
    branches they compose or on free-form objects."""
    schema = copy.deepcopy(schema)
    composed_defs: set[str] = set()

    def collect(node: Any, in_branch: bool) -> None:
        # $defs reached through composition are branches too: an allOf of a $ref stays open.
        if isinstance(node, dict):
            ref = node.get("$ref")
            if (
                isinstance(ref, str)
                and ref.startswith("#/")
                and (in_branch or any(k in node for k in ("properties", "allOf", "anyOf", "oneOf")))
            ):
                composed_defs.add(ref)
            for key, value in node.items():
                branch = key in ("allOf", "anyOf", "oneOf", "then", "else", "if", "dependentSchemas")
                if isinstance(value, list):
                    for item in value:
                        collect(item, branch)
                elif isinstance(value, dict):
                    collect(value, branch)
        elif isinstance(node, list):
            for item in node:
                collect(item, in_branch)

    def walk(node: Any, composed: bool, path: str) -> None:
        if isinstance(node, dict):
            composed = composed or path in composed_defs
            has_props = "properties" in node or "patternProperties" in node
            is_object = node.get("type") == "object" or has_props
            composes = any(k in node for k in _COMPOSING)
            branches = [b for k in ("allOf", "anyOf", "oneOf") for b in node.get(k) or () if isinstance(b, dict)]
            is_object = is_object or any("properties" in b or "patternProperties" in b for b in branches)
            if (
                is_object
                and not composed
                and "additionalProperties" not in node
                and "unevaluatedProperties" not in node
            ):
                if composes:
                    node["unevaluatedProperties"] = False
                elif has_props:
                    node["additionalProperties"] = False
            for key, value in node.items():
                branch = key in ("allOf", "anyOf", "oneOf", "then", "else", "if")
                if key == "dependentSchemas" and isinstance(value, dict):
                    for k, v in value.items():
                        walk(v, True, f"{path}/{key}/{k}")
                elif isinstance(value, list):
                    for i, item in enumerate(value):
                        walk(item, branch, f"{path}/{key}/{i}")
                elif isinstance(value, dict):
                    walk(value, branch, f"{path}/{key}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, False, f"{path}/{i}")

    collect(schema, False)
    walk(schema, False, "#")
    return schema


# -- formats and patterns ---------------------------------------------------------------------------
_DATE_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_DURATION = re.compile(r"P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s<>\"{}|\\^`]*")
_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def _is_date_time(value: str) -> bool:
    m = _DATE_TIME.fullmatch(value)
    if not m:
        return False
    try:
        datetime.date.fromisoformat(m.group(1))
    except ValueError:
        return False
    h, mi, sec = int(m.group(2)), int(m.group(3)), int(m.group(4))
    return h <= 23 and mi <= 59 and sec <= 60


def _is_time(value: str) -> bool:
    m = _TIME.fullmatch(value)
    return bool(m) and int(m.group(1)) <= 23 and int(m.group(2)) <= 59 and int(m.group(3)) <= 60


def _is_email(value: str) -> bool:
    local, at, domain = value.rpartition("@")
    if not at or not local or len(value) > 254 or any(c.isspace() for c in value) or "@" in local.strip('"'):
        return False
    return _is_hostname(domain) and "." in domain


def _is_hostname(value: str) -> bool:
    value = value[:-1] if value.endswith(".") else value
    return 0 < len(value) <= 253 and all(_LABEL.fullmatch(label) for label in value.split("."))


def _format_checker() -> Any:
    from jsonschema import FormatChecker

    checker = FormatChecker()
    extra = {
        "date-time": _is_date_time,
        "time": _is_time,
        "email": _is_email,
        "hostname": _is_hostname,
        "duration": lambda v: bool(_DURATION.fullmatch(v)),
        "uri": lambda v: bool(_URI.fullmatch(v)),
        "iri": lambda v: bool(_URI.fullmatch(v)),
        "uri-reference": lambda v: not any(c.isspace() for c in v),
        "iri-reference": lambda v: not any(c.isspace() for c in v),
    }
    for name, fn in extra.items():
        checker.checks(name)(lambda v, fn=fn: not isinstance(v, str) or fn(v))
    return checker


def _formats(schema: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(schema, dict):
        if isinstance(schema.get("format"), str):
            out.add(schema["format"])
        for key, value in schema.items():
            if key not in ("const", "enum", "default", "examples"):
                out |= _formats(value)
    elif isinstance(schema, list):
        for item in schema:
            out |= _formats(item)
    return out


class _PatternTimeout(Exception):
    pass


def _search(pattern: str, text: str, timeout: float) -> bool:
    import regex

    try:
        return regex.search(pattern, text, timeout=timeout) is not None
    except TimeoutError:
        raise _PatternTimeout(pattern) from None


def _validator_class(pattern_timeout: float) -> Any:
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import ValidationError

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "string"):
            try:
                ok = _search(patrn, instance, pattern_timeout)
            except _PatternTimeout:
                yield ValidationError(f"matching pattern {patrn!r} took longer than {pattern_timeout:g} s")
                return
            if not ok:
                yield ValidationError(f"{instance[:80]!r} does not match {patrn!r}")

    def pattern_properties(validator: Any, props: Mapping[str, Any], instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in props.items():
            for k, v in instance.items():
                try:
                    hit = _search(patrn, k, pattern_timeout)
                except _PatternTimeout:
                    yield ValidationError(f"matching key pattern {patrn!r} took longer than {pattern_timeout:g} s")
                    return
                if hit:
                    yield from validator.descend(v, subschema, path=k, schema_path=patrn)

    return validators.extend(Draft202012Validator, {"pattern": pattern, "patternProperties": pattern_properties})


def _validator(
    schema: Any, where: str, check_formats: bool = True, pattern_timeout: float = 0.5, strict_formats: bool = True
) -> Any:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise VerifierError(f"{where}: not a valid JSON Schema (draft 2020-12): {exc.message}") from None
    checker = _format_checker() if check_formats else None
    if checker is not None and strict_formats:
        unknown = sorted(_formats(schema) - set(checker.checkers))
        if unknown:
            raise VerifierError(
                f"{where}: format(s) {', '.join(unknown)} cannot be checked here (checked: {', '.join(sorted(checker.checkers))}); "
                "remove them, use pattern, or set check_formats: false to leave every format unchecked"
            )
    return _validator_class(pattern_timeout)(schema, format_checker=checker)


def _first_error(validator: Any, obj: Any) -> str | None:
    try:
        errors = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
    except Exception as exc:  # noqa: BLE001 - a value the validator cannot handle is not valid
        return f"(root): the value could not be validated ({type(exc).__name__}: {str(exc)[:120]})"
    if not errors:
        return None
    e = errors[0]
    path = "/".join(str(p) for p in e.absolute_path) or "(root)"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{path}: {e.message[:200]}{more}"


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


def _load(text: str, max_depth: int | None = None) -> tuple[Any, str | None]:
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

    def _columns(self) -> tuple[str, ...]:  # pragma: no cover - overridden
        return ()

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
        cols = self._columns()
        plain = [Sample(s.completion, {k: s.row[k] for k in cols if k in s.row}, "", None) for s in samples]
        results = pool.map(
            "rlvr.rewards.schema:_remote_verify",
            [(type(self).__name__, self._kwargs, self._key, [s]) for s in plain],
            timeout=self.timeout,
        )
        out = []
        for i, r in enumerate(results):
            if r.ok:
                out.append(r.value[0])
            else:
                out.append(Verdict.error(f"row {i}: {r.detail}", kind=r.error_kind or "crash"))
        return out


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

    def _columns(self) -> tuple[str, ...]:
        return (self.schema_column,) if self.schema_column else ()

    def _build(self, schema: Any, where: str, strict_formats: bool = True) -> Any:
        return _validator(
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
                raw, problem = _load(raw)
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
        obj, problem = _load(text, self.max_depth)
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


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _canon(x: Any) -> Any:
    """``x`` with whole floats as ints (``3.0`` -> ``3``), so JSON equality is numeric."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, dict):
        return {k: _canon(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_canon(v) for v in x]
    return x


def _dump(x: Any) -> str:
    return json.dumps(_canon(x), sort_keys=True)


def _match(rule: str, want: Any, got: Any) -> bool:
    """Whether ``got`` matches ``want`` under ``rule``. Numbers compare as exact fractions, so
    ``3.0`` equals ``3`` and a 400-digit integer compares without overflowing a float."""
    if rule == "ignore":
        return True
    if rule == "casefold":
        return isinstance(want, str) and isinstance(got, str) and want.strip().casefold() == got.strip().casefold()
    if rule == "numeric":
        if not _is_number(want) or not _is_number(got):
            return False
        if isinstance(want, float) and not math.isfinite(want) or isinstance(got, float) and not math.isfinite(got):
            return False
        a, b = Fraction(want), Fraction(got)
        return abs(a - b) <= Fraction(1, 10**9) * max(abs(a), abs(b))
    if rule == "set":
        if not isinstance(want, list) or not isinstance(got, list):
            return False
        w, g = sorted(_dump(x) for x in want), sorted(_dump(x) for x in got)
        return w == g and len(set(w)) == len(set(g))
    return _dump(want) == _dump(got)


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
            name: _validator(forbid_extra(p), f"tool {name} parameters", check_formats, float(pattern_timeout))
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

    def _columns(self) -> tuple[str, ...]:
        return (self.expected_column,) if self.expected_column else ()

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
        text, span, problem = find_json(sample.completion, self.fmt, self.max_chars, tool_tags=True)
        if problem and text is None and span is None:
            return Verdict.unparseable(problem)
        if problem:
            return Verdict.wrong(detail=problem, span=span)
        assert text is not None
        call, problem = _load(text, self.max_depth)
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
            args, problem = _load(args, self.max_depth)
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
        detail = "; ".join(
            filter(
                None,
                [f"arguments differ: {missed}" if missed else "", f"arguments not expected: {added}" if added else ""],
            )
        )
        if self.partial_credit and want:
            return Verdict.wrong((len(want) - len(missed)) / len(want) * (0.0 if added else 1.0), detail=detail, **kw)
        return Verdict.wrong(detail=detail, **kw)
