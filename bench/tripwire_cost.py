"""What the reward-hack tripwire costs: its probe rounds as a fraction of step time, in CPU time.

One process trains the built-in tiny model twice with the same settings and seed on one-digit
sums: the baseline with the tripwire off (``grpo.tripwire.every: 0``), then with the default
tripwire (a round every 5 steps re-scores the 8 best rollouts with every probe). So that every
round does its whole work, the task pays a deliberately weak term (the answer's digit anywhere:
a random model earns it in about one completion in ten, so the 8 best are all probed) beside the
built-in ``exact`` term, and the findings threshold is off (the run is not stopped). Per step
it records the process CPU time spent outside the callbacks (generation, scoring, the update:
the tripwire's per-batch bookkeeping lands here), and per round the CPU time of the round itself.
The held-out eval and checkpoints are off, so neither lands in a step. Printed: the mean step CPU
time of each run, their ratio, the mean CPU time of one round, the round as a fraction of the
steps it covers (``every`` x the mean step), and the load average before and after (on a shared
machine CPU time, unlike wall time, is mostly the process's own work).

    OMP_NUM_THREADS=1 .venv/bin/python bench/tripwire_cost.py [--steps 40] [--every 5]
    OMP_NUM_THREADS=1 .venv/bin/python bench/tripwire_cost.py --demo-steps 400   # does it stop the demo?

The tiny model's steps take milliseconds, so this is an upper bound: a round's cost does not grow
with the model (it re-scores text), while a real model's step does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


WEAK = """
def anywhere(sample):
    return 1.0 if str(sample.row["answer"]) in sample.completion else 0.0
"""


def write_task(folder: Path) -> Path:
    import json

    folder.mkdir(parents=True)
    (folder / "weak.py").write_text(WEAK)
    rows = [{"question": f"{a}+{b}", "answer": str(a + b)} for a in range(1, 5) for b in range(1, 5)]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {
        "name": "bench",
        "model": "builtin:tiny",
        "data": {"train": "train.jsonl"},
        "prompt": {"template": "{question}="},
        "answer": {"column": "answer"},
        "rewards": [
            {"name": "format", "weight": 0.1},
            {"name": "exact", "verifier": "exact"},
            {"name": "weak", "verifier": "weak.anywhere"},
        ],
        "success": "exact",
        "generation": {"temperature": 1.0, "max_completion_length": 8},
        "grpo": {
            "learning_rate": 1e-3,
            "per_device_train_batch_size": 16,
            "gradient_accumulation_steps": 1,
            "num_generations": 8,
            "beta": 0.0,
            "stop": {"zero_std_steps": 0},
        },
    }
    (folder / "task.yaml").write_text(json.dumps(spec))
    return folder / "task.yaml"


def timed_run(task_path: Path, run_dir: Path, steps: int, every: int) -> tuple[list[float], list[float], int]:
    """(CPU seconds of each step outside the callbacks, CPU seconds of each tripwire round, the
    (rollout, term, probe) checks the rounds made)."""
    import dataclasses
    import importlib

    launch = importlib.import_module("rlvr.train.launch")  # rlvr.train is also the name of a function
    from rlvr.task import load_task
    from rlvr.train import TrainOptions, train
    from rlvr.train.tripwire import Tripwire

    rounds: list[float] = []
    marks: list[tuple[str, float]] = []
    original_check = Tripwire.check
    original_callback = getattr(launch, "rlvr_callback")  # noqa: B009

    def check(self: Tripwire, step: int) -> Any:
        t0 = time.process_time()
        out = original_check(self, step)
        if self.rules.enabled and step % self.rules.every == 0:
            rounds.append(time.process_time() - t0)
        return out

    def callback(*args: Any, **kwargs: Any) -> Any:
        cb = original_callback(*args, **kwargs)
        inner = cb.on_step_end

        def on_step_end(*a: Any, **k: Any) -> Any:
            marks.append(("enter", time.process_time()))
            out = inner(*a, **k)
            marks.append(("exit", time.process_time()))
            return out

        cb.on_step_end = on_step_end
        begin = cb.on_step_begin

        def on_step_begin(*a: Any, **k: Any) -> Any:
            marks.append(("begin", time.process_time()))
            return begin(*a, **k)

        cb.on_step_begin = on_step_begin
        return cb

    Tripwire.check = check  # type: ignore[method-assign]
    setattr(launch, "rlvr_callback", callback)  # noqa: B010 - the bench wraps the trainer's callback
    try:
        task = load_task(task_path)
        grpo = {**task.grpo, "tripwire": {"every": every, "findings": 0}, "save_strategy": "no"}
        task = dataclasses.replace(task, grpo=grpo)
        train(
            task,
            TrainOptions(
                run_dir=run_dir, max_steps=steps, no_gate_reason="bench", progress=False, eval_every=0, eval_prompts=0
            ),
        )
    finally:
        Tripwire.check = original_check  # type: ignore[method-assign]
        setattr(launch, "rlvr_callback", original_callback)  # noqa: B010
    step_cpu = []
    begin = None
    for kind, t in marks:
        if kind == "begin":
            begin = t
        elif kind == "enter" and begin is not None:
            step_cpu.append(t - begin)
            begin = None
    from rlvr.train.tripwire import read_rounds

    made = sum(int(r.get("checks") or 0) for r in read_rounds(run_dir))
    return step_cpu[1:], rounds, made  # the first step warms up


def demo(steps: int) -> None:
    """The demo with the tripwire at its defaults: rounds, checks, hits, whether it stopped."""
    from rlvr.demo import run_demo
    from rlvr.train.tripwire import read_rounds, read_trip

    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        run_demo(Path(tmp) / "demo", grpo_steps=steps, say=print, progress=False)
        run_dir = Path(tmp) / "demo" / "grpo"
        rounds, trip = read_rounds(run_dir), read_trip(run_dir)
    checks = sum(int(r.get("checks") or 0) for r in rounds)
    hits = sum(len(r.get("hits") or ()) for r in rounds)
    print(f"demo, {steps} GRPO steps: {len(rounds)} tripwire rounds, {checks} checks, {hits} hits, stopped: {trip}")
    print(f"load average: {load0[0]:.2f} before, {os.getloadavg()[0]:.2f} after ({os.cpu_count()} CPUs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument(
        "--demo-steps",
        type=int,
        default=0,
        metavar="N",
        help="instead: run the tiny demo (SFT, then N GRPO steps) and print what its tripwire did",
    )
    args = parser.parse_args()
    if args.demo_steps:
        demo(args.demo_steps)
        return

    import torch

    torch.set_num_threads(1)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        task_path = write_task(root / "task")
        base, _, _ = timed_run(task_path, root / "off", args.steps, 0)
        ours, rounds, made = timed_run(task_path, root / "on", args.steps, args.every)
    load1 = os.getloadavg()
    step_off, step_on = statistics.mean(base), statistics.mean(ours)
    per_round = statistics.mean(rounds) if rounds else 0.0
    print(
        f"steps {args.steps} (first dropped), tripwire every {args.every}: {len(rounds)} rounds, "
        f"{made / max(len(rounds), 1):.0f} probe checks a round; CPU time"
    )
    print(f"  step, tripwire off: {step_off * 1e3:.1f} ms (median {statistics.median(base) * 1e3:.1f})")
    print(f"  step, tripwire on : {step_on * 1e3:.1f} ms (median {statistics.median(ours) * 1e3:.1f})")
    print(f"  ratio on/off      : {step_on / step_off:.3f} (per-batch bookkeeping)")
    print(f"  one round         : {per_round * 1e3:.1f} ms (max {max(rounds, default=0) * 1e3:.1f})")
    print(
        f"  round / its {args.every} steps: {per_round / (args.every * step_off):.1%}; "
        f"total overhead {(per_round / args.every + step_on - step_off) / step_off:.1%} of a step"
    )
    print(f"  load average: {load0[0]:.2f} before, {load1[0]:.2f} after ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
