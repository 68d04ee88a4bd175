"""rlvr: GRPO on verifiable rewards, with the gates that keep it honest."""

from __future__ import annotations

from .errors import ConfigError, RlvrError
from .rewards import AnswerFormat, Outcome, Sample, Verdict, build_verifier
from .task import Task, load_task

__version__ = "0.1.0"

__all__ = [
    "AnswerFormat",
    "ConfigError",
    "Outcome",
    "RlvrError",
    "Sample",
    "Task",
    "Verdict",
    "__version__",
    "build_verifier",
    "load_task",
]
