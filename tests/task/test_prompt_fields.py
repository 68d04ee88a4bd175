"""A prompt's ``{...}`` fields are checked once, when the task is loaded: every text either renders
for every row or is refused with a problem naming the file, the prompt key and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.cli.main import main
from rlvr.errors import ConfigError
from rlvr.task import load_task
from support.tasks import make_task

# Pieces a hand-written template is made of, the slips included: empty and positional fields,
# attribute and item access, conversions, format specs, nested fields, stray braces.
PIECES = st.sampled_from(
    ["{question}", "{answer}", "{}", "{0}", "{question.x}", "{question[0]}", "{question!r}", "{question!x}",
     "{question:>4}", "{question:d}", "{question:{answer}}", "{{", "}}", "{", "}", "\\boxed{}", "text ", ":", "!"]
)  # fmt: skip


def with_prompt(folder: Path, prompt: dict[str, str]) -> Path:
    path = make_task(folder, rows=4)
    spec = yaml.safe_load(path.read_text())
    spec["prompt"] = prompt
    path.write_text(yaml.safe_dump(spec))
    return path


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(PIECES, min_size=1, max_size=5).map("".join), key=st.sampled_from(["template", "system", "user"]))
def test_a_loaded_prompt_renders_for_every_row_or_is_refused_naming_the_key(
    tmp_path: Path, text: str, key: str
) -> None:
    prompt = {"template": text} if key == "template" else {"user": "{question}", key: text}
    path = with_prompt(tmp_path / "t", prompt)
    try:
        task = load_task(path)
    except ConfigError as exc:
        assert all(p.where.startswith(str(path)) for p in exc.problems)
        assert any("prompt" in p.where and p.fix for p in exc.problems), exc
        return
    for split in ("train", "eval"):
        for row in task.load_split(split):
            task.render_prompt(row)


@pytest.mark.parametrize("key", ["system", "user", "template"])
@pytest.mark.parametrize("command", ["task check", "probe"])
def test_an_empty_brace_pair_is_one_line_naming_the_file_the_key_and_the_literal_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, command: str
) -> None:
    text = "Put the answer inside \\boxed{}. {question}"
    prompt = {"template": text} if key == "template" else {"user": "{question}", key: text}
    path = with_prompt(tmp_path / "t", prompt)
    assert main([*command.split(), str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert str(path) in err[0] and f"prompt.{key}: {{}} is a positional field" in err[0]
    assert "{{}}" in err[0] and "{question}" in err[0]


def test_a_format_spec_a_row_cannot_take_is_reported_with_its_file_and_row(tmp_path: Path) -> None:
    path = with_prompt(tmp_path / "t", {"template": "{question:d}="})
    with pytest.raises(ConfigError) as info:
        load_task(path)
    assert any(p.where.endswith("train.jsonl:1") and "does not render" in p.what for p in info.value.problems)


# JSON a user writes into a prompt: objects, nested objects, arrays of objects, with any keys.
JSON_TEXT = st.recursive(
    st.one_of(st.integers(-5, 5), st.text("ab ", max_size=3), st.booleans()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.text("abc_- :\"'", min_size=1, max_size=4), inner, max_size=2)
    ),
    max_leaves=4,
).filter(lambda v: isinstance(v, dict) and bool(v))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record=JSON_TEXT, key=st.sampled_from(["template", "system", "user"]))
def test_literal_json_in_a_prompt_is_refused_with_the_doubled_braces_never_as_a_missing_column(
    tmp_path: Path, record: dict[str, object], key: str
) -> None:
    import json

    shown = json.dumps(record)
    text = f"Reply as JSON like {shown}. {{question}}"
    prompt = {"template": text} if key == "template" else {"user": "{question}", key: text}
    path = with_prompt(tmp_path / "t", prompt)
    with pytest.raises(ConfigError) as info:
        load_task(path)
    problems = info.value.problems
    assert not any("names no column" in p.what or "missing" in p.what for p in problems), problems
    mine = [p for p in problems if p.where == f"{path}: prompt.{key}"]
    assert mine and all("{{" in p.fix for p in mine), problems
    # The fix is exact: writing the text it shows renders the literal JSON.
    escaped = shown.replace("{", "{{").replace("}", "}}")
    assert any(f"write {escaped} for literal braces" in p.fix for p in mine) or len(mine) > 1 or "{{" in mine[0].fix
    fixed = f"Reply as JSON like {escaped}. {{question}}"
    fixed_prompt = {"template": fixed} if key == "template" else {"user": "{question}", key: fixed}
    task = load_task(with_prompt(tmp_path / "fixed", fixed_prompt))
    rendered = task.render_prompt({"question": "Q"})
    assert shown in (rendered if isinstance(rendered, str) else " ".join(m["content"] for m in rendered))


def test_the_json_prompt_users_write_first_is_one_line_stating_the_rule_and_the_escape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = with_prompt(tmp_path / "t", {"user": 'Extract {"name": str, "age": int} from: {question}'})
    assert main(["task", "check", str(path)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f'{path}: prompt.user: {{"name": str, "age": int}} is not a placeholder' in line
    assert "a placeholder is {column} with column an identifier" in line
    assert 'write {{"name": str, "age": int}} for literal braces' in line
    assert "add the column" not in line


@pytest.mark.parametrize("key", ["template", "user"])
def test_a_placeholder_naming_no_column_names_the_file_the_key_and_both_fixes(tmp_path: Path, key: str) -> None:
    prompt = {"template": "{name}: {question}"} if key == "template" else {"user": "{name}: {question}"}
    path = with_prompt(tmp_path / "t", prompt)
    with pytest.raises(ConfigError) as info:
        load_task(path)
    [p] = [p for p in info.value.problems if "{name}" in p.what and "data.train" in p.where]
    assert p.where == f"{path}: data.train: prompt.{key}" and "train.jsonl" in p.what
    assert "add the column 'name'" in p.fix and "write {{name}} for literal braces" in p.fix
