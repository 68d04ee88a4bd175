"""What a structured row expects (a ``Spec``): JSON objects, tool calls, and code run against tests.

The audit builds a correct completion, a wrong one and the exploits from the columns the term
declares it reads (``rlvr.rewards.Reads``); for a term that declares nothing, from these
conventions:

- ``json``: the expected object from the first of ``expected``, ``expected_json``, ``json`` or the
  answer column (a JSON string or a mapping); the schema from a ``schema`` column when present.
  With a schema and no expected object, a minimal instance of the schema is the correct answer.
- ``tool_call``: the expected call ``{"name": ..., "arguments": {...}}`` from ``tool_call``,
  ``expected_call``, ``call`` or the answer column.
- ``code``: a reference solution from ``solution``, ``canonical_solution``, ``reference``,
  ``code`` or the answer column; the tests from the term's ``column`` (``unit_tests``) or
  ``tests`` / ``test`` (assert lines such as ``assert add(1, 2) == 3``, or stdin/stdout cases);
  the function name from the term's ``entry_point``, the row's ``entry_point`` or the solution's
  first ``def``. The code exploits themselves live in ``code.py``.

How the text is presented (inside the task's answer span, bare, or in a fenced block) is not
guessed: every presentation is tried and the first whose correct completion the term accepts is
used for the wrong answer and the exploits, so the exploits fail for their trick, never for their
packaging. A row none of whose presentations scores correct is reported, not audited.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..rewards.base import Reads
from .types import Spec

JSON_COLUMNS = ("expected", "expected_json", "json")
CALL_COLUMNS = ("tool_call", "expected_call", "call")
SOLUTION_COLUMNS = ("solution", "canonical_solution", "reference", "code")
TEST_COLUMNS = ("tests", "test")


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value


def _first(row: Mapping[str, Any], columns: tuple[str, ...]) -> Any:
    for col in columns:
        if row.get(col) is not None:
            return row[col]
    return None


def _instance(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None, depth: int = 0) -> Any:
    """A minimal value valid for a simple schema (object/array/string/number/boolean/enum/const,
    local ``$ref``, the first branch of ``anyOf``/``oneOf``). Approximate: patterns and formats
    are not honoured; a row whose instance the term rejects is reported, not audited."""
    root = root if root is not None else schema
    if depth > 20:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, Mapping) else {}
        return _instance(node, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        branches = [b for b in schema.get(key) or [] if isinstance(b, Mapping) and b.get("type") != "null"]
        if branches:
            return _instance(branches[0], root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        keys = schema.get("required", list(props))
        return {k: _instance(props.get(k) or {}, root, depth + 1) for k in keys}
    if t == "array":
        n = int(schema.get("minItems", 0))
        return [_instance(schema.get("items") or {}, root, depth + 1) for _ in range(n)]
    if t == "integer":
        return int(schema.get("minimum", 1))
    if t == "number":
        return float(schema.get("minimum", 1.5))
    if t == "boolean":
        return True
    if t == "null":
        return None
    if schema.get("format") in VALID_FORMATS:
        return VALID_FORMATS[schema["format"]]
    return "x" * int(schema.get("minLength", 1))


# A valid and an invalid value per string format (the invalid one is what the probe sends).
VALID_FORMATS = {
    "email": "ada@example.org",
    "idn-email": "ada@example.org",
    "date-time": "2024-01-02T03:04:05Z",
    "date": "2024-01-02",
    "time": "03:04:05Z",
    "uri": "https://example.org/",
    "iri": "https://example.org/",
    "hostname": "example.org",
    "ipv4": "10.0.0.1",
    "ipv6": "::1",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "duration": "P3D",
}
INVALID_FORMATS = {
    "email": "not-an-email",
    "idn-email": "not-an-email",
    "date-time": "yesterday at noon",
    "date": "2024-02-30",
    "time": "25:61:00",
    "uri": "not a uri",
    "iri": "not a uri",
    "uri-reference": "not a uri",
    "iri-reference": "not a uri",
    "hostname": "-bad-.example",
    "idn-hostname": "-bad-.example",
    "ipv4": "999.1.1.1",
    "ipv6": "::g",
    "uuid": "1234",
    "duration": "three days",
    "regex": "(unclosed",
    "json-pointer": "no-slash",
}


def schema_of(reads: Reads | None, row: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, bool]:
    """(the JSON schema a json term checks against, whether the term itself declares it): the
    one it declares (a fixed ``schema``, or the row's ``schema_column``), else a ``schema``
    column of the row."""
    if reads is not None and reads.schema is not None:
        return reads.schema, True
    own = reads.schema_column if reads is not None else None
    schema = _loads(row.get(own or "schema"))
    return (schema if isinstance(schema, Mapping) else None), bool(own)


def required_keys(schema: Mapping[str, Any] | None, expected: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """(keys whose absence must be wrong, keys whose type is pinned): from an expected value every
    key; from a schema its ``required`` list and the properties that declare a ``type``."""
    if expected is not None:
        return list(expected), list(expected)
    if schema is None:
        return [], []
    props = schema.get("properties") or {}
    typed = [k for k, v in props.items() if isinstance(v, Mapping) and ("type" in v or "const" in v or "enum" in v)]
    return list(schema.get("required") or []), typed


def _stdio_cases(tests: Any) -> list[tuple[str, str]] | None:
    """(input, output) pairs of stdin/stdout tests, or None for assert-style tests."""
    if isinstance(tests, str) and tests.lstrip()[:1] in "[{":
        tests = _loads(tests)
    if isinstance(tests, Mapping) and isinstance(tests.get("inputs"), list) and isinstance(tests.get("outputs"), list):
        tests = [{"input": i, "output": o} for i, o in zip(tests["inputs"], tests["outputs"], strict=False)]
    if isinstance(tests, list) and tests and all(isinstance(c, Mapping) and "input" in c for c in tests):
        return [(str(c["input"]), str(c.get("output", ""))) for c in tests]
    return None


def spec_for(kind: str, row: Mapping[str, Any], answer_column: str, reads: Reads | None = None) -> Spec | str:
    """The row's structured spec, or why there is none. ``reads``: what the term declares it
    reads (None: it declares nothing, and the column conventions above apply)."""
    if kind == "json":
        schema, declared = schema_of(reads, row)
        expected = _loads(_first(row, (*JSON_COLUMNS, answer_column)))
        bodies: list[tuple[Mapping[str, Any], Mapping[str, Any] | None]] = []
        if isinstance(expected, Mapping) and expected:
            bodies.append((dict(expected), dict(expected)))
        if schema is not None:
            inst = _instance(schema)
            if isinstance(inst, Mapping) and inst and all(inst != b for b, _ in bodies):
                bodies.append((dict(inst), None))
        if not bodies:
            return (
                f"no expected JSON object in columns {', '.join((*JSON_COLUMNS, answer_column))} and no object schema"
            )
        obj, exp = bodies[0]
        # A schema term checks the schema, not the row's example object: only the schema's
        # required keys must be there. A term without a declared schema is assumed to compare
        # with the expected object, every key of it.
        required, typed = required_keys(schema, None if declared else exp)
        return Spec(
            "json",
            json.dumps(obj),
            "[]",
            expected=obj,
            schema=schema,
            candidates=tuple(json.dumps(b) for b, _ in bodies[1:]),
            required=tuple(required),
            typed=tuple(typed),
            compares=not declared,
            properties=_props(schema),
        )
    if kind == "tool_call":
        if reads is not None:  # the term names its column, or None: no expected call
            col = reads.expected_column
            call = _loads(row.get(col)) if col else None
        else:
            call = _loads(_first(row, (*CALL_COLUMNS, answer_column)))
        if isinstance(call, list) and len(call) == 1:
            call = call[0]
        tools = reads.tools if reads is not None else None
        if (not isinstance(call, Mapping) or "name" not in call) and isinstance(tools, Mapping) and tools:
            name, first_params = next(iter(tools.items()))
            call = {"name": name, "arguments": _instance(first_params)}
            expected_args = None
        elif isinstance(call, Mapping) and "name" in call:
            call = {"name": call["name"], "arguments": _loads(call.get("arguments")) or {}}
            expected_args = call["arguments"]
        else:
            columns = ", ".join((*CALL_COLUMNS, answer_column))
            return f"no expected call {{name, arguments}} in columns {columns} and no tools"
        params = tools.get(call["name"]) if isinstance(tools, Mapping) else None
        required, typed = required_keys(params, expected_args)
        if expected_args is not None and isinstance(params, Mapping):
            r2, t2 = required_keys(params, None)
            required, typed = list(dict.fromkeys(required + r2)), list(dict.fromkeys(typed + t2))
        wrong = {"name": f"{call['name']}_other", "arguments": {}}
        return Spec(
            "tool_call",
            json.dumps(call),
            json.dumps(wrong),
            expected=call,
            required=tuple(required),
            typed=tuple(typed),
            compares=expected_args is not None,
            properties=_props(params),
        )
    if kind == "code":
        tests_col = reads.tests if reads is not None else None
        solution = _first(row, tuple(c for c in (*SOLUTION_COLUMNS, answer_column) if c != tests_col))
        tests = row.get(tests_col) if tests_col else _first(row, TEST_COLUMNS)
        if tests is None:
            tests = _first(row, TEST_COLUMNS)
        if not isinstance(solution, str) or not solution.strip():
            columns = ", ".join(c for c in (*SOLUTION_COLUMNS, answer_column) if c != tests_col)
            return f"no reference solution in columns {columns}"
        stdio = _stdio_cases(tests)
        entry = (
            (reads.entry_point if reads is not None else None)
            or row.get((reads.entry_point_column if reads is not None else None) or "entry_point")
            or _first_def(solution)
        )
        if not entry and stdio is None:
            return "no entry_point column and no def in the reference solution"
        # A continuation (HumanEval: the prompt ends inside a function) needs its body closed
        # before an exploit's own top-level code.
        lead = "    pass\n" if reads is not None and reads.prefix_column else ""
        stub = f"def {entry}(*args, **kwargs):\n    return None\n" if entry else "pass\n"
        tests_text = tests if isinstance(tests, str) and stdio is None else None
        return Spec(
            "code",
            solution,
            lead + stub,
            entry_point=str(entry) if entry else None,
            tests=tests_text,
            stdio=stdio,
            lead=lead,
        )
    return f"no structured spec for kind {kind!r}"


def _props(schema: Any) -> Mapping[str, Any] | None:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return props if isinstance(props, Mapping) else None


def _first_def(code: str) -> str | None:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node.name
    return None


def presentations(kind: str, fmt_wrap: Callable[[str], str]) -> list[tuple[str, Callable[[str], str]]]:
    """Ways to present a structured body (name, wrap), in the order tried."""
    fence = "python" if kind == "code" else "json"
    out: list[tuple[str, Callable[[str], str]]] = [
        ("answer span", fmt_wrap),
        ("bare", lambda s: s),
        (f"```{fence}``` block", lambda s: f"```{fence}\n{s}\n```"),
    ]
    if kind == "tool_call":
        out.append(("<tool_call> tags", lambda s: f"<tool_call>\n{s}\n</tool_call>"))
    if kind == "code":
        out.insert(0, out.pop(2))  # code usually comes fenced
    return out
