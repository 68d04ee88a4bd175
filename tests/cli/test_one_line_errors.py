"""Every mistake a newcomer made in the issue-26 walk-through ends as one line and a non-zero exit,
before any weights load where the mistake is in the input; ``--debug`` shows the traceback."""

from __future__ import annotations

import errno
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rlvr.cli.main import main
from rlvr.cli.oserrors import disk_full
from support.tasks import make_task


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = [x for x in capsys.readouterr().err.splitlines() if not x.startswith(("SFT step", "GRPO step"))]
    err = [x for x in err if not x.startswith("rlvr sft: SFT split")]
    assert len(err) == 1, err
    return err[0]


def with_template(tmp_path: Path, template: str) -> Path:
    path = make_task(tmp_path / "task")
    spec = yaml.safe_load(path.read_text())
    spec["prompt"] = {"template": template}
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize("command", ["probe", "task check", "sft", "train"])
@pytest.mark.parametrize("template", ["Q: {question}= {", "Q: {question= "])
def test_an_unbalanced_brace_in_the_template_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, template: str
) -> None:
    task = with_template(tmp_path, template)
    code = main([*command.split(), str(task), *(["--no-gate", "t"] if command == "train" else [])])
    assert code == 2
    line = one_line(capsys)
    assert "prompt.template: bad template" in line and "write {{ and }} for literal braces" in line


@pytest.mark.parametrize("command", ["train", "sft"])
def test_a_learning_rate_that_is_not_a_number_is_refused_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlvr.models

    def no_load(*a: object, **k: object) -> None:
        raise AssertionError("the model loaded before the value was checked")

    monkeypatch.setattr(rlvr.models, "load_model", no_load)
    task = make_task(tmp_path / "task")
    extra = ["--no-gate", "t", "--run-dir", str(tmp_path / "run")] if command == "train" else ["--out", str(tmp_path)]
    assert main([command, str(task), "--set", "learning_rate=fast", *extra]) == 2
    line = one_line(capsys)
    assert "--set learning_rate: 'fast' is not a number" in line and "e.g. --set learning_rate=5e-7" in line


@pytest.mark.parametrize("logger", ["tensorboard", "trackio"])
def test_a_logger_whose_package_is_absent_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], logger: str
) -> None:
    needs = {"tensorboard": ("tensorboard", "tensorboardX"), "trackio": ("trackio",)}[logger]
    if any(importlib.util.find_spec(p) for p in needs):
        pytest.skip(f"{logger} is installed here")
    task = make_task(tmp_path / "task")
    code = main(["train", str(task), "--report-to", logger, "--no-gate", "t", "--run-dir", str(tmp_path / "run")])
    assert code == 2
    assert f"the {logger} logger needs the {needs[0]} package, which is not installed" in one_line(capsys)
    assert not (tmp_path / "run" / "final").exists()


def test_loggers_write_in_the_run_directory_under_the_tasks_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlvr.train.settings import logging_places

    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    monkeypatch.delenv("TRACKIO_DIR", raising=False)
    extra = logging_places("tensorboard,trackio", tmp_path / "run", "mini")
    assert extra == {"project": "mini", "run_name": "mini"}
    assert os.environ["TENSORBOARD_LOGGING_DIR"] == str(tmp_path / "run" / "tensorboard" / "mini")
    assert os.environ["TRACKIO_DIR"] == str(tmp_path / "run" / "trackio")
    assert logging_places("none", tmp_path, "mini") == {}
    logging_places("tensorboard", tmp_path / "second", "other")  # a second run in the same process moves it
    assert os.environ["TENSORBOARD_LOGGING_DIR"] == str(tmp_path / "second" / "tensorboard" / "other")
    monkeypatch.setenv("TENSORBOARD_LOGGING_DIR", "/mine")  # the user's own value wins
    logging_places("tensorboard", tmp_path, "mini")
    assert os.environ["TENSORBOARD_LOGGING_DIR"] == "/mine"


def test_a_full_disk_while_saving_is_one_line_and_debug_shows_the_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import transformers

    save = transformers.PreTrainedModel.save_pretrained

    def full(self: object, path: object, *a: object, **k: object) -> object:
        if str(path).startswith(str(tmp_path)):  # the SFT model, not the built-in one rlvr materialises
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return save(self, path, *a, **k)

    monkeypatch.setattr(transformers.PreTrainedModel, "save_pretrained", full)
    task = make_task(tmp_path / "task")
    args = ["sft", str(task), "--out", str(tmp_path / "sft"), "--max-steps", "1", "--no-progress"]
    assert main(args) == 2
    line = one_line(capsys)
    assert line.startswith(f"rlvr sft: error: {tmp_path / 'sft'}: no space left on the device")
    with pytest.raises(OSError, match="No space left"):
        main([*args, "--debug"])


def test_a_full_disk_is_recognised_however_the_writer_reports_it() -> None:
    assert disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert disk_full(RuntimeError("Error while serializing: IoError(Os { code: 28, kind: StorageFull, .. })"))
    try:
        try:
            raise OSError(errno.EDQUOT, "Disk quota exceeded")
        except OSError as inner:
            raise RuntimeError("save failed") from inner
    except RuntimeError as outer:
        assert disk_full(outer)
    assert not disk_full(OSError(errno.EACCES, "Permission denied")) and not disk_full(ValueError("x"))


@pytest.mark.parametrize("command", ["probe", "sft", "train", "inspect build"])
def test_a_missing_local_model_folder_is_reported_as_missing_not_as_a_network_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    task = make_task(tmp_path / "task")
    for model in ("./runs/sft", "runs/sft"):
        assert main([*command.split(), str(task), "--model", model]) == 1
        line = one_line(capsys)
        assert f"--model {model}: no such local model folder" in line and "hub" in line


def test_sigint_sent_to_the_pid_stops_a_probe_started_with_sigint_ignored(tmp_path: Path) -> None:
    """A script's background job (``rlvr probe ... &``) starts with SIGINT ignored; kill -INT must
    still stop it (the fix reinstalls Python's handler), with status 130 and one line."""
    task = make_task(tmp_path / "task", rows=3000)
    out = tmp_path / "probe"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlvr.cli.main", "probe", str(task), "--out", str(out), "--max-prompts", "3000"],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while not ((out / "samples.jsonl").exists() and (out / "samples.jsonl").stat().st_size):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
    stderr = proc.stderr.read() if proc.stderr else ""
    assert code == 130 and stderr.strip().splitlines()[-1] == "rlvr probe: interrupted"


def test_sft_says_on_stdout_that_the_target_was_missed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = make_task(tmp_path / "task", rows=20)
    argv = ["sft", str(task), "--out", str(tmp_path / "sft"), "--max-steps", "2", "--target-pass-rate", "1.0"]
    assert main([*argv, "--dev-size", "4", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "SFT split: training on 16 of 20 train rows; 4 held out" in out
    assert "SFT: 2 steps on 16 rows" in out and "(target MISSED)" in out
    assert "rlvr sft: warning: target dev pass rate 100% not reached in 2 steps" in err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--target-pass-rate", "0.5-0.2"], "--target-pass-rate '0.5-0.2': a pass rate must be in (0, 1]"),
        (["--target-pass-rate", "0.2", "--check-every", "0"], "--check-every must be at least 1 step, got 0"),
        (["--target-pass-rate", "0.2", "--check-temperature", "-1"], "--check-temperature must be 0 (greedy) or above"),
        (["--target-pass-rate", "0.2", "--confirm-samples", "-1"], "--confirm-samples must be 0 (no confirming read)"),
    ],
)
def test_a_bad_sft_stop_option_is_one_line_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], says: str
) -> None:
    task = make_task(tmp_path / "task", rows=20)
    assert main(["sft", str(task), "--out", str(tmp_path / "sft"), *flags]) != 0
    assert says in one_line(capsys) and not (tmp_path / "sft").exists()


def test_sft_reports_the_sampled_dev_rate_and_its_temperature(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = make_task(tmp_path / "task", rows=20)
    argv = ["sft", str(task), "--out", str(tmp_path / "sft"), "--max-steps", "2", "--target-pass-rate", "0.9-1"]
    assert main([*argv, "--dev-size", "4", "--no-progress"]) == 0
    assert "dev pass rate" in (out := capsys.readouterr().out) and "on 4 rows at T=1 (target MISSED)" in out


def test_sft_reports_a_confirmed_stop_with_its_samples_per_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlvr.train.sft import SftResult

    seen = {}

    def fake_sft(task, opts):  # what the CLI passes and prints, not training
        seen["confirm"] = opts.confirm_samples
        return SftResult(opts.out_dir, 7, 0.25, 1.0, True, n_train=16, n_dev=4, dev_samples=3, check_temperature=1.0)

    monkeypatch.setattr(sys.modules["rlvr.train.sft"], "run_sft", fake_sft)
    task = make_task(tmp_path / "task", rows=20)
    argv = ["sft", str(task), "--out", str(tmp_path / "sft"), "--target-pass-rate", "0.2", "--confirm-samples", "3"]
    assert main(argv) == 0 and seen["confirm"] == 3
    assert "dev pass rate 25.0% on 4 rows x 3 samples (confirmed) at T=1 (target reached)" in capsys.readouterr().out


def test_sft_help_documents_its_stop_cadence_and_confirmation(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sft", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--check-every STEPS" in text and "optimiser steps between quick dev reads (default 1" in text
    assert "--confirm-samples K" in text and "completions per dev row of the confirming read" in text
