"""Errors raised by rlvr.

Every error derives from one root, so a caller can catch ``RlvrError`` and the CLI can print
one line and exit non-zero (a traceback only with ``--debug``)::

    RlvrError
    ├── ConfigError        a task file, config or argument is wrong; lists every problem at once
    ├── DataError          a dataset or JSONL file cannot be read or has a bad row
    ├── ModelError         a model or tokenizer cannot be built or loaded
    ├── VerifierError      a reward term cannot be built (unknown name, bad options, bad import)
    ├── SandboxError       the code sandbox cannot start or is missing a required layer
    ├── GateError          the inspection gate is missing, incomplete or does not match the run
    ├── PlanError          no configuration fits the hardware, or a plan cannot be written
    └── RunError           a run directory is missing, incomplete or cannot be resumed

An operating-system error (``OSError``: a read-only or full disk, a file in the way) is not an
``RlvrError``: the CLI words it in one place (``rlvr.cli.oserrors``). ``disk_full`` says whether an
error, or what caused it, is a full disk however the library that wrote reports it.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass


class RlvrError(Exception):
    """The root of every error rlvr raises on purpose. ``exit_status`` is the command's status
    when one reaches ``rlvr.cli.main``: 2 for bad input (the classes that say what in a file,
    row, field or argument is wrong), 1 for a refusal or a failure of what rlvr runs."""

    exit_status = 1


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a configuration: where it is, what is wrong, how to fix it."""

    where: str
    what: str
    fix: str = ""

    def __str__(self) -> str:
        text = f"{self.where}: {self.what}"
        return f"{text} (fix: {self.fix})" if self.fix else text


class ConfigError(RlvrError):
    """A task file, config or argument is wrong. Holds every problem found, not just the first."""

    exit_status = 2

    def __init__(self, problems: list[Problem] | Problem | str, *, source: str = "") -> None:
        if isinstance(problems, str):
            problems = [Problem(source or "config", problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        self.source = source
        super().__init__(self._message())

    def _message(self) -> str:
        if len(self.problems) == 1:
            return str(self.problems[0])
        head = f"{len(self.problems)} problems" + (f" in {self.source}" if self.source else "")
        return head + ":\n" + "\n".join(f"  - {p}" for p in self.problems)


class DataError(RlvrError):
    """A dataset or JSONL file cannot be read, or one of its rows is malformed."""

    exit_status = 2


class ModelError(RlvrError):
    """A model or tokenizer cannot be built or loaded."""


class VerifierError(RlvrError):
    """A reward term cannot be built: unknown name, bad options, failed import."""

    exit_status = 2


class SandboxError(RlvrError):
    """The code sandbox cannot start, or a required isolation layer is missing in strict mode."""


class GateError(RlvrError):
    """The inspection gate record is missing, incomplete or does not match what is about to run."""


class PlanError(RlvrError):
    """No configuration fits the hardware, or a plan cannot be produced."""


class RunError(RlvrError):
    """A run directory is missing, incomplete, or cannot be resumed."""


# How a full disk reads when the writer is not a plain ``write()``: safetensors (``StorageFull``),
# SQLite, and torch's ``PyTorchFileWriter``, whose short write ends ``unexpected pos N vs M``.
_FULL_TEXT = (
    "No space left on device",
    "StorageFull",
    "Disk quota exceeded",
    "database or disk is full",
    "unexpected pos",
)


def caused_by(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it (``__cause__``, else ``__context__``), outermost first, each once."""
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and all(cur is not seen for seen in out):
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a write that ran out of space or quota, however the
    library that wrote reports it (an ``OSError``, safetensors' ``StorageFull``, torch's short write)."""
    for cur in caused_by(exc):
        if isinstance(cur, OSError) and cur.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(t in str(cur) for t in _FULL_TEXT):
            return True
    return False
