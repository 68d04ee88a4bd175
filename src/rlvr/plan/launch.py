"""Launch plan: the commands and accelerate config files that run a plan, and a rough duration.

- One GPU (or CPU): ``rlvr train TASK --config PLAN.yaml``; vLLM, when used, is colocated.
- Several GPUs or nodes: ``accelerate launch`` with a DeepSpeed ZeRO or FSDP config file written
  beside the plan, running ``python -m rlvr.cli.main train``; in server mode the first GPU(s) of
  node 0 run ``trl vllm-serve`` and training gets the rest (``CUDA_VISIBLE_DEVICES`` split).
- CPU processes (the distributed smoke test): ``accelerate launch --multi_gpu --num_processes N``
  with ``use_cpu: true`` in the GRPOConfig. accelerate's ``--cpu`` flag alone starts N
  independent single processes; ``--multi_gpu`` starts them under torchrun, and with ``use_cpu``
  accelerate then joins them with the gloo backend (checked with accelerate 1.15).

The duration is a rough estimate, not a measurement: training FLOPs at 6 x active params x
tokens (+2 x for the reference forward when beta > 0) at an assumed 35 % of the GPU's dense
bf16 peak, plus bandwidth-bound decoding (each decode step reads the bf16 weights once). It
ignores prefill, weight sync to vLLM, logging and evaluation. Treat it as an order of magnitude.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, PlanError, Problem

# Assumptions of the duration estimate (H100 SXM-class numbers; override per GPU).
GPU_BF16_FLOPS = 989e12
GPU_BANDWIDTH = 3.35e12  # bytes/s
MFU = 0.35


@dataclass(frozen=True)
class Cluster:
    gpus: int = 1  # per node
    nodes: int = 1
    server_gpus: int = 0  # on node 0, for the vLLM server (server mode)
    tensor_parallel: int = 1
    zero: int = 0  # 0 (DDP), 1, 2, 3
    fsdp: bool = False  # FSDP2 instead of DeepSpeed for sharding
    bf16: bool = True
    main_process_ip: str = "NODE0_IP"
    main_process_port: int = 29500
    vllm_port: int = 8000

    @property
    def train_processes(self) -> int:
        return max(1, self.gpus * self.nodes - self.server_gpus)


@dataclass(frozen=True)
class LaunchPlan:
    commands: tuple[str, ...]
    files: Mapping[str, str] = field(default_factory=dict)  # file name (beside the plan) -> text
    notes: tuple[str, ...] = ()


def accelerate_config(
    cluster: Cluster, *, processes_per_node: int, machines: int | None = None, cpu: bool = False
) -> dict[str, Any]:
    """An accelerate config file's mapping: DeepSpeed ZeRO-N, FSDP2 or plain multi-GPU (DDP)."""
    machines = cluster.nodes if machines is None else machines
    cfg: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": "bf16" if cluster.bf16 and not cpu else "no",
        "num_machines": machines,
        "num_processes": processes_per_node * machines,
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": cpu,
    }
    if machines > 1:
        cfg["main_process_ip"] = cluster.main_process_ip
        cfg["main_process_port"] = cluster.main_process_port
    if cpu or cluster.zero == 0 and not cluster.fsdp:
        cfg["distributed_type"] = "MULTI_GPU"
    elif cluster.fsdp:
        cfg["distributed_type"] = "FSDP"
        cfg["fsdp_config"] = {
            "fsdp_version": 2,
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_reshard_after_forward": True,
            "fsdp_state_dict_type": "FULL_STATE_DICT",
            "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_offload_params": False,
            "fsdp_activation_checkpointing": False,  # GRPOConfig.gradient_checkpointing does it
        }
    else:
        cfg["distributed_type"] = "DEEPSPEED"
        cfg["deepspeed_config"] = {
            "deepspeed_multinode_launcher": "standard",
            "offload_optimizer_device": "none",
            "offload_param_device": "none",
            "zero3_init_flag": cluster.zero == 3,
            "zero3_save_16bit_model": cluster.zero == 3,
            "zero_stage": cluster.zero,
        }
    return cfg


def accelerate_config_name(cluster: Cluster) -> str:
    if cluster.fsdp:
        return "accelerate_fsdp2.yaml"
    return f"accelerate_zero{cluster.zero}.yaml" if cluster.zero else "accelerate_ddp.yaml"


def _q(parts: Sequence[str]) -> str:
    return " ".join(shlex.quote(str(p)) for p in parts)


def plan_launch(
    cluster: Cluster,
    *,
    task: str,
    config: str,
    model: str,
    run_dir: str = "runs/plan",
    use_vllm: bool = True,
    vllm_mode: str = "colocate",
) -> LaunchPlan:
    """The commands that run ``config`` on ``cluster`` (files named relative to the plan)."""
    plan_dir = str(Path(config).parent)
    train_args = ["train", task, "--config", config, "--run-dir", run_dir]
    if cluster.gpus * cluster.nodes <= 1:
        return LaunchPlan(
            (_q(["rlvr", *train_args]),),
            notes=("one GPU: vLLM colocated in the training process" if use_vllm else "one process, no vLLM",),
        )
    notes = []
    server = use_vllm and vllm_mode == "server"
    commands = []
    train_devices = ""
    machines = cluster.nodes
    per_node = cluster.gpus
    if server and cluster.nodes > 1:
        # The server gets the last node; accelerate needs the same process count on every node.
        machines = cluster.nodes - 1
        tp = min(cluster.gpus, 8)
        commands.append(
            f"# on node {cluster.nodes - 1} (the vLLM server): "
            + _q(
                [
                    "trl",
                    "vllm-serve",
                    "--model",
                    model,
                    "--tensor_parallel_size",
                    str(tp),
                    "--data_parallel_size",
                    str(max(1, cluster.gpus // tp)),
                    "--host",
                    "0.0.0.0",
                    "--port",
                    str(cluster.vllm_port),
                ]
            )
        )
        notes.append(
            f"node {cluster.nodes - 1} runs the vLLM server on all {cluster.gpus} GPUs; set vllm_server_host in the plan to its address "
            f"(SERVER_NODE_IP); nodes 0..{machines - 1} train"
        )
    elif server:
        per_node = cluster.gpus - cluster.server_gpus
        if per_node < 1:
            raise PlanError(f"the vLLM server takes all {cluster.gpus} GPUs of the node; nothing is left to train on")
        server_devices = ",".join(str(i) for i in range(cluster.server_gpus))
        train_devices = ",".join(str(i) for i in range(cluster.server_gpus, cluster.gpus))
        tp = cluster.server_gpus
        commands.append(
            f"CUDA_VISIBLE_DEVICES={server_devices} "
            + _q(
                [
                    "trl",
                    "vllm-serve",
                    "--model",
                    model,
                    "--tensor_parallel_size",
                    str(tp),
                    "--data_parallel_size",
                    "1",
                    "--host",
                    "0.0.0.0",
                    "--port",
                    str(cluster.vllm_port),
                ]
            )
        )
        notes.append(
            f"start the vLLM server first (GPUs {server_devices}); training reaches it at vllm_server_host:{cluster.vllm_port}"
        )
    if server:
        notes.append(
            "trl vllm-serve is deprecated from TRL 2.0 in favour of vllm serve with TRL's weight-transfer flags"
        )
    name = accelerate_config_name(cluster)
    acc_path = str(Path(plan_dir) / name)
    files = {name: _yaml(accelerate_config(cluster, processes_per_node=per_node, machines=machines))}
    for rank in range(machines):
        launch = ["accelerate", "launch", "--config_file", acc_path, "--num_processes", str(per_node * machines)]
        if machines > 1:
            launch += [
                "--num_machines",
                str(machines),
                "--machine_rank",
                str(rank),
                "--main_process_ip",
                cluster.main_process_ip,
                "--main_process_port",
                str(cluster.main_process_port),
            ]
        prefix = f"CUDA_VISIBLE_DEVICES={train_devices} " if train_devices else ""
        commands.append(prefix + _q([*launch, "-m", "rlvr.cli.main", *train_args]))
    if machines > 1:
        notes.append(
            "run the accelerate command on every training node, each with its --machine_rank; replace NODE0_IP with node 0's address"
        )
    return LaunchPlan(tuple(commands), files, tuple(notes))


def accelerate_argv(
    num_processes: int, argv: Sequence[str], *, config_file: str | None = None, port: int | None = None
) -> list[str]:
    """The ``accelerate launch`` command line that reruns ``rlvr <argv>`` in N processes (used by
    ``rlvr train --launch accelerate``). Without a config file, ``--multi_gpu`` starts the
    processes under torchrun; on CPU (``use_cpu``) accelerate joins them with gloo."""
    if num_processes < 1:
        raise ConfigError(
            Problem(
                "--num-processes",
                f"must be at least 1, got {num_processes}",
                "pass the number of training processes (GPUs)",
            )
        )
    cmd = [sys.executable, "-m", "accelerate.commands.launch"]
    if config_file:
        cmd += ["--config_file", config_file]
    elif num_processes > 1:
        cmd += ["--multi_gpu", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    else:
        cmd += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    cmd += ["--num_processes", str(num_processes)]
    if port is not None:
        cmd += ["--main_process_port", str(port)]
    return [*cmd, "-m", "rlvr.cli.main", *argv]


@dataclass(frozen=True)
class Duration:
    steps: int
    tokens_per_step: int
    seconds_per_step: float
    hours: float
    gpu_hours: float
    basis: str


def estimate_duration(
    *,
    active_params: int,
    params: int,
    prompt_tokens: int,
    completion_tokens: int,
    completions_per_step: int,
    steps: int,
    gpus: int,
    beta: float,
    concurrent_sequences: int,
    gpu_flops: float = GPU_BF16_FLOPS,
    bandwidth: float = GPU_BANDWIDTH,
    mfu: float = MFU,
) -> Duration:
    """A rough duration: training compute plus bandwidth-bound decoding, per optimizer step."""
    seq = prompt_tokens + completion_tokens
    tokens = completions_per_step * seq
    flops = (6 + (2 if beta > 0 else 0)) * active_params * tokens
    train_s = flops / (gpus * gpu_flops * mfu)
    waves = -(-completions_per_step // max(1, concurrent_sequences * gpus))
    decode_s = waves * completion_tokens * (2.0 * params / bandwidth)
    per_step = train_s + decode_s
    hours = per_step * steps / 3600
    basis = (
        f"{tokens} tokens/step ({completions_per_step} completions x {seq}); training {train_s:.1f} s at {mfu:.0%} of {gpu_flops / 1e12:.0f} TFLOP/s x {gpus} GPU(s), "
        f"decoding {decode_s:.1f} s ({waves} wave(s) of {completion_tokens} bandwidth-bound steps at {bandwidth / 1e12:.2f} TB/s)"
    )
    return Duration(steps, tokens, per_step, hours, hours * gpus, basis)


def _yaml(data: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=False)


# -- the whole plan ----------------------------------------------------------------------------
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


@dataclass(frozen=True)
class Plan:
    config: Mapping[str, Any]
    meta: Any  # recipe.ConfigMeta
    estimate: Any  # memory.Estimate | None (None on CPU)
    launch: LaunchPlan
    duration: Duration | None
    cluster: Cluster
    notes: tuple[str, ...] = ()
    hardware: str = ""


def _model_facts(ref: str, arch_is_table: bool, moe: bool) -> Any:
    from .recipe import ModelFacts

    if arch_is_table or ref.startswith("builtin:"):
        return ModelFacts(ref, moe, True)
    p = Path(ref)
    if p.is_file():
        return ModelFacts(ref, moe, False, "it is a config file, not a checkpoint")
    if p.is_dir() and not any(p.glob("*.safetensors")) and not any(p.glob("*.bin")):
        return ModelFacts(ref, moe, False, "the folder holds no weights (*.safetensors or *.bin)")
    return ModelFacts(ref, moe, True)


def _prompt_tokens(task: Any) -> int:
    """The longest rendered prompt in the training split, at ~3 characters per token (a
    conservative guess for English and digits; pass --prompt-tokens to set it)."""
    rows = task.load_split("train")
    longest = max((len(str(task.render_prompt(r))) for r in rows[:2000]), default=64)
    return max(16, -(-longest // 3))


def build_plan(req: PlanRequest) -> Plan:
    """Resolve, fit and validate a config for ``req``; raises ConfigError listing every problem,
    or PlanError when nothing fits."""
    import dataclasses

    from ..task import load_task
    from . import memory, recipe

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
    arch = memory.load_architecture(ref)
    table_entry = next((k for k, a in memory.SIZE_CLASSES.items() if a is arch), None)
    model_id = memory.HUB_IDS.get(table_entry or "", ref)
    total = req.gpus * req.nodes
    hw = {"gpus": total, "bf16": bool(req.bf16 and total), "vllm": total > 0}
    cfg = recipe.resolve(
        task.grpo, generation=dataclasses.asdict(task.generation), hw=hw, seed=task.seed, variant=req.variant
    )
    if req.max_steps is not None:
        cfg["max_steps"] = req.max_steps
    justified = {**recipe.justifications(task.grpo), **req.justify}
    prompt_tokens = req.prompt_tokens or _prompt_tokens(task)
    notes: list[str] = []
    est = None
    cluster = Cluster(gpus=max(req.gpus, 1), nodes=req.nodes, bf16=req.bf16, fsdp=req.fsdp)
    if total:
        base = memory.Setting(
            gpus=total,
            nodes=req.nodes,
            gpu_memory_gb=req.gpu_memory_gb,
            peft=req.peft,
            beta=float(cfg.get("beta", 0.0)),
            per_device_batch=int(cfg["per_device_train_batch_size"]),
            prompt_tokens=prompt_tokens,
            completion_tokens=int(cfg["max_completion_length"]),
        )
        rec = memory.recommend(arch, base, fixed_peft=req.peft != "none")
        est = memory.fits_or_raise(rec)
        s = est.setting
        old_bs = int(cfg["per_device_train_batch_size"])
        cfg.update(rec.config_patch())
        if s.per_device_batch != old_bs:  # keep the completions per optimizer step
            cfg["gradient_accumulation_steps"] = int(cfg["gradient_accumulation_steps"]) * old_bs // s.per_device_batch
            if "steps_per_generation" in cfg and req.variant == "gspo":
                cfg["steps_per_generation"] = 4 * cfg["gradient_accumulation_steps"]
            notes.append(
                f"per_device_train_batch_size {old_bs} -> {s.per_device_batch} to fit; gradient_accumulation_steps raised to keep the batch"
            )
        if s.vllm == "server" and req.nodes > 1:
            cfg["vllm_server_host"] = "SERVER_NODE_IP"  # a placeholder the launch notes name
        cluster = dataclasses.replace(
            cluster,
            server_gpus=s.server_gpus if s.vllm == "server" else 0,
            tensor_parallel=s.tensor_parallel,
            zero=s.zero,
        )
        if s.peft != "none":
            notes.append(
                f"{s.peft}: GRPOConfig has no PEFT field, so the plan records it as env RLVR_PEFT, which rlvr train --config reads "
                "(rank 16 on all linear layers); with trl grpo: --use_peft --lora_r 16 --lora_target_modules all-linear"
                + (" --load_in_4bit" if s.peft == "qlora" else "")
            )
    target = recipe.Target(gpus=req.gpus, nodes=req.nodes, bf16=hw["bf16"], server_gpus=cluster.server_gpus)
    facts = _model_facts(ref, table_entry is not None, arch.moe)
    peft = est.setting.peft if est is not None else req.peft
    problems = recipe.validate(
        cfg, target=target, model=facts, peft=peft, justified=justified, forced_variant_reason=req.force_variant
    )
    if problems:
        raise ConfigError(problems, source=f"plan for {task.path}")
    extra = {"FORCED_VARIANT": req.force_variant} if req.force_variant else {}
    meta = recipe.ConfigMeta(
        variant=req.variant, justifications=justified, task=str(task.path), model=model_id, peft=peft, extra=extra
    )
    # A vLLM server loads a folder or hub id: a built-in model is materialised to its folder first.
    from ..models import resolve_model

    served = resolve_model(model_id) if model_id.startswith("builtin:") else model_id
    launch = plan_launch(
        cluster,
        task=str(task.path),
        config=req.output,
        model=served,
        run_dir=req.run_dir,
        use_vllm=bool(cfg.get("use_vllm")),
        vllm_mode=str(cfg.get("vllm_mode", "colocate")),
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
            beta=float(cfg.get("beta", 0.0)),
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
    return Plan(cfg, meta, est, launch, duration, cluster, tuple(notes), where)


def write_plan(plan: Plan, output: str | Path) -> list[Path]:
    """Write the plan YAML and the accelerate files beside it; returns the paths written."""
    from . import recipe

    output = Path(output)
    est = plan.estimate
    header = [
        f"Written by rlvr plan: {plan.meta.variant} on {plan.hardware}; task {plan.meta.task}",
        f"model {plan.meta.model}; TRL {recipe.trl_version()}. Flat GRPOConfig values: rlvr train --config and trl grpo --config read it.",
        "env: holds rlvr's own record (variant, justifications); TRL exports it as environment variables.",
    ]
    if est is not None:
        header.append(
            f"memory: peak {est.peak / 1e9:.1f} GB of {est.capacity / 1e9:.0f} GB per training GPU (estimate; see rlvr memory)"
        )
    header += [f"run: {c}" for c in plan.launch.commands]
    written = [recipe.write_config(output, plan.config, plan.meta, header="\n".join(header))]
    for name, text in plan.launch.files.items():
        path = output.parent / name
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written


def format_plan(plan: Plan) -> str:
    from .memory import format_estimate

    lines = [f"variant {plan.meta.variant}, model {plan.meta.model}, {plan.hardware}"]
    keys = (
        "loss_type",
        "beta",
        "learning_rate",
        "num_generations",
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "steps_per_generation",
        "bf16",
        "use_vllm",
        "vllm_mode",
        "vllm_gpu_memory_utilization",
        "vllm_enable_sleep_mode",
    )
    lines.append("  " + ", ".join(f"{k}={plan.config[k]}" for k in keys if k in plan.config))
    if plan.meta.justifications:
        lines += [f"  justified: {k}: {v}" for k, v in plan.meta.justifications.items()]
    if plan.estimate is not None:
        lines += ["memory:", *("  " + line for line in format_estimate(plan.estimate).splitlines())]
    else:
        lines.append("memory: CPU run, no GPU plan")
    lines.append("launch:")
    lines += [f"  $ {c}" for c in plan.launch.commands]
    lines += [f"  note: {n}" for n in plan.launch.notes]
    if plan.duration is not None:
        d = plan.duration
        lines.append(
            f"duration (rough): {d.steps} steps x {d.seconds_per_step:.1f} s = {d.hours:.2f} h, {d.gpu_hours:.1f} GPU-hours; {d.basis}"
        )
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)


# -- rlvr train --launch accelerate ------------------------------------------------------------
def argv_from_args(parser: Any, args: Any, *, drop: Sequence[str] = ()) -> list[str]:
    """The command line that reproduces ``args`` for ``parser``'s options (values that differ
    from the defaults), without the options named in ``drop`` -- so a command can rerun itself."""
    import argparse

    positional: list[str] = []
    options: list[str] = []
    for action in parser._actions:  # argparse has no public API for this
        if isinstance(action, argparse._HelpAction) or action.dest in drop or action.dest == argparse.SUPPRESS:
            continue
        if not hasattr(args, action.dest):
            continue
        value = getattr(args, action.dest)
        if not action.option_strings:
            positional += [str(v) for v in value] if isinstance(value, list) else [str(value)]
            continue
        if value == action.default or value is None:
            continue
        flag = action.option_strings[-1] if action.option_strings[-1].startswith("--") else action.option_strings[0]
        if isinstance(action, argparse._StoreTrueAction):
            options.append(flag)
        elif isinstance(action, argparse._StoreFalseAction):
            options.append(flag)
        elif isinstance(action, argparse._AppendAction):
            for v in value:
                options += [flag, str(v)]
        else:
            options += [flag, str(value)]
    return [*positional, *options]


def relaunch(
    command: str,
    parser: Any,
    args: Any,
    *,
    num_processes: int,
    config_file: str | None = None,
    model_refs: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> int:
    """Rerun ``rlvr <command>`` under ``accelerate launch`` in ``num_processes`` processes and
    return its exit status. Built-in models are materialised here first, so the ranks do not
    race to build the same cache folder."""
    import os
    import socket
    import subprocess

    from ..models import resolve_model

    if config_file is not None and not Path(config_file).is_file():
        raise ConfigError(
            Problem(
                "--accelerate-config", f"no such file: {config_file}", "pass an accelerate config written by rlvr plan"
            )
        )
    for ref in model_refs:
        if ref and ref.startswith("builtin:"):
            resolve_model(ref)
    with socket.socket() as s:  # a free port, so two launches on one machine do not collide
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = accelerate_argv(
        num_processes,
        [command, *argv_from_args(parser, args, drop=("launch", "num_processes", "accelerate_config", "debug"))],
        config_file=config_file,
        port=port,
    )
    sys.stderr.write("rlvr: " + _q(argv) + "\n")
    return subprocess.call(argv, env={**os.environ, **(env or {})})
