"""Length shaping terms: a token budget, DAPO's soft overlong punishment, an n-gram repetition
penalty.

Each is a *separate* reward term whose score is a penalty (0 or negative), added to the others
by TRL with the term's weight. That is how "the base term stays loggable on its own": the
correctness term keeps its own ``rewards/<term>/mean``, and the length pressure shows up under
its own name instead of being folded into the correctness score, so the doctor can tell
"answers got worse" from "answers got longer". A penalty of 0 has outcome ``correct`` (within
limits), a negative one ``wrong`` (over them); these terms never return ``error``.

Standalone or wrapped: by default each term is its own penalty term, next to the correctness
term. With ``base: {verifier: math, options: {...}}`` a term wraps that verifier instead: its
outcome is the base's (an ``error`` still masks the row), its score is base score + penalty,
``apply_to: correct`` penalises only correct answers (so a wrong answer is never "improved" by
being short), and the verdict carries both parts, which the TRL adapter logs as
``rewards/<term>/base/mean`` and ``rewards/<term>/penalty/mean``: the base stays loggable on
its own either way.

Token counts: during training TRL passes ``completion_ids`` and those are counted exactly. When
they are absent (scoring a JSONL file) the ``tokenizer`` option (a path, hub id or
``builtin:<name>``, loaded with ``rlvr.models.load_tokenizer``) counts them exactly; without
it the count is *approximate*: ``ceil(characters / chars_per_token)``, default 4 characters per
token (typical of English BPE text; code and math run shorter, other scripts differ a lot).
Verdicts say ``(approximate)`` in their detail when the approximation was used.

DAPO (Yu et al. 2025, Eq. 13), with ``L_max`` = ``max_completion_length`` and ``L_cache`` =
``cache``::

    R(y) = 0                              if |y| <= L_max - L_cache
           ((L_max - L_cache) - |y|) / L_cache   if L_max - L_cache < |y| <= L_max
           -1                             if |y| > L_max

Repetition (after open-r1's ``get_repetition_penalty_reward``): the share of repeated n-grams,
``-(1 - unique/total) * max_penalty``, the larger of two readings: word n-grams (``n`` words,
split on ``White_Space``) and character n-grams (``char_n`` characters, default 20). Both count
``repetition_text``: the completion's ``untrusted.skeleton`` (invisible characters dropped,
whitespace collapsed, width and case folded, combining marks dropped, Cyrillic and Greek
look-alikes read as the Latin letter, so a loop salted with homoglyphs or accents is the same
loop) with every number written as its step from the number before it, so a counter ``1 2 3 4
...`` (any arithmetic progression) is a loop too. The character reading is what catches a loop
without spaces -- ``wait,wait,wait,``, CJK text, words joined by zero-width spaces -- which the
word reading never sees. A completion shorter than both windows scores 0.

Options are checked so that no setting ranks a wrong answer above a correct one of the same
length, and none can produce NaN: every number must be finite, penalties and ``per_token``
non-negative (a negative one makes length a bonus). A wrapped term with ``apply_to: correct``
penalises only correct answers, so its largest penalty must stay within the base's gap between a
correct and a wrong answer (1 for the built-ins): ``max_penalty`` above 1 is refused, and a base
with partial credit (a wrong answer can score almost 1) is refused. At exactly the gap -- the
default ``max_penalty: 1``, and always for ``overlong`` -- a long correct answer *ties* a wrong
one; ``ranking_problems(term)`` says so (``rlvr task check`` and the audit report it).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ..errors import VerifierError
from .base import BaseVerifier, Outcome, Reads, Sample, Verdict, reads_of
from .format import AnswerFormat
from .rules import untrusted
from .rules.patterns import compile_linear

_TOKENIZERS: dict[str, Any] = {}
_TOKENIZERS_LOCK = threading.Lock()


class TokenCounter:
    """Counts a completion's tokens: ``completion_ids`` when present, else the named tokenizer,
    else ``ceil(len(text) / chars_per_token)`` (flagged approximate)."""

    def __init__(self, tokenizer: str | None = None, chars_per_token: float = 4.0) -> None:
        self.tokenizer = tokenizer
        self.chars_per_token = _finite("chars_per_token", chars_per_token, positive=True)

    def _tok(self) -> Any:
        assert self.tokenizer is not None
        with _TOKENIZERS_LOCK:
            tok = _TOKENIZERS.get(self.tokenizer)
            if tok is None:
                from ..models import load_tokenizer

                tok = _TOKENIZERS[self.tokenizer] = load_tokenizer(self.tokenizer)
            return tok

    def count(self, sample: Sample) -> tuple[int, bool]:
        """(token count, exact?)"""
        if sample.completion_ids is not None:
            return len(sample.completion_ids), True
        if self.tokenizer:
            return len(self._tok()(sample.completion, add_special_tokens=False)["input_ids"]), True
        return math.ceil(len(sample.completion) / self.chars_per_token), False


def _approx(exact: bool) -> str:
    return "" if exact else " (approximate)"


def _finite(name: str, value: Any, *, positive: bool = False) -> float:
    """``value`` as a float when it is a finite number >= 0 (> 0 with ``positive``)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
        or (positive and value == 0)
    ):
        need = "a finite number > 0" if positive else "a finite number >= 0"
        raise VerifierError(f"{name} must be {need}, got {value!r}")
    return float(value)


def _positive_int(name: str, value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise VerifierError(f"{what} needs {name}: a positive number of tokens, got {value!r}")
    return value


# The gap between a correct and a wrong answer of a built-in base verifier (1.0 and 0.0).
BASE_GAP = 1.0


class _Penalty(BaseVerifier):
    """A penalty (<= 0) alone, or added to a wrapped base verifier's score."""

    kind = "length"
    base: Any = None
    apply_to = "all"
    shapes_length = True  # the audit runs its length probes on this term, wrapped or not
    largest_penalty = 1.0

    def _penalty(self, sample: Sample) -> tuple[float, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _wrap(
        self, base: Mapping[str, Any] | None, apply_to: str, answer_format: AnswerFormat | None, column: str
    ) -> None:
        if apply_to not in ("all", "correct"):
            raise VerifierError(f"apply_to must be 'all' or 'correct', got {apply_to!r}")
        self.apply_to = apply_to
        if base is None:
            if apply_to != "all":
                raise VerifierError("apply_to only means something with a base verifier to wrap")
            return
        if not isinstance(base, Mapping) or not isinstance(base.get("verifier"), str):
            raise VerifierError("base must be a mapping {verifier: NAME, options: {...}}")
        from . import build_verifier

        name, options = base["verifier"], dict(base.get("options") or {})
        self.base = build_verifier(name, options, answer_format, answer_column=column)
        self.base_name = name
        self.kind = getattr(self.base, "kind", "custom")  # the audit probes what the base checks (and length)
        if apply_to == "correct":
            if self.largest_penalty > BASE_GAP:
                raise VerifierError(
                    f"max_penalty {self.largest_penalty:g} with apply_to: correct lets a long wrong answer "
                    f"(unpenalised) outscore a long correct one (1 - {self.largest_penalty:g} < 0); "
                    f"use max_penalty <= {BASE_GAP:g} or apply_to: all"
                )
            if getattr(self.base, "partial_credit", False):
                raise VerifierError(
                    "apply_to: correct with a partial-credit base lets a partly right (wrong) answer outscore "
                    "a penalised correct one; use apply_to: all"
                )

    def _combine(self, sample: Sample, base: Verdict | None) -> Verdict:
        value, detail = self._penalty(sample)
        if base is None:
            return Verdict.correct(0.0, detail=detail) if value == 0 else Verdict.wrong(value, detail=detail)
        if base.outcome is Outcome.ERROR:
            return base
        applied = value if self.apply_to == "all" or base.outcome is Outcome.CORRECT else 0.0
        b = base.score or 0.0
        return Verdict(
            base.outcome,
            b + applied,
            detail="; ".join(filter(None, [base.detail, detail])),
            answer=base.answer,
            span=base.span,
            parts=(("base", b), ("penalty", applied)),
        )

    def reads(self) -> Reads | None:
        """Nothing of its own (the completion's length); a wrapped base's columns."""
        return Reads() if self.base is None else reads_of(self.base)

    def verify(self, sample: Sample) -> Verdict:
        return self.verify_batch([sample])[0]

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        bases: Sequence[Verdict | None] = (
            self.base.verify_batch(samples) if self.base is not None else [None] * len(samples)
        )
        out = []
        for s, b in zip(samples, bases, strict=True):
            try:
                out.append(self._combine(s, b))
            except Exception as exc:  # noqa: BLE001 - e.g. a tokenizer that cannot load: undecided, not 0
                out.append(Verdict.error(f"{type(exc).__name__}: {exc}", kind="crash"))
        return out


class LengthPenalty(_Penalty):
    """0 within ``budget`` tokens; past it, ``-per_token`` per extra token, floored at
    ``-max_penalty``. Default ``per_token`` reaches the floor at twice the budget."""

    def __init__(
        self,
        budget: int,
        per_token: float | None = None,
        max_penalty: float = 1.0,
        tokenizer: str | None = None,
        chars_per_token: float = 4.0,
        base: Mapping[str, Any] | None = None,
        apply_to: str = "all",
        answer_format: AnswerFormat | None = None,
        column: str = "answer",
    ) -> None:
        self.budget = _positive_int("budget", budget, "length_penalty")
        self.max_penalty = self.largest_penalty = _finite("max_penalty", max_penalty)
        given = None if per_token is None else _finite("per_token", per_token)
        self.per_token = given if given is not None else self.max_penalty / budget
        self.counter = TokenCounter(tokenizer, chars_per_token)
        self._wrap(base, apply_to, answer_format, column)

    def _penalty(self, sample: Sample) -> tuple[float, str]:
        n, exact = self.counter.count(sample)
        if n <= self.budget:
            return 0.0, f"{n} tokens <= budget {self.budget}{_approx(exact)}"
        penalty = min(self.max_penalty, (n - self.budget) * self.per_token)
        return -penalty, f"{n} tokens, {n - self.budget} over budget {self.budget}{_approx(exact)}"


class OverlongPenalty(_Penalty):
    """DAPO's soft overlong punishment (see the module docstring)."""

    def __init__(
        self,
        max_completion_length: int,
        cache: int | None = None,
        tokenizer: str | None = None,
        chars_per_token: float = 4.0,
        base: Mapping[str, Any] | None = None,
        apply_to: str = "all",
        answer_format: AnswerFormat | None = None,
        column: str = "answer",
    ) -> None:
        _positive_int("max_completion_length", max_completion_length, "overlong")
        cache = max_completion_length // 4 if cache is None else cache
        if isinstance(cache, bool) or not isinstance(cache, int) or not 0 < cache <= max_completion_length:
            raise VerifierError(
                f"overlong cache must be between 1 and max_completion_length ({max_completion_length}), got {cache!r}"
            )
        self.max_len = max_completion_length
        self.cache = cache
        self.counter = TokenCounter(tokenizer, chars_per_token)
        self._wrap(base, apply_to, answer_format, column)

    def _penalty(self, sample: Sample) -> tuple[float, str]:
        n, exact = self.counter.count(sample)
        soft = self.max_len - self.cache
        if n <= soft:
            return 0.0, f"{n} tokens{_approx(exact)}"
        if n <= self.max_len:
            return (soft - n) / self.cache, f"{n} tokens, {n - soft} into the last {self.cache}{_approx(exact)}"
        return -1.0, f"{n} tokens > {self.max_len}{_approx(exact)}"


def repeated_share(items: Sequence[Any], n: int) -> float | None:
    """The share of ``n``-grams of ``items`` that repeat an earlier one (None when there are
    fewer than ``n`` items). Hashes, not slices, are kept, so memory stays linear."""
    total = len(items) - n + 1
    if total <= 0:
        return None
    if isinstance(items, str):
        seen = {hash(items[i : i + n]) for i in range(total)}
    else:
        seen = {hash(tuple(items[i : i + n])) for i in range(total)}
    return 1 - len(seen) / total


_NUMBER = compile_linear(r"[0-9]{1,30}(?:\.[0-9]{1,30})?")


def _steps(text: str) -> str:
    """Each number as its step from the number before it (``#`` for the first): a counter
    ``1 2 3 4`` reads ``# #+1 #+1 #+1``, a loop like any other."""
    out: list[str] = []
    last, prev = 0, None
    for m in _NUMBER.finditer(text):
        value = Decimal(m.group(0))
        out.append(text[last : m.start()] + ("#" if prev is None else f"#{value - prev:+}"))
        last, prev = m.end(), value
    return "".join(out) + text[last:]


def repetition_text(text: str) -> str:
    """What the repetition penalty counts: ``untrusted.skeleton`` (invisible characters dropped,
    width and case folded, combining marks dropped, look-alike letters read as Latin,
    whitespace collapsed), then every number written as its step from the one before."""
    return _steps(untrusted.skeleton(text))


class RepetitionPenalty(_Penalty):
    """``-(1 - unique n-grams / n-grams) * max_penalty``, the larger of the word and the
    character reading (see the module docstring)."""

    def __init__(
        self,
        n: int = 3,
        max_penalty: float = 1.0,
        char_n: int = 20,
        base: Mapping[str, Any] | None = None,
        apply_to: str = "all",
        answer_format: AnswerFormat | None = None,
        column: str = "answer",
    ) -> None:
        for name, value in (("n", n), ("char_n", char_n)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise VerifierError(f"repetition {name} must be a positive integer, got {value!r}")
        self.n = n
        self.char_n = char_n
        self.max_penalty = self.largest_penalty = _finite("max_penalty", max_penalty)
        self._wrap(base, apply_to, answer_format, column)

    def _penalty(self, sample: Sample) -> tuple[float, str]:
        text = repetition_text(sample.completion)
        words = repeated_share(untrusted.words(text), self.n)
        chars = repeated_share(text, self.char_n)
        if words is None and chars is None:
            return 0.0, f"fewer than {self.n} words and {self.char_n} characters"
        share = max(words or 0.0, chars or 0.0)
        if share == 0:
            return 0.0, "no repeated n-grams"
        which = f"{self.n}-word" if (words or 0.0) >= (chars or 0.0) else f"{self.char_n}-character"
        return -share * self.max_penalty, f"{share:.0%} of {which} n-grams repeated"


def ranking_problems(verifier: Any) -> list[str]:
    """Where a length term lets a long correct answer score no higher than a wrong one of the
    same length, in sentences (empty when there is nothing to say). Settings that would rank the
    wrong one *higher* are refused when the term is built; this reports the ties that remain,
    such as the default ``max_penalty: 1`` with ``apply_to: correct``."""
    if not isinstance(verifier, _Penalty) or verifier.base is None:
        return []
    out = []
    largest = verifier.largest_penalty
    name = type(verifier).__name__
    from . import BUILTINS

    if getattr(verifier, "base_name", None) not in BUILTINS:
        out.append(
            f"{name} wraps {getattr(verifier, 'base_name', 'a custom verifier')!r}, whose scores are not known "
            f"in advance: check that its correct and wrong scores stay more than {largest:g} apart"
        )
    if verifier.apply_to == "correct" and largest >= BASE_GAP:
        out.append(
            f"{name} with apply_to: correct and a largest penalty of {largest:g} scores a long correct answer "
            f"{BASE_GAP:g} - {largest:g} = {BASE_GAP - largest:g}, the same as a wrong one: "
            f"use max_penalty < {BASE_GAP:g}"
            + (" (overlong's penalty is always 1: use apply_to: all)" if isinstance(verifier, OverlongPenalty) else "")
        )
    if isinstance(verifier, RepetitionPenalty) and verifier.apply_to == "all" and largest >= BASE_GAP:
        out.append(
            f"RepetitionPenalty with max_penalty {largest:g} lets a looping correct answer score about as a wrong one"
        )
    return out
