"""An ``rlvr`` command that serves HTTP (``rlvr serve``, ``rlvr inspect serve``), run in a
subprocess on 127.0.0.1 so a test can signal or SIGKILL it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class CliServer:
    """``rlvr <args> --port P`` in a subprocess; ready once GET ``health`` answers."""

    def __init__(self, args: Sequence[str], *, health: str, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.health = health
        env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rlvr.cli.main", *args, "--port", str(self.port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 60.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.output()}")
            try:
                httpx.get(self.url + self.health, timeout=1.0)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the server did not start")

    def output(self) -> str:
        """What the server printed, once it has exited ('' while it runs)."""
        return self.proc.stdout.read() if self.proc.stdout and self.proc.poll() is not None else ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        if self.proc.stdout:
            self.proc.stdout.close()
