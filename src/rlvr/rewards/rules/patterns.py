"""Linear-time patterns: the one way a reward term, the audit or the reward server applies a
pattern to untrusted text (model output, request bodies).

Python's ``re`` backtracks: ``[ \\t]*(?:json)?[ \\t]*\\n`` after a code fence followed by 80,000
spaces, or a lazy ``<tool_call>(.*?)</tool_call>`` over thousands of unclosed tags, costs time
quadratic in the text, enough to run a worker past its timeout (and a wrong answer into a masked
one) or to stall the server's event loop. RE2 (``google-re2``) runs in time linear in the text
for every pattern it accepts; it refuses backreferences and lookaround at compile time, so a
pattern that would need them is written as a hand scan instead.

``Pattern`` wraps one compiled RE2 pattern and counts the characters handed to the engine
(``scanned()``), so tests bound the work by input size instead of by seconds: each call costs
time linear in what it is given, and the counter says how much that was.

A structure test (``tests/rewards/test_rewards_patterns.py``) reads every module of
``rlvr.rewards``, ``rlvr.audit`` and ``rlvr.serve`` and fails when one imports the backtracking
``re`` or ``regex`` engines without a stated reason on its allow-list.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import re2

from .strictjson import scrub_surrogates

__all__ = ["Pattern", "compile_linear", "reset_scanned", "scanned"]

_COUNT = threading.local()


def scanned() -> int:
    """Characters handed to the linear engine by this thread since ``reset_scanned``."""
    return int(getattr(_COUNT, "n", 0))


def reset_scanned() -> None:
    _COUNT.n = 0


def _count(n: int) -> None:
    _COUNT.n = getattr(_COUNT, "n", 0) + max(0, n)


def _options() -> Any:
    opts = re2.Options()
    opts.log_errors = False  # a refused pattern is reported by the exception, not on stderr
    return opts


class Pattern:
    """One RE2 pattern. Inline flags (``(?s)``, ``(?i)``) replace ``re`` flags. RE2's ``\\s``,
    ``\\d`` and ``\\w`` are ASCII-only: a pattern that must match Unicode classes spells them out."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._re = re2.compile(pattern, options=_options())

    def search(self, text: str, pos: int = 0) -> Any:
        _count(len(text) - pos)
        return self._re.search(_utf8(text), pos)

    def match(self, text: str, pos: int = 0) -> Any:
        _count(len(text) - pos)
        return self._re.match(_utf8(text), pos)

    def fullmatch(self, text: str) -> Any:
        _count(len(text))
        return self._re.fullmatch(_utf8(text))

    def finditer(self, text: str) -> Iterator[Any]:
        # One pass: RE2 resumes each search where the last match ended.
        _count(len(text))
        return iter(self._re.finditer(_utf8(text)))

    def sub(self, repl: str | Callable[[Any], str], text: str) -> str:
        _count(len(text))
        return str(self._re.sub(repl, _utf8(text)))


def _utf8(text: str) -> str:
    """``text`` as RE2 can read it: a lone surrogate (which UTF-8 cannot encode, and which made
    the engine raise inside a verifier) becomes U+FFFD, one code point for one, so offsets hold.
    What a match then returns holds U+FFFD where the text held a surrogate; a reader that must
    refuse surrogates checks the text itself (``strictjson.has_lone_surrogate``)."""
    return scrub_surrogates(text)


def compile_linear(pattern: str) -> Pattern:
    """``pattern`` compiled for RE2; ``ValueError`` when RE2 cannot run it in linear time
    (backreferences, lookaround)."""
    try:
        return Pattern(pattern)
    except re2.error as exc:
        raise ValueError(f"pattern {pattern!r} is not linear-time (RE2 refuses it: {exc})") from None
