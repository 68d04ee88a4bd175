"""JSON Schema as the json_schema and tool_call verifiers use it: extra keys forbidden
(``forbid_extra``), string formats enforced, ``pattern`` matched in linear time where it can be
(``build_validator``), exact numbers, and the first validation error in a sentence
(``first_error``).

Patterns: the format checks run on RE2 (``rlvr.rewards.rules.patterns``). A schema's own ``pattern``
and ``patternProperties`` run on RE2 when RE2 accepts them; a pattern RE2 refuses
(backreferences, lookaround) runs on the ``regex`` engine with a time limit per match
(``pattern_timeout``), and a match that runs out of time is a wrong answer (the candidate's text
made it expensive).

Numbers: the strict reader gives ``Decimal`` for every number with a fraction or an exponent, so
the validator counts an integral ``Decimal`` as an ``integer``, compares ``multipleOf`` as exact
fractions, and reads the schema's own floats as the decimals they were written as (``const:
0.1`` is the decimal 0.1, and ``10000000000000001.0`` is not ``const: 1e16``).

A schema that cannot be used on an instance -- a ``$ref`` that does not resolve, a ``$ref``
cycle that never consumes the instance -- raises ``SchemaBroken`` (the caller masks the row: its
ground truth is broken), never a wrong answer.

See ``rlvr.rewards.schema`` for the rules these implement and why.
"""

from __future__ import annotations

import copy
import datetime
import functools
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ...errors import VerifierError
from .patterns import Pattern, compile_linear
from .strictjson import exact_number

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
_DATE_TIME = compile_linear(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_TIME = compile_linear(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})")
_DURATION = compile_linear(r"P([0-9]+Y)?([0-9]+M)?([0-9]+W)?([0-9]+D)?(T([0-9]+H)?([0-9]+M)?([0-9]+(\.[0-9]+)?S)?)?")
_URI = compile_linear(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s<>\"{}|\\^`]*")
_LABEL = compile_linear(r"[A-Za-z0-9-]{1,63}")


def _is_duration(value: str) -> bool:
    # P alone, and a T with no digit after it, are not durations (RE2 has no lookahead).
    if value == "P" or not _DURATION.fullmatch(value):
        return False
    t = value.find("T")
    return t == -1 or value[t + 1 : t + 2].isdigit()


def _is_uri(value: str) -> bool:
    return bool(_URI.fullmatch(value)) and not any(c.isspace() for c in value)


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


def _is_email(value: str, idn: bool = False) -> bool:
    """RFC 5321's shape: a local part of printable ASCII (``format: email``; any printable text
    with ``idn-email``, RFC 6531) and a host name with a dot (an IDN host, as its A-label, only
    with ``idn-email``). A Cyrillic or full-width local part is not an ``email``."""
    local, at, domain = value.rpartition("@")
    if not at or not local or len(value) > 254 or any(c.isspace() for c in value) or "@" in local.strip('"'):
        return False
    if not local.isprintable() or (not idn and not local.isascii()):
        return False
    if idn and not domain.isascii():
        try:
            domain = domain.encode("idna").decode("ascii")
        except UnicodeError:
            return False
    return _is_hostname(domain) and "." in domain


def _is_hostname(value: str) -> bool:
    value = value[:-1] if value.endswith(".") else value
    return 0 < len(value) <= 253 and all(
        _LABEL.fullmatch(label) and not label.startswith("-") and not label.endswith("-") for label in value.split(".")
    )


def _format_checker() -> Any:
    from jsonschema import FormatChecker

    checker = FormatChecker()
    extra = {
        "date-time": _is_date_time,
        "time": _is_time,
        "email": _is_email,
        "idn-email": lambda v: _is_email(v, idn=True),
        "hostname": _is_hostname,
        "duration": _is_duration,
        "uri": _is_uri,
        "iri": _is_uri,
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


class SchemaBroken(Exception):
    """The schema cannot be applied (an unresolvable ``$ref``, a ``$ref`` cycle): the row's
    ground truth is broken, which is not the answer's fault."""


@functools.lru_cache(maxsize=256)
def _linear(pattern: str) -> Pattern | None:
    try:
        return compile_linear(pattern)
    except ValueError:
        return None


def pattern_search(pattern: str, text: str, timeout: float) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``: on RE2 when it accepts the pattern
    (linear time), else on ``regex`` bounded by ``timeout`` seconds (``TimeoutError``)."""
    fast = _linear(pattern)
    if fast is not None:
        return fast.search(text) is not None
    import regex  # backreferences or lookaround: bounded in time instead

    return regex.search(pattern, text, timeout=timeout) is not None


def _search(pattern: str, text: str, timeout: float) -> bool:
    try:
        return pattern_search(pattern, text, timeout)
    except TimeoutError:
        raise _PatternTimeout(pattern) from None


def _is_integer(checker: Any, instance: Any) -> bool:
    if isinstance(instance, bool):
        return False
    if isinstance(instance, int):
        return True
    if isinstance(instance, float):
        return instance.is_integer()
    return isinstance(instance, Decimal) and instance.is_finite() and instance == instance.to_integral_value()


def _is_number(checker: Any, instance: Any) -> bool:
    return not isinstance(instance, bool) and isinstance(instance, int | float | Decimal)


def _exact_schema(node: Any) -> Any:
    """``node`` with every float read as the decimal it was written as."""
    if isinstance(node, float) and math.isfinite(node):
        return Decimal(repr(node))
    if isinstance(node, dict):
        return {k: _exact_schema(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_exact_schema(v) for v in node]
    return node


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

    def multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "number"):
            return
        a, b = exact_number(instance), exact_number(divisor)
        if a is None or b is None or b == 0 or (a / b).denominator != 1:
            yield ValidationError(f"{str(instance)[:40]} is not a multiple of {divisor}")

    checker = Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": _is_integer, "number": _is_number})
    return validators.extend(
        Draft202012Validator,
        {"pattern": pattern, "patternProperties": pattern_properties, "multipleOf": multiple_of},
        type_checker=checker,
    )


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
    validator = _validator_class(pattern_timeout)(_exact_schema(schema), format_checker=checker)
    probes: tuple[Any, ...] = (None, {}, [])
    for probe in probes:  # a schema that cannot be applied at all is refused here
        try:
            first_error(validator, probe)
        except SchemaBroken as exc:
            raise VerifierError(f"{where}: {exc}") from None
    return validator


def first_error(validator: Any, obj: Any) -> str | None:
    """The first validation error in a sentence, or None. ``SchemaBroken`` when the schema itself
    cannot be applied (see the module docstring)."""
    from referencing.exceptions import Unresolvable

    try:
        errors = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
    except (Unresolvable, RecursionError) as exc:
        # The instance is at most max_depth deep, so unbounded recursion is the schema's (a
        # $ref cycle that never consumes the instance).
        raise SchemaBroken(f"the schema cannot be applied ({type(exc).__name__}: {str(exc)[:120]})") from None
    except Exception as exc:  # noqa: BLE001 - a value the validator cannot handle is not valid
        return f"(root): the value could not be validated ({type(exc).__name__}: {str(exc)[:120]})"
    if not errors:
        return None
    e = errors[0]
    path = "/".join(str(p) for p in e.absolute_path) or "(root)"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{path}: {e.message[:200]}{more}"
