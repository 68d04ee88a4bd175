"""rlvr task check on data that cannot work (issue 26): tests that do not parse, stdin/stdout cases
with the wrong keys, a reference solution failing its own tests, a column mixing test styles
(supported end to end), a custom term that cannot tell right from wrong, a hub model missing from
the cache while offline, a 10 MB row, a CSV file given as JSON lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.cli.main import main
from rlvr.errors import ConfigError, DataError
from rlvr.task import MAX_ROW_PROBLEMS, load_task
from rlvr.task.rowchecks import arrow_rows, custom_term_problems, rows_size_problems, type_problems
from rlvr.taskcheck import check_task
from support.tasks import make_task

GOOD = [
    {"problem": "double", "solution": "def double(x):\n    return 2 * x", "tests": "assert double(2) == 4"},
    {"problem": "inc", "solution": "def inc(x):\n    return x + 1", "tests": "assert inc(2) == 3\nassert inc(0) == 1"},
    {"problem": "echo", "solution": "print(input())", "tests": [{"input": "7\n", "output": "7\n"}]},
]


def code_task(folder: Path, rows: list[dict[str, Any]], *, extra_terms: list[dict[str, Any]] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {
        "name": "code",
        "model": "builtin:tiny",
        "data": {"train": "train.jsonl"},
        "prompt": {"template": "Write {problem}\n"},
        "answer": {"column": "solution", "format": "tags"},
        "rewards": [
            {"name": "format", "weight": 0.1},
            {"name": "tests", "verifier": "unit_tests", "options": {"column": "tests", "timeout": 5}},
            *(extra_terms or []),
        ],
        "generation": {"max_completion_length": 64},
    }
    if extra_terms:
        spec["success"] = "tests"
    (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder / "task.yaml"


def problems_of(path: Path) -> list[str]:
    return [str(p) for p in check_task(load_task(path))]


def test_good_code_rows_mixing_assert_and_stdio_tests_pass_the_check(tmp_path: Path) -> None:
    assert problems_of(code_task(tmp_path, GOOD)) == []


def test_tests_that_do_not_parse_and_cases_with_wrong_keys_are_named_by_row(tmp_path: Path) -> None:
    rows = [*GOOD, {**GOOD[0], "tests": "assert double(2) == 4\nif x"}, {**GOOD[2], "tests": [{"in": "1", "out": "1"}]}]
    found = problems_of(code_task(tmp_path, rows))
    assert len(found) == 2, found
    assert "train.jsonl:4: row 4: term 'tests': column 'tests': the tests do not parse" in found[0]
    assert "train.jsonl:5: row 5: term 'tests': column 'tests': test case 0 must be an object" in found[1]


def test_a_reference_solution_failing_its_own_tests_is_named(tmp_path: Path) -> None:
    rows = [*GOOD, {**GOOD[0], "solution": "def double(x):\n    return 2 * x + 1"}]
    [found] = problems_of(code_task(tmp_path, rows))
    assert (
        "train.jsonl:4: row 4: term 'tests': the reference solution in column 'solution' fails its own tests" in found
    )
    assert "got 5, expected 4" in found


def test_a_column_mixing_assert_and_stdio_rows_trains_as_one_arrow_column(tmp_path: Path) -> None:
    """Supported end to end: the stdin/stdout cases become JSON text, which the verifier reads the same way."""
    from rlvr.rewards import Outcome, Sample
    from rlvr.train.launch import build_dataset

    task = load_task(code_task(tmp_path, GOOD))
    ds = build_dataset(task, task.load_split("train"))
    row = ds[2]
    assert isinstance(row["tests"], str) and json.loads(row["tests"]) == GOOD[2]["tests"]
    [v] = task.term_verifier(task.rewards[1]).verify_batch([Sample("<answer>print(input())</answer>", row=row)])
    assert v.outcome is Outcome.CORRECT


def test_a_column_arrow_cannot_store_is_named_by_check_and_by_train(tmp_path: Path) -> None:
    from rlvr.train.launch import build_dataset

    rows = [{**GOOD[0], "level": 1}, {**GOOD[1], "level": "hard"}]
    task = load_task(code_task(tmp_path, rows))
    [found] = [str(p) for p in type_problems(task.load_split("train"), "train.jsonl")]
    assert "column 'level' holds a number (first at row 1), text (first at row 2)" in found
    with pytest.raises(ConfigError, match="column 'level' holds a number"):
        build_dataset(task, task.load_split("train"))
    assert arrow_rows(task, rows)[0]["level"] == 1  # only the tests column is rewritten


ALWAYS_ZERO = "def score(completions, **kw):\n    return [0.0 for _ in completions]\n"
RIGHT = "def score(completions, answer, **kw):\n    return [float(a in c) for c, a in zip(completions, answer)]\n"


@pytest.mark.parametrize(("code", "flagged"), [(ALWAYS_ZERO, True), (RIGHT, False)])
def test_a_custom_term_that_cannot_tell_a_right_answer_from_a_wrong_one_is_reported(
    tmp_path: Path, code: str, flagged: bool
) -> None:
    (tmp_path / "t").mkdir()
    module = f"myterm_{flagged}"  # one module name per case: an imported module is cached by name
    (tmp_path / "t" / f"{module}.py").write_text(code)
    task = load_task(
        make_task(
            tmp_path / "t",
            extra={"rewards": [{"name": "format", "weight": 0.1}, {"name": "mine", "verifier": f"{module}.score"}]},
        )
    )
    found = [str(p) for p in custom_term_problems(task)]
    assert bool(found) is flagged
    if flagged:
        assert f"term 'mine' ({module}.score) cannot tell the reference answer from a wrong one on 8 rows" in found[0]


def test_a_ten_megabyte_row_is_the_one_problem_the_task_file_loads_with(tmp_path: Path) -> None:
    rows = [{"question": "1+1", "answer": "2"}, {"question": "x" * 10_500_000, "answer": None}]
    with pytest.raises(ConfigError) as info:
        load_task(make_task(tmp_path, train_rows=rows))
    [found] = [str(p) for p in info.value.problems if "train.jsonl" in p.where]  # not also its null answer
    assert "train.jsonl:2: row 2 is 10.5 MB, over the 1 MB a row may hold (column 'question'" in found


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=12), limit=st.integers(100, 2000))
def test_the_size_rule_names_exactly_the_rows_over_the_limit(sizes: list[int], limit: int) -> None:
    rows = [{"question": "q" * n, "answer": "1"} for n in sizes]
    over = [i for i, r in enumerate(rows, 1) if len(json.dumps(r).encode()) > limit]
    named = [int(p.where.rsplit(":", 1)[1]) for p in rows_size_problems(rows, "f.jsonl", limit) if ":" in p.where]
    assert named == over[:MAX_ROW_PROBLEMS]


@pytest.mark.parametrize("name", ["train.csv", "train.jsonl"])
def test_a_csv_file_is_named_as_csv_with_the_format_expected(tmp_path: Path, name: str) -> None:
    path = make_task(tmp_path)
    (tmp_path / name).write_text("question,answer\n1+1,2\n")
    spec = yaml.safe_load(path.read_text())
    spec["data"]["train"] = name
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(
        (ConfigError, DataError), match=r"looks like a CSV/TSV file.*rlvr reads JSON lines|rlvr reads JSON lines.*CSV"
    ):
        load_task(path)


def test_a_hub_model_missing_from_the_cache_while_offline_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    path = make_task(tmp_path / "t", extra={"model": "nobody-here/no-such-model"})
    from rlvr.task.rowchecks import offline_model_problems

    [found] = [str(p) for p in offline_model_problems(load_task(path))]
    assert (
        "'nobody-here/no-such-model' is a hub model and the hub is offline" in found
        and "not in the local cache" in found
    )
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    assert offline_model_problems(load_task(path)) == []


def test_task_check_on_the_broken_code_task_exits_2_naming_each_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [*GOOD, {**GOOD[0], "solution": "def double(x):\n    return x"}]
    assert main(["task", "check", str(code_task(tmp_path, rows))]) == 2
    err = capsys.readouterr().err
    assert "row 4: term 'tests': the reference solution in column 'solution' fails its own tests" in err


def test_a_prompt_past_the_models_positions_names_its_row(tmp_path: Path) -> None:
    from rlvr.lengths import check_lengths

    rows = [
        {"question": "1+1", "answer": "2"},
        {"question": "9" * 2000, "answer": "3"},
        {"question": "2+2", "answer": "4"},
    ]
    [problem] = check_lengths(load_task(make_task(tmp_path, train_rows=rows))).problems()
    assert "(the longest: train row 2) exceed the 256 positions of builtin:tiny" in str(problem)
