"""Plain GRPO against rlvr's online filter (rlvr.dynamic), side by side in one script, on the tiny model.

For each task (the built-in addition task, and the mixed-operation one: + - *) and each seed:
build the tiny model, SFT it until a dev slice reaches a 20 % pass rate (the demo's warm start, so
GRPO has signal), then train GRPO from that one checkpoint with each mode for the same number of
steps. The train split is cut to ``--train-rows`` prompts so a run sees each prompt several times:
the filter judges a prompt by its previous groups, so on a split visited once it cannot act.

Printed per run and as ratios (filter / plain): held-out accuracy after the same number of steps,
wall-clock seconds, generated completion tokens (from ``completions/mean_length``) and the share of
zero-variance groups trained (TRL's ``frac_reward_zero_std``), with the filter's own
``dynamic/zero_std_before`` (share of drawn groups it skipped). The filter generates no extra
completion, so equal steps are equal generated completions; the token and time ratios say how far
apart they are. Held-out accuracy is greedy over ``--eval-prompts`` prompts.

    OMP_NUM_THREADS=1 .venv/bin/python bench/dynamic_sampling.py [--steps 150] [--seeds 0 1 2] [--train-rows 256]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

TASKS = {"add": "+", "mixed": "+-*"}
MODES: dict[str, dict[str, Any] | None] = {"plain": {"mode": "off"}, "filter": {"mode": "filter", "visits": 2, "recheck_after": 20}}


def write_task(folder: Path, ops: str, seed: int, train_rows: int, dynamic: dict[str, Any] | None) -> Path:
    import yaml

    from rlvr.arithmetic import TASK_YAML, write_splits

    write_splits(folder, train=train_rows, eval=200, seed=seed, ops=ops)
    spec = yaml.safe_load(TASK_YAML.format(seed=seed))
    if dynamic is not None:
        spec["grpo"]["dynamic"] = dynamic
    path = folder / "task.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def one(task_name: str, seed: int, steps: int, train_rows: int, eval_prompts: int, root: Path) -> dict[str, dict[str, float]]:
    from rlvr.models import build_builtin
    from rlvr.sft import SftOptions, run_sft
    from rlvr.task import load_task
    from rlvr.train import TrainOptions, train

    ops = TASKS[task_name]
    # SFT on the full built-in split (2,000 prompts), GRPO on a cut of it.
    base_task = load_task(write_task(root / "sft-task", ops, seed, 2000, None))
    base = str(build_builtin("tiny", root / "base"))
    sft = run_sft(base_task, SftOptions(out_dir=root / "sft", model=base, target_pass_rate=0.2, progress=False))
    print(f"{task_name:<6} seed {seed} SFT: {sft.steps} steps, dev pass rate {sft.dev_pass_rate}", flush=True)
    out: dict[str, dict[str, float]] = {}
    for mode, dyn in MODES.items():
        task = load_task(write_task(root / f"task-{mode}", ops, seed, train_rows, dyn))
        t0 = time.perf_counter()
        res = train(task, TrainOptions(run_dir=root / f"run-{mode}", model=str(sft.out_dir), max_steps=steps, no_gate_reason="bench",
                                       progress=False, eval_every=steps, eval_prompts=eval_prompts))
        wall = time.perf_counter() - t0
        lines = [json.loads(x) for x in (root / f"run-{mode}" / "metrics.jsonl").read_text().splitlines()]
        gen = [x for x in lines if "completions/mean_length" in x]
        per_gen = 64  # per_device_train_batch_size of the built-in task, one generation per step
        out[mode] = {
            "acc0": res.evals[0]["eval/accuracy"], "acc": res.evals[-1]["eval/accuracy"], "seconds": wall,
            "tokens": sum(x["completions/mean_length"] * per_gen for x in gen),
            "zero_std": statistics.mean(x["frac_reward_zero_std"] for x in gen),
            "skipped_drawn": statistics.mean(x.get("dynamic/zero_std_before", 0.0) for x in gen),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    ap.add_argument("--train-rows", type=int, default=256)
    ap.add_argument("--eval-prompts", type=int, default=200)
    args = ap.parse_args()
    rows = []
    for task_name in args.tasks:
        for seed in args.seeds:
            with tempfile.TemporaryDirectory(prefix="rlvr-bench-dyn-") as tmp:
                r = one(task_name, seed, args.steps, args.train_rows, args.eval_prompts, Path(tmp))
            for mode, m in r.items():
                print(f"{task_name:<6} seed {seed} {mode:<7} acc {m['acc0']:.3f} -> {m['acc']:.3f}  {m['seconds']:6.1f} s  "
                      f"{m['tokens']:8.0f} tokens  zero-std trained {m['zero_std']:.3f}  drawn groups skipped {m['skipped_drawn']:.3f}", flush=True)
            rows.append((task_name, seed, r))
    print()
    print(f"{'task':<6} {'seed':>4}  {'acc plain':>9} {'acc filter':>10} {'lift diff':>9}  {'time ratio':>10} {'token ratio':>11}  {'zero-std plain':>14} {'zero-std filter':>15}")
    for task_name, seed, r in rows:
        p, f = r["plain"], r["filter"]
        print(f"{task_name:<6} {seed:>4}  {p['acc']:9.3f} {f['acc']:10.3f} {(f['acc'] - p['acc']) * 100:+8.1f}p  {f['seconds'] / p['seconds']:10.2f} "
              f"{f['tokens'] / max(p['tokens'], 1):11.2f}  {p['zero_std']:14.3f} {f['zero_std']:15.3f}")
    for task_name in args.tasks:
        sel = [r for t, _, r in rows if t == task_name]
        print(f"{task_name}: mean over {len(sel)} seeds: accuracy plain {statistics.mean(r['plain']['acc'] for r in sel):.3f}, "
              f"filter {statistics.mean(r['filter']['acc'] for r in sel):.3f}; zero-std share trained plain "
              f"{statistics.mean(r['plain']['zero_std'] for r in sel):.3f}, filter {statistics.mean(r['filter']['zero_std'] for r in sel):.3f}; "
              f"time ratio {statistics.mean(r['filter']['seconds'] / r['plain']['seconds'] for r in sel):.2f}")


if __name__ == "__main__":
    main()
