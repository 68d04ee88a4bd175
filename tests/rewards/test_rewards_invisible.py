"""One definition of invisible (issue 25, item 3), used by format, exact, repetition and the audit."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards import Outcome, Sample
from rlvr.rewards.exact import ExactMatch
from rlvr.rewards.format import FormatVerifier
from rlvr.rewards.length import RepetitionPenalty
from rlvr.rewards.rules.untrusted import DEFAULT_IGNORABLE, is_invisible, strip_invisible

# The blank combining marks a category test missed (all Mn): variation selectors, the Mongolian
# free variation selectors, the Khmer inherent vowels, the combining grapheme joiner.
BLANK_MARKS = "\ufe00\ufe0f\U000e0100\U000e01ef\u180b\u180c\u180d\u180f\u17b4\u17b5\u034f"
INVISIBLES = BLANK_MARKS + "\u200b\u200c\u200d\u2060\ufeff\u00ad\u3164\u115f\u2800\u202e\U000e0041"


@pytest.mark.parametrize("ch", list(BLANK_MARKS))
def test_blank_combining_marks_are_invisible(ch):
    assert unicodedata.category(ch) == "Mn" and is_invisible(ch)


@pytest.mark.parametrize("ch", list(BLANK_MARKS))
def test_an_answer_span_of_blank_combining_marks_is_empty_for_format(ch):
    assert FormatVerifier().verify(Sample(f"<answer>{ch * 3}</answer>")).outcome is Outcome.WRONG


def test_a_loop_salted_with_variation_selectors_is_still_a_loop():
    selectors = [chr(0xFE00 + i) for i in range(16)] + [chr(0xE0100 + i) for i in range(240)]
    salted = "".join(f"wait,{selectors[i % len(selectors)]}" for i in range(400))
    plain = "wait," * 400
    term = RepetitionPenalty()
    assert term.verify(Sample(salted)).score == pytest.approx(term.verify(Sample(plain)).score)
    assert term.verify(Sample(salted)).score < -0.9


def test_visible_characters_and_ordinary_combining_marks_are_not_invisible():
    for ch in "a1\u00e9\u4e2d\u05d0\u2212\u0301":
        assert not is_invisible(ch), repr(ch)


def test_the_written_table_covers_every_format_character_and_stays_within_blank_categories():
    for lo, hi in DEFAULT_IGNORABLE:
        for cp in range(lo, hi + 1):
            assert unicodedata.category(chr(cp)) in ("Cf", "Mn", "Lo", "Cn"), hex(cp)
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)) == "Cf":
            assert is_invisible(chr(cp)), hex(cp)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list(INVISIBLES)), min_size=1, max_size=6), st.integers(0, 2))
def test_a_wrong_answer_stays_wrong_when_invisibles_are_inserted(salt, where):
    gold, wrong = "42", "43"
    pieces = [wrong[:where], "".join(salt), wrong[where:]]
    for rules in ((), ("nfkc",), ("nfkc", "whitespace", "case")):
        v = ExactMatch(normalize=rules).verify(Sample(f"<answer>{''.join(pieces)}</answer>", {"answer": gold}))
        assert v.outcome is Outcome.WRONG


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30))
def test_stripping_invisibles_leaves_only_visible_characters_and_whitespace(text):
    assert all(ch.isspace() or not is_invisible(ch) for ch in strip_invisible(text))
