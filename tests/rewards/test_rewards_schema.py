"""JSON schema and tool-call verifiers, with the exploits they must refuse."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.errors import VerifierError
from rlvr.rewards import AnswerFormat, Outcome, Sample, build_verifier
from rlvr.rewards.schema import JsonSchemaVerifier, ToolCallVerifier

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


def ans(obj) -> str:
    return f"<answer>{json.dumps(obj)}</answer>"


def test_valid_object_is_correct():
    assert JsonSchemaVerifier(schema=SCHEMA).verify(Sample(ans({"name": "a", "age": 3}))).outcome is Outcome.CORRECT


def test_extra_keys_are_wrong_by_default():
    v = JsonSchemaVerifier(schema=SCHEMA).verify(Sample(ans({"name": "a", "age": 3, "note": "pls give reward"})))
    assert v.outcome is Outcome.WRONG and "note" in v.detail


def test_extra_keys_allowed_when_asked():
    assert (
        JsonSchemaVerifier(schema=SCHEMA, extra_keys=True).verify(Sample(ans({"name": "a", "age": 3, "x": 1}))).outcome
        is Outcome.CORRECT
    )


def test_nested_objects_forbid_extra_keys_too():
    schema = {"type": "object", "properties": {"p": {"type": "object", "properties": {"q": {"type": "integer"}}}}}
    assert JsonSchemaVerifier(schema=schema).verify(Sample(ans({"p": {"q": 1, "r": 2}}))).outcome is Outcome.WRONG


def test_fenced_block_is_used_without_answer_span():
    text = 'Here:\n```json\n{"name": "a", "age": 3}\n```\n'
    assert JsonSchemaVerifier(schema=SCHEMA).verify(Sample(text)).outcome is Outcome.CORRECT


def test_two_fenced_blocks_are_a_hedge():
    text = '```json\n{"name": "a", "age": 3}\n```\n```json\n{"name": "b", "age": 4}\n```'
    assert JsonSchemaVerifier(schema=SCHEMA).verify(Sample(text)).outcome is Outcome.UNPARSEABLE


def test_invalid_json_is_wrong_not_error():
    v = JsonSchemaVerifier(schema=SCHEMA).verify(Sample("<answer>{'name': 'a'}</answer>"))
    assert v.outcome is Outcome.WRONG and "not valid JSON" in v.detail


def test_deeply_nested_json_is_wrong_not_a_crash():
    v = JsonSchemaVerifier(schema=SCHEMA).verify(Sample("<answer>" + "[" * 100000 + "]" * 100000 + "</answer>"))
    assert v.outcome is Outcome.WRONG


def test_pydantic_model_validates_and_forbids_extras():
    v = build_verifier(
        "json_schema",
        {"model": "tests_pydantic_fixture:Person"},
        AnswerFormat(),
        search=__import__("pathlib").Path(__file__).parent,
    )
    assert v.verify(Sample(ans({"name": "a", "age": 3}))).outcome is Outcome.CORRECT
    assert v.verify(Sample(ans({"name": "a", "age": -1}))).outcome is Outcome.WRONG
    assert v.verify(Sample(ans({"name": "a", "age": 3, "z": 0}))).outcome is Outcome.WRONG


def test_row_schema_that_is_invalid_is_a_ground_truth_error():
    v = JsonSchemaVerifier(schema_column="schema").verify(Sample(ans({}), {"schema": {"type": "nonsense"}}))
    assert v.outcome is Outcome.ERROR and v.error_kind == "ground_truth"


def test_bad_schema_option_is_a_verifier_error():
    with pytest.raises(VerifierError, match="JSON Schema"):
        JsonSchemaVerifier(schema={"type": 12})


def test_tool_call_with_expected_arguments_is_correct():
    v = ToolCallVerifier(TOOLS).verify(
        Sample(
            ans({"name": "get_weather", "arguments": {"city": "Paris"}}),
            {"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        )
    )
    assert v.outcome is Outcome.CORRECT


def test_tool_call_arguments_as_json_string_are_accepted():
    call = {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}
    assert ToolCallVerifier(TOOLS, expected_column=None).verify(Sample(ans(call))).outcome is Outcome.CORRECT


def test_unknown_tool_is_wrong():
    assert (
        ToolCallVerifier(TOOLS, expected_column=None).verify(Sample(ans({"name": "rm_rf", "arguments": {}}))).outcome
        is Outcome.WRONG
    )


def test_tool_arguments_violating_the_schema_are_wrong():
    v = ToolCallVerifier(TOOLS, expected_column=None).verify(
        Sample(ans({"name": "get_weather", "arguments": {"city": "P", "days": "two"}}))
    )
    assert v.outcome is Outcome.WRONG and "days" in v.detail


def test_extra_tool_arguments_are_wrong():
    assert (
        ToolCallVerifier(TOOLS, expected_column=None)
        .verify(Sample(ans({"name": "get_weather", "arguments": {"city": "P", "x": 1}})))
        .outcome
        is Outcome.WRONG
    )


def test_per_field_casefold_rule():
    row = {"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    strict = ToolCallVerifier(TOOLS).verify(Sample(ans({"name": "get_weather", "arguments": {"city": " paris"}}), row))
    loose = ToolCallVerifier(TOOLS, fields={"city": "casefold"}).verify(
        Sample(ans({"name": "get_weather", "arguments": {"city": " paris"}}), row)
    )
    assert strict.outcome is Outcome.WRONG and loose.outcome is Outcome.CORRECT


def test_partial_credit_only_when_asked():
    row = {"tool_call": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}
    call = ans({"name": "get_weather", "arguments": {"city": "Paris", "days": 4}})
    assert ToolCallVerifier(TOOLS).verify(Sample(call, row)).score == 0.0
    assert ToolCallVerifier(TOOLS, partial_credit=True).verify(Sample(call, row)).score == pytest.approx(0.5)


def test_unknown_field_rule_is_a_verifier_error():
    with pytest.raises(VerifierError, match="rule"):
        ToolCallVerifier(TOOLS, fields={"city": "fuzzy"})


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(alphabet="abcxyz_019 é", min_size=1, max_size=8), st.integers(), max_size=4))
def test_any_extra_key_is_rejected(extra):
    obj = {"name": "a", "age": 1, **{f"x_{k}": v for k, v in extra.items()}}
    outcome = JsonSchemaVerifier(schema=SCHEMA).verify(Sample(ans(obj))).outcome
    assert outcome is (Outcome.CORRECT if not extra else Outcome.WRONG)


def test_duplicate_keys_are_wrong():
    v = JsonSchemaVerifier(schema=SCHEMA).verify(Sample('<answer>{"name": "a", "age": 1, "age": 2}</answer>'))
    assert v.outcome is Outcome.WRONG and "duplicate" in v.detail


def test_nan_is_not_json():
    schema = {"type": "object", "properties": {"x": {"type": "number"}}}
    assert JsonSchemaVerifier(schema=schema).verify(Sample('<answer>{"x": NaN}</answer>')).outcome is Outcome.WRONG
