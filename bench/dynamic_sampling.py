"""Plain GRPO against rlvr's dynamic sampling (rlvr.train.dynamic: the online filter and resample), side by
side in one script, on the tiny model.

For each task (the built-in addition task, and the mixed-operation one: + - *) and each seed:
build the tiny model, SFT it until a dev slice reaches a 20 % pass rate (the demo's warm start, so
GRPO has signal), then train GRPO from that one checkpoint with each mode for the same number of
steps. The train split is cut to ``--train-rows`` prompts so a run sees each prompt several times:
the filter judges a prompt by its previous groups, so on a split visited once it cannot act.

Printed per run and as ratios (mode / plain): held-out accuracy after the same number of steps,
wall-clock seconds, generated completion tokens (from ``completions/mean_length`` and, for
resample, its extra rounds) and the share of zero-variance groups before and after dynamic
sampling (``dynamic/zero_std_before`` / ``_after``; for plain GRPO both are TRL's
``frac_reward_zero_std``). The filter generates no extra completion, so its equal steps are equal
generated completions; resample spends more per step, which the token and time ratios show, so its
accuracy is also read at the plain run's token budget: the last held-out eval (every
``--eval-every`` steps) whose generated tokens do not exceed plain's total. Held-out accuracy is
greedy over ``--eval-prompts`` prompts. Wall time moves with machine load (other processes on the
same cores); the CPU-time ratio beside it does much less.

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
MODES: dict[str, dict[str, Any]] = {
    "plain": {"mode": "off"},
    "filter": {"mode": "filter", "visits": 2},  # re-check: two epochs (the default)
    "resample": {"mode": "resample", "max_rounds": 3, "short_batch": "kept"},
}


def write_task(folder: Path, ops: str, seed: int, train_rows: int, dynamic: dict[str, Any] | None) -> Path:
    import yaml

    from rlvr.demo.arithmetic import TASK_YAML, write_splits

    write_splits(folder, train=train_rows, eval=200, seed=seed, ops=ops)
    spec = yaml.safe_load(TASK_YAML.format(seed=seed))
    if dynamic is not None:
        spec["grpo"]["dynamic"] = dynamic
    path = folder / "task.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def one(
    task_name: str, seed: int, steps: int, train_rows: int, eval_prompts: int, eval_every: int, root: Path
) -> dict[str, dict[str, Any]]:
    from rlvr.models import build_builtin
    from rlvr.task import load_task
    from rlvr.train import TrainOptions, train
    from rlvr.train.sft import SftOptions, run_sft

    ops = TASKS[task_name]
    # SFT on the full built-in split (2,000 prompts), GRPO on a cut of it.
    base_task = load_task(write_task(root / "sft-task", ops, seed, 2000, None))
    base = str(build_builtin("tiny", root / "base"))
    sft = run_sft(
        base_task,
        SftOptions(
            out_dir=root / "sft",
            model=base,
            target_pass_rate=0.2,
            check_every=25,
            check_temperature=0.0,
            progress=False,
        ),
    )
    print(f"{task_name:<6} seed {seed} SFT: {sft.steps} steps, dev pass rate {sft.dev_pass_rate}", flush=True)
    out: dict[str, dict[str, Any]] = {}
    for mode, dyn in MODES.items():
        task = load_task(write_task(root / f"task-{mode}", ops, seed, train_rows, dyn))
        t0, c0 = time.perf_counter(), time.process_time()
        train(
            task,
            TrainOptions(
                run_dir=root / f"run-{mode}",
                model=str(sft.out_dir),
                max_steps=steps,
                no_gate_reason="bench",
                progress=False,
                eval_every=eval_every,
                eval_prompts=eval_prompts,
            ),
        )
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        lines = [json.loads(x) for x in (root / f"run-{mode}" / "metrics.jsonl").read_text().splitlines()]
        gen = [x for x in lines if "completions/mean_length" in x]
        per_gen = 64  # per_device_train_batch_size of the built-in task; one generation (round) per step
        tokens, cum = 0.0, {}
        for x in gen:
            tokens += x["completions/mean_length"] * (per_gen + x.get("dynamic/extra_completions", 0.0))
            cum[x["step"]] = tokens
        evals = [(x["step"], x["time"], x["eval/accuracy"]) for x in lines if "eval/accuracy" in x]
        out[mode] = {
            "acc0": evals[0][2],
            "acc": evals[-1][2],
            "seconds": wall,
            "cpu": cpu,
            "tokens": tokens,
            "evals": [(s, t, cum.get(s, 0.0), a) for s, t, a in evals],
            "before": statistics.mean(x.get("dynamic/zero_std_before", x["frac_reward_zero_std"]) for x in gen),
            "after": statistics.mean(x.get("dynamic/zero_std_after", x["frac_reward_zero_std"]) for x in gen),
            "rounds": statistics.mean(x.get("dynamic/rounds", 1.0) for x in gen),
        }
    return out


def at_budget(
    evals: list[tuple[int, float, float, float]], *, seconds: float | None = None, tokens: float | None = None
) -> float:
    """Held-out accuracy of the last eval within a time or token budget."""
    ok = [a for _, t, k, a in evals if (seconds is None or t <= seconds) and (tokens is None or k <= tokens * 1.001)]
    return ok[-1] if ok else evals[0][3]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    ap.add_argument("--train-rows", type=int, default=256)
    ap.add_argument("--eval-prompts", type=int, default=200)
    ap.add_argument("--eval-every", type=int, default=25)
    args = ap.parse_args()
    rows = []
    for task_name in args.tasks:
        for seed in args.seeds:
            with tempfile.TemporaryDirectory(prefix="rlvr-bench-dyn-") as tmp:
                r = one(task_name, seed, args.steps, args.train_rows, args.eval_prompts, args.eval_every, Path(tmp))
            for mode, m in r.items():
                print(
                    f"{task_name:<6} seed {seed} {mode:<8} acc {m['acc0']:.3f} -> {m['acc']:.3f}  "
                    f"{m['seconds']:6.1f} s ({m['cpu']:6.1f} s CPU)  {m['tokens']:8.0f} tokens  "
                    f"rounds {m['rounds']:.2f}  zero-std before {m['before']:.3f} after {m['after']:.3f}",
                    flush=True,
                )
            rows.append((task_name, seed, r))
    print()
    print("ratios against plain GRPO in the same task and seed (accuracy in points: mode - plain)")
    print(
        f"{'task':<6} {'seed':>4} {'mode':<8} {'acc@steps':>9} {'acc@time':>8} {'acc@tokens':>10} {'time x':>7} "
        f"{'CPU x':>6} {'tokens x':>8} {'zero-std before':>15} {'after':>6}"
    )
    for task_name, seed, r in rows:
        p = r["plain"]
        for mode in [m for m in r if m != "plain"]:
            m = r[mode]
            at_t = at_budget(m["evals"], seconds=p["evals"][-1][1])
            at_k = at_budget(m["evals"], tokens=p["tokens"])
            print(
                f"{task_name:<6} {seed:>4} {mode:<8} {(m['acc'] - p['acc']) * 100:+8.1f}p "
                f"{(at_t - p['acc']) * 100:+7.1f}p {(at_k - p['acc']) * 100:+9.1f}p "
                f"{m['seconds'] / p['seconds']:7.2f} {m['cpu'] / p['cpu']:6.2f} "
                f"{m['tokens'] / max(p['tokens'], 1):8.2f} {m['before']:15.3f} {m['after']:6.3f}"
            )
    for task_name in args.tasks:
        sel = [r for t, _, r in rows if t == task_name]
        parts = []
        for mode in sel[0]:
            parts.append(
                f"{mode} acc {statistics.mean(r[mode]['acc'] for r in sel):.3f} (zero-std after "
                f"{statistics.mean(r[mode]['after'] for r in sel):.3f}, "
                f"time x{statistics.mean(r[mode]['seconds'] / r['plain']['seconds'] for r in sel):.2f}, "
                f"CPU x{statistics.mean(r[mode]['cpu'] / r['plain']['cpu'] for r in sel):.2f}, "
                f"tokens x{statistics.mean(r[mode]['tokens'] / r['plain']['tokens'] for r in sel):.2f})"
            )
        print(f"{task_name}, mean of {len(sel)} seeds: " + "; ".join(parts))


if __name__ == "__main__":
    main()
