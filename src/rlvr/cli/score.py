"""`rlvr score FILE`: score a JSONL of completions with a task's terms or named verifiers."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

HELP = (
    "score a JSONL of completions with a task's reward terms or named verifiers; writes per-term outcome and score "
    "per line"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file",
        metavar="FILE",
        help="JSONL, one object per line: completion, optional prompt, plus dataset columns such as answer",
    )
    parser.add_argument(
        "--task",
        metavar="TASK_YAML",
        help="score with this task's reward terms, weights, answer format and answer column",
    )
    parser.add_argument(
        "--reward",
        action="append",
        default=[],
        metavar="NAME",
        help=(
            "a built-in verifier (format, exact, math, ...) or a dotted path; repeat for several terms (instead of "
            "--task)"
        ),
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME.KEY=VALUE",
        help="an option of a --reward verifier, the value read as YAML (e.g. math.ordered_lists=false)",
    )
    parser.add_argument("--column", default="answer", help="with --reward: the ground-truth column (default: answer)")
    parser.add_argument(
        "--format",
        dest="style",
        choices=["tags", "boxed", "json"],
        default="tags",
        help="with --reward: where the answer is (default: <answer> tags)",
    )
    parser.add_argument(
        "--tag", default="answer", help="with --reward and --format tags: the tag name (default: answer)"
    )
    parser.add_argument(
        "--think",
        choices=["none", "optional", "required", "prefilled"],
        default="none",
        help="with --reward: the think-block policy (default: none)",
    )
    parser.add_argument(
        "--boxed",
        choices=["only", "first", "last"],
        default="only",
        help="with --format boxed: which box counts when there are several (default: only, several is a hedge)",
    )
    parser.add_argument(
        "--out", metavar="PATH", help="where to write the scored lines (default: FILE with .scored.jsonl)"
    )
    parser.add_argument(
        "--workers", type=int, default=None, metavar="N", help="chunks scored at once (default: min(4, cores))"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def _options(pairs: list[str], names: list[str]) -> dict[str, dict[str, Any]]:
    import yaml

    from .. import yamlio
    from ..errors import ConfigError, Problem

    out: dict[str, dict[str, Any]] = {}
    problems = []
    for pair in pairs:
        key, eq, value = pair.partition("=")
        name, dot, opt = key.partition(".")
        if not eq or not dot or not name or not opt:
            problems.append(
                Problem(f"--option {pair}", "expected NAME.KEY=VALUE", "e.g. --option math.ordered_lists=false")
            )
            continue
        if name not in names:
            problems.append(
                Problem(
                    f"--option {pair}",
                    f"{name!r} is not one of the --reward names ({', '.join(names) or 'none'})",
                    "add --reward " + name,
                )
            )
            continue
        try:
            out.setdefault(name, {})[opt] = yamlio.load(value)
        except yaml.YAMLError as exc:
            problems.append(
                Problem(f"--option {pair}", f"value is not valid YAML: {exc}", "quote strings with special characters")
            )
    if problems:
        raise ConfigError(problems)
    return out


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError, Problem
    from ..rewards import AnswerFormat
    from ..rewards.scoring import jsonable, reward_set_from_names, score_file

    if bool(args.task) == bool(args.reward):
        raise ConfigError(
            Problem(
                "rlvr score",
                "give either --task or at least one --reward",
                "e.g. --task task.yaml, or --reward format --reward math",
            )
        )
    if args.workers is not None and args.workers < 1:
        raise ConfigError(Problem("--workers", f"must be at least 1, got {args.workers}", "omit it for the default"))
    if args.task:
        if args.option:
            raise ConfigError(
                Problem(
                    "--option",
                    "only applies to --reward verifiers; a task's options live in its file",
                    "edit the task's rewards[].options",
                )
            )
        from ..task import load_task

        task = load_task(args.task, check_data=False)
        reward_set = task.reward_set()  # an episode task reads each line's completion as an episode
    else:
        fmt = AnswerFormat(style=args.style, tag=args.tag, think=args.think, boxed=args.boxed)
        reward_set = reward_set_from_names(args.reward, _options(args.option, args.reward), fmt, args.column)
    summary = score_file(args.file, reward_set, out=args.out, workers=args.workers)
    if args.json:
        sys.stdout.write(json.dumps(jsonable(summary.to_json()), indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(summary.text() + "\n")
    return 0
