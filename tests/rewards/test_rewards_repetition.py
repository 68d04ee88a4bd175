"""Repetition on normalised text (issue 34, rule 7): homoglyph-salted loops and counters are loops."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards import Sample
from rlvr.rewards.length import RepetitionPenalty, repetition_text

LOOKALIKES = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "x": "\u0445", "i": "\u0456"}
LOOP = "please wait let me recompute the expression once more. "


def score(text: str) -> float:
    return RepetitionPenalty().verify(Sample(text)).score


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32), st.floats(0.05, 0.9))
def test_a_loop_salted_with_homoglyphs_scores_as_the_plain_loop(seed, rate):
    rnd = random.Random(seed)
    salted = "".join("".join(LOOKALIKES.get(ch, ch) if rnd.random() < rate else ch for ch in LOOP) for _ in range(40))
    assert score(salted) == pytest.approx(score(LOOP * 40))


def test_a_loop_salted_with_accents_and_width_is_still_a_loop():
    salted = "".join(("wa\u0301it" if i % 2 else "\uff57\uff41\uff49\uff54") + ", " for i in range(300))
    assert score(salted) < -0.9


@settings(max_examples=20, deadline=None)
@given(st.integers(-(10**6), 10**6), st.integers(1, 1000), st.sampled_from([" ", ", ", "\n", ","]))
def test_an_arithmetic_progression_is_a_loop(start, step, sep):
    counter = sep.join(str(start + k * step) for k in range(300))
    assert score(counter) < -0.9


def test_a_counting_loop_with_words_is_a_loop():
    assert score(" ".join(f"step {k}: check again." for k in range(1, 200))) < -0.9


def test_numbers_that_are_not_a_progression_are_not_a_loop():
    values = [int(x) for x in "3 141 59 26 535 8979 32 384 62 643 38 327 950 288 419 716 939 937".split(" ")]
    assert score(" ".join(map(str, values))) == 0


def test_ordinary_prose_has_no_penalty():
    text = "The quick brown fox jumps over the lazy dog; then we compute 17 + 25 = 42 and verify it twice."
    assert score(text) == 0


def test_repetition_text_writes_each_number_as_its_step():
    assert repetition_text("1 2 3 10") == "# #+1 #+1 #+7"
    assert repetition_text("W\u0430IT \u200b  wait") == "wait wait"
