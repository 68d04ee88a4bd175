"""``rlvr sft --data FILE``: a warm start on rows other than the train split, checked before the
model loads; the train split stays unseen for GRPO and the probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.cli.main import main
from rlvr.data import trained_rows_of
from rlvr.errors import ConfigError
from rlvr.task import load_task
from rlvr.train.sftdata import sft_data_rows
from support.tasks import make_task

TOOL_SEARCH = Path(__file__).resolve().parents[2] / "examples" / "tool-search"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_tool_search_warm_start_file_is_clean() -> None:
    task = load_task(TOOL_SEARCH / "task.yaml")
    rows, warnings = sft_data_rows(task, TOOL_SEARCH / "sft.jsonl")
    assert len(rows) == 200 and warnings == []


def test_rows_shared_with_the_train_split_are_counted_in_a_warning(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    train = task.load_split("train")
    data = _jsonl(tmp_path / "warm.jsonl", [*train[:3], {"question": "40+2", "answer": "42"}])
    rows, warnings = sft_data_rows(task, data)
    assert len(rows) == 4
    assert len(warnings) == 1 and warnings[0].startswith("3 of the 4 rows of") and "also train rows" in warnings[0]


def test_held_out_prompts_are_refused(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    held = task.load_split("eval")[1]
    data = _jsonl(tmp_path / "warm.jsonl", [{"question": "40+2", "answer": "42"}, held])
    with pytest.raises(ConfigError, match="1 of its prompts are held-out prompts"):
        sft_data_rows(task, data)


def test_each_row_missing_a_column_is_named_with_its_file_and_line(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    data = _jsonl(
        tmp_path / "warm.jsonl",
        [{"question": "1+1", "answer": "2"}, {"question": "2+2"}, {"answer": "5"}, {"question": "3+3", "answer": " "}],
    )
    with pytest.raises(ConfigError) as exc:
        sft_data_rows(task, data)
    text = str(exc.value)
    assert f"{data}:2" in text and "row 2: column(s) answer" in text
    assert f"{data}:3" in text and "row 3: column(s) question" in text
    assert f"{data}:4" in text and f"{data}:1" not in text


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    with pytest.raises(ConfigError, match="no rows"):
        sft_data_rows(task, _jsonl(tmp_path / "warm.jsonl", []))


def test_rlvr_sft_data_trains_on_the_file_and_leaves_every_train_row_unseen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_path = make_task(tmp_path / "task")
    task = load_task(task_path)
    warm = [{"question": f"{a}+{a + 1}", "answer": str(2 * a + 1)} for a in range(300, 312)]
    data = _jsonl(tmp_path / "warm.jsonl", warm)
    out = tmp_path / "sft"
    argv = ["sft", str(task_path), "--data", str(data), "--out", str(out), "--max-steps", "2", "--no-progress"]
    assert main([*argv, "--set", "per_device_train_batch_size=4"]) == 0
    assert f"SFT split: training on all 12 rows of {data}" in capsys.readouterr().out
    seen = trained_rows_of(out)
    assert seen is not None
    assert all(seen.seen(r) for r in warm)
    assert not any(seen.seen(r) for r in task.load_split("train"))


def test_rlvr_sft_data_with_a_held_out_prompt_fails_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_path = make_task(tmp_path / "task")
    held = load_task(task_path).load_split("eval")[0]
    data = _jsonl(tmp_path / "warm.jsonl", [held])
    assert main(["sft", str(task_path), "--data", str(data), "--out", str(tmp_path / "sft")]) != 0
    err = capsys.readouterr().err
    assert "held-out prompts" in err and len(err.strip().splitlines()) <= 2
    assert not (tmp_path / "sft").exists()


def test_on_an_episode_task_a_bad_reference_call_is_named_in_the_data_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [json.loads(x) for x in (TOOL_SEARCH / "sft.jsonl").read_text().splitlines()[:3]]
    rows[1]["reference_calls"] = [{"name": "lookup", "arguments": {"query": "x"}}]
    data = _jsonl(tmp_path / "warm.jsonl", rows)
    argv = ["sft", str(TOOL_SEARCH / "task.yaml"), "--data", str(data), "--out", str(tmp_path / "sft")]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert f"{data}:2" in err and "unknown tool 'lookup'" in err
    assert not (tmp_path / "sft").exists()


def test_an_oversized_row_of_the_sft_data_is_one_problem_before_anything_else(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    data = _jsonl(tmp_path / "warm.jsonl", [{"question": "1+1", "answer": "2"}, {"question": "x" * 1_500_000}])
    with pytest.raises(ConfigError) as exc:
        sft_data_rows(task, data)
    [problem] = exc.value.problems  # not also its missing answer
    assert problem.where == f"{data}:2" and "1.5 MB, over the 1 MB a row may hold" in problem.what
