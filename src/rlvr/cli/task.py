"""rlvr task: check a task file, or write the built-in arithmetic task to a folder."""

from __future__ import annotations

import argparse

HELP = "check a task file (every problem at once), or write the built-in example task"


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = sub.add_parser(
        "check",
        help="validate a task file, its data, its grpo:/sft: settings and its ground truths, without loading a model",
    )
    c.add_argument("task", help="the task file (task.yaml) or its folder")
    e = sub.add_parser("example", help="write the built-in arithmetic task (task.yaml + data) to a folder")
    e.add_argument("folder", help="destination folder")
    e.add_argument("--seed", type=int, default=0, help="data seed (default 0: the data in examples/arithmetic)")
    e.add_argument(
        "--ops",
        default="+",
        help="operations to draw from, e.g. '+-*' (default '+': the demo's task; mixed operations are a "
        "harder variant the tiny model does not learn within the demo's budget)",
    )


def run(args: argparse.Namespace) -> int:
    if args.action == "example":
        from ..demo.arithmetic import write_task

        if not args.ops or set(args.ops) - set("+-*"):
            from ..errors import ConfigError

            raise ConfigError(f"--ops must be a non-empty string of + - * (got {args.ops!r})")
        path = write_task(args.folder, seed=args.seed, ops=args.ops)
        print(f"wrote {path} and its data")
        return 0
    from .. import yamlio
    from ..errors import ConfigError
    from ..task import load_task
    from ..taskcheck import check_task

    task = load_task(args.task)
    from ..lengths import for_task_check
    from ..task.rowchecks import model_download_note

    download = model_download_note(task)  # a hub model not cached: said, and nothing waits on the network
    if download is None:
        length_problems, length_lines = for_task_check(task)  # the budget against the answers and the model
    else:
        length_problems, length_lines = [], [f"  model note  {download}"]
    problems = check_task(task) + length_problems
    if problems:
        raise ConfigError(problems, source=str(task.path))
    train = task.load_split("train")
    evals = task.load_split("eval") if task.data.eval else []
    declared = (yamlio.load(task.path.read_text(encoding="utf-8")) or {}).get("success") is not None
    terms = ", ".join(f"{t.name} ({t.verifier}, weight {t.weight:g})" for t in task.rewards)
    success = next(t for t in task.rewards if t.name == task.success_term)
    print(f"{task.path}: ok")
    print(f"  model       {task.model}")
    print(
        f"  data        {len(train)} train rows, {len(evals)} held-out rows"
        + (" (no prompt in both)" if evals else " (no held-out split: add data.eval)")
    )
    print(f"  prompt      {'chat' if task.prompt.chat else 'plain'}: {task.render_prompt(train[0]) if train else ''!r}")
    print(f"  answer      {task.answer.style} in column {task.answer_column!r}")
    print(f"  rewards     {terms}")
    how = "declared" if declared else "the only term that checks the answer"
    print(
        f"  success     {success.name} ({success.verifier}; {how}): "
        "probe, eval, gate and doctor count its 'correct' outcomes"
    )
    gen = task.generation
    print(f"  generation  temperature {gen.temperature:g}, top_p {gen.top_p:g}, max {gen.max_completion_length} tokens")
    print("\n".join(length_lines))
    from ..rewards.length import ranking_problems

    for term in task.reward_set().terms:  # length options that tie a long correct answer with a wrong one
        for line in ranking_problems(term.verifier):
            print(f"  note        {term.name}: {line}")
    from ..taskcheck import term_notes

    for line in term_notes(task):  # unknown score ranges; terms whose failures are always charged
        print(f"  note        {line}")
    print(
        "  grpo, sft   valid for rlvr train and rlvr sft "
        "(hardware rules are checked by rlvr plan and rlvr train on the machine)"
    )
    return 0
