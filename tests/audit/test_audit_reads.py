"""Verifiers declare what they read (``Reads``), and the audit builds its rows from that alone."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rlvr.audit import run_audit
from rlvr.rewards import BUILTINS, BaseVerifier, Reads, Sample, Verdict, build_verifier
from rlvr.rewards.combine import RewardSet, Term
from rlvr.rewards.schema import ToolCallVerifier
from rlvr.task import load_task

TOOLS = [
    {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    }
]
# The expected call sits in a column no convention names ("want"); the answer column holds nothing useful.
ROWS = [
    {
        "question": "Weather in Paris for 3 days?",
        "answer": "-",
        "want": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
    },
    {
        "question": "Weather in Oslo?",
        "answer": "-",
        "want": {"name": "get_weather", "arguments": {"city": "Oslo", "days": 1}},
    },
]
BUILTIN_OPTIONS: dict[str, dict[str, Any]] = {
    "format": {},
    "exact": {},
    "math": {},
    "json_schema": {"schema": {"type": "object", "properties": {"a": {"type": "integer"}}}},
    "tool_call": {"tools": TOOLS},
    "length_penalty": {"budget": 16},
    "overlong": {"max_completion_length": 16},
    "repetition": {},
    "judge": {"model": "m", "base_url": "http://127.0.0.1:1/v1", "require_calibration": False},
    "unit_tests": {},
    "valid_calls": {},
    "required_tools": {"tools": ["search"]},
    "call_budget": {"budget": 1},
}


class RenamedToolCall(BaseVerifier):
    """A tool-call check whose internals share no name with the built-in's (no ``expected_column``,
    no ``specs``): only ``reads()`` says where the expected call and the tools are."""

    kind = "tool_call"

    def __init__(self, declare: bool = True) -> None:
        self._inner_check = ToolCallVerifier(TOOLS, expected_column="want", timeout=None)
        self.declare = declare

    def reads(self) -> Reads | None:
        if not self.declare:
            return None
        return Reads(columns=("want",), expected_column="want", tools={t["name"]: t["parameters"] for t in TOOLS})

    def verify(self, sample: Sample) -> Verdict:
        return self._inner_check.verify(sample)

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        return [self.verify(s) for s in samples]


def _task(tmp_path: Path) -> Any:
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    spec = {
        "name": "t",
        "model": "builtin:tiny",
        "data": {"train": "train.jsonl"},
        "prompt": {"template": "{question}="},
        "answer": {"column": "answer"},
        "rewards": [{"name": "call", "verifier": "tool_call", "options": {"tools": TOOLS}}],
        "generation": {"max_completion_length": 12},
    }
    (tmp_path / "task.yaml").write_text(json.dumps(spec))
    return load_task(tmp_path / "task.yaml")


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_verifier_declares_what_it_reads(name: str) -> None:
    assert set(BUILTIN_OPTIONS) == set(BUILTINS)
    verifier = build_verifier(name, BUILTIN_OPTIONS[name], answer_column="solution")
    assert isinstance(verifier, BaseVerifier) and type(verifier).reads is not BaseVerifier.reads
    reads = verifier.reads()
    assert isinstance(reads, Reads)
    if reads.answer is not None:
        assert reads.answer == "solution" and reads.answer in reads.columns


def test_the_audit_tests_rows_of_a_verifier_whose_internals_are_renamed(tmp_path: Path) -> None:
    report = run_audit(
        _task(tmp_path), max_prompts=2, seed=0, tokenizer=None, reward_set=RewardSet([Term("call", RenamedToolCall())])
    )
    assert report.terms[0].prompts == 2, report.terms[0].notes
    for exploit in ("call_extra_keys", "call_missing_keys", "call_wrong_types"):
        assert report.finding("call", exploit).verdict == "ok"


def test_a_verifier_that_declares_nothing_is_read_by_the_column_conventions(tmp_path: Path) -> None:
    # The same check without the declaration: the expected call is in no conventional column, so
    # the audit has nothing to build from and says so ("untested"), instead of guessing.
    verifier = RenamedToolCall(declare=False)
    report = run_audit(
        _task(tmp_path), max_prompts=2, seed=0, tokenizer=None, reward_set=RewardSet([Term("call", verifier)])
    )
    assert report.terms[0].prompts == 0
    assert report.finding("call", "call_extra_keys").verdict == "untested"
