"""The launch script `rlvr serve --write-adapter ENGINE PATH --launch` writes: a model the engine
can open from anywhere, the CPU route with its reasons on a machine without a GPU, a hard timeout,
and what the engine cannot do said plainly (OpenRLHF needs CUDA; multi-turn is reward-only)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import write_task

from rlvr.cli.main import main
from rlvr.errors import ConfigError
from rlvr.serve.launch import OPENRLHF_CUDA, VERL_CPU_ENV, VERL_CPU_OVERRIDES, engine_model, verl_plan
from rlvr.task import load_task
from support.tasks import make_task


def _task(tmp_path: Path) -> Any:
    return load_task(write_task(tmp_path / "t"), check_data=False)


def _commented(script: str, line: str) -> bool:
    """``line`` is in the script, right under a comment line."""
    lines = script.splitlines()
    return any(x.strip() == line and i > 0 and lines[i - 1].strip().startswith("# ") for i, x in enumerate(lines))


def test_cpu_verl_script_sets_every_cpu_setting_under_a_comment_saying_why(tmp_path: Path) -> None:
    script = verl_plan(_task(tmp_path), tmp_path / "a.py", tmp_path / "d", model="/m", cpu=True).script()
    for name, value, _ in VERL_CPU_ENV:
        assert _commented(script, f"export {name}={value}"), name
    for option, _ in VERL_CPU_OVERRIDES:
        assert _commented(script, option), option
    assert _commented(script, "+ray_kwargs.ray_init.num_gpus=1")
    assert "VERL_USE_EXTERNAL_MODULES=rlvr.engines.verl_cpu" in script


def test_gpu_verl_script_has_none_of_the_cpu_settings(tmp_path: Path) -> None:
    script = verl_plan(_task(tmp_path), tmp_path / "a.py", tmp_path / "d", model="/m", cpu=False).script()
    assert "VERL_PLATFORM" not in script and "rlvr.engines.verl_cpu" not in script
    assert all(option not in script for option, _ in VERL_CPU_OVERRIDES)


def test_cpu_route_with_more_than_one_worker_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="one worker"):
        verl_plan(_task(tmp_path), tmp_path / "a.py", tmp_path / "d", model="/m", gpus=2, cpu=True)


def test_every_path_in_the_verl_script_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "runs" / "sft").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    plan = verl_plan(_task(tmp_path), tmp_path / "a.py", Path("rel") / "d", model="runs/sft", cpu=True)
    o = dict(p.split("=", 1) for p in plan.command[3:])
    for key in ("actor_rollout_ref.model.path", "data.train_files", "reward.custom_reward_function.path"):
        assert Path(o[key]).is_absolute(), key
    assert o["actor_rollout_ref.model.path"] == str((tmp_path / "runs" / "sft").resolve())
    assert f"VERL_FILE_LOGGER_PATH:-{(tmp_path / 'rel' / 'd').resolve()}/verl_log.jsonl" in plan.script()


def test_a_builtin_model_is_written_as_its_folder(tmp_path: Path) -> None:
    path = Path(engine_model(_task(tmp_path), "builtin:tiny"))
    assert path.is_absolute() and (path / "config.json").is_file() and (path / "tokenizer.json").is_file()


def test_a_hub_id_is_written_as_it_is(tmp_path: Path) -> None:
    assert engine_model(_task(tmp_path), "Qwen/Qwen2.5-Math-1.5B") == "Qwen/Qwen2.5-Math-1.5B"


def test_openrlhf_script_says_it_needs_cuda(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "e" / "reward_func.py"
    argv = ["serve", str(write_task(tmp_path / "t")), "--no-gate", "x", "--write-adapter", "openrlhf", str(out)]
    assert main([*argv, "--launch", "--gpus", "1"]) == 0
    assert f"# WARNING: {OPENRLHF_CUDA}" in out.with_suffix(".launch.sh").read_text()
    assert "OpenRLHF needs CUDA" in capsys.readouterr().out


@pytest.mark.parametrize("engine", ["verl", "openrlhf"])
def test_multi_turn_launch_says_the_engine_is_reward_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    env = {"tools": ["calculator"], "max_turns": 3, "terms": {"valid_calls": 0.1}}
    task = make_task(tmp_path / "task", extra={"prompt": {"user": "{question}"}, "environment": env})
    out = tmp_path / "e" / "reward.py"
    argv = ["serve", str(task), "--no-gate", "x", "--write-adapter", engine, str(out), "--launch", "--gpus", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert re.search(r"warning: multi-turn on \w+ is reward-only: rlvr writes no agent .*\(calculator\)", printed)
    assert "is reward-only" in out.with_suffix(".launch.sh").read_text()


def _fake_engine(tmp_path: Path, body: str) -> dict[str, str]:
    """A ``python3`` on PATH that runs ``body`` instead of the engine."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "python3"
    fake.write_text(f"#!/usr/bin/env bash\n{body}\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def _script(tmp_path: Path) -> Path:
    out = tmp_path / "e" / "verl_reward.py"
    task = write_task(tmp_path / "t")
    argv = ["serve", str(task), "--no-gate", "x", "--write-adapter", "verl", str(out), "--launch", "--gpus", "0"]
    assert main(argv) == 0
    return out.with_suffix(".launch.sh")


def test_openrlhf_on_the_cpu_route_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "e" / "reward_func.py"
    argv = ["serve", str(write_task(tmp_path / "t")), "--no-gate", "x", "--write-adapter", "openrlhf", str(out)]
    assert main([*argv, "--launch", "--gpus", "0"]) == 2
    assert "OpenRLHF needs CUDA" in capsys.readouterr().err and not out.exists()


def test_the_script_passes_its_arguments_to_the_engine_after_its_own(tmp_path: Path) -> None:
    script = _script(tmp_path)
    env = _fake_engine(tmp_path, 'printf "%s\\n" "$@"')
    out = subprocess.run([str(script), "trainer.total_training_steps=2"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    args = out.stdout.splitlines()
    assert args[:2] == ["-m", "verl.trainer.main_ppo"] and args[-1] == "trainer.total_training_steps=2"
    assert any(a.startswith("reward.custom_reward_function.path=/") for a in args)


def test_the_script_stops_the_engine_at_its_hard_timeout(tmp_path: Path) -> None:
    script = _script(tmp_path)
    env = {**_fake_engine(tmp_path, "sleep 300"), "RLVR_LAUNCH_TIMEOUT": "1"}
    out = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 124
