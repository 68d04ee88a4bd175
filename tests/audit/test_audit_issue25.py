"""Issue 25: what the audit missed (digits split by words, duplicate JSON keys in
test_audit.py, the question restated without its '=', the judge splice), the weighted total
across terms, and terms it could mostly not test."""

from __future__ import annotations

from test_audit import audit, make_task

from rlvr.audit import format_table
from rlvr.cli.main import main
from rlvr.taskcheck import check_task


def test_digits_split_by_words_are_tried(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.digits_only"}]))
    assert report.finding("c", "split_digits").verdict == "exploitable"


def test_the_question_restated_without_its_equals_sign_is_tried(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.arith_eval"}]))
    assert report.finding("c", "restate_prompt").verdict == "exploitable"


def test_the_judge_splice_is_tried(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "j", "verifier": "audit_rewards.spliced_judge"}]))
    assert report.finding("j", "judge_splice").verdict == "exploitable"


def test_the_builtins_hold_against_the_new_probes(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "format", "weight": 0.1}, {"name": "c", "verifier": "exact"}]))
    for exploit in ("split_digits", "restate_prompt", "judge_splice"):
        assert report.finding("c", exploit).verdict == "ok"
    assert not report.problems, report.problems


def _fast_check(task, monkeypatch):
    """``rlvr task check``'s problems without its GRPO config check (which imports TRL: seconds)."""
    import rlvr.taskcheck

    monkeypatch.setattr(rlvr.taskcheck, "grpo_problems", lambda task: [])
    return check_task(task)


def test_a_weighting_that_ranks_a_wrong_answer_first_is_a_problem(tmp_path, monkeypatch):
    # format 2 + exact 1: a wrong well-formed answer scores 2, a right one with a sentence after it 1.
    task = make_task(
        tmp_path, [{"name": "format", "weight": 2.0}, {"name": "c", "verifier": "exact"}], budget=64, success="c"
    )
    report = audit(task)
    assert any("weighted total" in p for p in report.problems), format_table(report)
    assert any("outscore" in p for p in report.problems)
    assert main(["audit", str(task.path), "--max-prompts", "2"]) == 1
    assert any("outscore" in p.what for p in _fast_check(task, monkeypatch))


def test_a_small_format_weight_passes_the_weighted_total(tmp_path, monkeypatch):
    task = make_task(
        tmp_path, [{"name": "format", "weight": 0.1}, {"name": "c", "verifier": "exact"}], budget=64, success="c"
    )
    assert not audit(task).problems
    assert not [p for p in _fast_check(task, monkeypatch) if "outscore" in p.what]


def test_a_term_the_audit_mostly_could_not_test_is_not_called_safe(tmp_path, capsys):
    task = make_task(tmp_path, [{"name": "odd", "verifier": "audit_rewards.reads_elsewhere"}])
    report = audit(task)
    untested = sum(f.verdict == "untested" for f in report.findings if f.term == "odd")
    assert 2 * untested > len([f for f in report.findings if f.term == "odd"])
    assert report.terms[0].verdict == "untested" and report.untested_terms == ("odd",)
    table = format_table(report)
    assert "UNTESTED" in table and "no term was exploited" not in table
    assert main(["audit", str(task.path), "--max-prompts", "2"]) == 1


def test_the_audits_invisible_probes_are_blank_by_the_one_definition():
    from rlvr.audit.answers import INVISIBLE
    from rlvr.rewards.rules.untrusted import is_blank

    assert all(is_blank(probe) for probe in INVISIBLE)
    assert any("\ufe0f" in p for p in INVISIBLE) and any("\u17b4" in p for p in INVISIBLE)
