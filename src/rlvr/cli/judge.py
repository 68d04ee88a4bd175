"""`rlvr judge calibrate`: measure an LLM judge's agreement with human labels; write the record."""

from __future__ import annotations

import argparse
import json
import sys

HELP = (
    "calibrate an LLM judge against human labels (accuracy, Cohen's kappa, confusion matrix) and write the record a "
    "judge term needs"
)


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    p = sub.add_parser(
        "calibrate",
        help="judge a labelled JSONL and write a calibration record",
        description="judge a labelled JSONL and write a calibration record",
    )
    p.add_argument(
        "--labels",
        required=True,
        metavar="JSONL",
        help=(
            "one object per line: prompt, completion, answer (optional), label (true/false or correct/incorrect), "
            "read by a person"
        ),
    )
    p.add_argument("--task", metavar="TASK_YAML", help="take the judge's settings from this task's judge term")
    p.add_argument(
        "--term", metavar="NAME", help="with --task: the judge term (default: the only term whose verifier is judge)"
    )
    p.add_argument("--model", help="the judge model (pinned; recorded)")
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    p.add_argument(
        "--prompt-file",
        metavar="PATH",
        help="the judge prompt template ({prompt}, {completion}, {answer}); default: the built-in one",
    )
    p.add_argument("--version", default="1", help="a label you bump whenever the judge changes (default: 1)")
    p.add_argument("--threshold", type=float, default=0.6, help="the kappa a judge term requires (default: 0.6)")
    p.add_argument("--concurrency", type=int, default=4, help="requests in flight (default: 4)")
    p.add_argument("--out", required=True, metavar="PATH", help="where to write the calibration record (JSON)")
    p.add_argument("--json", action="store_true", help="print the record as JSON")


def _config(args: argparse.Namespace):  # noqa: ANN202 - JudgeConfig, imported lazily
    from ..errors import ConfigError, Problem
    from ..rewards.judge import config_from_options

    if args.task:
        if args.model or args.base_url or args.prompt_file:
            raise ConfigError(
                Problem(
                    "--task",
                    "takes the judge settings from the task; do not also pass --model/--base-url/--prompt-file",
                    "drop one or the other",
                )
            )
        # Read the term straight from the YAML: load_task builds every term, and a judge term
        # refuses to build before it has the calibration record this command writes.
        from pathlib import Path

        import yaml

        from .. import yamlio

        try:
            raw = yamlio.load(Path(args.task).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(
                Problem(args.task, f"cannot read the task file: {exc}", "check the path and the YAML")
            ) from None
        terms = [
            t
            for t in (raw.get("rewards") or [])
            if isinstance(t, dict)
            and t.get("verifier", t.get("name")) == "judge"
            and (args.term is None or t.get("name") == args.term)
        ]
        if len(terms) != 1:
            raise ConfigError(
                Problem(
                    "--term",
                    f"found {len(terms)} judge terms{' named ' + args.term if args.term else ''} in {args.task}",
                    "name the judge term with --term",
                )
            )
        options = dict(terms[0].get("options") or {})
        options.pop("calibration", None)
        if options.get("prompt_file") and not Path(options["prompt_file"]).is_absolute():
            options["prompt_file"] = str(Path(args.task).parent / options["prompt_file"])
        return config_from_options(options)
    problems = [
        Problem(flag, "is required without --task", f"pass {flag}")
        for flag, v in (("--model", args.model), ("--base-url", args.base_url))
        if not v
    ]
    if problems:
        raise ConfigError(problems)
    options = {"model": args.model, "base_url": args.base_url, "version": args.version}
    if args.prompt_file:
        options["prompt_file"] = args.prompt_file
    return config_from_options(options)


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError, Problem

    if args.action != "calibrate":
        raise ConfigError(
            Problem("rlvr judge", "missing action", "use: rlvr judge calibrate --labels LABELS.jsonl ...")
        )
    from ..rewards.judge import calibrate, write_record

    record = calibrate(args.labels, _config(args), threshold=args.threshold, concurrency=args.concurrency)
    path = write_record(record, args.out)
    if args.json:
        sys.stdout.write(json.dumps(record.to_json(), indent=2) + "\n")
    else:
        c = record.confusion
        lines = [
            f"judge {record.model} v{record.version} (prompt {record.prompt_sha256[:12]}) on {record.n} labelled rows "
            f"({record.errors} judge errors)",
            f"accuracy {record.accuracy:.3f}   Cohen's kappa {record.kappa:.3f}   threshold {record.threshold}",
            "                      human correct   human incorrect",
            f"  judge correct       {c['judge_correct_human_correct']:>13}   {c['judge_correct_human_incorrect']:>15}",
            f"  judge incorrect     {c['judge_incorrect_human_correct']:>13}   "
            f"{c['judge_incorrect_human_incorrect']:>15}",
            *[f"note: {n}" for n in record.notes],
            f"{'PASSED' if record.passed else 'NOT PASSED'}: wrote {path}",
        ]
        sys.stdout.write("\n".join(lines) + "\n")
    return 0 if record.passed else 1
