"""The custom-verifier contract probe (``rlvr.audit.contract``): a custom term that returns partial
credit or raises, or returns None for a record missing a field, is flagged; a sound one is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.audit import run_audit
from rlvr.audit.contract import _why
from rlvr.task import load_task
from support.tasks import weak_rewards_task

ROWS = [{"question": f"{i}+{i}", "answer": str(2 * i + 10)} for i in range(6)]
RECORDS = [{"question": f"who is {i}", "answer": json.dumps({"name": f"n{i}", "age": i})} for i in range(6)]


def audit(tmp_path: Path, verifier: str, rows: list[dict]) -> list[str]:
    path = weak_rewards_task(tmp_path, [{"name": "c", "verifier": f"audit_rewards.{verifier}"}], rows)
    report = run_audit(load_task(path), max_prompts=6, tokenizer=None)
    return [p for p in report.problems if p.startswith("term 'c'")]


def test_partial_credit_from_a_success_term_is_flagged(tmp_path: Path) -> None:
    [problem] = audit(tmp_path, "partial_or_raise", ROWS)
    assert "returns 0.5 on a wrong answer" in problem or "raises IndexError on an empty completion" in problem
    assert "fix:" in problem


def test_a_none_for_a_record_missing_a_field_is_flagged(tmp_path: Path) -> None:
    [problem] = audit(tmp_path, "none_on_missing_field", RECORDS)
    assert "returns None on the gold record without its field 'name'" in problem and "fail closed" in problem


def test_a_sound_custom_verifier_is_not_flagged(tmp_path: Path) -> None:
    assert audit(tmp_path, "anchored", ROWS) == []


@pytest.mark.parametrize("verifier", ["partial_or_raise", "none_on_missing_field"])
def test_the_flag_makes_the_audit_exploitable(tmp_path: Path, verifier: str) -> None:
    path = weak_rewards_task(
        tmp_path, [{"name": "c", "verifier": f"audit_rewards.{verifier}"}], RECORDS if "none" in verifier else ROWS
    )
    assert run_audit(load_task(path), max_prompts=6, tokenizer=None).exploitable


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.floats(allow_nan=True), st.integers(-3, 3), st.booleans(), st.none(), st.text(max_size=3)))
def test_a_success_terms_value_passes_exactly_when_it_is_a_bool_0_or_1(value: object) -> None:
    ok = isinstance(value, bool) or (isinstance(value, (int, float)) and value in (0, 1))
    assert (_why(value, is_gold=False, decides_success=True) is None) == ok
