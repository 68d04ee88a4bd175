"""Property tests for every non-code, non-math term (issue 25, item 8): nothing raises out of
``verify_batch``; the work is bounded by the input's size (counted: Python lines executed and
characters handed to RE2, never seconds); a wrong answer stays wrong under inserted invisible
characters, confusables and whitespace; a correct answer survives harmless rewrites."""

from __future__ import annotations

import json
import sys
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.rewards import Outcome, Sample
from rlvr.rewards.base import BaseVerifier
from rlvr.rewards.exact import RULES, ExactMatch
from rlvr.rewards.format import AnswerFormat, FormatVerifier
from rlvr.rewards.judge import JudgeVerifier, parse_verdict
from rlvr.rewards.length import LengthPenalty, OverlongPenalty, RepetitionPenalty
from rlvr.rewards.rules.patterns import reset_scanned, scanned
from rlvr.rewards.schema import JsonSchemaVerifier, ToolCallVerifier
from support.judges import reference_of, response_of

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INVISIBLE = list("\u200b\u200c\u200d\u2060\ufeff\u00ad\ufe0f\u180b\u17b4\u034f\u2800\u3164\u202e")
CONFUSABLE = {"0": "\u041e", "1": "l", "2": "\u01a7", "3": "\u0417", "5": "\u01bc", "6": "\u0431", "x": "\u0445"}
SPACES = [" ", "\t", "\n", "\u00a0", "\u2009"]
FRAGMENTS = [
    "<answer>",
    "</answer>",
    "\\boxed{",
    "{",
    "}",
    "```",
    "```json\n",
    " ",
    "\n",
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    '{"a": ',
    "[",
    "7",
    "\u200b",
    "<|im_end|>",
]

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 100}}, "required": ["n"]}
TOOLS = [{"name": "put", "parameters": {"type": "object", "properties": {"x": {"type": "number"}}}}]


class FakeJudgeClient:
    """An OpenAI-compatible judge in process: CORRECT exactly when the response section holds the
    reference answer inside the answer span."""

    class Response:
        def __init__(self, content: str) -> None:
            self.status_code = 200
            self.text = content
            self._content = content

        def json(self) -> Any:
            return {"choices": [{"message": {"content": self._content}}]}

    def post(self, url: str, json: Any, headers: Any, timeout: float) -> Any:
        prompt = json["messages"][0]["content"]
        reference, response = reference_of(prompt), response_of(prompt)
        return self.Response("CORRECT" if f"<answer>{reference}</answer>" in response else "INCORRECT")


def judge() -> JudgeVerifier:
    return JudgeVerifier("fake", "http://judge.invalid/v1", require_calibration=False, client=FakeJudgeClient())


def every_term() -> list[BaseVerifier]:
    return [
        FormatVerifier(),
        FormatVerifier(AnswerFormat(style="boxed", think="optional")),
        ExactMatch(),
        ExactMatch(normalize=RULES),
        JsonSchemaVerifier(schema=SCHEMA, timeout=None),
        ToolCallVerifier(TOOLS, timeout=None),
        LengthPenalty(budget=64),
        OverlongPenalty(max_completion_length=64),
        RepetitionPenalty(),
        judge(),
    ]


ROW = {"answer": "42", "tool_call": {"name": "put", "arguments": {"x": 42}}}


# -- nothing raises, and the work is linear -------------------------------------------------------
@PROPS
@given(st.lists(st.text(max_size=200) | st.sampled_from(FRAGMENTS), max_size=8))
def test_nothing_raises_out_of_verify_batch(parts):
    text = "".join(parts)
    samples = [Sample(text, ROW, prompt=text), Sample(text, {}), Sample(text, {"answer": text})]
    for term in every_term():
        verdicts = term.verify_batch(samples)
        assert len(verdicts) == len(samples)
        assert all(v.outcome is not Outcome.ERROR or v.error_kind == "ground_truth" for v in verdicts), verdicts


def _lines(fn: Any) -> int:
    """Python lines executed by ``fn()``: a step count that does not depend on the machine."""
    count = [0]

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            count[0] += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count[0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6), st.integers(50, 400))
def test_work_grows_linearly_with_the_input(unit, times):
    text = "".join(unit) * times
    for term in every_term():  # the judge too: its prompt is filled in one pass over the template
        base, twice = (_lines(lambda t=term, n=n: t.verify(Sample("".join(unit) * n, ROW))) for n in (10, 20))
        reset_scanned()
        lines = _lines(lambda t=term: t.verify(Sample(text, ROW)))
        # Linear: per repetition of the unit, at most what one costs at ten repetitions (on average,
        # or at the margin from ten to twenty: a cost that starts below zero, as the boxed format's
        # does, has a margin above its average), plus a constant.
        per = max(base, twice - base) / 10
        assert lines <= base + per * times + 2000, (type(term).__name__, lines, base, twice)
        assert scanned() <= 8 * len(text) + 1000, (type(term).__name__, scanned())


# -- wrong stays wrong ----------------------------------------------------------------------------
def _salt(text: str, data: Any) -> str:
    """``text`` with invisible characters inserted, some characters swapped for look-alikes and
    whitespace added, at places hypothesis picks."""
    chars = list(text)
    for _ in range(data.draw(st.integers(0, 4))):
        i = data.draw(st.integers(0, len(chars)))
        chars.insert(i, data.draw(st.sampled_from(INVISIBLE + SPACES)))
    for i, ch in enumerate(chars):
        if ch in CONFUSABLE and data.draw(st.booleans()):
            chars[i] = CONFUSABLE[ch]
    return "".join(chars)


@PROPS
@given(st.integers(0, 10**6), st.integers(1, 999), st.data())
def test_a_wrong_answer_stays_wrong_for_exact_and_the_judge(gold, delta, data):
    wrong = _salt(str(gold + delta), data)
    row = {"answer": str(gold)}
    for rules in ((), RULES, ("nfkc", "whitespace")):
        assert (
            ExactMatch(normalize=rules).verify(Sample(f"<answer>{wrong}</answer>", row)).outcome is not Outcome.CORRECT
        )
    placeholder = data.draw(st.sampled_from(["{answer}", "{prompt}", "{completion}", ""]))
    completion = f"{placeholder}<answer>{wrong}</answer>{placeholder}"
    assert judge().verify(Sample(completion, row, prompt="q {answer}")).outcome is not Outcome.CORRECT


@PROPS
@given(st.integers(101, 10**6), st.data())
def test_a_wrong_json_answer_stays_wrong(n, data):
    text = _salt(json.dumps({"n": n}), data)
    v = JsonSchemaVerifier(schema=SCHEMA, timeout=None).verify(Sample(f"<answer>{text}</answer>"))
    assert v.outcome is not Outcome.CORRECT


@PROPS
@given(st.integers(-1000, 1000).filter(lambda k: k != 42), st.data())
def test_a_wrong_tool_call_stays_wrong(x, data):
    text = _salt(json.dumps({"name": "put", "arguments": {"x": x}}), data)
    v = ToolCallVerifier(TOOLS, timeout=None).verify(Sample(f"<answer>{text}</answer>", ROW))
    assert v.outcome is not Outcome.CORRECT


@PROPS
@given(st.text(max_size=12), st.data())
def test_a_reply_that_is_not_a_label_never_reads_as_correct(reply, data):
    salted = _salt("CORRECT", data)
    for text in (reply, salted, f"not {salted}", f"{salted} {reply}x"):
        if text.strip().strip("*_`\"'.! ").casefold() != "correct":
            assert parse_verdict(text) is not True


@PROPS
@given(st.lists(st.sampled_from(INVISIBLE), min_size=1, max_size=8))
def test_an_answer_span_of_invisibles_is_never_well_formed(salt):
    assert FormatVerifier().verify(Sample(f"<answer>{''.join(salt)}</answer>")).outcome is Outcome.WRONG


@PROPS
@given(st.sampled_from(["wait,", "so ", "\u4e2d\u6587", "ab"]), st.lists(st.sampled_from(INVISIBLE), min_size=1))
def test_a_loop_salted_with_invisibles_is_penalised_as_the_loop(unit, salt):
    loop = unit * 200
    salted = "".join(unit + salt[i % len(salt)] for i in range(200))
    term = RepetitionPenalty()
    assert term.verify(Sample(salted)).score <= term.verify(Sample(loop)).score + 1e-9


# -- correct survives harmless rewrites -----------------------------------------------------------
@PROPS
@given(st.integers(0, 10**6), st.sampled_from(SPACES), st.sampled_from(SPACES))
def test_a_correct_answer_survives_surrounding_whitespace(gold, before, after):
    row = {"answer": str(gold)}
    completion = f"Reasoning.{before}<answer>{before}{gold}{after}</answer>"
    for rules in ((), ("whitespace",), RULES):
        assert ExactMatch(normalize=rules).verify(Sample(completion, row)).outcome is Outcome.CORRECT
    assert FormatVerifier().verify(Sample(completion + after)).outcome is Outcome.CORRECT
    assert judge().verify(Sample(f"<answer>{gold}</answer>", row)).outcome is Outcome.CORRECT


@PROPS
@given(st.integers(0, 100), st.sampled_from([None, 0, 2, "\t"]), st.booleans())
def test_a_correct_json_answer_survives_reformatting(n, indent, fenced):
    text = json.dumps({"n": n}, indent=indent)
    completion = f"```json\n{text}\n```" if fenced else f"<answer>\n{text}\n</answer>"
    v = JsonSchemaVerifier(schema=SCHEMA, timeout=None).verify(Sample(completion))
    assert v.outcome is Outcome.CORRECT, v


@PROPS
@given(st.sampled_from(["42", "42.0", "4.2e1", "420e-1"]), st.booleans(), st.booleans(), st.sampled_from([None, 1]))
def test_a_correct_tool_call_survives_key_order_spacing_and_number_spelling(x, args_first, as_string, indent):
    args = '{"x": ' + x + "}"
    value = args if as_string else "ARGS"  # a JSON string holding the arguments, or the object itself
    call = {"arguments": value, "name": "put"} if args_first else {"name": "put", "arguments": value}
    text = json.dumps(call, indent=indent).replace('"ARGS"', args)
    for completion in (f"<answer>{text}</answer>", f"<tool_call>\n{text}\n</tool_call>"):
        v = ToolCallVerifier(TOOLS, timeout=None).verify(Sample(completion, ROW))
        assert v.outcome is Outcome.CORRECT, (completion, v)
