"""What ``rlvr train`` resolves before anything loads: every value layered once (the task < the
config file < ``--set`` < the command's own flags), each named by the layer it came from."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlvr.errors import ConfigError
from rlvr.task import load_task
from rlvr.train import TrainOptions, layered_settings

ARITH = Path(__file__).resolve().parents[2] / "examples" / "arithmetic"
CPU = {"gpus": 0, "bf16": False}


def config_file(tmp_path: Path, body: dict) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def test_train_layers_the_task_then_the_config_file_then_set_then_its_flags(tmp_path: Path) -> None:
    env = {"RLVR_STOP_MASKED_STEPS": "9", "RLVR_JUSTIFY_BETA": "from the file"}
    file = config_file(tmp_path, {"learning_rate": 2e-4, "beta": 0.5, "max_steps": 3, "env": env})
    sets = {"learning_rate": 3e-4, "max_steps": 4}
    opts = TrainOptions(run_dir=tmp_path / "run", config_path=file, overrides=sets, max_steps=2)
    s = layered_settings(load_task(ARITH), opts, CPU)
    assert (s.grpo["learning_rate"], s.origin["learning_rate"]) == (3e-4, "--set")
    assert (s.grpo["beta"], s.origin["beta"]) == (0.5, "config file")
    assert (s.grpo["warmup_steps"], s.origin["warmup_steps"]) == (5, "task")
    assert (s.grpo["max_steps"], s.origin["max_steps"]) == (2, "rlvr train")
    assert s.origin["loss_type"] == "recipe" and s.origin["output_dir"] == "rlvr train"
    assert (s.stop.masked_steps, s.origin["stop.masked_steps"]) == (9, "config file")
    assert s.justified == {"beta": "from the file"}


def test_without_a_file_or_flags_the_task_and_rlvrs_defaults_remain(tmp_path: Path) -> None:
    s = layered_settings(load_task(ARITH), TrainOptions(run_dir=tmp_path / "run"), CPU)
    assert (s.grpo["learning_rate"], s.origin["learning_rate"]) == (1e-4, "task")
    assert (s.grpo["max_steps"], s.origin["max_steps"]) == (-1, "rlvr default")


def test_a_bad_stop_rule_in_a_config_file_names_the_file(tmp_path: Path) -> None:
    file = config_file(tmp_path, {"grpo": {}, "rlvr": {"stop": {"masked_steps": -1}}})
    with pytest.raises(ConfigError, match=f"{file}: stop.masked_steps: must be a whole number"):
        layered_settings(load_task(ARITH), TrainOptions(run_dir=tmp_path / "run", config_path=file), CPU)
