"""The reward-hack audit: weak rewards are flagged, sound ones and the built-ins are not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr.audit import EXPLOITS, AuditReport, format_table, run_audit
from rlvr.audit.answers import perturb, unrelated
from rlvr.cli.main import main
from rlvr.rewards import AnswerFormat, Outcome, Sample
from rlvr.rewards.exact import ExactMatch
from rlvr.task import load_task
from support.judges import reference_of, response_of
from support.tasks import weak_rewards_task

ROOT = Path(__file__).resolve().parents[2]
ARITHMETIC = ROOT / "examples" / "arithmetic" / "task.yaml"

ROWS = [
    {"question": f"{a}+{b}", "answer": str(a + b)}
    for a, b in [(37, 58), (12, 40), (71, 19), (5, 88), (64, 64), (23, 9)]
]
JSON_ROWS = [
    {"question": "Describe Ada as JSON.", "expected": json.dumps({"name": "Ada", "age": 36, "admin": True})},
    {"question": "Describe Bob as JSON.", "expected": json.dumps({"name": "Bob", "age": 41, "admin": False})},
]
CODE_ROWS = [
    {
        "question": "Write add(a, b). Example: assert add(1, 2) == 3",
        "solution": "def add(a, b):\n    return a + b\n",
        "entry_point": "add",
        "tests": "assert add(1, 2) == 3\nassert add(10, -4) == 6\nassert add(0, 0) == 0\n",
    },
    {
        "question": "Write double(x). Example: assert double(4) == 8",
        "solution": "def double(x):\n    return 2 * x\n",
        "entry_point": "double",
        "tests": "assert double(4) == 8\nassert double(-3) == -6\nassert double(21) == 42\n",
    },
]


def make_task(tmp_path: Path, rewards: list[dict], rows: list[dict] = ROWS, **options):
    """The weak-rewards task (``support.tasks.weak_rewards_task``), loaded."""
    return load_task(weak_rewards_task(tmp_path, rewards, rows, **options))


def audit(task, **kw):
    return run_audit(task, max_prompts=kw.pop("max_prompts", 6), seed=0, **kw)


# -- the built-ins --------------------------------------------------------------------------------
def test_builtin_verifiers_are_not_flagged_on_the_arithmetic_task():
    report = run_audit(load_task(ARITHMETIC), max_prompts=16, seed=0)
    assert [t.verdict for t in report.terms] == ["ok", "ok"], format_table(report)
    assert not report.exploitable_terms and not report.leaky_terms
    assert all(t.prompts == 16 for t in report.terms)


def test_builtin_verifiers_are_not_flagged_with_a_required_think_block(tmp_path):
    task = make_task(
        tmp_path, [{"name": "format", "weight": 0.1}, {"name": "correct", "verifier": "exact"}], think="required"
    )
    report = audit(task)
    assert [t.verdict for t in report.terms] == ["ok", "ok"], format_table(report)


def test_every_answer_exploit_is_not_a_correct_answer_for_exact_match():
    """The library's own premise: what it builds for answer terms is never the right answer."""
    task = load_task(ARITHMETIC)
    report = run_audit(task, max_prompts=4, seed=1)
    for f in report.findings:
        if f.term == "correct":
            assert f.verdict in ("ok", "untested"), f


# -- deliberately weak rewards are flagged ---------------------------------------------------------
def test_unanchored_substring_match_is_exploitable(tmp_path):
    task = make_task(
        tmp_path, [{"name": "format", "weight": 0.1}, {"name": "correct", "verifier": "audit_rewards.substring"}]
    )
    report = audit(task)
    assert report.exploitable_terms == ("correct",)
    for name in ("outside_span", "think_only", "hedge_or", "padding", "hedge_all"):
        assert report.finding("correct", name).verdict == "exploitable", name
    example = report.finding("correct", "outside_span").example
    assert example is not None and example.score == example.correct_score == 1.0 and example.wrong_score == 0.0


def test_length_blind_reward_is_won_by_a_long_hedge(tmp_path):
    task = make_task(tmp_path, [{"name": "correct", "verifier": "audit_rewards.any_number"}])
    report = audit(task)
    finding = report.finding("correct", "hedge_all")
    assert finding.verdict == "exploitable" and finding.hits == len(ROWS)
    assert "longer than the generation budget" in finding.example.detail


def test_schema_check_that_allows_extra_keys_is_flagged(tmp_path):
    task = make_task(tmp_path, [{"name": "json", "verifier": "audit_rewards.lax_schema"}], JSON_ROWS, answer="expected")
    report = audit(task)
    assert report.exploitable_terms == ("json",)
    assert report.finding("json", "json_extra_keys").verdict == "exploitable"
    assert report.finding("json", "json_missing_keys").verdict == "ok"
    assert report.finding("json", "json_wrong_types").verdict == "ok"


def test_strict_json_check_is_not_flagged(tmp_path):
    task = make_task(
        tmp_path, [{"name": "json", "verifier": "audit_rewards.strict_json"}], JSON_ROWS, answer="expected"
    )
    report = audit(task)
    verdicts = {f.exploit: f.verdict for f in report.findings}
    # Without a schema there are no format rules to break; everything else is tried and holds.
    assert verdicts.pop("json_format_rules") == "untested"
    assert set(verdicts.values()) == {"ok"}, format_table(report, show_ok=True)
    assert report.terms[0].prompts == len(JSON_ROWS)


def test_json_check_that_reads_duplicate_keys_is_flagged(tmp_path):
    # The audit missed this before issue 25: {"k": wrong, "k": right} reads as the right object.
    task = make_task(
        tmp_path, [{"name": "json", "verifier": "audit_rewards.last_key_wins_json"}], JSON_ROWS, answer="expected"
    )
    assert audit(task).finding("json", "json_duplicate_keys").verdict == "exploitable"


def test_code_reward_that_trusts_the_exit_code_is_flagged(tmp_path):
    task = make_task(tmp_path, [{"name": "tests", "verifier": "audit_rewards.exit_code"}], CODE_ROWS, answer="solution")
    report = audit(task)
    assert report.exploitable_terms == ("tests",)
    for name in ("early_exit", "always_equal", "patched_asserts", "read_tests"):
        assert report.finding("tests", name).verdict == "exploitable", name
    # Hidden tests beat a lookup table of the visible one, even for this weak reward.
    assert report.finding("tests", "hardcode_visible").verdict == "ok"


def test_code_reward_that_compares_outputs_on_the_trusted_side_is_not_flagged(tmp_path):
    task = make_task(
        tmp_path, [{"name": "tests", "verifier": "audit_rewards.trusted_compare"}], CODE_ROWS, answer="solution"
    )
    report = audit(task)
    verdicts = {f.exploit: f.verdict for f in report.findings}
    assert set(verdicts.values()) == {"ok"}, format_table(report, show_ok=True)


def test_format_term_that_looks_for_any_tag_is_flagged(tmp_path):
    task = make_task(tmp_path, [{"name": "format", "verifier": "audit_rewards.has_tag"}])
    report = audit(task)
    for name in ("repeated_blocks", "empty_span", "tags_only", "span_in_think"):
        assert report.finding("format", name).verdict == "exploitable", name


def test_hedge_over_spans_is_exploitable_only_when_any_span_counts(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    any_task = make_task(tmp_path / "a", [{"name": "c", "verifier": "audit_rewards.any_span"}], allow_multiple=True)
    last_task = make_task(tmp_path / "b", [{"name": "c", "verifier": "audit_rewards.last_span"}], allow_multiple=True)
    assert audit(any_task).finding("c", "hedge_spans").verdict == "exploitable"
    # "The last span counts" wins only when the right answer happens to come last: a coin flip.
    assert audit(last_task).finding("c", "hedge_spans").verdict == "ok"


def test_missing_ground_truth_scored_as_correct_is_exploitable(tmp_path):
    task = make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.gold_or_one"}])
    report = audit(task)
    assert report.finding("c", "missing_ground_truth").verdict == "exploitable"


def test_missing_ground_truth_scored_as_zero_is_noted_as_a_silent_zero(tmp_path):
    task = make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.silent_zero"}])
    report = audit(task)
    assert report.finding("c", "missing_ground_truth").verdict == "ok"
    assert any("silent zero" in n for n in report.terms[0].notes)


def test_missing_ground_truth_masked_as_undecided_is_not_noted(tmp_path):
    task = make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.anchored"}])
    report = audit(task)
    assert not any("silent zero" in n for n in report.terms[0].notes)


def test_length_term_that_rewards_length_is_exploitable(tmp_path):
    task = make_task(tmp_path, [{"name": "len", "verifier": "audit_rewards.length_bonus"}])
    report = audit(task)
    assert report.finding("len", "max_length").verdict == "exploitable"
    assert report.finding("len", "repetition").verdict == "exploitable"


def test_length_term_that_ignores_length_is_noted_but_not_exploitable(tmp_path):
    task = make_task(tmp_path, [{"name": "len", "verifier": "audit_rewards.length_ignored"}])
    report = audit(task)
    assert report.finding("len", "max_length").verdict == "ok"
    assert any("does not push against it" in n for n in report.terms[0].notes)
    assert report.terms[0].prompts == len(ROWS)


def test_overlong_penalty_is_not_flagged(tmp_path):
    task = make_task(tmp_path, [{"name": "len", "verifier": "audit_rewards.overlong_penalty"}])
    report = audit(task)
    assert report.finding("len", "max_length").verdict == "ok"
    assert report.finding("len", "repetition").verdict == "ok"


def test_term_that_cannot_tell_right_from_wrong_is_untested_not_ok(tmp_path):
    task = make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.constant"}])
    report = audit(task)
    assert report.finding("c", "hedge_or").verdict == "untested"
    assert any("did not outscore the wrong one" in n for n in report.terms[0].notes)


# -- a user's reward from a dotted path --------------------------------------------------------------
def test_dotted_path_reward_is_audited_like_the_builtin_it_mirrors(tmp_path):
    task = make_task(
        tmp_path, [{"name": "builtin", "verifier": "exact"}, {"name": "mine", "verifier": "audit_rewards.anchored"}]
    )
    report = audit(task)
    builtin = {f.exploit: f.verdict for f in report.findings if f.term == "builtin"}
    mine = {f.exploit: f.verdict for f in report.findings if f.term == "mine"}
    assert set(mine) >= set(builtin)  # custom terms also get the length exploits
    assert all(mine[k] == builtin[k] for k in builtin), (builtin, mine)
    assert report.terms[1].kind == "custom" and report.terms[1].verifier == "audit_rewards.anchored"


# -- the report ---------------------------------------------------------------------------------------
def test_report_json_round_trips(tmp_path):
    task = make_task(tmp_path, [{"name": "correct", "verifier": "audit_rewards.substring"}])
    report = audit(task)
    data = json.loads(json.dumps(report.to_json()))
    assert data["exploitable_terms"] == ["correct"]
    assert AuditReport.from_json(data) == report


def test_table_names_the_exploit_and_shows_an_example(tmp_path):
    task = make_task(tmp_path, [{"name": "correct", "verifier": "audit_rewards.substring"}])
    table = format_table(audit(task))
    assert "outside_span" in table and "e.g." in table and "EXPLOITABLE: correct" in table


def test_unknown_exploit_name_is_a_config_error():
    from rlvr.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown exploit"):
        run_audit(load_task(ARITHMETIC), exploits=["nope"])


def test_every_exploit_declares_known_target_kinds():
    kinds = {"format", "answer", "json", "tool_call", "code", "length", "judge", "custom"}
    for e in EXPLOITS.values():
        assert e.targets and e.targets <= kinds, e.name


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_wrong_integer_answer_is_unrelated_to_the_right_one(n):
    wrong = perturb(str(n))
    assert unrelated(wrong, str(n)) and wrong != str(n)


@given(st.text(alphabet="abcxyz0123456789 ", min_size=1, max_size=8).filter(lambda s: s.strip()))
def test_wrong_text_answer_is_unrelated_to_the_right_one(gold):
    assert unrelated(perturb(gold, ("a", "b", gold)), gold)


def test_exact_match_rejects_a_homoglyph_near_miss():
    """The confusables exploit's near-miss really differs from the answer."""
    v = ExactMatch(AnswerFormat(), normalize=["nfkc"]).verify(Sample("<answer>9S</answer>", {"answer": "95"}))
    assert v.outcome is Outcome.WRONG


# -- the command ----------------------------------------------------------------------------------------
def test_cli_help_works(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["audit", "--help"])
    assert exc.value.code == 0 and "--max-prompts" in capsys.readouterr().out


def test_cli_bad_max_prompts_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["audit", str(ARITHMETIC), "--max-prompts", "0"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "--max-prompts" in err


def test_cli_missing_task_file_is_one_line_and_exit_2(capsys, tmp_path):
    assert main(["audit", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such task file" in err


def test_cli_exits_zero_on_a_sound_task_and_prints_json(capsys):
    assert main(["audit", str(ARITHMETIC), "--json", "--max-prompts", "4"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["exploitable_terms"] == [] and {t["name"] for t in data["terms"]} == {"format", "correct"}


def test_cli_exits_non_zero_when_a_term_is_exploitable(capsys, tmp_path):
    make_task(tmp_path, [{"name": "correct", "verifier": "audit_rewards.substring"}])
    assert main(["audit", str(tmp_path / "task.yaml")]) == 1
    assert "EXPLOITABLE: correct" in capsys.readouterr().out


def test_exploits_that_end_in_error_are_charged_not_masked_when_the_gold_decides(tmp_path):
    """A verifier that errors on everything but the baselines (a broken sandbox, say): in
    training each such attempt is charged to the answer (rlvr.rewards.fault: the gold alone is
    decided), so it earns the wrong answer's 0 and no mask; the audit scores it the same way."""
    task = make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.errors_on_exploits"}])
    finding = audit(task).finding("c", "hedge_or")
    assert finding.masked == 0 and finding.hits == 0 and finding.verdict != "exploitable"


def test_missing_ground_truth_masked_as_undecided_is_ok(tmp_path):
    task = make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.anchored"}])
    assert audit(task).finding("c", "missing_ground_truth").verdict == "ok"


# -- the built-in math and unit_tests verifiers on small tasks of their kind ---------------------------
MATH_ROWS = [
    {"question": "What is 37+58?", "answer": "95"},
    {"question": "Simplify 2/4.", "answer": "\\frac{1}{2}"},
    {"question": "What is sqrt(18)?", "answer": "3\\sqrt{2}"},
    {"question": "Expand (x+1)^2.", "answer": "x^2+2x+1"},
    {"question": "What is 1/8 as a decimal?", "answer": "0.125"},
]


def test_builtin_math_verifier_is_not_flagged_on_a_math_task(tmp_path):
    task = make_task(tmp_path, [{"name": "format", "weight": 0.1}, {"name": "correct", "verifier": "math"}], MATH_ROWS)
    report = audit(task)
    assert [t.verdict for t in report.terms] == ["ok", "ok"], format_table(report)
    assert report.terms[1].prompts == len(MATH_ROWS)


def test_builtin_unit_tests_verifier_is_not_flagged_on_a_code_task(tmp_path):
    rows = [{**r, "answer": r["tests"]} for r in CODE_ROWS]
    task = make_task(tmp_path, [{"name": "tests", "verifier": "unit_tests"}], rows)
    # code_in_think has its own test below (a known hole in rewards/code.py).
    report = audit(task, exploits=[e for e in EXPLOITS if e != "code_in_think"])
    assert report.terms[0].verdict == "ok", format_table(report, show_ok=True)
    assert report.terms[0].prompts == len(CODE_ROWS)
    # Every code exploit was decided (the sandbox ran it), none just errored out.
    assert all(f.verdict == "ok" and f.undecided == 0 for f in report.findings), format_table(report, show_ok=True)


def test_builtin_unit_tests_verifier_ignores_code_inside_the_think_block(tmp_path):
    rows = [{**r, "answer": r["tests"]} for r in CODE_ROWS]
    task = make_task(tmp_path, [{"name": "tests", "verifier": "unit_tests"}], rows)
    assert audit(task, exploits=["code_in_think"]).finding("tests", "code_in_think").verdict == "ok"


def test_code_reward_that_reads_code_inside_the_think_block_is_flagged(tmp_path):
    task = make_task(
        tmp_path, [{"name": "tests", "verifier": "audit_rewards.think_blind_compare"}], CODE_ROWS, answer="solution"
    )
    assert audit(task, exploits=["code_in_think"]).finding("tests", "code_in_think").verdict == "exploitable"


def test_builtin_unit_tests_verifier_is_not_flagged_on_stdio_tests(tmp_path):
    rows = [
        {
            "question": "Read two ints, print their sum. Example input: 1 2",
            "solution": "a, b = map(int, input().split())\nprint(a + b)\n",
            "answer": json.dumps([{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}]),
        },
        {
            "question": "Read a word, print it upper-cased.",
            "solution": "print(input().upper())\n",
            "answer": json.dumps([{"input": "abc\n", "output": "ABC\n"}, {"input": "Hi\n", "output": "HI\n"}]),
        },
    ]
    task = make_task(tmp_path, [{"name": "tests", "verifier": "unit_tests"}], rows)
    report = audit(task, exploits=[e for e in EXPLOITS if e != "code_in_think"])
    assert report.terms[0].verdict == "ok" and report.terms[0].prompts == 2, format_table(report, show_ok=True)
    assert report.finding("tests", "early_exit").verdict == "ok"


def test_judge_that_believes_a_note_to_the_grader_is_exploitable(tmp_path):
    task = make_task(tmp_path, [{"name": "judge", "verifier": "audit_rewards.gullible_judge"}])
    report = audit(task)
    assert report.terms[0].kind == "judge"
    assert report.finding("judge", "prompt_injection").verdict == "exploitable"


# -- the built-in JSON, tool-call and length verifiers on small tasks of their kind --------------------
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "admin": {"type": "boolean"}},
    "required": ["name", "age"],
}
TOOLS = [
    {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
    {
        "name": "send_mail",
        "parameters": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
            "required": ["to", "body"],
        },
    },
]
CALL_ROWS = [
    {
        "question": "Weather in Paris for 3 days?",
        "answer": "-",
        "tool_call": json.dumps({"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}),
    },
    {
        "question": "Mail bob: hi",
        "answer": "-",
        "tool_call": json.dumps({"name": "send_mail", "arguments": {"to": "bob", "body": "hi"}}),
    },
]


def test_builtin_json_schema_verifier_is_not_flagged(tmp_path):
    # The answer column holds an example object with an optional key: leaving that key out is
    # not a hack for a schema term, and the audit must not say it is.
    rows = [
        {
            "question": "Ada?",
            "answer": json.dumps({"name": "Ada", "age": 36, "admin": True}),
            "schema": json.dumps(PERSON),
        },
        {"question": "Bob?", "answer": "see the schema", "schema": json.dumps(PERSON)},
    ]
    task = make_task(
        tmp_path,
        [
            {"name": "format", "weight": 0.1},
            {"name": "schema", "verifier": "json_schema", "options": {"schema_column": "schema"}},
        ],
        rows,
    )
    report = audit(task)
    assert [t.verdict for t in report.terms] == ["ok", "ok"], format_table(report, show_ok=True)
    assert report.terms[1].prompts == 2  # the second row is audited with an instance of the schema
    assert report.finding("schema", "json_missing_keys").prompts == 2


def test_builtin_json_schema_with_extra_keys_allowed_is_flagged(tmp_path):
    rows = [{"question": "Ada?", "answer": json.dumps({"name": "Ada", "age": 36})}]
    task = make_task(
        tmp_path,
        [{"name": "schema", "verifier": "json_schema", "options": {"schema": PERSON, "extra_keys": True}}],
        rows,
    )
    report = audit(task)
    assert report.finding("schema", "json_extra_keys").verdict == "exploitable"
    assert report.finding("schema", "json_wrong_types").verdict == "ok"


def test_builtin_tool_call_verifier_is_not_flagged(tmp_path):
    task = make_task(tmp_path, [{"name": "call", "verifier": "tool_call", "options": {"tools": TOOLS}}], CALL_ROWS)
    report = audit(task)
    assert report.terms[0].verdict == "ok" and report.terms[0].prompts == 2, format_table(report, show_ok=True)


def test_builtin_tool_call_without_expected_calls_is_not_flagged(tmp_path):
    task = make_task(
        tmp_path,
        [{"name": "call", "verifier": "tool_call", "options": {"tools": TOOLS, "expected_column": None}}],
        CALL_ROWS,
    )
    report = audit(task)
    assert report.terms[0].verdict == "ok" and report.terms[0].prompts == 2, format_table(report, show_ok=True)


def test_builtin_tool_call_with_extra_arguments_allowed_is_flagged(tmp_path):
    tools = [{**t, "parameters": {**t["parameters"], "additionalProperties": True}} for t in TOOLS]
    task = make_task(
        tmp_path,
        [{"name": "call", "verifier": "tool_call", "options": {"tools": tools, "extra_arguments": True}}],
        CALL_ROWS,
    )
    assert audit(task).finding("call", "call_extra_keys").verdict == "exploitable"


def test_builtin_length_terms_are_not_exploitable(tmp_path):
    rewards = [
        {"name": "correct", "verifier": "exact"},
        {"name": "overlong", "verifier": "overlong", "options": {"max_completion_length": 64}},
        {"name": "budget", "verifier": "length_penalty", "options": {"budget": 32}},
        {"name": "repetition", "verifier": "repetition"},
    ]
    report = audit(make_task(tmp_path, rewards, budget=64))
    assert not report.exploitable_terms, format_table(report, show_ok=True)
    # The overlong and budget terms really penalise the maximum length.
    for term in ("overlong", "budget"):
        f = report.finding(term, "max_length")
        assert f.verdict == "ok" and f.ties == 0 and f.example.score < 0, f
    assert report.finding("repetition", "repetition").example.score < 0


@pytest.mark.parametrize("continuation", [False, True])
def test_every_code_exploit_is_valid_python_so_it_fails_for_its_trick_not_a_syntax_error(continuation):
    import ast

    from rlvr.audit.exploits import CODE_EXPLOITS
    from rlvr.audit.specs import spec_for
    from rlvr.audit.types import Context
    from rlvr.rewards import Reads

    # what a unit_tests term declares it reads
    reads = Reads(
        answer="test", tests="test", entry_point_column="entry_point", prefix_column="prompt" if continuation else None
    )

    prompt = 'def add(a, b):\n    """Add. Example: assert add(1, 2) == 3"""\n'
    row = {
        "prompt": prompt,
        "entry_point": "add",
        "test": "assert add(1, 2) == 3\nassert add(2, 2) == 4\n",
        "solution": "    return a + b\n" if continuation else "def add(a, b):\n    return a + b\n",
    }
    spec = spec_for("code", row, "test", reads)
    ctx = Context(prompt=prompt, row=row, fmt=AnswerFormat(), gold=None, wrong=None, structured=spec, wrap=lambda s: s)
    built = 0
    for ex in CODE_EXPLOITS:
        if ex.name == "code_in_think":  # its trick is the think block around valid code
            continue
        for attempt in ex.build(ctx):
            for code in attempt.completions:
                ast.parse((prompt if continuation else "") + code)
                built += 1
    assert built >= 10


def test_restating_a_multiple_choice_question_beats_a_substring_match(tmp_path):
    rows = [{"question": f"Which is prime? (A) {a} (B) {b}", "answer": str(b)} for a, b in [(4, 7), (9, 11), (15, 13)]]
    task = make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.substring"}], rows)
    r = audit(task)
    assert r.finding("c", "restate_prompt").verdict == "exploitable", format_table(r, show_ok=True)


def test_chat_prompts_are_restated_from_the_user_message(tmp_path):
    rows = [{"question": f"Which is prime? (A) {a} (B) {b}", "answer": str(b)} for a, b in [(4, 7), (9, 11)]]
    task = make_task(tmp_path, [{"name": "c", "verifier": "audit_rewards.substring"}], rows)
    task = task.with_overrides(prompt=type(task.prompt)(system="Answer in <answer> tags.", user="{question}"))
    finding = audit(task).finding("c", "restate_prompt")
    assert finding.verdict == "exploitable"
    assert finding.example.completion.startswith("Which is prime?")


@pytest.mark.parametrize("think", ["none", "optional", "required", "prefilled"])
@pytest.mark.parametrize("style", ["tags", "boxed"])
def test_builtin_format_and_exact_are_not_flagged_under_any_answer_format(tmp_path, think, style):
    import dataclasses

    task = make_task(
        tmp_path, [{"name": "format", "weight": 0.1}, {"name": "correct", "verifier": "exact"}], think=think
    )
    task = task.with_overrides(answer=dataclasses.replace(task.answer, style=style))
    report = audit(task)
    assert [(t.verdict, t.prompts) for t in report.terms] == [("ok", len(ROWS))] * 2, format_table(report)


def test_partial_credit_for_hardcoded_visible_tests_is_leaky(tmp_path):
    rows = [{**r, "answer": r["tests"]} for r in CODE_ROWS]
    task = make_task(tmp_path, [{"name": "tests", "verifier": "unit_tests", "options": {"partial_credit": True}}], rows)
    report = audit(task, exploits=[e for e in EXPLOITS if e != "code_in_think"])
    finding = report.finding("tests", "hardcode_visible")
    assert finding.verdict == "leaky" and 0 < finding.relative_max < 1
    assert report.leaky_terms == ("tests",) and not report.exploitable_terms


def test_weight_zero_term_is_reported_but_not_counted_as_exploitable(tmp_path):
    task = make_task(
        tmp_path,
        [
            {"name": "correct", "verifier": "exact"},
            {"name": "logged", "verifier": "audit_rewards.substring", "weight": 0},
        ],
    )
    report = audit(task)
    assert report.terms[1].verdict == "exploitable" and report.exploitable_terms == ()


def test_negative_weight_term_is_judged_by_the_reward_it_gives(tmp_path):
    # ``hedged`` scores hedges and wrong answers 1, right answers 0: under weight -1 it is a
    # correctness reward that hedging does not beat; under weight +1 it pays for being wrong and
    # has no baseline to audit against.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    minus = audit(make_task(tmp_path / "a", [{"name": "hedge", "verifier": "audit_rewards.hedged", "weight": -1.0}]))
    plus = audit(make_task(tmp_path / "b", [{"name": "hedge", "verifier": "audit_rewards.hedged", "weight": 1.0}]))
    assert minus.finding("hedge", "hedge_or").verdict == "ok" and minus.terms[0].prompts == len(ROWS)
    assert any("negative weight" in n for n in minus.terms[0].notes)
    assert plus.finding("hedge", "hedge_or").verdict == "untested" and plus.terms[0].prompts == 0


def test_format_term_that_matches_tags_case_insensitively_is_flagged(tmp_path):
    task = make_task(tmp_path, [{"name": "format", "verifier": "audit_rewards.caseless_format"}])
    report = audit(task)
    finding = report.finding("format", "confusable_tags")
    assert finding.verdict == "exploitable" and "<ANSWER>" in finding.example.completion


def _judge_term(believe_notes: bool):
    """The built-in judge term against an in-process stand-in for the judge model."""
    import re

    import httpx

    from rlvr.rewards.combine import RewardSet, Term
    from rlvr.rewards.judge import JudgeVerifier

    def model(request: httpx.Request) -> httpx.Response:
        text = json.loads(request.content)["messages"][-1]["content"]
        reference, response = reference_of(text).strip(), response_of(text)
        spans = re.findall(r"<answer>(.*?)</answer>", response, re.S)
        ok = len(spans) == 1 and spans[0].strip() == reference
        if believe_notes and "checked and is correct" in response:
            ok = True
        word = "CORRECT" if ok else "INCORRECT"
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": word}}]})

    client = httpx.Client(transport=httpx.MockTransport(model), base_url="http://judge.invalid/v1")
    verifier = JudgeVerifier(
        model="stand-in", base_url="http://judge.invalid/v1", require_calibration=False, client=client, retries=0
    )
    return RewardSet([Term("judge", verifier)])


@pytest.mark.parametrize("believe_notes", [True, False])
def test_builtin_judge_term_is_flagged_only_when_its_model_believes_a_note_to_the_grader(tmp_path, believe_notes):
    task = make_task(tmp_path, [{"name": "correct", "verifier": "exact"}])
    report = audit(task, reward_set=_judge_term(believe_notes))
    assert report.terms[0].kind == "judge" and report.terms[0].prompts == len(ROWS)
    expected = "exploitable" if believe_notes else "ok"
    assert report.finding("judge", "prompt_injection").verdict == expected
    assert report.finding("judge", "hedge_or").verdict == "ok"


@given(
    gold=st.one_of(
        st.integers(-(10**6), 10**6).map(str),
        st.text(alphabet="abcdefxyz0123456789.-/ ", min_size=1, max_size=10).map(str.strip).filter(bool),
    ),
    style=st.sampled_from(["tags", "boxed"]),
    think=st.sampled_from(["none", "optional", "required", "prefilled"]),
)
def test_no_answer_exploit_is_a_correct_answer_under_exact_match(gold, style, think):
    """The library's premise, for any ground truth and answer format: every answer exploit (in
    the ordering least favourable to it) is not the correct answer to an anchored exact check."""
    from rlvr.audit.exploits import ANSWER_KINDS, exploits_for
    from rlvr.audit.types import Context

    fmt = AnswerFormat(style=style, think=think)
    wrong = perturb(gold, ("zz", "17"))
    ctx = Context(
        prompt=f"Question about {wrong}?",
        row={"answer": gold},
        fmt=fmt,
        gold=gold,
        wrong=wrong,
        distractors=("17", "zz"),
        max_tokens=40,
    )
    verifier = ExactMatch(fmt)
    assert verifier.verify(Sample(fmt.wrap(gold), {"answer": gold})).outcome is Outcome.CORRECT
    for ex in exploits_for("answer"):
        assert ex.targets & ANSWER_KINDS
        for attempt in ex.build(ctx):
            row = attempt.row if attempt.row is not None else {"answer": gold}
            outcomes = [verifier.verify(Sample(c, row)).outcome for c in attempt.completions]
            assert not all(o is Outcome.CORRECT for o in outcomes), (ex.name, attempt)


@given(
    gold=st.one_of(
        st.integers(-(10**6), 10**6).map(str),
        st.text(alphabet="abcxyz0123456789 ", min_size=1, max_size=8).map(str.strip).filter(bool),
    ),
    style=st.sampled_from(["tags", "boxed"]),
    think=st.sampled_from(["none", "optional", "required", "prefilled"]),
)
def test_no_format_exploit_is_well_formed_under_the_format_term(gold, style, think):
    from rlvr.audit.exploits import exploits_for
    from rlvr.audit.types import Context
    from rlvr.rewards.format import FormatVerifier

    fmt = AnswerFormat(style=style, think=think)
    ctx = Context(prompt="q", row={"answer": gold}, fmt=fmt, gold=gold, wrong=perturb(gold), max_tokens=40)
    verifier = FormatVerifier(fmt)
    assert verifier.verify(Sample(fmt.wrap(gold))).outcome is Outcome.CORRECT
    for ex in exploits_for("format"):
        for attempt in ex.build(ctx):
            assert not all(verifier.verify(Sample(c)).outcome is Outcome.CORRECT for c in attempt.completions), (
                ex.name,
                attempt,
            )


def test_cli_unknown_term_is_one_line_naming_the_terms(capsys):
    assert main(["audit", str(ARITHMETIC), "--term", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown term(s) nope" in err and "format, correct" in err


def test_cli_runs_only_the_named_term_and_exploit(capsys):
    assert (
        main(["audit", str(ARITHMETIC), "--json", "--term", "correct", "--exploit", "hedge_or", "--max-prompts", "3"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert [(f["term"], f["exploit"], f["prompts"]) for f in data["findings"]] == [("correct", "hedge_or", 3)]


def test_an_exploit_that_fails_to_build_is_noted_and_the_rest_still_run(monkeypatch):
    from rlvr.audit.exploits import ANSWER_KINDS
    from rlvr.audit.types import Exploit

    def boom(ctx):
        raise ValueError("odd row")

    monkeypatch.setitem(EXPLOITS, "boom", Exploit("boom", ANSWER_KINDS, "raises", boom))
    report = run_audit(load_task(ARITHMETIC), max_prompts=3, exploits=["boom", "hedge_or"], terms=["correct"])
    assert report.finding("correct", "boom").verdict == "untested"
    assert report.finding("correct", "hedge_or").verdict == "ok"
    assert any("boom could not be built" in n and "odd row" in n for n in report.terms[0].notes)


def test_audit_counts_rows_whose_tests_the_sandbox_cannot_run(tmp_path):
    weaker_row = {**CODE_ROWS[0], "tests": "import numpy\nassert add(1, 2) == 3\n"}
    rows = [{**r, "answer": r["tests"]} for r in (weaker_row, CODE_ROWS[1])]
    task = make_task(tmp_path, [{"name": "tests", "verifier": "unit_tests"}], rows)
    (term,) = audit(task, exploits=["code_in_think"]).terms
    assert any(
        "1 of 2 prompt(s) have tests the sandbox cannot run" in n and "error (masked)" in n for n in term.notes
    ), term.notes


def test_audit_has_no_weaker_note_when_every_test_can_run(tmp_path):
    rows = [{**r, "answer": r["tests"]} for r in CODE_ROWS]
    task = make_task(tmp_path, [{"name": "tests", "verifier": "unit_tests"}], rows)
    (term,) = audit(task, exploits=["code_in_think"]).terms
    assert not any("cannot run" in n for n in term.notes), term.notes
