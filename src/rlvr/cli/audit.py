"""``rlvr audit task.yaml``: attack the task's reward terms with known reward hacks.

The table names every exploit it tried on each term, with the number of prompts it was tried on,
so "ok" always says what it is ok against; ``--all`` adds a row per finding.

Exit status: 0 when no term is exploitable (leaky terms are reported but pass), 1 when a term is
exploitable (an exploit scores as high as a correct answer, or ends in an error that would mask
it in training), when most of a term's exploits could not be tried (the audit does not call such
a term safe; the notes say which and why), the task has a task-level problem (a success term
that is not a correctness term, a weighting that lets a wrong answer outscore a correct one) or
the task cannot be audited, 2 for a bad argument.
"""

from __future__ import annotations

import argparse

HELP = (
    "attack the task's reward terms with known reward hacks; non-zero exit if any is exploitable or the success term "
    "is not a correctness term"
)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="the task file (task.yaml) or its folder")
    parser.add_argument("--json", action="store_true", help="print the report as JSON (for machines and the gate)")
    parser.add_argument(
        "--max-prompts",
        type=_positive,
        default=16,
        metavar="N",
        help="prompts sampled from the split (default 16); more finds rarer holes, slower for code terms",
    )
    parser.add_argument("--seed", type=int, default=0, help="which prompts are sampled (default 0)")
    parser.add_argument(
        "--split", choices=("train", "eval"), default="train", help="the split to sample prompts from (default train)"
    )
    parser.add_argument("--term", action="append", metavar="NAME", help="audit only this term (repeatable)")
    parser.add_argument("--exploit", action="append", metavar="NAME", help="run only this exploit (repeatable)")
    parser.add_argument("--all", action="store_true", help="list ok findings in the table too")


def run(args: argparse.Namespace) -> int:
    import json

    from ..audit import format_table, run_audit
    from ..task import load_task

    task = load_task(args.task)
    report = run_audit(
        task, max_prompts=args.max_prompts, seed=args.seed, split=args.split, terms=args.term, exploits=args.exploit
    )
    from ..audit.episodes import audit_episodes

    episodes = audit_episodes(task, max_prompts=args.max_prompts)  # none unless the task has tools
    if args.json:
        extra = {"episodes": [f.to_json() for f in episodes]} if episodes else {}
        print(json.dumps({**report.to_json(), **extra}, indent=2, ensure_ascii=False))
    else:
        print(format_table(report, show_ok=args.all))
        for finding in episodes:
            if finding.hit or args.all:
                print(finding.line())
    return 1 if report.exploitable or report.untested_terms or any(f.hit for f in episodes) else 0
