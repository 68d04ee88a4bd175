"""The fail-closed rule (``rlvr.rewards.fault``): a failure to decide is charged to the answer
unless the row's gold, scored through the same path, fails the same way. Walked through every
built-in term kind, custom terms, episodes' terms, the audit's and ``rlvr score``'s paths, with
real failures (a math worker crash, a judge timeout, a custom function that raises) and with a
property test over arbitrary verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards import BUILTINS, AnswerFormat, BaseVerifier, Outcome, Sample, Verdict, build_verifier, fault
from rlvr.rewards.base import kind_of, reads_of
from rlvr.rewards.combine import RewardSet, Term, checked_verdicts
from rlvr.rewards.pool import Result

FMT = AnswerFormat()
TOOLS = [{"name": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
ROW = {"answer": "42", "tool_call": {"name": "weather", "arguments": {"city": "Lima"}}}
KINDS = ("timeout", "crash", "memory", "judge", "sandbox")


class FakeJudgeClient:
    """An OpenAI-compatible endpoint in process: CORRECT when the response holds the reference,
    a timeout for any prompt holding ``slow``."""

    def __init__(self, slow: str = "SLOW") -> None:
        self.slow = slow

    def post(self, url: str, json: Mapping[str, Any], headers: Any = None, timeout: float = 0) -> httpx.Response:
        content = json["messages"][0]["content"]
        if self.slow in content:
            raise httpx.ReadTimeout("slow")
        return httpx.Response(200, json={"choices": [{"message": {"content": "CORRECT"}}]})


OPTIONS: dict[str, dict[str, Any]] = {
    "format": {},
    "exact": {},
    "math": {},
    "json_schema": {"schema": {"type": "object"}},
    "tool_call": {"tools": TOOLS},
    "length_penalty": {"budget": 100, "base": {"verifier": "math"}},
    "overlong": {"max_completion_length": 100, "cache": 10},
    "repetition": {},
    "judge": {"model": "m", "base_url": "http://judge.invalid/v1", "require_calibration": False},
    "unit_tests": {},  # ROW has no reference solution: no gold (tests/rewards/test_rewards_code_fault.py has one)
    "valid_calls": {},
    "required_tools": {"tools": ["search"]},
    "call_budget": {"budget": 1},
}


def built(name: str) -> Any:
    opts = dict(OPTIONS[name])
    if name == "judge":
        opts["client"] = FakeJudgeClient()
    return build_verifier(name, opts, FMT, answer_column="answer")


class Failing(BaseVerifier):
    """A real verifier, except that it fails (``kind``) on every sample but the row's gold, or on
    the gold too with ``gold_fails``. Everything else (reads, format, gold) is the real one's."""

    def __init__(self, inner: Any, kind: str, gold_fails: bool) -> None:
        self.inner, self.error, self.gold_fails = inner, kind, gold_fails
        self.kind = kind_of(inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def reads(self) -> Any:
        return reads_of(self.inner)

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        real = self.inner.verify_batch(samples)
        gold = [fault.gold_completion(self.inner, s.row, FMT, "answer") for s in samples]
        return [
            Verdict.error("injected", kind=self.error) if self.gold_fails or s.completion != g else v
            for s, g, v in zip(samples, gold, real, strict=True)
        ]


def test_every_built_in_term_kind_is_walked_here() -> None:
    assert set(BUILTINS) == set(OPTIONS)


@pytest.mark.parametrize("name", sorted(OPTIONS))
@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_the_gold_does_not_share_is_charged_in_every_term_kind(name: str, kind: str) -> None:
    rs = RewardSet([Term("t", Failing(built(name), kind, gold_fails=False))], answer_format=FMT, answer_column="answer")
    [scored] = rs.score([Sample("<answer>7</answer>", ROW, "What is 6*7?")])
    v = scored.verdicts["t"]
    assert not scored.masked and v.outcome is Outcome.WRONG and v.score == 0.0 and v.error_kind == kind
    assert fault.is_charged(v) and "charged to the answer" in v.detail


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_a_failure_the_gold_shares_is_masked_in_every_term_kind_that_has_a_gold(name: str) -> None:
    verifier = Failing(built(name), "timeout", gold_fails=True)
    rs = RewardSet([Term("t", verifier)], answer_format=FMT, answer_column="answer")
    [scored] = rs.score([Sample("<answer>7</answer>", ROW, "What is 6*7?")])
    has_gold = fault.gold_sample(verifier, Sample("", ROW), FMT, "answer") is not None
    # A term with no gold (format, a json schema alone, a bare penalty) cannot show the task fails.
    assert scored.masked is has_gold
    assert has_gold is (name in ("exact", "math", "tool_call", "length_penalty", "judge"))


def test_an_error_of_another_kind_in_the_gold_does_not_mask_the_answer() -> None:
    answer = Verdict.error("slow", kind="timeout")
    assert fault.whose_fault(answer, Verdict.error("boom", kind="crash")).outcome is Outcome.WRONG


def test_a_code_terms_timeout_has_no_policy_of_its_own() -> None:
    # It once kept the sandbox's own policy (a timeout masked, the gold never run): a policy could
    # buy a mask by writing a slow program. A code term without a gold is charged like any other.
    class Code(BaseVerifier):
        kind = "code"

        def verify(self, sample: Sample) -> Verdict:
            return Verdict.error("timed out", kind="timeout")

    [v] = checked_verdicts("code", Code(), [Sample("x", {"answer": "1"})])
    assert v.outcome is Outcome.WRONG and v.error_kind == "timeout" and fault.is_charged(v)


@pytest.mark.parametrize("kind", sorted(fault.TASK_KINDS))
def test_an_error_decided_from_the_row_alone_is_the_tasks_without_a_gold_run(kind: str) -> None:
    v = Verdict.error("the row's tests import numpy", kind=kind)
    assert fault.whose_fault(v, None) is v


# -- real failures, real paths ----------------------------------------------------------------
class CrashOnAnswer:
    """A math worker pool whose comparison crashes unless the answer is the gold."""

    def map(self, func: str, arglist: Sequence[tuple[Any, ...]], timeout: float = 5.0) -> list[Result]:
        out = []
        for gold, answer, *_ in arglist:
            if answer == gold:
                out.append(Result(True, ("equal", "")))
            else:
                out.append(Result(False, error_kind="crash", detail="TypeError: chain"))
        return out


def test_a_math_comparison_that_crashes_on_the_answer_alone_is_charged() -> None:
    math = build_verifier("math", {"pool": CrashOnAnswer()}, FMT, answer_column="answer")
    rs = RewardSet([Term("math", math)])
    [s] = rs.score([Sample("<answer>\\int_0^1 x dx = 7</answer>", {"answer": "x^2"}, "")])
    assert s.verdicts["math"].outcome is Outcome.WRONG and s.verdicts["math"].error_kind == "crash"


def test_a_judge_timeout_on_a_long_answer_is_charged_and_an_outage_is_masked() -> None:
    opts = dict(OPTIONS["judge"], client=FakeJudgeClient())
    rs = RewardSet([Term("judge", build_verifier("judge", opts, FMT, answer_column="answer"))])
    [charged] = rs.score([Sample("SLOW " * 50, {"answer": "42"}, "q")])
    assert charged.verdicts["judge"].outcome is Outcome.WRONG and charged.verdicts["judge"].error_kind == "timeout"
    [outage] = rs.score([Sample("SLOW", {"answer": "42 SLOW"}, "q")])  # the gold times out too
    assert outage.masked and outage.verdicts["judge"].error_kind == "timeout"


def test_a_custom_function_that_raises_on_the_answer_is_charged_and_on_its_gold_too_is_masked() -> None:
    def check(sample: Sample) -> float:
        if "boom" in sample.completion:
            raise RuntimeError("boom")
        return 1.0

    from rlvr.rewards import FunctionVerifier

    rs = RewardSet([Term("custom", FunctionVerifier(check))], answer_format=FMT, answer_column="answer")
    a, b = rs.score([Sample("boom", {"answer": "4"}), Sample("boom", {"answer": "boom"})])
    assert a.verdicts["custom"].outcome is Outcome.WRONG and not a.masked
    assert b.masked  # the gold, <answer>boom</answer>, raises too


def test_an_episodes_final_answer_term_is_settled_by_the_same_rule() -> None:
    from rlvr.rewards.episode import Episode, Turn

    inner = Failing(built("exact"), "timeout", gold_fails=False)
    rewards = RewardSet([Term("exact", inner)], answer_format=FMT, answer_column="answer")
    [s] = rewards.score([Sample.of_episode(Episode((Turn("<answer>7</answer>"),)), ROW, "q")])
    assert s.verdicts["exact"].outcome is Outcome.WRONG and s.verdicts["exact"].error_kind == "timeout"


def test_every_scoring_path_goes_through_whose_fault(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """TRL's functions, ``rlvr score``'s rows, the audit's checked verdicts and the server's
    deadline all reach the one decision."""
    calls: list[str] = []
    real = fault.whose_fault

    def spy(answer: Verdict, gold: Verdict | None) -> Verdict:
        calls.append(answer.error_kind or "")
        return real(answer, gold)

    monkeypatch.setattr(fault, "whose_fault", spy)
    verifier = Failing(built("exact"), "timeout", gold_fails=False)
    rs = RewardSet([Term("t", verifier)], answer_format=FMT, answer_column="answer")
    rs.trl_functions()[0](prompts=["q"], completions=["<answer>7</answer>"], answer=["42"])
    from rlvr.rewards.scoring import score_rows

    score_rows([{"completion": "<answer>7</answer>", "answer": "42"}], rs, workers=1)
    checked_verdicts("t", verifier, [Sample("<answer>7</answer>", ROW)])
    from rlvr.serve.scoring import past_deadline

    past_deadline(["t"], 1.0, {"t": Verdict.correct()})
    assert len(calls) == 4


# -- properties -------------------------------------------------------------------------------
verdicts = st.one_of(
    st.builds(Verdict.correct, st.floats(0, 1)),
    st.builds(Verdict.wrong, st.floats(-1, 0)),
    st.builds(Verdict.unparseable, st.text(max_size=5)),
    st.builds(Verdict.error, st.text(max_size=5), st.sampled_from([*KINDS, *sorted(fault.TASK_KINDS)])),
)


@given(answer=verdicts, gold=st.one_of(st.none(), verdicts))
def test_whose_fault_masks_only_what_the_gold_shares_and_never_raises_a_score(
    answer: Verdict, gold: Verdict | None
) -> None:
    out = fault.whose_fault(answer, gold)
    if answer.outcome is not Outcome.ERROR:
        assert out is answer
    elif out.outcome is Outcome.ERROR:
        assert answer.error_kind in fault.TASK_KINDS or (
            gold is not None and gold.outcome is Outcome.ERROR and gold.error_kind == answer.error_kind
        )
    else:
        assert out.outcome is Outcome.WRONG and out.score == 0.0 and out.error_kind == answer.error_kind


class Scripted(BaseVerifier):
    """A verdict per completion; the gold is the completion ``gold``."""

    def __init__(self, table: Mapping[str, Verdict], gold: str) -> None:
        self.table, self.gold = table, gold

    def gold_completion(self, row: object) -> str:
        return self.gold

    def verify(self, sample: Sample) -> Verdict:
        return self.table[sample.completion]


@settings(max_examples=60, deadline=None)
@given(
    table=st.dictionaries(st.sampled_from("abcdef"), verdicts, min_size=1),
    picks=st.lists(st.integers(0, 5), min_size=1, max_size=8),
)
def test_a_batch_masks_a_row_only_when_the_gold_fails_the_same_way(table: dict[str, Verdict], picks: list[int]) -> None:
    keys = sorted(table)
    gold = keys[0]
    texts = [keys[i % len(keys)] for i in picks]
    scored = RewardSet([Term("t", Scripted(table, gold))]).score([Sample(t) for t in texts])
    g = table[gold]
    for text, s in zip(texts, scored, strict=True):
        v = table[text]
        shared = g.outcome is Outcome.ERROR and g.error_kind == v.error_kind
        assert s.masked is (v.outcome is Outcome.ERROR and (v.error_kind in fault.TASK_KINDS or shared))
