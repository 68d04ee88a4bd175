"""The trusted side of the sandbox: a pool of freshly spawned worker processes.

Workers are started with ``subprocess`` (fork + exec of a *fresh* interpreter, chosen in
``interpreter.py``), never forked from the trainer: the trainer's address space would break the
address-space budget and it holds secrets (tokens in the environment, open files, GPU handles).
Workers get a minimal environment, no inherited file descriptors and their own session.

Each sample is one ``Job`` run by one worker (``worker.py``). The pool owns a second deadline
above the worker's: a worker that does not answer within the sample's timeout plus a grace
period is killed and replaced, and the sample is an infrastructure error (``sandbox``). The pool
keeps serving after any sample, whatever it did.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import SandboxError
from .interpreter import UID_BASE, choose_python
from .worker import Job, Reply, SessionEnd, Worker

LAYERS = ("rlimits", "no_new_privs", "netns", "mountns", "ipcns", "workdir", "uid", "landlock", "seccomp", "pidns")
LAYER_FIX = {
    "netns": "run as root, or enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)",
    "mountns": "run as root, or enable unprivileged user namespaces",
    "uid": "run the pool as root with an interpreter the uid can import"
    " (Debian's /usr/bin/python3: apt-get install python3)",
    "landlock": "use a kernel with Landlock enabled (lsm=landlock,...)",
    "seccomp": "install libseccomp2 (scripts/install-system-deps.sh)",
    "pidns": "run as root, or enable unprivileged user namespaces",
    "ipcns": "run as root, or enable unprivileged user namespaces (x86-64: the per-sample clone)",
    "workdir": "run as root, or enable unprivileged user namespaces (a tmpfs per sample needs a mount namespace)",
    "no_new_privs": "a Linux kernel >= 3.5",
    "rlimits": "a POSIX system",
}
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


class SandboxPool:
    """A pool of sandbox workers. ``run(jobs)`` runs them in parallel and returns one ``Reply``
    per job, in order. Thread-safe; workers start on first use.

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
        self._workers: list[Worker | None] = []
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
        first = Worker(self._python, self._cfg(0))
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
            self._workers[i] = Worker(self._python, self._cfg(i))
        self._layers = layers
        return layers

    @property
    def layers(self) -> Layers:
        return self.start()

    # running
    def run(self, jobs: Sequence[Job]) -> list[Reply]:
        """Run each job on some worker, in parallel; one ``Reply`` per job, in order. Whatever a
        sample did, the pool keeps serving."""
        with self._lock:
            self._start()
            results: list[Reply | None] = [None] * len(jobs)
            todo: queue.Queue[int] = queue.Queue()
            for i in range(len(jobs)):
                todo.put(i)

            def serve(slot: int) -> None:
                while True:
                    try:
                        i = todo.get_nowait()
                    except queue.Empty:
                        return
                    results[i] = self._run_one(slot, jobs[i])

            threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in range(min(self.n, len(jobs)))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return [r if r is not None else Reply((), SessionEnd("sandbox: no result")) for r in results]

    def _run_one(self, slot: int, job: Job) -> Reply:
        worker = self._workers[slot]
        try:
            if worker is None or worker.proc.poll() is not None:
                if worker is not None:
                    worker.kill()
                    self.restarts += 1
                worker = self._workers[slot] = Worker(self._python, self._cfg(slot))
            reply = worker.session(job)
        except (OSError, SandboxError, ValueError) as exc:
            # A stuck or confused worker is replaced; the sample is an infrastructure error.
            if worker is not None:
                worker.kill()
            self._workers[slot] = None
            self.restarts += 1
            self.infra_errors += 1
            return Reply((), SessionEnd(f"sandbox: {type(exc).__name__}: {exc}"))
        if reply.end.why.startswith("sandbox"):
            self.infra_errors += 1
        return reply

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
