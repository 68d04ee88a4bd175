"""What a GRPO run trains with, resolved and validated before any weights load.

``resolve_settings`` gathers every value a run uses into one frozen ``RunSettings``: the GRPOConfig
values, the stop rules and dynamic sampling (layered once, recipe < hardware < task < config file <
``--set`` < flags, by ``rlvr.plan.recipe.resolve``: see ``layered_settings``), the written
justifications, the model and the PEFT method. It checks them
against this machine and this model (``validate_config``), so a wrong value fails in seconds, not
after the model has loaded. A config file is read once, with ``rlvr.plan.runconfig.RunConfig``.
"""

from __future__ import annotations

import dataclasses
import os
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Problem
from ..plan.recipe import DynamicSampling, Layer, Settings, StopRules
from ..plan.runconfig import RunConfig
from ..rewards.combine import RewardSet
from ..task import Task

PEFT_CHOICES = ("none", "lora", "qlora")
# The adapter rlvr trains: rank 16 on every linear layer (TRL refuses LoRA on lm_head; PEFT's
# "all-linear" leaves the output layer out). The planner's memory estimate assumes the same.
LORA: dict[str, Any] = {
    "r": 16,
    "lora_alpha": 32,
    "lora_dropout": 0.0,
    "target_modules": "all-linear",
    "task_type": "CAUSAL_LM",
}


@dataclass(frozen=True)
class TrainOptions:
    """How ``rlvr train`` runs a task (the CLI's flags)."""

    run_dir: Path
    model: str | None = None  # None: the task's model (on --resume: the run's own)
    max_steps: int | None = None
    resume: bool = False  # continue from the newest complete checkpoint in run_dir
    config_path: Path | None = None  # a config file (rlvr plan's, or a run's config.yaml)
    overrides: Mapping[str, Any] = field(default_factory=dict)  # --set KEY=VALUE, over everything else
    no_gate_reason: str | None = None  # bypass the inspection gate; the reason is recorded
    gate_path: Path | None = None
    eval_every: int | None = None  # None: the task's eval.every
    eval_prompts: int | None = None  # None: the task's eval.max_prompts
    report_to: str = "none"
    progress: bool = True
    peft: str | None = None  # none | lora | qlora; None: the config file's choice (rlvr plan), else none


@dataclass(frozen=True)
class RunSettings:
    """Every value a run trains with, resolved and validated (nothing has loaded yet)."""

    hardware: Mapping[str, Any]  # what this process can use (rlvr.plan.recipe.hardware)
    grpo: Mapping[str, Any]  # the GRPOConfig values, reward_weights included
    rewards: RewardSet
    justified: Mapping[str, str]  # key -> the written reason for crossing the recipe's floor
    stop: StopRules
    dynamic: DynamicSampling
    model_arg: str  # the model as asked for (--model or the task's)
    model_ref: str  # the same, resolved to what loads
    peft: str  # none | lora | qlora
    variant: str
    config_file: RunConfig | None  # the --config file, when one was given
    origin: Mapping[str, str]  # each value's layer (rlvr.plan.recipe.Settings.origin): config.yaml's record


def world_size() -> int:
    """Training processes under ``accelerate launch`` (1 without it)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    """Whether this process writes the run's files (rank 0)."""
    return os.environ.get("RANK", "0") == "0"


def layered_settings(
    task: Task,
    opts: TrainOptions,
    hw: Mapping[str, Any],
    file: RunConfig | None = None,
    rewards: RewardSet | None = None,
) -> Settings:
    """Every value of this run with the layer it came from (``rlvr.plan.recipe.resolve``): rlvr's
    defaults < recipe < hardware < task < config file < ``--set`` < this command's flags < the
    weights of ``rewards`` (the terms training pays). ``file``: the config file already read (else
    ``opts.config_path`` is read here). Sets the loggers' folders in the environment
    (``logging_places``)."""
    from ..plan import recipe

    if file is None and opts.config_path is not None:
        file = RunConfig.read(opts.config_path)
    above = []
    if file is not None:
        grpo = {k: v for k, v in file.grpo.items() if k not in ("output_dir", "reward_weights")}
        above.append(Layer("config file", grpo, file.stop, file.dynamic, f"{file.source}: ", file.justification))
    # disable_tqdm: our own bar (quiet_progress); the Trainer's prints every log dict
    flags: dict[str, Any] = {"output_dir": str(opts.run_dir / "checkpoints"), "report_to": opts.report_to}
    flags |= {"disable_tqdm": True} | ({"max_steps": opts.max_steps} if opts.max_steps is not None else {})
    above += [Layer("--set", opts.overrides), Layer("rlvr train", flags)]
    if rewards is not None:
        above.append(Layer("task rewards", {"reward_weights": rewards.weights}))
    defaults = {"max_steps": -1, **logging_places(opts.report_to, opts.run_dir, task.name)}
    return recipe.resolve(
        task.grpo,
        generation=dataclasses.asdict(task.generation),
        hw=hw,
        seed=task.seed,
        below=[Layer("rlvr default", defaults)],
        above=above,
    )


def peft_setup(peft: str, hw: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(peft_config for GRPOTrainer, extra from_pretrained kwargs) for ``peft``.

    QLoRA loads the base model in 4-bit NF4 with bitsandbytes, which needs a CUDA GPU: refused
    on CPU with the reason (written and checked on CPU only; the GPU path is untested here)."""
    if peft == "none":
        return None, {}
    if peft not in PEFT_CHOICES:
        raise ConfigError(Problem("peft", f"unknown {peft!r}", f"one of {', '.join(PEFT_CHOICES)}"))
    from peft import LoraConfig

    kwargs: dict[str, Any] = {}
    if peft == "qlora":
        import importlib.util

        if not hw.get("gpus") or importlib.util.find_spec("bitsandbytes") is None:
            raise ConfigError(
                Problem(
                    "peft",
                    "qlora loads the base model in 4-bit with bitsandbytes, which needs a CUDA GPU "
                    "and the bitsandbytes package",
                    "use --peft lora (or none) on this machine",
                )
            )
        import torch
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16 if hw.get("bf16") else torch.float16,
        )
    return (
        LoraConfig(
            r=int(LORA["r"]),
            lora_alpha=int(LORA["lora_alpha"]),
            lora_dropout=float(LORA["lora_dropout"]),
            target_modules=str(LORA["target_modules"]),
            task_type=str(LORA["task_type"]),
        ),
        kwargs,
    )


# The packages each logger of TRL's report_to needs (any one of them); a name not here is left to TRL.
REPORT_TO_PACKAGES: dict[str, tuple[str, ...]] = {
    "tensorboard": ("tensorboard", "tensorboardX"),
    "trackio": ("trackio",),
    "wandb": ("wandb",),
    "mlflow": ("mlflow",),
    "comet_ml": ("comet_ml",),
    "clearml": ("clearml",),
    "neptune": ("neptune",),
    "swanlab": ("swanlab",),
    "dvclive": ("dvclive",),
    "codecarbon": ("codecarbon",),
}


def report_to_problems(report_to: str | list[str], flag: str = "--report-to") -> list[Problem]:
    """A problem for each logger in ``report_to`` whose package is not installed (TRL would fail
    with a traceback after the model has loaded), naming what to install."""
    import importlib.util

    names = report_to if isinstance(report_to, list) else [x.strip() for x in str(report_to).split(",")]
    out = []
    for name in names:
        packages = REPORT_TO_PACKAGES.get(name)
        if packages and not any(importlib.util.find_spec(p) for p in packages):
            out.append(
                Problem(
                    f"{flag} {name}",
                    f"the {name} logger needs the {packages[0]} package, which is not installed",
                    f"pip install {packages[0]} (into this environment), or pass {flag} none",
                )
            )
    return out


_PLACED: dict[str, str] = {}  # the environment values rlvr set itself (a later run in the process moves them)


def _place(key: str, value: str) -> None:
    """Set ``key`` unless the user set it (a value rlvr set for an earlier run is replaced)."""
    if key not in os.environ or os.environ[key] == _PLACED.get(key):
        os.environ[key] = value
        _PLACED[key] = value


def logging_places(report_to: str | list[str], run_dir: Path, name: str) -> dict[str, Any]:
    """Where TensorBoard and trackio write, inside the run directory under the task's name (TRL's
    defaults are ``<output_dir>/runs/<date>`` and a trackio project called "huggingface" in the
    user's cache). Sets ``TENSORBOARD_LOGGING_DIR`` and ``TRACKIO_DIR`` unless the user set them;
    returns the config values to add (``project`` and ``run_name``)."""
    names = report_to if isinstance(report_to, list) else [x.strip() for x in str(report_to).split(",")]
    if "tensorboard" in names:
        _place("TENSORBOARD_LOGGING_DIR", str(run_dir / "tensorboard" / name))
    if "trackio" in names:
        _place("TRACKIO_DIR", str(run_dir / "trackio"))
    return {"project": name, "run_name": name} if names and names != ["none"] else {}


def value_type_problems(cfg: Mapping[str, Any], config_class: type, *, prefix: str = "") -> list[Problem]:
    """A problem for every value whose field in ``config_class`` (TRL's GRPOConfig or SFTConfig) is
    a number or a flag and the value is not one (``--set learning_rate=fast``), found before any
    weights load rather than as a traceback from the optimizer. Fields of other types are left to
    TRL."""
    import typing

    try:
        hints = typing.get_type_hints(config_class)
    except Exception:  # noqa: BLE001 - a TRL whose hints do not resolve: nothing to check against
        return []
    out = []
    for key, value in cfg.items():
        hint = hints.get(key)
        args = set(typing.get_args(hint)) if typing.get_origin(hint) in (typing.Union, types.UnionType) else {hint}
        allow_none = type(None) in args
        args.discard(type(None))
        if value is None and allow_none or len(args) != 1:
            continue
        kind = args.pop()
        if kind is bool:
            ok, what, example = isinstance(value, bool), "true or false", "true"
        elif kind is int:
            ok, what, example = isinstance(value, int) and not isinstance(value, bool), "a whole number", "8"
        elif kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            what, example = "a number", "5e-7" if "rate" in key else "0.1"
        else:
            continue
        if not ok:
            out.append(
                Problem(
                    f"{prefix}{key}",
                    f"{value!r} is not {what} ({config_class.__name__}.{key} is {kind.__name__})",
                    f"e.g. {prefix}{key}={example}" if prefix.startswith("--") else f"e.g. {key}: {example}",
                )
            )
    return out


def validate_config(
    cfg: Mapping[str, Any],
    task: Task,
    model_ref: str,
    hw: Mapping[str, Any],
    justified: Mapping[str, str],
    peft: str = "none",
) -> None:
    """The recipe's validation (every problem at once) against this machine and this model,
    before any weights load: unknown keys, batch arithmetic, bf16, vLLM mode, the group-size
    floor without a written justification, MoE without GSPO, a reference TRL cannot rebuild."""
    from ..plan.architecture import load_architecture, model_facts
    from ..plan.recipe import Target
    from ..plan.validate import check

    try:
        moe = load_architecture(model_ref).moe
    except Exception:  # noqa: BLE001 - an unreadable config is reported when the model loads
        moe = False
    target = Target(
        gpus=int(hw.get("gpus", 0)),
        bf16=bool(hw.get("bf16")),
        processes=world_size(),
        vllm_cpu=bool(hw.get("vllm_cpu")),
    )
    config = {k: v for k, v in cfg.items() if k not in ("output_dir",)}
    from trl import GRPOConfig

    wrong = value_type_problems(config, GRPOConfig)
    if wrong:
        raise ConfigError(wrong, source=str(task.path))
    check(
        config,
        source=str(task.path),
        target=target,
        model=model_facts(model_ref, False, moe),
        justified=justified,
        peft=peft,
    )


def enforce_gate(task: Task, opts: TrainOptions) -> dict[str, Any]:
    """THE place where the inspection gate is checked: before any model loads.

    Training against an uninspected reward is how a run reward-hacks. Returns the summary that
    goes into the run's config; ``--no-gate REASON`` bypasses the check and records the reason.
    """
    from ..gate import enforce

    return enforce(task, gate_path=opts.gate_path, no_gate_reason=opts.no_gate_reason, model=opts.model)


def resolve_settings(task: Task, opts: TrainOptions) -> RunSettings:
    """Every value the run trains with, checked against this machine and the model before any
    weights load (the gate is checked before this, by ``enforce_gate``)."""
    from ..lengths import require_fit
    from ..models import resolve_model
    from ..plan import recipe
    from .dynamic import check_batch

    hw = recipe.hardware()
    from trl import GRPOConfig

    wrong = value_type_problems(opts.overrides, GRPOConfig, prefix="--set ") + report_to_problems(opts.report_to)
    if wrong:
        raise ConfigError(wrong, source="rlvr train")
    file = RunConfig.read(opts.config_path) if opts.config_path is not None else None
    rewards = task.reward_set()
    values = layered_settings(task, opts, hw, file, rewards)
    cfg = values.grpo
    justified = values.justified
    dynamic = values.dynamic
    if dynamic.mode == "filter":  # an unset re-check becomes two epochs' worth of steps
        per_step = (
            int(cfg.get("per_device_train_batch_size", 8))
            * int(cfg.get("gradient_accumulation_steps", 1))
            * world_size()
            // int(cfg.get("num_generations", 8))
        )
        dynamic = dynamic.for_epoch(len(task.load_split("train")), per_step)
    model_arg = opts.model or task.model
    model_ref = resolve_model(model_arg)
    peft = opts.peft or (file.peft if file is not None else None) or "none"
    validate_config(cfg, task, model_ref, hw, justified, peft)
    check_batch(dynamic, cfg, world_size())
    require_fit(task, model_ref, budget=cfg.get("max_completion_length"))  # refused before weights load
    return RunSettings(
        hardware=hw,
        grpo=cfg,
        rewards=rewards,
        justified=justified,
        stop=values.stop,
        dynamic=dynamic,
        model_arg=model_arg,
        model_ref=model_ref,
        peft=peft,
        variant=values.variant,
        config_file=file,
        origin=values.origin,
    )
