"""rlvr demo: the whole workflow on the built-in tiny model and task, on CPU, offline."""

from __future__ import annotations

import argparse

HELP = "the whole workflow on the built-in tiny model and arithmetic task (CPU, offline, minutes)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="runs/demo", help="output folder (default runs/demo; replaced if it exists)")
    p.add_argument("--grpo-steps", type=int, default=1000, help="GRPO steps (default 1000)")
    p.add_argument(
        "--sft-target", type=float, default=0.2, help="stop SFT when a dev slice reaches this pass rate (default 0.2)"
    )
    p.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    import os
    import shutil
    from pathlib import Path

    from ..demo import run_demo

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # two threads make tiny-model steps erratic
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    run_demo(out, grpo_steps=args.grpo_steps, target=args.sft_target, seed=args.seed, progress=not args.no_progress)
    return 0
