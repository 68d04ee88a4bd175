"""How tools are named: a task tool by its function (``units.convert`` is ``convert``); ``required:``
takes that name or the ``module.function`` form listed under ``tools:``, and an unknown name is
refused with the valid names listed."""

from __future__ import annotations

from pathlib import Path

from rlvr.episodes.spec import read_environment

UNITS = '''
def convert(value: float, unit: str) -> str:
    """Convert a value.

    Args:
        value: the number
        unit: the target unit
    """
    return f"{value} {unit}"
'''


def environment(tmp_path: Path, required: list[str]) -> tuple[object, list[str]]:
    (tmp_path / "units.py").write_text(UNITS)
    spec, problems = read_environment(
        {"tools": ["calculator", "units.convert"], "required": required}, tmp_path, "task.yaml"
    )
    return spec, [str(p) for p in problems]


def test_required_accepts_the_dotted_form_as_listed_under_tools(tmp_path: Path) -> None:
    spec, problems = environment(tmp_path, ["units.convert"])
    assert problems == [] and spec is not None and spec.required == ("convert",)  # type: ignore[attr-defined]


def test_required_accepts_the_tools_function_name(tmp_path: Path) -> None:
    spec, problems = environment(tmp_path, ["convert", "calculator"])
    assert problems == [] and spec.required == ("convert", "calculator")  # type: ignore[attr-defined]


def test_an_unknown_required_tool_is_refused_listing_the_valid_names(tmp_path: Path) -> None:
    _, problems = environment(tmp_path, ["other.convert"])
    assert len(problems) == 1
    assert "'other.convert' is not one of the tools" in problems[0] and "calculator, convert" in problems[0]
