"""The built-in arithmetic task and the demo's stand-in reviewer."""

from __future__ import annotations

from pathlib import Path

from rlvr.demo.arithmetic import generate, reference_answer, write_task
from rlvr.demo.reference import reference_checker
from rlvr.rewards.base import Verdict

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "arithmetic"


def test_shipped_example_is_exactly_what_the_generator_writes(tmp_path: Path) -> None:
    write_task(tmp_path)
    for name in ("task.yaml", "train.jsonl", "eval.jsonl"):
        assert (tmp_path / name).read_text() == (EXAMPLES / name).read_text(), name


def test_splits_are_deterministic_and_disjoint(tmp_path: Path) -> None:
    import json

    write_task(tmp_path / "a", seed=3)
    write_task(tmp_path / "b", seed=3)
    assert (tmp_path / "a" / "train.jsonl").read_text() == (tmp_path / "b" / "train.jsonl").read_text()
    train = {json.loads(x)["question"] for x in (tmp_path / "a" / "train.jsonl").read_text().splitlines()}
    held = {json.loads(x)["question"] for x in (tmp_path / "a" / "eval.jsonl").read_text().splitlines()}
    assert len(train) == 2000 and len(held) == 200 and not train & held


def test_generated_answers_are_right_for_every_operation() -> None:
    rows = generate(300, seed=1, ops="+-*", digits=3, mul_digits=2)
    assert {r["op"] for r in rows} == {"+", "-", "*"}
    for r in rows:
        assert reference_answer(r["question"] + "=") == r["answer"]
        assert not r["answer"].startswith("-")


def test_reference_answer_refuses_what_it_cannot_parse() -> None:
    assert reference_answer("12+=") is None and reference_answer("what is 2+2?") is None


def v(score: float) -> Verdict:
    return Verdict.correct(score) if score > 0 else Verdict.wrong(score)


def test_checker_agrees_with_a_right_reward() -> None:
    row = {"question": "12+30", "answer": "42"}
    assert reference_checker(row, "<answer>42</answer>", {"format": v(1), "correct": v(1)}) == "right"
    assert reference_checker(row, "<answer>41</answer>", {"format": v(1), "correct": v(0)}) == "right"


def test_checker_flags_a_reward_that_pays_a_wrong_answer() -> None:
    row = {"question": "12+30", "answer": "42"}
    assert reference_checker(row, "<answer>41</answer>", {"format": v(1), "correct": v(1)}) == "lower"


def test_checker_ignores_the_dataset_answer_column() -> None:
    # A corrupted ground truth: the reward (which trusts the column) pays 41, the checker does not.
    row = {"question": "12+30", "answer": "41"}
    assert reference_checker(row, "<answer>41</answer>", {"format": v(1), "correct": v(1)}) == "lower"
    assert reference_checker(row, "<answer>42</answer>", {"format": v(1), "correct": v(0)}) == "higher"


def test_checker_flags_a_format_reward_for_a_hedge() -> None:
    row = {"question": "1+1", "answer": "2"}
    assert reference_checker(row, "<answer>2</answer><answer>3</answer>", {"format": v(1), "correct": v(0)}) == "lower"
