"""Memory planner: checked against published model sizes, Unsloth's GRPO figures and the worked
table in the prior-art note, and against parameter counts of models built locally."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rlvr.cli.main import main
from rlvr.errors import ConfigError, ModelError
from rlvr.plan import architecture, memory
from rlvr.plan.architecture import SIZE_CLASSES, Architecture
from rlvr.plan.memory import GB, Setting

QWEN3_8B = Architecture(
    "Qwen3-8B",
    layers=36,
    hidden=4096,
    heads=32,
    kv_heads=8,
    head_dim=128,
    intermediate=12288,
    vocab=151936,
    qk_norm=True,
)


def test_llama31_8b_kv_cache_at_20k_tokens_is_about_2_5_gb():
    # Unsloth's GRPO breakdown for Llama-3.1-8B at 20K context: KV cache 2.5 GB.
    kv = memory.kv_bytes(SIZE_CLASSES["8B"], 20_000) / GB
    assert 2.4 <= kv <= 2.7


def test_llama31_8b_grpo_logits_at_20k_context_match_unsloths_trl_figure():
    # Unsloth: TRL's GRPO logits for Llama-3.1-8B, 8 generations x 20K tokens: 78.3 GB.
    s = Setting(per_device_batch=8, prompt_tokens=0, completion_tokens=20_000)
    assert memory.logits_bytes(SIZE_CLASSES["8B"], s) / GB == pytest.approx(78.3, rel=0.06)


def test_llama31_8b_inference_weights_match_unsloths_16_gb():
    assert 2 * SIZE_CLASSES["8B"].params / GB == pytest.approx(16, rel=0.02)


@pytest.mark.parametrize(
    ("cls", "published_b"),
    [
        ("0.5B", 0.49),
        ("1.5B", 1.54),
        ("3B", 3.09),
        ("7B", 7.61),
        ("8B", 8.03),
        ("14B", 14.7),
        ("32B", 32.5),
        ("70B", 70.6),
        ("30B-A3B", 30.5),
    ],
)
def test_size_class_parameter_counts_match_the_model_cards(cls, published_b):
    assert SIZE_CLASSES[cls].params / 1e9 == pytest.approx(published_b, rel=0.01)


def test_moe_active_parameters_match_the_model_card():
    a = SIZE_CLASSES["30B-A3B"]
    assert a.moe and a.active_params / 1e9 == pytest.approx(3.3, rel=0.02)


# The note's worked table (prior-art-variants.md section 4): full FT 16 B/p, +copy 2 B/p, KV
# KiB/token, fp32 logits and checkpointed activations at 16,384 tokens.
WORKED = {
    "0.5B": (8, 1.0, 12, 10.0, 0.7),
    "1.5B": (25, 3.1, 28, 10.0, 1.4),
    "3B": (49, 6.2, 36, 10.0, 2.4),
    "7B": (122, 15.2, 56, 10.0, 3.3),
    "14B": (236, 29.5, 192, 10.0, 8.1),
    "32B": (524, 65.5, 256, 10.0, 10.7),
    "70B": (1129, 141, 320, 8.4, 21.5),
}


@pytest.mark.parametrize("cls", sorted(WORKED))
def test_size_class_table_matches_the_worked_table(cls):
    full, copy, kv, logits, acts = WORKED[cls]
    row = next(r for r in memory.table() if r.size_class == cls)
    assert row.full_ft_gb == pytest.approx(full, rel=0.03)
    assert row.copy_gb == pytest.approx(copy, rel=0.03)
    assert row.kv_kib_per_token == kv
    assert row.logits_gb == pytest.approx(logits, rel=0.03)
    assert row.activations_gb == pytest.approx(acts, rel=0.1)


def test_qwen3_8b_row_of_the_worked_table():
    assert QWEN3_8B.kv_bytes_per_token == 144 * 1024
    assert 16 * QWEN3_8B.params / GB == pytest.approx(131, rel=0.02)


def test_qlora_keeps_embeddings_in_bf16():
    a = SIZE_CLASSES["0.5B"]  # 136 M of its 494 M parameters are the (tied) embedding
    q = memory.policy_bytes(a, Setting(peft="qlora"))["weights"]
    assert q == pytest.approx(0.52 * (a.params - a.embedding_params) + 2 * a.embedding_params)


@pytest.mark.parametrize("build", ["qwen2", "llama", "qwen3", "qwen3_moe", "mixtral"])
def test_parameter_count_from_config_matches_a_model_built_from_it(build):
    import transformers

    kw = dict(
        vocab_size=300,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
    )
    configs = {
        "qwen2": lambda: transformers.Qwen2Config(tie_word_embeddings=True, **kw),
        "llama": lambda: transformers.LlamaConfig(**kw),
        "qwen3": lambda: transformers.Qwen3Config(**kw),
        "qwen3_moe": lambda: transformers.Qwen3MoeConfig(
            num_experts=8, num_experts_per_tok=2, moe_intermediate_size=48, **kw
        ),
        "mixtral": lambda: transformers.MixtralConfig(num_local_experts=4, num_experts_per_tok=2, **kw),
    }
    config = configs[build]()
    model = transformers.AutoModelForCausalLM.from_config(config)
    arch = Architecture.from_config(config.to_dict())
    assert arch.params == sum(p.numel() for p in model.parameters())
    assert arch.moe == (build in ("qwen3_moe", "mixtral"))


def test_builtin_tiny_architecture_is_read_from_its_saved_config():
    from rlvr.models import load_model

    arch = architecture.load_architecture("builtin:tiny")
    assert arch.params == sum(p.numel() for p in load_model("builtin:tiny").parameters())


def test_zero3_divides_the_full_fine_tuning_state_by_the_gpus():
    a = SIZE_CLASSES["7B"]
    one = sum(memory.policy_bytes(a, Setting(gpus=1)).values())
    eight = sum(memory.policy_bytes(a, Setting(gpus=8, zero=3)).values())
    assert one == pytest.approx(16 * a.params) and eight == pytest.approx(one / 8)


def test_zero2_shards_gradients_and_optimizer_but_not_weights():
    parts = memory.policy_bytes(SIZE_CLASSES["7B"], Setting(gpus=4, zero=2))
    p = SIZE_CLASSES["7B"].params
    assert parts == pytest.approx({"weights": 2 * p, "gradients": 2 * p / 4, "optimizer": 12 * p / 4})


def test_reference_model_costs_nothing_with_peft_or_beta_zero():
    a = SIZE_CLASSES["7B"]
    assert memory.reference_bytes(a, Setting(beta=0.01)) == 2 * a.params
    assert memory.reference_bytes(a, Setting(beta=0.01, peft="lora")) == 0
    assert memory.reference_bytes(a, Setting(beta=0.0)) == 0


def test_sleep_mode_peak_is_the_larger_phase_not_the_sum():
    a = SIZE_CLASSES["3B"]
    s = Setting(gpu_memory_gb=80, vllm_util=0.3, per_device_batch=8, completion_tokens=1024)
    awake, asleep = memory.estimate(a, s), memory.estimate(a, replace(s, sleep_mode=True))
    assert asleep.peak < awake.peak
    assert awake.peak == pytest.approx(sum(awake.parts.values()))


def test_vllm_share_too_small_for_its_weights_does_not_fit():
    e = memory.estimate(SIZE_CLASSES["32B"], Setting(gpu_memory_gb=80, vllm_util=0.3, peft="qlora"))
    assert not e.fits and any("cannot hold its bf16 weights" in n for n in e.notes)


def test_small_model_gets_full_fine_tuning_with_vllm_colocated_on_one_gpu():
    rec = memory.recommend(SIZE_CLASSES["0.5B"], Setting(gpus=1, gpu_memory_gb=80, completion_tokens=1024))
    assert rec.fits and rec.estimate.setting.peft == "none" and rec.estimate.setting.vllm == "colocate"
    assert rec.config_patch()["vllm_gpu_memory_utilization"] == 0.3


def test_7b_on_one_80gb_gpu_falls_back_to_lora():
    rec = memory.recommend(SIZE_CLASSES["7B"], Setting(gpus=1, gpu_memory_gb=80, completion_tokens=1024))
    assert rec.fits and rec.estimate.setting.peft == "lora"
    assert rec.estimate.peak <= 0.9 * 80 * GB


def test_7b_full_fine_tuning_fits_eight_gpus_with_a_vllm_server():
    rec = memory.recommend(SIZE_CLASSES["7B"], Setting(gpus=8, gpu_memory_gb=80, completion_tokens=1024))
    s = rec.estimate.setting
    assert s.peft == "none" and s.vllm == "server" and s.server_gpus >= 1 and s.zero in (2, 3)


def test_nothing_fits_says_why():
    rec = memory.recommend(SIZE_CLASSES["70B"], Setting(gpus=1, gpu_memory_gb=24))
    assert not rec.fits and "nothing fits 1 x 24 GB" in rec.reason and "largest part" in rec.reason
    with pytest.raises(memory.PlanError):
        memory.fits_or_raise(rec)


def test_fixed_peft_is_respected():
    rec = memory.recommend(SIZE_CLASSES["0.5B"], Setting(peft="qlora"), fixed_peft=True)
    assert rec.estimate.setting.peft == "qlora"


def test_config_missing_fields_lists_every_one():
    with pytest.raises(ConfigError) as err:
        Architecture.from_config({"hidden_size": 64})
    assert {p.where for p in err.value.problems} == {
        "config.num_hidden_layers",
        "config.num_attention_heads",
        "config.vocab_size",
    }


def test_load_architecture_reads_a_config_file_and_a_folder(tmp_path: Path):
    cfg = {
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert architecture.load_architecture(str(tmp_path / "config.json")).params == SIZE_CLASSES["8B"].params
    assert architecture.load_architecture(str(tmp_path)).kv_bytes_per_token == 128 * 1024


def test_load_architecture_accepts_class_model_name_and_hub_id():
    assert (
        architecture.load_architecture("7b")
        is architecture.load_architecture("Qwen2.5-7B")
        is architecture.load_architecture("Qwen/Qwen2.5-7B")
    )


def test_unknown_model_names_the_size_classes():
    with pytest.raises(ModelError, match="size class"):
        architecture.load_architecture("no such model (not a hub id)")


# -- CLI ---------------------------------------------------------------------------------------
def test_memory_help_works(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["memory", "--help"])
    assert exc.value.code == 0 and "--gpu-memory" in capsys.readouterr().out


def test_memory_without_a_model_prints_the_size_class_table(capsys):
    assert main(["memory"]) == 0
    out = capsys.readouterr().out
    for cls in ("0.5B", "1.5B", "3B", "7B", "8B", "14B", "32B", "70B"):
        assert f"\n{cls} " in out


def test_memory_recommends_a_setting(capsys):
    assert main(["memory", "8B", "--gpus", "1", "--gpu-memory", "80"]) == 0
    out = capsys.readouterr().out
    assert "fits" in out and "vllm_gpu_memory_utilization=" in out


def test_memory_json_reports_nothing_fits_with_exit_1(capsys):
    assert main(["memory", "70B", "--gpus", "1", "--gpu-memory", "24", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is False and data["reason"].startswith("nothing fits")


def test_memory_bad_gpu_memory_is_one_line_and_nonzero(capsys):
    assert main(["memory", "7B", "--gpu-memory", "-3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--gpu-memory" in err


def test_memory_bad_argument_type_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["memory", "7B", "--gpus", "many"])
    assert exc.value.code == 2 and capsys.readouterr().err.count("\n") == 1


def test_memory_unknown_model_is_one_line(capsys):
    assert main(["memory", "no such model (not a hub id)"]) == 1
    assert capsys.readouterr().err.count("\n") == 1
