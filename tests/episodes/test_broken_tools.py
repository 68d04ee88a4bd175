"""A broken tool is named as such: when most tool calls fail, the probe routes ``fix-tool`` (naming
the tool and its commonest error) instead of SFT, ``rlvr sft`` stops after a few identical tool
failures with one problem, and the calls show progress while they run."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rlvr.episodes.tools import CallWatch, ToolBox, make_tool
from rlvr.errors import ConfigError
from rlvr.probe import run_probe
from rlvr.probe.report import broken_tool
from rlvr.task import load_task
from support.fakes import FakeSampler
from support.tasks import make_task

BROKEN = '''
def convert(value: str) -> str:
    """Convert a value.

    Args:
        value: what to convert
    """
    raise ZeroDivisionError("the unit table is empty")
'''
CALL = '<tool_call>{"name": "convert", "arguments": {"value": "%s"}}</tool_call>'


def broken_task(tmp_path: Path, reference: bool = False) -> Path:
    folder = tmp_path / "task"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "units.py").write_text(BROKEN)
    calls = [json.dumps([{"name": "convert", "arguments": {"value": str(i)}}]) for i in range(10, 20)]
    rows = [{"question": f"{i}+{i}", "answer": str(2 * i), "reference_calls": calls[i - 10]} for i in range(10, 20)]
    return make_task(
        folder,
        train_rows=rows if reference else None,
        extra={
            "prompt": {"user": "{question}"},
            "environment": {"tools": ["units.convert"], "max_turns": 2},
            "generation": {"temperature": 1.0, "max_completion_length": 190},
            "probe": {"k": 2, "max_prompts": 4},
        },
    )


def test_the_probe_routes_fix_tool_naming_the_tool_and_its_commonest_error(tmp_path: Path) -> None:
    from rlvr.models import load_tokenizer

    task = load_task(broken_task(tmp_path))
    tok = load_tokenizer("builtin:tiny")

    def rule(prompt: str, rng: random.Random) -> str:
        if "<|tool|>" not in prompt:
            return CALL % "3 km"
        return "<answer>0</answer>"

    def ids(text: str, _max: int) -> tuple[int, ...]:
        return tuple(tok(text + "</s>", add_special_tokens=False)["input_ids"])

    report = run_probe(task, out_dir=tmp_path / "probe", sampler=FakeSampler(rule, token_ids=ids), progress=False)
    assert report.route == "fix-tool", report.reason
    assert "'convert'" in report.reason and "ZeroDivisionError: the unit table is empty" in report.reason


def test_tools_that_mostly_work_leave_the_route_to_the_rate() -> None:
    calls = [("convert", None, None)] * 3 + [("convert", "failed", "ValueError: x")] * 2
    assert broken_tool(calls) is None
    assert broken_tool([("convert", "timeout", "convert timed out after 5 s")] * 4) is not None
    assert broken_tool([("nope", "invalid", "unknown tool")] * 9) is None  # the model's fault, not the tool's


def test_sft_stops_after_a_few_identical_tool_failures_with_one_problem(tmp_path: Path) -> None:
    from rlvr.models import load_tokenizer
    from rlvr.train.sft import SAME_FAILURES, reference_episodes

    task = load_task(broken_task(tmp_path, reference=True))
    rows = task.load_split("train")
    with pytest.raises(ConfigError) as info:
        reference_episodes(task, load_tokenizer("builtin:tiny"), rows, rows)
    last = info.value.problems[-1]
    assert f"the tool 'convert' failed {SAME_FAILURES} times with the same error" in last.what
    assert len(info.value.problems) == 1  # one message, after three rows: not one per row


def test_tool_calls_show_progress_while_they_run(capsys: pytest.CaptureFixture[str]) -> None:
    def slow(value: str) -> str:
        """Slow.

        Args:
            value: anything
        """
        raise TimeoutError("no answer")

    box = ToolBox([make_tool(slow)])
    box.watch = CallWatch("rlvr probe", every=0.0)
    box.call("slow", {"value": "x"})
    box.call("slow", {"value": "x"})
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "rlvr probe: 2 tool calls, 2 failed (commonest: slow: TimeoutError: no answer, 2 times)"
