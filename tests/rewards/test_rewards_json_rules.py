"""Rule 6 of issue 34, JSON and tool calls: lone surrogates are a parse error (a wrong answer,
never a crash or a mask), numbers compare as the JSON value, keys after NFC, CRLF fences are
fences, one call where one is expected, ``format: email`` is ASCII. Adversarial cases and
hypothesis properties."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards import AnswerFormat, Outcome, Sample, build_verifier
from rlvr.rewards.jsontext import find_json
from rlvr.rewards.rules.patterns import compile_linear
from rlvr.rewards.rules.strictjson import JsonError, has_lone_surrogate, read_json

FMT = AnswerFormat()
TOOLS = [{"name": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
CALL = '{"name": "weather", "arguments": {"city": "Lima"}}'
ROW = {"tool_call": {"name": "weather", "arguments": {"city": "Lima"}}}


def schema_term(schema: dict, timeout: float | None = None) -> object:
    return build_verifier("json_schema", {"schema": schema, "timeout": timeout}, FMT)


def tool_term(timeout: float | None = None) -> object:
    return build_verifier("tool_call", {"tools": TOOLS, "timeout": timeout}, FMT)


# -- lone surrogates ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "completion",
    [
        '<answer>{"city": "Li\ud800ma"}</answer>',  # raw, inside a string
        '```json\n{"city": "Lima"}\n```\udfff',  # raw, outside the JSON
        '<answer>{"city": "Li\\ud800ma"}</answer>',  # escaped
        '<answer>{"Li\\udc00": "x"}</answer>',  # escaped, in a key
    ],
)
def test_a_lone_surrogate_in_a_json_answer_is_wrong_in_process(completion: str) -> None:
    v = schema_term({"type": "object"}).verify(Sample(completion))
    assert v.outcome is Outcome.WRONG and "surrogate" in v.detail


def test_a_lone_surrogate_in_a_tool_call_is_wrong_in_the_worker_not_a_crash() -> None:
    term = tool_term(timeout=20.0)
    raw = "<tool_call>\n" + CALL.replace("Lima", "Li\ud800ma") + "\n</tool_call>"
    escaped = "<tool_call>\n" + CALL.replace("Lima", "Li\\udfffma") + "\n</tool_call>"
    out = term.verify_batch([Sample(raw, ROW), Sample(escaped, ROW)])  # type: ignore[attr-defined]
    assert [v.outcome for v in out] == [Outcome.WRONG, Outcome.WRONG]


@settings(max_examples=80, deadline=None)
@given(text=st.text(max_size=40), at=st.integers(0, 40), cp=st.integers(0xD800, 0xDFFF), tags=st.booleans())
def test_a_lone_surrogate_anywhere_never_crashes_and_is_never_correct(text: str, at: int, cp: int, tags: bool) -> None:
    base = f"<answer>{CALL}</answer>" if tags else f"```json\n{CALL}\n```"
    at = min(at, len(base))
    completion = base[:at] + chr(cp) + base[at:]
    v = tool_term().verify(Sample(completion + text, ROW))  # type: ignore[attr-defined]
    assert v.outcome in (Outcome.WRONG, Outcome.UNPARSEABLE)


@given(st.text(max_size=30), st.integers(0xD800, 0xDFFF))
def test_the_linear_pattern_engine_reads_any_python_string(text: str, cp: int) -> None:
    s = text + chr(cp) + text
    m = compile_linear(r"(?s)(.)").search(s, 0)
    assert m is not None and has_lone_surrogate(s)


def test_a_request_body_may_carry_a_lone_surrogate_but_model_json_may_not() -> None:
    body = json.dumps({"completion": "x\ud800"})
    assert read_json(body, surrogates=True) == {"completion": "x\ud800"}
    with pytest.raises(JsonError, match="surrogate"):
        read_json(body)


# -- numbers as the JSON value ------------------------------------------------------------------
@pytest.mark.parametrize("number", ["1e-400", "0.1e-330", "1E-999"])
def test_a_number_below_every_float_reads_as_zero_and_fails_exclusive_minimum_zero(number: str) -> None:
    term = schema_term({"type": "number", "exclusiveMinimum": 0})
    assert term.verify(Sample(f"<answer>{number}</answer>")).outcome is Outcome.WRONG  # type: ignore[attr-defined]
    assert term.verify(Sample("<answer>1e-300</answer>")).outcome is Outcome.CORRECT  # type: ignore[attr-defined]


@given(st.integers(1, 9), st.integers(330, 4300))
def test_every_underflowing_number_reads_as_zero(mantissa: int, exponent: int) -> None:
    value = read_json(f"{mantissa}e-{exponent}")
    assert value == 0 and float(f"{mantissa}e-{exponent}") == 0.0


# -- keys after NFC ---------------------------------------------------------------------------------
def test_nfc_and_nfd_spellings_of_one_key_are_duplicates() -> None:
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    text = json.dumps({nfc: 1})[:-1] + ", " + json.dumps(nfd) + ": 2}"
    with pytest.raises(JsonError, match="NFC"):
        read_json(text)
    v = schema_term({"type": "object"}).verify(Sample(f"<answer>{text}</answer>"))  # type: ignore[attr-defined]
    assert v.outcome is Outcome.WRONG


@given(st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8))
def test_two_keys_are_refused_exactly_when_equal_after_nfc(a: str, b: str) -> None:
    text = "{" + json.dumps(a) + ": 1, " + json.dumps(b) + ": 2}"
    if has_lone_surrogate(a + b):
        return
    same = unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b)
    try:
        read_json(text)
        refused = False
    except JsonError:
        refused = True
    assert refused is same


# -- fences and one call ----------------------------------------------------------------------------
def test_a_crlf_fence_is_a_fence() -> None:
    text, _, problem = find_json('Here:\r\n```json\r\n{"a": 1}\r\n```\r\n', FMT, 1000)
    assert problem is None and text == '{"a": 1}'


@pytest.mark.parametrize(
    "completion",
    [
        f"<tool_call>\n{CALL}\n</tool_call>\n```json\n{CALL.replace('Lima', 'Quito')}\n```",
        f"```json\n{CALL}\n```\n<tool_call>\n{CALL}\n</tool_call>",
        f"<answer>{CALL}</answer>\n<tool_call>\n{CALL}\n</tool_call>",
        f"<answer>{CALL}</answer>\n```json\n{CALL}\n```",
    ],
)
def test_a_second_call_beside_the_one_read_is_wrong(completion: str) -> None:
    v = tool_term().verify(Sample(completion, ROW))  # type: ignore[attr-defined]
    assert v.outcome is Outcome.WRONG and "where one is expected" in v.detail


def test_one_call_with_prose_and_a_non_json_fence_beside_it_is_still_read() -> None:
    completion = f"Calling it.\n<tool_call>\n{CALL}\n</tool_call>\n```text\nnot a call\n```"
    assert tool_term().verify(Sample(completion, ROW)).outcome is Outcome.CORRECT  # type: ignore[attr-defined]


# -- format: email ----------------------------------------------------------------------------------
@pytest.mark.parametrize("address", ["аdmin@example.com", "ｊｏｅ@example.com", "jo\u0007e@example.com"])
def test_email_refuses_a_local_part_that_is_not_printable_ascii(address: str) -> None:
    term = schema_term({"type": "string", "format": "email"})
    answer = json.dumps(address, ensure_ascii=False)
    assert term.verify(Sample(f"<answer>{answer}</answer>")).outcome is Outcome.WRONG  # type: ignore[attr-defined]


def test_idn_email_accepts_a_non_ascii_local_part_and_host() -> None:
    term = schema_term({"type": "string", "format": "idn-email"})
    for address in ("аdmin@example.com", "josé@bücher.de"):
        answer = json.dumps(address, ensure_ascii=False)
        assert term.verify(Sample(f"<answer>{answer}</answer>")).outcome is Outcome.CORRECT  # type: ignore[attr-defined]
