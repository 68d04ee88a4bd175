"""The reference recipe as explicit ``GRPOConfig`` values, the variant overlays, rlvr's own run
settings (stop rules, dynamic sampling) and the inputs of the check (``Target``, ``ModelFacts``).

Every default a run's settings have is written here, once: a module that needs one reads the
resolved settings (``rlvr.settings.resolve``), never a restated literal (``tests/test_structure.py``
refuses a recipe key read with a fallback outside this package).

TRL's defaults have moved between versions (``loss_type`` was sequence-mean GRPO, then "bnpo",
then "dapo"; ``beta`` went from 0.04 to 0.0; ``vllm_mode`` from "server" to "colocate"), so every
resolved config states every value that matters.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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

# rlvr sft's own SFTConfig defaults, sized for a small model on CPU; a real model wants its own (lower)
# learning rate. The seed is the task's (whose default is the recipe's).
SFT_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-3,
    "warmup_steps": 50,
    "lr_scheduler_type": "constant_with_warmup",
    "per_device_train_batch_size": 32,
    "max_steps": 1000,
    "logging_steps": 10,
    "weight_decay": 0.0,
    "report_to": "none",
    "save_strategy": "no",
    "gradient_checkpointing": False,
}
TRL_SFT_MAX_LENGTH = 1024  # TRL's SFTConfig.max_length default (1.16): longer sequences are truncated

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
    # is set to 4 x gradient_accumulation_steps in `rlvr.settings.layers.resolve` (TRL's docs): when training is fully
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


# -- rlvr's own run settings: not GRPOConfig fields; a task sets them under grpo: {stop: ...} and
# grpo: {dynamic: ...}, a config file under stop:/dynamic:, and the run's config records them.
@dataclass(frozen=True)
class StopRules:
    """When ``rlvr train`` stops a run that cannot learn (``rlvr.train.stopping``): a logged masked
    rate (share of samples some term could not decide) at or above ``masked_rate`` for
    ``masked_steps`` logging steps in a row, or a share of zero-variance groups at or above
    ``zero_std`` for ``zero_std_steps`` in a row (such a group has zero advantage, so no gradient).
    0 steps turns a rule off. Heuristics, not published constants: half the samples masked is
    infrastructure, not noise; at a 2 % pass rate with 4 groups of 8 per step, a step with every
    group uniform has probability ~0.5, so 20 in a row (~1e-6) means no signal at all."""

    masked_rate: float = 0.5
    masked_steps: int = 5
    zero_std: float = 1.0
    zero_std_steps: int = 20

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class DynamicSampling:
    """Dynamic sampling (``rlvr.train.dynamic``, which explains the modes). The defaults are
    heuristics, not published constants: two flat visits in a row (at G = 8 a prompt with a 50 %
    pass rate gives a flat group with probability 2 x 0.5^8 ~ 0.008, twice in a row ~ 6e-5, so a
    skip is almost never a learnable prompt mistaken; one with a 90 % rate: 0.43, twice 0.19),
    re-checked after two epochs' worth of optimizer steps (TRL's sampler draws each prompt once per
    epoch: a skip shorter than an epoch has usually expired before the prompt comes round again,
    measured in bench/dynamic_sampling.py)."""

    mode: str = "off"  # off: plain GRPO; filter: skip prompts whose recent groups were flat
    visits: int = 2  # K: a prompt is skipped after this many flat groups in a row
    recheck_after: int | None = None  # M: optimizer steps a skipped prompt waits; None: two epochs' (for_epoch)
    epsilon: float = 1e-6  # rewards within this of each other count as equal (not float equality)
    max_rounds: int = 3  # resample: generation rounds per batch at most, the first included
    short_batch: str = "kept"  # resample, rounds spent: kept = flat fill is masked out; best = flat fill trained as is

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def for_epoch(self, prompts: int, prompts_per_step: int) -> DynamicSampling:
        """The settings with ``recheck_after`` resolved: two epochs' worth of optimizer steps
        (``prompts`` / ``prompts_per_step``, rounded up) when it was left unset."""
        if self.recheck_after is not None:
            return self
        return dataclasses.replace(self, recheck_after=2 * max(1, math.ceil(prompts / max(prompts_per_step, 1))))

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


STOP: dict[str, Any] = StopRules().to_json()
DYNAMIC: dict[str, Any] = DynamicSampling().to_json()
MODES = ("off", "filter", "resample")
SHORT_BATCH = ("kept", "best")
# A variant's own dynamic-sampling defaults, which follow the loss the resolved values amount to:
# DAPO's dynamic sampling is rlvr's online filter (a task's grpo: {dynamic: {mode: off}} turns it off).
VARIANT_DYNAMIC: dict[str, dict[str, Any]] = {"dapo": {"mode": "filter"}}
SECTION_EXAMPLES = {
    "stop": f"e.g. stop: {{masked_rate: 0.5, masked_steps: 5}}; keys: {', '.join(STOP)}",
    "dynamic": "e.g. dynamic: {mode: filter, visits: 2, recheck_after: 100}",
}
# Keys of a task's grpo: section that are not GRPOConfig values.
TASK_OWN_KEYS = ("reward_weights", "justify", "stop", "dynamic", "tripwire")  # tripwire: rlvr.train.tripwire


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


def term_patch(variant: str, cfg: Mapping[str, Any], present: set[str]) -> list[dict[str, Any]]:
    """The reward terms ``variant`` adds that the task does not have yet (by verifier name),
    with options from the resolved config: DAPO's cache is a quarter of the budget (the paper's
    4,096 of 20,480 tokens is a fifth; a quarter is rlvr's overlong default)."""
    out = []
    for term in VARIANT_TERMS.get(variant, []):
        if term["verifier"] in present:
            continue
        L = int(cfg["max_completion_length"])
        out.append({**term, "options": {"max_completion_length": L, "cache": max(1, L // 4)}})
    return out
