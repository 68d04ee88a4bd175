"""The code sandbox: run untrusted, model-written Python against unit tests.

Shape: a ``SandboxPool`` in the trainer starts a few *fresh* worker processes (``pool.py``);
each worker forks one child per sample (``harness.py``, child side in ``child.py``). The trainer
runs the row's test file itself (``judge.py``, a small interpreter for Python test code, with its
operations on the candidate's side in ``operations.py``, its expressions in ``expressions.py``,
its values in ``values.py`` and its allowed builtins, modules and guards in ``trusted.py``) and
asks the child only for what the candidate's code produces: names, calls, attributes, indexing,
each answered with plain data. ``plans.py`` plans a row's tests, ``decoding.py`` decodes answers
within limits, ``checks.py`` holds the conversations that judge a sample (and stdin/stdout).
``rlvr sandbox check`` runs ``rewards/codeattacks.py``. The threat model, class by class
with the tests that back it, is in ``docs/sandbox.md``.

Layers, each probed at start-up and reported (``SandboxPool.layers``; ``strict`` refuses to run
unless all are active, otherwise the missing ones are announced once on stderr):

- **rlimits** per child: CPU seconds, an address-space *budget* over the child's size, file size,
  open files, no core dumps; process count when the uid layer is active (the kernel exempts root).
- **no_new_privs**, then **Landlock** (read-only interpreter and libraries, read-write workdir,
  nothing else; TCP bind/connect denied; abstract UNIX sockets and signals scoped) and
  **seccomp** (no exec, no fork except threads, no ``socket()`` or ``connect()``: only
  ``socketpair()`` of stream type, ``sendto()`` without an address; no memfd, SysV IPC or POSIX
  message queues; no ptrace, mount, namespaces, bpf, io_uring, kill of other pids).
- **netns**, **mountns** and an IPC namespace once per worker: no network but a down loopback;
  an empty tmpfs over every top-level directory the interpreter does not need (/etc, /proc,
  /sys, /var, /home, /root, /run, /tmp, the repository, ...), so even ``stat`` finds nothing.
- **workdir**: a fresh, size-capped tmpfs per sample, unmounted afterwards.
- **uid**: one unprivileged uid per worker slot (61000 + slot). Needs root, and an interpreter
  whose standard library that uid can read; the pool probes candidates as the uid.
- **pidns** and **ipcns**: a PID and an IPC namespace per sample; the child is its pid 1, so
  killing it kills everything it left behind, and its SysV objects die with it. The worker owns
  the wall-clock deadline, whatever the child does with its pipes; the pool owns a second one
  above it and replaces a worker that stops answering.

Verdict integrity does not depend on the layers: expected values and every operator that decides
pass or fail stay in the trainer; the child's exit code, printed text, exceptions it claims and
any status it writes decide nothing; the outcome class (timeout, memory, ended abnormally) comes
from what the worker measured. The worker never reads a job or an answer (it moves them with
``splice``), so a child forked from it cannot find an earlier sample's data. Tests the trusted
side cannot run are *weaker*: refused by default, or run in the child and flagged.

Threat model, honestly: every layer shares the host kernel, so a kernel exploit escapes all of
them. This is enough for training on model-written code on a machine you control; adversarial
code at scale belongs inside a VM boundary as well (Firecracker, gVisor, a cloud sandbox).
Landlock and seccomp stop what they were measured to stop (see ``rlvr sandbox check``), not
every side channel: timing, CPU cache and memory-pressure effects on co-located processes are
out of scope; the names of top-level directories stay visible. Without root the uid layer is
missing (children keep the caller's uid); without unprivileged user namespaces the namespace
layers are missing too. Linux only; Python only; the workers' interpreter has the standard
library and nothing else.
"""

from __future__ import annotations

from .checks import Judgement, ScriptResult, judge_stdio, judge_tests, read_script, script_job, stdio_job, tests_job
from .interpreter import choose_python
from .plans import BadTestsError, CheckPlan, plan_stdio, plan_tests
from .pool import LAYERS, Layers, Limits, SandboxPool
from .worker import Job, Reply, SessionEnd

__all__ = [
    "LAYERS",
    "BadTestsError",
    "CheckPlan",
    "Job",
    "Judgement",
    "Layers",
    "Limits",
    "Reply",
    "SandboxPool",
    "ScriptResult",
    "SessionEnd",
    "choose_python",
    "judge_stdio",
    "judge_tests",
    "plan_stdio",
    "plan_tests",
    "read_script",
    "script_job",
    "stdio_job",
    "tests_job",
]
