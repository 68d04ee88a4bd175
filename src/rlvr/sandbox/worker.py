"""One sandbox worker as the trainer sees it: spawning ``harness.py`` in a fresh interpreter,
the framing on its pipes, and one conversation (``Worker.session``).

A sample is a *conversation* (``checks.TestRun``, ``StdioRun``, ``LegacyRun``): the trusted side
sends batches of operations, the child answers each, and all judging happens here, between
batches. The child's answers are framed JSON, at most ``MAX_FRAME`` bytes each; the worker caps a
sample's answers at 4 MiB. A worker that does not answer within the sample's timeout plus
``GRACE_S`` makes ``session`` raise ``SandboxError``; the pool then kills and replaces it.
"""

from __future__ import annotations

import json
import os
import selectors
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import SandboxError
from .interpreter import worker_env

HARNESS = Path(__file__).with_name("harness.py")
GRACE_S = 5.0
MAX_FRAME = 1 << 20  # one answer of the child, bytes (the worker caps all answers at 4 MiB)


class Conversation(Protocol):
    """The trusted side of one sample. ``first()`` gives the first batch of operations for the
    child; ``feed(answers, ended)`` receives the child's answers to the last batch (fewer than
    asked when the child stopped; ``ended`` then says so) and returns the next batch, or None
    when it has what it needs. All judging happens in ``feed``, in the trainer's process."""

    timeout: float

    def first(self) -> list[dict[str, Any]]: ...

    def feed(self, answers: list[Any], ended: bool) -> list[dict[str, Any]] | None: ...


@dataclass(frozen=True)
class SessionEnd:
    """How a sample's session ended, as measured by the worker (never as claimed by the child).
    ``why``: ``ended`` (the trainer had what it needed), ``exited`` (the child ended itself),
    ``closed`` (the child closed its answer pipe), ``timeout`` (the wall-clock deadline, or CPU
    time at the limit), ``output_limit``, or ``sandbox: ...`` (the infrastructure failed).
    ``maxrss``: the child's peak resident memory in bytes, from the kernel."""

    why: str
    wall: float = 0.0
    cpu: float = 0.0
    maxrss: int = 0
    status: str = ""


class Worker:
    """One worker process: started fresh (never forked from the trainer), it says hello with the
    layers it probed, then runs one conversation at a time (``session``)."""

    def __init__(self, python: str, cfg: dict[str, object]) -> None:
        self.errfile = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [python, "-I", "-S", str(HARNESS), json.dumps(cfg)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errfile,
            env=worker_env(),
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.win, self.rout = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self.buf = bytearray()
        self.pos = 0
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.rout, selectors.EVENT_READ)
        hello = self.frame(60.0)
        if hello is None or hello[0] != b"H":
            self.errfile.seek(0)
            err = self.errfile.read().decode("utf-8", "replace").strip().splitlines()
            self.kill()
            raise SandboxError(f"a sandbox worker failed to start ({python}): {err[-1] if err else 'no output'}")
        self.layers: dict[str, str] = json.loads(hello[1])["hello"]

    def send(self, kind: bytes, payload: bytes, before: bytes = b"") -> None:
        data = before + kind + struct.pack(">I", len(payload)) + payload
        while data:
            data = data[os.write(self.win, data) :]

    def frame(self, timeout: float) -> tuple[bytes, bytes] | None:
        """The worker's next frame (type, payload), or None on timeout or end of file. Reads
        in large chunks into one buffer (a sample's answers come as many small frames)."""
        deadline = time.monotonic() + timeout
        while True:
            p = self.pos
            if len(self.buf) - p >= 5:
                n = struct.unpack(">I", self.buf[p + 1 : p + 5])[0]
                if len(self.buf) - p >= 5 + n:
                    kind, body = bytes(self.buf[p : p + 1]), bytes(self.buf[p + 5 : p + 5 + n])
                    self.pos = p + 5 + n
                    if self.pos > (1 << 20) or self.pos == len(self.buf):
                        del self.buf[: self.pos]  # compact now and then, not per frame
                        self.pos = 0
                    return kind, body
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                return None
            chunk = os.read(self.rout, 1 << 20)
            if not chunk:
                return None
            self.buf += chunk

    def session(self, conv: Conversation, timeout: float) -> SessionEnd:
        """Run one conversation. The worker owns the child's deadline; this one (timeout plus a
        grace period) only catches a worker that stopped answering."""
        deadline = time.monotonic() + timeout + GRACE_S
        head = json.dumps({"timeout": timeout}).encode()
        pending = b"J" + struct.pack(">I", len(head)) + head  # sent with the first batch: one write
        stream = bytearray()  # the child's answers as the worker forwards them: 4-byte length + JSON
        pos = 0  # parsed up to here (an offset, not slicing: a child can send many tiny frames)
        end: SessionEnd | None = None
        ops: list[dict[str, Any]] | None = conv.first()
        if ops is None:
            self.send(b"J", head)  # nothing to ask: the session still starts and ends cleanly
        over = ""
        while ops is not None:
            self.send(b"D", json.dumps({"ops": ops}, separators=(",", ":")).encode(), pending)
            pending = b""
            answers: list[Any] = []
            while len(answers) < len(ops) and end is None and not over:
                # Whole answers already buffered first.
                if len(stream) - pos >= 4:
                    n = struct.unpack(">I", stream[pos : pos + 4])[0]
                    if n > MAX_FRAME:
                        over = f"an answer of {n} bytes is over the {MAX_FRAME}-byte limit"
                        break
                    if len(stream) - pos >= 4 + n:
                        try:
                            answers.append(json.loads(bytes(stream[pos + 4 : pos + 4 + n])))
                        except (ValueError, RecursionError):
                            answers.append(["garbled"])
                        pos += 4 + n
                        if pos > MAX_FRAME:
                            del stream[:pos]
                            pos = 0
                        continue
                got = self.frame(max(0.0, deadline - time.monotonic()))
                if got is None:
                    raise SandboxError(
                        "the worker did not answer in time" if self.proc.poll() is None else "the worker died"
                    )
                kind, body = got
                if kind == b"R":
                    stream += body
                elif kind == b"S":
                    end = session_end(body)
            if over:
                break
            try:
                ops = conv.feed(answers, end is not None)
            except Exception as exc:  # noqa: BLE001 - end the session cleanly, then report it
                over, ops = f"sandbox: the trusted side failed: {type(exc).__name__}: {exc}", None
            if end is not None:
                break
        if end is None:
            self.send(b"E", b"")
            while end is None:
                got = self.frame(max(0.0, deadline - time.monotonic()))
                if got is None:
                    raise SandboxError(
                        "the worker did not answer in time" if self.proc.poll() is None else "the worker died"
                    )
                if got[0] == b"S":
                    end = session_end(got[1])
        if over.startswith("sandbox"):
            return SessionEnd(over)
        if over:
            conv.feed([], True)
            return SessionEnd("output_limit", end.wall, end.cpu, end.maxrss, over)
        return end

    def kill(self) -> None:
        try:
            self.sel.close()
        except (OSError, AttributeError):
            pass
        try:
            os.killpg(self.proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.kill()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f:
                    f.close()
            except OSError:
                pass
        self.errfile.close()

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


def session_end(body: bytes) -> SessionEnd:
    """The worker's status frame (S) as a ``SessionEnd``."""
    d = json.loads(body)
    return SessionEnd(
        str(d.get("why")),
        float(d.get("wall", 0.0)),
        float(d.get("cpu", 0.0)),
        int(d.get("maxrss", 0)),
        str(d.get("status", "")),
    )
