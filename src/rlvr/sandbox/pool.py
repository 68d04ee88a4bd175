"""The trusted side of the sandbox: a pool of freshly spawned worker processes.

Workers are started with ``subprocess`` (fork + exec of a *fresh* interpreter), never forked from
the trainer: the trainer's address space would break the address-space budget and it holds
secrets (tokens in the environment, open files, GPU handles). Workers get a minimal environment,
no inherited file descriptors and their own session.

The interpreter the workers run must be importable by the unprivileged uid the children drop
to. It is chosen at start-up by probing each candidate *as that uid*: the ``python`` argument,
then Debian's ``/usr/bin/python3``, then the trainer's own interpreter. When none imports (pyenv
under a 0700 ``/root``), the pool runs with the uid layer reported as unavailable, never silently.

A sample is a *conversation* (``checks.TestRun``, ``StdioRun``, ``LegacyRun``): the trusted side
sends batches of operations, the child answers each, and all judging happens here, between
batches. The child's answers are framed JSON, at most ``MAX_FRAME`` bytes each; the worker caps a
sample's answers at 4 MiB. The pool owns a second deadline above the worker's: a worker that
does not answer within the sample's timeout plus a grace period is killed and replaced, and the
sample is an infrastructure error (``sandbox``). The pool keeps serving after any sample,
whatever it did.
"""

from __future__ import annotations

import json
import os
import queue
import selectors
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import SandboxError

HARNESS = Path(__file__).with_name("harness.py")
LAYERS = ("rlimits", "no_new_privs", "netns", "mountns", "ipcns", "workdir", "uid", "landlock", "seccomp", "pidns")
LAYER_FIX = {
    "netns": "run as root, or enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)",
    "mountns": "run as root, or enable unprivileged user namespaces",
    "uid": "run the pool as root with an interpreter the uid can import (Debian's /usr/bin/python3: apt-get install python3)",
    "landlock": "use a kernel with Landlock enabled (lsm=landlock,...)",
    "seccomp": "install libseccomp2 (scripts/install-system-deps.sh)",
    "pidns": "run as root, or enable unprivileged user namespaces",
    "ipcns": "run as root, or enable unprivileged user namespaces (x86-64: the per-sample clone)",
    "workdir": "run as root, or enable unprivileged user namespaces (a tmpfs per sample needs a mount namespace)",
    "no_new_privs": "a Linux kernel >= 3.5",
    "rlimits": "a POSIX system",
}
GRACE_S = 5.0
UID_BASE = 61000
_warned = False


@dataclass(frozen=True)
class Limits:
    """Per-sample limits. ``timeout`` is wall-clock seconds for the whole sample (CPU seconds are
    capped just above it); ``memory_mb`` is an address-space budget over the child's size at fork;
    ``workdir_mb`` caps the sample's own tmpfs (files it writes count against it)."""

    timeout: float = 5.0
    memory_mb: int = 1024
    file_mb: int = 16
    open_files: int = 64
    processes: int = 64
    workdir_mb: int = 64


@dataclass(frozen=True)
class Layers:
    """Which isolation layers are active: name -> "active: ..." or "unavailable: why"."""

    status: dict[str, str]
    python: str = ""

    def active(self, name: str) -> bool:
        return self.status.get(name, "").startswith("active")

    def missing(self) -> list[str]:
        return [n for n in LAYERS if not self.active(n)]

    def describe(self) -> str:
        lines = [f"interpreter: {self.python}"]
        for n in LAYERS:
            mark = "+" if self.active(n) else "-"
            lines.append(f"  {mark} {n:<13} {self.status.get(n, 'unavailable: not probed')}")
        return "\n".join(lines)


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


MAX_FRAME = 1 << 20  # one answer of the child, bytes (the worker caps all answers at 4 MiB)


# -- choosing the interpreter ------------------------------------------------------------------
_PROBE = """
import os, sys
u = int(sys.argv[1])
if u >= 0:
    os.setgroups([]); os.setresgid(u, u, u); os.setresuid(u, u, u)
import fractions, json, email.mime.text, xml.dom.minidom
assert sys.version_info >= (3, 8)
print("ok")
"""


def choose_python(explicit: str | None = None, uid: int | None = UID_BASE) -> tuple[str, int | None, str]:
    """(interpreter, uid or None, note). Each candidate is probed by importing the standard
    library as ``uid``; the first that works wins."""
    candidates = [c for c in (explicit, "/usr/bin/python3", sys.executable) if c]
    seen: list[str] = []
    if uid is None or os.geteuid() != 0:
        for c in candidates:
            if _probe(c, -1):
                return c, None, "not root: children keep this uid"
        raise SandboxError(f"no usable Python interpreter for the sandbox workers (tried {', '.join(candidates)})")
    for c in candidates:
        if c in seen or not os.path.exists(c):
            continue
        seen.append(c)
        if _probe(c, uid):
            return c, uid, ""
    for c in seen:
        if _probe(c, -1):
            return c, None, f"no interpreter imports its standard library as uid {uid} (tried {', '.join(seen)})"
    raise SandboxError(f"no usable Python interpreter for the sandbox workers (tried {', '.join(seen)})")


def _probe(python: str, uid: int) -> bool:
    try:
        out = subprocess.run(
            [python, "-I", "-S", "-c", _PROBE, str(uid)], capture_output=True, timeout=20, env=_worker_env(), cwd="/"
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == b"ok"


def _worker_env() -> dict[str, str]:
    # No secrets: the trainer's environment (tokens, keys) never reaches a worker.
    return {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


# -- one worker --------------------------------------------------------------------------------
class _Worker:
    def __init__(self, python: str, cfg: dict[str, object]) -> None:
        self.errfile = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [python, "-I", "-S", str(HARNESS), json.dumps(cfg)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errfile,
            env=_worker_env(),
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
                    end = _end(body)
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
                    end = _end(got[1])
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


def _end(body: bytes) -> SessionEnd:
    d = json.loads(body)
    return SessionEnd(
        str(d.get("why")),
        float(d.get("wall", 0.0)),
        float(d.get("cpu", 0.0)),
        int(d.get("maxrss", 0)),
        str(d.get("status", "")),
    )


# -- the pool ----------------------------------------------------------------------------------
class SandboxPool:
    """A pool of sandbox workers. ``run(jobs)`` runs them in parallel and returns one
    ``SessionEnd`` per conversation, in order. Thread-safe; workers start on first use.

    ``strict``: refuse to start (``SandboxError``) unless every layer in ``LAYERS`` is active.
    Otherwise the missing layers are printed once per process, on stderr.
    """

    def __init__(
        self,
        workers: int = 2,
        limits: Limits | None = None,
        strict: bool = False,
        python: str | None = None,
        uid_base: int | None = UID_BASE,
        enable: Sequence[str] = LAYERS,
    ) -> None:
        unknown = sorted(set(enable) - set(LAYERS))
        if unknown:
            raise SandboxError(f"unknown sandbox layer(s) {unknown}; known: {', '.join(LAYERS)}")
        self.enable = tuple(enable)
        self.n = max(1, int(workers))
        self.limits = limits or Limits()
        self.strict = strict
        self.python_hint = python
        self.uid_base = uid_base
        self._workers: list[_Worker | None] = []
        self._python = ""
        self._uid: int | None = None
        self._note = ""
        self._layers: Layers | None = None
        self._lock = threading.Lock()
        self.restarts = 0
        self.infra_errors = 0

    # start-up
    def _cfg(self, slot: int) -> dict[str, object]:
        lim = self.limits
        return {
            "uid": None if self._uid is None else self._uid + slot,
            "limits": {
                "memory_bytes": lim.memory_mb << 20,
                "file_bytes": lim.file_mb << 20,
                "open_files": lim.open_files,
                "processes": lim.processes,
                "workdir_bytes": lim.workdir_mb << 20,
            },
            "enable": list(self.enable),
        }

    def start(self) -> Layers:
        with self._lock:
            return self._start()

    def _start(self) -> Layers:
        if self._layers is not None:
            return self._layers
        self._python, self._uid, self._note = choose_python(
            self.python_hint, self.uid_base if "uid" in self.enable else None
        )
        first = _Worker(self._python, self._cfg(0))
        self._workers = [first] + [None] * (self.n - 1)
        status = dict(first.layers)
        if self._note and "uid" in self.enable and not status.get("uid", "").startswith("active"):
            status["uid"] = "unavailable: " + self._note
        layers = Layers({k: v for k, v in status.items() if k != "python"}, status.get("python", self._python))
        missing = layers.missing()
        if self.strict and missing:
            first.close()
            self._workers = []
            problems = "; ".join(f"{n} ({layers.status.get(n, 'not probed')}; fix: {LAYER_FIX[n]})" for n in missing)
            raise SandboxError(f"strict sandbox: {len(missing)} isolation layer(s) missing: {problems}")
        global _warned
        if missing and not _warned:
            _warned = True
            sys.stderr.write(
                "rlvr sandbox: WARNING: running WITHOUT these isolation layers: "
                + ", ".join(missing)
                + " (see `rlvr sandbox check`; use strict mode to refuse)\n"
            )
        for i in range(1, self.n):
            self._workers[i] = _Worker(self._python, self._cfg(i))
        self._layers = layers
        return layers

    @property
    def layers(self) -> Layers:
        return self.start()

    # running
    def run(self, convs: Sequence[Conversation]) -> list[SessionEnd]:
        """Run each conversation on some worker, in parallel; one ``SessionEnd`` per conversation,
        in order. Whatever a sample did, the pool keeps serving."""
        with self._lock:
            self._start()
            results: list[SessionEnd | None] = [None] * len(convs)
            todo: queue.Queue[int] = queue.Queue()
            for i in range(len(convs)):
                todo.put(i)

            def serve(slot: int) -> None:
                while True:
                    try:
                        i = todo.get_nowait()
                    except queue.Empty:
                        return
                    results[i] = self._run_one(slot, convs[i])

            threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in range(min(self.n, len(convs)))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return [r if r is not None else SessionEnd("sandbox: no result") for r in results]

    def _run_one(self, slot: int, conv: Conversation) -> SessionEnd:
        worker = self._workers[slot]
        try:
            if worker is None or worker.proc.poll() is not None:
                if worker is not None:
                    worker.kill()
                    self.restarts += 1
                worker = self._workers[slot] = _Worker(self._python, self._cfg(slot))
            end = worker.session(conv, float(conv.timeout or self.limits.timeout))
            if getattr(conv, "restart", False):
                conv.restart = False  # type: ignore[attr-defined]
                end = worker.session(conv, float(conv.timeout or self.limits.timeout))
        except (OSError, SandboxError, ValueError) as exc:
            # A stuck or confused worker is replaced; the sample is an infrastructure error.
            if worker is not None:
                worker.kill()
            self._workers[slot] = None
            self.restarts += 1
            self.infra_errors += 1
            try:
                conv.feed([], True)
            except Exception:  # noqa: BLE001 - the verdict is an infrastructure error anyway
                pass
            return SessionEnd(f"sandbox: {type(exc).__name__}: {exc}")
        if end.why.startswith("sandbox"):
            self.infra_errors += 1
        return end

    def close(self) -> None:
        with self._lock:
            for w in self._workers:
                if w is not None:
                    w.close()
            self._workers = []
            self._layers = None

    def __enter__(self) -> SandboxPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
