"""One sandbox worker as the trainer sees it: starting ``inside/harness.py`` in a fresh
interpreter (``BOOT``), the framing on its pipes, and one sample (``Worker.session``).

A sample is one ``Job``: a control frame and its data frames, written at once; what comes back
is the test child's records (R frames), or a script's output per input (O, E and C frames), then
the worker's status (S). The trainer never waits on one direction while the other is stuck:
writes are non-blocking and interleaved with reads, and everything has a deadline (the sample's
timeout plus ``GRACE_S``); past it ``session`` raises ``SandboxError`` and the pool kills and
replaces the worker. Frames are at most ``MAX_FRAME`` bytes, a reply at most ``MAX_REPLY``.
"""

from __future__ import annotations

import json
import os
import select
import selectors
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import SandboxError
from . import inside
from .interpreter import worker_env

# The worker's interpreter runs isolated (-I -S: no site, no PYTHONPATH, no script folder) and need
# not have rlvr installed: BOOT loads the inside package from INSIDE under the name ``inside``,
# putting no folder on sys.path (see ``inside``'s docstring), then runs the worker.
INSIDE = Path(inside.__file__)
BOOT = (
    "import importlib.util as u, sys\n"
    "spec = u.spec_from_file_location('inside', sys.argv.pop(1), submodule_search_locations=[])\n"
    "sys.modules['inside'] = u.module_from_spec(spec)\n"
    "spec.loader.exec_module(sys.modules['inside'])\n"
    "from inside.harness import main\n"
    "main()\n"
)
GRACE_S = 5.0
MAX_FRAME = 1 << 20  # one frame from the worker, bytes
MAX_REPLY = 64 << 20  # everything one sample sends back; past it the sample is over its output limit
MAX_CASE_OUT = 1 << 20  # one stdin/stdout case's stdout when the job names no cap (``stdio_job``'s default)
MAX_STDERR = 64 << 10  # one case's stderr kept (the worker's cap too: ``inside.harness.MAX_STDERR``)


@dataclass(frozen=True)
class Job:
    """One sample for a worker: ``control`` (``mode``: ``tests`` or ``stdio``, ``timeout``,
    ``cases``) and the payloads of its D frames (the test child's job, or one program-and-input
    per stdin/stdout case). Expected outputs of stdin/stdout cases are never sent to a worker.
    ``fold`` (trusted code, run here): called with each case's index, stdout, stderr and end as
    the case's C frame arrives; what it returns replaces all three in the reply, so a reply
    holds one case's output at a time, not the whole sample's."""

    control: dict[str, Any]
    frames: tuple[bytes, ...]
    fold: Callable[[int, bytes, bytes, dict[str, Any]], dict[str, Any]] | None = field(default=None, compare=False)

    @property
    def timeout(self) -> float:
        """The whole session's time: a stdin/stdout job's ``total`` (each input has ``timeout``)."""
        return float(self.control.get("total", self.control["timeout"]))


@dataclass(frozen=True)
class SessionEnd:
    """How a sample's session ended, as measured by the worker (never as claimed by a child).
    ``why``: ``ended`` (the test child finished, or every input ran), ``timeout`` (the wall-clock
    deadline, or the candidate's CPU time at the limit), ``output_limit``, or ``sandbox: ...``
    (the infrastructure failed). ``cpu``/``maxrss``: the candidate child's CPU seconds and peak
    resident memory in bytes, from the kernel; ``tcpu``: the test child's CPU seconds; ``faults``
    and ``tfaults``: the candidate's and the test child's page faults (the kernel's minor-fault
    counts: each page a fresh child writes is one, the larger part of a short sample's cost)."""

    why: str
    wall: float = 0.0
    cpu: float = 0.0
    maxrss: int = 0
    status: str = ""
    tcpu: float = 0.0
    faults: int = 0
    tfaults: int = 0


@dataclass(frozen=True)
class Reply:
    """What came back for one job: the frames in order (type, payload) and how it ended."""

    frames: tuple[tuple[bytes, bytes], ...]
    end: SessionEnd


class Worker:
    """One worker process: started fresh (never forked from the trainer), it says hello with the
    layers it probed, then runs one conversation at a time (``session``)."""

    def __init__(self, python: str, cfg: dict[str, object]) -> None:
        self.errfile = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [python, "-I", "-S", "-c", BOOT, str(INSIDE), json.dumps(cfg)],
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
        os.set_blocking(self.win, False)

    def frame(self, timeout: float) -> tuple[bytes, bytes] | None:
        """The worker's next frame (type, payload), or None on timeout or end of file. Reads
        in large chunks into one buffer (a sample's answers come as many small frames)."""
        deadline = time.monotonic() + timeout
        while True:
            p = self.pos
            if len(self.buf) - p >= 5:
                n = struct.unpack(">I", self.buf[p + 1 : p + 5])[0]
                if n > MAX_FRAME + 64:
                    raise SandboxError(f"the worker sent a frame of {n} bytes")
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

    def session(self, job: Job) -> Reply:
        """Run one job. The worker owns the children's deadline; this one (the timeout plus a
        grace period) only catches a worker that stopped answering. Writing and reading are
        interleaved without blocking, so neither side can wait on the other forever."""
        deadline = time.monotonic() + job.timeout + GRACE_S
        out = bytearray(_frame(b"J", json.dumps(job.control).encode()))
        for payload in job.frames:
            out += _frame(b"D", payload)
        frames: list[tuple[bytes, bytes]] = []
        total = 0
        over = False
        n_cases, case_out, case_err = 0, bytearray(), bytearray()
        # Each case's stdout and stderr are cut here at their caps, whatever the worker sends:
        # stdout over its cap makes the case over the limit, stderr past 64 KiB is dropped.
        caps = {b"O": int(job.control.get("cap", MAX_CASE_OUT)), b"E": MAX_STDERR}
        sizes, case_over = {b"O": 0, b"E": 0}, False
        end: SessionEnd | None = None
        while end is None or out:
            if out:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SandboxError("the worker did not take its job in time")
                _, w, _ = select.select([], [self.win], [], 0)
                if w:
                    try:
                        del out[: os.write(self.win, out[: 1 << 16])]
                    except BlockingIOError:
                        pass
            if end is not None:
                if out:
                    select.select([], [self.win], [], max(0.0, min(0.05, deadline - time.monotonic())))
                continue
            got = self.frame(0.05 if out else max(0.0, deadline - time.monotonic()))
            if got is None:
                if self.proc.poll() is not None:
                    raise SandboxError("the worker died")
                if time.monotonic() >= deadline:
                    raise SandboxError("the worker did not answer in time")
                continue
            kind, body = got
            if kind in (b"O", b"E"):
                room = max(0, caps[kind] - sizes[kind])
                if len(body) > room:
                    body = body[:room]
                    case_over = case_over or kind == b"O"
                sizes[kind] += len(body)
                if not body:
                    continue
            if kind == b"C":
                try:
                    case_end = json.loads(body)
                except ValueError:
                    case_end = {}
                case_end = case_end if isinstance(case_end, dict) else {}
                if case_over:
                    case_end["why"] = "output_limit"
                sizes, case_over = {b"O": 0, b"E": 0}, False
            if kind == b"S":
                end = session_end(body)
            elif job.fold is not None and kind in (b"O", b"E"):
                (case_out if kind == b"O" else case_err).extend(body)
            elif job.fold is not None and kind == b"C":
                body = json.dumps(job.fold(n_cases, bytes(case_out), bytes(case_err), case_end)).encode()
                frames.append((kind, body))
                n_cases += 1
                case_out, case_err = bytearray(), bytearray()
            elif over or total + len(body) > MAX_REPLY:
                over = True  # the program's doing: keep reading (the worker must finish), keep nothing
            else:
                if kind == b"C":
                    body = json.dumps(case_end).encode()
                total += len(body)
                frames.append((kind, body))
        if over and not end.why.startswith("sandbox"):
            end = replace(end, why="output_limit")
        return Reply(tuple(frames), end)

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


def _frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


def session_end(body: bytes) -> SessionEnd:
    """The worker's status frame (S) as a ``SessionEnd``."""
    d = json.loads(body)
    return SessionEnd(
        str(d.get("why")),
        float(d.get("wall", 0.0)),
        float(d.get("cpu", 0.0)),
        int(d.get("maxrss", 0)),
        str(d.get("status", "")),
        float(d.get("tcpu", 0.0)),
        int(d.get("faults", 0)),
        int(d.get("tfaults", 0)),
    )
