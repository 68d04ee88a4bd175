"""A task file's ``environment:`` section is read and checked by ``load_task`` with the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlvr.errors import ConfigError
from rlvr.task import load_task
from support.tasks import make_task


def episode_task(folder: Path, **environment: Any) -> Path:
    env = {"tools": ["calculator"], "required": ["calculator"], "terms": {"required_tools": 0.2}, **environment}
    return make_task(folder, extra={"prompt": {"user": "What is {question}?"}, "environment": env})


def test_a_task_with_an_environment_loads_it(tmp_path: Path) -> None:
    task = load_task(episode_task(tmp_path, max_turns=3))
    assert task.environment is not None
    assert task.environment.tools == ("calculator",) and task.environment.max_turns == 3
    assert task.environment.root == task.root


def test_a_task_without_an_environment_has_none(tmp_path: Path) -> None:
    assert load_task(make_task(tmp_path)).environment is None


def test_environment_problems_are_reported_with_the_files_other_problems(tmp_path: Path) -> None:
    path = episode_task(tmp_path, tools=["abacus"], max_turns=0)
    with pytest.raises(ConfigError) as err:
        load_task(path)
    text = str(err.value)
    assert f"{path.resolve()}: environment.tools: abacus" in text or f"{path}: environment.tools: abacus" in text
    assert "environment.max_turns" in text


def test_an_episode_task_needs_a_chat_prompt(tmp_path: Path) -> None:
    path = make_task(tmp_path, extra={"environment": {"tools": ["calculator"]}})  # prompt.template
    with pytest.raises(ConfigError, match="an episode needs a chat prompt"):
        load_task(path)


def test_an_episode_term_may_not_share_a_reward_terms_name(tmp_path: Path) -> None:
    path = make_task(
        tmp_path,
        extra={
            "prompt": {"user": "{question}"},
            "rewards": [{"name": "valid_calls", "verifier": "exact"}],
            "environment": {"tools": ["calculator"], "terms": {"valid_calls": 0.1}},
        },
    )
    with pytest.raises(ConfigError, match="environment.terms.valid_calls: is also the name of a reward term"):
        load_task(path)


def test_task_check_passes_the_example_and_measures_its_reference_episode(capsys: pytest.CaptureFixture[str]) -> None:
    from rlvr.cli.main import main

    example = Path(__file__).resolve().parents[2] / "examples" / "tool-search"
    assert main(["task", "check", str(example)]) == 0, capsys.readouterr().err


def test_task_check_refuses_a_budget_a_reference_episode_does_not_fit(tmp_path: Path) -> None:
    from rlvr.taskcheck import check_task

    path = episode_task(tmp_path)
    text = path.read_text().replace("max_completion_length: 8", "max_completion_length: 40")
    path.write_text(text)
    problems = [str(p) for p in check_task(load_task(path))]
    assert any("generation.max_completion_length" in p and "a reference episode" in p for p in problems), problems


def test_the_gate_binds_the_episode_code_the_task_tools_and_the_collection(tmp_path: Path) -> None:
    from rlvr.gate.hashes import data_files, reward_modules

    (tmp_path / "tools.py").write_text(
        'def lookup(key: str) -> str:\n    """Look.\n\n    Args:\n        key: A key.\n    """\n    return key\n'
    )
    (tmp_path / "docs.jsonl").write_text('{"text": "a fact"}\n')
    task = load_task(episode_task(tmp_path, tools=["calculator", "search", "tools.lookup"], documents="docs.jsonl"))
    modules = reward_modules(task)
    assert {"rlvr.rewards.calls", "rlvr.episodes.calculator", "rlvr.episodes.search", "tools"} <= set(modules)
    assert data_files(task)["environment.documents"]["path"] == "docs.jsonl"
    plain = load_task(make_task(tmp_path / "plain"))
    assert not any(name.startswith("rlvr.episodes") for name in reward_modules(plain))


def test_task_check_counts_an_episode_prompt_with_its_tools_listed() -> None:
    from rlvr.episodes import build_toolbox, prepare_tokenizer
    from rlvr.episodes.template import render
    from rlvr.generate import prompt_ids
    from rlvr.lengths import check_lengths
    from rlvr.models import load_tokenizer

    example = Path(__file__).resolve().parents[2] / "examples" / "tool-search"
    task = load_task(example / "task.yaml")
    rows = task.load_split("train")[:5]
    report = check_lengths(task, rows=rows)
    plain = max(len(prompt_ids(load_tokenizer("builtin:tiny"), task.render_prompt(r))) for r in rows)
    tok = prepare_tokenizer(load_tokenizer("builtin:tiny"))
    tools = build_toolbox(task.environment, str(task.path)).schemas()
    listed = max(
        len(tok(render(tok, task.render_prompt(r), tools), add_special_tokens=False)["input_ids"]) for r in rows
    )
    assert report.prompt.max == listed > plain
