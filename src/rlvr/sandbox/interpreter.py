"""Choosing the interpreter the sandbox workers run, and the environment they get.

The interpreter must be importable by the unprivileged uid the children drop to. It is chosen at
start-up by probing each candidate *as that uid*: the ``python`` argument, then Debian's
``/usr/bin/python3``, then the trainer's own interpreter. When none imports (pyenv under a 0700
``/root``), the pool runs with the uid layer reported as unavailable, never silently.
"""

from __future__ import annotations

import os
import subprocess
import sys

from ..errors import SandboxError

UID_BASE = 61000

PROBE_SCRIPT = """
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
            if probe_python(c, -1):
                return c, None, "not root: children keep this uid"
        raise SandboxError(f"no usable Python interpreter for the sandbox workers (tried {', '.join(candidates)})")
    for c in candidates:
        if c in seen or not os.path.exists(c):
            continue
        seen.append(c)
        if probe_python(c, uid):
            return c, uid, ""
    for c in seen:
        if probe_python(c, -1):
            return c, None, f"no interpreter imports its standard library as uid {uid} (tried {', '.join(seen)})"
    raise SandboxError(f"no usable Python interpreter for the sandbox workers (tried {', '.join(seen)})")


def probe_python(python: str, uid: int) -> bool:
    """Whether ``python`` imports its standard library as ``uid`` (-1: as this process)."""
    try:
        out = subprocess.run(
            [python, "-I", "-S", "-c", PROBE_SCRIPT, str(uid)],
            capture_output=True,
            timeout=20,
            env=worker_env(),
            cwd="/",
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == b"ok"


def worker_env() -> dict[str, str]:
    """The workers' whole environment. No secrets: the trainer's (tokens, keys) never reaches one."""
    return {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
