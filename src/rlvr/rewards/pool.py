"""Hard timeouts for verifier calls: a small pool of worker processes, killed on timeout.

Why a process pool and not ``signal.alarm``: an alarm only fires in the main thread of the main
interpreter, so under TRL's reward threads, an async server or a DataLoader worker it silently
does nothing (Math-Verify's ``parse`` raises ``ValueError`` there, and several trainers then
score the sample 0). A worker process can always be killed, from any thread of any process.

How it works:

- Each worker is a fresh interpreter started with ``subprocess`` (``python -m
  rlvr.rewards.pool``), never forked from the trainer, so it inherits neither the trainer's
  address space nor its threads, and it also works inside daemonic processes, which
  ``multiprocessing`` forbids from having children. It preloads the modules it will need
  (sympy takes about half a second to import) *before* it reports ready, so start-up never
  counts against a call's timeout.
- A call sends ``(module:function, args)`` as a length-prefixed pickle frame over the worker's
  stdin and waits on its stdout with ``select`` until the deadline. Past the deadline the worker
  is killed (SIGKILL) and replaced lazily by the next call that needs one; the call returns a
  ``Result`` with ``error_kind="timeout"``.
- Workers set ``RLIMIT_AS`` (default 2 GiB), so ``10^{10^{10}}``-style inputs that try to
  build a ten-billion-digit integer fail with ``MemoryError`` (``error_kind="memory"``) instead
  of taking the host down. A crash of the worker itself is ``error_kind="crash"``.

Limits, honestly: this bounds time and memory, it does not isolate. Workers run our own parsing
code on model text (no ``eval``), with the trainer's user id and network; untrusted *code* goes
to ``rlvr.sandbox``. Pickle flows both ways only between this process and workers it started.
A timeout kill costs a worker restart (about 0.5-1 s) the next time one is needed. A worker
whose parent dies exits within about a second (a watchdog thread), even mid-computation.
"""

from __future__ import annotations

import atexit
import importlib
import os
import pickle
import queue
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

_HEADER = struct.Struct("!Q")
_STARTUP_TIMEOUT = 60.0


@dataclass(frozen=True)
class Result:
    """The outcome of one call: ``ok`` with ``value``, or an error kind (``timeout``, ``memory``,
    ``crash``) and a one-line detail."""

    ok: bool
    value: Any = None
    error_kind: str | None = None
    detail: str = ""


class _Timeout(Exception):
    pass


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Timeout()
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise _Timeout()
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("worker closed its pipe")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _write_frame(stream: Any, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_frame(fd: int, deadline: float | None) -> Any:
    (n,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    return pickle.loads(_read_exact(fd, n, deadline))


class _Worker:
    def __init__(self, preload: Sequence[str], memory_mb: int) -> None:
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        # The worker imports rlvr from wherever this process did (an editable checkout or a
        # wheel), so put our own sys.path first.
        env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rlvr.rewards.pool", str(memory_mb), *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        assert self.proc.stdout is not None
        self.fd = self.proc.stdout.fileno()
        try:
            hello = _read_frame(self.fd, time.monotonic() + _STARTUP_TIMEOUT)
        except (_Timeout, EOFError) as exc:
            self.kill()
            raise RuntimeError(f"verifier worker did not start: {type(exc).__name__}") from None
        if hello != "ready":
            self.kill()
            raise RuntimeError(f"verifier worker failed to start: {hello}")

    def call(self, func: str, args: tuple[Any, ...], timeout: float) -> Result:
        try:
            _write_frame(self.proc.stdin, (func, args))
            status, payload = _read_frame(self.fd, time.monotonic() + timeout)
        except _Timeout:
            self.kill()
            return Result(False, error_kind="timeout", detail=f"no result within {timeout:g} s (worker killed)")
        except (EOFError, BrokenPipeError, OSError) as exc:
            self.kill()
            return Result(False, error_kind="crash", detail=f"verifier worker died: {type(exc).__name__}")
        if status == "ok":
            return Result(True, payload)
        kind, detail = payload
        return Result(False, error_kind=kind, detail=detail)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not wait
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass


class WorkerPool:
    """``size`` worker processes; ``call`` and ``map`` are safe from any thread.

    ``preload``: modules each worker imports before it reports ready. ``memory_mb``: the
    address-space limit of each worker.
    """

    def __init__(self, size: int = 1, preload: Iterable[str] = (), memory_mb: int = 2048) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.size = size
        self.preload = tuple(preload)
        self.memory_mb = memory_mb
        self._idle: queue.LifoQueue[_Worker | None] = queue.LifoQueue()
        for _ in range(size):
            self._idle.put(None)  # a slot; the worker starts on first use
        self._closed = False
        self.restarts = 0
        self._lock = threading.Lock()

    def call(self, func: str, *args: Any, timeout: float = 5.0) -> Result:
        """Run ``func`` ("module:function") in a worker, bounded by ``timeout`` seconds."""
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        worker = self._idle.get()
        try:
            if worker is None or not worker.alive:
                if worker is not None:
                    with self._lock:
                        self.restarts += 1
                try:
                    worker = _Worker(self.preload, self.memory_mb)
                except RuntimeError as exc:
                    worker = None
                    return Result(False, error_kind="crash", detail=str(exc))
            return worker.call(func, args, timeout)
        finally:
            self._idle.put(worker if worker is not None and worker.alive else None)

    def map(self, func: str, arglist: Sequence[tuple[Any, ...]], timeout: float = 5.0) -> list[Result]:
        """``call`` over many argument tuples, up to ``size`` at a time, results in order."""
        if not arglist:
            return []
        if self.size == 1 or len(arglist) == 1:
            return [self.call(func, *a, timeout=timeout) for a in arglist]
        with ThreadPoolExecutor(self.size) as ex:
            return list(ex.map(lambda a: self.call(func, *a, timeout=timeout), arglist))

    def warm(self) -> None:
        """Start every worker now (so a benchmark or the first batch does not pay start-up)."""
        workers = [self._idle.get() for _ in range(self.size)]
        try:
            for i, w in enumerate(workers):
                if w is None or not w.alive:
                    workers[i] = _Worker(self.preload, self.memory_mb)
        finally:
            for w in workers:
                self._idle.put(w)

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                w = self._idle.get_nowait()
            except queue.Empty:
                break
            if w is not None:
                w.kill()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_shared: dict[tuple[Any, ...], WorkerPool] = {}
_shared_lock = threading.Lock()


def shared_pool(preload: Iterable[str] = (), size: int | None = None, memory_mb: int = 2048) -> WorkerPool:
    """One pool per (process, preload, size), reused by every verifier that asks for it.

    The default size is ``min(4, cpu count)``. A forked child gets its own pool, never its
    parent's pipes.
    """
    size = size or min(4, os.cpu_count() or 1)
    key = (os.getpid(), tuple(preload), size, memory_mb)
    with _shared_lock:
        pool = _shared.get(key)
        if pool is None or pool._closed:
            pool = _shared[key] = WorkerPool(size, preload, memory_mb)
        return pool


@atexit.register
def _close_shared() -> None:
    for key, pool in list(_shared.items()):
        if key[0] == os.getpid():
            pool.close()


# -- the worker side ---------------------------------------------------------------------------
def _serve(memory_mb: int, preload: Sequence[str]) -> None:  # pragma: no cover - runs in a worker
    import resource

    limit = memory_mb * 1024 * 1024
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        pass
    sys.setrecursionlimit(5000)
    # If the parent dies (even by SIGKILL) a worker busy in a long computation would never read
    # the EOF on its stdin; a watchdog thread notices the re-parenting and exits.
    parent = os.getppid()

    def watchdog() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()
    out = sys.stdout.buffer
    inp = sys.stdin.buffer.fileno()
    sys.stdout = sys.stderr  # a stray print must not corrupt the frame stream
    try:
        for name in preload:
            importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001
        _write_frame(out, f"preload failed: {type(exc).__name__}: {exc}")
        return
    _write_frame(out, "ready")
    funcs: dict[str, Any] = {}
    while True:
        try:
            func, args = _read_frame(inp, None)
        except EOFError:
            return
        try:
            fn = funcs.get(func)
            if fn is None:
                mod, _, attr = func.partition(":")
                fn = funcs[func] = getattr(importlib.import_module(mod), attr)
            reply: tuple[str, Any] = ("ok", fn(*args))
        except MemoryError:
            reply = ("error", ("memory", f"out of memory (limit {memory_mb} MiB)"))
        except RecursionError:
            reply = ("error", ("crash", "input nested too deeply (recursion limit)"))
        except Exception as exc:  # noqa: BLE001 - every failure goes back as an error result
            reply = ("error", ("crash", f"{type(exc).__name__}: {str(exc)[:200]}"))
        try:
            _write_frame(out, reply)
        except MemoryError:
            _write_frame(out, ("error", ("memory", "out of memory while replying")))


if __name__ == "__main__":  # pragma: no cover
    _serve(int(sys.argv[1]), sys.argv[2:])
