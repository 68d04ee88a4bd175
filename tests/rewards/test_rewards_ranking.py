"""The weighted total read from the weights (issue 25, item 6): ``rlvr task check`` refuses a
weighting under which a wrong answer can outscore a correct one of the same length."""

from __future__ import annotations

import pytest

from rlvr.rewards.base import BaseVerifier
from rlvr.rewards.combine import Term
from rlvr.rewards.exact import ExactMatch
from rlvr.rewards.format import FormatVerifier
from rlvr.rewards.length import LengthPenalty, RepetitionPenalty
from rlvr.rewards.ranking import swing_of, weighting_check
from rlvr.rewards.schema import ToolCallVerifier


def check(*terms: Term):
    return weighting_check(terms, "correct", "task.yaml: rewards")


def test_format_weight_2_over_exact_weight_1_is_a_problem():
    problems, _ = check(Term("format", FormatVerifier(), 2.0), Term("correct", ExactMatch(), 1.0))
    assert len(problems) == 1 and "outscore" in problems[0].what and "format 2" in problems[0].what


@pytest.mark.parametrize("weight", [0.1, 0.5, 0.99])
def test_a_format_weight_below_the_success_weight_passes(weight):
    assert check(Term("format", FormatVerifier(), weight), Term("correct", ExactMatch(), 1.0)) == ([], [])


def test_an_equal_weight_is_a_tie_note_not_a_problem():
    problems, notes = check(Term("format", FormatVerifier(), 1.0), Term("correct", ExactMatch(), 1.0))
    assert not problems and any("tie" in n for n in notes)


def test_shaping_terms_add_up():
    problems, _ = check(
        Term("format", FormatVerifier(), 0.6),
        Term("loop", RepetitionPenalty(max_penalty=0.5), 1.0),
        Term("correct", ExactMatch(), 1.0),
    )
    assert problems and "format 0.6 + loop 0.5" in problems[0].what


def test_a_pure_length_term_moves_nothing_between_answers_of_the_same_length():
    assert swing_of(LengthPenalty(budget=10, max_penalty=5.0)) == 0.0
    assert check(Term("len", LengthPenalty(budget=10, max_penalty=5.0), 3.0), Term("correct", ExactMatch(), 1.0)) == (
        [],
        [],
    )


def test_partial_credit_and_unknown_custom_ranges_are_named():
    class Custom(BaseVerifier):
        kind = "custom"

    tool = ToolCallVerifier([{"name": "f", "parameters": {"type": "object"}}], partial_credit=True, timeout=None)
    _, notes = weighting_check([Term("custom", Custom(), 0.1), Term("call", tool, 1.0)], "call", "t")
    assert any("partial credit" in n for n in notes) and any("custom" in n and "score_range" in n for n in notes)


def test_a_custom_term_that_declares_its_range_is_counted():
    class Bonus(BaseVerifier):
        kind = "custom"
        score_range = (0.0, 3.0)

    problems, _ = check(Term("bonus", Bonus(), 1.0), Term("correct", ExactMatch(), 1.0))
    assert problems and "bonus 3" in problems[0].what


def test_a_length_term_wrapping_a_correctness_base_gives_the_correct_answer_its_gap_first():
    short = LengthPenalty(budget=8, apply_to="correct", base={"verifier": "exact"})
    assert swing_of(short) == 0.0
    problems, _ = check(
        Term("short", short, 1.0), Term("format", FormatVerifier(), 0.1), Term("correct", ExactMatch(), 1.0)
    )
    assert not problems
    loop = RepetitionPenalty(max_penalty=0.5, base={"verifier": "format"})
    assert swing_of(loop) == 1.5
