"""Issue 34: the weak verifiers the audit missed, each caught by a generator of weak answers
built from the gold (``rlvr.audit.weakvalues``), self-certification probed on every term, and
``untested`` counted as a finding, never as clean."""

from __future__ import annotations

import pytest
from test_audit import JSON_ROWS, audit, make_task

from rlvr.audit import format_table

# (weak verifier, the exploit that must flag it); the last three were flagged before issue 34.
WEAK = [
    ("abs_value", "sign_flip"),
    ("digit_multiset", "digit_permutation"),
    ("last_two_digits", "same_last_digits"),
    ("self_certified", "self_certification"),
    ("unit_words", "trailing_words"),
    ("float_equal", "sub_float"),
    ("ascii_only", "unicode_minus"),
    ("leading_number", "trailing_words"),
    ("fail_open", "restate_prompt"),
]


@pytest.mark.parametrize(("verifier", "exploit"), WEAK)
def test_each_weak_answer_verifier_is_flagged_by_its_generator(tmp_path, verifier, exploit):
    report = audit(make_task(tmp_path, [{"name": "c", "verifier": f"audit_rewards.{verifier}"}]))
    assert report.finding("c", exploit).verdict == "exploitable", format_table(report)
    assert report.exploitable


def test_a_json_term_comparing_fields_as_text_is_flagged(tmp_path):
    task = make_task(
        tmp_path, [{"name": "json", "verifier": "audit_rewards.loose_json_fields"}], JSON_ROWS, answer="expected"
    )
    assert audit(task).finding("json", "json_wrong_types").verdict == "exploitable"


def test_a_per_prompt_cache_is_untested_and_untested_is_not_clean(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.per_prompt_cache"}]))
    assert report.untested_terms == ("c",) and report.exploitable, format_table(report)


def test_the_builtins_hold_against_the_issue_34_probes(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "format", "weight": 0.1}, {"name": "c", "verifier": "exact"}]))
    for exploit in (
        "sign_flip",
        "digit_permutation",
        "same_last_digits",
        "trailing_words",
        "sub_float",
        "unicode_minus",
        "self_certification",
        "prompt_injection",
    ):
        assert report.finding("c", exploit).verdict == "ok", format_table(report, show_ok=True)
    assert not report.exploitable, format_table(report)


def test_the_injection_probes_run_on_every_term_that_judges_an_answer(tmp_path):
    from rlvr.audit.exploits import EXPLOITS

    for exploit in ("prompt_injection", "self_certification"):
        assert {"answer", "custom", "judge", "json", "tool_call", "code"} <= EXPLOITS[exploit].targets
    report = audit(make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.anchored"}]))
    assert report.finding("c", "self_certification").verdict == "ok"


def test_the_weak_value_generators_never_write_the_gold():
    from hypothesis import given
    from hypothesis import strategies as st

    from rlvr.audit import weakvalues
    from rlvr.audit.types import Context
    from rlvr.rewards import AnswerFormat, extract

    fmt = AnswerFormat()
    gens = [
        weakvalues.sign_flip,
        weakvalues.digit_permutation,
        weakvalues.same_last_digits,
        weakvalues.sub_float,
        weakvalues.unicode_minus,
    ]

    @given(st.integers(-(10**20), 10**20), st.sampled_from(gens))
    def check(n, gen):
        gold = str(n)
        for att in gen(Context("q", {"answer": gold}, fmt, gold, "7")):
            for c in att.completions:
                answer = extract(c, fmt).answer
                assert answer is not None and answer.strip() != gold

    check()
