"""rlvr task check beyond load_task: the success term, weights, grpo:/sft: validated as train and
sft validate them, ground truths the verifiers cannot read (issues 14 and 19)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.cli.main import main  # noqa: E402
from rlvr.task import load_task  # noqa: E402
from rlvr.taskcheck import check_task  # noqa: E402
from support.tasks import make_task, write_rows

FORMAT = {"name": "format", "weight": 0.1}
CORRECT = {"name": "correct", "verifier": "exact"}


def problems(tmp_path: Path, **extra: object) -> list[str]:
    return [str(p) for p in check_task(load_task(make_task(tmp_path, extra=dict(extra))))]


def test_a_valid_task_has_no_problems(tmp_path: Path) -> None:
    assert problems(tmp_path) == []


def test_a_misspelt_grpo_key_suggests_the_field(tmp_path: Path) -> None:
    [msg] = problems(
        tmp_path, grpo={"learning_rat": 1e-5, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1}
    )
    assert "grpo.learning_rat: not a GRPOConfig field" in msg and "did you mean 'learning_rate'" in msg


def test_a_group_below_the_floor_needs_a_justification(tmp_path: Path) -> None:
    grpo = {"num_generations": 4, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1}
    [msg] = problems(tmp_path / "a", grpo=grpo)
    assert "grpo.num_generations: 4 is below the recipe's floor of 8" in msg
    assert problems(tmp_path / "b", grpo={**grpo, "justify": {"num_generations": "one-token answers"}}) == []


def test_a_group_that_does_not_divide_the_batch_is_reported(tmp_path: Path) -> None:
    grpo = {
        "num_generations": 3,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1,
        "justify": {"num_generations": "test"},
    }
    [msg] = problems(tmp_path, grpo=grpo)
    assert "not divisible by num_generations (3)" in msg


def test_bad_stop_and_dynamic_sampling_settings_are_reported_before_training(tmp_path: Path) -> None:
    grpo = {
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1,
        "stop": {"masked_rate": 2, "masked_stepz": 3},
        "dynamic": {"mode": "sometimes"},
    }
    msgs = problems(tmp_path / "bad", grpo=grpo)
    assert any("grpo.stop.masked_rate" in m for m in msgs), msgs
    assert any("grpo.stop.masked_stepz" in m and "unknown key" in m for m in msgs), msgs
    assert any("grpo.dynamic" in m and "sometimes" in m for m in msgs), msgs
    good = {**grpo, "stop": {"masked_rate": 0.5, "masked_steps": 3}, "dynamic": {"mode": "filter"}}
    assert problems(tmp_path / "good", grpo=good) == []


def test_a_misspelt_sft_key_suggests_the_field(tmp_path: Path) -> None:
    [msg] = problems(tmp_path, sft={"lerning_rate": 1e-4, "target_pass_rate": 0.2})
    assert "sft.lerning_rate: not a SFTConfig field" in msg and "did you mean 'learning_rate'" in msg


@pytest.mark.parametrize(
    "weights,needle",
    [
        ([0.1, 0.0], "rewards[1].weight: term 'correct' has weight 0"),
        ([0.1, -1.0], "rewards[1].weight: term 'correct' has a negative weight -1"),
        ([0.0, 0.0], "rewards: every weight is 0"),
    ],
)
def test_zero_negative_and_all_zero_weights_are_problems(tmp_path: Path, weights: list[float], needle: str) -> None:
    [msg] = problems(tmp_path, rewards=[{**FORMAT, "weight": weights[0]}, {**CORRECT, "weight": weights[1]}])
    assert needle in msg


def test_a_zero_in_grpo_reward_weights_is_a_problem(tmp_path: Path) -> None:
    [msg] = problems(
        tmp_path,
        grpo={"reward_weights": [0.1, 0.0], "per_device_train_batch_size": 16, "gradient_accumulation_steps": 1},
    )
    assert "grpo.reward_weights: term 'correct' has weight 0" in msg


def test_an_ambiguous_success_term_is_a_task_check_problem(tmp_path: Path) -> None:
    [msg] = problems(tmp_path, rewards=[FORMAT, CORRECT, {"name": "loose", "verifier": "math"}])
    assert "not declared, and 2 terms could decide success" in msg


def test_a_format_only_reward_is_a_task_check_problem(tmp_path: Path) -> None:
    [msg] = problems(tmp_path, rewards=[FORMAT])
    assert "no term checks the answer" in msg


def test_every_unparseable_math_gold_is_named_with_its_row(tmp_path: Path) -> None:
    path = make_task(tmp_path, extra={"rewards": [FORMAT, {"name": "correct", "verifier": "math"}]})
    rows = [
        {"question": "1+1", "answer": "2"},
        {"question": "half", "answer": "\\frac{1}{"},
        {"question": "x", "answer": "3/4"},
        {"question": "y", "answer": "x^2+"},
    ]
    write_rows(tmp_path / "train.jsonl", rows)
    msgs = [str(p) for p in check_task(load_task(path))]
    assert len(msgs) == 2, msgs
    assert "train.jsonl:2: row 2: term 'correct': the ground truth '\\\\frac{1}{' cannot be parsed" in msgs[0]
    assert "train.jsonl:4: row 4" in msgs[1] and "'x^2+'" in msgs[1]


def test_task_check_exits_2_and_lists_each_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_task(
        tmp_path,
        extra={
            "grpo": {"learning_rat": 1e-5, "per_device_train_batch_size": 16, "gradient_accumulation_steps": 1},
            "sft": {"lerning_rate": 1},
        },
    )
    assert main(["task", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "learning_rat" in err and "lerning_rate" in err and "2 problems" in err


def test_task_check_shows_the_success_term_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["task", "check", str(make_task(tmp_path / "a"))]) == 0
    assert "success     correct (exact; the only term that checks the answer)" in capsys.readouterr().out
    path = make_task(
        tmp_path / "b", extra={"rewards": [FORMAT, CORRECT, {"name": "loose", "verifier": "math"}], "success": "loose"}
    )
    assert main(["task", "check", str(path)]) == 0
    assert "success     loose (math; declared)" in capsys.readouterr().out


def test_an_uncached_hub_model_online_is_said_to_download_without_waiting_on_the_network(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 38: task check said "ok" after a minute of hub retries, and the probe then failed."""
    import huggingface_hub.constants

    import rlvr.lengths

    def network(*a: object, **k: object) -> None:
        raise AssertionError("task check tried to load the uncached model's tokenizer")

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(rlvr.lengths, "check_lengths", network)
    monkeypatch.setattr(rlvr.lengths, "load_length_tools", network)
    task = make_task(tmp_path / "task", extra={"model": "someorg/not-a-cached-model"})
    assert main(["task", "check", str(task)]) == 0
    out = capsys.readouterr().out
    assert "'someorg/not-a-cached-model' is not in the local cache" in out and "downloads it" in out
