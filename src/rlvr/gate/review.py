"""What the web page and the terminal review share: filters, navigation, how a sample is shown.

A completion is shown so that nothing in it can hide from the reviewer: invisible and control
characters (zero-width spaces, bidi overrides, soft hyphens, NUL...) are drawn as ``⟨U+200B⟩``
markers, because a reward that accepts ``4\u200b2`` as ``42`` -- or rejects it -- must be visible
to the person judging it.

An episode task's sample shows its whole episode: each turn, each call with its arguments and
each result or error. A result longer than ``FOLD`` characters is folded: the terminal prints its
head and how much is left, the page puts the rest behind a ``<details>`` toggle. Everything is
text to the page's autoescaping templates, so a tool result cannot inject markup.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .agreement import SampleStatus

if TYPE_CHECKING:
    from ..rewards.base import Verdict
    from ..rewards.episode import Episode

FOLD = 240

SHOW = ("todo", "open", "unreviewed", "all")
SHOW_HELP = {
    "todo": "unreviewed or open",
    "open": "open disagreements",
    "unreviewed": "no verdict yet",
    "all": "every sample",
}


# Why a sample is in the set (``rlvr.gate.build.select``), for the label beside it.
BUCKET_HELP = {
    "all": "every sampled completion: the pool was no larger than the set",
    "low": "among the lowest weighted totals in the pool",
    "high": "among the highest weighted totals in the pool",
    "middle": "a seeded random draw from between the lowest and highest totals",
    "masked": "a term could not decide it (masked out of training)",
}


def bucket_help(bucket: str) -> str:
    return BUCKET_HELP.get(bucket, "how the set builder picked it")


# Appended to the reviewer's name on verdicts read with ``rlvr inspect review --no-tty`` (a pipe or
# a file, not a person at a terminal); the signed record counts them (``no_tty_verdicts``).
NO_TTY_MARK = " (no-tty)"


@dataclass(frozen=True)
class Filter:
    """Which samples to step through: ``show`` (see ``SHOW``), optionally one term's outcome and
    a range of the weighted total."""

    show: str = "todo"
    term: str = ""
    outcome: str = ""
    min_total: float | None = None
    max_total: float | None = None

    def matches(self, st: SampleStatus) -> bool:
        if self.show == "todo" and not st.is_open:
            return False
        if self.show == "open" and not st.is_disagreement:
            return False
        if self.show == "unreviewed" and st.review is not None:
            return False
        if self.term:
            v = st.sample.rollout.verdicts.get(self.term)
            if v is None or (self.outcome and v.outcome.value != self.outcome):
                return False
        total = st.sample.rollout.total
        if self.min_total is not None and (total is None or total < self.min_total):
            return False
        if self.max_total is not None and (total is None or total > self.max_total):
            return False
        return True

    @classmethod
    def from_query(cls, q: Mapping[str, str]) -> Filter:
        show = q.get("show", "todo")
        return cls(
            show=show if show in SHOW else "todo",
            term=q.get("term", ""),
            outcome=q.get("outcome", ""),
            min_total=_float(q.get("min")),
            max_total=_float(q.get("max")),
        )

    def query(self) -> dict[str, str]:
        out = {"show": self.show}
        if self.term:
            out["term"] = self.term
        if self.outcome:
            out["outcome"] = self.outcome
        if self.min_total is not None:
            out["min"] = f"{self.min_total:g}"
        if self.max_total is not None:
            out["max"] = f"{self.max_total:g}"
        return out


def _float(text: str | None) -> float | None:
    if text is None or not str(text).strip():
        return None
    try:
        return float(text)
    except ValueError:
        return None


def step(statuses: Sequence[SampleStatus], current: int | None, flt: Filter, direction: int = 1) -> int | None:
    """The id of the next (or previous) sample after ``current`` that matches, wrapping around;
    ``None`` when nothing matches. ``current`` itself is chosen only when it is the only match."""
    ids = [st.sample.id for st in statuses if flt.matches(st)]
    if not ids:
        return None
    if current is None:
        return ids[0] if direction > 0 else ids[-1]
    later = [i for i in ids if (i > current if direction > 0 else i < current)]
    if later:
        return later[0] if direction > 0 else later[-1]
    return ids[0] if direction > 0 else ids[-1]


def marker(ch: str) -> str | None:
    """The visible stand-in for an invisible or control character, or None for a plain one."""
    if ch in "\n\t":
        return None
    cat = unicodedata.category(ch)
    if cat in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp") or (cat == "Zs" and ch != " "):
        return f"⟨U+{ord(ch):04X}⟩"
    return None


def segments(text: str, span: tuple[int, int] | None) -> list[tuple[str, str]]:
    """``text`` cut into (kind, piece) with kind ``text``, ``span`` (the extracted answer) or
    ``ctl`` (a marker for an invisible character), in order."""
    out: list[tuple[str, str]] = []
    bounds = (
        [(0, span[0], "text"), (span[0], span[1], "span"), (span[1], len(text), "text")]
        if span
        else [(0, len(text), "text")]
    )
    for start, end, kind in bounds:
        buf = []
        for ch in text[max(0, start) : max(0, end)]:
            m = marker(ch)
            if m is None:
                buf.append(ch)
                continue
            if buf:
                out.append((kind, "".join(buf)))
                buf = []
            out.append(("ctl" if kind == "text" else "span-ctl", m))
        if buf:
            out.append((kind, "".join(buf)))
    return out


def plain(text: str) -> str:
    """``text`` with every invisible character replaced by its marker."""
    return "".join(marker(ch) or ch for ch in text)


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def answer_text(value: Any) -> str:
    """A ground truth as the reviewer should compare it: strings as they are, else compact JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def answer_diff(expected: str, given: str) -> list[tuple[str, str]]:
    """``given`` against ``expected`` as (op, text) pieces in order: ``same``, ``missing`` (in the
    expected answer only) and ``extra`` (in the given answer only). Compared by words, numbers
    and single punctuation marks, so ``42`` against ``43`` is one changed number, not a digit."""
    a, b = _TOKEN.findall(expected), _TOKEN.findall(given)
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("missing", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(("extra", "".join(b[j1:j2])))
    return out


def answer_span(verdicts: Mapping[str, Verdict], correctness_term: str) -> tuple[int, int] | None:
    """The span to highlight: the correctness term's, else the first term that extracted one."""
    order = [correctness_term, *[k for k in verdicts if k != correctness_term]]
    for name in order:
        v = verdicts.get(name)
        span = v.span if v is not None else None
        if span:
            return (int(span[0]), int(span[1]))
    return None


def _fold(text: str) -> tuple[str, str]:
    return (text, "") if len(text) <= FOLD else (text[:FOLD], text[FOLD:])


def episode_view(episode: Episode | None) -> list[dict[str, Any]] | None:
    """The episode as the review page's template reads it (None for a sample without one)."""
    if episode is None:
        return None
    turns = []
    for i, turn in enumerate(episode.turns, 1):
        calls = []
        for c in turn.calls:
            head, rest = _fold(c.result)
            args = json.dumps(c.arguments, ensure_ascii=False, default=str)
            calls.append(
                {"name": c.name, "arguments": args, "head": head, "rest": rest, "error": c.error, "kind": c.kind}
            )
        turns.append({"n": i, "text": turn.text, "calls": calls, "final": i == len(episode.turns)})
    return [{"turns": turns, "cut_off": episode.cut_off, "cut_reason": episode.cut_reason}]


def episode_lines(episode: Episode | None) -> list[str]:
    """The episode as the terminal review prints it (nothing for a sample without one)."""
    view = episode_view(episode)
    if not view:
        return []
    lines = ["episode:"]
    for t in view[0]["turns"]:
        lines.append(f"  turn {t['n']}{' (final answer)' if t['final'] else ''}: {t['text'] or '(no text)'}")
        for c in t["calls"]:
            lines.append(
                f"    → {c['name']}({c['arguments']})" + (f"  [{c['kind']}: {c['error']}]" if c["error"] else "")
            )
            more = f" … ({len(c['rest'])} more characters)" if c["rest"] else ""
            lines.append("    ← " + (c["head"] + more).replace("\n", "\n      "))
    if view[0]["cut_off"]:
        lines.append(f"  cut off ({view[0]['cut_reason']})")
    return lines
