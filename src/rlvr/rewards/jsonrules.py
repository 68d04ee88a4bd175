"""JSON Schema as the json_schema and tool_call verifiers use it: extra keys forbidden
(``forbid_extra``), string formats enforced, ``pattern`` matches bounded in time
(``build_validator``), and the first validation error in a sentence (``first_error``).

See ``rlvr.rewards.schema`` for the rules these implement and why.
"""

from __future__ import annotations

import copy
import datetime
import re
from collections.abc import Mapping
from typing import Any

from ..errors import VerifierError

_COMPOSING = ("allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "if", "then", "else", "dependentSchemas")


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
    if m is None:
        return False
    return int(m.group(1)) <= 23 and int(m.group(2)) <= 59 and int(m.group(3)) <= 60


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


def build_validator(
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
                f"{where}: format(s) {', '.join(unknown)} cannot be checked here "
                f"(checked: {', '.join(sorted(checker.checkers))}); "
                "remove them, use pattern, or set check_formats: false to leave every format unchecked"
            )
    return _validator_class(pattern_timeout)(schema, format_checker=checker)


def first_error(validator: Any, obj: Any) -> str | None:
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
