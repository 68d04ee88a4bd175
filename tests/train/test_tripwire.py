"""The tripwire's rules and signals, fed synthetic scored batches: each threshold stops at its
level and names itself, a steady run never stops, rules are read from every layer and refused
with the place named."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.audit.tripwire import HELP, TripwireRules, read_rules, rules_for
from rlvr.errors import ConfigError
from rlvr.rewards import FunctionVerifier, Verdict
from rlvr.rewards.base import Sample
from rlvr.rewards.combine import RewardSet, Scored, Term
from rlvr.rewards.format import AnswerFormat, extract
from rlvr.settings.file import RunConfig
from rlvr.train.tripwire import Tripwire, repetition


def anchored(sample: Sample) -> Verdict:
    ex = extract(sample.completion, AnswerFormat())
    if not ex.ok:
        return Verdict.unparseable(ex.problem or "")
    return Verdict.correct() if ex.answer == str(sample.row["answer"]) else Verdict.wrong()


REWARDS = RewardSet([Term("correct", FunctionVerifier(anchored))], answer_format=AnswerFormat(), answer_column="answer")


def wire(**rules: float) -> Tripwire:
    return Tripwire(
        TripwireRules(**rules),  # type: ignore[arg-type]
        REWARDS,
        fmt=AnswerFormat(),
        column="answer",
        success="correct",
    )


def batch(n: int, *, correct: int = 0, errors: int = 0, tokens: int = 4, repeat: bool = False) -> tuple:
    samples, scored = [], []
    for i in range(n):
        ids = [7] * tokens if repeat else list(range(tokens))
        s = Sample("<answer>2</answer>" if i < correct else "<answer>3</answer>", {"answer": "2"}, "1+1=", ids)
        v = Verdict.error("down", kind="sandbox") if i >= n - errors else anchored(s)
        samples.append(s)
        scored.append(Scored({"correct": v}))
    return samples, scored


def steps(w: Tripwire, start: int, stop: int, **shape: int | bool) -> object:
    trip = None
    for step in range(start, stop + 1):
        w.observe(step, *batch(16, **shape))  # type: ignore[arg-type]
        trip = trip or w.check(step)
    return trip


def test_every_rule_has_a_help_text_stating_its_consequence() -> None:
    assert set(HELP) == set(TripwireRules().to_json())
    assert all(len(text.split()) >= 6 for text in HELP.values())


def test_a_rising_failure_cause_stops_and_names_the_term_and_cause() -> None:
    w = wire()
    assert steps(w, 1, 5) is None
    trip = steps(w, 6, 10, errors=8)
    assert trip is not None and trip.signal == "error_rise"  # type: ignore[attr-defined]
    assert "term 'correct': error sandbox" in trip.reason and "error_rise 0.25" in trip.reason  # type: ignore[attr-defined]


def test_a_failure_rate_that_stays_where_it_started_does_not_stop() -> None:
    w = wire()
    assert steps(w, 1, 20, errors=8) is None


def test_length_tripling_by_more_than_sixteen_tokens_stops() -> None:
    assert steps(wire(), 1, 10, tokens=4) is None
    w = wire()
    steps(w, 1, 5, tokens=10)
    trip = steps(w, 6, 10, tokens=31)
    assert trip is not None and trip.signal == "length"  # type: ignore[attr-defined]


def test_length_tripling_by_fewer_tokens_than_the_floor_does_not_stop() -> None:
    w = wire()
    steps(w, 1, 5, tokens=2)
    assert steps(w, 6, 10, tokens=8) is None


def test_a_jump_in_repetition_stops() -> None:
    w = wire()
    steps(w, 1, 5, tokens=12)
    trip = steps(w, 6, 10, tokens=12, repeat=True)
    assert trip is not None and trip.signal == "repetition"  # type: ignore[attr-defined]


def test_training_success_rising_while_the_eval_stays_put_stops() -> None:
    w = wire()
    w.observe_eval(0, 0.1, 64)
    steps(w, 1, 5, correct=1)
    w.observe_eval(10, 0.1, 64)
    trip = steps(w, 6, 10, correct=15)
    assert trip is not None and trip.signal == "eval_gap"  # type: ignore[attr-defined]


def test_training_success_rising_with_the_eval_does_not_stop() -> None:
    w = wire()
    w.observe_eval(0, 0.1, 64)
    steps(w, 1, 5, correct=1)
    w.observe_eval(10, 0.85, 64)
    assert steps(w, 6, 10, correct=15) is None


def test_a_gap_within_two_standard_errors_does_not_stop() -> None:
    w = wire()
    w.observe_eval(0, 0.5, 2)  # two decided eval samples: the eval says almost nothing
    steps(w, 1, 5, correct=1)
    w.observe_eval(10, 0.5, 2)
    assert steps(w, 6, 10, correct=15) is None


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 16), st.integers(0, 16), st.integers(1, 40), st.booleans())
def test_a_steady_run_never_trips(correct: int, errors: int, tokens: int, repeat: bool) -> None:
    w = wire()
    w.observe_eval(0, correct / 16, 64)
    w.observe_eval(20, correct / 16, 64)
    shape = {"correct": min(correct, 16 - errors), "errors": errors, "tokens": tokens, "repeat": repeat}
    assert steps(w, 1, 20, **shape) is None  # type: ignore[arg-type]


def test_a_round_runs_only_every_n_steps_and_off_means_never() -> None:
    w = wire(every=5)
    w.observe(1, *batch(4, correct=2))
    assert [w.check(s) for s in (1, 2, 3, 4)] == [None] * 4 and w.best
    w.check(5)
    assert not w.best  # the round took them
    off = wire(every=0)
    off.observe(1, *batch(4, correct=2))
    assert not off.best and not off.stats


def test_the_best_rollouts_are_kept_up_to_top() -> None:
    w = wire(top=3)
    w.observe(1, *batch(16, correct=5))
    assert len(w.best) == 3 and all(total == 1.0 for total, _, _ in w.best)


def test_repetition_counts_repeated_four_grams() -> None:
    assert repetition([1, 2, 3, 4, 5, 6]) == 0.0
    assert repetition([7] * 8) == pytest.approx(0.8)
    assert repetition([1, 2]) == 0.0


def test_rules_are_read_from_the_task_then_a_config_file_of_either_form(tmp_path: Path) -> None:
    run_form = tmp_path / "config.yaml"
    RunConfig(grpo={"learning_rate": 1e-6}, record={"tripwire": {"top": 4}}).write(run_form)
    flat = tmp_path / "plan.yaml"
    RunConfig(grpo={"learning_rate": 1e-6}, record={"tripwire_findings": "7"}, flat=True).write(flat)
    task = {"tripwire": {"every": 2, "top": 16}}
    assert rules_for(task, "task.yaml") == TripwireRules(every=2, top=16)
    assert rules_for(task, "task.yaml", RunConfig.read(run_form)) == TripwireRules(every=2, top=4)
    assert rules_for(task, "task.yaml", RunConfig.read(flat)) == TripwireRules(every=2, top=16, findings=7)


def test_bad_rules_are_refused_all_at_once_naming_the_place() -> None:
    with pytest.raises(ConfigError) as err:
        read_rules(("task.yaml: grpo.tripwire", {"evry": 5, "top": -1, "window": 2.5, "eval_gap": "big"}))
    text = str(err.value)
    for where in ("grpo.tripwire.evry", "grpo.tripwire.top", "grpo.tripwire.window", "grpo.tripwire.eval_gap"):
        assert where in text
    with pytest.raises(ConfigError, match="must be a mapping"):
        read_rules(("task.yaml: grpo.tripwire", [1, 2]))


def test_the_training_window_compared_with_an_eval_is_the_one_that_ends_at_it() -> None:
    w = wire()
    w.observe_eval(0, 0.1, 64)
    steps(w, 1, 10, correct=1)
    w.observe_eval(10, 0.1, 64)  # flat, and so was training up to step 10
    assert steps(w, 11, 20, correct=15) is None  # training rose after the eval: no eval says otherwise yet
    gap = w.signals()["eval_gap"]
    assert gap["at"] == 10 and abs(gap["gap"]) < 1e-9
