"""``rlvr plan``: a validated flat GRPOConfig YAML, memory and launch for the task and hardware."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rlvr.cli.main import main
from rlvr.errors import ConfigError, PlanError
from rlvr.plan.build import PlanRequest, build_plan
from rlvr.settings import check as validate
from rlvr.settings import file as runconfig
from rlvr.settings import recipe

ARITH = Path(__file__).resolve().parents[2] / "examples" / "arithmetic"


def make_task(tmp_path: Path, grpo: dict | None = None, model: str = "builtin:tiny") -> Path:
    """The arithmetic task with its data, and a different grpo: section."""
    raw = yaml.safe_load((ARITH / "task.yaml").read_text())
    raw["data"] = {"train": str(ARITH / "train.jsonl"), "eval": str(ARITH / "eval.jsonl")}
    raw["model"] = model
    if grpo is not None:
        raw["grpo"] = grpo
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_plan_help_works(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--help"])
    assert exc.value.code == 0 and "--variant" in capsys.readouterr().out


def test_plan_bad_variant_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plan", str(ARITH), "--variant", "ppo"])
    assert exc.value.code == 2 and capsys.readouterr().err.count("\n") == 1


def test_plan_missing_task_is_one_line_and_exit_2(tmp_path: Path, capsys):
    assert main(["plan", str(tmp_path / "nope.yaml"), "-o", str(tmp_path / "p.yaml")]) == 2
    err = capsys.readouterr().err
    assert "no such task file" in err and not (tmp_path / "p.yaml").exists()


def test_cpu_plan_of_the_builtin_task_is_valid_and_readable_back(tmp_path: Path, capsys):
    out = tmp_path / "plan.yaml"
    assert main(["plan", str(ARITH), "--gpus", "0", "-o", str(out)]) == 0
    grpo, meta = runconfig.read_config(out)
    assert grpo["use_cpu"] is True and grpo["bf16"] is False and grpo["use_vllm"] is False
    assert grpo["learning_rate"] == 1e-4  # the task's override survives
    assert meta.variant == "grpo" and meta.model == "builtin:tiny"
    assert validate.validate(grpo, target=recipe.Target()) == []
    assert "rlvr train" in capsys.readouterr().out


def printed_layers(text: str) -> dict[str, dict[str, str]]:
    """``rlvr plan``'s values by layer: {layer: {key: value as printed}}."""
    block = text.split("values by where each came from (a later layer wins):\n", 1)[1].split("\nmemory:", 1)[0]
    out = {}
    for line in block.splitlines():
        name, _, items = line.strip().partition(": ")
        if name == "justified":  # the written reasons follow the values
            break
        out[name] = dict(item.split("=", 1) for item in items.split(", "))
    return out


def test_plan_prints_each_value_once_under_the_layer_it_came_from(tmp_path: Path, capsys):
    task = make_task(tmp_path, {"learning_rate": 1e-4, "stop": {"masked_steps": 9}, "justify": {"beta": "why"}})
    assert (
        main(
            ["plan", str(task), "--gpus", "1", "--variant", "dapo", "--max-steps", "7", "-o", str(tmp_path / "p.yaml")]
        )
        == 0
    )
    layers = printed_layers(capsys.readouterr().out)
    assert layers["task"]["learning_rate"] == "0.0001" and layers["task"]["stop.masked_steps"] == "9"
    assert layers["--max-steps"] == {"max_steps": "7"}
    assert layers["variant"]["loss_type"] == "dapo" and layers["variant"]["dynamic.mode"] == "filter"
    assert layers["hardware"]["bf16"] == "True" and layers["recipe"]["stop.masked_rate"] == "0.5"
    assert "per_device_train_batch_size" in layers["memory fit"]
    printed = [key for values in layers.values() for key in values]
    settings = build_plan(PlanRequest(task=str(task), gpus=1, variant="dapo", max_steps=7)).settings
    assert sorted(printed) == sorted(settings.values())  # every value, each once
    assert all(settings.origin[key] == name for name, values in layers.items() for key in values)


def test_one_gpu_plan_colocates_vllm_in_bf16(tmp_path: Path):
    plan = build_plan(PlanRequest(task=str(ARITH), gpus=1, gpu_memory_gb=80, output=str(tmp_path / "p.yaml")))
    c = plan.config
    assert (c["bf16"], c["use_vllm"], c["vllm_mode"], c["gradient_checkpointing"]) == (True, True, "colocate", True)
    assert plan.launch.commands[0].startswith("rlvr train") and plan.estimate.fits


def test_eight_gpu_plan_writes_an_accelerate_file_and_the_server_command(tmp_path: Path, capsys):
    out = tmp_path / "plan.yaml"
    assert main(["plan", str(ARITH), "--model", "7B", "--gpus", "8", "--gpu-memory", "80", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "trl vllm-serve --model Qwen/Qwen2.5-7B" in text and "CUDA_VISIBLE_DEVICES=0 " in text
    assert "accelerate launch --config_file" in text and "-m rlvr.cli.main train" in text
    grpo, meta = runconfig.read_config(out)
    assert grpo["vllm_mode"] == "server" and grpo["vllm_server_host"] == "127.0.0.1" and meta.model == "Qwen/Qwen2.5-7B"
    acc = [p for p in tmp_path.glob("accelerate_*.yaml")]
    assert len(acc) == 1 and yaml.safe_load(acc[0].read_text())["num_processes"] == 7


def test_plan_refuses_plain_grpo_for_a_mixture_of_experts(tmp_path: Path):
    with pytest.raises(ConfigError) as err:
        build_plan(PlanRequest(task=str(ARITH), model="30B-A3B", gpus=8, output=str(tmp_path / "p.yaml")))
    assert "importance_sampling_level" in {p.where for p in err.value.problems}


def test_plan_accepts_gspo_for_a_mixture_of_experts(tmp_path: Path):
    plan = build_plan(
        PlanRequest(task=str(ARITH), model="30B-A3B", gpus=8, variant="gspo", output=str(tmp_path / "p.yaml"))
    )
    c = plan.config
    assert c["importance_sampling_level"] == "sequence" and c["steps_per_generation"] > c["gradient_accumulation_steps"]


def test_forced_variant_on_moe_stores_the_reason(tmp_path: Path):
    out = tmp_path / "p.yaml"
    assert (
        main(
            [
                "plan",
                str(ARITH),
                "--model",
                "30B-A3B",
                "--gpus",
                "8",
                "--force-variant",
                "routing replay in our fork",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert yaml.safe_load(out.read_text())["env"]["RLVR_FORCED_VARIANT"] == "routing replay in our fork"


def test_small_group_needs_a_justification_and_it_is_stored(tmp_path: Path, capsys):
    task = make_task(
        tmp_path, {"num_generations": 4, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1}
    )
    out = tmp_path / "p.yaml"
    assert main(["plan", str(task), "--gpus", "0", "-o", str(out)]) == 2
    assert "num_generations" in capsys.readouterr().err and not out.exists()
    assert (
        main(["plan", str(task), "--gpus", "0", "-o", str(out), "--justify", "num_generations=one-token answers"]) == 0
    )
    assert runconfig.read_config(out)[1].justifications == {"num_generations": "one-token answers"}


def test_justification_written_in_the_task_is_stored(tmp_path: Path):
    task = make_task(
        tmp_path,
        {
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "gradient_accumulation_steps": 1,
            "justify": {"num_generations": "tiny model"},
        },
    )
    plan = build_plan(PlanRequest(task=str(task), gpus=0, output=str(tmp_path / "p.yaml")))
    assert plan.meta.justifications == {"num_generations": "tiny model"} and "justify" not in plan.config


def test_plan_lists_every_problem_at_once(tmp_path: Path, capsys):
    task = make_task(
        tmp_path,
        {
            "num_generations": 4,
            "per_device_train_batch_size": 6,
            "gradient_accumulation_steps": 1,
            "learnig_rate": 1e-5,
            "loss_type": "ppo",
        },
    )
    assert main(["plan", str(task), "--gpus", "0", "-o", str(tmp_path / "p.yaml")]) == 2
    err = capsys.readouterr().err
    assert "problems" in err
    for where in ("learnig_rate", "loss_type", "num_generations"):
        assert f"- {where}:" in err


def test_bf16_is_refused_on_gpus_without_it(tmp_path: Path):
    task = make_task(tmp_path, {"bf16": True})
    with pytest.raises(ConfigError, match="bf16"):
        build_plan(PlanRequest(task=str(task), gpus=1, bf16=False, output=str(tmp_path / "p.yaml")))


def test_beta_with_a_config_file_model_is_refused_with_full_fine_tuning(tmp_path: Path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(
        json.dumps(
            {
                "num_hidden_layers": 2,
                "hidden_size": 64,
                "num_attention_heads": 4,
                "vocab_size": 300,
                "intermediate_size": 128,
            }
        )
    )
    task = make_task(tmp_path, {"beta": 0.01})
    with pytest.raises(ConfigError, match="beta"):
        build_plan(PlanRequest(task=str(task), model=str(tmp_path / "m"), gpus=1, output=str(tmp_path / "p.yaml")))
    plan = build_plan(
        PlanRequest(task=str(task), model=str(tmp_path / "m"), gpus=1, peft="lora", output=str(tmp_path / "p.yaml"))
    )
    assert plan.meta.peft == "lora"


def test_nothing_fits_is_a_plan_error_and_writes_nothing(tmp_path: Path, capsys):
    out = tmp_path / "p.yaml"
    assert main(["plan", str(ARITH), "--model", "70B", "--gpus", "1", "--gpu-memory", "24", "-o", str(out)]) == 1
    assert "nothing fits" in capsys.readouterr().err and not out.exists()
    with pytest.raises(PlanError):
        build_plan(PlanRequest(task=str(ARITH), model="70B", gpus=1, gpu_memory_gb=24, output=str(out)))


def test_dapo_plan_names_the_soft_overlong_term(tmp_path: Path):
    plan = build_plan(PlanRequest(task=str(ARITH), gpus=1, variant="dapo", output=str(tmp_path / "p.yaml")))
    assert plan.config["loss_type"] == "dapo" and plan.config["mask_truncated_completions"] is True
    assert any("verifier: overlong" in n and "max_completion_length: 10, cache: 2" in n for n in plan.notes)


def test_dapo_plan_says_nothing_when_the_task_has_the_overlong_term(tmp_path: Path):
    task = make_task(tmp_path)
    raw = yaml.safe_load(task.read_text())
    raw["rewards"].append({"name": "overlong", "verifier": "overlong", "options": {"max_completion_length": 10}})
    task.write_text(yaml.safe_dump(raw))
    plan = build_plan(PlanRequest(task=str(task), gpus=1, variant="dapo", output=str(tmp_path / "p.yaml")))
    assert not any("overlong" in n for n in plan.notes)


def test_smaller_batch_keeps_the_completions_per_step(tmp_path: Path):
    plan = build_plan(
        PlanRequest(task=str(ARITH), model="14B", gpus=1, gpu_memory_gb=80, output=str(tmp_path / "p.yaml"))
    )
    c = plan.config
    assert c["per_device_train_batch_size"] * c["gradient_accumulation_steps"] == 64  # the task's 64 x 1


def test_plan_gives_a_duration_and_gpu_hours(tmp_path: Path):
    plan = build_plan(PlanRequest(task=str(ARITH), model="7B", gpus=8, max_steps=100, output=str(tmp_path / "p.yaml")))
    d = plan.duration
    assert d.steps == 100 and d.hours > 0 and d.gpu_hours == pytest.approx(8 * d.hours)


def test_plan_overwrites_an_old_plan_only_when_the_new_one_is_valid(tmp_path: Path):
    out = tmp_path / "p.yaml"
    assert main(["plan", str(ARITH), "--gpus", "0", "-o", str(out)]) == 0
    before = out.read_text()
    assert main(["plan", str(ARITH), "--model", "30B-A3B", "--gpus", "8", "-o", str(out)]) == 2
    assert out.read_text() == before


@pytest.mark.parametrize("gpus", [0, 1, 8])
def test_rlvr_train_reads_every_plan_value(tmp_path: Path, gpus: int):
    from rlvr.settings.file import RunConfig
    from rlvr.task import load_task
    from rlvr.train import TrainOptions, layered_settings

    out = tmp_path / "plan.yaml"
    plan = build_plan(PlanRequest(task=str(ARITH), gpus=gpus, model="7B" if gpus > 1 else None, output=str(out)))
    from rlvr.plan.build import write_plan

    write_plan(plan, out)
    # env: (rlvr's record) is not taken for a GRPOConfig value
    assert dict(RunConfig.read(out).grpo) == dict(plan.config)
    hw = {"gpus": gpus * 1, "bf16": gpus > 0, "vllm": gpus > 0}
    resolved = layered_settings(load_task(ARITH), TrainOptions(run_dir=tmp_path / "run", config_path=out), hw).grpo
    assert {k: resolved[k] for k in plan.config if k not in ("report_to",)} == {
        k: v for k, v in plan.config.items() if k != "report_to"
    }


@pytest.mark.slow
def test_trl_grpo_trains_from_the_flat_plan(tmp_path: Path):
    """The plan is usable by `trl grpo --config` as written (2 steps on CPU, ~50 s)."""
    import os
    import subprocess
    import sys

    from rlvr.models import resolve_model

    plan = tmp_path / "plan.yaml"
    assert main(["plan", str(ARITH), "--gpus", "0", "--max-steps", "2", "-o", str(plan)]) == 0
    data = tmp_path / "data"
    data.mkdir()
    rows = [json.loads(x) for x in (ARITH / "train.jsonl").read_text().splitlines()[:64]]
    (data / "train.jsonl").write_text(
        "".join(json.dumps({"prompt": r["question"] + "=", "answer": r["answer"]}) + "\n" for r in rows)
    )
    (tmp_path / "rew.py").write_text("def length(completions, **kw):\n    return [len(c) / 10 for c in completions]\n")
    trl = Path(sys.executable).with_name("trl")
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            str(trl),
            "grpo",
            "--config",
            str(plan),
            "--model_name_or_path",
            resolve_model("builtin:tiny"),
            "--dataset_name",
            str(data),
            "--reward_funcs",
            "rew.length",
            "--output_dir",
            str(out),
        ],
        cwd=tmp_path,
        env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (out / "checkpoint-2").is_dir()
