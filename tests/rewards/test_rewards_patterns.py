"""Linear-time patterns (issue 25, item 1): every pattern applied to untrusted text runs on RE2 or
is a hand scan, and the work on the inputs that were quadratic is bounded by their size.

Work is counted, never timed: characters handed to RE2 (``rlvr.rewards.rules.patterns.scanned``), or
characters a hand scan reads (a ``str`` subclass that counts its reads)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlvr
from rlvr.rewards import Outcome, Sample
from rlvr.rewards.format import AnswerFormat
from rlvr.rewards.jsontext import find_json
from rlvr.rewards.rules.patterns import compile_linear, reset_scanned, scanned
from rlvr.serve.scoring import strip_trailing_special

SRC = Path(rlvr.__file__).parent
# Every module that imports a backtracking engine (Python's ``re`` or ``regex``), and why that is
# safe. A module not listed here may apply patterns to untrusted text only through
# ``rlvr.rewards.rules.patterns`` (RE2) or by hand scans.
ALLOWED_BACKTRACKING = {
    "rewards/rules/jsonrules.py": "a task author's own JSON Schema pattern that RE2 refuses (lookaround, "
    "backreferences) runs on `regex` under pattern_timeout per match; running out of time is a wrong answer",
    **{
        f"rewards/math/{name}.py": "the math package (issue 25 part B's): not yet reviewed by this test's owner; "
        "its own tests bound its worst cases"
        for name in ("core", "fastlex", "forms", "readings", "scalar", "text", "verifier")
    },
}
SCANNED_PACKAGES = ("rewards", "serve", "audit")
SCANNED_FILES = ("cli/judge.py", "cli/score.py", "cli/audit.py")


def _modules() -> list[Path]:
    out = [p for pkg in SCANNED_PACKAGES for p in sorted((SRC / pkg).rglob("*.py"))]
    return out + [SRC / f for f in SCANNED_FILES]


def _engines(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & {"re", "regex", "re2"}


def test_no_module_applies_a_backtracking_pattern_without_a_stated_reason():
    offenders = {}
    for path in _modules():
        rel = path.relative_to(SRC).as_posix()
        engines = _engines(path)
        if "re2" in engines and rel != "rewards/rules/patterns.py":
            offenders[rel] = "imports re2 directly (use rlvr.rewards.rules.patterns)"
        if engines & {"re", "regex"} and rel not in ALLOWED_BACKTRACKING:
            offenders[rel] = f"imports {sorted(engines & {'re', 'regex'})}"
    assert not offenders, f"use rlvr.rewards.rules.patterns (RE2) or a hand scan: {offenders}"


def test_the_allow_list_names_only_modules_that_exist_and_still_need_it():
    for rel in ALLOWED_BACKTRACKING:
        path = SRC / rel
        if not path.exists():  # the math package is being reorganised: a vanished name is fine
            continue
        assert _engines(path) & {"re", "regex"}, f"{rel} no longer needs its allow-list entry"


def test_the_structure_test_sees_an_import_of_re(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import re\nfrom regex import search\n\ndef f():\n    import re2\n")
    assert _engines(probe) == {"re", "regex", "re2"}


def test_a_pattern_re2_cannot_run_in_linear_time_is_refused():
    with pytest.raises(ValueError, match="not linear-time"):
        compile_linear(r"(a)\1")
    with pytest.raises(ValueError, match="not linear-time"):
        compile_linear(r"(?<!x)y")


# -- the named quadratic cases, bounded by input size ----------------------------------------------
def _work(fn, *args):
    reset_scanned()
    result = fn(*args)
    return result, scanned()


@pytest.mark.parametrize("n", [20_000, 80_000])
def test_a_fence_followed_by_80k_spaces_costs_work_linear_in_its_size(n):
    text = "```" + " " * n
    (got, span, problem), work = _work(find_json, text, AnswerFormat(), 10**7)
    assert got is None and problem
    assert work <= 3 * len(text)


@pytest.mark.parametrize("n", [2_000, 8_000])
def test_thousands_of_unclosed_tool_call_tags_cost_work_linear_in_their_size(n):
    text = "<tool_call>{" * n
    (got, span, problem), work = _work(find_json, text, AnswerFormat(), 10**7, True)
    assert got is None and problem
    assert work <= 3 * len(text)


def test_the_json_verifiers_decide_the_quadratic_inputs_as_wrong_or_unparseable_not_masked():
    from rlvr.rewards.schema import JsonSchemaVerifier, ToolCallVerifier

    schema = JsonSchemaVerifier(schema={"type": "object"}, timeout=None)
    tool = ToolCallVerifier([{"name": "f", "parameters": {"type": "object"}}], expected_column=None, timeout=None)
    for v, text in ((schema, "```" + " " * 80_000), (tool, "<tool_call>{" * 8_000)):
        assert v.verify(Sample(text)).outcome in (Outcome.UNPARSEABLE, Outcome.WRONG)


class Counted(str):
    """A string that counts the characters read through indexing and ``startswith``."""

    reads = 0

    def __getitem__(self, key):  # type: ignore[override]
        value = str.__getitem__(self, key)
        Counted.reads += len(value)
        return value

    def startswith(self, prefix, start=0, *rest):  # type: ignore[override]
        Counted.reads += len(prefix) if isinstance(prefix, str) else max(map(len, prefix))
        return str.startswith(self, prefix, start, *rest)


@pytest.mark.parametrize("n", [10_000, 100_000])
def test_the_servers_trailing_token_strip_reads_each_character_a_bounded_number_of_times(n):
    # The old pattern backtracked over every whitespace run: 13 s for 60 KB on the event loop.
    for body in (" " * n + "x", "a" + " \t" * n + "<|im_end|>", "<|im_end|>" * (n // 10) + " " * n):
        Counted.reads = 0
        strip_trailing_special(Counted(body))
        assert Counted.reads <= 6 * len(body) + 100


_OLD_TRAILING = re.compile(r"(?:\s*(?:<\|[A-Za-z0-9_]+\|>|</s>|<eos>|<end_of_turn>))+\s*$")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["<|im_end|>", "</s>", "<eos>", "<end_of_turn>", " ", "\n", "x", "<|", "|>", "_", "<|a b|>"]),
        max_size=12,
    )
)
def test_the_trailing_token_strip_removes_what_the_old_pattern_removed(parts):
    text = "".join(parts)
    assert strip_trailing_special(text) == _OLD_TRAILING.sub("", text)


_OLD_NUMBER = re.compile(r"(?<![\d.,_\u00a0\u2009\u202f])\d+(?:[,_ \u00a0\u2009\u202f]\d+)+(?![\d])")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789,._ \u00a0x", max_size=30))
def test_the_thousands_scan_finds_the_runs_the_old_pattern_found(text):
    from rlvr.rewards.exact import _numbers

    assert _numbers(text) == [m.span() for m in _OLD_NUMBER.finditer(text)]
