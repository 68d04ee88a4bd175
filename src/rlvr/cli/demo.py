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
    p.add_argument(
        "--grpo-steps", type=int, default=None, help="GRPO steps (default: the model's, tiny 2000, smollm2 36)"
    )
    p.add_argument(
        "--sft-target",
        default=None,
        metavar="LOW[-HIGH]",
        help="stop SFT on crossing into this band of dev pass rates, sampled at the task's temperature, as rlvr sft "
        "--target-pass-rate (default: the model's, tiny 0.2-0.5, smollm2 0.1-0.4)",
    )
    p.add_argument(
        "--check-every",
        type=int,
        default=None,
        metavar="STEPS",
        help="SFT steps between quick dev reads, as rlvr sft --check-every (default 1); a read that reaches the band "
        "is confirmed by one of 4 samples per row, as rlvr sft --confirm-samples",
    )
    p.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from ..demo import run_demo
    from ._common import replace_own_folder

    band = _band(args.sft_target)  # refused before anything is written
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # two threads make tiny-model steps erratic
    out = Path(args.out)
    replace_own_folder(out, MARKER, also=("demo.json",))  # demo.json: a demo written before the marker
    stages = run_demo(
        out,
        model=args.model,
        grpo_steps=args.grpo_steps,
        band=band,
        check_every=args.check_every,
        seed=args.seed,
        progress=not args.no_progress,
    )
    # 1 when the demo stopped before GRPO (it has said why and how to continue)
    return 0 if stages and stages[-1].name == "after GRPO" else 1


def _band(text: str | None) -> tuple[float, float | None] | None:
    from ..errors import ConfigError
    from ..train.sftstop import parse_band

    if text is None:
        return None
    try:
        return parse_band(text)
    except ValueError as exc:
        raise ConfigError(f"--sft-target {exc}") from None
