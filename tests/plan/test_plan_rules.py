"""A plan file states the stop rules and dynamic sampling the run will apply, and rlvr train
--config reads them back as written."""

from __future__ import annotations

from pathlib import Path

import yaml

from rlvr.plan.build import PlanRequest, build_plan, write_plan
from rlvr.settings import Settings, recipe
from rlvr.settings.file import RunConfig
from rlvr.task import load_task
from rlvr.train import TrainOptions, layered_settings

ROOT = Path(__file__).resolve().parents[2]


def task_with(tmp_path: Path, grpo: dict) -> Path:
    raw = yaml.safe_load((ROOT / "examples" / "arithmetic" / "task.yaml").read_text())
    raw["grpo"] = {**raw.get("grpo", {}), **grpo}
    for split in ("train", "eval"):
        raw["data"][split] = str(ROOT / "examples" / "arithmetic" / f"{split}.jsonl")
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def plan_file(tmp_path: Path, grpo: dict, variant: str = "grpo") -> tuple[str, RunConfig]:
    out = tmp_path / "plan.yaml"
    plan = build_plan(PlanRequest(task=str(task_with(tmp_path, grpo)), gpus=1, variant=variant, output=str(out)))
    write_plan(plan, out)
    return out.read_text(), RunConfig.read(out)


def as_trained(tmp_path: Path) -> Settings:
    """What rlvr train --config resolves from the plan file over the task (on one GPU)."""
    opts = TrainOptions(run_dir=tmp_path / "run", config_path=tmp_path / "plan.yaml")
    return layered_settings(load_task(tmp_path / "task.yaml"), opts, {"gpus": 1, "bf16": True, "vllm": True})


def test_plan_states_every_stop_rule_and_that_dynamic_sampling_is_off(tmp_path: Path) -> None:
    text, cfg = plan_file(tmp_path, {})
    assert cfg.stop == recipe.STOP
    assert as_trained(tmp_path).stop == recipe.StopRules()
    assert "# stop rules" in text and "dynamic sampling: off" in text
    assert all(f"RLVR_STOP_{k.upper()}" in text for k in recipe.STOP)


def test_plan_carries_the_tasks_stop_rules_and_dynamic_sampling(tmp_path: Path) -> None:
    text, cfg = plan_file(tmp_path, {"stop": {"zero_std_steps": 40}, "dynamic": {"mode": "filter", "visits": 3}})
    assert cfg.stop["zero_std_steps"] == 40 and cfg.stop["masked_rate"] == recipe.STOP["masked_rate"]
    assert cfg.dynamic == {**recipe.DYNAMIC, "mode": "filter", "visits": 3}
    trained = as_trained(tmp_path)
    assert trained.dynamic.visits == 3 and trained.origin["dynamic.visits"] == "config file"
    assert "dynamic sampling: filter" in text
