"""The python tool: model-written code runs as a script in rlvr's sandbox, one fresh program a call."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.episodes import build_toolbox, read_environment
from rlvr.episodes.tools import ToolBox


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> ToolBox:
    spec, problems = read_environment({"tools": ["python"], "timeout": 1}, tmp_path_factory.mktemp("t"), "task.yaml")
    assert spec is not None, problems
    return build_toolbox(spec)


def test_the_tool_returns_what_the_program_prints(box: ToolBox) -> None:
    assert box.call("python", {"code": "print(sum(range(10)))"}).content == "45\n"
    assert box.call("python", {"code": "x = 1"}).content == "(no output)"


def test_an_exception_is_a_failed_call_naming_it_after_the_output(box: ToolBox) -> None:
    result = box.call("python", {"code": "print('before')\n1/0"})
    assert result.kind == "failed" and "before" in (result.error or "")
    assert "ZeroDivisionError: division by zero" in (result.error or "")


def test_a_program_past_its_time_is_stopped_and_says_so(box: ToolBox) -> None:
    result = box.call("python", {"code": "while True:\n    pass"})
    assert result.kind == "failed" and "ran past 1 s" in (result.error or "")


def test_no_state_survives_from_one_call_to_the_next(box: ToolBox) -> None:
    box.call("python", {"code": "import builtins\nbuiltins.secret = 42"})
    result = box.call("python", {"code": "import builtins\nprint(getattr(builtins, 'secret', 'none'))"})
    assert result.content == "none\n"


def test_the_program_cannot_read_the_repository(box: ToolBox) -> None:
    here = Path(__file__).resolve()
    result = box.call("python", {"code": f"print(open({str(here)!r}).read()[:20])"})
    assert result.kind == "failed" and "Error" in (result.error or "")
