"""The review of a code sample (terminal and web page): each test or stdin input, what it expected,
what the program gave, the first failure; newlines kept; a missing entry point said in words; the
reference solution shown apart, never as the expected answer; a verdict without per-test details
falls back to the row's tests."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from rlvr import gate
from rlvr.gate.agreement import statuses
from rlvr.gate.codeview import code_view, plain_error, terminal_lines
from rlvr.gate.terminal import render
from rlvr.gate.web import ReviewApp
from rlvr.rewards.base import Verdict
from rlvr.task import load_task
from support.fakes import FakeSampler

ROWS = [
    {
        "problem": "double",
        "entry_point": "double",
        "solution": "def double(x):\n    return 2 * x",
        "tests": "assert double(2) == 4\nassert double(3) == 6",
    },
    {"problem": "echo", "solution": "print(input())", "tests": [{"input": "a\nb\n", "output": "a\nb\n"}]},
    {
        "problem": "inc",
        "entry_point": "inc",
        "solution": "def inc(x):\n    return x + 1",
        "tests": "def check(candidate):\n    assert candidate(1) == 2\n",
    },
]
PROGRAMS = {
    "double": "def double(x):\n    return x + x + 1",  # wrong: the first assert fails
    "echo": "print(input().upper())\nprint(input())",  # wrong on the first line of a two-line input
    "inc": "def increment(x):\n    return x + 1",  # the entry point is missing
}


def code_task(folder: Path) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    spec = {
        "name": "code",
        "model": "builtin:tiny",
        "data": {"train": "train.jsonl"},
        "prompt": {"template": "Write {problem}\n"},
        "answer": {"column": "solution", "format": "tags"},
        "rewards": [
            {"name": "format", "weight": 0.1},
            {"name": "tests", "verifier": "unit_tests", "options": {"column": "tests", "timeout": 5}},
        ],
        "generation": {"max_completion_length": 64},
    }
    (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return load_task(folder / "task.yaml")


@pytest.fixture(scope="module")
def code_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    task = code_task(tmp_path_factory.mktemp("code") / "t")

    def program(prompt: str, rng: random.Random) -> str:
        return f"<answer>{PROGRAMS[prompt.split()[1]]}</answer>"

    return gate.build_set(task, gate.db_path(task), sampler=FakeSampler(program), size=6, pool=1)


def sample_of(store: Any, problem: str) -> Any:
    return next(
        st for st in statuses(store.samples(), store.latest_reviews()) if st.sample.rollout.row["problem"] == problem
    )


def test_an_assert_sample_shows_each_test_and_the_first_failure_with_what_it_got(code_store: Any) -> None:
    st = sample_of(code_store, "double")
    view = code_view(st.sample.rollout.verdicts, st.sample.rollout.row, code_store.meta())
    assert view is not None and view.term == "tests" and view.first_failure == 0
    first, second = view.lines
    assert (first.test, first.status, first.expected, first.got) == ("assert double(2) == 4", "failed", "4", "5")
    assert second.status == "not run"
    assert view.reference == ROWS[0]["solution"] and view.reference_column == "solution"


def test_a_stdio_sample_keeps_the_newlines_of_the_input_the_output_and_the_expected_output(code_store: Any) -> None:
    st = sample_of(code_store, "echo")
    text = render(code_store, st, correctness_term="tests", answer_column="solution", meta=code_store.meta())
    assert "      input: a\n             b\n             ⏎" in text
    assert "      expected: a\n                b\n                ⏎" in text
    assert "      got: A\n           b\n           ⏎" in text
    assert "expected: print(input())" not in text  # the reference is not the expected answer
    assert "reference solution (column 'solution'; for comparison, the tests decide):" in text


def test_a_missing_entry_point_is_said_in_words(code_store: Any) -> None:
    st = sample_of(code_store, "inc")
    view = code_view(st.sample.rollout.verdicts, st.sample.rollout.row, code_store.meta())
    assert view is not None
    assert view.summary.endswith(
        "the program does not define 'inc' (the entry point the tests call; the test stopped with KeyError: 'inc')"
    )


def test_the_web_page_shows_the_tests_table_and_no_expected_answer_for_code(code_store: Any) -> None:
    client = TestClient(ReviewApp(code_store, reviewer="alice"), base_url="http://127.0.0.1:8765")
    page = client.get(f"/sample/{sample_of(code_store, 'echo').sample.id}?show=all").text
    assert "id=tests" in page and "id=first-failure" in page and "Expected answer" not in page
    assert "<pre>a\nb\n</pre>" in page and "<pre>A\nb\n</pre>" in page
    assert "Reference solution" in page and "for comparison only" in page
    page = client.get(f"/sample/{sample_of(code_store, 'inc').sample.id}?show=all").text
    assert "the program does not define &#39;inc&#39;" in page and "raised KeyError" not in page


def test_a_code_verdict_without_details_falls_back_to_the_rows_tests() -> None:
    meta = {
        "correctness_term": "tests",
        "answer_column": "solution",
        "terms": [{"name": "tests", "verifier": "unit_tests"}],
    }
    view = code_view({"tests": Verdict.wrong(detail="0/2 checks passed")}, ROWS[0], meta)
    assert view is not None and view.lines == () and view.raw_tests == ROWS[0]["tests"]
    assert "(this verdict has no per-test details; the row's tests:)" in "\n".join(terminal_lines(view))


def test_a_non_code_sample_has_no_code_view() -> None:
    meta = {
        "correctness_term": "correct",
        "answer_column": "answer",
        "terms": [{"name": "correct", "verifier": "exact"}],
    }
    assert code_view({"correct": Verdict.wrong(answer="3")}, {"answer": "4"}, meta) is None


@pytest.mark.parametrize(
    ("error", "row", "tests", "said"),
    [
        ("KeyError: 'inc'", {"entry_point": "inc"}, "", True),
        ("KeyError: 'cache'", {"entry_point": "inc"}, "", False),  # the program's own dict lookup
        ("NameError: name 'double' is not defined", {}, "assert double(2) == 4", True),
        ("NameError: name 'tmp' is not defined", {}, "assert double(2) == 4", False),
    ],
)
def test_only_a_function_the_tests_call_is_called_missing(error: str, row: dict, tests: str, said: bool) -> None:
    assert (plain_error(error, row, tests) != error) is said


def test_the_terms_table_keeps_the_newlines_of_an_extracted_program(code_store: Any) -> None:
    client = TestClient(ReviewApp(code_store, reviewer="alice"), base_url="http://127.0.0.1:8765")
    page = client.get(f"/sample/{sample_of(code_store, 'inc').sample.id}?show=all").text
    assert "<td class=keep>def increment(x):\n    return x + 1</td>" in page
