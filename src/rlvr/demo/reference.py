"""The demo's stand-in reader: the documented answer rules applied independently of rlvr.rewards.

A person at the inspection gate reads each completion against the task's documented rules
(docs/verifiers.md, "Answer spans and the format term") and the question, not against the reward
code. This module does the same for the built-in arithmetic tasks, written from the rules alone,
so that a bug in the reward code shows up as a disagreement instead of being copied:

- an answer span is ``<answer>...</answer>``; exactly one opening and one closing tag, in that
  order, and a span holding only invisible characters is empty;
- a ``<think>...</think>`` block is tolerated before the answer (the task says ``think: none``);
  an answer inside it, or a think tag after it outside the answer span, leaves no answer;
- a think tag written inside the answer span is part of the answer, and a ``</think>`` mentioned
  inside the reasoning leaves the answer after the block's own close (docs/verifiers.md): the
  answer terms read such a completion, while the *format* term wants the tags outside the span to
  make one block (none, or one ``<think>`` before one ``</think>``);
- the *correctness* term reads the span and compares it, outer whitespace stripped, with the true
  result, computed here from the question (never from the dataset's answer column);
- the *format* term also requires that nothing but invisible characters or closers (``$``,
  ``$$``, ``\\]``, ``\\)``, a code fence, a full stop) follow the closing tag.

So ``<answer>54</answer>Y2</answer>`` has two closing tags: no answer, no format reward, and no
correctness reward either, whatever the 54.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from ..rewards.base import Verdict
from .arithmetic import reference_answer

OPEN, CLOSE = "<answer>", "</answer>"
_CLOSERS = re.compile(r"(?:\$\$|\$|\\\]|\\\)|```|\.)")


def _shows_nothing(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch)[0] in "CZ" or ch in "\u115f\u1160\u3164\uffa0\u2800\u180e\u034f"


def _blank(text: str) -> bool:
    return all(_shows_nothing(ch) for ch in text)


def _think_tags(text: str) -> list[tuple[int, str]]:
    """(offset, tag) of every ``<think>`` and ``</think>`` in ``text``, in order."""
    return [(m.start(), m.group()) for m in re.finditer(r"</?think>", text)]


def _read(completion: str) -> tuple[str | None, str, bool]:
    """(the span's text, what follows its closing tag, whether the think tags outside the span
    make one block), or (None, "", False) when the rules give no answer."""
    if completion.count(OPEN) != 1 or completion.count(CLOSE) != 1:
        return None, "", False
    start, end = completion.index(OPEN), completion.index(CLOSE)
    if end < start:
        return None, "", False
    # Think tags inside the span are the answer's own text; the rest must end before the answer,
    # the last of them closing the block (the reasoning, with any mention, lies before it).
    outside = [(i, t) for i, t in _think_tags(completion) if not start + len(OPEN) <= i < end]
    if outside and (outside[-1][0] > start or outside[-1][1] != "</think>"):
        return None, "", False
    if sum(t == "<think>" for _, t in outside) > 1:
        return None, "", False
    one_block = not outside or [t for _, t in outside] == ["<think>", "</think>"]
    inner = completion[start + len(OPEN) : end]
    if _blank(inner):
        return None, "", False
    return inner.strip(), completion[end + len(CLOSE) :], one_block


def answer_span(completion: str) -> tuple[str | None, str]:
    """(the span's text, what follows its closing tag), or (None, "") when the rules give no answer."""
    answer, rest, _ = _read(completion)
    return answer, rest


def deserved(row: Mapping[str, Any], completion: str) -> dict[str, bool]:
    """Which terms the completion deserves under the documented rules: ``format`` and ``correct``."""
    truth = reference_answer(str(row.get("question", "")) + "=")
    answer, rest, one_block = _read(completion)
    clean_end = answer is not None and one_block and _blank(_CLOSERS.sub("", rest))
    return {"format": clean_end, "correct": answer is not None and truth is not None and answer == truth}


def reference_checker(row: Mapping[str, Any], completion: str, verdicts: Mapping[str, Verdict]) -> str:
    """The stand-in reader's verdict on the reward: "higher" when a term withheld what the rules
    give, "lower" when it granted what they do not, else "right". Terms it has no rule for
    (and undecided verdicts) are not judged."""
    should = deserved(row, completion)
    for term, verdict in verdicts.items():
        if term not in should or verdict.score is None:
            continue
        granted = verdict.score > 0
        if should[term] and not granted:
            return "higher"
        if granted and not should[term]:
            return "lower"
    return "right"


__all__ = ["answer_span", "deserved", "reference_checker"]
