"""Every command: --help works, a bad argument gives one clear line and a non-zero exit."""

from __future__ import annotations

from pathlib import Path

import pytest
from foundation_helpers import make_task

from rlvr.cli.main import COMMANDS, build_parser, main


def test_every_listed_command_exists() -> None:
    import importlib.util

    missing = [name for name, mod in COMMANDS.items() if importlib.util.find_spec(mod) is None]
    assert not missing


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_works_for_every_command(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert "usage: rlvr " + command in capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_bad_argument_is_one_clear_line(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--no-such-flag"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rlvr") and "error:" in err[0]


def test_top_level_help_lists_every_command() -> None:
    text = build_parser().format_help()
    for name in COMMANDS:
        assert name in text


def test_config_error_prints_every_problem_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_task(tmp_path, extra={"generation": {"temperature": "hot"}, "colour": "red"})
    assert main(["task", "check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "generation.temperature" in err and "colour" in err


def test_task_check_prints_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["task", "check", str(make_task(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "16 train rows, 8 held-out rows" in out and "success = correct" in out


def test_task_example_writes_the_builtin_task(tmp_path: Path) -> None:
    assert main(["task", "example", str(tmp_path / "ex")]) == 0
    assert main(["task", "check", str(tmp_path / "ex")]) == 0


def test_train_without_a_gate_fails_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_task(tmp_path / "task")
    assert main(["train", str(path), "--run-dir", str(tmp_path / "run"), "--max-steps", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rlvr train: error:") and "Traceback" not in err


def test_train_set_needs_key_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_task(tmp_path / "task")
    assert main(["train", str(path), "--set", "learning_rate", "--no-gate", "x"]) == 1
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_train_runs_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_task(tmp_path / "task", shaping=True)
    code = main(["train", str(path), "--run-dir", str(tmp_path / "run"), "--max-steps", "1", "--no-gate", "cli test", "--no-progress", "--set", "logging_steps=1"])
    assert code == 0
    assert "trained 1 steps" in capsys.readouterr().out
    assert (tmp_path / "run" / "final" / "config.json").exists()


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    from rlvr.errors import ConfigError

    path = make_task(tmp_path, extra={"colour": "red"})
    with pytest.raises(ConfigError):
        main(["--debug", "task", "check", str(path)])
