"""Helpers for the gate tests: a small arithmetic task in a temporary folder, with a user reward
module beside it, and a fake sampler (deterministic completions, no model)."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlvr.demo.arithmetic import generate, reference_answer
from support.fakes import FakeSampler
from support.servers import CliServer

_counter = itertools.count()

REWARD_MODULE = """
from rlvr.rewards.base import BaseVerifier, Verdict, ground_truth
from rlvr.rewards.format import AnswerFormat, extract


class Check(BaseVerifier):
    kind = "answer"

    def __init__(self, answer_format=None, column="answer"):
        self.fmt = answer_format or AnswerFormat()
        self.column = column

    def verify(self, sample):
        ex = extract(sample.completion, self.fmt)
        if not ex.ok:
            return Verdict.unparseable(ex.problem)
        gold = ground_truth(sample.row, self.column)
        ok = ex.answer.strip() == gold
        return (Verdict.correct if ok else Verdict.wrong)(answer=ex.answer, span=ex.span)
"""


def arithmetic_sampler(kinds: Sequence[str] = ("right", "wrong", "untagged", "right")) -> FakeSampler:
    """Completions chosen by a rule from the prompt: cycles through a correct answer in tags, a
    wrong one, an untagged one and a correct one, so every reward class is present."""
    drawn = itertools.count()

    def text(prompt: str, rng: random.Random) -> str:
        kind = kinds[next(drawn) % len(kinds)]
        answer = reference_answer(prompt) or "0"
        return {
            "right": f"<answer>{answer}</answer>",
            "wrong": f"<answer>{int(answer) + 1}</answer>",
            "untagged": answer,
        }[kind]

    return FakeSampler(text)


def write_task(folder: Path, *, rows: int = 80, module: str | None = None, temperature: float = 1.0) -> Path:
    """An arithmetic task file in ``folder``; with ``module`` its correctness term is a user
    reward module of that name written beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    data = generate(rows, seed=1)
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
    verifier = f"{module}:Check" if module else "exact"
    if module:
        (folder / f"{module}.py").write_text(REWARD_MODULE)
    (folder / "task.yaml").write_text(
        "name: arith\nmodel: builtin:tiny\ndata: {train: train.jsonl}\nprompt: {template: '{question}='}\n"
        "answer: {column: answer, format: tags}\n"
        f"rewards:\n  - {{name: format, weight: 0.1}}\n  - {{name: correct, verifier: '{verifier}', weight: 1.0}}\n"
        f"generation: {{temperature: {temperature}, max_completion_length: 12}}\n"
    )
    return folder / "task.yaml"


def unique_module() -> str:
    # Python caches imported modules by name: every test gets its own reward module name.
    return f"gate_reward_{next(_counter)}_{id(object())}"


def no_exploits(task: Any) -> Any:
    """A stand-in for the audit that finds nothing (the real audit has its own tests)."""
    from rlvr.gate.record import AuditOutcome

    return AuditOutcome({"fake": True}, ())


SMALL = 20  # set size of most tests: each verdict is an fsync'd commit (~20 ms here)


def sign_small(task: Any, gate_path: Any = None, **kw: Any) -> Any:
    """``gate.sign`` for a test-sized set, with the audit stood in for by ``no_exploits``."""
    from rlvr import gate

    kw.setdefault("audit", no_exploits)
    return gate.sign(task, gate_path, min_samples=SMALL, **kw)


def build_and_review(task: Any, label: str = "right", size: int = SMALL, sampler: Any = None) -> Any:
    """A built set in the task's default gate folder with every sample marked ``label``."""
    from rlvr import gate

    store = gate.build_set(task, gate.db_path(task), sampler=sampler or arithmetic_sampler(), size=size)
    for s in store.samples():
        store.add_review(s.id, label, reviewer="alice")
    return store


def review_server(task_path: Path, reviewer: str = "alice") -> CliServer:
    """``rlvr inspect serve`` in a subprocess (so a test can SIGKILL it)."""
    return CliServer(["inspect", "serve", str(task_path), "--reviewer", reviewer], health="/status")
