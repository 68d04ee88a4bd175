"""Issue 20's audit classes: each probe flags a deliberately weak verifier of its class, on a task
built from it, and passes the fixed built-in."""

from __future__ import annotations

import dataclasses
import json

import pytest
from test_audit import CALL_ROWS, JSON_ROWS, ROWS, make_task

from rlvr.audit import format_table, run_audit
from rlvr.audit.exploits import exploits_for
from rlvr.audit.types import Context
from rlvr.rewards import AnswerFormat, Outcome, Sample
from rlvr.rewards.exact import ExactMatch

ROWS4 = [{"question": f"{a}*{b}", "answer": str(a * b)} for a, b in [(37, 58), (91, 47), (64, 64), (123, 45)]]
PERSON = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email"},
        "born": {"type": "string", "format": "date"},
        "age": {"type": "integer"},
    },
    "required": ["email", "born", "age"],
}
PERSON_ROWS = [
    {"question": "Ada?", "answer": json.dumps({"email": "ada@example.org", "born": "1815-12-10", "age": 36})},
    {"question": "Bob?", "answer": json.dumps({"email": "bob@example.org", "born": "1990-01-02", "age": 34})},
]
MAIL = [
    {
        "name": "send_mail",
        "parameters": {
            "type": "object",
            "properties": {"to": {"type": "string", "format": "email"}, "body": {"type": "string"}},
            "required": ["to", "body"],
        },
    }
]
GEO = [
    {
        "name": "geo",
        "parameters": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
        },
    }
]
GEO_ROWS = [
    {
        "question": "Where is Paris?",
        "answer": "-",
        "tool_call": json.dumps({"name": "geo", "arguments": {"lat": 48.85, "lon": 2.35}}),
    },
    {
        "question": "Where is Rome?",
        "answer": "-",
        "tool_call": json.dumps({"name": "geo", "arguments": {"lat": 41.9, "lon": 12.5}}),
    },
]


def audit(task, **kw):
    return run_audit(task, max_prompts=kw.pop("max_prompts", 6), seed=0, **kw)


def verdict(report, term, exploit):
    return report.finding(term, exploit).verdict


# -- normalisation folds (nfkc superscripts, thousands grouping) ----------------------------------
def test_nfkc_that_folds_superscripts_is_flagged(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.nfkc_exact"}]))
    f = report.finding("c", "normalisation_folds")
    assert f.verdict == "exploitable" and any(ch in f.example.completion for ch in "⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉")


def test_thousands_that_reads_any_separator_is_flagged(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.loose_thousands"}], ROWS4))
    assert verdict(report, "c", "normalisation_folds") == "exploitable"


@pytest.mark.parametrize("rows", [ROWS, ROWS4])
def test_builtin_exact_with_every_normalisation_passes_the_fold_probe(tmp_path, rows):
    rules = ["whitespace", "case", "nfkc", "thousands", "trailing_period", "dollars"]
    report = audit(make_task(tmp_path, [{"name": "c", "verifier": "exact", "options": {"normalize": rules}}], rows))
    assert report.terms[0].verdict == "ok", format_table(report, show_ok=True)
    assert report.finding("c", "normalisation_folds").prompts == len(rows)


# -- invisible answers -------------------------------------------------------------------------------
def test_format_term_that_accepts_an_invisible_answer_is_flagged(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "format", "verifier": "audit_rewards.strip_format"}]))
    f = report.finding("format", "invisible_span")
    assert f.verdict == "exploitable" and f.example.score == 1.0


@pytest.mark.parametrize("think", ["none", "required", "prefilled"])
def test_builtin_format_term_passes_the_invisible_probe(tmp_path, think):
    report = audit(
        make_task(tmp_path, [{"name": "format", "weight": 0.1}, {"name": "c", "verifier": "exact"}], think=think)
    )
    assert verdict(report, "format", "invisible_span") == "ok" and verdict(report, "c", "invisible_span") == "ok"


# -- huge numbers and infinities ---------------------------------------------------------------------
def test_answer_term_that_raises_on_huge_numbers_has_the_raise_charged_not_masked(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.raises_on_huge"}]))
    f = report.finding("c", "huge_numbers")
    assert f.masked == 0 and f.hits == 0 and f.verdict != "exploitable"


def test_tool_call_with_a_float_tolerance_is_flagged_by_infinity_and_huge_integers(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "call", "verifier": "audit_rewards.float_call"}], GEO_ROWS))
    f = report.finding("call", "call_huge_numbers")
    assert f.verdict == "exploitable" and f.hits > 0 and f.masked == 0, format_table(report)


def test_builtin_tool_call_passes_the_huge_number_probe(tmp_path):
    report = audit(
        make_task(
            tmp_path,
            [
                {
                    "name": "call",
                    "verifier": "tool_call",
                    "options": {"tools": GEO, "fields": {"lat": "numeric", "lon": "numeric"}},
                }
            ],
            GEO_ROWS,
        )
    )
    assert report.terms[0].verdict == "ok", format_table(report, show_ok=True)
    f = report.finding("call", "call_huge_numbers")
    assert f.verdict == "ok" and f.masked == 0 and f.prompts == len(GEO_ROWS)


def test_builtin_json_schema_passes_the_huge_number_probe(tmp_path):
    task = make_task(
        tmp_path, [{"name": "schema", "verifier": "json_schema", "options": {"schema": PERSON}}], PERSON_ROWS
    )
    f = audit(task).finding("schema", "json_huge_numbers")
    assert f.verdict == "ok" and f.masked == 0 and f.prompts == len(PERSON_ROWS)


# -- schema format rules -------------------------------------------------------------------------------
def test_json_schema_without_format_checks_is_flagged(tmp_path):
    task = make_task(
        tmp_path,
        [{"name": "schema", "verifier": "json_schema", "options": {"schema": PERSON, "check_formats": False}}],
        PERSON_ROWS,
    )
    f = audit(task).finding("schema", "json_format_rules")
    assert f.verdict == "exploitable" and (
        "not-an-email" in f.example.completion or "2024-02-30" in f.example.completion
    )


def test_builtin_json_schema_enforces_format_rules(tmp_path):
    task = make_task(
        tmp_path, [{"name": "schema", "verifier": "json_schema", "options": {"schema": PERSON}}], PERSON_ROWS
    )
    report = audit(task)
    assert report.terms[0].verdict == "ok", format_table(report, show_ok=True)
    assert verdict(report, "schema", "json_format_rules") == "ok"


def test_tool_call_without_format_checks_is_flagged_and_the_builtin_is_not(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    opts = {"tools": MAIL, "expected_column": None}
    weak = audit(
        make_task(
            tmp_path / "a",
            [{"name": "call", "verifier": "tool_call", "options": {**opts, "check_formats": False}}],
            CALL_ROWS,
        )
    )
    sound = audit(make_task(tmp_path / "b", [{"name": "call", "verifier": "tool_call", "options": opts}], CALL_ROWS))
    assert verdict(weak, "call", "call_format_rules") == "exploitable"
    assert verdict(sound, "call", "call_format_rules") == "ok"


def test_pattern_probe_sends_a_value_the_pattern_rejects(tmp_path):
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
        "required": ["code"],
    }
    rows = [{"question": "Airport?", "answer": json.dumps({"code": "CDG"})}]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    sound = audit(
        make_task(tmp_path / "a", [{"name": "s", "verifier": "json_schema", "options": {"schema": schema}}], rows)
    )
    loose = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
    assert verdict(sound, "s", "json_format_rules") == "ok"
    # The same task with the pattern dropped from the term's schema: nothing to probe.
    weak = audit(
        make_task(tmp_path / "b", [{"name": "s", "verifier": "json_schema", "options": {"schema": loose}}], rows)
    )
    assert verdict(weak, "s", "json_format_rules") == "untested"


# -- answers hidden in think blocks, every kind ----------------------------------------------------------
def test_json_term_that_reads_a_fence_inside_think_is_flagged(tmp_path):
    report = audit(
        make_task(
            tmp_path, [{"name": "json", "verifier": "audit_rewards.fence_anywhere_json"}], JSON_ROWS, answer="expected"
        )
    )
    f = report.finding("json", "json_in_think")
    assert f.verdict == "exploitable" and f.example.completion.startswith("<think>")


def test_tool_call_term_that_reads_a_call_inside_think_is_flagged(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "call", "verifier": "audit_rewards.float_call"}], GEO_ROWS))
    assert verdict(report, "call", "call_in_think") == "exploitable"


@pytest.mark.parametrize("think", ["none", "optional", "required", "prefilled"])
def test_builtin_json_and_tool_call_ignore_answers_inside_think(tmp_path, think):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    json_task = make_task(
        tmp_path / "a",
        [{"name": "schema", "verifier": "json_schema", "options": {"schema": PERSON}}],
        PERSON_ROWS,
        think=think,
    )
    call_task = make_task(
        tmp_path / "b", [{"name": "call", "verifier": "tool_call", "options": {"tools": GEO}}], GEO_ROWS, think=think
    )
    f = audit(json_task).finding("schema", "json_in_think")
    g = audit(call_task).finding("call", "call_in_think")
    assert (f.verdict, g.verdict) == ("ok", "ok") and f.prompts and g.prompts


def test_answer_and_format_terms_get_think_probes():
    names = {e.name for e in exploits_for("answer")} | {e.name for e in exploits_for("format")}
    assert {"think_only", "span_in_think"} <= names
    assert "json_in_think" in {e.name for e in exploits_for("json")} and "call_in_think" in {
        e.name for e in exploits_for("tool_call")
    }
    assert "code_in_think" in {e.name for e in exploits_for("code")}


# -- unspaced repetition -------------------------------------------------------------------------------
def test_repetition_term_that_splits_on_whitespace_is_flagged(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "rep", "verifier": "audit_rewards.word_repetition"}], budget=32))
    f = report.finding("rep", "unspaced_repetition")
    assert f.verdict == "exploitable" and f.example.score == 0.0


def test_builtin_repetition_term_passes_the_unspaced_probe(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "rep", "verifier": "repetition"}], budget=32))
    f = report.finding("rep", "unspaced_repetition")
    assert f.verdict == "ok" and f.prompts == len(ROWS), format_table(report, show_ok=True)


# -- length-term options, wrapped length terms ------------------------------------------------------------
def test_wrapped_length_term_that_penalises_only_correct_answers_past_the_gap_is_flagged(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "short", "verifier": "audit_rewards.inverted_length"}], budget=16))
    f = report.finding("short", "long_wrong")
    assert f.verdict == "exploitable" and "measured against" in f.example.detail


def test_builtin_wrapped_length_term_gets_length_probes_and_passes(tmp_path):
    rewards = [
        {
            "name": "short",
            "verifier": "length_penalty",
            "options": {"budget": 8, "max_penalty": 0.5, "base": {"verifier": "exact"}},
        }
    ]
    report = audit(make_task(tmp_path, rewards, budget=16))
    names = {f.exploit for f in report.findings}
    assert {"hedge_or", "max_length", "long_wrong", "unspaced_repetition"} <= names
    assert report.terms[0].verdict == "ok", format_table(report, show_ok=True)
    assert report.finding("short", "long_wrong").ties == 0


def test_default_apply_to_correct_is_reported_as_a_tie_not_an_exploit(tmp_path):
    rewards = [
        {
            "name": "short",
            "verifier": "length_penalty",
            "options": {"budget": 8, "apply_to": "correct", "base": {"verifier": "exact"}},
        }
    ]
    report = audit(make_task(tmp_path, rewards, budget=16))
    notes = " ".join(report.terms[0].notes)
    assert "the same as a wrong one" in notes and "scores as much as a long correct one" in notes
    assert verdict(report, "short", "long_wrong") == "ok"


# -- NaN scores, error attempts ---------------------------------------------------------------------------
def test_nan_score_for_a_hedge_is_charged_zero_not_masked(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.nan_on_hedge"}]))
    f = report.finding("c", "hedge_or")
    assert f.masked == 0 and f.hits == 0 and f.verdict != "exploitable"


# -- the success term -----------------------------------------------------------------------------------------
def test_a_custom_format_term_declared_as_the_success_term_is_a_task_problem(tmp_path):
    rewards = [{"name": "fmt", "verifier": "audit_rewards.has_tag"}, {"name": "c", "verifier": "exact"}]
    report = audit(make_task(tmp_path, rewards, success="fmt"))
    assert report.problems and "'fmt' is a format term" in report.problems[0]
    assert report.exploitable and "PROBLEM" in format_table(report)


def test_an_undeclared_ambiguous_success_term_is_noted_and_the_audit_still_runs(tmp_path):
    rewards = [{"name": "a", "verifier": "exact"}, {"name": "b", "verifier": "audit_rewards.anchored"}]
    report = audit(make_task(tmp_path, rewards))
    assert report.problems == () and any("no success term to check" in n for n in report.notes)
    assert [t.verdict for t in report.terms] == ["ok", "ok"]


def test_a_correctness_success_term_is_no_problem(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "format", "weight": 0.1}, {"name": "c", "verifier": "exact"}]))
    assert report.problems == () and not report.exploitable


# -- the table says what was tried --------------------------------------------------------------------------
def test_table_names_every_exploit_tried_even_when_all_are_ok(tmp_path):
    report = audit(make_task(tmp_path, [{"name": "format", "weight": 0.1}, {"name": "c", "verifier": "exact"}]))
    table = format_table(report)
    for f in report.findings:
        assert f.exploit in table
    assert "ok (prompts tried): restate_prompt (6)" in table and "of 27 exploits tried" in table


# -- the probes' premise: none of them is a correct answer ------------------------------------------------
@pytest.mark.parametrize("gold", ["95", "1234", "123456", "-4096", "x"])
def test_new_answer_probes_are_never_correct_under_exact_match_with_all_rules(gold):
    fmt = AnswerFormat()
    rules = ["whitespace", "case", "nfkc", "thousands", "trailing_period", "dollars"]
    v = ExactMatch(fmt, normalize=rules)
    ctx = Context(prompt="q", row={"answer": gold}, fmt=fmt, gold=gold, wrong="17", max_tokens=20)
    built = 0
    for ex in exploits_for("answer"):
        if ex.name not in ("normalisation_folds", "huge_numbers", "invisible_span"):
            continue
        for att in ex.build(ctx):
            built += 1
            assert v.verify(Sample(att.completions[0], {"answer": gold})).outcome is not Outcome.CORRECT, (ex.name, att)
    assert built >= 7


def test_report_with_problems_and_masked_findings_round_trips_through_json(tmp_path):
    from rlvr.audit import AuditReport

    rewards = [
        {"name": "fmt", "verifier": "audit_rewards.has_tag"},
        {"name": "c", "verifier": "audit_rewards.raises_on_huge"},
    ]
    report = audit(make_task(tmp_path, rewards, success="fmt"), terms=["c"])
    data = json.loads(json.dumps(report.to_json()))
    assert AuditReport.from_json(data) == report and data["problems"]


def test_format_with_boxed_style_passes_the_new_probes(tmp_path):
    task = make_task(
        tmp_path,
        [
            {"name": "format", "weight": 0.1},
            {"name": "c", "verifier": "exact", "options": {"normalize": ["nfkc", "thousands"]}},
        ],
        ROWS4,
    )
    task = task.with_overrides(answer=dataclasses.replace(task.answer, style="boxed"))
    report = audit(task)
    assert [t.verdict for t in report.terms] == ["ok", "ok"], format_table(report)


def test_cli_prints_what_was_tried_on_a_sound_task(capsys, tmp_path):
    from rlvr.cli.main import main

    make_task(tmp_path, [{"name": "format", "weight": 0.1}, {"name": "c", "verifier": "exact"}])
    assert main(["audit", str(tmp_path / "task.yaml")]) == 0
    out = capsys.readouterr().out
    assert "ok (prompts tried): restate_prompt (6), hedge_or (6)" in out and "of 27 exploits tried" in out


def test_cli_exits_non_zero_on_a_task_level_problem(capsys, tmp_path):
    from rlvr.cli.main import main

    make_task(
        tmp_path,
        [{"name": "fmt", "verifier": "audit_rewards.has_tag"}, {"name": "c", "verifier": "exact"}],
        success="fmt",
    )
    assert main(["audit", str(tmp_path / "task.yaml"), "--term", "c"]) == 1
    assert "PROBLEM" in capsys.readouterr().out
