"""Length shaping terms."""

from __future__ import annotations

import pytest

from rlvr.errors import VerifierError
from rlvr.rewards import Outcome, Sample, build_verifier
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
