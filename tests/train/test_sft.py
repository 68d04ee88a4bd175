"""The supervised warm start."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.errors import ConfigError
from rlvr.task import load_task
from rlvr.train.sft import SftOptions, run_sft, sft_rows
from support.tasks import make_task


def test_targets_are_the_ground_truth_in_the_answer_format(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path))
    [row] = sft_rows(task, [{"question": "1+2", "answer": "3"}])
    assert row == {"prompt": "1+2=", "completion": "<answer>3</answer>"}


def test_sft_trains_and_saves_a_loadable_model(tmp_path: Path) -> None:
    import torch

    from rlvr.models import load_model

    task = load_task(make_task(tmp_path / "task"))
    res = run_sft(
        task,
        SftOptions(
            out_dir=tmp_path / "sft", overrides={"max_steps": 3, "per_device_train_batch_size": 4}, progress=False
        ),
    )
    assert res.steps == 3 and not res.stopped_early
    before, after = load_model("builtin:tiny"), load_model(str(res.out_dir))
    assert any(not torch.equal(a, b) for a, b in zip(before.parameters(), after.parameters(), strict=True))
    assert (res.out_dir / "rlvr_sft.json").exists()


def test_sft_stops_as_soon_as_the_dev_slice_reaches_the_target(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task", rows=24))
    res = run_sft(
        task,
        SftOptions(
            out_dir=tmp_path / "sft",
            target_pass_rate=0.0,
            dev_size=4,
            check_every=2,
            overrides={"max_steps": 50, "per_device_train_batch_size": 4},
            progress=False,
        ),
    )
    assert res.stopped_early and res.steps == 2 and res.dev_pass_rate == 0.0


def test_a_dev_slice_larger_than_the_data_is_refused(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    with pytest.raises(ConfigError, match="dev slice"):
        run_sft(task, SftOptions(out_dir=tmp_path / "sft", target_pass_rate=0.5, dev_size=100, progress=False))
