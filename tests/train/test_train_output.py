"""What ``rlvr train`` prints: no warning rlvr itself causes (transformers' gradient_checkpointing
FutureWarning, TRL's experimental environment_factory warning), and throughput on the progress line."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import rlvr.models
from rlvr.task import load_task
from rlvr.train import TrainOptions, train
from support.tasks import make_task

OWN = ("`gradient_checkpointing` is deprecated", "You are using 'environment_factory'")


def test_an_episode_run_shows_neither_warning_rlvr_causes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rlvr.models, "quiet_libraries", lambda: None)  # a model path that does not quiet them
    task = load_task(
        make_task(
            tmp_path / "task",
            rows=4,
            extra={
                "prompt": {"user": "{question}"},
                "environment": {"tools": ["calculator"], "max_turns": 2},
                "generation": {"temperature": 1.0, "max_completion_length": 160},
            },
        )
    )
    opts = TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="t", progress=False, eval_every=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(task, opts)
    shown = [str(w.message) for w in caught]
    assert not [m for m in shown if m.startswith(OWN)], shown


def test_the_progress_line_shows_samples_per_second(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = load_task(make_task(tmp_path / "task", rows=4))
    train(task, TrainOptions(run_dir=tmp_path / "run", max_steps=2, no_gate_reason="t", progress=False, eval_every=0))
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("GRPO step 2/")]
    assert lines and "samples/s " in lines[-1], lines
