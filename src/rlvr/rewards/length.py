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

Repetition (after open-r1's ``get_repetition_penalty_reward``): the share of repeated word
n-grams, ``-(1 - unique/total) * max_penalty``; completions shorter than n words score 0.
Words are whitespace-separated, so it under-counts repetition in scripts without spaces.
"""

from __future__ import annotations

import inspect
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import VerifierError
from .base import BaseVerifier, Outcome, Sample, Verdict
from .format import AnswerFormat

_TOKENIZERS: dict[str, Any] = {}
_TOKENIZERS_LOCK = threading.Lock()


class TokenCounter:
    """Counts a completion's tokens: ``completion_ids`` when present, else the named tokenizer,
    else ``ceil(len(text) / chars_per_token)`` (flagged approximate)."""

    def __init__(self, tokenizer: str | None = None, chars_per_token: float = 4.0) -> None:
        if chars_per_token <= 0:
            raise VerifierError(f"chars_per_token must be positive, got {chars_per_token!r}")
        self.tokenizer = tokenizer
        self.chars_per_token = float(chars_per_token)

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


class _Penalty(BaseVerifier):
    """A penalty (<= 0) alone, or added to a wrapped base verifier's score."""

    kind = "length"
    base: Any = None
    apply_to = "all"

    def _penalty(self, sample: Sample) -> tuple[float, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _wrap(self, base: Mapping[str, Any] | None, apply_to: str, answer_format: AnswerFormat | None, column: str) -> None:
        if apply_to not in ("all", "correct"):
            raise VerifierError(f"apply_to must be 'all' or 'correct', got {apply_to!r}")
        self.apply_to = apply_to
        if base is None:
            if apply_to != "all":
                raise VerifierError("apply_to only means something with a base verifier to wrap")
            return
        if not isinstance(base, Mapping) or not isinstance(base.get("verifier"), str):
            raise VerifierError("base must be a mapping {verifier: NAME, options: {...}}")
        from . import BUILTINS, _import, build_verifier

        name, options = base["verifier"], dict(base.get("options") or {})
        if name in BUILTINS and "column" not in options:
            target = _import(BUILTINS[name])
            if inspect.isclass(target) and "column" in inspect.signature(target).parameters:
                options["column"] = column
        self.base = build_verifier(name, options, answer_format)
        self.kind = getattr(self.base, "kind", "custom")  # the audit probes what the base checks

    def _combine(self, sample: Sample, base: Verdict | None) -> Verdict:
        value, detail = self._penalty(sample)
        if base is None:
            return Verdict.correct(0.0, detail=detail) if value == 0 else Verdict.wrong(value, detail=detail)
        if base.outcome is Outcome.ERROR:
            return base
        applied = value if self.apply_to == "all" or base.outcome is Outcome.CORRECT else 0.0
        b = base.score or 0.0
        return Verdict(base.outcome, b + applied, detail="; ".join(filter(None, [base.detail, detail])), answer=base.answer, span=base.span, parts=(("base", b), ("penalty", applied)))

    def verify(self, sample: Sample) -> Verdict:
        return self.verify_batch([sample])[0]

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        bases: Sequence[Verdict | None] = self.base.verify_batch(samples) if self.base is not None else [None] * len(samples)
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
        if not isinstance(budget, int) or budget <= 0:
            raise VerifierError(f"length_penalty needs budget: a positive number of tokens, got {budget!r}")
        if max_penalty < 0:
            raise VerifierError(f"max_penalty must be >= 0, got {max_penalty!r}")
        self.budget = budget
        self.per_token = float(per_token) if per_token is not None else max_penalty / budget
        self.max_penalty = float(max_penalty)
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
        if not isinstance(max_completion_length, int) or max_completion_length <= 0:
            raise VerifierError(f"overlong needs max_completion_length: a positive number of tokens, got {max_completion_length!r}")
        cache = max_completion_length // 4 if cache is None else cache
        if not isinstance(cache, int) or not 0 < cache <= max_completion_length:
            raise VerifierError(f"overlong cache must be between 1 and max_completion_length ({max_completion_length}), got {cache!r}")
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


class RepetitionPenalty(_Penalty):
    """``-(1 - unique n-grams / n-grams) * max_penalty`` over whitespace words."""

    def __init__(
        self,
        n: int = 3,
        max_penalty: float = 1.0,
        base: Mapping[str, Any] | None = None,
        apply_to: str = "all",
        answer_format: AnswerFormat | None = None,
        column: str = "answer",
    ) -> None:
        if not isinstance(n, int) or n < 1:
            raise VerifierError(f"repetition n must be a positive integer, got {n!r}")
        if max_penalty < 0:
            raise VerifierError(f"max_penalty must be >= 0, got {max_penalty!r}")
        self.n = n
        self.max_penalty = float(max_penalty)
        self._wrap(base, apply_to, answer_format, column)

    def _penalty(self, sample: Sample) -> tuple[float, str]:
        words = sample.completion.lower().split()
        total = len(words) - self.n + 1
        if total <= 0:
            return 0.0, f"fewer than {self.n} words"
        grams = {tuple(words[i : i + self.n]) for i in range(total)}
        share = 1 - len(grams) / total
        if share == 0:
            return 0.0, "no repeated n-grams"
        return -share * self.max_penalty, f"{share:.0%} of {self.n}-grams repeated"
