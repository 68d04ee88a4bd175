"""Tools: schemas read from signature and docstring, arguments checked before a call, timeouts,
the search collection, and the ``environment:`` section's one-line problems."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr.episodes import build_toolbox, make_tool, parse_turn, read_environment
from rlvr.episodes.search import read_collection, search_tool
from rlvr.episodes.tools import ToolBox
from rlvr.errors import DataError

TOOLS_PY = '''
import time

def lookup(key: str, exact: bool = True) -> str:
    """Look a key up in the table.

    Args:
        key: The key to look up.
        exact: Whether the key must match exactly.
    """
    return {"a": "1"}.get(key, "none")

def slow(seconds: float) -> str:
    """Sleep.

    Args:
        seconds: How long.
    """
    time.sleep(seconds)
    return "done"

def undocumented(x):
    return x
'''


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    (tmp_path / "docs.jsonl").write_text(
        '{"title": "Norway", "text": "The capital of Norway is Oslo."}\n'
        '{"title": "Peru", "text": "The capital of Peru is Lima."}\n'
        '{"text": "Oslo has a fjord."}\n'
    )
    return tmp_path


def env(task_dir: Path, **raw: object) -> tuple[object, list[str]]:
    spec, problems = read_environment(raw, task_dir, "task.yaml")
    return spec, [str(p) for p in problems]


def test_a_task_tool_schema_comes_from_its_signature_and_docstring(task_dir: Path) -> None:
    spec, problems = env(task_dir, tools=["tools.lookup"])
    assert not problems
    (schema,) = build_toolbox(spec).schemas()  # type: ignore[arg-type]
    fn = schema["function"]
    assert fn["name"] == "lookup" and fn["description"] == "Look a key up in the table."
    assert fn["parameters"]["properties"]["key"] == {"type": "string", "description": "The key to look up."}
    assert fn["parameters"]["required"] == ["key"]


@pytest.mark.parametrize(
    ("raw", "where", "what"),
    [
        ({"tools": ["tools.undocumented"]}, "environment.tools: tools.undocumented", "no JSON schema"),
        ({"tools": ["tools.missing"]}, "environment.tools: tools.missing", "has no 'missing'"),
        ({"tools": ["nofile.fn"]}, "environment.tools: nofile.fn", "no file"),
        ({"tools": ["abacus"]}, "environment.tools: abacus", "unknown built-in tool"),
        ({"tools": ["search"]}, "environment.tools: search", "needs environment.documents"),
        ({"tools": []}, "environment.tools", "non-empty list"),
        ({"tools": ["calculator"], "max_turns": 0}, "environment.max_turns", "at least 1"),
        ({"tools": ["calculator"], "timeout": -1}, "environment.timeout", "above 0"),
        ({"tools": ["calculator"], "tool_error": "loud"}, "environment.tool_error", "one of"),
        ({"tools": ["calculator"], "required": ["search"]}, "environment.required", "not one of the tools"),
        ({"tools": ["calculator"], "terms": {"style": 1}}, "environment.terms.style", "unknown episode term"),
        ({"tools": ["calculator"], "terms": {"required_tools": 1}}, "environment.terms.required_tools", "no tools"),
        ({"tools": ["calculator"], "turns": 3}, "environment.turns", "unknown key"),
    ],
)
def test_each_bad_field_is_one_problem_naming_the_file_and_field(
    task_dir: Path, raw: dict[str, object], where: str, what: str
) -> None:
    spec, problems = env(task_dir, **raw)
    assert spec is None
    assert any(p.startswith(f"task.yaml: {where}") and what in p for p in problems), problems
    assert all("\n" not in p for p in problems)


def test_a_broken_tool_module_is_reported_not_raised(task_dir: Path) -> None:
    (task_dir / "broken.py").write_text("raise RuntimeError('boom')\n")
    _, problems = env(task_dir, tools=["broken.fn"])
    assert any("importing" in p and "RuntimeError: boom" in p for p in problems)


def test_arguments_that_do_not_fit_the_schema_never_reach_the_function(task_dir: Path) -> None:
    calls = []

    def record(n: int) -> str:
        """Record.

        Args:
            n: A number.
        """
        calls.append(n)
        return "ok"

    box = ToolBox([make_tool(record)])
    for args in ({"n": "7"}, {"n": 1, "extra": 2}, {}, ["n", 1], {"n": 1.5}):
        result = box.call("record", args)
        assert result.kind == "invalid" and "bad arguments" in (result.error or "")
    assert box.call("nope", {"n": 1}).kind == "invalid"
    assert calls == []
    assert box.call("record", {"n": 3}).content == "ok" and calls == [3]


def test_a_tool_that_raises_or_hangs_returns_an_error_in_time(task_dir: Path) -> None:
    spec, _ = env(task_dir, tools=["tools.slow", "calculator"], timeout=0.2)
    box = build_toolbox(spec)  # type: ignore[arg-type]
    t0 = time.monotonic()
    hung = box.call("slow", {"seconds": 30})
    assert hung.kind == "timeout" and time.monotonic() - t0 < 10
    failed = box.call("calculator", {"expression": "1/0"})
    assert failed.kind == "failed" and "division by zero" in (failed.error or "")


def test_search_ranks_by_distinct_query_words_and_answers_no_match(task_dir: Path) -> None:
    search = search_tool(read_collection(task_dir / "docs.jsonl"))
    assert search("capital of Peru", k=1) == "[Peru] The capital of Peru is Lima."
    assert search("Oslo fjord").splitlines()[0] == "Oslo has a fjord."
    assert search("zebra") == "no match"
    with pytest.raises(ValueError):
        search("Oslo", k=9)


def test_a_bad_collection_line_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"text": "a"}\n{"title": "x"}\n')
    with pytest.raises(DataError, match=r"d.jsonl: line 2: a document needs a string field 'text'"):
        read_collection(tmp_path / "d.jsonl")


# -- reading a turn's calls ---------------------------------------------------------------------


def test_a_turn_reads_its_calls_and_the_text_around_them() -> None:
    turn = parse_turn('let me see <tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call> ok')
    assert turn.text == "let me see  ok"
    assert [(c.name, c.arguments, c.error) for c in turn.calls] == [("f", {"x": 1}, None)]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('<tool_call>{"name": "f", "name": "g", "arguments": {}}</tool_call>', "duplicate"),
        ('<tool_call>{"name": "f", "arguments": {"x": NaN}}</tool_call>', "not valid JSON"),
        ('<tool_call>{"name": "f"', "without </tool_call>"),
        ("<tool_call>[1]</tool_call>", "JSON object"),
        ('<tool_call>{"arguments": {}}</tool_call>', "string name"),
        ('<tool_call>{"name": "f", "arguments": [1]}</tool_call>', "arguments must be"),
        ('<tool_call>{"name": "f", "arguments": {}, "id": 1}</tool_call>', "unexpected key"),
    ],
)
def test_a_malformed_call_is_read_as_malformed_with_its_reason(text: str, why: str) -> None:
    turn = parse_turn(text)
    assert turn.malformed and why in (turn.calls[-1].error or "")


@given(st.lists(st.sampled_from(["<tool_call>", "</tool_call>", "{", "}", '"name"', ":", "x", " "]), max_size=40))
def test_any_text_parses_into_calls_and_text_without_raising(parts: list[str]) -> None:
    text = "".join(parts)
    turn = parse_turn(text)
    assert len(turn.calls) <= text.count("<tool_call>")
    assert all(c.error or c.name for c in turn.calls)
