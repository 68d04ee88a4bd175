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
    assert main([*command.split(), str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert str(path) in err[0] and f"prompt.{key}: {{}} is a positional field" in err[0]
    assert "{{}}" in err[0] and "{question}" in err[0]


def test_a_format_spec_a_row_cannot_take_is_reported_with_its_file_and_row(tmp_path: Path) -> None:
    path = with_prompt(tmp_path / "t", {"template": "{question:d}="})
    with pytest.raises(ConfigError) as info:
        load_task(path)
    assert any(p.where.endswith("train.jsonl:1") and "does not render" in p.what for p in info.value.problems)
