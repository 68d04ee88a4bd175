"""The code sandbox: run untrusted, model-written Python against unit tests, verdicts from real
CPython.

Shape: a ``SandboxPool`` in the trainer starts a few *fresh* worker processes (``pool.py``,
``worker.py``); each sample is one ``Job`` (``checks.tests_job``, ``stdio_job``, ``script_job``).
What runs in a worker and its children lives in ``inside/`` (standard library only, importing
nothing from this trainer side; its docstring draws the line). For an assert-style sample the
worker (``inside/harness.py``, relaying with ``inside/relay.py``) forks a *candidate child* that
holds the program (``inside/child.py``) and a *test child* that runs the row's test file in real
CPython (``inside/testchild.py``), reaching the program's objects only through a proxy
(``inside/proxy.py``): every operation is a request over a pipe, every answer plain data decoded
strictly into fresh builtins and standard containers (``inside/wire.py``), or a handle. The test child
reports each assert on its own pipe the moment it is decided; a failed assert is final;
expected values never leave it. The rule: a ``correct`` verdict implies plain CPython passes the
same program and tests; what the boundary cannot keep exact (a program object used for more
than a call, its truth or iteration, unless the task sets ``program_objects``) ends the sample
``unsupported``, scored wrong (``docs/sandbox.md`` lists each case). For a stdin/stdout sample
the worker runs the program as a script, one fresh child per input, and the trainer compares
each input's raw output with a named checker as it arrives (``checkers.py``). ``plans.py``
parses a row's tests once in the trainer; ``checks.py`` turns what came back into a
``Judgement`` with per-test details. ``rlvr sandbox check`` runs ``rewards/rules/codeattacks.py``.
The threat model, claim by claim with the tests that back it, is in ``docs/sandbox.md``.

Layers, each probed at start-up and reported (``SandboxPool.layers``; ``strict`` refuses to run
unless all are active, otherwise the missing ones are announced once on stderr). They apply to
both children; the candidate child also gets a fresh PID namespace and the sample's workdir:

- **rlimits** per child: CPU seconds, an address-space *budget* over the child's size, file size,
  open files, no core dumps; process count when the uid layer is active (the kernel exempts root).
- **no_new_privs**, then **Landlock** (read-only interpreter and libraries; read-write workdir
  for the candidate, nothing writable for the test child; TCP bind/connect denied; abstract UNIX
  sockets and signals scoped) and **seccomp** (no exec, no fork except threads, no ``socket()``
  or ``connect()``: only ``socketpair()`` of stream type, ``sendto()`` without an address; no
  memfd, SysV IPC or POSIX message queues; no ptrace, process_vm_readv, mount, namespaces, bpf,
  io_uring, kill of other pids).
- **netns**, **mountns** and an IPC namespace once per worker: no network but a down loopback;
  an empty tmpfs over every top-level directory the interpreter does not need (/etc, /proc,
  /sys, /var, /home, /root, /run, /tmp, the repository, ...), so even ``stat`` finds nothing.
- **workdir**: a fresh, size-capped tmpfs per sample, unmounted afterwards.
- **uid**: unprivileged uids per worker slot: 61000 + slot for the candidate child, 1000 more
  for the test child (never the same uid). Needs root, and an interpreter whose standard library
  those uids can read; the pool probes candidates as the uids.
- **pidns** and **ipcns**: a PID and an IPC namespace per candidate child; it is their pid 1, so
  killing it kills everything it left behind, and the test child is outside it (the candidate
  cannot name it to signal or trace it). The worker owns the wall-clock deadline; the pool owns
  a second one above it and replaces a worker that stops answering.

Verdict integrity does not depend on the layers: the candidate child holds only its two pipes
to the test child (never the job, the result pipe or the expected values); the program's exit
code, printed text, exceptions it claims and anything it writes decide nothing; the outcome
class (timeout, memory) comes from what the worker measured. The worker never reads a job, a
record or an output (it moves them with ``splice``), so a child forked from it cannot find an
earlier sample's data. Only tests that import modules outside the standard library cannot run
(*weaker*: refused, never rewarded).

Threat model, honestly: every layer shares the host kernel, so a kernel exploit escapes all of
them. This is enough for training on model-written code on a machine you control; adversarial
code at scale belongs inside a VM boundary as well (Firecracker, gVisor, a cloud sandbox).
Landlock and seccomp stop what they were measured to stop (see ``rlvr sandbox check``), not
every side channel: timing, CPU cache and memory-pressure effects on co-located processes are
out of scope; the names of top-level directories stay visible. Without root the uid layer is
missing (both children keep the caller's uid); without unprivileged user namespaces the
namespace layers are missing too. Linux only; Python only; the workers' interpreter has the
standard library and nothing else.
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
