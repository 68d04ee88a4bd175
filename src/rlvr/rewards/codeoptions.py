"""A ``unit_tests`` term's options: the task file's ``options:`` as one frozen, validated object.

Each field has a default and a help text that states its consequence; ``rlvr.rewards.build_verifier``
reads the field names (unknown options are refused with the closest name), and the constructor
checks every value at once, naming each problem (``unit_tests.<field>``, what, how to fix).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import Problem, VerifierError

if TYPE_CHECKING:
    from ..sandbox.checkers import CheckerSpec  # not among rlvr.sandbox's public names

STYLES = ("auto", "assert", "stdio")
EXTRACT = ("auto", "answer", "fence", "whole")


def _opt(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class CodeOptions:
    """What a ``unit_tests`` term runs, on which columns, under which limits."""

    column: str = _opt("tests", "the column holding the row's tests (the task's answer column unless set)")
    style: str = _opt("auto", "assert (Python asserts), stdio (input/output cases) or auto (told apart per row)")
    entry_point: str | None = _opt(None, "the function the tests call, fixed for every row; else entry_point_column")
    entry_point_column: str = _opt("entry_point", "the column naming the function HumanEval-style tests call")
    prefix_column: str | None = _opt(
        None, "the column whose text the program continues (a HumanEval prompt): its helpers run in the test child"
    )
    extract: str = _opt(
        "auto",
        "where the code is: auto (the answer span, else the last fenced block after the think block), answer, "
        "fence, or whole (the completion is the program)",
    )
    timeout: float = _opt(5.0, "seconds per sample; past them the sample is a timeout (see limits_exceeded)")
    memory_mb: int = _opt(1024, "the memory budget per sample; a measured peak at it is a memory verdict")
    partial_credit: bool = _opt(False, "score a wrong program by the fraction of asserts passed (else 0)")
    float_tolerance: float = _opt(0.0, "absolute tolerance when a test compares floats; 0 compares exactly")
    workers: int = _opt(2, "sandbox worker processes (one per core); more run more samples at once")
    strict: bool = _opt(False, "refuse to run when an isolation layer is missing on this machine")
    python: str | None = _opt(
        None, "the interpreter the workers run, tried first (else /usr/bin/python3, then this one): stdlib only"
    )
    limits_exceeded: str = _opt(
        "mask",
        "mask: a timeout or memory verdict is masked only when the row's reference fails the same way, else it "
        "scores 0; wrong: always 0, without running the reference",
    )
    weaker: str = _opt("error", "tests the sandbox cannot run (imports outside the standard library): always error")
    checker: str | Mapping[str, Any] | CheckerSpec | None = _opt(
        None, "how stdin/stdout output is compared: exact, tokens, float, case_insensitive or a custom function"
    )
    checker_column: str = _opt("checker", "the column holding a row's own checker, overriding the task's")
    program_objects: bool = _opt(
        False, "the tests use the program's own objects (every operation dispatches to them); else plain data only"
    )
    reference_column: str | None = _opt(
        None,
        "the column holding the row's reference solution, tried before reference, reference_solution, "
        "canonical_solution, solution, gold_solution: the gold a timeout is settled by",
    )

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise VerifierError("; ".join(str(p) for p in problems))
        object.__setattr__(self, "timeout", float(self.timeout))
        object.__setattr__(self, "float_tolerance", float(self.float_tolerance))
        object.__setattr__(self, "program_objects", bool(self.program_objects))

    def problems(self) -> list[Problem]:
        """Every value that cannot be used, each named with how to fix it."""
        from ..sandbox.checkers import CheckerSpecError, parse_checker

        out = []
        try:  # stdin/stdout rows: which checker compares the output (rlvr.sandbox.checkers)
            parse_checker(self.checker)
        except CheckerSpecError as exc:
            out.append(Problem("unit_tests.checker", str(exc), "exact, tokens, float, case_insensitive or custom"))
        if self.style not in STYLES:
            out.append(Problem("unit_tests.style", f"unknown style {self.style!r}", f"one of {', '.join(STYLES)}"))
        if self.extract not in EXTRACT:
            out.append(
                Problem("unit_tests.extract", f"unknown extraction {self.extract!r}", f"one of {', '.join(EXTRACT)}")
            )
        t = self.timeout
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not 0 < t <= 600:
            out.append(Problem("unit_tests.timeout", f"must be seconds in (0, 600], got {t!r}", "e.g. timeout: 5"))
        m = self.memory_mb
        if not isinstance(m, int) or isinstance(m, bool) or m < 16:
            out.append(Problem("unit_tests.memory_mb", f"must be an integer >= 16, got {m!r}", "e.g. memory_mb: 1024"))
        w = self.workers
        if not isinstance(w, int) or isinstance(w, bool) or w < 1:
            fix = "e.g. workers: 2 (one per core)"
            out.append(Problem("unit_tests.workers", f"must be a positive integer, got {w!r}", fix))
        f = self.float_tolerance
        if not isinstance(f, (int, float)) or f < 0:
            out.append(Problem("unit_tests.float_tolerance", f"must be >= 0, got {f!r}", "0 compares floats exactly"))
        if self.limits_exceeded not in ("mask", "wrong"):
            out.append(
                Problem(
                    "unit_tests.limits_exceeded",
                    f"must be mask or wrong, got {self.limits_exceeded!r}",
                    "mask (the default) masks only when the row's reference fails the same way",
                )
            )
        if self.weaker != "error":
            # `weaker: run` ran such tests inside the candidate's process under the old interpreter;
            # tests now run in real CPython, and what is left (imports outside the standard library)
            # cannot run anywhere in the sandbox, so there is nothing to choose.
            out.append(
                Problem(
                    "unit_tests.weaker",
                    f"must be error, got {self.weaker!r}",
                    "remove the setting: tests run in real CPython in the test child, and a test that imports "
                    "outside the standard library is always an error (masked, never rewarded)",
                )
            )
        return out
