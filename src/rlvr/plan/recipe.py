"""The reference recipe as explicit ``GRPOConfig`` values, and the variant overlays.

TRL's defaults have moved between versions (``loss_type`` was sequence-mean GRPO, then "bnpo",
then "dapo"; ``beta`` went from 0.04 to 0.0; ``vllm_mode`` from "server" to "colocate"), so every
resolved config states every value that matters. Order of precedence (last wins): recipe <
hardware (bf16, vLLM mode) < the task's generation settings < the variant overlay < the task's
``grpo:`` overrides.

``Target`` (the hardware a config will run on) and ``ModelFacts`` (what validation needs to know
about the model) are the inputs of ``rlvr.plan.validate``, which checks a resolved config;
``rlvr.plan.runconfig`` reads and writes config files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, Problem

# Plain GRPO, the starting point of every task. A variant (DAPO, Dr. GRPO, GSPO) is applied only
# when `rlvr doctor` has seen its symptom -- or, for GSPO, when the model is a mixture of experts.
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

# When `rlvr train` stops a run that cannot learn: a logged masked rate (share of samples some term
# could not decide) at or above `masked_rate` for `masked_steps` logging steps in a row, or a share of
# zero-variance groups at or above `zero_std` for `zero_std_steps` in a row (such a group has zero
# advantage, so no gradient). Not GRPOConfig values: a task overrides them under `grpo: {stop: {...}}`
# (0 steps turns a rule off); the run's config records them. Heuristics, not published constants:
# half the samples masked is infrastructure, not noise; at a 2 % pass rate with 4 groups of 8 per step,
# a step with every group uniform has probability ~0.5, so 20 in a row (~1e-6) means no signal at all.
STOP: dict[str, float | int] = {"masked_rate": 0.5, "masked_steps": 5, "zero_std": 1.0, "zero_std_steps": 20}

# Values the recipe refuses to leave implicit, checked in every resolved config.
EXPLICIT_KEYS = (
    "loss_type",
    "scale_rewards",
    "beta",
    "epsilon",
    "epsilon_high",
    "learning_rate",
    "num_generations",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "seed",
    "temperature",
    "max_completion_length",
    "bf16",
    "use_vllm",
    "importance_sampling_level",
    "num_iterations",
    "mask_truncated_completions",
)

# Variant overlays, each the smallest change that fixes its symptom (see DESIGN.md, doctor).
VARIANTS: dict[str, dict[str, Any]] = {
    "grpo": {},
    # DAPO (arXiv 2503.14476): clip-higher, token-level loss, no KL, overlong filtering. The soft
    # overlong punishment is a reward term, not a GRPOConfig field: see VARIANT_TERMS. Dynamic
    # sampling is not in TRL's GRPOTrainer: rlvr's online filter stands in for it (rlvr.train.dynamic,
    # on by default for a run whose loss is "dapo"; grpo: {dynamic: {mode: off}} turns it off).
    "dapo": {
        "loss_type": "dapo",
        "epsilon": 0.2,
        "epsilon_high": 0.28,
        "beta": 0.0,
        "mask_truncated_completions": True,
    },
    # Dr. GRPO (arXiv 2503.20783): no 1/|o| length normalisation, no std scaling. The paper also
    # drops the KL term; we keep the recipe's beta so the variant changes only what fixes the
    # length bias (set beta: 0 in the task to follow the paper exactly).
    "dr_grpo": {"loss_type": "dr_grpo", "scale_rewards": "none"},
    # GSPO (arXiv 2507.18071): sequence-level ratio with the paper's clip range. steps_per_generation
    # is set to 4 x gradient_accumulation_steps in `resolve` (TRL's docs): when training is fully
    # on-policy the ratio is 1 and the sequence level changes nothing.
    "gspo": {
        "importance_sampling_level": "sequence",
        "loss_type": "grpo",
        "epsilon": 3e-4,
        "epsilon_high": 4e-4,
        "beta": 0.0,
    },
}

# Reward terms a variant adds to the task (a patch to task.yaml's rewards: list, never applied
# silently). DAPO's soft overlong punishment: 0 up to L - cache, linear to -1 at L.
VARIANT_TERMS: dict[str, list[dict[str, Any]]] = {
    "dapo": [{"name": "overlong", "verifier": "overlong", "weight": 1.0}]  # options from the config: see term_patch
}


@dataclass(frozen=True)
class Target:
    """The hardware a config will run on. ``gpus`` per node; ``server_gpus``: GPUs (on the first
    node) given to a vLLM generation server in server mode, not to training."""

    gpus: int = 0
    nodes: int = 1
    bf16: bool = False
    server_gpus: int = 0
    processes: int | None = None  # training processes; None: derived from the GPUs
    vllm_cpu: bool = False  # vLLM's CPU build is what generates (rlvr.engines.vllm_cpu): no GPU needed

    @property
    def num_processes(self) -> int:
        if self.processes is not None:
            return self.processes
        if self.gpus == 0:
            return 1
        return max(1, self.gpus * self.nodes - self.server_gpus)


@dataclass(frozen=True)
class ModelFacts:
    """What validation needs to know about the model: whether it is a mixture of experts and
    whether TRL can rebuild it as the reference model (it calls ``from_pretrained`` on the
    policy's ``config._name_or_path``)."""

    ref: str = ""
    moe: bool = False
    rebuildable: bool = True
    why_not_rebuildable: str = ""


def hardware() -> dict[str, Any]:
    """What this process can use: GPU count, bf16 support, vLLM, and whether that vLLM is the CPU
    build (``vllm_cpu``: then ``use_vllm`` is allowed without a GPU, but not chosen by default, since
    on CPU it is a correctness path rather than a faster one; README "vLLM without a GPU")."""
    import torch

    from ..engines.vllm_cpu import cpu_platform

    cuda = torch.cuda.is_available()
    return {
        "gpus": torch.cuda.device_count() if cuda else 0,
        "bf16": bool(cuda and torch.cuda.is_bf16_supported()),
        "vllm": _has_vllm() if cuda else False,
        "vllm_cpu": not cuda and cpu_platform(),
    }


def _has_vllm() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def resolve(
    task_grpo: Mapping[str, Any],
    *,
    generation: Mapping[str, Any],
    hw: Mapping[str, Any],
    seed: int | None = None,
    variant: str | None = None,
) -> dict[str, Any]:
    """The recipe with the hardware's answers (bf16, vLLM mode), the task's generation settings,
    the variant overlay and the task's ``grpo:`` overrides, in that order of precedence (last
    wins). The task's ``justify:`` mapping, ``reward_weights``, ``stop`` and ``dynamic`` are not
    GRPOConfig values here and are left out (see ``justifications``, ``rlvr.train.stopping``,
    ``rlvr.train.dynamic``)."""
    if variant is not None and variant not in VARIANTS:
        raise ConfigError(Problem("variant", f"unknown variant {variant!r}", f"one of {', '.join(VARIANTS)}"))
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
    cfg.update(VARIANTS.get(variant or "grpo", {}))
    overrides = {k: v for k, v in task_grpo.items() if k not in ("reward_weights", "justify", "stop", "dynamic")}
    cfg.update(overrides)
    if variant == "gspo" and "steps_per_generation" not in overrides and "generation_batch_size" not in overrides:
        cfg["steps_per_generation"] = 4 * int(cfg["gradient_accumulation_steps"])
    return cfg


def justifications(task_grpo: Mapping[str, Any]) -> dict[str, str]:
    """The written reasons a task gives for departing from the recipe's floors
    (``grpo: {num_generations: 4, justify: {num_generations: "..."}}``)."""
    raw = task_grpo.get("justify") or {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def variant_of(cfg: Mapping[str, Any]) -> str:
    """The variant a resolved config amounts to (by its loss, not by how it was written)."""
    if cfg.get("importance_sampling_level") == "sequence":
        return "gspo"
    loss = cfg.get("loss_type", "grpo")
    return loss if loss in VARIANTS else str(loss)


def term_patch(variant: str, cfg: Mapping[str, Any], present: set[str]) -> list[dict[str, Any]]:
    """The reward terms ``variant`` adds that the task does not have yet (by verifier name),
    with options from the resolved config: DAPO's cache is a quarter of the budget (the paper's
    4,096 of 20,480 tokens is a fifth; a quarter is rlvr's overlong default)."""
    out = []
    for term in VARIANT_TERMS.get(variant, []):
        if term["verifier"] in present:
            continue
        L = int(cfg.get("max_completion_length", 256))
        out.append({**term, "options": {"max_completion_length": L, "cache": max(1, L // 4)}})
    return out
