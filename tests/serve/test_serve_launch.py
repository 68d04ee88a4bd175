"""`rlvr serve --write-adapter ENGINE PATH --launch`: the engine's command with rlvr's recipe
mapped onto its options, and the task's data in the engine's layout, read back by the adapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import right, write_task

from rlvr.cli.main import main
from rlvr.errors import ConfigError
from rlvr.serve.engines import OpenRLHFAdapter, VerlAdapter
from rlvr.serve.launch import OPENRLHF_FLAGS, VERL_KEYS, openrlhf_plan, recipe, verl_plan
from rlvr.task import load_task


def _task(tmp_path: Path, extra: str = "") -> Any:
    path = write_task(tmp_path / "t")
    if extra:
        path.write_text(path.read_text() + extra)
    return load_task(path, check_data=False)


def _overrides(command: list[str]) -> dict[str, str]:
    return dict(part.split("=", 1) for part in command[3:])


def test_verl_command_carries_the_recipe_under_verls_names(tmp_path: Path) -> None:
    task = _task(tmp_path)
    cfg = recipe(task, 1)
    o = _overrides(verl_plan(task, tmp_path / "a.py", tmp_path / "data", gpus=1).command)
    assert set(o) <= set(VERL_KEYS)
    assert o["actor_rollout_ref.rollout.n"] == str(cfg["num_generations"]) == "8"
    assert o["actor_rollout_ref.actor.optim.lr"] == str(cfg["learning_rate"])
    assert (
        o["actor_rollout_ref.actor.kl_loss_coef"] == str(cfg["beta"])
        and o["actor_rollout_ref.actor.use_kl_loss"] == "true"
    )
    assert o["actor_rollout_ref.actor.loss_agg_mode"] == "seq-mean-token-mean"  # TRL's loss_type grpo
    assert o["actor_rollout_ref.rollout.temperature"] == "1.0"  # the task's generation temperature
    assert o["data.train_batch_size"] == o["actor_rollout_ref.actor.ppo_mini_batch_size"] == "4"  # 8 x 4 x 1 / 8
    assert o["reward.custom_reward_function.name"] == "compute_score"


def test_verl_data_round_trips_through_the_adapter_as_verl_passes_it(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    task = _task(tmp_path)
    plan = verl_plan(task, tmp_path / "a.py", tmp_path / "data")
    rows = pq.read_table(plan.files["train"]).to_pylist()
    assert len(rows) == len(task.load_split("train"))
    first = rows[0]
    assert first["prompt"] == [{"role": "user", "content": task.render_prompt(task.load_split("train")[0])}]
    adapter = VerlAdapter(task.path, no_gate_reason="launch test")
    gold = json.loads(first["extra_info"]["rlvr_row"])["answer"]
    out = adapter.compute_score(
        data_source=first["data_source"],
        solution_str=right(gold),
        ground_truth=first["reward_model"]["ground_truth"],
        extra_info=first["extra_info"],
    )
    assert out["rlvr_correct"] == 1.0 and out["score"] == pytest.approx(1.1)


def test_openrlhf_command_carries_the_recipe_under_its_flags(tmp_path: Path) -> None:
    task = _task(tmp_path)
    cmd = openrlhf_plan(task, "http://127.0.0.1:5000/get_reward", tmp_path / "data", gpus=2).command
    flags = [c for c in cmd if c.startswith("--")]
    assert set(flags) <= set(OPENRLHF_FLAGS)
    value = {cmd[i]: cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i].startswith("--")}
    assert value["--rollout.n_samples_per_prompt"] == "8" and value["--algo.advantage.estimator"] == "group_norm"
    assert value["--rollout.batch_size"] == "8" and value["--train.batch_size"] == "64"  # 8 x 4 x 2 GPUs
    assert value["--algo.kl.estimator"] == "k3" and value["--reward.remote_url"].endswith("/get_reward")


def test_openrlhf_data_round_trips_through_the_adapter_as_openrlhf_passes_it(tmp_path: Path) -> None:
    task = _task(tmp_path)
    plan = openrlhf_plan(task, "reward_func.py", tmp_path / "data")
    line = json.loads(Path(plan.files["train"]).read_text().splitlines()[0])
    gold = json.loads(line["label"])["answer"]
    info = OpenRLHFAdapter(task.path, no_gate_reason="launch test")(
        [line["input"] + right(gold)], [line["input"]], [line["label"]]
    )
    assert info["rewards"] == pytest.approx([1.1])


def test_unscaled_rewards_become_dr_grpo_for_openrlhf_and_no_std_norm_for_verl(tmp_path: Path) -> None:
    task = _task(tmp_path, "grpo: {scale_rewards: none}\n")
    cmd = openrlhf_plan(task, "r.py", tmp_path / "o").command
    assert cmd[cmd.index("--algo.advantage.estimator") + 1] == "dr_grpo"
    assert (
        _overrides(verl_plan(task, tmp_path / "a.py", tmp_path / "v").command)["algorithm.norm_adv_by_std_in_grpo"]
        == "false"
    )


def test_a_loss_type_without_an_openrlhf_counterpart_is_refused_not_approximated(tmp_path: Path) -> None:
    task = _task(tmp_path, "grpo: {loss_type: dr_grpo}\n")
    with pytest.raises(ConfigError, match="loss_type"):
        openrlhf_plan(task, "r.py", tmp_path / "o")
    assert (
        _overrides(verl_plan(task, tmp_path / "a.py", tmp_path / "v").command)["actor_rollout_ref.actor.loss_agg_mode"]
        == "seq-mean-token-sum-norm"
    )


def test_a_batch_that_is_not_whole_groups_is_refused(tmp_path: Path) -> None:
    task = _task(tmp_path, "grpo: {per_device_train_batch_size: 3, gradient_accumulation_steps: 1}\n")
    with pytest.raises(ConfigError, match="not a multiple of num_generations"):
        verl_plan(task, tmp_path / "a.py", tmp_path / "v")


def test_the_cli_writes_adapter_data_and_an_executable_launch_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = write_task(tmp_path / "t")
    out = tmp_path / "engine" / "verl_reward.py"
    assert (
        main(
            [
                "serve",
                str(task),
                "--no-gate",
                "launch test",
                "--write-adapter",
                "verl",
                str(out),
                "--launch",
                "--gpus",
                "2",
            ]
        )
        == 0
    )
    script = out.with_suffix(".launch.sh")
    assert script.stat().st_mode & 0o111
    text = script.read_text()
    assert "verl.trainer.main_ppo" in text and f"reward.custom_reward_function.path={out.resolve()}" in text
    assert "builtin:tiny is one of rlvr's random-weight test models" in text
    assert (out.parent / "verl_reward.data" / "train.parquet").is_file()
    assert "train data" in capsys.readouterr().out


def test_launch_without_an_adapter_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(write_task(tmp_path / "t")), "--no-gate", "x", "--launch"]) == 2
    assert "--launch" in capsys.readouterr().err


def test_verl_command_sets_the_log_prob_micro_batches_verls_validation_requires(tmp_path: Path) -> None:
    o = _overrides(verl_plan(_task(tmp_path), tmp_path / "a.py", tmp_path / "data", gpus=1).command)
    micro = o["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"]
    assert o["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"] == micro
    assert o["actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"] == micro


def _sft_gate(tmp_path: Path) -> tuple[Path, Path]:
    """The tutorial's route: a gate built and signed on an SFT model (a folder), not the task's model."""
    from rlvr import gate
    from support.gate_fixtures import arithmetic_sampler, sign_small
    from support.gate_fixtures import write_task as gate_task

    task_path = gate_task(tmp_path / "t", rows=40)
    sft = tmp_path / "runs" / "sft"
    sft.mkdir(parents=True)
    task = load_task(task_path)
    store = gate.build_set(task, gate.db_path(task), model=str(sft), sampler=arithmetic_sampler(), size=20)
    for s in store.samples():
        store.add_review(s.id, "right", reviewer="alice")
    sign_small(task, reviewer="alice")
    return task_path, sft


@pytest.mark.parametrize("engine", ["verl", "openrlhf"])
def test_a_gate_signed_on_the_sft_model_serves_an_engine_run_that_starts_from_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    task_path, sft = _sft_gate(tmp_path)
    out = tmp_path / "engine" / f"{engine}_reward.py"
    argv = ["serve", str(task_path), "--write-adapter", engine, str(out), "--launch"]
    assert main(argv) == 1  # the task's own model is not the one the gate was signed on
    err = capsys.readouterr().err
    assert "model changed" in err and f"passes --model {sft}" in err and "rescore" not in err
    assert main([*argv, "--model", str(sft)]) == 0
    script = out.with_suffix(".launch.sh").read_text()
    assert str(sft) in script
    assert f"model={str(sft.resolve())!r}" in out.read_text()
    adapter = (VerlAdapter if engine == "verl" else OpenRLHFAdapter)(task_path, model=str(sft))
    assert adapter.scorer.meta["gate"]["status"] == "passed"


VERL_VALIDATE = """
import sys, types
src = sys.argv[1]
package = types.ModuleType("verl")  # verl/__init__ imports Ray's runtime; the config code needs none of it
package.__path__ = [src + "/verl"]
sys.modules["verl"] = package
from omegaconf import OmegaConf
import verl.utils.config as config_module
config = OmegaConf.load(src + "/verl/trainer/config/_generated_ppo_trainer.yaml")
config = OmegaConf.merge(config, OmegaConf.from_dotlist(sys.argv[2:]))
use_ref = bool(config.actor_rollout_ref.actor.use_kl_loss) or bool(config.algorithm.use_kl_in_reward)
config_module.validate_config(config, use_reference_policy=use_ref, use_critic=False)
"""
ENGINES = Path(__import__("os").environ.get("RLVR_ENGINE_CODE", "/nonexistent"))


@pytest.mark.skipif(
    not (ENGINES / "src" / "verl").is_dir() or not (ENGINES / "site" / "omegaconf").is_dir(),
    reason="verl's code not prepared: python tests/serve/engine_code.py DIR, then RLVR_ENGINE_CODE=DIR",
)
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_the_verl_launch_overrides_pass_verls_own_config_validation(tmp_path: Path, beta: float) -> None:
    """verl 0.9.1's ``validate_config`` (verl/utils/config.py) on its generated trainer config with
    the launch script's overrides, as ``main_ppo`` runs it before Ray starts any worker."""
    import os
    import subprocess
    import sys

    task = _task(tmp_path, f"grpo: {{beta: {beta}}}\n")
    overrides = verl_plan(task, tmp_path / "a.py", tmp_path / "data", gpus=1, model="/models/m").command[3:]
    env = {**os.environ, "PYTHONPATH": str(ENGINES / "site")}
    proc = subprocess.run(
        [sys.executable, "-c", VERL_VALIDATE, str(ENGINES / "src"), *overrides],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "All configuration checks passed" in proc.stdout
