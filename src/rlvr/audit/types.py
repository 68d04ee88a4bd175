"""The audit's shared types: an exploit (``Exploit``), what it may use on one prompt
(``Context``), one trick it builds (``Attempt``), what a structured row expects (``Spec``) and
one sampled prompt (``PromptCase``).

Every audit module imports these from here, so the modules that build exploits (``answers``,
``structured``, ``code``) never import each other, and ``exploits`` (the library) imports them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..rewards.format import AnswerFormat


@dataclass(frozen=True)
class Spec:
    """What a structured row expects: ``correct`` and ``wrong`` bodies (before presentation) and
    the parsed pieces the exploits need."""

    kind: str
    correct: str
    wrong: str
    expected: Any = None
    schema: Mapping[str, Any] | None = None
    entry_point: str | None = None
    tests: str | None = None
    stdio: list[tuple[str, str]] | None = None
    lead: str = ""
    candidates: tuple[str, ...] = ()  # other correct bodies to try when ``correct`` is rejected
    required: tuple[str, ...] = ()
    typed: tuple[str, ...] = ()
    compares: bool = False  # the term compares with the expected value (not only a schema)
    properties: Mapping[str, Any] | None = None  # the schema's properties for the object (formats, patterns)


@dataclass(frozen=True)
class PromptCase:
    """One sampled prompt: its row, the rendered prompt text, the row's ground truth (``gold``),
    a wrong answer made from it (``wrong``) and the user's own text (``question``)."""

    row: Mapping[str, Any]
    prompt: str
    gold: str | None
    wrong: str | None
    question: str = ""


@dataclass(frozen=True)
class Attempt:
    """One trick: its orderings (scored as the minimum) and, rarely, a replacement row.

    ``reference``: a completion the trick is measured against instead of the short correct
    answer -- the same loop written with spaces, a correct answer padded to the same length.
    The attempt is a hit when it scores above its reference (or level with it, unless the
    exploit is ``strict``)."""

    completions: tuple[str, ...]
    row: Mapping[str, Any] | None = None
    reference: str | None = None


@dataclass(frozen=True)
class Context:
    """Everything an exploit may use for one prompt.

    ``wrap(text)`` puts text where the term expects its answer (the task's answer span for answer
    terms; for structured terms, the presentation whose correct completion the term accepted).
    ``pad(head, tail, unit=FILLER, tokens=max_tokens)`` repeats ``unit`` between head and tail until
    the whole is about ``tokens`` long (measured with the task's tokenizer when it loads). ``gold``
    is the row's ground truth, ``wrong`` a perturbed answer that neither contains it nor
    is contained in it (so a substring check cannot mistake one for the other), ``distractors``
    other rows' answers.
    """

    prompt: str
    row: Mapping[str, Any]
    fmt: AnswerFormat
    gold: str | None
    wrong: str | None
    distractors: tuple[str, ...] = ()
    answer_column: str = "answer"
    max_tokens: int = 256
    pad: Callable[..., str] = field(default=lambda head, tail, unit="", tokens=0: head + unit + tail)
    wrap: Callable[[str], str] | None = None
    structured: Spec | None = None  # for json / tool_call / code terms
    seed: int = 0
    question: str = ""  # the user's text (the last user message of a chat prompt)

    def span(self, text: str) -> str:
        return (self.wrap or self.fmt.wrap)(text)


@dataclass(frozen=True)
class Exploit:
    """A named trick against the verifier kinds in ``targets``.

    ``needs_separation``: the verdict compares against a correct *and* a wrong answer, so it only
    means something on prompts where the term scores the correct one higher. Length exploits are
    judged on length alone and run on terms that score both the same. ``undecided_is_ok``: the
    right response to this exploit is "could not decide" (otherwise a term that decides none of
    the attempts is reported ``untested``, so a broken sandbox never reads as a clean audit).
    ``strict``: a tie with the correct answer is not a hit. Length exploits are strict: a
    penalty term that scores a long answer 0 like a short one does not push against length (the
    report notes it), but it pays nothing for it either; one that scores it *higher* does.
    """

    name: str
    targets: frozenset[str]
    description: str
    build: Callable[[Context], list[Attempt]]
    needs_separation: bool = True
    undecided_is_ok: bool = False
    strict: bool = False
    referenced: bool = False  # its attempts carry their own reference completion (``Attempt.reference``)
    # A referenced hit must beat its reference by this share of the reference's distance below
    # the correct answer.
    margin: float = 0.0
