"""The tripwire in real GRPO runs on the tiny model: a planted weak reward stops the run with a
finding that names it, a checkpoint kept and resumable; a sound reward trains to the end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rlvr.task import load_task
from rlvr.train import RunStopped, TrainOptions, train
from support.tasks import SHAPING, WEAK_REWARDS, make_task

# One-digit sums: a random tiny model writes the answer's digit somewhere in ~1 of 10 completions,
# so a reward that pays for the digit anywhere pays within the first steps.
ROWS = [{"question": f"{a}+{b}", "answer": str(a + b)} for a in range(1, 5) for b in range(1, 5)]


def task_with(folder: Path, verifier: str, *, seed: int = 3407, steps_every: int = 5) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(WEAK_REWARDS, folder / "audit_rewards.py")
    (folder / "shaping.py").write_text(SHAPING)  # reward variance on a random model (not probed: not the success term)
    rewards = [
        {"name": "format", "weight": 0.1},
        {"name": "digits", "verifier": "shaping.digits", "weight": 0.5},
        {"name": "correct", "verifier": verifier},
    ]
    return make_task(
        folder,
        train_rows=ROWS,
        extra={"rewards": rewards, "success": "correct", "seed": seed, "eval": {"every": 5, "max_prompts": 8}},
    )


def run(task_path: Path, run_dir: Path, steps: int, *, resume: bool = False) -> object:
    return train(
        load_task(task_path),
        TrainOptions(run_dir=run_dir, max_steps=steps, resume=resume, no_gate_reason="tripwire test", progress=False),
    )


@pytest.fixture(scope="module")
def weak_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, RunStopped]:
    root = tmp_path_factory.mktemp("weak")
    task_path = task_with(root / "task", "audit_rewards.substring")
    with pytest.raises(RunStopped) as err:
        run(task_path, root / "run", 40)
    return task_path, root / "run", err.value


def test_a_reward_that_pays_the_answer_anywhere_stops_the_run_naming_the_term_and_probe(
    weak_run: tuple[Path, Path, RunStopped],
) -> None:
    _, run_dir, err = weak_run
    text = str(err)
    assert "tripwire at step" in text and "'correct'" in text and "audit_rewards.substring" in text
    assert "probe span_moved" in text and "fix the reward function, not the hyperparameters" in text
    assert text.count("\n  step ") == 3  # three example rollouts
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "stopped" and meta["tripwire"]["signal"] == "findings"
    assert meta["steps"] < 40


def test_a_tripped_run_keeps_a_complete_checkpoint_at_the_trip_step(weak_run: tuple[Path, Path, RunStopped]) -> None:
    from rlvr.train import latest_checkpoint

    _, run_dir, _ = weak_run
    report = json.loads((run_dir / "tripwire.json").read_text())
    checkpoint = latest_checkpoint(run_dir)
    assert checkpoint is not None and checkpoint.name == f"checkpoint-{report['step']}"
    assert report["signal"] == "findings" and len(report["hits"]) >= 3
    assert report["step"] == 5  # the first round: a random model already writes the digit somewhere
    assert all(h["term"] == "correct" for h in report["hits"])


def test_a_tripped_run_resumes_from_its_checkpoint_once_the_reward_is_fixed(
    weak_run: tuple[Path, Path, RunStopped], tmp_path: Path
) -> None:
    task_path, run_dir, _ = weak_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    step = json.loads((copy / "tripwire.json").read_text())["step"]
    fixed = task_with(tmp_path / "fixed", "audit_rewards.anchored")
    result = run(fixed, copy, step + 2, resume=True)
    assert result.resumed_from is not None and result.resumed_from.name == f"checkpoint-{step}"  # type: ignore[attr-defined]
    assert result.steps == step + 2  # type: ignore[attr-defined]
    assert json.loads((copy / "run.json").read_text())["status"] == "done"


def sound_run(tmp_path: Path, seed: int) -> None:
    task_path = task_with(tmp_path / "task", "audit_rewards.anchored", seed=seed)
    result = run(task_path, tmp_path / "run", 20)
    assert result.steps == 20  # type: ignore[attr-defined]
    rounds = [json.loads(x) for x in (tmp_path / "run" / "tripwire.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rounds] == [5, 10, 15, 20]
    assert not any(r["hits"] for r in rounds)


def test_a_sound_reward_trains_to_the_end_without_a_trip(tmp_path: Path) -> None:
    sound_run(tmp_path, 3407)


@pytest.mark.parametrize("seed", [1, 2, 3])  # ~5 s each on 2 CPU cores: in the default run
def test_a_sound_reward_trips_nothing_on_three_more_seeds(tmp_path: Path, seed: int) -> None:
    sound_run(tmp_path, seed)


def test_rlvr_doctor_reads_the_trip_as_an_error_naming_the_term_and_probe(
    weak_run: tuple[Path, Path, RunStopped],
) -> None:
    from rlvr.doctor import diagnose
    from rlvr.doctor.table import load_run

    _, run_dir, _ = weak_run
    found = diagnose(load_run(run_dir)).findings
    assert found[0].check == "reward_hack_tripwire" and found[0].severity == "error"
    assert "'correct'" in found[0].evidence and "span_moved" in found[0].evidence
    assert "not the hyperparameters" in found[0].suggestion and found[0].patch is None
