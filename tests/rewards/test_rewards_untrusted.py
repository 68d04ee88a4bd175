"""One module for untrusted text (issue 34, rule 2): Unicode properties, not Python's ``str``
defaults, and no other module strips, splits or case-folds completion text."""

from __future__ import annotations

import ast
import json
import sys
import unicodedata
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr import keptrollouts
from rlvr.rewards import AnswerFormat, Outcome, Sample, build_verifier
from rlvr.rewards.combine import RewardSet, Term
from rlvr.rewards.exact import ExactMatch
from rlvr.rewards.format import FormatVerifier
from rlvr.rewards.rules import untrusted

SRC = Path(__file__).resolve().parents[2] / "src" / "rlvr"
# White_Space from PropList.txt (Unicode 15.1), written out independently of the module's table.
PROPLIST_WHITE_SPACE = {*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029}
PROPLIST_WHITE_SPACE |= {0x202F, 0x205F, 0x3000}
SEPARATORS = "\x1c\x1d\x1e\x1f"  # information separators: str.isspace says yes, Unicode says no


def test_white_space_is_exactly_the_unicode_property():
    assert {ord(c) for c in untrusted.WHITE_SPACE} == PROPLIST_WHITE_SPACE


@pytest.mark.parametrize("ch", list(SEPARATORS))
def test_information_separators_are_not_stripped(ch):
    assert ch.isspace() and untrusted.strip(f" Lima{ch} ") == f"Lima{ch}"


@pytest.mark.parametrize("ch", list(SEPARATORS))
def test_an_exact_answer_with_a_trailing_separator_is_wrong(ch):
    for rules in ((), ("whitespace",), ("whitespace", "case")):
        v = ExactMatch(normalize=rules)
        assert v.verify(Sample(f"<answer>Lima{ch}</answer>", {"answer": "Lima"})).outcome is Outcome.WRONG


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_strip_removes_exactly_the_white_space_at_each_end(text):
    out = untrusted.strip(text)
    assert not out or (out[0] not in untrusted.WHITE_SPACE and out[-1] not in untrusted.WHITE_SPACE)
    start = next((i for i, c in enumerate(text) if c not in untrusted.WHITE_SPACE), len(text))
    assert text[start : start + len(out)] == out
    assert all(c in untrusted.WHITE_SPACE for c in text[:start] + text[start + len(out) :])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_words_hold_no_white_space_and_rejoin_to_the_collapsed_text(text):
    ws = untrusted.words(text)
    assert all(w and not any(c in untrusted.WHITE_SPACE for c in w) for w in ws)
    assert untrusted.collapse(text) == " ".join(ws)


def test_kelvin_sign_and_long_s_do_not_case_fold_onto_ascii():
    assert untrusted.fold_case("\u212a") != "k" and untrusted.fold_case("\u017f") != "s"
    assert untrusted.fold_case("\u00df") != "ss" and untrusted.fold_case("\u0130") != "i\u0307"
    assert untrusted.fold_case("ABC \u0394") == "abc \u03b4"  # within a script, folding happens


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=20))
def test_case_folding_never_turns_non_ascii_into_ascii(text):
    folded = untrusted.fold_case(text)
    assert sum(c.isascii() for c in folded) == sum(c.isascii() for c in text)


def test_exact_case_rule_does_not_match_the_kelvin_sign_but_nfkc_does():
    row = {"answer": "k"}
    assert ExactMatch(normalize=["case"]).verify(Sample("<answer>\u212a</answer>", row)).outcome is Outcome.WRONG
    nfkc = ExactMatch(normalize=["case", "nfkc"]).verify(Sample("<answer>\u212a</answer>", row))
    assert nfkc.outcome is Outcome.CORRECT


def test_text_lines_split_at_unicode_line_breaks_only():
    assert untrusted.text_lines("a\u2028b\u2029c\r\nd\x85e\x0bf\x0cg\rh\n") == list("abcdefgh")
    assert untrusted.text_lines("a\x1cb\x1dc\x1ed") == ["a\x1cb\x1dc\x1ed"]  # str.splitlines splits these


def test_jsonl_lines_split_at_newline_only():
    assert untrusted.jsonl_lines('{"a": "x\u2028y\u0085z\rw"}\n{}\n') == ['{"a": "x\u2028y\u0085z\rw"}', "{}"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=10), max_size=6))
def test_jsonl_lines_round_trip_any_json_strings(values):
    text = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in values)
    assert [json.loads(x) for x in untrusted.jsonl_lines(text)] == values


@pytest.mark.parametrize("ch", ["\u2028", "\u2029", "\x85", "\x1c", "\x0b", "\r"])
def test_a_line_break_in_a_completion_never_makes_rollouts_read_raise(tmp_path: Path, ch: str) -> None:
    rs = RewardSet([Term("correct", build_verifier("exact", {"column": "answer"}, AnswerFormat()), 1.0)])
    rec = keptrollouts.Recorder(tmp_path, rs, group_size=2, logging_steps=1)
    fn = rec.wrap(rs.trl_functions())[0]
    text = f"<answer>4</answer>{ch}tail"
    fn(
        prompts=["2+2=", "2+2="],
        completions=[text, text],
        completion_ids=[[1], [1]],
        answer=["4", "4"],
        trainer_state=SimpleNamespace(global_step=0),
    )
    rows = list(keptrollouts.read(tmp_path))
    assert len(rows) == 2 and rows[0]["completion"] == text


def test_the_format_span_keeps_a_trailing_separator_as_part_of_the_answer():
    v = FormatVerifier()
    assert v.verify(Sample("<answer>4\x1f</answer>")).answer == "4\x1f"


def test_width_folding_keeps_superscripts_and_drops_invisibles():
    assert untrusted.fold_width("\uff14\u00b2\u200b") == "4\u00b2"
    assert untrusted.fold_width("\u00bd") == "1/2"


def test_skeleton_reads_cyrillic_and_greek_look_alikes_as_latin():
    assert untrusted.skeleton("W\u0430it, l\u0435t m\u0435 r\u0435c\u03bfmpute") == "wait, let me recompute"
    assert untrusted.skeleton("cafe\u0301  CAFÉ") == "cafe cafe"


def test_the_invisible_set_is_defined_in_this_module_alone():
    names = {"DEFAULT_IGNORABLE", "is_invisible", "strip_invisible", "is_blank", "is_default_ignorable"}
    defined = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = [node] if isinstance(node, ast.FunctionDef) else getattr(node, "targets", [])
            found = {getattr(t, "name", None) or getattr(t, "id", None) for t in targets} & names
            defined += [f"{path.relative_to(SRC)}: {n}" for n in found]
    assert {d.partition(":")[0] for d in defined} == {"rewards/rules/untrusted.py"}, defined


def test_every_white_space_character_is_invisible_and_no_separator_is_kept_as_whitespace():
    assert all(untrusted.is_invisible(c) for c in untrusted.WHITE_SPACE)
    assert untrusted.strip_invisible("a\x1fb c") == "ab c"
    assert all(unicodedata.category(c) == "Cc" for c in SEPARATORS)
    assert sys.maxunicode >= 0x10FFFF


# -- structure: no str defaults on untrusted text outside the module --------------------------------
FORBIDDEN = {"strip", "lstrip", "rstrip", "split", "splitlines", "lower", "casefold"}
NEEDS_ARGS = {"strip", "lstrip", "rstrip", "split"}  # with explicit characters they are fine
SCOPE = ("rewards", "rollouts.py", "keptrollouts.py", "serve")
# Files that may keep Python's defaults, and why. Keep this list short.
ALLOWED = {
    "rewards/rules/untrusted.py": "the module itself",
    "rewards/judgecore.py": "the judge model's own reply and the task's labels (issue 34 rule 4, the judge grammar)",
    "rewards/judgecal.py": "calibration records written by the task author",
    "serve/app.py": "HTTP headers and the bearer token, never a completion",
}


def _violations(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name = node.func.attr
        if name not in FORBIDDEN or isinstance(node.func.value, ast.Constant):
            continue  # a method on a literal ("a b c".split()) reads no untrusted text
        if name in NEEDS_ARGS and (node.args or node.keywords):
            continue
        out.append(f"{path.name}:{node.lineno}: .{name}()")
    return out


def _scope() -> list[Path]:
    files: list[Path] = []
    for part in SCOPE:
        p = SRC / part
        files.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p])
    return files


def test_the_structure_check_finds_a_str_default():
    sample = SRC.parent.parent / "tests" / "rewards" / "test_rewards_untrusted.py"
    found = _violations(sample)  # _kept_for_the_structure_check below
    assert any(".strip()" in v for v in found) and any(".lower()" in v for v in found)


def test_no_module_strips_splits_or_case_folds_untrusted_text_outside_the_untrusted_module():
    found = [v for p in _scope() if str(p.relative_to(SRC)) not in ALLOWED for v in _violations(p)]
    assert found == [], "use rlvr.rewards.rules.untrusted instead of Python's str defaults:\n" + "\n".join(found)


def test_every_allow_listed_file_exists_and_still_needs_its_entry():
    for name in ALLOWED:
        path = SRC / name
        assert path.exists(), name
        assert name == "rewards/rules/untrusted.py" or _violations(path), f"{name} no longer needs its allow-list entry"


def _kept_for_the_structure_check(text: str) -> str:
    return text.strip() + text.lower()
