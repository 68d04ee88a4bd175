"""rlvr train: GRPO with TRL on a task file, gated by the inspection record."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._common import add_set, parse_sets

HELP = "train with GRPO (TRL) on a task; refuses to start without a matching inspection gate"


def configure(p: argparse.ArgumentParser) -> None:
    from ..settings import recipe  # a module, not the mapping: bench/settings_walk.py follows mappings

    p.add_argument("task", help="the task file (task.yaml) or its folder")
    p.add_argument("--run-dir", help="where the run is written (default: runs/<task name>)")
    p.add_argument(
        "--model",
        help="start from this model instead of the task's (a path, hub id or builtin:NAME), e.g. an SFT output",
    )
    p.add_argument(
        "--config",
        help="a GRPOConfig YAML written by `rlvr plan`, a flat `trl grpo --config` file, or a run's own config.yaml "
        "(same settings, PEFT included); task values are overridden by it",
    )
    p.add_argument("--max-steps", type=int, help="stop after this many optimiser steps (smoke runs)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --run-dir from its latest complete checkpoint, with the settings it was started "
        "with (its config.yaml); a flag given with --resume overrides that setting and is printed",
    )
    p.add_argument("--gate", help="the gate record (gate.json) to check; default: the task's gate folder")
    p.add_argument(
        "--no-gate",
        metavar="REASON",
        help="skip the inspection gate; the reason is written into the run's config and metrics",
    )
    p.add_argument("--eval-every", type=int, help="held-out verified-accuracy eval every N steps (0 disables it)")
    p.add_argument("--eval-prompts", type=int, help="held-out prompts per eval (default: the task's eval.max_prompts)")
    p.add_argument(
        "--report-to",
        default=recipe.RECIPE["report_to"],
        help=f"passed to TRL: none, wandb, tensorboard, trackio, ... (default: {recipe.RECIPE['report_to']})",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar: one plain line per log step instead")
    p.add_argument(
        "--peft",
        choices=["none", "lora", "qlora"],
        help="train a LoRA adapter (rank 16, all linear layers; merged into final/, adapter in final/adapter) or "
        "QLoRA (4-bit base, needs a CUDA GPU); default: the --config file's choice, else none",
    )
    add_set(p, "GRPOConfig")
    p.add_argument(
        "--launch",
        choices=["accelerate"],
        help="rerun this command under `accelerate launch` (distributed: one process per GPU, gloo on CPU)",
    )
    p.add_argument("--num-processes", type=int, default=None, help="with --launch: the number of training processes")
    p.add_argument(
        "--accelerate-config",
        default=None,
        help="with --launch: an accelerate config file (DeepSpeed/FSDP, written by rlvr plan)",
    )


def resume_hint(task: str, run_dir: Path) -> str:
    """What an interrupted run prints: the checkpoint a resume would continue from and the exact
    command (no other flags: the run's config.yaml holds its settings)."""
    import shlex

    from ..train.checkpoints import resume_point

    point = resume_point(run_dir)
    command = f"rlvr train {shlex.quote(task)} --run-dir {shlex.quote(str(run_dir))} --resume"
    if point.checkpoint is None:
        return (
            f"rlvr train: no checkpoint in {run_dir} is complete yet, so there is nothing to resume; start again "
            f"in another --run-dir (or delete {run_dir})"
        )
    return f"rlvr train: to continue from {point.checkpoint.path.name} with the run's own settings: {command}"


def run(args: argparse.Namespace) -> int:
    from ..task import load_task
    from ..train import TrainOptions, train
    from ._common import check_model_arg

    check_model_arg(args.model)
    task = load_task(args.task)
    if args.launch or args.num_processes is not None or args.accelerate_config:
        from ..errors import ConfigError, Problem
        from ..plan.launch import relaunch

        if not args.launch or not args.num_processes:
            raise ConfigError(
                Problem(
                    "--launch",
                    "--num-processes and --accelerate-config go with --launch accelerate, which needs "
                    "--num-processes N",
                    "e.g. --launch accelerate --num-processes 2",
                )
            )
        return relaunch(
            args.argv,
            num_processes=args.num_processes,
            config_file=args.accelerate_config,
            model_refs=[args.model or task.model],
        )
    run_dir = Path(args.run_dir) if args.run_dir else Path("runs") / task.name
    opts = TrainOptions(
        run_dir=run_dir,
        model=args.model,
        max_steps=args.max_steps,
        resume=args.resume,
        config_path=Path(args.config) if args.config else None,
        overrides=parse_sets(args.set),
        no_gate_reason=args.no_gate,
        gate_path=Path(args.gate) if args.gate else None,
        eval_every=args.eval_every,
        eval_prompts=args.eval_prompts,
        report_to=args.report_to,
        progress=not args.no_progress,
        peft=args.peft,
    )
    try:
        result = train(task, opts)
    except KeyboardInterrupt:
        if opts.resume or run_dir.exists():
            sys.stderr.write(resume_hint(args.task, run_dir) + "\n")
        raise
    if not result.main_process:  # under accelerate, one process reports
        return 0
    if result.already_done:
        print(
            f"{result.run_dir} already finished at step {result.steps} ({result.seconds:.0f} s); nothing trained, "
            f"final/ kept (pass --max-steps above {result.steps} to train further)"
        )
        return 0
    if result.skipped:
        print(
            f"resume: skipped incomplete checkpoint(s) {', '.join(p.name for p in result.skipped)} (cut off while "
            "saving; set aside as incomplete-<name>)"
        )
    if result.resumed_from is not None:
        print(f"resumed from {result.resumed_from.name}")
    last = result.evals[-1] if result.evals else None
    acc = ""
    if last:
        acc = (
            f"; held-out accuracy {last['eval/accuracy']:.1%} ({last['eval/correct']} correct of {last['eval/n']} "
            f"decided, {last['eval/masked']} masked)"
        )
    print(f"trained to step {result.steps} in {result.seconds:.0f} s{acc}")
    print(f"run: {result.run_dir}  (metrics.jsonl, config.yaml, rollouts/, final/)")
    return 0
