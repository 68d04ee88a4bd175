"""The whole plan: a ``PlanRequest`` (task, hardware, variant) -> a ``Plan``, written and printed.

``build_plan`` reads top to bottom: check the request, resolve the recipe for the task and the
hardware (``recipe``), fit it into GPU memory (``memory``: the first setting that fits, with the
per-device batch lowered and gradient accumulation raised so the batch stays the same), validate
the result (``validate.validate``: every problem at once), then write the launch commands
(``launch``) and a rough duration. ``write_plan`` writes the plan YAML and the accelerate files
beside it; ``format_plan`` is what ``rlvr plan`` prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import atomic
from ..audit.tripwire import TripwireRules, plan_env
from ..audit.tripwire import rules_for as tripwire_rules
from ..errors import ConfigError, Problem
from ..settings import Layer, Settings, Target, check, file, recipe, resolve
from .architecture import HUB_IDS, SIZE_CLASSES, load_architecture, model_facts
from .launch import Cluster, Duration, LaunchPlan, estimate_duration, plan_launch
from .memory import Estimate, Setting, fits_or_raise, format_estimate, recommend
from .sftmemory import SftEstimate, sft_estimate_for_task

if TYPE_CHECKING:
    from ..task.spec import Task


@dataclass(frozen=True)
class PlanRequest:
    task: str
    gpus: int = 1
    gpu_memory_gb: float = 80.0
    nodes: int = 1
    variant: str = "grpo"
    peft: str = "none"
    model: str | None = None
    bf16: bool = True
    fsdp: bool = False
    justify: Mapping[str, str] = field(default_factory=dict)
    force_variant: str | None = None
    prompt_tokens: int | None = None
    max_steps: int | None = None
    run_dir: str = "runs/plan"
    output: str = "plan.yaml"
    vllm: str | None = None  # "colocate" or "server": vLLM in that mode (on CPU: vLLM's CPU build)


@dataclass(frozen=True)
class Plan:
    settings: Settings  # every value with the layer it came from
    meta: file.ConfigMeta
    estimate: Estimate | None  # None on CPU
    launch: LaunchPlan
    duration: Duration | None
    cluster: Cluster
    notes: tuple[str, ...] = ()
    hardware: str = ""
    sft: SftEstimate | None = None  # the SFT warm start's memory (rlvr.plan.sftmemory)
    tripwire: TripwireRules = field(default_factory=TripwireRules)  # the reward-hack tripwire's thresholds

    @property
    def config(self) -> dict[str, Any]:
        return self.settings.grpo

    @property
    def stop(self) -> dict[str, Any]:  # the stop rules the run will apply, every value
        return self.settings.stop.to_json()

    @property
    def dynamic(self) -> dict[str, Any]:  # dynamic sampling the run will apply, every value
        return self.settings.dynamic.to_json()


def _prompt_tokens(task: Task) -> int:
    """The longest rendered prompt in the training split, at ~3 characters per token (a
    conservative guess for English and digits; pass --prompt-tokens to set it)."""
    rows = task.load_split("train")
    longest = max((len(str(task.render_prompt(r))) for r in rows[:2000]), default=64)
    return max(16, -(-longest // 3))


def build_plan(req: PlanRequest) -> Plan:
    """Resolve, fit and validate a config for ``req``; raises ConfigError listing every problem,
    or PlanError when nothing fits."""
    from ..models import resolve_model
    from ..task import load_task

    problems: list[Problem] = []
    if req.gpus < 0 or req.nodes < 1:
        problems.append(
            Problem(
                "--gpus/--nodes",
                f"need gpus >= 0 and nodes >= 1, got {req.gpus} and {req.nodes}",
                "pass --gpus 1 for one GPU, 0 for CPU",
            )
        )
    if req.gpus and req.gpu_memory_gb <= 0:
        problems.append(
            Problem(
                "--gpu-memory", f"must be positive, got {req.gpu_memory_gb}", "the memory of one GPU in GB, e.g. 80"
            )
        )
    if req.variant not in recipe.VARIANTS:
        problems.append(
            Problem("--variant", f"unknown variant {req.variant!r}", f"one of {', '.join(recipe.VARIANTS)}")
        )
    if req.peft not in ("none", "lora", "qlora"):
        problems.append(Problem("--peft", f"unknown {req.peft!r}", "one of none, lora, qlora"))
    if problems:
        raise ConfigError(problems)
    task = load_task(req.task)
    ref = req.model or task.model
    arch = load_architecture(ref)
    table_entry = next((k for k, a in SIZE_CLASSES.items() if a is arch), None)
    model_id = HUB_IDS.get(table_entry or "", ref)
    total = req.gpus * req.nodes
    bf16 = bool(req.bf16 and total)
    hw = {"gpus": total, "bf16": bf16, "vllm": total > 0}
    flags = [Layer("--max-steps", {"max_steps": req.max_steps})] if req.max_steps is not None else []
    if req.vllm is not None:
        flags.append(Layer("--vllm", {"use_vllm": True, "vllm_mode": req.vllm}))
    flags.append(Layer("--justify", justify=req.justify))
    settings = resolve(task, hw=hw, variant=req.variant, above=flags)
    cfg = settings.grpo
    if not total and cfg.get("use_vllm") and cfg.get("vllm_mode") == "server":
        # rlvr.engines.vllm_serve listens there; the engine takes 1-3 min to start on CPU (under every layer)
        cpu = {"vllm_server_host": "127.0.0.1", "vllm_server_timeout": 900.0}
        settings = settings.under(Layer("vLLM CPU default", cpu))
    justified = settings.justified
    prompt_tokens = req.prompt_tokens or _prompt_tokens(task)
    notes: list[str] = []
    est = None
    cluster = Cluster(gpus=max(req.gpus, 1), nodes=req.nodes, bf16=req.bf16, fsdp=req.fsdp)
    if total:
        base = Setting(
            gpus=total,
            nodes=req.nodes,
            gpu_memory_gb=req.gpu_memory_gb,
            peft=req.peft,
            beta=float(cfg["beta"]),
            per_device_batch=int(cfg["per_device_train_batch_size"]),
            prompt_tokens=prompt_tokens,
            completion_tokens=int(cfg["max_completion_length"]),
        )
        rec = recommend(arch, base, fixed_peft=req.peft != "none")
        est = fits_or_raise(rec)
        s = est.setting
        old_bs = int(cfg["per_device_train_batch_size"])
        fit = rec.config_patch()
        if s.per_device_batch != old_bs:  # keep the completions per optimizer step
            fit["gradient_accumulation_steps"] = int(cfg["gradient_accumulation_steps"]) * old_bs // s.per_device_batch
            if "steps_per_generation" in cfg and req.variant == "gspo":
                fit["steps_per_generation"] = 4 * fit["gradient_accumulation_steps"]
            notes.append(
                f"per_device_train_batch_size {old_bs} -> {s.per_device_batch} to fit; "
                "gradient_accumulation_steps raised to keep the batch"
            )
        if s.vllm == "server" and req.nodes > 1:
            fit["vllm_server_host"] = "SERVER_NODE_IP"  # a placeholder the launch notes name
        settings = settings.over(Layer("memory fit", fit))
        cfg = settings.grpo
        cluster = dataclasses.replace(
            cluster,
            server_gpus=s.server_gpus if s.vllm == "server" else 0,
            tensor_parallel=s.tensor_parallel,
            zero=s.zero,
        )
        if s.peft != "none":
            notes.append(
                f"{s.peft}: GRPOConfig has no PEFT field, so the plan records it as env RLVR_PEFT, "
                "which rlvr train --config reads "
                "(rank 16 on all linear layers); with trl grpo: --use_peft --lora_r 16 --lora_target_modules all-linear"
                + (" --load_in_4bit" if s.peft == "qlora" else "")
            )
    target = Target(gpus=req.gpus, nodes=req.nodes, bf16=bf16, server_gpus=cluster.server_gpus, vllm_cpu=not total)
    facts = model_facts(ref, table_entry is not None, arch.moe)
    peft = est.setting.peft if est is not None else req.peft
    problems = check.validate(
        cfg, target=target, model=facts, peft=peft, justified=justified, forced_variant_reason=req.force_variant
    )
    if problems:
        raise ConfigError(problems, source=f"plan for {task.path}")
    extra = {"FORCED_VARIANT": req.force_variant} if req.force_variant else {}
    meta = file.ConfigMeta(
        variant=req.variant, justifications=justified, task=str(task.path), model=model_id, peft=peft, extra=extra
    )
    # A vLLM server loads a folder or hub id: a built-in model is materialised to its folder first.
    served = resolve_model(model_id) if model_id.startswith("builtin:") else model_id
    launch = plan_launch(
        cluster,
        task=str(task.path),
        config=req.output,
        model=served,
        run_dir=req.run_dir,
        train_model=req.model,
        use_vllm=bool(cfg.get("use_vllm")),
        vllm_mode=str(cfg.get("vllm_mode", "colocate")),
        vllm_cpu=not total,
    )
    duration = None
    if total:
        procs = target.num_processes
        per_step = int(cfg["per_device_train_batch_size"]) * procs * int(cfg["gradient_accumulation_steps"])
        prompts_per_step = max(1, per_step // int(cfg["num_generations"]))
        steps = req.max_steps or -(-len(task.load_split("train")) // prompts_per_step)
        duration = estimate_duration(
            active_params=arch.active_params,
            params=arch.params,
            prompt_tokens=prompt_tokens,
            completion_tokens=int(cfg["max_completion_length"]),
            completions_per_step=per_step,
            steps=steps,
            gpus=total,
            beta=float(cfg["beta"]),
            concurrent_sequences=max(1, est.kv_tokens // (prompt_tokens + int(cfg["max_completion_length"])))
            if est
            else 1,
        )
    for term in recipe.term_patch(req.variant, cfg, {t.verifier for t in task.rewards}):
        opts = ", ".join(f"{k}: {v}" for k, v in term["options"].items())
        notes.append(
            f"{req.variant} adds a reward term the task lacks; add to its rewards: "
            f"- {{name: {term['name']}, verifier: {term['verifier']}, weight: {term['weight']}, options: {{{opts}}}}}"
        )
    where = (
        f"{req.gpus} x {req.gpu_memory_gb:g} GB GPU(s)" + (f" x {req.nodes} nodes" if req.nodes > 1 else "")
        if total
        else "CPU"
    )
    sft = sft_estimate_for_task(task, arch, prompt_tokens, device="gpu" if total else "cpu")
    rules = tripwire_rules(task.grpo, str(task.path))  # refused here, not after the model loads
    return Plan(settings, meta, est, launch, duration, cluster, tuple(notes), where, sft, rules)


def write_plan(plan: Plan, output: str | Path) -> list[Path]:
    """Write the plan YAML and the accelerate files beside it; returns the paths written."""
    output = Path(output)
    est = plan.estimate
    header = [
        f"Written by rlvr plan: {plan.meta.variant} on {plan.hardware}; task {plan.meta.task}",
        f"model {plan.meta.model}; TRL {check.trl_version()}. "
        "Flat GRPOConfig values: rlvr train --config and trl grpo --config read it.",
        "env: holds rlvr's own record (variant, justifications); TRL exports it as environment variables.",
    ]
    if est is not None:
        header.append(
            f"memory: peak {est.peak / 1e9:.1f} GB of {est.capacity / 1e9:.0f} GB per training GPU "
            "(estimate; see rlvr memory)"
        )
    header += [
        "stop rules (env RLVR_STOP_*; 0 steps turns a rule off): "
        + ", ".join(f"{k} {v}" for k, v in plan.stop.items()),
        f"dynamic sampling: {plan.dynamic.get('mode', 'off')}"
        + (
            " (dynamic: below)"
            if plan.dynamic.get("mode", "off") != "off"
            else " (plain GRPO: every prompt is trained, flat groups included; set grpo.dynamic in the task to change)"
        ),
    ]
    header.append(plan.tripwire.describe() + " (env RLVR_TRIPWIRE_*; set grpo.tripwire in the task to change)")
    header += [f"run: {c}" for c in plan.launch.commands]
    meta = plan.meta
    doc = file.RunConfig(
        grpo=dict(plan.config),
        variant=meta.variant,
        justification=dict(meta.justifications),
        task=meta.task,
        model=meta.model,
        peft=meta.peft,
        stop=dict(plan.stop),
        dynamic=dict(plan.dynamic) if plan.dynamic.get("mode", "off") != "off" else {},
        record={**meta.extra, **plan_env(plan.tripwire)},
        flat=True,
    )
    written = [doc.write(output, header="\n".join(header))]
    for name, text in plan.launch.files.items():
        path = output.parent / name
        written.append(atomic.write_text(path, text))
    return written


def format_origins(settings: Settings) -> list[str]:
    """Every value under the layer it came from, the layers in order of precedence."""
    values = settings.values()
    ordered = [*file.ordered(settings.grpo), *(k for k in values if k not in settings.grpo)]
    by_layer: dict[str, list[str]] = {name: [] for name in (layer.name for layer in settings.layers)}
    for key in ordered:
        by_layer.setdefault(settings.origin[key], []).append(f"{key}={values[key]}")
    lines = ["values by where each came from (a later layer wins):"]
    return lines + [f"  {name}: {', '.join(items)}" for name, items in by_layer.items() if items]


def format_plan(plan: Plan) -> str:
    """The plan as ``rlvr plan`` prints it: the key values, memory, launch commands, duration, notes."""
    lines = [f"variant {plan.meta.variant}, model {plan.meta.model}, {plan.hardware}"]
    lines += format_origins(plan.settings)
    if plan.meta.justifications:
        lines += [f"  justified: {k}: {v}" for k, v in plan.meta.justifications.items()]
    if plan.estimate is not None:
        lines += ["memory:", *("  " + line for line in format_estimate(plan.estimate).splitlines())]
    else:
        lines.append("memory: CPU run, no GPU plan")
    if plan.sft is not None:  # rlvr sft trains in fp32 without vLLM: its own line, not GRPO's parts
        lines.append(f"  rlvr sft: {plan.sft.text()}")
    lines.append(plan.tripwire.describe())
    lines.append("launch:")
    lines += [f"  $ {c}" for c in plan.launch.commands]
    lines += [f"  note: {n}" for n in plan.launch.notes]
    if plan.duration is not None:
        d = plan.duration
        # Significant digits, not fixed decimals: a 135 M model's step is milliseconds on a GPU
        # ("0.0 s = 0.00 h" said nothing).
        lines.append(
            f"duration (rough): {d.steps} steps x {d.seconds_per_step:.2g} s = {d.hours * 60:.3g} min, "
            f"{d.gpu_hours:.2g} GPU-hours; {d.basis}"
        )
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)
