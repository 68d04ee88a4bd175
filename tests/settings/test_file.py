"""One run config (rlvr.settings.file): both forms read by one reader, each key with one spelling."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlvr.errors import ConfigError
from rlvr.settings.file import ConfigMeta, RunConfig, read_config, write_config


def test_a_run_config_reads_back_what_it_wrote(tmp_path: Path) -> None:
    cfg = RunConfig(
        grpo={"learning_rate": 1e-3, "num_generations": 4},
        variant="grpo",
        justification={"num_generations": "short answers"},
        task="task.yaml",
        model="/models/m",
        model_arg="m",
        peft="lora",
        lora={"r": 16, "lora_alpha": 32},
        stop={"masked_steps": 3},
        dynamic={"mode": "filter"},
        record={"gate": {"status": "bypassed"}, "reward_terms": ["format", "correct"]},
        resolved={"learning_rate": 1e-3, "steps_per_generation": 4},
    )
    back = RunConfig.read(cfg.write(tmp_path / "config.yaml"))
    assert back == RunConfig(**{**cfg.__dict__, "source": str(tmp_path / "config.yaml")})


def test_the_peft_method_of_a_run_config_is_read_from_its_mapping(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"grpo": {"beta": 0.0}, "rlvr": {"peft": {"method": "lora", "r": 16}}}))
    cfg = RunConfig.read(path)
    assert (cfg.peft, dict(cfg.lora)) == ("lora", {"r": 16})


def test_the_old_spelling_justifications_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"grpo": {"beta": 0.0}, "rlvr": {"justifications": {"num_generations": "r"}}}))
    assert RunConfig.read(path).justification == {"num_generations": "r"}
    assert "justification" in RunConfig.read(path).rlvr_section()


def test_a_key_written_in_both_spellings_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    both = {"justifications": {"a": "x"}, "justification": {"a": "y"}}
    path.write_text(yaml.safe_dump({"grpo": {"beta": 0.0}, "rlvr": both}))
    with pytest.raises(ConfigError, match=r"config\.yaml: rlvr\.justifications"):
        RunConfig.read(path)


def test_dynamic_under_grpo_is_read_as_rlvrs_option_not_a_grpo_field(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"grpo": {"beta": 0.0, "dynamic": {"mode": "filter"}}, "rlvr": {}}))
    cfg = RunConfig.read(path)
    assert "dynamic" not in cfg.grpo and cfg.dynamic == {"mode": "filter"}


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"grpo": [1, 2]}, "field 'grpo' must be a mapping"),
        ({"grpo": {}, "rlvr": {"peft": 3}}, "rlvr.peft"),
        ({"grpo": {}, "rlvr": {"dynamic": "filter"}}, "rlvr.dynamic"),
        ({"grpo": {}, "rlvr": {"model": ["a"]}}, "rlvr.model"),
        ({"env": ["RLVR_VARIANT"], "beta": 0.0}, "env"),
    ],
)
def test_a_malformed_config_names_the_file_and_the_key(tmp_path: Path, body: dict, where: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(body))
    with pytest.raises(ConfigError, match=rf"config\.yaml: {where}"):
        RunConfig.read(path)


def test_a_flat_plan_reads_its_env_record(tmp_path: Path) -> None:
    meta = ConfigMeta(variant="dapo", justifications={"num_generations": "r"}, model="m", peft="lora")
    path = write_config(tmp_path / "plan.yaml", {"loss_type": "dapo", "beta": 0.0}, meta)
    text = path.read_text().replace("env:\n", "env:\n  RLVR_STOP_MASKED_STEPS: '3'\n")
    path.write_text(text)
    cfg = RunConfig.read(path)
    assert cfg.flat and cfg.peft == "lora" and cfg.stop == {"masked_steps": 3} and cfg.variant == "dapo"
    assert read_config(path) == ({"loss_type": "dapo", "beta": 0.0}, meta)
