"""rlvr train against a bare TRL script with the same GRPOConfig, side by side, on the tiny model.

Both runs train the built-in tiny model on the built-in arithmetic task for the same number of
steps with the same resolved GRPOConfig and equivalent rewards (a format term and an exact-match
term). The bare script uses two plain regex functions; rlvr adds its verifiers, the masking
adapter, per-term error-rate logging, metrics.jsonl, the config dump and the final save. The
held-out eval is switched off in the main comparison (it is extra work, not overhead) and
measured separately. Runs alternate (rlvr, bare, rlvr, bare, ...) to spread machine noise; the
ratio of medians is printed.

    OMP_NUM_THREADS=1 .venv/bin/python bench/train_overhead.py [--steps 150] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)


def format_reward(completions, **kwargs):
    return [1.0 if len(ANSWER.findall(c)) == 1 else 0.0 for c in completions]


def correct_reward(completions, answer, **kwargs):
    out = []
    for c, a in zip(completions, answer, strict=True):
        m = ANSWER.findall(c)
        out.append(1.0 if len(m) == 1 and m[0].strip() == str(a).strip() else 0.0)
    return out


def bare_trl(task, model_path: str, out: Path, steps: int) -> float:
    """What a user would write by hand: GRPOTrainer with the same config values."""

    from datasets import Dataset
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    from rlvr.settings import hardware
    from rlvr.train import TrainOptions, layered_settings

    t0 = time.perf_counter()
    opts = TrainOptions(run_dir=out, max_steps=steps, progress=False)
    cfg = dict(layered_settings(task, opts, hardware()).grpo)
    cfg["reward_weights"] = [t.weight for t in task.rewards]
    cfg["save_strategy"] = "no"
    tok = PreTrainedTokenizerFast.from_pretrained(model_path)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_path)
    rows = task.load_split("train")
    ds = Dataset.from_list([{**r, "prompt": task.render_prompt(r)} for r in rows])
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[format_reward, correct_reward],
        args=GRPOConfig(**cfg),
        train_dataset=ds,
        processing_class=tok,
    )
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # rlvr prints nothing per step either
    trainer.train()
    trainer.save_model(str(out / "final"))
    return time.perf_counter() - t0


def ours(task, model_path: str, out: Path, steps: int, eval_every: int = 0) -> float:
    from rlvr.train import TrainOptions, train

    t0 = time.perf_counter()
    train(
        task,
        TrainOptions(
            run_dir=out,
            model=model_path,
            max_steps=steps,
            no_gate_reason="benchmark",
            progress=False,
            eval_every=eval_every,
            overrides={"save_strategy": "no"},
        ),
    )
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from rlvr.demo.arithmetic import write_task
    from rlvr.models import build_builtin, quiet_libraries
    from rlvr.task import load_task
    from rlvr.train.sft import SftOptions, run_sft

    quiet_libraries()
    root = Path(tempfile.mkdtemp(prefix="rlvr-bench-"))
    task = load_task(write_task(root / "task"))
    base = build_builtin("tiny", root / "base")
    # A partially trained model, so groups have reward variance and the optimiser really runs.
    sft = run_sft(
        task,
        SftOptions(
            out_dir=root / "sft",
            model=str(base),
            target_pass_rate=0.2,
            check_every=25,
            check_temperature=0.0,
            progress=False,
        ),
    )
    model = str(sft.out_dir)
    print(
        f"tiny model after SFT ({sft.steps} steps, dev pass rate {sft.dev_pass_rate:.0%}); {args.steps} GRPO "
        f"steps per run, {args.repeats} repeats, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}"
    )
    t_ours, t_bare = [], []
    for i in range(args.repeats):
        t_ours.append(ours(task, model, root / f"ours{i}", args.steps))
        t_bare.append(bare_trl(task, model, root / f"bare{i}", args.steps))
        print(
            f"  repeat {i + 1}: rlvr {t_ours[-1]:.2f} s   bare TRL {t_bare[-1]:.2f} s   ratio "
            f"{t_ours[-1] / t_bare[-1]:.3f}"
        )
    with_eval = ours(task, model, root / "ours-eval", args.steps, eval_every=50)
    mo, mb = statistics.median(t_ours), statistics.median(t_bare)
    print(f"median: rlvr train {mo:.2f} s, bare TRL {mb:.2f} s -> overhead ratio {mo / mb:.3f} (target <= 1.05)")
    print(
        f"rlvr train with the held-out eval every 50 steps (200 prompts): {with_eval:.2f} s "
        f"({with_eval / mb:.3f}x bare; the eval is extra work, not overhead)"
    )
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
