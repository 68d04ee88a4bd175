"""The reference recipe as explicit ``GRPOConfig`` values.

TRL's defaults have moved between versions (``loss_type`` was sequence-mean GRPO, then "bnpo",
then "dapo"; ``beta`` went from 0.04 to 0.0; ``vllm_mode`` from "server" to "colocate"), so every
resolved config states every value that matters. Task files override on top (their ``grpo:``
section), and the resolved dict is saved in the run directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Plain GRPO, the starting point of every task. A variant (DAPO, Dr. GRPO, GSPO) is applied only
# when `rlvr doctor` has seen its symptom.
RECIPE: dict[str, Any] = {
    "loss_type": "grpo",
    "scale_rewards": "group",
    "beta": 0.01,
    "epsilon": 0.2,
    "epsilon_high": 0.2,
    "importance_sampling_level": "token",
    "num_iterations": 1,
    "learning_rate": 5e-7,
    "num_generations": 8,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 4,
    "seed": 3407,
    "temperature": 0.7,
    "top_p": 1.0,
    "max_completion_length": 256,
    "mask_truncated_completions": False,
    "lr_scheduler_type": "constant_with_warmup",
    "warmup_steps": 0,
    "weight_decay": 0.0,
    "max_grad_norm": 1.0,
    "logging_steps": 1,
    "save_strategy": "steps",
    "save_steps": 100,
    "save_total_limit": 2,
    "report_to": "none",
    "disable_dropout": True,
    "gradient_checkpointing": False,
    "use_vllm": False,
    "log_completions": False,
    "remove_unused_columns": False,
}

# Values the recipe refuses to leave implicit, checked in every resolved config.
EXPLICIT_KEYS = (
    "loss_type", "scale_rewards", "beta", "epsilon", "epsilon_high", "learning_rate",
    "num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "seed",
    "temperature", "max_completion_length", "bf16", "use_vllm", "importance_sampling_level",
    "num_iterations", "mask_truncated_completions",
)


def hardware() -> dict[str, Any]:
    """What this process can use: GPU count, bf16 support."""
    import torch

    cuda = torch.cuda.is_available()
    return {
        "gpus": torch.cuda.device_count() if cuda else 0,
        "bf16": bool(cuda and torch.cuda.is_bf16_supported()),
        "vllm": _has_vllm() if cuda else False,
    }


def _has_vllm() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def resolve(task_grpo: Mapping[str, Any], *, generation: Mapping[str, Any], hw: Mapping[str, Any], seed: int | None = None) -> dict[str, Any]:
    """The recipe with the hardware's answers (bf16, vLLM mode), the task's generation settings
    and the task's ``grpo:`` overrides, in that order of precedence (last wins)."""
    cfg = dict(RECIPE)
    cfg["bf16"] = bool(hw.get("bf16"))
    cfg["use_cpu"] = not hw.get("gpus")
    if hw.get("gpus") and hw.get("vllm"):
        cfg["use_vllm"] = True
        cfg["vllm_mode"] = "colocate" if hw["gpus"] == 1 else "server"
    cfg["temperature"] = generation.get("temperature", cfg["temperature"])
    cfg["top_p"] = generation.get("top_p", cfg["top_p"])
    cfg["max_completion_length"] = generation.get("max_completion_length", cfg["max_completion_length"])
    if seed is not None:
        cfg["seed"] = seed
    overrides = {k: v for k, v in task_grpo.items() if k != "reward_weights"}
    cfg.update(overrides)
    return cfg
