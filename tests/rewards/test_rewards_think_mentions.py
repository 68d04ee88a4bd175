"""A think tag written as text (``</think>`` inside the answer, or inside the reasoning) is read the
one way the completion parses, as a sound verifier would; a second block, an answer inside the
reasoning, or two readings with different answers stay refused (issue 45)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards import AnswerFormat, Outcome, Sample, build_verifier
from rlvr.rewards.format import FormatVerifier, extract

TAGS = ["<think>", "</think>"]
PROSE = st.text("ab 12.", max_size=6)
POLICIES = ["none", "optional", "required", "prefilled"]


def opening(think: str, reasoning: str) -> str:
    """The think block each policy expects before the answer."""
    if think == "prefilled":
        return f"{reasoning}</think>"
    if think == "required":
        return f"<think>{reasoning}</think>"
    return ""


@settings(max_examples=200, deadline=None)
@given(think=st.sampled_from(POLICIES), before=PROSE, after=PROSE, tag=st.sampled_from(TAGS))
def test_a_think_tag_inside_the_answer_is_part_of_the_answer(think: str, before: str, after: str, tag: str) -> None:
    fmt = AnswerFormat(think=think)
    answer = f"{before}{tag}{after}".strip() or tag
    completion = f"{opening(think, 'r')}<answer>{answer}</answer>"
    ex = extract(completion, fmt)
    assert ex.ok and ex.answer == answer.strip(), (completion, ex)
    gold = {"answer": answer.strip()}
    assert build_verifier("exact", {}, fmt).verify(Sample(completion, row=gold)).outcome is Outcome.CORRECT


@settings(max_examples=200, deadline=None)
@given(think=st.sampled_from(["required", "prefilled", "optional"]), a=PROSE, b=PROSE)
def test_a_closing_tag_mentioned_in_the_reasoning_leaves_the_answer_after_the_block(think: str, a: str, b: str) -> None:
    fmt = AnswerFormat(think=think)
    reasoning = f"{a}</think>{b}"  # the mention: the block's own </think> comes later
    completion = f"{opening(think if think != 'optional' else 'required', reasoning)}<answer>42</answer>"
    assert extract(completion, fmt).answer == "42", completion
    assert build_verifier("exact", {}, fmt).verify(Sample(completion, row={"answer": "42"})).outcome is Outcome.CORRECT
    # The format term judges the form: a second </think> reads like a repeated close, so it is refused.
    assert FormatVerifier(fmt).verify(Sample(completion)).outcome is Outcome.WRONG


@settings(max_examples=100, deadline=None)
@given(think=st.sampled_from(POLICIES), tag=st.sampled_from(TAGS), text=PROSE)
def test_the_format_term_accepts_a_think_tag_inside_the_answer_span(think: str, tag: str, text: str) -> None:
    completion = f"{opening(think, 'r')}<answer>{text}{tag}</answer>"
    assert FormatVerifier(AnswerFormat(think=think)).verify(Sample(completion)).outcome is Outcome.CORRECT


@pytest.mark.parametrize("think", POLICIES)
@pytest.mark.parametrize(
    "body",
    [
        "<think>a</think><think>b</think><answer>42</answer>",  # a second block (the repeated-block hack)
        "<answer>41</answer></think><answer>42</answer>",  # an answer inside the reasoning
        "<think>a</think><answer>41</answer>x</think><answer>42</answer>",
        "<think><answer>42</answer></think>",
    ],
)
def test_a_second_block_or_an_answer_in_the_reasoning_is_still_refused(think: str, body: str) -> None:
    fmt = AnswerFormat(think=think)
    assert not extract(body, fmt).ok
    assert FormatVerifier(fmt).verify(Sample(body)).outcome is not Outcome.CORRECT


def test_many_think_tags_are_not_re_read() -> None:
    completion = "<think>" + "</think>" * 50 + "<answer>4</answer>"
    assert not extract(completion, AnswerFormat(think="required")).ok
