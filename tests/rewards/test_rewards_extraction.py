"""Answer-span extraction, exact-match normalisation and the TRL adapter: properties and hacks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards import AnswerFormat, Outcome, Sample, Verdict, extract
from rlvr.rewards.base import BaseVerifier
from rlvr.rewards.combine import RewardSet, Term
from rlvr.rewards.exact import ExactMatch, normalize
from rlvr.rewards.format import FormatVerifier, is_blank
from rlvr.rewards.rules import untrusted

TAGS = AnswerFormat()
BOXED = AnswerFormat(style="boxed")
plain = st.text(
    alphabet=st.characters(blacklist_characters="<>{}\\", blacklist_categories=("Cs",)), min_size=1, max_size=40
).filter(lambda s: not is_blank(s))


@settings(max_examples=150, deadline=None)
@given(
    st.text(max_size=30).filter(lambda s: "<" not in s and ">" not in s),
    plain,
    st.text(max_size=30).filter(lambda s: "<" not in s and ">" not in s),
)
def test_tag_extraction_returns_the_span_and_its_offsets(before, answer, after):
    text = f"{before}<answer>{answer}</answer>{after}"
    ex = extract(text, TAGS)
    assert ex.answer == untrusted.strip(answer)  # White_Space, not str.strip: U+001F is kept
    assert text[ex.span[0] : ex.span[1]] == ex.answer


@settings(max_examples=150, deadline=None)
@given(plain, plain)
def test_two_answer_spans_are_unparseable(a, b):
    assert not extract(f"<answer>{a}</answer><answer>{b}</answer>", TAGS).ok


@settings(max_examples=200, deadline=None)
@given(st.recursive(plain, lambda inner: st.builds(lambda x: "{" + x + "}", inner), max_leaves=5))
def test_boxed_extraction_matches_nested_braces(inner):
    ex = extract(rf"so \boxed{{{inner}}} done", BOXED)
    assert ex.answer == untrusted.strip(inner)


def test_boxed_policy_first_and_last():
    text = r"\boxed{1} then \boxed{2}"
    assert not extract(text, BOXED).ok
    assert extract(text, AnswerFormat(style="boxed", boxed="first")).answer == "1"
    assert extract(text, AnswerFormat(style="boxed", boxed="last")).answer == "2"


def test_prefilled_think_completion_starts_inside_the_block():
    fmt = AnswerFormat(think="prefilled")
    assert extract("reasoning...</think><answer>4</answer>", fmt).answer == "4"
    assert not extract("<think>again</think><answer>4</answer>", fmt).ok


def test_answer_inside_the_think_block_does_not_count():
    fmt = AnswerFormat(think="required")
    assert not extract("<think><answer>4</answer></think>", fmt).ok


def test_unbalanced_box_is_unparseable():
    assert not extract(r"\boxed{" + "{" * 5000, BOXED).ok


def test_one_megabyte_without_span_is_unparseable_quickly():
    assert not extract("a<" * 500_000, TAGS).ok


def test_format_term_rejects_text_after_the_answer_by_default():
    v = FormatVerifier(TAGS)
    assert v.verify(Sample("<answer>4</answer>")).outcome is Outcome.CORRECT
    assert v.verify(Sample("<answer>4</answer> or 5")).outcome is Outcome.WRONG


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**15), st.sampled_from([" ", "_", "\u2009", "\u202f"]))
def test_thousands_rule_removes_unambiguous_separators(n, sep):
    assert normalize(f"{n:,}".replace(",", sep), ["thousands"]) == str(n)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.integers(0, 999), st.integers(10**6, 10**15)))
def test_thousands_rule_removes_commas_in_two_or_more_groups(n):
    assert normalize(f"{n:,}", ["thousands"]) == str(n)


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet="abcXYZ 12.$\t", max_size=20),
    st.sets(st.sampled_from(["whitespace", "case", "nfkc", "thousands", "dollars", "trailing_period"])),
)
def test_normalisation_is_idempotent(text, rules):
    once = normalize(text, rules)
    assert normalize(once, rules) == once


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefXYZ", min_size=1, max_size=20))
def test_case_rule_ignores_ascii_case(text):
    assert normalize(text.upper(), ["case"]) == normalize(text.lower(), ["case"])


def test_exact_without_rules_is_exact():
    v = ExactMatch(TAGS)
    assert v.verify(Sample("<answer>Paris</answer>", {"answer": "Paris"})).outcome is Outcome.CORRECT
    assert v.verify(Sample("<answer>paris</answer>", {"answer": "Paris"})).outcome is Outcome.WRONG
    assert v.verify(Sample("<answer>Par\u200bis</answer>", {"answer": "Paris"})).outcome is Outcome.WRONG


def test_exact_nfkc_rule_folds_full_width_digits_and_zero_width():
    v = ExactMatch(TAGS, normalize=["nfkc"])
    assert v.verify(Sample("<answer>４２</answer>", {"answer": "42"})).outcome is Outcome.CORRECT
    assert v.verify(Sample("<answer>4\u200b2</answer>", {"answer": "42"})).outcome is Outcome.CORRECT


# -- the TRL adapter ---------------------------------------------------------------------------
class Scripted(BaseVerifier):
    """Returns a scripted verdict per completion text; ``gold`` is the completion its gold
    answer is (what rlvr.rewards.fault scores when an answer is undecided)."""

    def __init__(self, table: dict[str, Verdict], gold: str | None = None) -> None:
        self.table = table
        self.gold = gold

    def gold_completion(self, row: object) -> str | None:
        return self.gold

    def verify(self, sample: Sample) -> Verdict:
        return self.table[sample.completion]


def reward_set(gold: str = "b") -> RewardSet:
    """``b`` times out on the correctness term; with ``gold="b"`` the gold times out the same way
    (the row is the task's: masked), with ``gold="a"`` it does not (charged to the answer)."""
    fmt = Scripted({"a": Verdict.correct(), "b": Verdict.correct(), "c": Verdict.wrong()}, gold)
    correct = Scripted(
        {"a": Verdict.correct(), "b": Verdict.error("timed out", kind="timeout"), "c": Verdict.unparseable("none")},
        gold,
    )
    return RewardSet([Term("format", fmt, 0.1), Term("correct", correct, 1.0)])


def test_trl_functions_return_one_value_per_completion_in_order():
    fmt_fn, correct_fn = reward_set().trl_functions()
    assert fmt_fn(prompts=["p"] * 3, completions=["a", "b", "c"]) == [1.0, None, 0.0]
    assert correct_fn(prompts=["p"] * 3, completions=["a", "b", "c"]) == [1.0, None, 0.0]


def test_an_undecided_correctness_term_masks_every_term_of_that_row():
    rs = reward_set()
    values = [fn(prompts=["p"] * 3, completions=["a", "b", "c"]) for fn in rs.trl_functions()]
    assert [v[1] for v in values] == [None, None]


def test_error_and_timeout_rates_are_logged_per_term():
    logged: dict[str, float] = {}
    fn = reward_set().trl_functions()[1]
    fn(prompts=["p"] * 3, completions=["a", "b", "c"], log_metric=lambda k, v: logged.__setitem__(k, v))
    assert logged["rewards/correct/error_rate"] == 1 / 3
    assert logged["rewards/correct/timeout_rate"] == 1 / 3
    assert logged["rewards/correct/unparseable_rate"] == 1 / 3
    assert logged["rewards/format/error_rate"] == 0
    assert logged["rewards/masked_rate"] == 1 / 3


def test_an_undecided_answer_whose_gold_decides_is_charged_zero_in_every_term_and_counted():
    logged: dict[str, float] = {}
    fns = reward_set(gold="a").trl_functions()
    values = [fn(prompts=["p"] * 3, completions=["a", "b", "c"], log_metric=logged.__setitem__) for fn in fns]
    assert [v[1] for v in values] == [1.0, 0.0]  # format decided; correctness charged
    assert logged["rewards/correct/charged_rate"] == 1 / 3 and logged["rewards/correct/charged/timeout"] == 1 / 3
    assert logged["rewards/correct/error_rate"] == 0 and logged["rewards/masked_rate"] == 0


def test_trl_functions_are_named_after_their_terms():
    assert [f.__name__ for f in reward_set().trl_functions()] == ["format", "correct"]


def test_conversational_completions_are_read_as_text():
    fn = reward_set().trl_functions()[0]
    assert fn(prompts=[[{"role": "user", "content": "p"}]], completions=[[{"role": "assistant", "content": "a"}]]) == [
        1.0
    ]


def test_optional_think_accepts_a_block_the_template_opened():
    fmt = AnswerFormat(think="optional")
    assert extract("thinking...</think><answer>4</answer>", fmt).answer == "4"
    assert extract("<think>x</think><answer>4</answer>", fmt).answer == "4"
    assert extract("<answer>4</answer>", fmt).answer == "4"
    # Its one reading: the first </think> is a mention inside the reasoning the template opened.
    assert extract("a</think>b</think><answer>4</answer>", fmt).answer == "4"
    assert not extract("<think>a</think><think>b</think><answer>4</answer>", fmt).ok  # a second block


def test_a_batch_is_scored_once_per_step_even_when_two_steps_sample_the_same_text():
    from types import SimpleNamespace

    calls: list[int] = []

    class Counting(BaseVerifier):
        def verify(self, sample: Sample) -> Verdict:
            calls.append(1)
            return Verdict.correct()

    fmt_fn, other_fn = RewardSet([Term("format", Counting()), Term("other", Counting())]).trl_functions()
    state = SimpleNamespace(global_step=1)
    for fn in (fmt_fn, other_fn):  # TRL calls every term on the same batch: scored once
        fn(prompts=["p"], completions=["a"], trainer_state=state)
    assert len(calls) == 2  # two terms x one completion
    state.global_step = 2  # the next step samples the very same text: a new batch, scored again
    fmt_fn(prompts=["p"], completions=["a"], trainer_state=state)
    assert len(calls) == 4
