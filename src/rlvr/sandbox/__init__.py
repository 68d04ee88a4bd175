"""The code sandbox: run untrusted, model-written Python against unit tests.

Shape: a ``SandboxPool`` in the trainer starts a few *fresh* worker processes (``pool.py``);
each worker forks one child per sample (``harness.py``); the child returns outputs and the
trusted side decides the verdict (``checks.py``). ``rlvr sandbox check`` runs ``attacks.py``.

Layers, each probed at start-up and reported (``SandboxPool.layers``; ``strict`` refuses to run
unless all are active, otherwise the missing ones are announced once on stderr):

- **rlimits** per child: CPU seconds, an address-space *budget* over the child's size, file size,
  open files, no core dumps; process count when the uid layer is active (the kernel exempts root).
- **no_new_privs**, then **Landlock** (read-only interpreter and libraries, read-write workdir,
  nothing else; TCP bind/connect denied; abstract UNIX sockets and signals scoped) and
  **seccomp** (no exec, no fork except threads, only ``AF_UNIX`` sockets, no ptrace, mount,
  namespaces, bpf, io_uring, kill of other pids).
- **netns** and **mountns** once per worker: no network but a down loopback; tmpfs over /tmp,
  /run, /dev/shm, /home and /root (hides pathname UNIX sockets and files there).
- **uid**: one unprivileged uid per worker slot (61000 + slot). Needs root, and an interpreter
  whose standard library that uid can read; the pool probes candidates as the uid.
- **pidns**: a PID namespace per sample; the child is its pid 1, so killing it kills everything
  it left behind. The worker owns the wall-clock deadline; the pool owns a second one above it
  and replaces a worker that stops answering.

Verdict integrity does not depend on the layers: expected values never enter the child; the
child's exit code, printed text and any status it claims are ignored; values come back as tagged
JSON and are compared with exact types. Tests that cannot be turned into (call, expected) pairs
run in the child and are flagged *weaker*.

Threat model, honestly: every layer shares the host kernel, so a kernel exploit escapes all of
them. This is enough for training on model-written code on a machine you control; adversarial
code at scale belongs inside a VM boundary as well (Firecracker, gVisor, a cloud sandbox).
Landlock and seccomp stop what they were measured to stop (see ``rlvr sandbox check``), not
every side channel: timing, CPU cache and memory-pressure effects on co-located processes are
out of scope. Without root the uid layer is missing (children keep the caller's uid); without
unprivileged user namespaces the namespace layers are missing too. Linux only; Python only; the
workers' interpreter has the standard library and nothing else.
"""

from __future__ import annotations

from .checks import (
    BadTestsError,
    CheckPlan,
    Judgement,
    LegacyRun,
    StdioRun,
    TestRun,
    decode,
    plan_stdio,
    plan_tests,
)
from .pool import LAYERS, Conversation, Layers, Limits, SandboxPool, SessionEnd, choose_python

__all__ = [
    "LAYERS",
    "BadTestsError",
    "CheckPlan",
    "Conversation",
    "Judgement",
    "Layers",
    "LegacyRun",
    "Limits",
    "SandboxPool",
    "SessionEnd",
    "StdioRun",
    "TestRun",
    "choose_python",
    "decode",
    "plan_stdio",
    "plan_tests",
]
