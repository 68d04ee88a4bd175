"""Rollouts kept by rlvr train: bounded per step, whole groups, rotated by size, read back by step."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlvr import keptrollouts, rollouts
from rlvr.errors import RunError
from rlvr.rewards import AnswerFormat, build_verifier
from rlvr.rewards.combine import RewardSet, Term


def reward_set() -> RewardSet:
    return RewardSet(
        [
            Term("format", build_verifier("format", {}, AnswerFormat()), 0.1),
            Term("correct", build_verifier("exact", {"column": "answer"}, AnswerFormat()), 1.0),
        ]
    )


def batch(step: int, n: int = 16, text: str = "<answer>4</answer>") -> dict:
    return {
        "prompts": [f"2+2= #{i // 8}" for i in range(n)],
        "completions": [text] * n,
        "completion_ids": [[1, 2, 3]] * n,
        "answer": ["4"] * n,
        "trainer_state": SimpleNamespace(global_step=step - 1),
    }


def record(rec: keptrollouts.Recorder, rs: RewardSet, kwargs: dict) -> None:
    fn = rec.wrap(rs.trl_functions())[0]
    fn(**kwargs)


def test_a_step_keeps_at_most_per_step_lines_in_whole_groups(tmp_path: Path) -> None:
    rs = reward_set()
    rec = keptrollouts.Recorder(tmp_path, rs, group_size=8, logging_steps=1, per_step=12)
    record(rec, rs, batch(1, n=32))
    record(rec, rs, batch(1, n=32, text="x"))  # a second batch of the same step: the step is full
    rows = keptrollouts.at_step(tmp_path, 1)
    assert len(rows) == 8  # 12 rounded down to one whole group of 8
    assert {r["rollout"]["group"] for r in rows} == {0}
    assert (
        rows[0]["scores"]["correct"]["outcome"] == "correct"
        and rows[0]["reward"] == pytest.approx(1.1)
        and rows[0]["masked"] is False
    )
    assert rows[0]["answer"] == "4" and rows[0]["completion_ids"] == [1, 2, 3]


def test_only_logging_steps_are_kept(tmp_path: Path) -> None:
    rs = reward_set()
    rec = keptrollouts.Recorder(tmp_path, rs, group_size=8, logging_steps=5)
    for step in range(1, 12):
        record(rec, rs, batch(step))
    assert keptrollouts.steps(tmp_path) == [1, 5, 10]


def test_files_rotate_by_size_and_old_ones_are_deleted(tmp_path: Path) -> None:
    rs = reward_set()
    rec = keptrollouts.Recorder(tmp_path, rs, group_size=8, logging_steps=1, max_bytes=2000, keep=2)
    for step in range(1, 30):
        record(rec, rs, batch(step))
    names = sorted(p.name for p in (tmp_path / "rollouts").iterdir())
    assert names == ["rollouts.1.jsonl", "rollouts.2.jsonl", "rollouts.jsonl"]
    assert all(p.stat().st_size < 2000 + 16 * 1000 for p in (tmp_path / "rollouts").iterdir())
    kept = keptrollouts.steps(tmp_path)
    assert kept == list(range(kept[0], 30)) and kept[0] > 1  # oldest gone, the rest in order


def test_a_step_logged_again_after_a_resume_is_read_from_the_newest_session(tmp_path: Path) -> None:
    rs = reward_set()
    record(keptrollouts.Recorder(tmp_path, rs, group_size=8, logging_steps=1, session=1), rs, batch(3, text="old"))
    record(keptrollouts.Recorder(tmp_path, rs, group_size=8, logging_steps=1, session=2), rs, batch(3, text="new"))
    assert {r["completion"] for r in keptrollouts.at_step(tmp_path, 3)} == {"new"}


def test_a_missing_step_names_the_kept_steps(tmp_path: Path) -> None:
    rs = reward_set()
    rec = keptrollouts.Recorder(tmp_path, rs, group_size=8, logging_steps=1)
    record(rec, rs, batch(1))
    record(rec, rs, batch(2))
    with pytest.raises(RunError, match="no rollouts at step 7; kept steps: 1, 2"):
        keptrollouts.at_step(tmp_path, 7)
    with pytest.raises(RunError, match="no rollouts kept"):
        keptrollouts.at_step(tmp_path / "other", 1)


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    rs = reward_set()
    record(keptrollouts.Recorder(tmp_path, rs, group_size=8, logging_steps=1), rs, batch(1))
    with (tmp_path / "rollouts" / "rollouts.jsonl").open("a") as fh:
        fh.write(json.dumps({"rollout": {"step": 2}})[:10])
    assert keptrollouts.steps(tmp_path) == [1]


def test_a_scored_copy_beside_the_rollouts_is_not_read_as_rollouts(tmp_path: Path) -> None:
    from rlvr.rewards.scoring import score_file

    rs = reward_set()
    record(keptrollouts.Recorder(tmp_path, rs, group_size=8, logging_steps=1), rs, batch(1))
    score_file(tmp_path / "rollouts" / "rollouts.jsonl", rs)  # writes rollouts.scored.jsonl beside it
    assert (tmp_path / "rollouts" / "rollouts.scored.jsonl").exists()
    assert len(keptrollouts.at_step(tmp_path, 1)) == 16


def test_a_kept_line_reads_back_as_a_rollout_whose_columns_are_the_row(tmp_path: Path) -> None:
    rs = reward_set()
    record(keptrollouts.Recorder(tmp_path, rs, group_size=8, logging_steps=1), rs, batch(1, n=16))
    got = rollouts.Rollout.from_line(keptrollouts.at_step(tmp_path, 1)[8])
    assert (got.prompt_index, got.prompt, dict(got.row)) == (1, "2+2= #1", {"answer": "4"})
    assert (got.completion, got.token_ids, got.finish_reason, got.episode) == (
        "<answer>4</answer>",
        (1, 2, 3),
        "unknown",
        None,
    )
    assert rs.score([got.sample])[0].verdicts["correct"].outcome.value == "correct"


def test_the_probe_and_the_gate_records_are_a_rollout_plus_only_their_own_fields() -> None:
    from dataclasses import fields

    from rlvr.gate.store import InspectionSample
    from rlvr.probe import ProbeSample

    shared = {f.name for f in fields(rollouts.Rollout)}
    for record_type in (ProbeSample, InspectionSample):
        own = {f.name: f.type for f in fields(record_type)}
        assert own["rollout"] == "Rollout" and not shared & set(own), record_type
