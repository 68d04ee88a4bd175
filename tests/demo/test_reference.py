"""The demo's stand-in reader applies the documented answer rules on its own, and agrees with the
task's reward wherever the reward follows them -- so the demo's gate cannot stop on a rule the two
read differently (seed 2 once stopped on ``<answer>54</answer>Y2</answer>``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.demo.arithmetic import write_task
from rlvr.demo.chat import write_chat_task
from rlvr.demo.reference import answer_span, deserved, reference_checker
from rlvr.rewards.base import Sample, Verdict
from rlvr.task import Task, load_task

ROW = {"question": "25+29", "answer": "54"}


@pytest.fixture(scope="module", params=["tiny", "chat"])
def task(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Task:
    folder = tmp_path_factory.mktemp(request.param)
    return load_task((write_task if request.param == "tiny" else write_chat_task)(folder))


def verdicts(task: Task, completion: str, row: dict[str, str] = ROW) -> dict[str, Verdict]:
    return {t.name: t.verifier.verify(Sample(completion=completion, row=row)) for t in task.reward_set().terms}


def test_a_second_closing_tag_leaves_no_answer_and_the_reader_agrees_with_the_reward(task: Task) -> None:
    completion = "<answer>54</answer>Y2</answer>"
    assert answer_span(completion) == (None, "")
    assert deserved(ROW, completion) == {"format": False, "correct": False}
    assert reference_checker(ROW, completion, verdicts(task, completion)) == "right"


@pytest.mark.parametrize(
    ("completion", "format_", "correct"),
    [
        ("<answer>54</answer>", True, True),
        ("<answer> 54 </answer>.", True, True),
        ("The sum is <answer>54</answer>$", True, True),
        ("<answer>54</answer> because 25+29=54", False, True),  # text after the span: no format reward
        ("<think>25+29</think><answer>54</answer>", True, True),
        ("<think><answer>54</answer></think>", False, False),  # inside the think block
        ("<answer>54</answer><answer>54</answer>", False, False),  # repeated: a hedge
        ("</answer>54<answer>", False, False),
        ("<answer>\u200b</answer>", False, False),  # only an invisible character
        ("<answer>55</answer>", True, False),
        ("54", False, False),
    ],
)
def test_reader_rules_on_chatty_and_malformed_answers(completion: str, format_: bool, correct: bool) -> None:
    assert deserved(ROW, completion) == {"format": format_, "correct": correct}


def test_reader_computes_the_truth_from_the_question_not_the_answer_column() -> None:
    corrupted = {"question": "25+29", "answer": "55"}
    assert deserved(corrupted, "<answer>55</answer>")["correct"] is False


def test_reader_flags_a_reward_that_pays_a_hedge() -> None:
    paid = {"format": Verdict.correct(1.0), "correct": Verdict.correct(1.0)}
    assert reference_checker(ROW, "<answer>54</answer><answer>55</answer>", paid) == "lower"


PIECES = ["<answer>", "</answer>", "<think>", "</think>", "54", "55", "5", " ", "Y2", ".", "$", "\u200b", "\n", "="]


@pytest.fixture(scope="module")
def tiny_task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    return load_task(write_task(Path(tmp_path_factory.mktemp("prop"))))


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), max_size=8))
def test_reader_agrees_with_the_task_reward_on_any_arrangement_of_tags(tiny_task: Task, parts: list[str]) -> None:
    # The task's reward follows the documented rules; the reader, written from the rules alone,
    # must come to the same verdict on every arrangement of tags, answers and junk.
    completion = "".join(parts)
    assert reference_checker(ROW, completion, verdicts(tiny_task, completion)) == "right", completion
