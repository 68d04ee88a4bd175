"""The audit under the ``json`` answer format: a bare record is the span there, so the format
term's baseline must be written so that the format reads no span (issue 46, item 4)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from rlvr.audit import format_table, run_audit
from rlvr.audit.run import no_span
from rlvr.rewards import AnswerFormat
from rlvr.rewards.format import extract
from rlvr.task import load_task

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def json_task(folder: Path) -> Path:
    rows = [{"text": f"{n} is {a}.", "answer": json.dumps({"name": n, "age": a})} for n, a in [("Ann", 31), ("Bo", 4)]]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {
        "name": "j",
        "model": "builtin:tiny",
        "data": {"train": "train.jsonl"},
        "prompt": {"template": "{text}="},
        "answer": {"column": "answer", "format": "json"},
        "rewards": [
            {"name": "format", "weight": 0.1},
            {"name": "shape", "verifier": "json_schema", "options": {"schema": PERSON}},
        ],
        "generation": {"max_completion_length": 40},
    }
    (folder / "task.yaml").write_text(json.dumps(spec))
    return folder / "task.yaml"


def test_the_format_term_is_audited_under_the_json_format(tmp_path):
    report = run_audit(load_task(json_task(tmp_path)), max_prompts=2, seed=0)
    format_term = next(t for t in report.terms if t.name == "format")
    assert format_term.verdict == "ok", format_table(report)
    assert format_term.prompts == 2


FORMATS = [AnswerFormat(style="tags"), AnswerFormat(style="boxed"), AnswerFormat(style="json")]


@given(st.sampled_from(FORMATS), st.one_of(st.text(max_size=30), st.dictionaries(st.text(max_size=5), st.integers())))
def test_a_format_baseline_never_reads_as_an_answer_span(fmt, gold):
    text = gold if isinstance(gold, str) else json.dumps(gold)
    unspanned = no_span(text, fmt)
    assert unspanned is None or not extract(unspanned, fmt).ok
    if unspanned is not None:
        assert text in unspanned  # the right answer is there, only outside any span


def test_a_bare_record_has_no_span_once_prose_precedes_it():
    assert no_span('{"a": 1}', AnswerFormat(style="json")) == 'The answer is {"a": 1}'
