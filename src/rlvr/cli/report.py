"""`rlvr report RUN`: plots of a run (PNG) and a self-contained HTML report with the doctor's findings."""

from __future__ import annotations

import argparse
import sys

HELP = (
    "plot a run (reward per term, held-out accuracy, entropy, length, zero-std, KL) and write a self-contained HTML "
    "report"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run",
        metavar="RUN",
        help="a run directory, a TRL trainer_state.json (or checkpoint folder), a metrics.jsonl or a CSV",
    )
    parser.add_argument("--config", metavar="PATH", help="the run's config.yaml, when it is not beside the metrics")
    parser.add_argument("--out", metavar="DIR", help="where to write the PNGs and report.html (default: RUN/report/)")


def run(args: argparse.Namespace) -> int:
    from ..doctor import load_run
    from ..report import default_out_dir, write_report

    r = load_run(args.run, config=args.config)
    rep = write_report(r, args.out or default_out_dir(r))
    for p in rep.plots:
        sys.stdout.write(f"{p.name:9s} {p.path if p.path else 'skipped: ' + p.missing}\n")
    n = len(rep.diagnosis.findings)
    sys.stdout.write(f"wrote {rep.html} ({n} finding{'s' if n != 1 else ''}; see `rlvr doctor {args.run}`)\n")
    return 0
