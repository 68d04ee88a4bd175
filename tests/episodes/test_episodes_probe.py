"""The probe on an episode task: each sample is an episode, the report says how episodes went."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rlvr.probe import run_probe
from rlvr.task import load_task
from support.fakes import FakeSampler
from support.tasks import make_task

CALL = '<tool_call>{"name": "calculator", "arguments": {"expression": "%s"}}</tool_call>'


def test_the_probe_samples_episodes_and_reports_turns_calls_errors_and_cut_offs(tmp_path: Path) -> None:
    from rlvr.models import load_tokenizer

    task = load_task(
        make_task(
            tmp_path / "task",
            rows=4,
            extra={
                "prompt": {"user": "{question}"},
                "environment": {"tools": ["calculator"], "max_turns": 2},
                "generation": {"temperature": 1.0, "max_completion_length": 190},
                "probe": {"k": 4},
            },
        )
    )
    tok = load_tokenizer("builtin:tiny")

    def rule(prompt: str, rng: random.Random) -> str:
        question = prompt.split("<|user|>")[1].split("\n")[0]
        if "<|tool|>" not in prompt:
            return CALL % (question if rng.random() < 0.5 else question + "+")  # half the calls fail
        result = prompt.rsplit("<|tool|>", 1)[1].split("\n")[0]
        return f"<answer>{result}</answer>"

    def ids(text: str, _max: int) -> tuple[int, ...]:
        return tuple(tok(text + "</s>", add_special_tokens=False)["input_ids"])

    report = run_probe(task, out_dir=tmp_path / "probe", sampler=FakeSampler(rule, token_ids=ids), progress=False)
    summary = json.loads((tmp_path / "probe" / "episodes.json").read_text())
    lines = (tmp_path / "probe" / "samples.jsonl").read_text().splitlines()
    assert len(lines) == summary["n"] == 16 and all("episode" in json.loads(x) for x in lines)
    assert summary["turns"] == 2.0 and summary["calls"] == 1.0 and summary["cut_off_rate"] == 0.0
    assert 0 < summary["tool_error_rate"] < 1
    # a failed call's answer is the error text, so success is exactly the share of calls that worked
    assert summary["success_rate"] == 1 - summary["tool_error_rate"]
    assert report.rate == summary["success_rate"]


def test_a_probe_samples_episode_round_trips_through_its_line(tmp_path: Path) -> None:
    from rlvr.episodes import Call, Episode, Turn
    from rlvr.probe.samples import ProbeSample, read_samples
    from rlvr.rollouts import Rollout

    ep = Episode((Turn("", (Call("calculator", {"expression": "1"}, "1"),)), Turn("<answer>1</answer>")))
    sample = ProbeSample(Rollout(0, "q", {}, ep.final, (1,), "stop", ep, {}, 1.0), 0, True, 1.0, 8)
    (tmp_path / "samples.jsonl").write_text(sample.line())
    ((_, back),) = read_samples(tmp_path / "samples.jsonl")
    assert back.rollout.episode == ep and back.success is True and back == sample


def test_rlvr_probe_prints_how_the_episodes_went(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rlvr.cli.main import main

    example = Path(__file__).resolve().parents[2] / "examples" / "tool-search"
    args = ["probe", str(example), "--out", str(tmp_path / "p"), "-k", "2", "--max-prompts", "2", "--no-progress"]
    main(args)
    out = capsys.readouterr().out
    assert "episodes: 4, success" in out and "of episodes cut off" in out
