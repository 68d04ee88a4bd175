"""Every command: --help works, a bad argument gives one clear line and a non-zero exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.cli.main import COMMANDS, build_parser, main
from support.tasks import make_task


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


def test_config_error_prints_every_problem_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make_task(tmp_path, extra={"generation": {"temperature": "hot"}, "colour": "red"})
    assert main(["task", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "generation.temperature" in err and "colour" in err


def test_task_check_prints_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["task", "check", str(make_task(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "16 train rows, 8 held-out rows" in out and "success     correct" in out


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
    assert main(["train", str(path), "--set", "learning_rate", "--no-gate", "x"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_train_runs_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_task(tmp_path / "task", shaping=True)
    code = main(
        [
            "train",
            str(path),
            "--run-dir",
            str(tmp_path / "run"),
            "--max-steps",
            "1",
            "--no-gate",
            "cli test",
            "--no-progress",
            "--set",
            "logging_steps=1",
        ]
    )
    assert code == 0
    assert "trained to step 1" in capsys.readouterr().out
    assert (tmp_path / "run" / "final" / "config.json").exists()


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    from rlvr.errors import ConfigError

    path = make_task(tmp_path, extra={"colour": "red"})
    with pytest.raises(ConfigError):
        main(["--debug", "task", "check", str(path)])


def test_debug_is_accepted_after_a_nested_command(tmp_path: Path) -> None:
    from rlvr.errors import ConfigError

    path = make_task(tmp_path, extra={"colour": "red"})
    with pytest.raises(ConfigError):
        main(["task", "check", str(path), "--debug"])


def test_output_piped_into_a_reader_that_stops_ends_quietly() -> None:
    import subprocess
    import sys

    code = "import sys; from rlvr.cli.main import main; sys.exit(main(['memory', '--table']))"
    proc = subprocess.run(
        f'{sys.executable} -c "{code}" | head -1', shell=True, capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_a_closed_pipe_ends_the_command_with_status_141(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["memory", "--table"]) == 141


def test_help_shows_a_percent_sign_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sft", "--help"])
    assert "0 % base rate" in " ".join(capsys.readouterr().out.split())
    assert "0 %% base rate" not in " ".join(build_parser().format_help().split())


def test_plan_takes_out_like_every_command_and_keeps_o(tmp_path: Path) -> None:
    parser = build_parser()
    assert parser.parse_args(["plan", "t.yaml", "--out", "a.yaml"]).out == "a.yaml"
    assert parser.parse_args(["plan", "t.yaml", "-o", "b.yaml"]).out == "b.yaml"
    assert parser.parse_args(["plan", "t.yaml"]).out == "plan.yaml"


def test_no_command_spells_its_output_flag_output() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    shown = {
        name: [o for a in p._actions if a.help != "==SUPPRESS==" for o in a.option_strings]
        for name, p in sub.choices.items()
    }
    assert not [name for name, opts in shown.items() if "--output" in opts or "-o" in opts]


def test_sft_with_a_misspelt_set_key_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_task(tmp_path / "task")
    assert main(["sft", str(path), "--set", "lerning_rate=1", "--out", str(tmp_path / "sft")]) == 2
    err = capsys.readouterr().err
    assert (
        "Traceback" not in err
        and "--set lerning_rate: not a SFTConfig field" in err
        and "did you mean 'learning_rate'" in err
    )


def test_sft_with_a_misspelt_sft_key_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_task(tmp_path / "task", extra={"sft": {"warmup_stepz": 3}})
    assert main(["sft", str(path), "--out", str(tmp_path / "sft")]) == 2
    err = capsys.readouterr().err
    assert "sft.warmup_stepz: not a SFTConfig field" in err and "did you mean 'warmup_steps'" in err


def test_train_with_a_misspelt_set_key_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_task(tmp_path / "task")
    assert (
        main(["train", str(path), "--set", "lerning_rate=1", "--no-gate", "test", "--run-dir", str(tmp_path / "run")])
        == 2
    )
    err = capsys.readouterr().err
    assert (
        "Traceback" not in err
        and "lerning_rate: not a GRPOConfig field" in err
        and "did you mean 'learning_rate'" in err
    )


def test_an_unknown_verifier_option_lists_the_valid_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_task(
        tmp_path,
        extra={
            "rewards": [
                {"name": "format", "weight": 0.1},
                {"name": "correct", "verifier": "exact", "options": {"normalise": ["whitespace"]}},
            ]
        },
    )
    assert main(["task", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "unknown option 'normalise' for reward 'exact' (did you mean 'normalize' for 'normalise'?)" in err
    assert "its options: answer_format (default None), column (default 'answer'), normalize (default ())" in err


AMBIGUOUS = {
    "rewards": [
        {"name": "format", "weight": 0.1},
        {"name": "correct", "verifier": "exact"},
        {"name": "loose", "verifier": "math"},
    ]
}


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "build", "TASK"],
        ["sft", "TASK", "--target-pass-rate", "0.2"],
        ["probe", "TASK"],
        ["train", "TASK", "--no-gate", "test"],
    ],
)
def test_commands_that_count_successes_refuse_an_ambiguous_task_before_loading_a_model(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlvr.models

    path = make_task(tmp_path / "task", extra=AMBIGUOUS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rlvr.models, "load_model", lambda *a, **k: pytest.fail("a model was loaded"))
    assert main([str(path) if a == "TASK" else a for a in argv]) == 2
    assert "could decide success" in capsys.readouterr().err


def test_bad_input_exits_2_and_a_refusal_exits_1_for_every_error_class(monkeypatch, capsys) -> None:
    """``RlvrError.exit_status``, as ``rlvr.cli.main`` documents it: the classes that say what in
    the input is wrong exit 2, every other error rlvr raises exits 1. A new error class must be
    put on one side here."""
    from rlvr import errors
    from rlvr.cli import main as cli_main

    bad_input = {errors.ConfigError, errors.DataError, errors.VerifierError}
    classes = {c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.RlvrError)}
    assert bad_input < classes
    for cls in sorted(classes, key=lambda c: c.__name__):
        exc = cls("x")

        def run(args, exc=exc):
            raise exc

        monkeypatch.setattr(cli_main, "build_parser", lambda run=run: _parser_running(run))
        assert cli_main.main(["x"]) == (2 if cls in bad_input else 1), cls.__name__
        assert capsys.readouterr().err == f"rlvr x: error: {exc}\n"


def _parser_running(run):
    import argparse

    parser = argparse.ArgumentParser(prog="rlvr")
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("command")
    parser.set_defaults(_run=run)
    return parser
