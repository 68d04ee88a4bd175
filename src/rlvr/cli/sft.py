"""rlvr sft: a short supervised warm start for a base model that never succeeds."""

from __future__ import annotations

import argparse

from ._common import add_set, parse_sets

HELP = (
    "supervised warm start (TRL SFTTrainer) on the task's answers, or on an episode task its reference episodes: "
    "the route for a 0 % base rate"
)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", help="the task file (task.yaml) or its folder")
    p.add_argument("--out", help="where the model is saved (default: runs/<task name>/sft)")
    p.add_argument("--model", help="start from this model instead of the task's")
    p.add_argument(
        "--target-pass-rate",
        metavar="LOW[-HIGH]",
        help="stop when the pass rate of a dev slice of the train split reaches LOW: at the first quick dev read at "
        "or above LOW whose confirming read (--confirm-samples) is at or above LOW too; a band (0.2-0.5) also warns "
        "when the confirmed rate lands above HIGH (an overshoot: GRPO gets less signal). GRPO learns most from a model "
        "that succeeds on part of its samples",
    )
    p.add_argument(
        "--check-every",
        type=int,
        default=1,
        metavar="STEPS",
        help="optimiser steps between quick dev reads (default 1: a model can cross a band within a few steps; a quick "
        "read samples one completion per dev row, about a step's cost for short answers; raise it for long ones)",
    )
    p.add_argument(
        "--confirm-samples",
        type=int,
        default=4,
        metavar="K",
        help="completions per dev row of the confirming read, made with a draw of its own when a quick read reaches "
        "LOW (default 4: a single read of 100 rows is about 3 points noisy, and checking every step picks the "
        "luckiest); 0 stops on the quick read. At --check-temperature 0 the quick read is the confirmation",
    )
    p.add_argument(
        "--check-temperature",
        type=float,
        metavar="T",
        help="temperature of the dev check (default: the task's generation.temperature, the one GRPO samples at; "
        "0 is greedy, which says little about how much GRPO can learn)",
    )
    p.add_argument(
        "--dev-size",
        type=int,
        help="rows of the train split held out as the dev slice for --target-pass-rate (default: 100, or a "
        "fifth of the rows when that is smaller; more than half the rows is refused)",
    )
    p.add_argument(
        "--data",
        help="train on this file's rows (the task's columns; JSONL or Parquet) instead of the train "
        "split, so every train row stays unseen for GRPO; held-out prompts in it are refused",
    )
    p.add_argument("--max-steps", type=int, help="at most this many steps (default 1000)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar: one plain line per log step instead")
    add_set(p, "SFTConfig")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..errors import ConfigError
    from ..task import load_task
    from ..taskcheck import sft_problems
    from ..train.sft import SftOptions, run_sft
    from ..train.sftstop import parse_band
    from ._common import check_model_arg

    check_model_arg(args.model)
    task = load_task(args.task)
    overrides = parse_sets(args.set)
    # Misspelt keys fail here, with the closest SFTConfig field, not as a TypeError from TRL.
    problems = sft_problems(task.sft, f"{task.path}: sft.") + sft_problems(overrides, "--set ")
    if not problems:  # a value of the wrong type (--set learning_rate=fast), before the model loads
        from trl import SFTConfig

        from ..settings.check import report_to_problems, value_type_problems
        from ..settings.recipe import SFT_DEFAULTS

        problems = value_type_problems(task.sft, SFTConfig, prefix=f"{task.path}: sft.") + value_type_problems(
            overrides, SFTConfig, prefix="--set "
        )
        report_to = {**SFT_DEFAULTS, **task.sft, **overrides}["report_to"]
        problems += report_to_problems(report_to, "report_to") if isinstance(report_to, (str, list)) else []
    if problems:
        raise ConfigError(problems, source="rlvr sft")
    if args.target_pass_rate is not None:
        task.success_term  # noqa: B018 - the dev pass rate counts it: raises before training when there is none
    if args.max_steps is not None:
        overrides["max_steps"] = args.max_steps
    band: tuple[float | None, float | None] = (None, None)
    if args.target_pass_rate is not None:
        try:
            band = parse_band(args.target_pass_rate)
        except ValueError as exc:
            raise ConfigError(f"--target-pass-rate {exc}") from None
    if args.check_every < 1:
        raise ConfigError(f"--check-every must be at least 1 step, got {args.check_every}")
    if args.confirm_samples < 0:
        raise ConfigError(f"--confirm-samples must be 0 (no confirming read) or more, got {args.confirm_samples}")
    if args.check_temperature is not None and args.check_temperature < 0:
        raise ConfigError(f"--check-temperature must be 0 (greedy) or above, got {args.check_temperature}")
    out = Path(args.out) if args.out else Path("runs") / task.name / "sft"
    res = run_sft(
        task,
        SftOptions(
            out_dir=out,
            model=args.model,
            target_pass_rate=band[0],
            target_max=band[1],
            check_every=args.check_every,
            confirm_samples=args.confirm_samples,
            check_temperature=args.check_temperature,
            dev_size=args.dev_size,
            overrides=overrides,
            data=Path(args.data) if args.data else None,
            progress=not args.no_progress,
            say=print,  # the split is part of the command's report (stdout); progress and warnings go to stderr
        ),
    )
    rate = (
        f"; dev pass rate {res.dev_pass_rate:.1%} on {res.n_dev} rows"
        + (f" x {res.dev_samples} samples (confirmed)" if res.dev_samples > 1 else "")
        + (f" at T={res.check_temperature:g}" if res.check_temperature else "")
        if res.dev_pass_rate is not None
        else ""
    )
    outcome = (
        " (target OVERSHOT)"
        if res.overshot
        else " (target reached)"
        if res.stopped_early
        else " (target MISSED)"
        if res.target_missed
        else " (target reached at the last step)"
        if args.target_pass_rate is not None
        else ""
    )
    print(f"SFT: {res.steps} steps on {res.n_train} rows in {res.seconds:.0f} s{rate}{outcome}")
    print(f"model: {res.out_dir}")
    return 0
