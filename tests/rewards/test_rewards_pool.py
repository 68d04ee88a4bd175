"""The worker pool: hard timeouts from any thread, memory limits, crash isolation."""

from __future__ import annotations

import threading
import time

import pytest

from rlvr.rewards.pool import WorkerPool


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(2) as p:
        yield p


def test_call_returns_the_function_value(pool):
    assert pool.call("math:factorial", 5).value == 120


def test_timeout_is_an_error_result_not_a_value(pool):
    start = time.monotonic()
    res = pool.call("time:sleep", 30, timeout=0.5)
    assert not res.ok and res.error_kind == "timeout"
    assert time.monotonic() - start < 10


def test_timeout_works_off_the_main_thread(pool):
    results = []
    t = threading.Thread(target=lambda: results.append(pool.call("time:sleep", 30, timeout=0.3)))
    t.start()
    t.join(20)
    assert results and results[0].error_kind == "timeout"


def test_pool_replaces_a_killed_worker(pool):
    pool.call("time:sleep", 30, timeout=0.2)
    pool.call("time:sleep", 30, timeout=0.2)
    assert pool.call("builtins:abs", -3).value == 3


def test_memory_blowup_is_a_memory_error_result():
    with WorkerPool(1, memory_mb=512) as p:
        res = p.call("builtins:bytearray", 2 * 1024**3, timeout=20)
        assert res.error_kind == "memory"
        assert p.call("builtins:abs", -1).value == 1


def test_exception_in_worker_is_a_crash_result(pool):
    res = pool.call("builtins:int", "not a number")
    assert res.error_kind == "crash" and "ValueError" in res.detail


def test_map_keeps_order(pool):
    assert [r.value for r in pool.map("builtins:abs", [(-i,) for i in range(7)])] == list(range(7))


def test_concurrent_callers_each_get_their_own_answer(pool):
    out: dict[int, int] = {}

    def work(i: int) -> None:
        out[i] = pool.call("builtins:abs", -i).value

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert out == {i: i for i in range(8)}


def _in_daemon(q) -> None:  # runs in a daemonic multiprocessing child
    from rlvr.rewards.pool import WorkerPool

    with WorkerPool(1) as p:
        q.put((p.call("time:sleep", 30, timeout=0.3).error_kind, p.call("builtins:abs", -2).value))


def test_timeout_works_inside_a_daemonic_worker_process():
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_in_daemon, args=(q,), daemon=True)
    proc.start()
    try:
        assert q.get(timeout=60) == ("timeout", 2)
    finally:
        proc.join(10)


def test_worker_exits_when_its_parent_is_killed(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, threading\n"
        "from rlvr.rewards.pool import WorkerPool\n"
        "p = WorkerPool(1)\n"
        "p.warm()\n"
        "w = p._idle.get()\n"
        "print(w.proc.pid, flush=True)\n"
        "p._idle.put(w)\n"
        "p.call('time:sleep', 600, timeout=600)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    worker_pid = int(parent.stdout.readline())
    time.sleep(0.5)  # the worker is now busy sleeping
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(worker_pid, 0)
            with open(f"/proc/{worker_pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return  # exited; only waiting for whoever adopted it to reap it
        except (ProcessLookupError, FileNotFoundError):
            return
        time.sleep(0.2)
    pytest.fail(f"worker {worker_pid} outlived its parent")
