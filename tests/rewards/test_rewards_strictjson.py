"""The one strict JSON reader (issue 25, item 2): model text, tool-call arguments in tags or
structured, and (tests/serve/test_serve_strict.py) request bodies."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards import Outcome, Sample
from rlvr.rewards.combine import RewardSet, Term, completion_text
from rlvr.rewards.rules.strictjson import JsonError, json_equal, json_key, read_json, safe_dumps
from rlvr.rewards.schema import JsonSchemaVerifier, ToolCallVerifier

TOOLS = [{"name": "put", "parameters": {"type": "object", "properties": {"x": {"type": "number"}}}}]


def tool(**kw):
    return ToolCallVerifier(TOOLS, timeout=None, **kw)


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ('{"ok": false, "ok": true}', False),
        ("[NaN]", False),
        ("[-Infinity]", False),
        ("1" + "0" * 5000, True),
        ("[1e999]", True),
        ("[1e-99999999]", True),
        ("[" * 100_000 + "]" * 100_000, True),
        ('{"a":' * 70 + "1" + "}" * 70, True),
    ],
)
def test_the_reader_refuses_what_pythons_json_accepts_or_crashes_on(text, limit):
    with pytest.raises(JsonError) as exc:
        read_json(text)
    assert exc.value.limit is limit


def test_numbers_keep_their_exact_value():
    value = read_json('{"i": 10000000000000001, "d": 10000000000000001.0, "e": 1e16, "f": 0.1}')
    assert value["i"] == 10000000000000001 and isinstance(value["i"], int)
    assert value["d"] == Decimal("10000000000000001.0") and not json_equal(value["d"], value["e"])
    assert json_equal(value["f"], 0.1)  # a float is the decimal it was written as
    assert not json_equal(True, 1) and json_equal(Decimal("3.0"), 3)


def test_a_tool_argument_that_only_rounds_to_the_expected_value_is_wrong():
    # As floats, 10000000000000001.0 == 1e16 and the exact rule passed.
    row = {"tool_call": {"name": "put", "arguments": {"x": 1e16}}}
    done = '<answer>{"name": "put", "arguments": {"x": %s}}</answer>'
    assert tool().verify(Sample(done % "10000000000000001.0", row)).outcome is Outcome.WRONG
    assert tool().verify(Sample(done % "1e16", row)).outcome is Outcome.CORRECT
    assert tool().verify(Sample(done % "10000000000000000", row)).outcome is Outcome.CORRECT


def test_a_schema_const_is_compared_exactly():
    v = JsonSchemaVerifier(schema={"type": "object", "properties": {"x": {"const": 1e16}}}, timeout=None)
    assert v.verify(Sample('<answer>{"x": 10000000000000001.0}</answer>')).outcome is Outcome.WRONG
    assert v.verify(Sample('<answer>{"x": 1e16}</answer>')).outcome is Outcome.CORRECT
    tenth = JsonSchemaVerifier(schema={"type": "object", "properties": {"x": {"const": 0.1}}}, timeout=None)
    assert tenth.verify(Sample('<answer>{"x": 0.1}</answer>')).outcome is Outcome.CORRECT


def _message(arguments):
    return [
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "put", "arguments": arguments}}]}
    ]


def test_structured_arguments_with_duplicate_keys_are_wrong():
    # A plain json.loads first collapsed {"x": 1, "x": 2} to {"x": 2}: the duplicate was never seen.
    row = {"tool_call": {"name": "put", "arguments": {"x": 2}}}
    text = completion_text(_message('{"x": 1, "x": 2}'))
    verdict = tool().verify(Sample(text, row))
    assert verdict.outcome is Outcome.WRONG and "duplicate key" in verdict.detail


@pytest.mark.parametrize(
    "arguments", ['{"x": 1%s}' % ("0" * 5000), "[" * 5000 + "]" * 5000, {"x": 10**5000}, {"x": float("nan")}, "{}"]
)
def test_structured_arguments_past_a_limit_never_raise_and_are_never_correct(arguments):
    text = completion_text(_message(arguments))  # the old code raised here, outside every guard
    row = {"tool_call": {"name": "put", "arguments": {"x": 1}}}
    assert tool().verify(Sample(text, row)).outcome is Outcome.WRONG


def test_one_bad_structured_call_does_not_fail_its_batch():
    terms = RewardSet([Term("call", tool())])
    (fn,) = terms.trl_functions()
    good = _message('{"x": 1}')
    bad = _message('{"x": 1%s}' % ("0" * 5000))
    rows = [{"name": "put", "arguments": {"x": 1}}] * 2
    assert fn(prompts=["p", "p"], completions=[good, bad], tool_call=rows) == [1.0, 0.0]


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"$ref": "#/$defs/missing"},
        {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}},
    ],
)
def test_a_broken_per_row_schema_masks_the_row_instead_of_failing_the_answer(schema):
    v = JsonSchemaVerifier(schema_column="schema", timeout=None)
    verdict = v.verify(Sample('<answer>{"x": 1}</answer>', {"schema": json.dumps(schema)}))
    assert verdict.outcome is Outcome.ERROR and verdict.error_kind == "ground_truth"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_json)
def test_strict_json_reads_what_json_writes_to_an_equal_value(value):
    text = json.dumps(value)
    got = read_json(text)
    assert json_equal(got, value) and json_key(got) == json_key(value)
    again = safe_dumps(got)
    assert again is not None and json_equal(read_json(again), value)


def test_the_schema_a_term_declares_is_the_one_written_not_the_exact_copy():
    # The validator reads the schema's floats as Decimals; what reads() hands the audit stays JSON.
    v = JsonSchemaVerifier(schema={"type": "object", "properties": {"x": {"const": 0.5, "minimum": 0.1}}}, timeout=None)
    declared = v.reads().schema
    assert declared is not None and json.dumps(declared)
    assert declared["properties"]["x"]["const"] == 0.5 and declared["additionalProperties"] is False


def test_rlvr_score_scores_a_file_with_an_over_long_structured_argument(tmp_path):
    from rlvr.rewards.scoring import score_file

    rows = [
        {"completion": _message('{"x": 1}'), "tool_call": {"name": "put", "arguments": {"x": 1}}},
        {"completion": _message('{"x": 1%s}' % ("0" * 5000)), "tool_call": {"name": "put", "arguments": {"x": 1}}},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = score_file(src, RewardSet([Term("call", tool())]), out=tmp_path / "out.jsonl")
    assert summary.counts["call"] == {"correct": 1, "wrong": 1}
