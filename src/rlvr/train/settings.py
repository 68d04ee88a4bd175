"""What a GRPO run trains with, resolved and checked before any weights load.

``resolve_settings`` gathers every value a run uses into one frozen ``RunSettings``: the GRPOConfig
values, the stop rules and dynamic sampling (layered once, recipe < hardware < task < config file <
``--set`` < flags, by ``rlvr.settings.resolve``: see ``layered_settings``), the written
justifications, the model and the PEFT method. ``rlvr.settings.check.checked`` checks them against
this machine and this model, so a wrong value fails in seconds, not after the model has loaded. A
config file is read once, with ``rlvr.settings.RunConfig``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Problem
from ..rewards.combine import RewardSet
from ..settings import RECIPE, DynamicSampling, Layer, RunConfig, Settings, StopRules, Target, hardware, resolve
from ..settings.check import checked, report_to_problems, value_type_problems
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
    report_to: str = RECIPE["report_to"]
    progress: bool = True
    peft: str | None = None  # none | lora | qlora; None: the config file's choice (rlvr plan), else none


@dataclass(frozen=True)
class RunSettings:
    """Every value a run trains with, resolved and validated (nothing has loaded yet)."""

    hardware: Mapping[str, Any]  # what this process can use (rlvr.settings.hardware)
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
    origin: Mapping[str, str]  # each value's layer (rlvr.settings.Settings.origin): config.yaml's record


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
    """Every value of this run with the layer it came from (``rlvr.settings.resolve``): rlvr's
    defaults < recipe < hardware < task < config file < ``--set`` < this command's flags < the
    weights of ``rewards`` (the terms training pays). ``file``: the config file already read (else
    ``opts.config_path`` is read here). Sets the loggers' folders in the environment
    (``logging_places``)."""
    if file is None and opts.config_path is not None:
        file = RunConfig.read(opts.config_path)
    # disable_tqdm: our own bar (quiet_progress); the Trainer's prints every log dict
    flags: dict[str, Any] = {"output_dir": str(opts.run_dir / "checkpoints"), "report_to": opts.report_to}
    flags |= {"disable_tqdm": True} | ({"max_steps": opts.max_steps} if opts.max_steps is not None else {})
    above = [Layer("--set", opts.overrides), Layer("rlvr train", flags)]
    if rewards is not None:
        above.append(Layer("task rewards", {"reward_weights": rewards.weights}))
    defaults = {"max_steps": -1, **logging_places(opts.report_to, opts.run_dir, task.name)}
    return resolve(task, hw=hw, file=file, below=[Layer("rlvr default", defaults)], above=above)


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


def run_target(hw: Mapping[str, Any]) -> Target:
    """The hardware this process trains on, as the check reads it."""
    return Target(
        gpus=int(hw.get("gpus", 0)),
        bf16=bool(hw.get("bf16")),
        processes=world_size(),
        vllm_cpu=bool(hw.get("vllm_cpu")),
    )


def model_facts_of(model_ref: str) -> Any:
    """What the check needs to know about the model that will load (``rlvr.settings.ModelFacts``)."""
    from ..plan.architecture import load_architecture, model_facts

    try:
        moe = load_architecture(model_ref).moe
    except Exception:  # noqa: BLE001 - an unreadable config is reported when the model loads
        moe = False
    return model_facts(model_ref, False, moe)


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
    from trl import GRPOConfig

    from ..lengths import require_fit
    from ..models import resolve_model

    hw = hardware()
    wrong = value_type_problems(opts.overrides, GRPOConfig, prefix="--set ") + report_to_problems(opts.report_to)
    if wrong:
        raise ConfigError(wrong, source="rlvr train")
    file = RunConfig.read(opts.config_path) if opts.config_path is not None else None
    rewards = task.reward_set()
    model_arg = opts.model or task.model
    model_ref = resolve_model(model_arg)
    peft = opts.peft or (file.peft if file is not None else None) or "none"
    values = checked(
        layered_settings(task, opts, hw, file, rewards),
        target=run_target(hw),
        model=model_facts_of(model_ref),
        source=str(task.path),
        prompts=lambda: len(task.load_split("train")),
        peft=peft,
    )
    require_fit(task, model_ref, budget=values.grpo["max_completion_length"])  # refused before weights load
    return RunSettings(
        hardware=hw,
        grpo=values.grpo,
        rewards=rewards,
        justified=values.justified,
        stop=values.stop,
        dynamic=values.dynamic,
        model_arg=model_arg,
        model_ref=model_ref,
        peft=peft,
        variant=values.variant,
        config_file=file,
        origin=values.origin,
    )
