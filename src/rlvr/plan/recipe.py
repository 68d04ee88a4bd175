"""The reference recipe as explicit ``GRPOConfig`` values, the variant overlays, and validation.

TRL's defaults have moved between versions (``loss_type`` was sequence-mean GRPO, then "bnpo",
then "dapo"; ``beta`` went from 0.04 to 0.0; ``vllm_mode`` from "server" to "colocate"), so every
resolved config states every value that matters. Order of precedence (last wins): recipe <
hardware (bf16, vLLM mode) < the task's generation settings < the variant overlay < the task's
``grpo:`` overrides.

``validate`` checks a resolved config against the hardware it will run on and returns every
problem at once (``check`` raises them as one ``ConfigError``). It knows the field names of the
*installed* TRL (``dataclasses.fields(trl.GRPOConfig)``, imported lazily) and the divisibility
rules TRL enforces in ``GRPOConfig.__post_init__`` -- but it catches them before a model loads,
and adds the rules that TRL only checks on the first training step (``loss_type``,
``scale_rewards``, ``importance_sampling_level``) or never (bf16 on the target GPU, vLLM mode
against the GPU count, MoE without GSPO, group size below the recipe's floor).

Config files: ``write_config`` writes the *flat* form that ``trl grpo --config`` takes (every key a
GRPOConfig field). rlvr's own record (variant, justifications) goes into the ``env:`` mapping,
the only free-form place TRL's YAML parser accepts (it exports it as environment variables and
otherwise ignores it); ``read_config`` reads the flat form and the ``{grpo:, rlvr:}`` form that
``rlvr train`` writes into run directories.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import yamlio
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

# The TRL versions this module was tested against (pyproject pins the same range).
TESTED_TRL = ("1.16", "1.17")  # [low, high)

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo")
SCALE_REWARDS = ("group", "batch", "none")
IS_LEVELS = ("token", "sequence")
VLLM_MODES = ("colocate", "server")
# The recipe's floor for the group size: the advantage is relative to the group mean, and fewer
# samples make a noisy baseline. Going lower needs a justification stored in the config.
MIN_GENERATIONS = 8


@dataclass(frozen=True)
class Target:
    """The hardware a config will run on. ``gpus`` per node; ``server_gpus``: GPUs (on the first
    node) given to a vLLM generation server in server mode, not to training."""

    gpus: int = 0
    nodes: int = 1
    bf16: bool = False
    server_gpus: int = 0
    processes: int | None = None  # training processes; None: derived from the GPUs

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


@dataclass(frozen=True)
class ConfigMeta:
    """rlvr's own record stored beside the GRPOConfig values in a plan file."""

    variant: str = "grpo"
    justifications: Mapping[str, str] = field(default_factory=dict)
    task: str = ""
    model: str = ""
    peft: str = "none"
    extra: Mapping[str, str] = field(default_factory=dict)


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
    GRPOConfig values here and are left out (see ``justifications``, ``rlvr.train.stopping``, ``rlvr.train.dynamic``)."""
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


# -- validation --------------------------------------------------------------------------------
def grpo_fields() -> dict[str, Any]:
    """Field name -> dataclasses.Field of the installed TRL's GRPOConfig (imports trl)."""
    import dataclasses

    from trl import GRPOConfig

    return {f.name: f for f in dataclasses.fields(GRPOConfig)}


def sft_fields() -> set[str]:
    """Field names of the installed TRL's SFTConfig (imports trl)."""
    import dataclasses

    from trl import SFTConfig

    return {f.name for f in dataclasses.fields(SFTConfig)}


def unknown_keys(cfg: Mapping[str, Any], known: set[str], *, what: str, prefix: str = "") -> list[Problem]:
    """A problem for every key of ``cfg`` that is not in ``known``, with the closest field."""
    out = []
    for key in cfg:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1)
            out.append(
                Problem(
                    f"{prefix}{key}",
                    f"not a {what} field of the installed TRL; TRL would reject it",
                    f"did you mean {close[0]!r}?" if close else "remove it",
                )
            )
    return out


def trl_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trl")
    except PackageNotFoundError:
        return ""


def _version_tuple(v: str) -> tuple[int, ...]:
    out = []
    for part in v.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def validate(
    cfg: Mapping[str, Any],
    *,
    target: Target,
    model: ModelFacts | None = None,
    peft: str = "none",
    justified: Mapping[str, str] | None = None,
    forced_variant_reason: str | None = None,
    installed_trl: str | None = None,
    known_fields: set[str] | None = None,
) -> list[Problem]:
    """Every problem with ``cfg`` on ``target``, each with what, why and how to fix.

    ``known_fields`` defaults to the installed TRL's GRPOConfig fields, ``installed_trl`` to the
    installed TRL version; tests pass both to check one rule at a time.
    """
    justified = dict(justified or {})
    problems: list[Problem] = []

    def add(where: str, what: str, fix: str) -> None:
        problems.append(Problem(where, what, fix))

    # Unknown keys, against the real field names.
    known = known_fields if known_fields is not None else set(grpo_fields())
    problems += unknown_keys(cfg, known, what="GRPOConfig")

    version = trl_version() if installed_trl is None else installed_trl
    low, high = (_version_tuple(v) for v in TESTED_TRL)
    if not version or not (low <= _version_tuple(version) < high):
        add(
            "trl",
            f"installed TRL {version or '(none)'} is outside the tested range >={TESTED_TRL[0]},<{TESTED_TRL[1]}; defaults and field names move between versions",
            f"pip install 'trl>={TESTED_TRL[0]},<{TESTED_TRL[1]}'",
        )

    # Enumerations TRL only checks on the first training step.
    for key, allowed in (
        ("loss_type", LOSS_TYPES),
        ("scale_rewards", SCALE_REWARDS),
        ("importance_sampling_level", IS_LEVELS),
    ):
        value = cfg.get(key)
        if value is not None and not isinstance(value, bool) and value not in allowed:
            add(
                key,
                f"{value!r} is not one of {', '.join(allowed)}; TRL fails on the first step, after the model has loaded",
                f"write one of {', '.join(allowed)}",
            )

    ints = {}
    for key in (
        "num_generations",
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "per_device_eval_batch_size",
        "steps_per_generation",
        "generation_batch_size",
        "num_generations_eval",
        "num_iterations",
    ):
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            add(key, f"must be a positive integer, got {value!r}", "write a whole number of at least 1")
        else:
            ints[key] = value

    # Group size: TRL's hard minimum is 2; the recipe's floor is 8 unless justified.
    g = ints.get("num_generations", 8)
    if "num_generations" in ints and g < 2:
        add(
            "num_generations",
            f"{g} leaves no group to compare against (GRPO needs at least 2 completions per prompt)",
            "use 8 or more",
        )
    elif g < MIN_GENERATIONS and not justified.get("num_generations", "").strip():
        add(
            "num_generations",
            f"{g} is below the recipe's floor of {MIN_GENERATIONS}: the advantage is relative to the group mean, so a small group makes a noisy baseline",
            "raise it to 8, or write the reason in the task: grpo: {justify: {num_generations: '...'}} (or rlvr plan --justify num_generations='...'); it is stored in the config",
        )

    # Batch arithmetic, as TRL's GRPOConfig.__post_init__ does it, with the target's process count.
    procs = target.num_processes
    bs = ints.get("per_device_train_batch_size", 8)
    ga = ints.get("gradient_accumulation_steps", 1)
    global_batch = bs * procs
    if "generation_batch_size" in ints and "steps_per_generation" in ints:
        add(
            "generation_batch_size",
            "generation_batch_size and steps_per_generation are both set; TRL accepts one",
            "remove one of them",
        )
    if "generation_batch_size" in ints:
        gen_batch = ints["generation_batch_size"]
        if gen_batch % global_batch:
            add(
                "generation_batch_size",
                f"{gen_batch} is not divisible by the global batch per_device_train_batch_size x processes = {bs} x {procs} = {global_batch}",
                f"use a multiple of {global_batch}",
            )
    else:
        gen_batch = global_batch * ints.get("steps_per_generation", ga)
    if gen_batch % g:
        add(
            "num_generations",
            f"the generation batch ({gen_batch} = {bs} per device x {procs} processes x {gen_batch // max(global_batch, 1)} steps) is not divisible by num_generations ({g}): every prompt group must be whole",
            f"make per_device_train_batch_size x processes x steps_per_generation a multiple of {g}",
        )
    if str(cfg.get("eval_strategy", "no")) not in ("no", "IntervalStrategy.NO"):
        g_eval = ints.get("num_generations_eval", g)
        eval_bs = ints.get("per_device_eval_batch_size", 8)
        if (eval_bs * procs) % g_eval:
            add(
                "per_device_eval_batch_size",
                f"the global eval batch ({eval_bs} x {procs} processes) is not divisible by the eval generations ({g_eval})",
                f"make per_device_eval_batch_size x processes a multiple of {g_eval}, or set num_generations_eval",
            )

    # Precision against the hardware.
    if cfg.get("bf16") and not target.bf16:
        where = "no GPU" if target.gpus == 0 else "GPUs without bf16 (e.g. V100, T4)"
        add(
            "bf16",
            f"bf16 is on, but the target has {where}",
            "set bf16: false (and fp16: true on pre-Ampere GPUs, or use_cpu: true on CPU)",
        )
    if cfg.get("bf16") and cfg.get("fp16"):
        add("fp16", "bf16 and fp16 are both on", "keep one; bf16 where the hardware has it")

    # vLLM against the GPUs.
    if cfg.get("use_vllm"):
        mode = cfg.get("vllm_mode", "colocate")
        remote = bool(cfg.get("vllm_server_base_url")) or cfg.get("vllm_server_host") not in (
            None,
            "0.0.0.0",
            "127.0.0.1",
            "localhost",
        )
        if mode not in VLLM_MODES:
            add(
                "vllm_mode", f"{mode!r} is not one of {', '.join(VLLM_MODES)}", "colocate on one GPU, server on several"
            )
        elif target.gpus == 0:
            add(
                "use_vllm",
                "vLLM needs a CUDA GPU and the target has none",
                "set use_vllm: false (generation then runs in transformers)",
            )
        elif mode == "server":
            if target.gpus * target.nodes < 2 and not remote:
                add(
                    "vllm_mode",
                    "server mode needs GPUs of its own: with one GPU the server and training would share it (TRL: NCCL errors)",
                    "use vllm_mode: colocate on one GPU, or point vllm_server_base_url at a server on another machine",
                )
            elif target.server_gpus and target.server_gpus >= target.gpus * target.nodes and not remote:
                add(
                    "vllm_mode",
                    f"the vLLM server takes {target.server_gpus} of {target.gpus * target.nodes} GPUs, leaving none to train on",
                    "give the server fewer GPUs",
                )
            if not cfg.get("vllm_server_base_url") and cfg.get("vllm_server_host") in (None, "0.0.0.0"):
                add(
                    "vllm_server_host",
                    "server mode without an address: TRL's default host 0.0.0.0 is a listen address, not where the trainer can reach the server",
                    "set vllm_server_host (127.0.0.1 when the server runs on this node) or vllm_server_base_url",
                )
        util = cfg.get("vllm_gpu_memory_utilization")
        if util is not None and not (isinstance(util, (int, float)) and 0 < util < 1):
            add(
                "vllm_gpu_memory_utilization",
                f"must be a fraction between 0 and 1, got {util!r}",
                "the recipe's colocate share is 0.3",
            )

    # The reference model.
    beta = cfg.get("beta", 0.0)
    if isinstance(beta, (int, float)) and beta > 0 and peft == "none" and model is not None and not model.rebuildable:
        add(
            "beta",
            f"beta {beta} needs a reference model, and TRL rebuilds it with from_pretrained({model.ref!r}): {model.why_not_rebuildable}",
            "set beta: 0, train with LoRA (the reference is then the adapter-disabled model), or save the model to a folder and point model: at it",
        )

    # Mixture of experts needs sequence-level ratios (GSPO).
    if (
        model is not None
        and model.moe
        and cfg.get("importance_sampling_level") != "sequence"
        and not (forced_variant_reason or "").strip()
    ):
        add(
            "importance_sampling_level",
            f"{model.ref or 'the model'} is a mixture of experts: token-level ratios are volatile because the routed experts shift after each update, and GRPO did not converge without routing replay (GSPO paper)",
            "use --variant gspo, or force another variant with a written reason (--force-variant REASON)",
        )
    if cfg.get("importance_sampling_level") == "sequence":
        spg = ints.get("steps_per_generation")
        if "generation_batch_size" in ints:
            spg = ints["generation_batch_size"] // max(global_batch, 1)
        if (spg or ga) <= ga and ints.get("num_iterations", 1) == 1:
            add(
                "steps_per_generation",
                "sequence-level importance ratios change nothing when training is fully on-policy (steps_per_generation <= gradient_accumulation_steps and num_iterations 1: the ratio is 1)",
                f"set steps_per_generation to {4 * ga} (4 x gradient_accumulation_steps, TRL's GSPO example)",
            )
    return problems


def check(cfg: Mapping[str, Any], *, source: str = "config", **kwargs: Any) -> None:
    """``validate``, raising one ``ConfigError`` that lists every problem."""
    problems = validate(cfg, **kwargs)
    if problems:
        raise ConfigError(problems, source=source)


# -- config files ------------------------------------------------------------------------------
def ordered(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The explicit keys first (what matters most, in recipe order), then the rest sorted."""
    head = [k for k in EXPLICIT_KEYS if k in cfg]
    return {**{k: cfg[k] for k in head}, **{k: cfg[k] for k in sorted(cfg) if k not in head}}


def meta_env(meta: ConfigMeta) -> dict[str, str]:
    """rlvr's record as the ``env:`` mapping of a flat TRL config (string values: TRL exports them)."""
    env = {"RLVR_VARIANT": meta.variant}
    if meta.task:
        env["RLVR_TASK"] = meta.task
    if meta.model:
        env["RLVR_MODEL"] = meta.model
    if meta.peft != "none":
        env["RLVR_PEFT"] = meta.peft
    for key, reason in sorted(meta.justifications.items()):
        env[f"RLVR_JUSTIFY_{key.upper()}"] = reason
    for key, value in sorted(meta.extra.items()):
        env[f"RLVR_{key.upper()}"] = value
    return env


def write_config(path: str | Path, cfg: Mapping[str, Any], meta: ConfigMeta, *, header: str = "") -> Path:
    """Write the flat form ``trl grpo --config`` and ``rlvr train --config`` both read.

    Written to a temporary file and renamed, so an existing plan is never left half-written."""
    import yaml

    path = Path(path)
    body = {"env": meta_env(meta), **ordered(cfg)}
    text = yaml.safe_dump(body, sort_keys=False, default_flow_style=False, allow_unicode=True, width=120)
    comments = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(comments + text, encoding="utf-8")
    tmp.replace(path)
    return path


def read_config(path: str | Path) -> tuple[dict[str, Any], ConfigMeta]:
    """A config file in either form: flat (``trl grpo --config``, rlvr's record under ``env:``)
    or ``{grpo: {...}, rlvr: {...}}`` (a run directory's config.yaml). Returns (grpo, meta)."""
    import yaml

    path = Path(path)
    try:
        raw = yamlio.load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(
            Problem(str(path), f"cannot read the config: {exc}", "pass a YAML file written by rlvr plan or rlvr train")
        ) from None
    if not isinstance(raw, Mapping):
        raise ConfigError(Problem(str(path), "a config file must be a YAML mapping of GRPOConfig fields"))
    if isinstance(raw.get("grpo"), Mapping):
        rl = raw.get("rlvr") or {}
        just = rl.get("justification") or rl.get("justifications") or {}
        return dict(raw["grpo"]), ConfigMeta(
            variant=str(rl.get("variant", variant_of(raw["grpo"]))),
            justifications={str(k): str(v) for k, v in just.items()} if isinstance(just, Mapping) else {},
            task=str(rl.get("task", "")),
            model=str(rl.get("model", "")),
        )
    env = raw.get("env") or {}
    if not isinstance(env, Mapping):
        raise ConfigError(
            Problem(
                f"{path}: env", "must be a mapping of environment variables", "write env: followed by NAME: value lines"
            )
        )
    grpo = {k: v for k, v in raw.items() if k != "env"}
    just = {k[len("RLVR_JUSTIFY_") :].lower(): str(v) for k, v in env.items() if str(k).startswith("RLVR_JUSTIFY_")}
    return grpo, ConfigMeta(
        variant=str(env.get("RLVR_VARIANT", variant_of(grpo))),
        justifications=just,
        task=str(env.get("RLVR_TASK", "")),
        model=str(env.get("RLVR_MODEL", "")),
        peft=str(env.get("RLVR_PEFT", "none")),
    )
