"""A run directory owns its settings: ``--resume`` with no flags trains with what the run was
started with (config.yaml is the record), an interrupt prints the exact resume command, and a full
disk at checkpoint time is named in run.json with the last complete checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlvr.cli.main import main
from rlvr.train import launch as launch_module
from support.tasks import make_task


def interrupt_at(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    """Ctrl-C after ``step`` (once), as a user's would arrive during training."""
    real = launch_module.rlvr_callback
    fired: list[int] = []

    def wrapped(*a: Any, **k: Any) -> Any:
        inner = real(*a, **k)
        on_step_end = inner.on_step_end

        def stop(args: Any, state: Any, control: Any, **kw: Any) -> None:
            on_step_end(args, state, control, **kw)
            if state.global_step == step and not fired:
                fired.append(step)
                raise KeyboardInterrupt

        inner.on_step_end = stop
        return inner

    monkeypatch.setattr(launch_module, "rlvr_callback", wrapped)


def test_an_interrupted_run_resumed_without_flags_keeps_its_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    task = make_task(tmp_path / "task", rows=8)  # the task says save_steps 2, eval every 2
    run = tmp_path / "run"
    interrupt_at(monkeypatch, 5)
    started = ["train", str(task), "--run-dir", str(run), "--no-gate", "resume test", "--no-progress"]
    code = main([*started, "--max-steps", "6", "--eval-every", "0", "--set", "save_steps=3"])
    assert code == 130
    err = capsys.readouterr().err
    resume = f"rlvr train {task} --run-dir {run} --resume"
    assert f"to continue from checkpoint-3 with the run's own settings: {resume}" in err
    assert main(["train", str(task), "--run-dir", str(run), "--resume", "--no-progress"]) == 0
    out = capsys.readouterr()
    assert "resumed from checkpoint-3" in out.out and "trained to step 6 " in out.out
    assert "overrides" not in out.err
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["grpo"]["max_steps"] == 6 and config["grpo"]["save_steps"] == 3
    assert config["rlvr"]["eval"]["every"] == 0 and config["rlvr"]["no_gate_reason"] == "resume test"
    assert not any("eval/accuracy" in line for line in (run / "metrics.jsonl").read_text().splitlines())


def test_a_flag_given_on_resume_overrides_the_record_and_is_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = make_task(tmp_path / "task", rows=8)
    run = tmp_path / "run"
    common = ["train", str(task), "--run-dir", str(run), "--no-progress", "--eval-every", "0"]
    assert main([*common, "--no-gate", "t", "--max-steps", "2"]) == 0
    capsys.readouterr()
    assert main([*common, "--resume", "--max-steps", "4"]) == 0
    out = capsys.readouterr()
    assert "resume: --max-steps 4 (the run's: 2) overrides the run's config.yaml" in out.err
    assert "trained to step 4 " in out.out


def test_a_full_disk_at_a_checkpoint_names_it_and_the_last_complete_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import transformers

    real = transformers.Trainer._save_rng_state

    def full(self: Any, output_dir: Any) -> Any:  # torch's words for a short write on a full disk
        if self.state.global_step == 4:
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 4544 vs 4442")
        return real(self, output_dir)

    monkeypatch.setattr(transformers.Trainer, "_save_rng_state", full)
    task = make_task(tmp_path / "task", rows=8)
    run = tmp_path / "run"
    args = ["train", str(task), "--run-dir", str(run), "--no-gate", "t", "--no-progress", "--eval-every", "0"]
    assert main([*args, "--max-steps", "6"]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("rlvr ")]
    assert len(err) == 1 and "no space left on the device" in err[0], err
    assert "disk full at checkpoint-4; the last complete checkpoint is checkpoint-2" in err[0]
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "failed" and meta["error"].startswith("disk full at checkpoint-4; the last complete")
