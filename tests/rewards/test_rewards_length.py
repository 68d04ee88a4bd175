"""Length shaping terms."""

from __future__ import annotations

import pytest

from rlvr.errors import VerifierError
from rlvr.rewards import AnswerFormat, Outcome, Sample, build_verifier
from rlvr.rewards.length import LengthPenalty, OverlongPenalty, RepetitionPenalty


def ids(n: int) -> Sample:
    return Sample("x", completion_ids=list(range(n)))


def test_within_budget_is_no_penalty():
    v = LengthPenalty(budget=10).verify(ids(10))
    assert v.score == 0.0 and v.outcome is Outcome.CORRECT


def test_over_budget_penalty_grows_then_floors():
    pen = LengthPenalty(budget=10, max_penalty=1.0)
    assert pen.verify(ids(15)).score == pytest.approx(-0.5)
    assert pen.verify(ids(1000)).score == -1.0


def test_token_ids_are_counted_not_characters():
    v = LengthPenalty(budget=5).verify(Sample("a" * 1000, completion_ids=[1, 2, 3]))
    assert v.score == 0.0


def test_without_ids_the_count_is_marked_approximate():
    v = LengthPenalty(budget=1).verify(Sample("a" * 40))
    assert "approximate" in v.detail and v.score < 0


def test_overlong_follows_dapo_equation_13():
    v = OverlongPenalty(max_completion_length=100, cache=20)
    assert v.verify(ids(80)).score == 0.0
    assert v.verify(ids(90)).score == pytest.approx(-0.5)
    assert v.verify(ids(100)).score == pytest.approx(-1.0)
    assert v.verify(ids(101)).score == -1.0


def test_repetition_penalises_repeated_ngrams_only():
    rep = RepetitionPenalty(n=2)
    assert rep.verify(Sample("the cat sat on a mat")).score == 0.0
    assert rep.verify(Sample("go go go go go go go")).score == pytest.approx(-(1 - 1 / 6))


def test_length_terms_never_return_error():
    for v in (LengthPenalty(budget=3), OverlongPenalty(max_completion_length=4), RepetitionPenalty()):
        assert v.verify(Sample("")).outcome is not Outcome.ERROR


def test_budget_is_required_and_positive():
    with pytest.raises(VerifierError, match="budget"):
        build_verifier("length_penalty", {"budget": 0})


def test_overlong_cache_must_fit():
    with pytest.raises(VerifierError, match="cache"):
        build_verifier("overlong", {"max_completion_length": 10, "cache": 20})


def wrapped(**kw):
    return build_verifier(
        "length_penalty", {"budget": 4, "base": {"verifier": "exact"}, "column": "answer", **kw}, AnswerFormat()
    )


def test_wrapper_adds_the_penalty_to_the_base_score_and_keeps_both_parts():
    v = wrapped().verify(Sample("<answer>4</answer>", {"answer": "4"}, completion_ids=list(range(6))))
    assert v.outcome is Outcome.CORRECT and v.score == pytest.approx(1.0 - 0.5)
    assert dict(v.parts) == {"base": 1.0, "penalty": -0.5}


def test_wrapper_apply_to_correct_leaves_wrong_answers_unpenalised():
    v = wrapped(apply_to="correct").verify(Sample("<answer>5</answer>", {"answer": "4"}, completion_ids=list(range(8))))
    assert v.outcome is Outcome.WRONG and v.score == 0.0


def test_wrapper_passes_a_base_error_through_so_the_row_is_masked():
    v = wrapped().verify(Sample("<answer>4</answer>", {}, completion_ids=[1]))
    assert v.outcome is Outcome.ERROR and v.score is None


def test_wrapped_parts_are_logged_per_term():
    from rlvr.rewards.combine import RewardSet, Term

    logged = {}
    fn = RewardSet([Term("short", wrapped())]).trl_functions()[0]
    fn(
        prompts=["p"],
        completions=["<answer>4</answer>"],
        answer=["4"],
        completion_ids=[list(range(6))],
        log_metric=logged.__setitem__,
    )
    assert logged["rewards/short/base/mean"] == 1.0 and logged["rewards/short/penalty/mean"] == -0.5


def test_wrapper_takes_the_base_kind_for_the_audit():
    assert wrapped().kind == "answer"


def test_apply_to_without_a_base_is_a_verifier_error():
    with pytest.raises(VerifierError, match="apply_to"):
        build_verifier("repetition", {"apply_to": "correct"})


def test_unloadable_tokenizer_is_an_error_not_a_zero():
    v = LengthPenalty(budget=3, tokenizer="/nonexistent/tokenizer").verify_batch([Sample("abc")])[0]
    assert v.outcome is Outcome.ERROR


def test_verdict_with_parts_round_trips_through_json():
    from rlvr.rewards import Verdict

    v = wrapped().verify(Sample("<answer>4</answer>", {"answer": "4"}, completion_ids=list(range(6))))
    assert Verdict.from_json(v.to_json()) == v
