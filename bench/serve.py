"""Reward server overhead, side by side in one run: samples per second through ``rlvr serve``'s
``POST /v1/score`` (uvicorn on 127.0.0.1, JSON both ways) against the same reward set scored
in process (``rlvr.rewards.scoring.score_rows``, the path ``rlvr score`` takes), for the
examples' math and unit_tests tasks at batch 256. Both paths use the same reward-set object (so
the same warm sandbox pool), the same chunk size and the same number of threads; rounds are
interleaved and the best of each is kept (a round repeats the batch for about a second).
Target: server / in-process >= 0.8.

With ``--big``, one client sends a 14 MB number-dense body (one sample whose row carries about
1.4 million numbers) while another sends one-sample requests back to back: the small requests'
latency (median and worst) with the big body in flight, next to the same requests alone. The
server must parse and score off its event loop (``rlvr.serve.app``), so a slow body delays
other clients by little more than their own work.

It also prints what a stand-in reward for one masked row does to a group's GRPO advantages
(docs/serve.md): true masking, the group-mean stand-in, 0 and NaN.

    .venv/bin/python bench/serve.py [--batch 256] [--repeat 3] [--only math|unit_tests] [--big]
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


def big_body(megabytes: float = 14.0) -> bytes:
    """One sample whose row carries a column of numbers, ``megabytes`` MB of JSON in all: every
    number goes through the strict reader's number hook."""
    n = int(megabytes * 1e6 / 9)
    numbers = ",".join(f"{(i % 9973) / 7919:.6f}"[:9] for i in range(n))
    row = {"completion": "So the answer is \\boxed{4}.", "prompt": "2+2=", "answer": "4"}
    text = json.dumps({"samples": [row]})[:-3] + ', "numbers": [' + numbers + "]}]}"
    return text.encode()


def small_latencies(client: Any, url: str, seconds: float, stop: threading.Event | None = None) -> list[float]:
    """Latencies of one-sample requests sent back to back for ``seconds`` (or until ``stop``)."""
    body = {"samples": [{"completion": "So the answer is \\boxed{4}.", "prompt": "2+2=", "answer": "4"}]}
    out: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end and not (stop is not None and stop.is_set()):
        t = time.perf_counter()
        client.post(url + "/v1/score", json=body).raise_for_status()
        out.append(time.perf_counter() - t)
    return out


def bench_big(megabytes: float = 14.0) -> tuple[float, float, float, float]:
    """Small requests' (median, worst) latency in ms alone, then with one big body in flight."""
    import httpx

    from rlvr.serve.app import Limits, RewardServer
    from rlvr.serve.scoring import Scorer
    from rlvr.task import load_task

    task_path = ROOT / "examples" / "math-boxed" / "task.yaml"
    task = load_task(task_path, check_data=False)
    scorer = Scorer(task, task.reward_set(), {"status": "bypassed", "no_gate_reason": "benchmark"})
    server = ThreadServer(RewardServer(scorer, Limits(workers=2, max_body_bytes=16 * 1024 * 1024)))
    big = big_body(megabytes)
    try:
        with httpx.Client(timeout=600) as client:
            small_latencies(client, server.url, 0.5)  # warm up
            alone = small_latencies(client, server.url, 2.0)
            done = threading.Event()
            status: list[int] = []

            def send_big() -> None:
                with httpx.Client(timeout=600) as c:
                    r = c.post(server.url + "/v1/score", content=big, headers={"content-type": "application/json"})
                    status.append(r.status_code)
                done.set()

            t0 = time.perf_counter()
            thread = threading.Thread(target=send_big)
            thread.start()
            during = small_latencies(client, server.url, 600.0, stop=done)
            thread.join()
            big_seconds = time.perf_counter() - t0
    finally:
        server.stop()
    ms = [1000 * statistics.median(alone), 1000 * max(alone), 1000 * statistics.median(during), 1000 * max(during)]
    print(
        f"14 MB body ({len(big) / 1e6:.1f} MB, HTTP {status[0]}, {big_seconds:.1f} s): other clients' latency "
        f"alone median {ms[0]:.1f} ms, worst {ms[1]:.1f} ms; with the body in flight median {ms[2]:.1f} ms, "
        f"worst {ms[3]:.1f} ms ({len(during)} requests)"
    )
    return ms[0], ms[1], ms[2], ms[3]


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
    p.add_argument("--big", action="store_true", help="only the 14 MB body in flight against small requests")
    args = p.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    if args.big:
        bench_big()
        return 0
    for kind in ("math", "unit_tests"):
        if args.only in (None, kind):
            bench(kind, args.batch, args.repeat)
    advantage_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
