"""The one resolver of a run's settings (``resolve``) and the one merge of its layers (``merge``).

Order of precedence (last wins): whatever a caller keeps under everything (``below``) < recipe <
hardware (bf16, vLLM mode) < the variant overlay < the task (its generation settings, seed and
``grpo:`` overrides) < a config file (``rlvr train --config``, read by ``rlvr.settings.file``) <
whatever the caller stacks on top (``rlvr train``: ``--set``, then its own flags; ``rlvr plan``:
its flags, then the memory fit). ``merge`` is the one place a value is taken from a layer: every
value keeps the name of the layer it came from (``Settings.origin``), which ``rlvr plan`` prints
and a run's ``config.yaml`` records as ``rlvr.origin``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ConfigError, Problem
from .recipe import (
    DYNAMIC,
    MODES,
    RECIPE,
    SECTION_EXAMPLES,
    SHORT_BATCH,
    STOP,
    TASK_OWN_KEYS,
    VARIANT_DYNAMIC,
    VARIANTS,
    DynamicSampling,
    StopRules,
)

# The task's generation: settings that are GRPOConfig values of the same name.
GENERATION_KEYS = ("temperature", "top_p", "max_completion_length")


class TaskValues(Protocol):
    """What ``resolve`` reads of a task (an ``rlvr.task.Task``; the task package sits above this one)."""

    @property
    def grpo(self) -> Mapping[str, Any]: ...

    @property
    def generation(self) -> Any: ...  # temperature, top_p, max_completion_length

    @property
    def seed(self) -> int: ...

    @property
    def written(self) -> frozenset[str]: ...  # the generation keys and seed the task file sets itself


class FileValues(Protocol):
    """What ``resolve`` reads of a config file (an ``rlvr.settings.file.RunConfig``, which imports
    this module for ``variant_of``)."""

    @property
    def grpo(self) -> Mapping[str, Any]: ...

    @property
    def stop(self) -> Mapping[str, Any]: ...

    @property
    def dynamic(self) -> Mapping[str, Any]: ...

    @property
    def justification(self) -> Mapping[str, str]: ...

    @property
    def source(self) -> str: ...


@dataclass(frozen=True)
class Layer:
    """One source of settings: GRPOConfig values, rlvr's own ``stop`` and ``dynamic`` sections (each
    a mapping; None: not set here) and written justifications. ``where`` begins the name a bad stop
    or dynamic value is reported under (``grpo.`` in a task file: ``grpo.stop.masked_rate``;
    ``plan.yaml: `` in a config file)."""

    name: str  # where the values came from, as rlvr plan prints it: recipe, task, --set, ...
    grpo: Mapping[str, Any] = field(default_factory=dict)
    stop: Any = None
    dynamic: Any = None
    where: str = ""
    justify: Any = None  # key -> the written reason for crossing the recipe's floor (a mapping)


@dataclass(frozen=True)
class Settings:
    """Every value a run uses, resolved, and the layer each came from."""

    grpo: dict[str, Any]  # the GRPOConfig values
    stop: StopRules
    dynamic: DynamicSampling
    justified: dict[str, str]  # key -> the written reason for crossing the recipe's floor
    variant: str  # the variant the values amount to (variant_of)
    origin: Mapping[str, str]  # learning_rate, stop.masked_rate, dynamic.mode, ... -> the layer's name
    layers: tuple[Layer, ...]  # lowest first

    def over(self, *layers: Layer) -> Settings:
        """These settings with ``layers`` on top (a later stage's values: a flag, a memory fit)."""
        return merge((*self.layers, *layers))

    def under(self, *layers: Layer) -> Settings:
        """These settings with ``layers`` below every other (defaults that hold only where nothing
        else sets the value)."""
        return merge((*layers, *self.layers))

    def values(self) -> dict[str, Any]:
        """Every value under the name ``origin`` gives it."""
        own = {f"{name}.{k}": v for name in ("stop", "dynamic") for k, v in getattr(self, name).to_json().items()}
        return {**self.grpo, **own}


def resolve(
    task: TaskValues,
    *,
    hw: Mapping[str, Any],
    variant: str | None = None,
    file: FileValues | None = None,
    below: Sequence[Layer] = (),
    above: Sequence[Layer] = (),
) -> Settings:
    """THE settings of a run of ``task``, for every command (train, plan, probe, inspect, serve,
    task check): ``below`` < recipe < hardware (``hw``: gpus, bf16, vllm) < the variant overlay <
    the task (generation settings, seed, the ``grpo:`` section's values and ``justify:`` reasons) <
    the config ``file`` (its GRPOConfig values, stop, dynamic and justification) < ``above`` (a
    caller's layers, lowest first). The task's ``reward_weights`` is not a value here: the task's
    terms carry it (a caller that pays them adds them as a layer)."""
    if variant is not None and variant not in VARIANTS:
        raise ConfigError(Problem("variant", f"unknown variant {variant!r}", f"one of {', '.join(VARIANTS)}"))
    machine: dict[str, Any] = {"bf16": bool(hw.get("bf16")), "use_cpu": not hw.get("gpus")}
    if hw.get("gpus") and hw.get("vllm"):
        machine |= {"use_vllm": True, "vllm_mode": "colocate" if hw["gpus"] == 1 else "server"}
    grpo = task.grpo
    own = {k: v for k, v in grpo.items() if k not in TASK_OWN_KEYS}
    # Only what the task file writes is the task's: a value it leaves out is the recipe's, and the
    # origin map says so (the task's own defaults are the recipe's values, rlvr.task.spec).
    values = {k: getattr(task.generation, k) for k in GENERATION_KEYS if k in task.written}
    values |= ({"seed": task.seed} if "seed" in task.written else {}) | own
    overlay = dict(VARIANTS[variant or "grpo"])
    if variant == "gspo" and not {"steps_per_generation", "generation_batch_size"} & own.keys():
        overlay["steps_per_generation"] = 4 * int(
            own.get("gradient_accumulation_steps", RECIPE["gradient_accumulation_steps"])
        )
    layers = [
        *below,
        Layer("recipe", RECIPE),
        Layer("hardware", machine),
        Layer("variant", overlay),
        Layer("task", values, grpo.get("stop"), grpo.get("dynamic"), "grpo.", grpo.get("justify")),
    ]
    if file is not None:
        kept = {k: v for k, v in file.grpo.items() if k not in ("output_dir", "reward_weights")}
        layers.append(Layer("config file", kept, file.stop, file.dynamic, f"{file.source}: ", file.justification))
    return merge((*layers, *above))


def merge(layers: Sequence[Layer]) -> Settings:
    """THE one place a value is taken from a layer: each is the last layer's that sets it, and
    ``origin`` names that layer. Stop and dynamic values start from their defaults (the recipe's;
    a variant's dynamic defaults, from the loss the merged values amount to, over them) and are
    checked as each layer gives them: every problem at once, named by the layer's ``where``."""
    grpo: dict[str, Any] = {}
    origin: dict[str, str] = {}
    justified: dict[str, str] = {}
    for layer in layers:
        grpo.update(layer.grpo)
        origin.update(dict.fromkeys(layer.grpo, layer.name))
        if isinstance(layer.justify, Mapping):
            justified.update({str(k): str(v) for k, v in layer.justify.items()})
    variant = variant_of(grpo)
    problems: list[Problem] = []
    sections: dict[str, dict[str, Any]] = {}
    for section, defaults in (("stop", STOP), ("dynamic", DYNAMIC)):
        by_variant = VARIANT_DYNAMIC.get(variant, {}) if section == "dynamic" else {}
        values = {**defaults, **by_variant}
        origin.update({f"{section}.{k}": "variant" if k in by_variant else "recipe" for k in defaults})
        for layer in layers:
            given, at = getattr(layer, section), f"{layer.where}{section}"
            if given is None:
                continue
            if not isinstance(given, Mapping):
                problems.append(Problem(at, f"must be a mapping, got {given!r}", SECTION_EXAMPLES[section]))
                continue
            for key, value in given.items():
                wrong = ("unknown key", f"one of {', '.join(defaults)}") if key not in defaults else _wrong(key, value)
                if wrong:
                    problems.append(Problem(f"{at}.{key}", *wrong))
                    continue
                default = defaults[key]
                values[key] = value if default is None or value is None else type(default)(value)
                origin[f"{section}.{key}"] = layer.name
        sections[section] = values
    if problems:
        raise ConfigError(problems)
    stop, dynamic = StopRules(**sections["stop"]), DynamicSampling(**sections["dynamic"])
    return Settings(grpo, stop, dynamic, justified, variant, origin, tuple(layers))


def _wrong(key: str, value: Any) -> tuple[str, str] | None:
    """(what is wrong, how to fix it) for a stop or dynamic value, or None when it is allowed."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    count = number and isinstance(value, int)
    if key in ("masked_steps", "zero_std_steps") and not (count and value >= 0):
        return f"must be a whole number of logging steps (0 turns the rule off), got {value!r}", ""
    if key in ("masked_rate", "zero_std") and not (number and 0 < value <= 1):
        return f"must be a share in (0, 1], got {value!r}", ""
    if key == "mode" and value not in MODES:
        return (
            f"{value!r} is not one of {', '.join(MODES)}",
            "filter skips prompts whose recent groups were flat; resample drops flat groups and generates more; "
            "off is plain GRPO",
        )
    if key == "short_batch" and value not in SHORT_BATCH:
        return (
            f"{value!r} is not one of {', '.join(SHORT_BATCH)}",
            "kept: train on the kept groups only; best: fill the batch with the least flat dropped groups",
        )
    unset = key == "recheck_after" and value is None  # None: two epochs' worth (for_epoch)
    if key in ("visits", "recheck_after", "max_rounds") and not (count and value >= 1 or unset):
        return f"must be a whole number of at least 1, got {value!r}", ""
    if key == "epsilon" and not (number and 0 <= value < math.inf):
        return f"must be a non-negative number, got {value!r}", ""
    return None


def variant_of(cfg: Mapping[str, Any]) -> str:
    """The variant a resolved config amounts to (by its loss, not by how it was written)."""
    if cfg.get("importance_sampling_level") == "sequence":
        return "gspo"
    loss = cfg.get("loss_type", RECIPE["loss_type"])  # a config file that leaves it out: the recipe's
    return loss if loss in VARIANTS else str(loss)
