"""The ``json`` answer format: a bare JSON record after the think block, or its one fenced block,
read by every JSON term and the format term; a second record anywhere is refused, never "first wins"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.errors import ConfigError
from rlvr.rewards import AnswerFormat, Outcome, Sample, build_verifier
from rlvr.rewards.format import FormatVerifier, extract
from rlvr.task import load_task

FMT = AnswerFormat(style="json")
KEYS = st.text("abcxyz_", min_size=1, max_size=5)
VALUES = st.one_of(st.integers(-1000, 1000), st.text("ab c{}[]\"'", max_size=6), st.booleans())
RECORDS = st.dictionaries(KEYS, VALUES, min_size=1, max_size=4)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def pinned(record: dict[str, object]) -> dict[str, object]:
    """A schema only ``record`` satisfies (a const per key, no other key)."""
    return {"type": "object", "properties": {k: {"const": v} for k, v in record.items()}, "required": list(record)}


def carriers(text: str) -> list[str]:
    """The ways a model writes one record that the json format reads."""
    return [
        text,
        f"  \n{text}\n",
        f'<think>I should write {{"x": 1}}</think>{text}',
        f"```json\n{text}\n```",
        f"Here is the record:\n```json\n{text}\n```\n",
        f"```\n{text}\n```",
    ]


def hedges(text: str, other: str) -> list[str]:
    """The same record with a second record beside it: every one must be refused."""
    return [
        f"{text}\n{other}",
        f"{other}{text}",
        f"```json\n{text}\n{other}\n```",
        f"```json\n{text}\n```\n```json\n{other}\n```",
        f"```json\n{text}\n```\n{other}",
        f"{other}\n```json\n{text}\n```",
        f"```json\n{text}\n```json\n{other}\n```",
        f"```json\n{text}\n",
    ]


@settings(max_examples=60, deadline=None)
@given(record=RECORDS, other=RECORDS)
def test_every_json_term_reads_one_record_bare_or_fenced_and_refuses_a_second(record, other) -> None:
    text, second = json.dumps(record), json.dumps(other)
    schema_term = build_verifier("json_schema", {"schema": pinned(record), "timeout": None}, FMT)
    call, other_call = (
        json.dumps({"name": "get_weather", "arguments": {"city": json.dumps(r)}}) for r in (record, other)
    )
    tool_term = build_verifier("tool_call", {"tools": TOOLS, "timeout": None}, FMT)
    expected = {"tool_call": {"name": "get_weather", "arguments": {"city": json.dumps(record)}}}
    fmt_term = FormatVerifier(FMT)
    for completion in carriers(text):
        assert schema_term.verify(Sample(completion)).outcome is Outcome.CORRECT, completion
        assert fmt_term.verify(Sample(completion)).outcome is Outcome.CORRECT, completion
    for completion in carriers(call):
        assert tool_term.verify(Sample(completion, row=expected)).outcome is Outcome.CORRECT, completion
    for completion in hedges(text, second):
        assert schema_term.verify(Sample(completion)).outcome is not Outcome.CORRECT, completion
        assert fmt_term.verify(Sample(completion)).outcome is not Outcome.CORRECT, completion
    for completion in hedges(call, other_call):
        assert tool_term.verify(Sample(completion, row=expected)).outcome is not Outcome.CORRECT, completion


@pytest.mark.parametrize(
    "completion",
    ['The record is {"a": 1}', "", '<think>{"a": 1}</think>', '```python\n{"a": 1}\n```', '```json {"a": 1}```'],
)
def test_a_completion_without_a_bare_or_fenced_record_has_no_json_answer(completion: str) -> None:
    assert not extract(completion, FMT).ok
    term = build_verifier("json_schema", {"schema": {"type": "object"}, "timeout": None}, FMT)
    assert term.verify(Sample(completion)).outcome is not Outcome.CORRECT


def test_the_json_answer_span_is_the_record_itself() -> None:
    completion = 'Sure.\n```json\n  {"a": 1}\n```'
    ex = extract(completion, FMT)
    assert ex.span is not None and completion[ex.span[0] : ex.span[1]] == '{"a": 1}' == ex.answer


def test_the_format_term_refuses_invalid_json_and_text_after_the_fence() -> None:
    v = FormatVerifier(FMT)
    assert v.verify(Sample('{"a": 1,}')).outcome is Outcome.WRONG
    assert v.verify(Sample('{"a": 1, "a": 2}')).outcome is Outcome.WRONG  # duplicate key: the strict reader
    assert v.verify(Sample('```json\n{"a": 1}\n```\nHope this helps.')).outcome is Outcome.WRONG
    assert (
        FormatVerifier(FMT, strict_end=False).verify(Sample('```json\n{"a": 1}\n```\nOk.')).outcome is Outcome.CORRECT
    )


def test_the_sft_target_of_the_json_format_is_the_bare_record() -> None:
    assert FMT.wrap('{"a": 1}') == '{"a": 1}'
    assert AnswerFormat(style="json", think="required").wrap("{}") == "<think></think>{}"


def write_task(folder: Path, fmt: str, verifier: str, rows: list[dict[str, object]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    options = "{schema_column: schema}" if verifier == "json_schema" else "{}"
    (folder / "task.yaml").write_text(
        "name: j\nmodel: builtin:tiny\ndata: {train: train.jsonl}\nprompt: {template: 'Extract: {text}'}\n"
        f"answer: {{column: answer, format: {fmt}}}\nrewards:\n  - {{name: format, weight: 0.1}}\n"
        f"  - {{name: correct, verifier: {verifier}, options: {options}}}\n"
        "generation: {temperature: 1.0, max_completion_length: 64}\n"
    )
    return folder / "task.yaml"


ROWS = [
    {
        "text": f"Ada is {i}",
        "answer": json.dumps({"name": "Ada", "age": i}),
        "schema": pinned({"name": "Ada", "age": i}),
    }
    for i in range(6)
]


def test_a_task_file_takes_the_json_format_for_json_terms(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "t", "json", "json_schema", ROWS))
    assert task.answer.style == "json"
    scores = task.reward_set().score([Sample(r["answer"], row=r) for r in ROWS])  # type: ignore[arg-type]
    assert all(v.outcome is Outcome.CORRECT for row in scores for v in row.verdicts.values()), scores


def test_a_text_answer_term_under_the_json_format_is_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_task(write_task(tmp_path / "t", "json", "exact", ROWS))
    [p] = [p for p in info.value.problems if "rewards[1]" in p.where]
    assert "answer.format json" in p.what and "tags or boxed" in p.fix


def test_a_model_writing_the_right_bare_record_routes_to_grpo_under_the_json_format(tmp_path: Path) -> None:
    import random

    from rlvr.probe import run_probe
    from support.fakes import FakeSampler

    def text(prompt: str, rng: random.Random) -> str:
        age = int(prompt.rsplit(" ", 1)[1])
        return json.dumps({"name": "Ada", "age": age if rng.random() < 0.5 else age + 1})

    fake = FakeSampler(text, token_ids=lambda t, m: (*range(len(t)), 2))
    report = run_probe(write_task(tmp_path / "j", "json", "json_schema", ROWS), out_dir=tmp_path / "o1", k=4,
                       sampler=fake, progress=False)  # fmt: skip
    assert report.route == "grpo", report.reason
    # Under tags the same samples score nothing: the route is SFT, and its reason names the json format.
    tags = run_probe(write_task(tmp_path / "t", "tags", "json_schema", ROWS), out_dir=tmp_path / "o2", k=4,
                     sampler=fake, progress=False)  # fmt: skip
    assert tags.route == "sft" and "answer.format: json" in tags.reason
    assert "hold the right record outside any answer span" in tags.reason
