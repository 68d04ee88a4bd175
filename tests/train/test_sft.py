"""The supervised warm start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rlvr.data import TrainedRows, row_key, trained_rows_of
from rlvr.errors import ConfigError
from rlvr.task import Task, load_task
from rlvr.train.sft import SftOptions, SftResult, run_sft, sft_rows, split_rows
from support.tasks import make_task


def sft(tmp_path: Path, max_steps: int, rows: int = 16, **options: Any) -> tuple[Task, SftResult]:
    """The tiny task of ``rows`` train rows and an SFT run on it: ``max_steps`` steps of batch 4,
    no progress bar, ``options`` the rest of ``SftOptions``."""
    task = load_task(make_task(tmp_path / "task", rows=rows))
    overrides = {"max_steps": max_steps, "per_device_train_batch_size": 4, **options.pop("overrides", {})}
    return task, run_sft(task, SftOptions(out_dir=tmp_path / "sft", overrides=overrides, progress=False, **options))


def test_targets_are_the_ground_truth_in_the_answer_format(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path))
    [row] = sft_rows(task, [{"question": "1+2", "answer": "3"}])
    assert row == {"prompt": "1+2=", "completion": "<answer>3</answer>"}


def test_sft_trains_and_saves_a_loadable_model(tmp_path: Path) -> None:
    import torch

    from rlvr.models import load_model

    _, res = sft(tmp_path, 3)
    assert res.steps == 3 and not res.stopped_early
    before, after = load_model("builtin:tiny"), load_model(str(res.out_dir))
    assert any(not torch.equal(a, b) for a, b in zip(before.parameters(), after.parameters(), strict=True))
    assert (res.out_dir / "rlvr_sft.json").exists()


def test_sft_stops_as_soon_as_the_dev_slice_reaches_the_target(tmp_path: Path) -> None:
    _, res = sft(tmp_path, 50, rows=24, target_pass_rate=0.0, dev_size=4, check_every=2)
    assert res.stopped_early and res.steps == 2 and res.dev_pass_rate == 0.0


def test_a_dev_slice_larger_than_the_data_is_refused(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    with pytest.raises(ConfigError, match="dev slice"):
        run_sft(task, SftOptions(out_dir=tmp_path / "sft", target_pass_rate=0.5, dev_size=100, progress=False))


def test_a_dev_slice_of_most_of_the_data_is_refused_with_the_numbers() -> None:
    rows = [{"q": i} for i in range(130)]
    with pytest.raises(ConfigError, match=r"dev slice of 100 rows would leave 30 of the 130 train rows.*--dev-size 26"):
        split_rows(rows, 0.2, 100)


def test_the_default_dev_slice_is_a_fifth_of_a_small_split_and_is_stated() -> None:
    split = split_rows([{"q": i} for i in range(130)], 0.2, None)
    assert (len(split.train), len(split.dev)) == (104, 26)
    assert "training on 104 of 130 train rows; 26 held out as the dev slice" in split.describe()
    big = split_rows([{"q": i} for i in range(2000)], 0.2, None)
    assert len(big.dev) == 100
    assert "all 5 train rows" in split_rows([{"q": i} for i in range(5)], None, None).describe()


def test_the_dev_slice_is_taken_from_rows_the_start_model_never_trained_on() -> None:
    rows = [{"q": i} for i in range(10)]
    start = TrainedRows(frozenset(row_key(r) for r in rows[:8]), ("sft",))
    split = split_rows(rows, 0.5, 2, start)
    assert split.dev == rows[8:]


def test_sft_records_its_rows_states_its_split_and_says_when_the_target_was_missed(tmp_path: Path) -> None:
    said: list[str] = []
    warned: list[str] = []
    lines: list[str] = []
    task, res = sft(
        tmp_path,
        3,
        rows=20,
        target_pass_rate=1.0,
        dev_size=4,
        check_every=2,
        say=said.append,
        warn=warned.append,
        progress_line=lines.append,
        overrides={"logging_steps": 1},
    )
    assert said == ["SFT split: training on 16 of 20 train rows; 4 held out as the dev slice for --target-pass-rate"]
    assert res.target_missed is not None and res.dev_pass_rate is not None
    assert any(w.startswith("target dev pass rate 100% not reached in 3 steps (last ") for w in warned)
    assert [x.split(":")[0] for x in lines] == ["SFT step 1/3", "SFT step 2/3", "SFT step 3/3"]
    assert "dev " in lines[-1]  # the dev pass rate shows beside the loss once it was measured
    record = trained_rows_of(res.out_dir)
    rows = task.load_split("train")
    assert record is not None and record.keys == {row_key(r) for r in rows[4:]} and record.sources == ("sft",)


def test_a_run_shorter_than_logging_steps_prints_its_first_and_last_step_lines(tmp_path: Path) -> None:
    lines: list[str] = []
    sft(tmp_path / "a", 4, progress_line=lines.append)  # logging_steps 10, the default
    assert [x.split(":")[0] for x in lines] == ["SFT step 1/4", "SFT step 4/4"]
    assert all("loss " in x for x in lines)
    stopped: list[str] = []
    _, res = sft(
        tmp_path / "b", 50, rows=24, target_pass_rate=0.0, dev_size=4, check_every=2, progress_line=stopped.append
    )
    assert res.stopped_early and [x.split(":")[0] for x in stopped] == ["SFT step 1/50", "SFT step 2/50"]


def test_sft_checks_the_dev_slice_every_step_by_default_at_the_task_temperature(tmp_path: Path) -> None:
    task, res = sft(tmp_path, 3, rows=20, target_pass_rate=1.0, dev_size=4, warn=lambda _: None)
    assert [step for step, _ in res.checks] == [1, 2, 3]
    assert res.check_temperature == task.generation.temperature > 0


def test_sft_checks_at_its_cadence_and_once_more_at_the_last_step(tmp_path: Path) -> None:
    _, res = sft(
        tmp_path,
        7,
        rows=20,
        target_pass_rate=1.0,
        dev_size=4,
        check_every=3,
        check_temperature=0.0,
        warn=lambda _: None,
    )
    assert [step for step, _ in res.checks] == [3, 6, 7] and res.check_temperature == 0.0


def test_a_stop_is_confirmed_by_a_read_of_its_own_and_recorded(tmp_path: Path) -> None:
    _, res = sft(tmp_path, 50, rows=24, target_pass_rate=0.0, dev_size=4, confirm_samples=3)
    assert res.stopped_early and res.steps == 1 and res.checks == ((1, 0.0),)
    assert res.confirmations == ((1, 0.0),) and res.dev_samples == 3
    record = json.loads((res.out_dir / "rlvr_sft.json").read_text())
    assert record["confirmations"] == [[1, 0.0]] and record["dev_samples"] == 3


def test_a_greedy_check_is_its_own_confirmation(tmp_path: Path) -> None:
    _, res = sft(tmp_path, 50, rows=24, target_pass_rate=0.0, dev_size=4, check_temperature=0.0)
    assert res.stopped_early and res.confirmations == () and res.dev_samples == 1
