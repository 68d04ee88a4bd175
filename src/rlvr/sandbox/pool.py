"""The trusted side of the sandbox: a pool of freshly spawned worker processes.

Workers are started with ``subprocess`` (fork + exec of a *fresh* interpreter), never forked from
the trainer: the trainer's address space would break the address-space budget and it holds
secrets (tokens in the environment, open files, GPU handles). Workers get a minimal environment,
no inherited file descriptors and their own session.

The interpreter the workers run must be importable by the unprivileged uid the children drop
to. It is chosen at start-up by probing each candidate *as that uid*: the ``python`` argument,
then Debian's ``/usr/bin/python3``, then the trainer's own interpreter. When none imports (pyenv
under a 0700 ``/root``), the pool runs with the uid layer reported as unavailable, never silently.

The pool owns a second deadline above the worker's: a worker that does not answer within the
sample's timeout plus a grace period is killed and replaced, and the sample is an infrastructure
error (``sandbox``). The pool keeps serving after any sample, whatever it did.
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
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SandboxError

HARNESS = Path(__file__).with_name("harness.py")
LAYERS = ("rlimits", "no_new_privs", "netns", "mountns", "uid", "landlock", "seccomp", "pidns")
LAYER_FIX = {
    "netns": "run as root, or enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)",
    "mountns": "run as root, or enable unprivileged user namespaces",
    "uid": "run the pool as root with an interpreter the uid can import (Debian's /usr/bin/python3: apt-get install python3)",
    "landlock": "use a kernel with Landlock enabled (lsm=landlock,...)",
    "seccomp": "install libseccomp2 (scripts/install-system-deps.sh)",
    "pidns": "run as root, or enable unprivileged user namespaces",
    "no_new_privs": "a Linux kernel >= 3.5",
    "rlimits": "a POSIX system",
}
GRACE_S = 5.0
UID_BASE = 61000
_warned = False


@dataclass(frozen=True)
class Limits:
    """Per-sample limits. ``timeout`` is wall-clock seconds for the whole sample (CPU seconds are
    capped just above it); ``memory_mb`` is an address-space budget over the child's size at fork."""

    timeout: float = 5.0
    memory_mb: int = 1024
    file_mb: int = 16
    open_files: int = 64
    processes: int = 64


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


@dataclass(frozen=True)
class Job:
    """One sample. ``calls`` mode: exec ``code``, then ``setup`` (trusted test scaffolding), then
    evaluate each call expression and return its value; ``residual`` is test code that could not
    be turned into (call, expected) pairs and runs in the child (weaker: it is forgeable).
    ``stdio`` mode: run ``code`` once per input with that stdin and return the whole stdout."""

    code: str
    mode: str = "calls"
    calls: tuple[str, ...] = ()
    setup: str = ""
    residual: str = ""
    inputs: tuple[str, ...] = ()
    timeout: float | None = None

    def to_wire(self, limits: Limits) -> dict[str, object]:
        return {
            "mode": self.mode,
            "code": self.code,
            "calls": list(self.calls),
            "setup": self.setup,
            "residual": self.residual,
            "inputs": list(self.inputs),
            "timeout": float(self.timeout or limits.timeout),
            "max_output": 1 << 20,
        }


@dataclass(frozen=True)
class RawResult:
    """What came back for one job. ``why``: ``done`` (``payload`` holds the child's JSON, still
    untrusted), ``timeout``, ``memory``, ``output_limit``, ``exit:N``, ``signal:NAME`` (the child
    died: its own doing), or ``sandbox:...`` (the infrastructure failed)."""

    why: str
    payload: dict[str, object] | None = None
    wall: float = 0.0
    layers: tuple[str, ...] = field(default_factory=tuple)


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
        out = subprocess.run([python, "-I", "-S", "-c", _PROBE, str(uid)], capture_output=True, timeout=20, env=_worker_env(), cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == b"ok"


def _worker_env() -> dict[str, str]:
    # No secrets: the trainer's environment (tokens, keys) never reaches a worker.
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


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
        hello = self.recv(60.0)
        if hello is None or "hello" not in hello:
            self.errfile.seek(0)
            err = self.errfile.read().decode("utf-8", "replace").strip().splitlines()
            self.kill()
            raise SandboxError(f"a sandbox worker failed to start ({python}): {err[-1] if err else 'no output'}")
        self.layers: dict[str, str] = hello["hello"]

    def send(self, msg: dict[str, object]) -> None:
        data = json.dumps(msg).encode("utf-8")
        data = struct.pack(">I", len(data)) + data
        while data:
            data = data[os.write(self.win, data):]

    def recv(self, timeout: float) -> dict[str, object] | None:
        deadline = time.monotonic() + timeout
        head = self._read(4, deadline)
        if head is None:
            return None
        body = self._read(struct.unpack(">I", head)[0], deadline)
        return None if body is None else json.loads(body)

    def _read(self, n: int, deadline: float) -> bytes | None:
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.rout, selectors.EVENT_READ)
            while len(buf) < n:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(self.rout, n - len(buf))
                if not chunk:
                    return None
                buf += chunk
        return buf

    def kill(self) -> None:
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


# -- the pool ----------------------------------------------------------------------------------
class SandboxPool:
    """A pool of sandbox workers. ``run(jobs)`` runs them in parallel and returns one
    ``RawResult`` per job, in order. Thread-safe; workers start on first use.

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
            },
            "enable": list(self.enable),
        }

    def start(self) -> Layers:
        with self._lock:
            return self._start()

    def _start(self) -> Layers:
        if self._layers is not None:
            return self._layers
        self._python, self._uid, self._note = choose_python(self.python_hint, self.uid_base if "uid" in self.enable else None)
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
    def run(self, jobs: Sequence[Job]) -> list[RawResult]:
        with self._lock:
            self._start()
            results: list[RawResult | None] = [None] * len(jobs)
            todo: queue.Queue[int] = queue.Queue()
            for i in range(len(jobs)):
                todo.put(i)

            def serve(slot: int) -> None:
                while True:
                    try:
                        i = todo.get_nowait()
                    except queue.Empty:
                        return
                    results[i] = self._run_one(slot, jobs[i], i)

            threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in range(min(self.n, len(jobs)))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return [r if r is not None else RawResult("sandbox: no result") for r in results]

    def _run_one(self, slot: int, job: Job, seq: int) -> RawResult:
        worker = self._workers[slot]
        try:
            if worker is None or worker.proc.poll() is not None:
                if worker is not None:
                    worker.kill()
                    self.restarts += 1
                worker = self._workers[slot] = _Worker(self._python, self._cfg(slot))
            wire = job.to_wire(self.limits)
            wire["id"] = seq
            worker.send(wire)
            reply = worker.recv(float(wire["timeout"]) + GRACE_S)  # type: ignore[arg-type]
        except (OSError, SandboxError, ValueError) as exc:
            reply, why = None, f"sandbox: {type(exc).__name__}: {exc}"
        else:
            if reply is None:
                died = worker.proc.poll() is not None
                why = "sandbox: the worker died" if died else "sandbox: the worker did not answer in time"
            else:
                why = ""
        if reply is None or reply.get("id") != seq:
            # A stuck or confused worker is replaced; the sample is an infrastructure error.
            if worker is not None:
                worker.kill()
            self._workers[slot] = None
            self.restarts += 1
            self.infra_errors += 1
            return RawResult(why or "sandbox: reply out of order")
        kind = str(reply.get("why", "sandbox: no status"))
        if kind.startswith("sandbox"):
            self.infra_errors += 1
        payload = None
        if kind == "done":
            try:
                payload = json.loads(str(reply.get("result", "")))
                if not isinstance(payload, dict):
                    payload, kind = None, "garbled"
            except (ValueError, RecursionError):
                payload, kind = None, "garbled"  # the child wrote something else into its channel
        return RawResult(kind, payload, float(reply.get("wall", 0.0)))  # type: ignore[arg-type]

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
