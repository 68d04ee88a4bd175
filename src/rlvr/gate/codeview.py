"""How the review shows a code sample: each test (or stdin input), what was expected, what the
program gave and the first failure, so the reader can judge the verdict rather than take it.

The ``unit_tests`` verdict carries ``details`` (``rlvr.rewards.code``: one dict per assert or
input: ``kind``, ``test`` or ``input``, ``status`` and, on the first failure, ``got``,
``expected`` and ``error``). A verdict without them (recorded before they existed) falls back to
the row's tests as written. For a code task the answer column usually holds a reference solution:
it is shown as that, apart, never as the "expected answer" -- the tests decide, not a diff
against one solution. A test that calls a function the program does not define is said so in
words (``KeyError: 'f'`` from a HumanEval ``check(candidate)``, ``NameError`` from an assert).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..rewards.base import Verdict

CODE_VERIFIERS = ("unit_tests",)
# Where the tests may be when a verdict has no details (the verifier's default column first).
TEST_COLUMNS = ("tests", "test", "test_list", "test_cases", "input_output")
_KEY = re.compile(r"KeyError: '([A-Za-z_]\w*)'")  # HumanEval's check(candidate): the entry point looked up
_NAME = re.compile(r"NameError: name '([A-Za-z_]\w*)' is not defined")  # an assert calling it by name


@dataclass(frozen=True)
class TestLine:
    """One assert or one stdin input, as the program fared on it."""

    kind: str  # assert | stdio
    test: str  # the assert's source, or the input fed on stdin
    status: str  # passed | failed | not run
    expected: str | None = None  # on the first failure: the expected value or output
    got: str | None = None  # on the first failure: what the program returned or printed
    error: str | None = None  # on the first failure: the exception, in words where we know it


@dataclass(frozen=True)
class CodeView:
    """What the review shows for one code term of one sample."""

    term: str
    summary: str  # the verdict's detail, with a missing entry point said in words
    lines: tuple[TestLine, ...]  # empty when the verdict carries no details
    raw_tests: str | None = None  # the row's tests as written, when there are no details
    reference: str | None = None  # the row's reference solution, if the answer column holds one
    reference_column: str | None = None

    @property
    def counts(self) -> str:
        """``2 passed, 1 failed, 3 not run`` (empty without details)."""
        return lines_text(self.lines)

    @property
    def first_failure(self) -> int | None:
        return next((i for i, t in enumerate(self.lines) if t.status == "failed"), None)


def _entry(row: Mapping[str, Any]) -> str | None:
    value = row.get("entry_point")
    return str(value) if value else None


def plain_error(text: str | None, row: Mapping[str, Any], tests: str = "") -> str | None:
    """``text`` with a function the program does not define named as missing: a ``KeyError`` for
    the row's entry point, or a ``NameError`` for the entry point or a name the tests call
    (``tests``: their source). Any other error is left as it is (a program's own ``KeyError``
    stays one)."""
    if not text:
        return text
    entry = _entry(row)
    key, name = _KEY.search(text), _NAME.search(text)
    found = key if key and key.group(1) == entry else None
    if found is None and name and (name.group(1) == entry or f"{name.group(1)}(" in tests):
        found = name
    if found is None:
        return text
    what = "the entry point the tests call" if found.group(1) == entry else "a function the tests call"
    return f"the program does not define {found.group(1)!r} ({what}; the test stopped with {found.group(0)})"


def code_terms(meta: Mapping[str, Any]) -> set[str]:
    """The terms of the set whose verifier runs unit tests (from the set's recorded terms)."""
    return {str(t.get("name")) for t in meta.get("terms") or () if t.get("verifier") in CODE_VERIFIERS}


def code_view(verdicts: Mapping[str, Verdict], row: Mapping[str, Any], meta: Mapping[str, Any]) -> CodeView | None:
    """The view of the correctness term when it runs code (else the first code term); None for a
    sample no code term judged."""
    terms = code_terms(meta)
    for term, verdict in verdicts.items():
        if any(isinstance(d, Mapping) and d.get("kind") in ("assert", "stdio") for d in verdict.details):
            terms.add(term)
    correct = str(meta.get("correctness_term") or "")
    name = correct if correct in terms else next((t for t in verdicts if t in terms), None)
    if name is None or name not in verdicts:
        return None
    v = verdicts[name]
    column = next((c for c in TEST_COLUMNS if row.get(c) not in (None, "")), None)
    tests = _text(row.get(column)) if column else ""
    lines = tuple(_line(d, row, tests) for d in v.details if isinstance(d, Mapping))
    raw = tests if not lines and column else None
    answer = str(meta.get("answer_column") or "")
    reference = row.get(answer) if answer and answer != column and answer not in TEST_COLUMNS else None
    return CodeView(
        term=name,
        summary=plain_error(v.detail, row, tests) or "",
        lines=lines,
        raw_tests=raw,
        reference=_text(reference) if isinstance(reference, str) and reference.strip() else None,
        reference_column=answer if isinstance(reference, str) and reference.strip() else None,
    )


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, ensure_ascii=False, indent=1)


def _line(d: Mapping[str, Any], row: Mapping[str, Any], tests: str) -> TestLine:
    kind = str(d.get("kind") or "assert")
    test = d.get("test") if kind == "assert" else d.get("input")

    def opt(key: str) -> str | None:
        return None if d.get(key) is None else str(d.get(key))

    return TestLine(
        kind=kind,
        test="" if test is None else str(test),
        status=str(d.get("status") or "not run"),
        expected=opt("expected"),
        got=opt("got"),
        error=plain_error(opt("error"), row, tests),
    )


def _indented(label: str, text: str, width: int = 6) -> list[str]:
    """``label: text`` with every line of a multi-line text kept and indented under it."""
    parts = text.split("\n")
    if text.endswith("\n"):
        parts[-1] = "⏎"  # a trailing newline is part of an output: show that it is there
    return [f"{' ' * width}{label}: {parts[0]}", *(f"{' ' * (width + len(label) + 2)}{p}" for p in parts[1:])]


def terminal_lines(view: CodeView) -> list[str]:
    """The view as the terminal review prints it, newlines kept."""
    out = [f"tests ({view.term}): {view.summary}"]
    first = view.first_failure
    for i, t in enumerate(view.lines):
        mark = {"passed": "✓", "failed": "✗"}.get(t.status, "·")
        head = "input" if t.kind == "stdio" else "test"
        note = "  ← first failure" if i == first else ""
        out += [f"  {mark} {t.status}{note}"]
        out += _indented(head, t.test)
        for label, value in (("expected", t.expected), ("got", t.got), ("error", t.error)):
            if value is not None:
                out += _indented(label, value)
    if view.raw_tests is not None:
        out += ["  (this verdict has no per-test details; the row's tests:)", *_indented("tests", view.raw_tests, 4)]
    if view.reference is not None:
        out += [f"reference solution (column {view.reference_column!r}; for comparison, the tests decide):"]
        out += ["    " + x for x in view.reference.split("\n")]
    return out


def lines_text(lines: Sequence[TestLine]) -> str:
    """A one-line count for a page heading: ``2 passed, 1 failed, 3 not run``."""
    counts: dict[str, int] = {}
    for t in lines:
        counts[t.status] = counts.get(t.status, 0) + 1
    return ", ".join(f"{n} {s}" for s, n in counts.items())
