"""``rlvr serve`` as a process on 127.0.0.1: binding rules, graceful shutdown that finishes the
batch in flight, and kill -9 in the middle of a batch followed by a restart."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import ProcessServer, right

from rlvr.cli.main import main
from rlvr.errors import ConfigError
from rlvr.serve.app import check_bind


def test_a_non_loopback_bind_without_a_token_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        check_bind("0.0.0.0", None, allow_remote=True)
    assert "needs a token" in str(info.value)


def test_a_non_loopback_bind_without_allow_remote_is_refused_even_with_a_token() -> None:
    with pytest.raises(ConfigError, match="--allow-remote"):
        check_bind("192.168.1.4", "t0ken", allow_remote=False)


def test_loopback_needs_neither_flag_nor_token_and_remote_needs_both() -> None:
    for host in ("127.0.0.1", "localhost", "::1"):
        check_bind(host, None, allow_remote=False)
    check_bind("0.0.0.0", "t0ken-of-16-chars", allow_remote=True)


def test_the_cli_refuses_a_public_bind_without_a_token_before_loading_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RLVR_SERVE_TOKEN", raising=False)
    assert main(["serve", str(tmp_path / "missing.yaml"), "--host", "0.0.0.0", "--allow-remote"]) == 2
    err = capsys.readouterr().err
    assert "needs a token" in err and "Traceback" not in err


def _post(url: str, body: Any, out: list[Any]) -> threading.Thread:
    def go() -> None:
        try:
            out.append(httpx.post(url, json=body, timeout=60))
        except httpx.HTTPError as exc:
            out.append(exc)

    t = threading.Thread(target=go)
    t.start()
    return t


BODY = {"samples": [{"completion": "SLEEP " + right("4"), "prompt": "2+2=", "answer": "4"}]}


def test_sigterm_finishes_the_batch_in_flight_before_the_process_ends(task_path: Path) -> None:
    server = ProcessServer(task_path)
    out: list[Any] = []
    try:
        t = _post(server.url + "/v1/score", BODY, out)
        server.wait_active(1)
        server.proc.send_signal(signal.SIGTERM)
        t.join(60)
        # uvicorn re-raises the SIGTERM it deferred once shutdown is done: the conventional status
        assert server.proc.wait(timeout=60) == -signal.SIGTERM
        assert isinstance(out[0], httpx.Response) and out[0].status_code == 200
        assert out[0].json()["results"][0]["scores"]["correct"]["outcome"] == "correct"
        assert "Traceback" not in server.output()
    finally:
        server.kill()


def test_kill_9_mid_batch_fails_that_request_and_a_restart_serves_again(task_path: Path) -> None:
    server = ProcessServer(task_path)
    out: list[Any] = []
    try:
        t = _post(server.url + "/v1/score", BODY, out)
        server.wait_active(1)
        server.proc.send_signal(signal.SIGKILL)
        t.join(60)
        assert isinstance(out[0], httpx.HTTPError)  # the client sees the failure and retries
        server.proc.wait(timeout=30)
        again = ProcessServer(task_path, port=server.port)
        try:
            r = httpx.post(
                again.url + "/v1/score", json={"samples": [{"completion": right("4"), "answer": "4"}]}, timeout=60
            )
            assert r.status_code == 200 and r.json()["results"][0]["reward"] == pytest.approx(1.1)
            assert "rlvr_serve_samples_total 1" in httpx.get(again.url + "/metrics", timeout=10).text
        finally:
            again.kill()
    finally:
        server.kill()


@pytest.mark.parametrize(
    "args",
    [
        ["--fallback", "nan"],
        ["--workers", "0"],
        ["--deadline", "0"],
        ["--max-queue", "-1"],
        ["--write-adapter", "trl", "x.py"],
    ],
)
def test_bad_serve_options_are_refused_with_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert main(["serve", str(tmp_path / "task.yaml"), "--no-gate", "x", *args]) == 2
    err = capsys.readouterr().err
    assert args[0] in err and "Traceback" not in err
