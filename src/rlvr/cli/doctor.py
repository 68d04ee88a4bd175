"""`rlvr doctor RUN`: name the failure mode from a run's metrics, and patch the config with one change."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "name a run's failure mode from its metrics; --patch writes a config with the one change it calls for"


EPILOG = """\
checks, in priority order (errors before warnings): reward_broken, nan, verifier_errors, reward_hacking,
performance_collapse, moe_plain_grpo, no_learning_signal, dynamic_sampling_drops_nearly_all, kl_explosion,
entropy_collapse, entropy_blowup, length_hacking, truncation, off_policy_instability.

variants (only when the symptom shows):
  entropy_collapse  -> DAPO      loss_type dapo, epsilon 0.2, epsilon_high 0.28, beta 0,
                                 mask_truncated_completions, + soft overlong punishment term
  length_hacking    -> Dr. GRPO  loss_type dr_grpo, scale_rewards none
  moe_plain_grpo    -> GSPO      importance_sampling_level sequence, epsilon 3e-4,
                                 epsilon_high 4e-4, beta 0, steps_per_generation 4x accumulation
no_learning_signal on too-easy or mixed prompts patches grpo.dynamic {mode: filter} (skip prompts
whose recent groups were flat), not a variant.
Findings whose fix is not a config value (verifier, data) carry no patch; --patch then says so.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument(
        "run",
        metavar="RUN",
        help="a run directory, a TRL trainer_state.json (or checkpoint folder), a metrics.jsonl or a CSV with TRL "
        "metric names",
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="the run's config.yaml, when it is not beside the metrics (needed for config-dependent checks on "
        "TRL/CSV input)",
    )
    parser.add_argument(
        "--engine",
        choices=("verl", "openrlhf"),
        help="RUN is that engine's log (a verl file-logger JSONL, or TensorBoard events of either), read under "
        "rlvr's metric names",
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON instead of the readable report")
    parser.add_argument(
        "--patch",
        action="store_true",
        help="write a new config with exactly one change group: the fix for the most urgent finding (or --finding)",
    )
    parser.add_argument(
        "--finding",
        metavar="CHECK",
        help="with --patch: act on this finding (e.g. entropy_collapse) instead of the most urgent one",
    )
    parser.add_argument(
        "--out",
        metavar="PATH",
        help="with --patch: where to write the config (default: RUN/config.doctor-<finding>.yaml)",
    )
    parser.add_argument("--force", action="store_true", help="with --patch: replace --out if it exists")


def run(args: argparse.Namespace) -> int:
    from ..doctor import diagnose, format_text, load_run, write_patch
    from ..errors import ConfigError, Problem

    if not args.patch and (args.finding or args.out or args.force):
        raise ConfigError(Problem("--finding/--out/--force", "only mean something with --patch", "add --patch"))
    d = diagnose(load_run(args.run, config=args.config, engine=args.engine))
    if args.json:
        out = d.to_json()
        if args.patch:
            path, finding = write_patch(d, args.out, check=args.finding, force=args.force)
            out["patch_written"] = {"path": str(path), "finding": finding.check}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    # The report first, so a refused patch still leaves the reader with the evidence.
    sys.stdout.write(format_text(d) + "\n")
    sys.stdout.flush()
    if args.patch:
        path, finding = write_patch(d, args.out, check=args.finding, force=args.force)
        variant = finding.patch.variant if finding.patch else ""
        sys.stdout.write(f"\nwrote {path}: {variant} for {finding.check} (one change group; the header says why)\n")
    return 0
