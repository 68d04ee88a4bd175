"""GRPO on TRL, end to end on the tiny model: parameters move, metrics are complete, resume works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from foundation_helpers import make_task

from rlvr.errors import ConfigError, GateError, RunError
from rlvr.task import load_task
from rlvr.train import TrainOptions, read_config_file, train


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def two_step_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    root = tmp_path_factory.mktemp("train")
    task = load_task(make_task(root / "task", shaping=True))
    result = train(task, TrainOptions(run_dir=root / "run", max_steps=2, no_gate_reason="unit test of the trainer", progress=False))
    return root, result


def test_two_grpo_steps_change_the_parameters(two_step_run: tuple[Path, object]) -> None:
    import torch

    from rlvr.models import load_model

    root, result = two_step_run
    before = load_model("builtin:tiny")
    after = load_model(str(result.final_dir))  # type: ignore[attr-defined]
    changed = [n for (n, a), (_, b) in zip(before.named_parameters(), after.named_parameters(), strict=True) if not torch.equal(a, b)]
    assert changed, "no parameter changed after 2 GRPO steps"


def test_metrics_have_every_term_and_the_error_rates(two_step_run: tuple[Path, object]) -> None:
    root, _ = two_step_run
    logs = [x for x in lines(root / "run" / "metrics.jsonl") if "reward" in x]
    assert [x["step"] for x in logs] == [1, 2]
    for term in ("format", "digits", "correct"):
        assert f"rewards/{term}/mean" in logs[0] and f"rewards/{term}/std" in logs[0]
        assert f"rewards/{term}/error_rate" in logs[0]
    for key in ("frac_reward_zero_std", "entropy", "completions/mean_length", "grad_norm", "rewards/masked_rate"):
        assert key in logs[0], key
    assert all(x["no_gate_reason"] == "unit test of the trainer" for x in logs)


def test_held_out_eval_is_logged_at_the_start_and_every_n_steps(two_step_run: tuple[Path, object]) -> None:
    root, result = two_step_run
    evals = [x for x in lines(root / "run" / "metrics.jsonl") if "eval/accuracy" in x]
    assert [x["step"] for x in evals] == [0, 2]
    assert all(x["eval/n"] == 8 for x in evals)


def test_resolved_config_states_every_recipe_value(two_step_run: tuple[Path, object]) -> None:
    from rlvr.recipe import EXPLICIT_KEYS

    root, _ = two_step_run
    cfg = yaml.safe_load((root / "run" / "config.yaml").read_text())
    for key in EXPLICIT_KEYS:
        assert key in cfg["grpo"], key
    assert cfg["grpo"]["loss_type"] == "grpo" and cfg["grpo"]["learning_rate"] == 1e-3
    assert cfg["grpo"]["reward_weights"] == [0.1, 0.5, 1.0]
    assert cfg["rlvr"]["gate"]["status"] == "bypassed"
    assert cfg["rlvr"]["no_gate_reason"] == "unit test of the trainer"
    grpo, rlvr = read_config_file(root / "run" / "config.yaml")
    assert grpo["num_generations"] == 8 and rlvr["variant"] == "grpo"
    assert cfg["rlvr"]["reward_terms"] == ["format", "digits", "correct"]


def test_training_refuses_to_start_without_a_gate(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    with pytest.raises(GateError):
        train(task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, progress=False))
    assert not (tmp_path / "run").exists()


def test_an_unknown_grpo_key_is_refused_before_loading(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task", extra={"grpo": {"learning_rat": 1e-3}}))
    with pytest.raises(ConfigError, match="did you mean 'learning_rate'"):
        train(task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="test", progress=False))


def test_an_existing_run_is_not_overwritten(two_step_run: tuple[Path, object]) -> None:
    root, _ = two_step_run
    task = load_task(root / "task" / "task.yaml")
    with pytest.raises(RunError, match="--resume"):
        train(task, TrainOptions(run_dir=root / "run", max_steps=2, no_gate_reason="test", progress=False))


def test_resume_continues_from_the_checkpoint(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task", shaping=True))
    run = tmp_path / "run"
    opts = TrainOptions(run_dir=run, max_steps=2, no_gate_reason="resume test", progress=False, eval_every=0)
    train(task, opts)
    assert (run / "checkpoints" / "checkpoint-2").exists()
    # Simulate an interruption after the checkpoint: a log line for a step that was never saved.
    with (run / "metrics.jsonl").open("a") as fh:
        fh.write(json.dumps({"step": 3, "reward": 0.0}) + "\n")
    result = train(task, TrainOptions(run_dir=run, max_steps=4, resume=True, no_gate_reason="resume test", progress=False, eval_every=0))
    assert result.steps == 4
    steps = [x["step"] for x in lines(run / "metrics.jsonl") if "reward" in x]
    assert steps == [1, 2, 3, 4]
    assert json.loads((run / "metrics.replaced.jsonl").read_text().splitlines()[0])["step"] == 3
    assert json.loads((run / "run.json").read_text())["resumed_from"].endswith("checkpoint-2")


def test_resume_without_checkpoints_is_a_clear_error(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    with pytest.raises(RunError, match="nothing to resume"):
        train(task, TrainOptions(run_dir=tmp_path / "run", resume=True, no_gate_reason="test", progress=False))


def test_recipe_validation_runs_before_anything_loads(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task", extra={"grpo": {"num_generations": 4, "per_device_train_batch_size": 6, "gradient_accumulation_steps": 1, "beta": 0.0}}))
    with pytest.raises(ConfigError) as info:
        train(task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="test", progress=False))
    text = str(info.value)
    assert "below the recipe's floor" in text and "not divisible by num_generations" in text
    assert not (tmp_path / "run").exists()


def test_a_written_justification_lets_a_small_group_through(tmp_path: Path) -> None:
    grpo = {"num_generations": 4, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "beta": 0.0, "justify": {"num_generations": "tiny smoke test"}}
    task = load_task(make_task(tmp_path / "task", shaping=True, extra={"grpo": grpo}))
    train(task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="test", progress=False, eval_every=0))
    cfg = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert cfg["grpo"]["num_generations"] == 4
    assert cfg["rlvr"]["justification"] == {"num_generations": "tiny smoke test"}


def test_lora_trains_an_adapter_and_saves_a_merged_model(tmp_path: Path) -> None:
    import torch

    from rlvr.models import load_model

    task = load_task(make_task(tmp_path / "task", shaping=True))
    result = train(task, TrainOptions(run_dir=tmp_path / "run", max_steps=2, no_gate_reason="lora test", progress=False, eval_every=2, peft="lora"))
    final = result.final_dir
    assert (final / "adapter" / "adapter_config.json").exists()
    merged, base = load_model(str(final)), load_model("builtin:tiny")
    changed = {n for (n, a), (_, b) in zip(merged.named_parameters(), base.named_parameters(), strict=True) if not torch.equal(a, b)}
    assert changed and all("proj" in n for n in changed)  # only LoRA-wrapped linear layers moved
    cfg = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert cfg["rlvr"]["peft"]["method"] == "lora" and cfg["rlvr"]["peft"]["r"] == 16


def test_qlora_on_cpu_is_refused_with_the_reason(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    with pytest.raises(ConfigError, match="CUDA GPU"):
        train(task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="test", progress=False, peft="qlora"))


def test_a_plan_that_chose_lora_is_trained_with_lora(tmp_path: Path) -> None:
    from rlvr.recipe import ConfigMeta, write_config

    task = load_task(make_task(tmp_path / "task", shaping=True))
    grpo, _ = read_config_file(_write_run_config(tmp_path, task))
    plan = write_config(tmp_path / "plan.yaml", grpo, ConfigMeta(peft="lora"))
    train(task, TrainOptions(run_dir=tmp_path / "run", config_path=plan, max_steps=1, no_gate_reason="plan test", progress=False, eval_every=0))
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["rlvr"]["peft"]["method"] == "lora"


def _write_run_config(tmp_path: Path, task) -> Path:
    """The grpo values a CPU run of ``task`` resolves to, as a flat config."""
    from rlvr import recipe
    from rlvr.train import resolve_grpo

    cfg = resolve_grpo(task, TrainOptions(run_dir=tmp_path / "x"), recipe.hardware())
    cfg.pop("output_dir")
    path = tmp_path / "resolved.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path
