"""``rlvr task check`` and the fail-closed rule: a custom term's unknown score range and a term
with no gold to score are printed as notes; a gold that cannot be decided is named by row."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.cli.main import main
from rlvr.task import load_task
from rlvr.taskcheck import check_task, term_notes
from support.tasks import weak_rewards_task


def make_task(tmp_path: Path, rewards: list[dict], rows: list[dict]) -> Path:
    return weak_rewards_task(tmp_path, rewards, rows, budget=16, success="c")


ROWS = [{"question": "1+1", "answer": "2"}, {"question": "2+2", "answer": "4"}]


def test_a_custom_terms_unknown_range_is_printed_by_task_check(tmp_path, monkeypatch, capsys):
    import rlvr.taskcheck

    monkeypatch.setattr(rlvr.taskcheck, "grpo_problems", lambda task: [])
    path = make_task(
        tmp_path, [{"name": "c", "verifier": "exact"}, {"name": "bonus", "verifier": "audit_rewards.anchored"}], ROWS
    )
    assert main(["task", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "note" in out and "bonus" in out and "score range unknown" in out


def test_a_term_with_no_gold_is_noted_as_always_charged(tmp_path):
    task = load_task(make_task(tmp_path, [{"name": "format", "weight": 0.1}, {"name": "c", "verifier": "exact"}], ROWS))
    notes = term_notes(task)
    assert any("'format'" in n and "charged" in n for n in notes)
    assert not any("'c'" in n for n in notes)


def test_a_gold_the_term_cannot_decide_is_named_by_row(tmp_path, monkeypatch):
    import rlvr.taskcheck

    monkeypatch.setattr(rlvr.taskcheck, "grpo_problems", lambda task: [])
    rows = [*ROWS, {"question": "3+3", "answer": "CRASH"}]
    task = load_task(make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.crash_on_marker"}], rows))
    problems = [p for p in check_task(task) if "cannot be decided" in p.what]
    assert len(problems) == 1 and problems[0].where.endswith(":3")


def test_a_unit_tests_term_without_a_reference_is_noted_as_always_charged(tmp_path):
    # The gold of a code row is its reference solution: without one a timeout is the answer's.
    def notes(answer: str, row: dict) -> list[str]:
        path = make_task(tmp_path, [{"name": "c", "verifier": "unit_tests", "options": {"column": "tests"}}], [row])
        path.write_text(path.read_text().replace('"column": "answer"', f'"column": "{answer}"'))
        return [n for n in term_notes(load_task(path)) if "'c'" in n]

    tests, code = "assert f() == 1", "def f():\n    return 1"
    [bare] = notes("tests", {"question": "f", "tests": tests})
    assert "no reference solution" in bare and "timeout" in bare
    assert notes("code", {"question": "f", "tests": tests, "code": code}) == []  # the task's answer column
    assert notes("tests", {"question": "f", "tests": tests, "solution": code}) == []  # a conventional one


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_a_json_schema_term_reading_the_rows_schema_is_noted_for_what_it_reads_never_as_having_no_gold(tmp_path):
    rows = [
        {"question": "one", "answer": '{"n": 1}', "schema": SCHEMA},
        {"question": "two", "answer": '{"n": 2}', "schema": SCHEMA},
    ]
    task = load_task(
        make_task(tmp_path, [{"name": "c", "verifier": "json_schema", "options": {"schema_column": "schema"}}], rows)
    )
    [note] = [n for n in term_notes(task) if "'c'" in n]
    assert "the row's own schema (column 'schema')" in note and "no gold" not in note


@pytest.mark.parametrize(
    ("term", "reads"),
    [
        ({"name": "format", "weight": 0.1}, "the completion only"),
        ({"name": "c", "verifier": "json_schema", "options": {"schema": SCHEMA}}, "one fixed schema"),
        ({"name": "c", "verifier": "json_schema", "options": {"schema_column": "schema"}}, "column 'schema'"),
        ({"name": "c", "verifier": "exact"}, None),  # its gold is the answer column: no note
    ],
)
def test_every_terms_note_says_what_its_reads_declare(tmp_path, term, reads):
    rows = [{"question": "one", "answer": "1", "schema": SCHEMA}]
    task = load_task(
        make_task(tmp_path, [term, *([] if term["name"] == "c" else [{"name": "c", "verifier": "exact"}])], rows)
    )
    notes = [n for n in term_notes(task) if f"term {term['name']!r}" in n]
    if reads is None:
        assert notes == []
    else:
        [note] = notes
        assert reads in note and "charged to the answer" in note and "no gold" not in note
