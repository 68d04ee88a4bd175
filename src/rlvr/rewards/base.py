"""What every verifier returns, and what it is given.

A verifier answers one question about one completion and says *how sure it is* through the
outcome, not just the score:

- ``correct`` / ``wrong``: it decided.
- ``unparseable``: the completion has no answer span to judge (a format failure of the policy).
- ``error``: the verifier could not decide (timeout, crash, sandbox failure, a ground truth that
  does not parse). This is never a wrong answer: the TRL adapter masks such a sample out of its
  group's baseline instead of scoring it 0 (see ``rlvr.rewards.combine``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from .episode import Episode
from .rules import untrusted


class Outcome(StrEnum):
    CORRECT = "correct"
    WRONG = "wrong"
    UNPARSEABLE = "unparseable"
    ERROR = "error"


@dataclass(frozen=True)
class Verdict:
    """One verifier's judgement of one completion.

    ``score`` is ``None`` exactly when the outcome is ``error``. ``answer`` is the extracted
    answer text and ``span`` its (start, end) character offsets in the completion, when the
    verifier extracts one (the review page highlights it). ``error_kind`` is ``timeout``,
    ``crash``, ``ground_truth``, ``sandbox``, ``memory`` or ``weaker`` (``unit_tests``: tests the
    trusted side cannot run) for errors. ``parts`` names the
    components of a composed score (a length wrapper's ``base`` and ``penalty``), so each stays
    loggable on its own (``rewards/<term>/<part>/mean``). ``details``: per-test results for
    the review page (``unit_tests``: one dict per assert or stdin/stdout input, see
    ``rlvr.sandbox.checks.Judgement``); display only, they decide nothing.
    """

    outcome: Outcome
    score: float | None
    detail: str = ""
    answer: str | None = None
    span: tuple[int, int] | None = None
    error_kind: str | None = None
    parts: tuple[tuple[str, float], ...] = ()
    details: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if (self.outcome is Outcome.ERROR) != (self.score is None):
            raise ValueError(f"a verdict's score is None exactly when it is an error: {self}")

    @classmethod
    def correct(cls, score: float = 1.0, **kw: Any) -> Verdict:
        return cls(Outcome.CORRECT, float(score), **kw)

    @classmethod
    def wrong(cls, score: float = 0.0, **kw: Any) -> Verdict:
        return cls(Outcome.WRONG, float(score), **kw)

    @classmethod
    def unparseable(cls, detail: str, score: float = 0.0, **kw: Any) -> Verdict:
        return cls(Outcome.UNPARSEABLE, float(score), detail=detail, **kw)

    @classmethod
    def error(cls, detail: str, kind: str = "crash", **kw: Any) -> Verdict:
        return cls(Outcome.ERROR, None, detail=detail, error_kind=kind, **kw)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"outcome": self.outcome.value, "score": self.score}
        if self.detail:
            out["detail"] = self.detail
        if self.answer is not None:
            out["answer"] = self.answer
        if self.span is not None:
            out["span"] = list(self.span)
        if self.error_kind:
            out["error_kind"] = self.error_kind
        if self.parts:
            out["parts"] = dict(self.parts)
        if self.details:
            out["details"] = [dict(d) for d in self.details]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        span = data.get("span")
        return cls(
            Outcome(data["outcome"]),
            None if data.get("score") is None else float(data["score"]),
            detail=data.get("detail", ""),
            answer=data.get("answer"),
            span=tuple(span) if span else None,  # type: ignore[arg-type]
            error_kind=data.get("error_kind"),
            parts=tuple((str(k), float(v)) for k, v in (data.get("parts") or {}).items()),
            details=tuple(dict(d) for d in data.get("details") or ()),
        )


@dataclass(frozen=True)
class Sample:
    """What a verifier sees: the prompt, the completion text, the dataset row, the token ids, and
    for a sample with tool calls its episode (``completion`` is then the episode's final answer;
    None: one turn, no calls)."""

    completion: str
    row: Mapping[str, Any] = field(default_factory=dict)
    prompt: str = ""
    completion_ids: Sequence[int] | None = None
    episode: Episode | None = None

    @classmethod
    def of_episode(cls, episode: Episode, row: Mapping[str, Any], prompt: str = "", **kw: Any) -> Sample:
        """The sample of an episode: its final answer is the completion the answer terms judge."""
        return cls(completion=episode.final, row=row, prompt=prompt, episode=episode, **kw)


@dataclass(frozen=True)
class Reads:
    """What a verifier reads from each dataset row, and the fixed things it checks against.

    Declared by the verifier (``BaseVerifier.reads``) so that a tool which builds rows and
    completions for it (the reward-hack audit) reads this contract, never the verifier's
    attribute names: renaming an attribute cannot silently turn rows "untested".

    ``answer``: the column holding the row's ground truth (exact, math, judge: the reference
    answer; unit_tests: the tests), or None. ``columns``: every row column it reads, ``answer``
    included (what a worker process needs of a row). ``schema``: the JSON schema every answer is
    validated against, when it is fixed (json_schema's ``schema`` or ``model``);
    ``schema_column``: the column holding a per-row schema instead. ``expected_column``: the
    column holding the expected value (tool_call: the expected call), or None when the verifier
    compares with none. ``tools``: tool name -> its parameters schema (tool_call). ``tests``:
    the column holding unit tests; ``entry_point`` the fixed function name they call, else
    ``entry_point_column``; ``prefix_column``: the column whose text the program continues (a
    HumanEval prompt that ends inside a function); ``checker_column``: the column holding a row's
    own stdout checker. ``references``: the columns that may hold the
    row's reference solution (unit_tests), in the order they are tried: the first a row fills is
    its gold.
    """

    answer: str | None = None
    columns: tuple[str, ...] = ()
    schema: Mapping[str, Any] | None = None
    schema_column: str | None = None
    expected_column: str | None = None
    tools: Mapping[str, Mapping[str, Any]] | None = None
    tests: str | None = None
    entry_point: str | None = None
    entry_point_column: str | None = None
    prefix_column: str | None = None
    checker_column: str | None = None
    references: tuple[str, ...] = ()


@runtime_checkable
class Verifier(Protocol):
    """A reward term's judge. ``kind`` tells the audit which exploits apply to it:
    ``format``, ``answer`` (exact/math), ``json``, ``tool_call``, ``code``, ``length``, ``judge``
    or ``custom``."""

    kind: str

    def verify(self, sample: Sample) -> Verdict: ...

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]: ...


class BaseVerifier:
    """Convenience base: ``verify_batch`` loops over ``verify``; override it to parallelise.

    A crash inside ``verify`` becomes an ``error`` verdict, never a wrong answer.
    ``shapes_length``: the score also depends on the completion's length (a length term, or a
    custom function that says so), so the audit runs its length probes on it too.
    """

    kind: str = "custom"
    shapes_length: bool = False

    def reads(self) -> Reads | None:
        """What this verifier reads from a row (see ``Reads``); None when it does not say, as a
        custom verifier may not: the audit then falls back to rlvr's column conventions.
        Every built-in verifier overrides this."""
        return None

    def verify(self, sample: Sample) -> Verdict:  # pragma: no cover - abstract
        raise NotImplementedError

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        out = []
        for i, s in enumerate(samples):
            try:
                out.append(self.verify(s))
            except Exception as exc:  # noqa: BLE001 - a crash is an undecided sample, not a 0
                out.append(Verdict.error(f"row {i}: {type(exc).__name__}: {exc}", kind="crash"))
        return out


def ground_truth(row: Mapping[str, Any], column: str) -> str | None:
    """The row's expected answer as text, or None when it is missing (an ``error`` verdict).

    A whole number stored as a float (``42.0``: what pandas and many JSON writers make of an
    integer column with a gap) reads as ``"42"``, the way a person would write it; other
    floats read as their shortest round-tripping form (``0.1``, not ``0.1000000000000000055``).
    A non-finite float (NaN, a missing cell in a numeric column) is a missing ground truth.
    """
    value = row.get(column)
    if value is None or isinstance(value, bool):
        return None if value is None else str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return repr(value)
    text = untrusted.strip(str(value))
    return text or None


def reads_of(verifier: Verifier) -> Reads | None:
    """What ``verifier`` declares it reads; None for one that declares nothing (a custom object
    that is not a ``BaseVerifier``, or one that does not override ``reads``)."""
    return verifier.reads() if isinstance(verifier, BaseVerifier) else None


def kind_of(verifier: Verifier) -> str:
    """The verifier's ``kind``; ``custom`` for an object that does not set one."""
    return str(getattr(verifier, "kind", "custom") or "custom")
