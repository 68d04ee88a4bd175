"""The vLLM-on-CPU shims without vLLM (the default suite): platform detection, version refusal,
the layerwise reload's call, the server launcher's command, port and process handling."""

from __future__ import annotations

import importlib.metadata
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from rlvr.engines import vllm_cpu, vllm_serve
from rlvr.errors import ConfigError


class FakeRunner:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def reload_weights(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)


class FakeTensor:
    def __init__(self, value: int) -> None:
        self.value = value

    def detach(self) -> FakeTensor:
        return self

    def clone(self) -> FakeTensor:
        return FakeTensor(self.value)


def test_reload_weights_calls_the_layerwise_reload_in_checkpoint_format() -> None:
    runner = FakeRunner()
    vllm_cpu.reload_weights(runner, [("a.weight", FakeTensor(1))])
    (call,) = runner.calls
    assert call["is_checkpoint_format"] is True
    assert [name for name, _ in call["weights_iterator"]] == ["a.weight"]


def test_reload_weights_passes_copies_of_the_tensors() -> None:
    runner, tensor = FakeRunner(), FakeTensor(1)
    vllm_cpu.reload_weights(runner, [("a.weight", tensor)])
    ((_, passed),) = runner.calls[0]["weights_iterator"]
    assert passed is not tensor and passed.value == 1


def test_reload_weights_finds_the_model_runner_of_a_worker() -> None:
    class Worker:
        model_runner = FakeRunner()

    vllm_cpu.reload_weights(Worker(), [])
    assert len(Worker.model_runner.calls) == 1


def test_cpu_platform_is_false_without_the_vllm_cpu_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vllm_cpu, "_version", lambda dist: None)
    assert not vllm_cpu.cpu_platform()


def test_cpu_platform_is_false_when_gpu_vllm_is_installed_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vllm_cpu, "_version", lambda dist: "0.31.0")
    assert not vllm_cpu.cpu_platform()


def test_check_versions_refuses_other_versions_naming_each(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vllm_cpu, "_version", lambda dist: {"vllm-cpu": "0.30.0", "trl": "1.17.0"}.get(dist))
    with pytest.raises(ConfigError, match=r"vllm-cpu==0\.31\.0, found 0\.30\.0[\s\S]*trl==1\.16\.0, found 1\.17\.0"):
        vllm_cpu.check_versions()


def test_install_trl_shims_changes_nothing_off_the_cpu_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vllm_cpu, "cpu_platform", lambda: False)
    assert vllm_cpu.install_trl_shims() is False


def test_the_version_shim_answers_for_vllm_with_the_cpu_suffix(monkeypatch: pytest.MonkeyPatch) -> None:
    original = importlib.metadata.version
    monkeypatch.setattr(vllm_cpu, "_version", lambda dist: "0.31.0" if dist == "vllm-cpu" else None)
    monkeypatch.setattr(importlib.metadata, "version", original)
    monkeypatch.delenv("VLLM_TARGET_DEVICE", raising=False)
    vllm_cpu.patch_distribution_version()
    assert importlib.metadata.version("vllm") == "0.31.0+cpu"
    assert importlib.metadata.version("pytest") == original("pytest")


def test_the_server_listens_on_localhost_by_default() -> None:
    args = vllm_serve.serve_args("/m")
    assert args[args.index("--host") + 1] == "127.0.0.1"


def test_the_server_asks_for_no_nccl_weight_transfer() -> None:
    assert "--weight-transfer-config" not in vllm_serve.serve_args("/m")


def test_port_free_is_false_while_something_listens() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert not vllm_serve.port_free("127.0.0.1", s.getsockname()[1])


def test_the_launcher_refuses_a_taken_port_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(vllm_cpu, "cpu_platform", lambda: True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert vllm_serve.main(["--model", "/m", "--port", str(s.getsockname()[1])]) == 2
    err = capsys.readouterr().err.strip()
    assert "is taken" in err and "\n" not in err


def test_the_launcher_refuses_without_the_cpu_build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(vllm_cpu, "cpu_platform", lambda: False)
    assert vllm_serve.main(["--model", "/m"]) == 2
    assert "trl vllm-serve" in capsys.readouterr().err


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (an orphan's zombie may wait for a reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_stop_group_ends_the_leader_and_its_children() -> None:
    child = "[sys.executable, '-c', 'import time; time.sleep(60)']"
    code = f"import subprocess, sys, time; print(subprocess.Popen({child}).pid, flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    grandchild = int(proc.stdout.readline())
    vllm_serve.stop_group(proc, grace=5)
    time.sleep(0.5)
    assert not _running(proc.pid) and not _running(grandchild)


def test_stop_group_kills_a_leader_that_ignores_sigterm() -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    time.sleep(1.0)
    assert vllm_serve.stop_group(proc, grace=0.5) == -signal.SIGKILL


def test_a_server_that_stops_answering_is_one_run_error_naming_it() -> None:
    import requests

    from rlvr.errors import RunError

    with pytest.raises(RunError, match=r"vLLM server at http://127\.0\.0\.1:9 stopped answering"):
        with vllm_cpu._server_errors("http://127.0.0.1:9"):
            requests.get("http://127.0.0.1:9/health", timeout=2)
