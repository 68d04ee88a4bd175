"""Helpers for the reward-server tests: a small arithmetic task whose correctness term is a user
module that can be made to wait, sleep or crash on demand, and servers on 127.0.0.1 only."""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from support.servers import CliServer

_counter = itertools.count()

REWARD_MODULE = """
import threading
import time

from rlvr.rewards.base import BaseVerifier, Verdict, ground_truth
from rlvr.rewards.format import AnswerFormat, extract

RELEASE = threading.Event()  # completions containing WAIT block until a test sets it
CALLS = []  # every completion this checker was asked about, in order
# What the row's gold, as a completion, starts with. The fail-closed rule (rlvr.rewards.fault)
# scores the gold of every row the checker cannot decide: with "CRASH " a CRASH stands for an
# outage the gold shares (the row is masked); a test sets "" to make a failure the answer's
# alone (charged), or "WAIT " to make the gold as slow as a waiting answer.
GOLD_PREFIX = "CRASH "


class Check(BaseVerifier):
    kind = "answer"

    def __init__(self, answer_format=None, column="answer"):
        self.fmt = answer_format or AnswerFormat()
        self.column = column

    def gold_completion(self, row):
        gold = ground_truth(row, self.column)
        return None if gold is None else GOLD_PREFIX + self.fmt.wrap(gold)

    def verify(self, sample):
        CALLS.append(sample.completion)
        if "WAIT" in sample.completion:
            RELEASE.wait(30)
        if "SLEEP" in sample.completion:
            time.sleep(1.5)
        if "CRASH" in sample.completion:
            raise RuntimeError("the checker crashed")
        ex = extract(sample.completion, self.fmt)
        if not ex.ok:
            return Verdict.unparseable(ex.problem)
        gold = ground_truth(sample.row, self.column)
        ok = ex.answer.strip() == gold
        return (Verdict.correct if ok else Verdict.wrong)(answer=ex.answer, span=ex.span)
"""


def write_task(folder: Path, rows: int = 40) -> Path:
    """A task with a format term (weight 0.1) and a user-module correctness term (weight 1)."""
    from rlvr.demo.arithmetic import generate

    folder.mkdir(parents=True, exist_ok=True)
    module = f"serve_reward_{next(_counter)}_{os.getpid()}_{id(object())}"
    (folder / f"{module}.py").write_text(REWARD_MODULE)
    data = generate(rows, seed=1)
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
    (folder / "task.yaml").write_text(
        "name: arith\nmodel: builtin:tiny\ndata: {train: train.jsonl}\nprompt: {template: '{question}='}\n"
        "answer: {column: answer, format: tags}\n"
        f"rewards:\n  - {{name: format, weight: 0.1}}\n  - {{name: correct, verifier: '{module}:Check', weight: 1.0}}\n"
        "success: correct\ngeneration: {temperature: 1.0, max_completion_length: 12}\n"
    )
    return folder / "task.yaml"


def module_of(task_path: Path) -> Any:
    """The task's reward module as imported in this process (its ``RELEASE`` event)."""
    name = next(p.stem for p in task_path.parent.glob("serve_reward_*.py"))
    return sys.modules[name]


class ThreadServer:
    """A uvicorn server for ``app`` on 127.0.0.1 and an ephemeral port, in a thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


class ProcessServer(CliServer):
    """``rlvr serve`` in a subprocess on 127.0.0.1 (so a test can signal or SIGKILL it)."""

    def __init__(self, task_path: Path, *extra: str, port: int | None = None) -> None:
        super().__init__(["serve", str(task_path), "--no-gate", "test server", *extra], health="/healthz", port=port)

    def wait_active(self, n: int = 1, timeout: float = 30.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if httpx.get(self.url + "/healthz", timeout=5.0).json()["batches_active"] >= n:
                return
            time.sleep(0.05)
        raise RuntimeError("no batch became active")


def right(answer: str) -> str:
    return f"<answer>{answer}</answer>"
