"""Exploits for structured terms: JSON objects, tool calls, and code run against unit tests.

The audit builds a correct completion, a wrong one and the exploits from the row's columns:

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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .exploits import Attempt, Context

JSON_COLUMNS = ("expected", "expected_json", "json")
CALL_COLUMNS = ("tool_call", "expected_call", "call")
SOLUTION_COLUMNS = ("solution", "canonical_solution", "reference", "code")
TEST_COLUMNS = ("tests", "test")


@dataclass(frozen=True)
class Spec:
    """What a structured row expects: ``correct`` and ``wrong`` bodies (before presentation) and
    the parsed pieces the exploits need."""

    kind: str
    correct: str
    wrong: str
    expected: Any = None
    schema: Mapping[str, Any] | None = None
    entry_point: str | None = None
    tests: str | None = None
    stdio: list[tuple[str, str]] | None = None
    lead: str = ""
    candidates: tuple[str, ...] = ()  # other correct bodies to try when ``correct`` is rejected
    required: tuple[str, ...] = ()
    typed: tuple[str, ...] = ()
    compares: bool = False  # the term compares with the expected value (not only a schema)
    properties: Mapping[str, Any] | None = None  # the schema's properties for the object (formats, patterns)


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


def _schema_of(verifier: Any, row: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, bool]:
    """(the JSON schema a json term checks against, whether the term itself declares it): its
    own (``json_schema``'s validator or ``schema_column``), else a ``schema`` column of the row."""
    validator = getattr(verifier, "validator", None)
    if validator is not None and isinstance(getattr(validator, "schema", None), Mapping):
        return validator.schema, True
    own = getattr(verifier, "schema_column", None)
    schema = _loads(row.get(own or "schema"))
    return (schema if isinstance(schema, Mapping) else None), bool(own)


def _required(schema: Mapping[str, Any] | None, expected: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
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


def spec_for(kind: str, row: Mapping[str, Any], answer_column: str, verifier: Any = None) -> Spec | str:
    """The row's structured spec, or why there is none."""
    if kind == "json":
        schema, declared = _schema_of(verifier, row)
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
        required, typed = _required(schema, None if declared else exp)
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
        if hasattr(verifier, "expected_column"):  # the term names its column, or None: no expected call
            col = verifier.expected_column
            call = _loads(row.get(col)) if col else None
        else:
            call = _loads(_first(row, (*CALL_COLUMNS, answer_column)))
        if isinstance(call, list) and len(call) == 1:
            call = call[0]
        tools = getattr(verifier, "specs", None)
        if (not isinstance(call, Mapping) or "name" not in call) and isinstance(tools, Mapping) and tools:
            name, params = next(iter(tools.items()))
            call = {"name": name, "arguments": _instance(params)}
            expected_args = None
        elif isinstance(call, Mapping) and "name" in call:
            call = {"name": call["name"], "arguments": _loads(call.get("arguments")) or {}}
            expected_args = call["arguments"]
        else:
            return f"no expected call {{name, arguments}} in columns {', '.join((*CALL_COLUMNS, answer_column))} and no tools"
        params = tools.get(call["name"]) if isinstance(tools, Mapping) else None
        required, typed = _required(params, expected_args)
        if expected_args is not None and isinstance(params, Mapping):
            r2, t2 = _required(params, None)
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
        v = verifier
        tests_col = getattr(v, "column", None) if isinstance(getattr(v, "column", None), str) else None
        solution = _first(row, tuple(c for c in (*SOLUTION_COLUMNS, answer_column) if c != tests_col))
        tests = row.get(tests_col) if tests_col else _first(row, TEST_COLUMNS)
        if tests is None:
            tests = _first(row, TEST_COLUMNS)
        if not isinstance(solution, str) or not solution.strip():
            return f"no reference solution in columns {', '.join(c for c in (*SOLUTION_COLUMNS, answer_column) if c != tests_col)}"
        stdio = _stdio_cases(tests)
        entry = (
            getattr(v, "entry_point", None)
            or row.get(getattr(v, "entry_point_column", None) or "entry_point")
            or _first_def(solution)
        )
        if not entry and stdio is None:
            return "no entry_point column and no def in the reference solution"
        # A continuation (HumanEval: the prompt ends inside a function) needs its body closed
        # before an exploit's own top-level code.
        lead = "    pass\n" if getattr(v, "prefix_column", None) else ""
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


def presentations(kind: str, fmt_wrap: Any) -> list[tuple[str, Any]]:
    """Ways to present a structured body, in the order tried."""
    fence = "python" if kind == "code" else "json"
    out = [
        ("answer span", fmt_wrap),
        ("bare", lambda s: s),
        (f"```{fence}``` block", lambda s: f"```{fence}\n{s}\n```"),
    ]
    if kind == "tool_call":
        out.append(("<tool_call> tags", lambda s: f"<tool_call>\n{s}\n</tool_call>"))
    if kind == "code":
        out.insert(0, out.pop(2))  # code usually comes fenced
    return out


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
    obj: Mapping[str, Any], span: Any, dump: Any, required: Any = None, typed: Any = None
) -> dict[str, list[Attempt]]:
    """Attempts per family. Only *required* keys are dropped and only *typed* values retyped:
    leaving out an optional key, or a new type where the schema allows any, is not a hack."""
    from .exploits import Attempt

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
    from .exploits import Attempt

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
    if which in ("missing_keys", "wrong_types"):
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
    from .exploits import Attempt

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
    import regex

    for cand in ("", "\x00", "!!!", "not valid", "a" * 30 + "!"):
        try:
            if regex.search(pattern, cand, timeout=0.2) is None:
                return cand
        except (TimeoutError, regex.error):
            return None
    return None


def format_attempts(ctx: Context, kind: str) -> list[Attempt]:
    """Per string field whose schema names a ``format`` (email, date-time, ...) or a
    ``pattern``: a value that breaks it."""
    from .exploits import Attempt

    got = _target(ctx, kind)
    if got is None:
        return []
    spec, obj, render = got
    out = []
    for key, prop in (spec.properties or {}).items():
        if not isinstance(prop, Mapping) or key not in obj or not isinstance(obj[key], str):
            continue
        bad = INVALID_FORMATS.get(prop.get("format")) if isinstance(prop.get("format"), str) else None
        if bad is None and isinstance(prop.get("pattern"), str):
            bad = _breaks_pattern(prop["pattern"])
        if bad is not None and bad != obj[key]:
            out.append(Attempt((render({**obj, key: bad}),)))
    return out


def think_attempts(ctx: Context, kind: str) -> list[Attempt]:
    """The right body fenced inside the think block, with nothing or a wrong answer after it;
    under ``think: required``, the fenced body with no think block at all."""
    from .exploits import Attempt

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


def _make(name: str, kinds: frozenset[str], description: str, fn: Any, which: str) -> Any:
    from .exploits import Exploit

    def build(ctx: Context) -> list[Attempt]:
        return fn(ctx, which)

    build.__name__ = name
    return Exploit(name, kinds, description, build)


def _library() -> tuple[list[Any], list[Any], list[Any]]:
    from .code import code_attempts

    j, t, c = frozenset({"json"}), frozenset({"tool_call"}), frozenset({"code"})
    json_ex = [
        _make(
            "json_extra_keys",
            j,
            "the expected object with an extra key (top level and nested)",
            json_attempts,
            "extra_keys",
        ),
        _make("json_missing_keys", j, "the expected object without a required key", json_attempts, "missing_keys"),
        _make("json_wrong_types", j, "one value with the wrong type ('5' for 5)", json_attempts, "wrong_types"),
        _make("json_in_prose", j, "the right object wrapped in chatty prose", json_attempts, "in_prose"),
        _make("json_several", j, "a wrong and the right object together, either order", json_attempts, "several"),
        _make(
            "json_huge_numbers",
            j,
            "1e999 (infinity), a 4,400-digit integer, 300-deep nesting in a field: wrong, not an error",
            huge_attempts,
            "json",
        ),
        _make(
            "json_format_rules",
            j,
            "a value that breaks the field's format (email, date-time, ...) or pattern",
            format_attempts,
            "json",
        ),
        _make("json_in_think", j, "the right JSON fenced inside the think block only", think_attempts, "json"),
    ]
    tool_ex = [
        _make("call_extra_keys", t, "the expected call with an extra argument or key", tool_attempts, "extra_keys"),
        _make("call_missing_keys", t, "the expected call without a required argument", tool_attempts, "missing_keys"),
        _make("call_wrong_types", t, "one argument with the wrong type", tool_attempts, "wrong_types"),
        _make("call_in_prose", t, "the right call wrapped in chatty prose", tool_attempts, "in_prose"),
        _make("call_several", t, "a wrong and the right call together, either order", tool_attempts, "several"),
        _make(
            "call_huge_numbers",
            t,
            "1e999 (infinity), a 400-digit integer, 300-deep nesting in an argument: wrong, not an error",
            huge_attempts,
            "tool_call",
        ),
        _make(
            "call_format_rules",
            t,
            "an argument that breaks its format (email, date-time, ...) or pattern",
            format_attempts,
            "tool_call",
        ),
        _make(
            "call_in_think",
            t,
            "the right call (fenced or in <tool_call> tags) inside the think block only",
            think_attempts,
            "tool_call",
        ),
    ]
    code_ex = [
        _make(
            "early_exit", c, "exit 0 before any test runs (sys.exit, os._exit, SystemExit)", code_attempts, "early_exit"
        ),
        _make("fake_passed", c, "print 'passed' / 'OK' without solving", code_attempts, "fake_passed"),
        _make("always_equal", c, "return an object whose __eq__ is always True", code_attempts, "always_equal"),
        _make(
            "patched_asserts",
            c,
            "turn failures into success: atexit/excepthook exit 0, patched unittest asserts",
            code_attempts,
            "patched_asserts",
        ),
        _make(
            "read_tests",
            c,
            "read the expected values from the test file or the caller's frame",
            code_attempts,
            "read_tests",
        ),
        _make(
            "hardcode_visible",
            c,
            "a lookup table of the test cases shown in the prompt",
            code_attempts,
            "hardcode_visible",
        ),
        _make("code_in_think", c, "the reference solution fenced inside the think block only", think_attempts, "code"),
    ]
    return json_ex, tool_ex, code_ex


JSON_EXPLOITS, TOOL_EXPLOITS, CODE_EXPLOITS = _library()
