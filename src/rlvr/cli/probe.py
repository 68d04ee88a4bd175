"""``rlvr probe task.yaml``: the base model's success rate and the route (sft, grpo, too-easy).

Exit status: 0 when the probe routed the task, 1 on an error, when the verifier could not
decide any sample (route ``fix-verifier``) and when most tool calls failed (route ``fix-tool``): a
broken reward or tool must stop a script, not pass as a 0 % base rate.
"""

from __future__ import annotations

import argparse

HELP = "measure the base model's success rate and route the task: SFT first, GRPO, or too easy"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="the task file (task.yaml) or its folder")
    parser.add_argument(
        "--model", help="model to probe: local path, hub id or builtin:<name> (default: the task's model)"
    )
    parser.add_argument(
        "--out", default="probe", help="folder for samples.jsonl, report.json, filtered.jsonl (default: ./probe)"
    )
    parser.add_argument("-k", type=int, help="completions per prompt (default: the task's probe.k, 8)")
    parser.add_argument(
        "--max-prompts", type=int, help="prompts to probe at most (default: the task's probe.max_prompts, 64)"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted probe in --out without resampling what is written",
    )
    parser.add_argument(
        "--filter", action="store_true", help="also write filtered.jsonl: the probed rows with 0 < pass rate < 1"
    )
    parser.add_argument(
        "--backend",
        choices=["auto", "transformers", "vllm"],
        default="auto",
        help="sampling backend (auto: vLLM when installed and a GPU is present)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="sampling seed (default: the task's seed); the probed prompts are always the task's seeded choice",
    )
    parser.add_argument(
        "--group-size",
        type=int,
        help="planned GRPO group size G for the zero-variance estimate (default: num_generations as training resolves "
        "it)",
    )
    parser.add_argument("--json", action="store_true", help="print report.json instead of the text report")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    import json

    from ..errors import ConfigError, Problem
    from ..probe import format_report, run_probe

    problems = []
    if args.k is not None and args.k < 1:
        problems.append(Problem("-k", f"must be at least 1, got {args.k}", "the recipe probes with k=8"))
    if args.max_prompts is not None and args.max_prompts < 1:
        problems.append(
            Problem(
                "--max-prompts",
                f"must be at least 1, got {args.max_prompts}",
                "omit it to use the task's probe.max_prompts",
            )
        )
    if args.group_size is not None and args.group_size < 2:
        problems.append(
            Problem(
                "--group-size",
                f"must be at least 2, got {args.group_size}",
                "GRPO needs 2 or more generations per prompt",
            )
        )
    if problems:
        raise ConfigError(problems, source="rlvr probe")
    from ._common import check_model_arg

    check_model_arg(args.model)
    report = run_probe(
        args.task,
        model=args.model,
        out_dir=args.out,
        k=args.k,
        max_prompts=args.max_prompts,
        resume=args.resume,
        filter=args.filter,
        backend=args.backend,
        seed=args.seed,
        group_size=args.group_size,
        progress=not args.no_progress,
    )
    print(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    from pathlib import Path

    from ..probe.samples import EPISODES_SUMMARY_NAME, EpisodeSummary

    summary = Path(report.out_dir) / EPISODES_SUMMARY_NAME
    if not args.json and summary.exists():  # an episode task: how the episodes went
        print("\n".join(EpisodeSummary(**json.loads(summary.read_text())).lines()))
    return 1 if report.route in ("fix-verifier", "fix-tool") else 0
