"""Reward server overhead, side by side in one run: samples per second through ``rlvr serve``'s
``POST /v1/score`` (uvicorn on 127.0.0.1, JSON both ways) against the same reward set scored
in process (``rlvr.rewards.scoring.score_rows``, the path ``rlvr score`` takes), for the
examples' math and unit_tests tasks at batch 256. Both paths use the same reward-set object (so
the same warm sandbox pool), the same chunk size and the same number of threads; rounds are
interleaved and the best of each is kept (a round repeats the batch for about a second).
Target: server / in-process >= 0.8.

It also prints what a stand-in reward for one masked row does to a group's GRPO advantages
(docs/serve.md): true masking, the group-mean stand-in, 0 and NaN.

    .venv/bin/python bench/serve.py [--batch 256] [--repeat 3] [--only math|unit_tests]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def rows_for(kind: str, n: int) -> tuple[Path, list[dict[str, Any]]]:
    """``n`` scored-file rows from the example's train split: three in four right, one wrong."""
    folder = ROOT / "examples" / ("math-boxed" if kind == "math" else "unit-tests")
    data = [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines() if line.strip()]
    rows = []
    for i in range(n):
        r = data[i % len(data)]
        if kind == "math":
            ans = r["answer"] if i % 4 else f"{r['answer']}+1"
            rows.append({"completion": f"So the answer is \\boxed{{{ans}}}.", "prompt": r["question"], **r})
        else:
            body = r["solution"] if i % 4 else r["solution"].replace("return", "return 1 +", 1)
            rows.append({"completion": f"<answer>\n{body}\n</answer>", "prompt": r["problem"], **r})
    return folder / "task.yaml", rows


class ThreadServer:
    def __init__(self, app: Any) -> None:
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


def bench(kind: str, batch: int, repeat: int) -> tuple[float, float]:
    import httpx

    from rlvr.rewards.scoring import score_rows
    from rlvr.serve.app import Limits, RewardServer
    from rlvr.serve.scoring import Scorer
    from rlvr.task import load_task

    task_path, rows = rows_for(kind, batch)
    task = load_task(task_path, check_data=False)
    workers = min(4, os.cpu_count() or 1)
    scorer = Scorer(task, task.reward_set(), {"status": "bypassed", "no_gate_reason": "benchmark"})
    server = ThreadServer(RewardServer(scorer, Limits(workers=workers, chunk=32, max_rows=batch)))
    body = {"samples": rows}
    best_local = best_remote = math.inf
    try:
        t = time.perf_counter()
        score_rows(rows, scorer.reward_set, workers, chunk=32)  # warm the pools (sandbox, math workers)
        # A round scores the batch k times, k chosen so a round lasts about a second: one fast
        # batch (math: tens of ms) is too short to time on a shared machine.
        k = max(1, math.ceil(1.0 / max(time.perf_counter() - t, 1e-3)))
        with httpx.Client(timeout=600) as client:
            for _ in range(repeat):
                t = time.perf_counter()
                for _ in range(k):
                    local = score_rows(rows, scorer.reward_set, workers, chunk=32)
                best_local = min(best_local, (time.perf_counter() - t) / k)
                t = time.perf_counter()
                for _ in range(k):
                    r = client.post(server.url + "/v1/score", json=body)
                    r.raise_for_status()
                best_remote = min(best_remote, (time.perf_counter() - t) / k)
                remote = r.json()["results"]
                assert [s.masked for s in local] == [x["masked"] for x in remote]
        masked = sum(x["masked"] for x in remote)
        print(
            f"{kind:<10} batch {batch}: in-process {batch / best_local:8.1f} samples/s, server "
            f"{batch / best_remote:8.1f} samples/s, "
            f"ratio {best_local / best_remote:.2f} (masked {masked})"
        )
    finally:
        server.stop()
    return batch / best_local, batch / best_remote


def advantage_table() -> None:
    from rlvr.serve import Imputer

    group: list[float | None] = [1.1, 0.1, 1.1, 0.1, 0.1, 1.1, 0.1, None]

    def adv(rs: list[float]) -> list[float]:
        if any(math.isnan(r) for r in rs):
            return [math.nan] * len(rs)
        m, s = statistics.mean(rs), statistics.stdev(rs)
        return [(r - m) / (s + 1e-6) for r in rs]

    decided = [r for r in group if r is not None]
    true = adv(decided) + [0.0]
    filled = [v for v, _ in Imputer().fill(group, ["g"] * len(group))]
    print("\nGRPO advantages of a group of 8 (rewards 1.1/0.1, last row masked), verl's formula:")
    for name, values in (
        ("true mask", true),
        ("group mean", adv(filled)),
        ("zero", adv([r if r is not None else 0.0 for r in group])),
        ("NaN", adv([r if r is not None else math.nan for r in group])),
    ):
        print(f"  {name:<10} " + " ".join(f"{a:+.3f}" for a in values))
    print(f"  decided rows scale by sqrt(7/6) = {math.sqrt(7 / 6):.4f} under the group-mean stand-in")


def main() -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", choices=["math", "unit_tests"])
    args = p.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    for kind in ("math", "unit_tests"):
        if args.only in (None, kind):
            bench(kind, args.batch, args.repeat)
    advantage_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
