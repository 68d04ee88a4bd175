"""rlvr task: check a task file, or write the built-in arithmetic task to a folder."""

from __future__ import annotations

import argparse

HELP = "check a task file (every problem at once), or write the built-in example task"


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = sub.add_parser("check", help="validate a task file and its data without loading a model")
    c.add_argument("task", help="the task file (task.yaml) or its folder")
    e = sub.add_parser("example", help="write the built-in arithmetic task (task.yaml + data) to a folder")
    e.add_argument("folder", help="destination folder")
    e.add_argument("--seed", type=int, default=0, help="data seed (default 0: the data in examples/arithmetic)")
    e.add_argument("--ops", default="+", help="operations to draw from, e.g. '+-*' (default '+': the demo's task; mixed operations are a harder variant the tiny model does not learn within the demo's budget)")


def run(args: argparse.Namespace) -> int:
    if args.action == "example":
        from ..arithmetic import write_task

        if not args.ops or set(args.ops) - set("+-*"):
            from ..errors import ConfigError

            raise ConfigError(f"--ops must be a non-empty string of + - * (got {args.ops!r})")
        path = write_task(args.folder, seed=args.seed, ops=args.ops)
        print(f"wrote {path} and its data")
        return 0
    from ..task import load_task

    task = load_task(args.task)
    train = task.load_split("train")
    evals = task.load_split("eval") if task.data.eval else []
    terms = ", ".join(f"{t.name} ({t.verifier}, weight {t.weight:g})" for t in task.rewards)
    print(f"{task.path}: ok")
    print(f"  model       {task.model}")
    print(f"  data        {len(train)} train rows, {len(evals)} held-out rows")
    print(f"  prompt      {'chat' if task.prompt.chat else 'plain'}: {task.render_prompt(train[0]) if train else ''!r}")
    print(f"  answer      {task.answer.style} in column {task.answer_column!r}")
    print(f"  rewards     {terms}; success = {task.correctness_term}")
    print(f"  generation  temperature {task.generation.temperature}, max {task.generation.max_completion_length} tokens")
    return 0
