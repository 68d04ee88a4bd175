"""The fail-closed rule for ``unit_tests`` (``rlvr.rewards.fault``): the gold of a code row is
its reference solution, run through the same path, so a timeout, memory or sandbox verdict is
masked only when the reference fails the same way, and charged to the answer otherwise or when
the row has no reference. Scripted sandbox verdicts here; the real sandbox in
``tests/sandbox/test_sandbox_unit_tests.py``."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr.rewards import Outcome, Sample, Verdict, fault
from rlvr.rewards.code import REFERENCE_COLUMNS, UnitTests, extract_code
from rlvr.rewards.combine import RewardSet, Term

OUTCOMES: dict[str, Verdict] = {
    "correct": Verdict.correct(),
    "wrong": Verdict.wrong(),
    "unparseable": Verdict.unparseable("no code"),
    **{k: Verdict.error(k, kind=k) for k in ("timeout", "memory", "sandbox", "weaker", "ground_truth")},
}


class Scripted(UnitTests):
    """A real ``UnitTests`` (its reads, its gold, its extraction) whose sandbox answers each
    program with the outcome the program names (``# timeout``)."""

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        out = []
        for s in samples:
            code = extract_code(s.completion, self.fmt, self.options.extract)[0]
            out.append(OUTCOMES[code.strip().lstrip("# ")] if code else Verdict.unparseable("no code"))
        return out


def scored(candidate: str, row: dict[str, str]) -> tuple[bool, Verdict]:
    verifier = Scripted(column="tests")
    [s] = RewardSet([Term("tests", verifier)]).score([Sample(verifier.completion(f"# {candidate}"), row)])
    return s.masked, s.verdicts["tests"]


def test_a_slow_program_with_a_fast_reference_is_charged_as_a_timeout() -> None:
    masked, v = scored("timeout", {"tests": "t", "solution": "# correct"})
    assert not masked and v.outcome is Outcome.WRONG and v.score == 0.0 and v.error_kind == "timeout"
    assert fault.is_charged(v)


def test_a_slow_program_with_a_slow_reference_is_masked() -> None:
    masked, v = scored("timeout", {"tests": "t", "solution": "# timeout"})
    assert masked and v.outcome is Outcome.ERROR and v.error_kind == "timeout"


def test_a_slow_program_without_a_reference_is_charged() -> None:
    masked, v = scored("timeout", {"tests": "t"})
    assert not masked and v.score == 0.0 and v.error_kind == "timeout" and "no gold" in v.detail


def test_limits_exceeded_wrong_charges_without_running_the_reference() -> None:
    class Counting(Scripted):
        runs = 0

        def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
            Counting.runs += len(samples)
            v = super().verify_batch(samples)
            return [fault.charge(x, "limits_exceeded: wrong") if x.error_kind == "timeout" else x for x in v]

    verifier = Counting(column="tests", limits_exceeded="wrong")
    [s] = RewardSet([Term("t", verifier)]).score([Sample(verifier.completion("# timeout"), {"tests": "t"})])
    assert not s.masked and s.verdicts["t"].error_kind == "timeout" and Counting.runs == 1


def test_the_declared_reference_columns_name_the_gold_in_order() -> None:
    v = UnitTests(column="tests", reference_column="mine")
    refs = v.reads().references
    assert refs == ("mine", *REFERENCE_COLUMNS)
    assert v.gold_completion({"tests": "t", "solution": "b", "mine": "a"}) == v.completion("a")
    assert v.gold_completion({"tests": "t", "solution": "  "}) is None
    # The tests column is never its own reference (a task whose answer column is `solution`).
    assert "solution" not in UnitTests(column="solution").reads().references


@pytest.mark.parametrize("extract", ["auto", "answer", "fence", "whole"])
def test_the_gold_completion_is_extracted_back_to_the_reference(extract: str) -> None:
    v = UnitTests(column="tests", extract=extract)
    code = "def add(a, b):\n    return a + b"
    got = extract_code(v.gold_completion({"solution": code}) or "", v.fmt, v.options.extract)[0]
    assert got is not None and got.strip() == code


@given(candidate=st.sampled_from(sorted(OUTCOMES)), gold=st.one_of(st.none(), st.sampled_from(sorted(OUTCOMES))))
def test_a_code_row_is_masked_iff_its_reference_fails_the_same_way(candidate: str, gold: str | None) -> None:
    row = {"tests": "t"} if gold is None else {"tests": "t", "reference": f"# {gold}"}
    masked, v = scored(candidate, row)
    error = OUTCOMES[candidate].outcome is Outcome.ERROR
    same = gold is not None and OUTCOMES[gold].outcome is Outcome.ERROR and gold == candidate
    assert masked is (error and (candidate in fault.TASK_KINDS or same))
    if error and not masked:
        assert v.outcome is Outcome.WRONG and v.score == 0.0 and v.error_kind == candidate
