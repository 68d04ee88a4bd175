"""The oracle of the sandbox's property tests: plain CPython running a program and a test file
together, the way the official harnesses do (one process, ``program + "\\n" + tests``), and the
comparison every such test makes with the sandbox's verdict.

The rule it checks (DESIGN.md, the sandbox): a ``correct`` verdict implies plain CPython passes;
where CPython passes and the sandbox does not say ``correct``, the sandbox must have refused
(``unsupported``), never scored the program ``wrong`` on its own account.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from rlvr.rewards.base import Outcome, Sample, Verdict
from rlvr.rewards.code import UnitTests

DONE = "__the_whole_test_file_ran__"


@dataclass(frozen=True)
class Plain:
    """What plain CPython did: ``passed`` (exit status 0 and the whole test file ran) and its
    stderr's last line (why it failed)."""

    passed: bool
    why: str


def plain_cpython(program: str, tests: str, timeout: float = 30.0) -> Plain:
    """Run ``program`` then ``tests`` in one fresh ``python -I -S`` process."""
    source = f"{program}\n{tests}\nprint({DONE!r})\n"
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", source], capture_output=True, timeout=timeout, text=True)
    lines = proc.stderr.strip().splitlines()
    return Plain(proc.returncode == 0 and DONE in proc.stdout, lines[-1] if lines else "")


def sandbox(pool: object, program: str, tests: str, **options: object) -> Verdict:
    """The ``unit_tests`` verdict on ``program`` against ``tests`` (the row's ``tests`` column)."""
    verifier = UnitTests(timeout=5.0, memory_mb=512, pool=pool, **options)  # type: ignore[arg-type]
    return verifier.verify(Sample(f"```python\n{program}```", row={"tests": tests}))


def unsupported(v: Verdict) -> bool:
    return v.outcome is Outcome.WRONG and v.score == 0.0 and v.detail.startswith("unsupported: ")


def agrees(v: Verdict, plain: Plain) -> bool:
    """Sandbox ``correct`` implies CPython passes; CPython passes and the sandbox not ``correct``
    only as ``unsupported``."""
    if v.outcome is Outcome.CORRECT:
        return plain.passed
    return not plain.passed or unsupported(v)
