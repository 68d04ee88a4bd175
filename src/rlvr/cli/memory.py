"""``rlvr memory``: per-GPU memory of a GRPO run, and a setting that fits."""

from __future__ import annotations

import argparse

HELP = "estimate per-GPU memory for GRPO on a model and recommend a setting that fits"


def configure(parser: argparse.ArgumentParser) -> None:
    from ..settings import recipe

    parser.add_argument(
        "model",
        nargs="?",
        default=None,
        help="a size class (0.5B 1.5B 3B 7B 8B 14B 32B 70B 30B-A3B), a config.json, a model folder, "
        "builtin:tiny, or a cached hub id",
    )
    parser.add_argument("--gpus", type=int, default=1, help="GPUs in all (default 1)")
    parser.add_argument(
        "--gpu-memory", type=float, default=80.0, metavar="GB", help="memory of one GPU in GB (default 80)"
    )
    parser.add_argument(
        "--peft",
        default=None,
        choices=["none", "lora", "qlora"],
        help="fix the fine-tuning mode (default: the first that fits)",
    )
    beta, batch = recipe.RECIPE["beta"], recipe.RECIPE["per_device_train_batch_size"]
    parser.add_argument(
        "--beta",
        type=float,
        default=beta,
        help=f"KL coefficient: > 0 loads a reference model with full fine-tuning (default: the recipe's {beta})",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=batch,
        help=f"completions per device and micro-batch (default: the recipe's {batch})",
    )
    parser.add_argument("--prompt-tokens", type=int, default=256, help="prompt length (default 256)")
    parser.add_argument("--completion-tokens", type=int, default=1024, help="max completion length (default 1024)")
    parser.add_argument("--no-vllm", action="store_true", help="generate with transformers (no vLLM share)")
    parser.add_argument(
        "--table", action="store_true", help="print the size-class table (also printed when no model is given)"
    )
    parser.add_argument("--json", action="store_true", help="print the estimate as JSON")


def run(args: argparse.Namespace) -> int:
    import json

    from ..errors import ConfigError, Problem
    from ..plan.architecture import load_architecture
    from ..plan.memory import Setting, format_estimate, format_table, recommend, table

    problems = []
    for name in ("gpus", "batch", "prompt_tokens", "completion_tokens"):
        if getattr(args, name) < (0 if name == "prompt_tokens" else 1):
            problems.append(
                Problem(
                    f"--{name.replace('_', '-')}", f"must be positive, got {getattr(args, name)}", "pass a whole number"
                )
            )
    if args.gpu_memory <= 0:
        problems.append(
            Problem("--gpu-memory", f"must be positive, got {args.gpu_memory}", "the memory of one GPU in GB, e.g. 80")
        )
    if problems:
        raise ConfigError(problems)
    if args.model is None or args.table:
        print(
            "weights and optimizer state in GB; logits and checkpointed activations for 16,384 tokens "
            "(8 x 2,048); * = mixture of experts"
        )
        print(format_table(table()))
        if args.model is None:
            return 0
        print()
    arch = load_architecture(args.model)
    base = Setting(
        gpus=args.gpus,
        gpu_memory_gb=args.gpu_memory,
        peft=args.peft or "none",
        beta=args.beta,
        per_device_batch=args.batch,
        prompt_tokens=args.prompt_tokens,
        completion_tokens=args.completion_tokens,
    )
    rec = recommend(arch, base, fixed_peft=args.peft is not None, vllm_available=not args.no_vllm)
    if args.json:
        shown = rec.estimate or rec.closest
        print(
            json.dumps(
                {
                    "fits": rec.fits,
                    "reason": rec.reason,
                    "config_patch": rec.config_patch(),
                    "estimate": shown.to_json() if shown else None,
                },
                indent=2,
                default=str,
            )
        )
        return 0 if rec.fits else 1
    if rec.estimate is None:
        print(rec.reason)
        if rec.closest is not None:
            print("closest:\n" + format_estimate(rec.closest))
        return 1
    print("recommended (first of the settings that fits, in order of preference):")
    print(format_estimate(rec.estimate))
    print("GRPOConfig: " + ", ".join(f"{k}={v}" for k, v in rec.config_patch().items()))
    if rec.estimate.setting.zero:
        print(f"launch with DeepSpeed ZeRO-{rec.estimate.setting.zero} (rlvr plan writes the accelerate file)")
    return 0
