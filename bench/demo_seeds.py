"""Both demos on data seeds 0, 1 and 2, side by side: what a user of ``rlvr demo`` can expect.

Runs ``rlvr demo --model M --seed S`` for each demo and seed (one process each, ``OMP_NUM_THREADS=1``
as the demo sets it), then prints one table: held-out pass@1 (the headline: k samples per prompt at
the temperature GRPO samples at) at base, after SFT and after GRPO, pass@k and greedy accuracy
after SFT and after GRPO, the lift in pass@1 with its 95 % interval, and the wall-clock and CPU
minutes of each run with the load average (1 minute) at its start and end. CPU minutes are the
process's own (``resource.getrusage`` of the child): on a shared machine they stay close to what an
idle one would take on one thread, where wall-clock time does not.

    OMP_NUM_THREADS=1 .venv/bin/python bench/demo_seeds.py [--models tiny smollm2] [--seeds 0 1 2]
        [--jobs 1] [--out runs/demo-seeds]
    .venv/bin/python bench/demo_seeds.py --table runs/demo-seeds [--markdown]   # the table of runs already made

Each run's folder is ``OUT/MODEL-sSEED`` (the demo's own ``demo.json`` inside) with ``OUT/MODEL-sSEED.log``
(its output) and ``OUT/MODEL-sSEED.json`` (this script's measurement of it). ``--jobs 2`` runs two
at a time: fewer wall minutes on an idle 2-core machine, more per run on a busy one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_one(model: str, seed: int, out: Path) -> dict[str, Any]:
    """Run one demo in a child process; its wall and CPU seconds and the load around it."""
    folder = out / f"{model}-s{seed}"
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, "-m", "rlvr.cli.main", "demo", "--model", model, "--seed", str(seed)]
    argv += ["--out", str(folder), "--no-progress"]
    load_start, t0 = os.getloadavg()[0], time.time()
    with open(out / f"{model}-s{seed}.log", "w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
    record = {
        "model": model,
        "seed": seed,
        "exit": os.waitstatus_to_exitcode(status),
        "wall_seconds": round(time.time() - t0, 1),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "max_rss_mb": round(usage.ru_maxrss / 1024),
        "load_start": round(load_start, 2),
        "load_end": round(os.getloadavg()[0], 2),
    }
    (out / f"{model}-s{seed}.json").write_text(json.dumps(record, indent=2))
    return record


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}"


def row_of(out: Path, model: str, seed: int) -> list[str]:
    """One table row from a run's ``demo.json`` (and this script's measurement, when it made the run)."""
    demo_path = out / f"{model}-s{seed}" / "demo.json"
    if not demo_path.exists():
        return [model, str(seed), "not measured"]
    demo = json.loads(demo_path.read_text())
    bench_path = out / f"{model}-s{seed}.json"
    bench = json.loads(bench_path.read_text()) if bench_path.exists() else {}
    stages = {s["name"]: s for s in demo["stages"]}
    base, sft, grpo = stages.get("base", {}), stages.get("after SFT", {}), stages.get("after GRPO", {})
    k = grpo.get("k") or sft.get("k") or "k"
    if "lift" in demo:
        lift = f"{demo['lift'] * 100:+.1f} [{demo['lift_low'] * 100:+.1f}, {demo['lift_high'] * 100:+.1f}]"
    else:
        lift = "stopped: " + str(demo.get("stopped", {}).get("message", "no GRPO"))[:40]
    wall = bench.get("wall_seconds", demo.get("seconds"))
    cpu = bench.get("cpu_seconds", demo.get("cpu_seconds"))
    loads = demo.get("load_average") or []
    load = (
        f"{bench['load_start']:.1f}/{bench['load_end']:.1f}"
        if bench
        else (f"{loads[0]:.1f}/{loads[3]:.1f}" if len(loads) == 6 else "-")
    )
    return [
        model,
        str(seed),
        str(demo.get("sft_steps", "-")),
        _pct(base.get("pass1")),
        f"{_pct(sft.get('pass1'))} / {_pct(grpo.get('pass1'))}",
        f"{_pct(sft.get('passk'))} / {_pct(grpo.get('passk'))} (k={k})",
        f"{_pct(sft.get('accuracy'))} / {_pct(grpo.get('accuracy'))}",
        lift,
        f"{wall / 60:.1f}" if wall is not None else "-",
        f"{cpu / 60:.1f}" if cpu is not None else "-",
        load,
    ]


HEAD = [
    "demo",
    "seed",
    "SFT steps",
    "base pass@1",
    "pass@1 SFT / GRPO",
    "pass@k SFT / GRPO",
    "greedy SFT / GRPO",
    "lift pass@1 [95% CI]",
    "wall min",
    "CPU min",
    "load start/end",
]


def table(out: Path, models: list[str], seeds: list[int], markdown: bool = False) -> str:
    rows = [HEAD] + [row_of(out, m, s) for m in models for s in seeds]
    note = "(percentages of held-out prompts; pass@1 and pass@k sampled at the task's temperature)"
    if markdown:  # the README's form of the same table
        lines = ["| " + " | ".join(r) + " |" for r in rows]
        lines.insert(1, "|" + "---|" * len(HEAD))
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(len(HEAD))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines) + "\n" + note


# The goals: (lift in held-out pass@1 on every seed, CPU minutes per run).
GOALS = {"tiny": (0.40, 6.0), "smollm2": (0.20, 15.0)}


def verdicts(out: Path, models: list[str], seeds: list[int]) -> list[str]:
    """One line per demo: the range of lifts and CPU minutes over the seeds, against its goal."""
    lines = []
    for model in models:
        runs = [json.loads(p.read_text()) for s in seeds if (p := out / f"{model}-s{s}" / "demo.json").exists()]
        lifts = [r["lift"] for r in runs if "lift" in r]
        if not lifts:
            lines.append(f"{model}: no run finished GRPO")
            continue
        cpus = []
        for s in seeds:
            bench_path = out / f"{model}-s{s}.json"
            if bench_path.exists():
                cpus.append(json.loads(bench_path.read_text())["cpu_seconds"] / 60)
        cpus = cpus or [r["cpu_seconds"] / 60 for r in runs]
        goal_lift, goal_cpu = GOALS.get(model, (None, None))
        met = (
            ""
            if goal_lift is None
            else f"; goal +{goal_lift * 100:.0f} on every seed in <= {goal_cpu:g} CPU min: "
            + ("met" if len(lifts) == len(seeds) and min(lifts) >= goal_lift and max(cpus) <= goal_cpu else "NOT met")
        )
        lines.append(
            f"{model}: lift {min(lifts) * 100:+.1f} to {max(lifts) * 100:+.1f} points over {len(lifts)} of "
            f"{len(seeds)} seeds, {min(cpus):.1f}-{max(cpus):.1f} CPU min{met}"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["tiny", "smollm2"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--jobs", type=int, default=1, help="runs at a time (default 1)")
    ap.add_argument("--out", default="runs/demo-seeds")
    ap.add_argument("--table", metavar="OUT", help="print the table of the runs in OUT and exit")
    ap.add_argument("--markdown", action="store_true", help="with --table: as a Markdown table (the README's)")
    args = ap.parse_args()
    if args.table:
        print(table(Path(args.table), args.models, args.seeds, markdown=args.markdown))
        print("\n".join(verdicts(Path(args.table), args.models, args.seeds)))
        return
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count()
    print(f"{len(args.models) * len(args.seeds)} runs, {args.jobs} at a time, on {cores} cores; output in {out}")
    jobs = [(m, s) for m in args.models for s in args.seeds]
    with ThreadPoolExecutor(args.jobs) as pool:
        for rec in pool.map(lambda ms: run_one(ms[0], ms[1], out), jobs):
            print(
                f"  {rec['model']} seed {rec['seed']}: exit {rec['exit']}, {rec['wall_seconds'] / 60:.1f} min wall, "
                f"{rec['cpu_seconds'] / 60:.1f} CPU min, load {rec['load_start']} -> {rec['load_end']}",
                flush=True,
            )
    print()
    print(table(out, args.models, args.seeds))
    print("\n".join(verdicts(out, args.models, args.seeds)))
    peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, 0)
    print(f"(peak memory of one run: {peak} MB)")


if __name__ == "__main__":
    main()
