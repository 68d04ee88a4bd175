"""Recipe, variant overlays, validation against the installed TRL, and config files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlvr.errors import ConfigError
from rlvr.settings import check as validate
from rlvr.settings import file as runconfig
from rlvr.settings import recipe, resolve
from rlvr.settings.file import ConfigMeta
from rlvr.settings.layers import variant_of
from rlvr.settings.recipe import ModelFacts, Target
from support.tasks import task_values

CPU = {"gpus": 0, "bf16": False}
ONE_GPU = {"gpus": 1, "bf16": True, "vllm": True}
GEN = {"temperature": 0.7, "max_completion_length": 256}


def problems_at(cfg, **kw):
    kw.setdefault("target", Target())
    kw.setdefault("installed_trl", "1.16.0")
    return {p.where for p in validate.validate(cfg, **kw)}


def test_resolve_keeps_every_recipe_value_when_the_task_sets_nothing():
    cfg = resolve(task_values({}, {}), hw=CPU).grpo
    for key, value in recipe.RECIPE.items():
        assert cfg[key] == value, key
    assert cfg["use_cpu"] is True and cfg["bf16"] is False


def test_resolve_states_every_explicit_key():
    cfg = resolve(task_values({}, GEN), hw=ONE_GPU).grpo
    assert set(recipe.EXPLICIT_KEYS) <= set(cfg)


def test_one_gpu_colocates_vllm_and_several_use_a_server():
    assert resolve(task_values({}, GEN), hw=ONE_GPU).grpo["vllm_mode"] == "colocate"
    assert resolve(task_values({}, GEN), hw={**ONE_GPU, "gpus": 4}).grpo["vllm_mode"] == "server"


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        (
            "grpo",
            {
                "loss_type": "grpo",
                "scale_rewards": "group",
                "beta": 0.01,
                "learning_rate": 5e-7,
                "num_generations": 8,
                "per_device_train_batch_size": 8,
                "gradient_accumulation_steps": 4,
                "seed": 3407,
            },
        ),
        (
            "dapo",
            {
                "loss_type": "dapo",
                "epsilon": 0.2,
                "epsilon_high": 0.28,
                "beta": 0.0,
                "mask_truncated_completions": True,
            },
        ),
        ("dr_grpo", {"loss_type": "dr_grpo", "scale_rewards": "none"}),
        (
            "gspo",
            {
                "importance_sampling_level": "sequence",
                "epsilon": 3e-4,
                "epsilon_high": 4e-4,
                "beta": 0.0,
                "steps_per_generation": 16,
            },
        ),
    ],
)
def test_each_variant_sets_the_values_of_its_paper(variant, expected):
    cfg = resolve(task_values({}, GEN), hw=ONE_GPU, variant=variant).grpo
    assert {k: cfg[k] for k in expected} == expected


def test_gspo_generates_for_more_steps_than_it_accumulates():
    cfg = resolve(task_values({"gradient_accumulation_steps": 2}, GEN), hw=ONE_GPU, variant="gspo").grpo
    assert cfg["steps_per_generation"] == 8 > cfg["gradient_accumulation_steps"]


def test_task_override_wins_over_the_variant():
    cfg = resolve(task_values({"beta": 0.02}, GEN), hw=ONE_GPU, variant="dapo").grpo
    assert cfg["beta"] == 0.02 and cfg["loss_type"] == "dapo"


def test_justify_and_reward_weights_are_not_grpo_values():
    grpo = {"num_generations": 4, "justify": {"num_generations": "tiny model"}, "reward_weights": [1, 1]}
    settings = resolve(task_values(grpo, GEN), hw=CPU)
    assert "justify" not in settings.grpo and "reward_weights" not in settings.grpo
    assert settings.justified == {"num_generations": "tiny model"}


def test_unknown_variant_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown variant"):
        resolve(task_values({}, GEN), hw=CPU, variant="ppo")


def test_resolved_recipe_is_valid_against_the_installed_trl():
    cfg = resolve(task_values({}, GEN), hw=CPU).grpo
    assert validate.validate(cfg, target=Target()) == []


def test_unknown_key_is_flagged_with_the_closest_real_field():
    cfg = {**resolve(task_values({}, GEN), hw=CPU).grpo, "learning_rat": 1e-6}
    found = [p for p in validate.validate(cfg, target=Target(), installed_trl="1.16.0") if p.where == "learning_rat"]
    assert len(found) == 1 and "'learning_rate'" in found[0].fix


def test_unknown_keys_use_trl_field_names_not_a_copy():
    assert "vllm_importance_sampling_correction" in validate.grpo_fields()  # a field added in TRL 0.23
    assert "max_prompt_length" not in validate.grpo_fields()  # removed from TRL's GRPOConfig


def test_trl_version_outside_the_tested_range_is_flagged():
    cfg = resolve(task_values({}, GEN), hw=CPU).grpo
    assert "trl" in problems_at(cfg, installed_trl="1.20.0")
    assert "trl" in problems_at(cfg, installed_trl="0.23.1")
    assert "trl" not in problems_at(cfg, installed_trl="1.16.2")


def test_num_generations_below_eight_needs_a_justification():
    cfg = resolve(task_values({"num_generations": 4}, GEN), hw=CPU).grpo
    assert "num_generations" in problems_at(cfg)
    assert "num_generations" not in problems_at(
        cfg, justified={"num_generations": "answers are one token; groups of 4 rarely tie"}
    )


def test_a_blank_justification_is_not_a_justification():
    cfg = resolve(task_values({"num_generations": 4}, GEN), hw=CPU).grpo
    assert "num_generations" in problems_at(cfg, justified={"num_generations": "  "})


def test_one_generation_is_refused_even_with_a_justification():
    cfg = resolve(task_values({"num_generations": 1}, GEN), hw=CPU).grpo
    assert "num_generations" in problems_at(cfg, justified={"num_generations": "because"})


def test_generation_batch_must_hold_whole_prompt_groups():
    cfg = resolve(task_values({"per_device_train_batch_size": 2, "gradient_accumulation_steps": 3}, GEN), hw=CPU).grpo
    assert "num_generations" in problems_at(cfg)  # 2 x 1 x 3 = 6 is not a multiple of 8


def test_generation_batch_must_divide_by_the_global_batch():
    cfg = resolve(task_values({"generation_batch_size": 20}, GEN), hw=CPU).grpo
    assert "generation_batch_size" in problems_at(cfg)


def test_the_process_count_enters_the_batch_arithmetic():
    cfg = resolve(
        task_values({"per_device_train_batch_size": 4, "gradient_accumulation_steps": 1}, GEN),
        hw={**ONE_GPU, "gpus": 2},
    ).grpo
    cfg["vllm_server_host"] = "127.0.0.1"
    assert "num_generations" in problems_at(cfg, target=Target(gpus=1, bf16=True))  # 4 x 1 process
    assert "num_generations" not in problems_at(cfg, target=Target(gpus=3, bf16=True, server_gpus=1))  # 4 x 2 processes


def test_generation_batch_and_steps_per_generation_cannot_both_be_set():
    cfg = resolve(task_values({"generation_batch_size": 64, "steps_per_generation": 2}, GEN), hw=CPU).grpo
    assert "generation_batch_size" in problems_at(cfg)


def test_eval_batch_must_divide_by_eval_generations():
    cfg = resolve(task_values({"eval_strategy": "steps", "per_device_eval_batch_size": 6}, GEN), hw=CPU).grpo
    assert "per_device_eval_batch_size" in problems_at(cfg)
    assert "per_device_eval_batch_size" not in problems_at({**cfg, "num_generations_eval": 3})


def test_bf16_on_hardware_without_it_is_flagged():
    cfg = resolve(task_values({}, GEN), hw=ONE_GPU).grpo
    assert "bf16" in problems_at(cfg, target=Target(gpus=1, bf16=False))
    assert "bf16" not in problems_at(cfg, target=Target(gpus=1, bf16=True))


def test_vllm_on_a_machine_without_gpus_is_flagged():
    cfg = {**resolve(task_values({}, GEN), hw=CPU).grpo, "use_vllm": True}
    assert "use_vllm" in problems_at(cfg, target=Target(gpus=0))


def test_server_mode_on_one_gpu_is_flagged():
    cfg = {**resolve(task_values({}, GEN), hw=ONE_GPU).grpo, "vllm_mode": "server", "vllm_server_host": "127.0.0.1"}
    assert "vllm_mode" in problems_at(cfg, target=Target(gpus=1, bf16=True))


def test_server_mode_on_one_gpu_is_fine_with_a_remote_server():
    cfg = {
        **resolve(task_values({}, GEN), hw=ONE_GPU).grpo,
        "vllm_mode": "server",
        "vllm_server_base_url": "http://gen-node:8000",
    }
    assert "vllm_mode" not in problems_at(cfg, target=Target(gpus=1, bf16=True))


def test_server_mode_without_an_address_is_flagged():
    cfg = resolve(task_values({}, GEN), hw={**ONE_GPU, "gpus": 4}).grpo
    assert "vllm_server_host" in problems_at(cfg, target=Target(gpus=4, bf16=True, server_gpus=1))
    cfg["vllm_server_host"] = "127.0.0.1"
    assert "vllm_server_host" not in problems_at(cfg, target=Target(gpus=4, bf16=True, server_gpus=1))


def test_beta_with_a_model_trl_cannot_rebuild_is_flagged():
    cfg = resolve(task_values({}, GEN), hw=CPU).grpo
    facts = ModelFacts("conf/config.json", rebuildable=False, why_not_rebuildable="it is a config file")
    assert "beta" in problems_at(cfg, model=facts)
    assert "beta" not in problems_at(cfg, model=facts, peft="lora")  # the reference is the adapter-disabled model
    assert "beta" not in problems_at({**cfg, "beta": 0.0}, model=facts)


def test_mixture_of_experts_refuses_token_level_ratios():
    moe = ModelFacts("Qwen3-30B-A3B", moe=True)
    cfg = resolve(task_values({}, GEN), hw=CPU).grpo
    assert "importance_sampling_level" in problems_at(cfg, model=moe)
    assert "importance_sampling_level" not in problems_at(
        cfg, model=moe, forced_variant_reason="replaying routes in a fork"
    )
    gspo = resolve(task_values({}, GEN), hw=CPU, variant="gspo").grpo
    assert "importance_sampling_level" not in problems_at(gspo, model=moe)


def test_sequence_level_ratios_fully_on_policy_are_flagged():
    cfg = resolve(task_values({"steps_per_generation": 4}, GEN), hw=CPU, variant="gspo").grpo
    assert "steps_per_generation" in problems_at(cfg)


def test_enumerations_trl_checks_only_at_the_first_step_are_checked_now():
    cfg = {
        **resolve(task_values({}, GEN), hw=CPU).grpo,
        "loss_type": "nope",
        "scale_rewards": "std",
        "importance_sampling_level": "seq",
    }
    assert {"loss_type", "scale_rewards", "importance_sampling_level"} <= problems_at(cfg)


def test_every_problem_is_reported_at_once():
    cfg = {
        **resolve(task_values({"num_generations": 4, "per_device_train_batch_size": 6}, GEN), hw=ONE_GPU).grpo,
        "lerning_rate": 1.0,
        "vllm_mode": "server",
        "loss_type": "ppo",
    }
    with pytest.raises(ConfigError) as err:
        validate.check(cfg, target=Target(gpus=1, bf16=False), installed_trl="2.0.0")
    where = {p.where for p in err.value.problems}
    assert {"lerning_rate", "trl", "num_generations", "bf16", "vllm_mode", "vllm_server_host", "loss_type"} <= where
    assert all(p.fix for p in err.value.problems)  # each says how to fix it
    assert str(err.value).count("\n  - ") == len(err.value.problems)


def test_flat_config_round_trips_values_and_justifications(tmp_path: Path):
    cfg = resolve(task_values({"num_generations": 4}, GEN), hw=CPU, variant="dapo").grpo
    meta = ConfigMeta(
        variant="dapo", justifications={"num_generations": "short answers"}, task="t.yaml", model="builtin:tiny"
    )
    path = runconfig.write_config(tmp_path / "plan.yaml", cfg, meta, header="a plan\nline two")
    grpo, back = runconfig.read_config(path)
    assert grpo == cfg
    assert (
        back.variant == "dapo"
        and back.justifications == {"num_generations": "short answers"}
        and back.model == "builtin:tiny"
    )
    assert path.read_text().startswith("# a plan\n# line two\n")


def test_flat_config_has_only_keys_trls_parser_consumes(tmp_path: Path):
    """trl grpo --config hands every key it does not consume to accelerate launch, which fails."""
    from trl import GRPOConfig, ModelConfig, TrlParser
    from trl.scripts.grpo import GRPOScriptArguments
    from trl.scripts.utils import DatasetMixtureConfig

    cfg = resolve(task_values({}, GEN), hw={**ONE_GPU, "gpus": 4}, variant="gspo").grpo
    cfg["vllm_server_host"] = "127.0.0.1"
    path = runconfig.write_config(tmp_path / "plan.yaml", cfg, ConfigMeta(variant="gspo", justifications={"x": "y"}))
    raw = yaml.safe_load(path.read_text())
    raw.pop("env")  # TRL pops env: and exports it
    parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig, DatasetMixtureConfig))
    assert parser.set_defaults_with_config(**raw) == []


def test_cpu_flat_config_parses_into_a_grpo_config(tmp_path: Path, monkeypatch):
    from trl import GRPOConfig, TrlParser

    cfg = resolve(task_values({}, GEN), hw=CPU).grpo
    path = runconfig.write_config(tmp_path / "plan.yaml", cfg, ConfigMeta(justifications={"num_generations": "r"}))
    monkeypatch.delenv("RLVR_JUSTIFY_NUM_GENERATIONS", raising=False)
    (args,) = TrlParser((GRPOConfig,)).parse_args_and_config(
        ["--config", str(path), "--output_dir", str(tmp_path / "out")]
    )
    assert (args.loss_type, args.beta, args.learning_rate, args.num_generations, args.seed) == (
        "grpo",
        0.01,
        5e-7,
        8,
        3407,
    )
    import os

    assert os.environ.pop("RLVR_JUSTIFY_NUM_GENERATIONS") == "r"  # TRL exported rlvr's record and ignored it


def test_read_config_reads_a_run_directorys_config(tmp_path: Path):
    path = tmp_path / "config.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "grpo": {"loss_type": "dr_grpo", "beta": 0.0},
                "rlvr": {"variant": "dr_grpo", "justification": {"num_generations": "r"}},
            }
        )
    )
    grpo, meta = runconfig.read_config(path)
    assert (
        grpo == {"loss_type": "dr_grpo", "beta": 0.0}
        and meta.variant == "dr_grpo"
        and meta.justifications == {"num_generations": "r"}
    )


def test_read_config_names_the_file_when_it_is_not_a_mapping(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="bad.yaml"):
        runconfig.read_config(path)


def test_write_config_leaves_the_old_plan_when_the_new_one_cannot_be_serialised(tmp_path: Path):
    path = runconfig.write_config(tmp_path / "plan.yaml", {"beta": 0.0}, ConfigMeta())
    before = path.read_text()
    with pytest.raises(Exception):  # noqa: B017 - yaml's RepresenterError
        runconfig.write_config(path, {"beta": object()}, ConfigMeta())
    assert path.read_text() == before


def test_variant_of_reads_the_loss_not_the_label():
    assert variant_of({"loss_type": "grpo", "importance_sampling_level": "sequence"}) == "gspo"
    assert variant_of({"loss_type": "dr_grpo"}) == "dr_grpo"


def test_dapo_term_patch_builds_with_the_builtin_overlong_verifier():
    from rlvr.rewards import AnswerFormat, build_verifier

    cfg = resolve(task_values({}, {"max_completion_length": 400}), hw=CPU, variant="dapo").grpo
    (term,) = recipe.term_patch("dapo", cfg, present={"format", "exact"})
    assert term["options"] == {"max_completion_length": 400, "cache": 100}
    verifier = build_verifier(term["verifier"], term["options"], AnswerFormat(), search=None)
    assert verifier.kind == "length"
    assert (
        recipe.term_patch("dapo", cfg, present={"overlong"}) == []
        and recipe.term_patch("grpo", cfg, present=set()) == []
    )


def test_dynamic_sampling_is_rlvrs_option_not_a_grpo_config_value() -> None:
    cfg = resolve(task_values({"dynamic": {"mode": "resample"}, "learning_rate": 1e-4}, GEN), hw=CPU).grpo
    assert "dynamic" not in cfg and cfg["learning_rate"] == 1e-4
    assert not validate.validate(cfg, target=Target(), known_fields=set(cfg), installed_trl="1.16.0")


def test_the_dapo_overlay_turns_dynamic_sampling_on_and_plain_grpo_leaves_it_off() -> None:
    for variant, mode in (("dapo", "filter"), ("grpo", "off"), ("dr_grpo", "off")):
        settings = resolve(task_values({}, GEN), hw=CPU, variant=variant)
        assert settings.dynamic.mode == mode, variant
        assert settings.origin["dynamic.mode"] == ("variant" if variant == "dapo" else "recipe")
