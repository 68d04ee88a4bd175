"""Exact match of the extracted answer against the row's ground truth.

Normalisation is opt-in, rule by rule, and applied identically to both sides. Every rule is the
one of ``rlvr.rewards.rules.untrusted`` (Unicode properties, not Python's ``str`` defaults):

- ``whitespace``: collapse runs of ``White_Space`` to one space (outer ``White_Space`` is always
  stripped; U+001C..U+001F are controls, not whitespace, so ``Lima\x1f`` is not ``Lima``);
- ``case``: case folding that never maps a non-ASCII letter onto ASCII (the Kelvin sign is not
  ``k``, the long s not ``s``, unless ``nfkc`` is on too);
- ``nfkc``: Unicode NFKC (full-width digits, ligatures, ``½`` -> ``1/2``) and removal of
  zero-width and other invisible characters. Superscripts and subscripts are *not* folded: NFKC
  would read ``4²`` as ``42`` and ``2⁵`` as ``25``, a different number;
- ``thousands``: drop thousands separators (``,``, ``_``, a space, a thin or no-break space),
  only where the grouping is proper: one to three digits, then groups of exactly three, one
  separator throughout (``1,234,567``, ``1 234``). Irregular grouping (``1234,567``, ``12,34``)
  stays as written. A single comma group (``3,141``) is ambiguous -- a decimal comma in much of
  the world, or a list -- so it is folded only when a decimal point follows (``3,141.5``);
- ``trailing_period``: drop trailing ``.`` (an ellipsis ``..`` stays);
- ``dollars``: drop surrounding ``$…$`` or ``$$…$$``.

Without ``nfkc``, zero-width and confusable characters make an answer *wrong*: an exact match
means exactly that.

A ground truth stored as a number (``42`` or ``42.0`` in a JSON row, not the string ``"42"``)
has no written form to match, so it is compared as a number: an answer that is a plain decimal
numeral (``42``, ``42.0``, ``-0.5``; after the chosen normalisation) is correct when it equals
it exactly. Exponents, ``inf`` and ``nan`` are never numbers here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from ..errors import VerifierError
from .base import BaseVerifier, Reads, Sample, Verdict, ground_truth
from .format import AnswerFormat, extract
from .rules import untrusted
from .rules.patterns import compile_linear

RULES = ("whitespace", "case", "nfkc", "thousands", "trailing_period", "dollars")
_SEPARATORS = ",_ \u00a0\u2009\u202f"
_NOT_BEFORE = ".,_\u00a0\u2009\u202f"  # what may not precede a grouped number (a plain space may)
_PLAIN_NUMBER = compile_linear(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def _numbers(text: str) -> list[tuple[int, int]]:
    """Spans of digit runs joined by separators (``1,234,567``, ``1 234``): a run of digits not
    preceded by a digit, a decimal point or a separator other than a plain space, then one or
    more groups of one separator and digits. One pass over the text."""
    out, i, n = [], 0, len(text)
    while i < n:
        if not text[i].isdecimal() or (i and (text[i - 1].isdecimal() or text[i - 1] in _NOT_BEFORE)):
            i += 1
            continue
        j = i
        while j < n and text[j].isdecimal():
            j += 1
        end = j
        while j + 1 < n and text[j] in _SEPARATORS and text[j + 1].isdecimal():
            j += 1
            while j < n and text[j].isdecimal():
                j += 1
            end = j
        if end > i and any(not c.isdecimal() for c in text[i:end]):
            out.append((i, end))
        i = max(end, i + 1)
    return out


def _group(text: str, start: int, end: int) -> str:
    token = text[start:end]
    seps = {ch for ch in token if not ch.isdecimal()}
    if len(seps) != 1:
        return token
    sep = seps.pop()
    groups = token.split(sep)
    if not 1 <= len(groups[0]) <= 3 or any(len(g) != 3 for g in groups[1:]):
        return token
    rest = text[end : end + 2]
    if sep == "," and len(groups) == 2 and not (rest[:1] == "." and rest[1:2].isdecimal()):
        return token  # "3,141": a decimal comma or a list as much as a thousands separator
    return "".join(groups)


def _fold_thousands(text: str) -> str:
    out, last = [], 0
    for start, end in _numbers(text):
        out.append(text[last:start] + _group(text, start, end))
        last = end
    return "".join(out) + text[last:]


def normalize(text: str, rules: Iterable[str]) -> str:
    rules = set(rules)
    text = untrusted.strip(text)
    if "nfkc" in rules:
        text = untrusted.strip(untrusted.fold_width(text))
    if "dollars" in rules:
        for d in ("$$", "$"):
            if len(text) > 2 * len(d) - 1 and text.startswith(d) and text.endswith(d):
                text = untrusted.strip(text[len(d) : -len(d)])
                break
    if "whitespace" in rules:
        text = untrusted.collapse(text)  # every White_Space run, as the rule says
    if "thousands" in rules:
        text = _fold_thousands(text)
    # A loop, so that normalising twice changes nothing ("4 . ." -> "4"); an ellipsis stays.
    while "trailing_period" in rules and text.endswith(".") and not text.endswith(".."):
        text = untrusted.rstrip(text[:-1])
    if "case" in rules:
        text = untrusted.fold_case(text)
    return untrusted.strip(text)


def _as_decimal(text: str) -> Decimal | None:
    if len(text) > 4000 or not _PLAIN_NUMBER.fullmatch(text):
        return None
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only plain numerals
        return None


class ExactMatch(BaseVerifier):
    """1.0 when the answer span equals the ground truth after the chosen normalisation."""

    kind = "answer"

    def __init__(
        self, answer_format: AnswerFormat | None = None, column: str = "answer", normalize: Iterable[str] = ()
    ) -> None:
        rules = tuple(normalize)
        unknown = [r for r in rules if r not in RULES]
        if unknown:
            raise VerifierError(f"unknown normalisation rule(s) {unknown}; known: {', '.join(RULES)}")
        self.fmt = answer_format or AnswerFormat()
        self.column = column
        self.rules = rules

    def reads(self) -> Reads:
        return Reads(answer=self.column, columns=(self.column,))

    def verify(self, sample: Sample) -> Verdict:
        gold = ground_truth(sample.row, self.column)
        if gold is None:
            return Verdict.error(f"row has no ground truth in column {self.column!r}", kind="ground_truth")
        ex = extract(sample.completion, self.fmt)
        if not ex.ok:
            return Verdict.unparseable(ex.problem or "no answer span")
        assert ex.answer is not None
        answer = normalize(ex.answer, self.rules)
        if answer == normalize(gold, self.rules):
            return Verdict.correct(answer=ex.answer, span=ex.span)
        raw = sample.row.get(self.column)
        if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw):
            got = _as_decimal(answer)
            if got is not None and got == Decimal(repr(raw) if isinstance(raw, float) else raw):
                return Verdict.correct(
                    answer=ex.answer, span=ex.span, detail=f"numerically equal to the numeric ground truth {raw!r}"
                )
        return Verdict.wrong(answer=ex.answer, span=ex.span, detail=f"expected {gold!r}")
