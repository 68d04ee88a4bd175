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
"""

from __future__ import annotations

from dataclasses import dataclass


class RlvrError(Exception):
    """The root of every error rlvr raises on purpose."""


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


class ModelError(RlvrError):
    """A model or tokenizer cannot be built or loaded."""


class VerifierError(RlvrError):
    """A reward term cannot be built: unknown name, bad options, failed import."""


class SandboxError(RlvrError):
    """The code sandbox cannot start, or a required isolation layer is missing in strict mode."""


class GateError(RlvrError):
    """The inspection gate record is missing, incomplete or does not match what is about to run."""


class PlanError(RlvrError):
    """No configuration fits the hardware, or a plan cannot be produced."""


class RunError(RlvrError):
    """A run directory is missing, incomplete, or cannot be resumed."""
