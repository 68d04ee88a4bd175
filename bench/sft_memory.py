"""Peak memory of ``rlvr sft`` beside the planner's SFT estimate (``rlvr.plan.sftmemory``), one run.

Each run is a child process (``python -m rlvr.cli.main sft``) on a small chat task of its own
(arithmetic word questions, answers in tags) for ``--steps`` optimiser steps at each
``--batch``; its peak resident set (``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``, the child's
own high-water mark), its CPU seconds and the load average (1 minute) at its start and end are
printed beside the estimate for the same model, batch and measured sequence length:

    OMP_NUM_THREADS=1 .venv/bin/python bench/sft_memory.py [--model builtin:smollm2] [--batch 8 32] [--steps 3]

The estimate is what ``rlvr plan`` prints in its SFT line; this script is how its constants were
checked (the docs quote its output).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_task(folder: Path, model: str, rows: int = 64) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = [{"question": f"What is {i} plus {i + 7}?", "answer": str(2 * i + 7)} for i in range(rows)]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
    (folder / "task.yaml").write_text(
        f"name: sft-memory\nmodel: {model}\ndata: {{train: train.jsonl}}\nprompt: {{user: '{{question}}'}}\n"
        "answer: {column: answer, format: tags}\nrewards:\n  - {name: format, weight: 0.1}\n"
        "  - {name: correct, verifier: exact}\ngeneration: {max_completion_length: 32}\n"
    )
    return folder / "task.yaml"


def measure(task: Path, out: Path, batch: int, steps: int) -> dict[str, float]:
    """Run SFT in a child process (RUSAGE_CHILDREN then holds only its peak: one child per script
    run is measured, so the high-water mark is that run's)."""
    code = (
        "import resource, sys\n"
        "from rlvr.cli.main import main\n"
        f"rc = main(['sft', {str(task)!r}, '--out', {str(out)!r}, '--no-progress', '--max-steps', '{steps}'])\n"
        "print('RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "HF_HUB_OFFLINE": "1"}
    load0 = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    override = json.dumps({"per_device_train_batch_size": batch})
    task.write_text(task.read_text().split("sft:")[0] + f"sft: {override}\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"sft failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    rss_kb = next(int(x.split()[1]) for x in proc.stderr.splitlines() if x.startswith("RSS_KB"))
    return {
        "peak_rss_gb": rss_kb * 1024 / 1e9,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "wall_s": time.monotonic() - t0,
        "load_start": load0,
        "load_end": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="builtin:smollm2")
    ap.add_argument("--batch", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    from rlvr.lengths import check_lengths
    from rlvr.plan.architecture import load_architecture
    from rlvr.plan.sftmemory import sft_estimate
    from rlvr.task import load_task

    with tempfile.TemporaryDirectory() as tmp:
        task_path = write_task(Path(tmp) / "task", args.model)
        threads = os.environ.get("OMP_NUM_THREADS")
        print(f"model {args.model}, {args.steps} SFT steps per run, OMP_NUM_THREADS={threads}")
        for batch in args.batch:
            got = measure(task_path, Path(tmp) / f"out-{batch}", batch, args.steps)
            lengths = check_lengths(load_task(task_path))  # the longest prompt + target, as SFT pads a batch
            seq = lengths.prompt.max + lengths.answer.max
            est = sft_estimate(load_architecture(args.model), batch=batch, seq=seq, device="cpu")
            print(
                f"batch {batch:>3}: peak RSS {got['peak_rss_gb']:.2f} GB, estimate {est.peak / 1e9:.2f} GB "
                f"(ratio measured/estimate {got['peak_rss_gb'] / (est.peak / 1e9):.2f}; {est.text()}); "
                f"{got['cpu_s']:.0f} CPU s, {got['wall_s']:.0f} wall s, "
                f"load {got['load_start']:.2f} -> {got['load_end']:.2f}"
            )


if __name__ == "__main__":
    main()
