"""Exact match of the extracted answer against the row's ground truth.

Normalisation is opt-in, rule by rule, and applied identically to both sides:

- ``whitespace``: collapse runs of whitespace to one space (outer whitespace is always stripped);
- ``case``: casefold;
- ``nfkc``: Unicode NFKC (full-width digits, ligatures) and removal of zero-width characters;
- ``thousands``: drop ``,`` / thin-space / ``_`` thousands separators between digit groups;
- ``trailing_period``: drop trailing ``.`` (an ellipsis ``..`` stays);
- ``dollars``: drop surrounding ``$…$`` or ``$$…$$``.

Without ``nfkc``, zero-width and confusable characters make an answer *wrong*: an exact match
means exactly that.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from ..errors import VerifierError
from .base import BaseVerifier, Sample, Verdict, ground_truth
from .format import AnswerFormat, extract

RULES = ("whitespace", "case", "nfkc", "thousands", "trailing_period", "dollars")
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_THOUSANDS = re.compile(r"(?<=\d)[,\u2009\u202f_](?=\d{3}(?!\d))")
_SPACES = re.compile(r"\s+")


def normalize(text: str, rules: Iterable[str]) -> str:
    rules = set(rules)
    text = text.strip()
    if "nfkc" in rules:
        text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH)
    if "dollars" in rules:
        for d in ("$$", "$"):
            if len(text) > 2 * len(d) - 1 and text.startswith(d) and text.endswith(d):
                text = text[len(d):-len(d)].strip()
                break
    if "whitespace" in rules:
        text = _SPACES.sub(" ", text)
    if "thousands" in rules:
        text = _THOUSANDS.sub("", text)
    # A loop, so that normalising twice changes nothing ("4 . ." -> "4"); an ellipsis stays.
    while "trailing_period" in rules and text.endswith(".") and not text.endswith(".."):
        text = text[:-1].rstrip()
    if "case" in rules:
        text = text.casefold()
    return text.strip()


class ExactMatch(BaseVerifier):
    """1.0 when the answer span equals the ground truth after the chosen normalisation."""

    kind = "answer"

    def __init__(
        self,
        answer_format: AnswerFormat | None = None,
        column: str = "answer",
        normalize: Iterable[str] = (),
    ) -> None:
        rules = tuple(normalize)
        unknown = [r for r in rules if r not in RULES]
        if unknown:
            raise VerifierError(f"unknown normalisation rule(s) {unknown}; known: {', '.join(RULES)}")
        self.fmt = answer_format or AnswerFormat()
        self.column = column
        self.rules = rules

    def verify(self, sample: Sample) -> Verdict:
        gold = ground_truth(sample.row, self.column)
        if gold is None:
            return Verdict.error(f"row has no ground truth in column {self.column!r}", kind="ground_truth")
        ex = extract(sample.completion, self.fmt)
        if not ex.ok:
            return Verdict.unparseable(ex.problem or "no answer span")
        assert ex.answer is not None
        if normalize(ex.answer, self.rules) == normalize(gold, self.rules):
            return Verdict.correct(answer=ex.answer, span=ex.span)
        return Verdict.wrong(answer=ex.answer, span=ex.span, detail=f"expected {gold!r}")
