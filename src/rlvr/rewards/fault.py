"""Whose fault is a verdict that could not be decided: the one place that says (DESIGN.md, "Fail
closed").

Any failure to decide -- an exception, memory, a timeout, a judge error or timeout, the reward
server's deadline, a worker that died -- is **charged to the answer**: the verdict becomes
``wrong`` with score 0, and keeps its cause in ``error_kind`` (so it is counted by cause:
``rewards/<term>/charged_rate`` and ``charged/<kind>``). It is the **task's** (kept as an
``error``: masked out of the group's baseline with ``None``, counted, named by ``task check`` and
the audit) only when the gold alone fails the same way: the row's gold answer, written as a
completion, is scored through the same verifier (``gold_sample``), once per row (``GoldCache``),
and fails with the same ``error_kind``. So a policy can never buy a mask: whatever it writes, a
failure its gold does not share costs it the reward; an outage that fails the gold too is masked
and trips the fail-loud checks instead of teaching anything.

``whose_fault`` is the decision and nothing else; ``settle`` applies it to a term's verdicts
(``rlvr.rewards.combine.checked_verdicts`` calls it for every term of every path: files, TRL,
episodes, the audit, the server) and ``rlvr.serve.app`` applies it to rows past the deadline.

What stays the task's without a gold run:

``error_kind`` in ``TASK_KINDS``: the verifier itself found the row's ground truth missing or
broken (a gold that does not parse, a schema that cannot be applied, unit tests the sandbox
cannot run: ``weaker``), decided from the row alone.

A ``unit_tests`` term's gold is the row's reference solution (``UnitTests.gold_completion``), so
a timeout or memory verdict is masked only when the reference also runs out of time or memory.
A term with no gold to score (a ``format`` or ``length`` term, a ``json_schema`` term, a custom
term that declares no answer column, a ``unit_tests`` row without a reference) cannot show that
the task fails: its failures are charged.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .base import Outcome, Sample, Verdict, Verifier, ground_truth, reads_of
from .format import AnswerFormat

__all__ = ["TASK_KINDS", "GoldCache", "charge", "gold_key", "gold_sample", "is_charged", "settle", "whose_fault"]

TASK_KINDS = frozenset({"ground_truth", "weaker"})
CHARGED = "charged to the answer"


def charge(verdict: Verdict, why: str) -> Verdict:
    """``verdict`` (an error) as the answer's: ``wrong``, score 0, its cause kept in
    ``error_kind``."""
    kind = verdict.error_kind or "crash"
    return Verdict.wrong(
        0.0,
        detail=f"{CHARGED} ({kind}): {verdict.detail}; {why}"[:500],
        answer=verdict.answer,
        span=verdict.span,
        error_kind=kind,
        details=verdict.details,
    )


def is_charged(verdict: Verdict) -> bool:
    """Whether ``verdict`` is a failure to decide that was charged to the answer."""
    return verdict.outcome is not Outcome.ERROR and verdict.error_kind is not None


def whose_fault(answer: Verdict, gold: Verdict | None) -> Verdict:
    """The verdict that stands for ``answer``, given what the same path made of the row's gold
    (None: there is no gold to score). The whole rule:

    - a decided answer stands as it is;
    - an error the verifier already put on the task (``TASK_KINDS``) stays an error;
    - an error the gold shares (the gold's verdict is an error of the same kind) stays an error:
      the task's;
    - every other error is charged to the answer (``charge``)."""
    if answer.outcome is not Outcome.ERROR or answer.error_kind in TASK_KINDS:
        return answer
    if gold is None:
        return charge(answer, "the term has no gold to score, so nothing shows the task fails")
    if gold.outcome is Outcome.ERROR and gold.error_kind == answer.error_kind:
        return Verdict.error(
            f"{answer.detail}; the gold fails the same way (the task's)"[:500],
            kind=answer.error_kind or "crash",
            answer=answer.answer,
            span=answer.span,
            details=answer.details,
        )
    if gold.outcome is Outcome.ERROR:
        return charge(answer, f"the gold fails otherwise ({gold.error_kind})")
    return charge(answer, f"the gold alone is decided ({gold.outcome.value})")


def gold_completion(
    verifier: Verifier, row: Mapping[str, Any], fmt: AnswerFormat | None, column: str | None
) -> str | None:
    """The gold answer of ``row`` written as a completion ``verifier`` reads, or None.

    A verifier that knows better says so with ``gold_completion(row)`` (a tool call writes its
    expected call); a wrapper (a length term) uses its base's; otherwise the declared answer
    column (``Reads.answer``, else ``column`` for a custom term that declares nothing) wrapped in
    the verifier's answer format (its ``fmt``, else ``fmt``)."""
    own = getattr(verifier, "gold_completion", None)
    if callable(own):
        text = own(row)
        return text if isinstance(text, str) else None
    base = getattr(verifier, "base", None)
    if base is not None and hasattr(base, "verify_batch"):
        return gold_completion(base, row, fmt, column)
    reads = reads_of(verifier)
    col = reads.answer if reads is not None else column
    if not col:
        return None
    gold = ground_truth(row, col)
    if gold is None:
        return None
    wrap = getattr(verifier, "fmt", None) or fmt
    return wrap.wrap(gold) if isinstance(wrap, AnswerFormat) else gold


def gold_sample(
    verifier: Verifier, sample: Sample, fmt: AnswerFormat | None = None, column: str | None = None
) -> Sample | None:
    """``sample`` with its completion replaced by the row's gold (see ``gold_completion``)."""
    try:
        text = gold_completion(verifier, sample.row, fmt, column)
    except Exception:  # noqa: BLE001 - a row whose gold cannot be written has no gold to score
        return None
    if text is None:
        return None
    return Sample(completion=text, row=sample.row, prompt=sample.prompt, completion_ids=None)


def gold_key(sample: Sample) -> str:
    """A key for a gold sample (its completion, prompt and row)."""
    h = hashlib.sha256()
    for part in (sample.completion, sample.prompt, repr(sorted((str(k), repr(v)) for k, v in sample.row.items()))):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


class GoldCache:
    """Decided gold verdicts, per (verifier, row): a group's G answers share one gold run, and a
    row seen again (the next epoch, another request) reuses it. Errors are not kept: an outage
    that ends must not leave its rows masked. Bounded (LRU)."""

    def __init__(self, size: int = 8192) -> None:
        self.size = size
        self._data: OrderedDict[tuple[int, str], tuple[Verifier, Verdict]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, verifier: Verifier, key: str) -> Verdict | None:
        with self._lock:
            hit = self._data.get((id(verifier), key))
            if hit is None or hit[0] is not verifier:  # an id reused by another object
                return None
            self._data.move_to_end((id(verifier), key))
            return hit[1]

    def put(self, verifier: Verifier, key: str, verdict: Verdict) -> None:
        if verdict.outcome is Outcome.ERROR:
            return
        with self._lock:
            self._data[(id(verifier), key)] = (verifier, verdict)
            while len(self._data) > self.size:
                self._data.popitem(last=False)


GOLDS = GoldCache()


def settle(
    verifier: Verifier,
    samples: Sequence[Sample],
    verdicts: Sequence[Verdict],
    run: Callable[[Sequence[Sample]], list[Verdict]],
    *,
    fmt: AnswerFormat | None = None,
    column: str | None = None,
    cache: GoldCache = GOLDS,
) -> list[Verdict]:
    """``verdicts`` with every failure to decide put on the answer or the task (``whose_fault``).
    ``run`` scores samples through the same path as ``verdicts`` were (without settling); it is
    called once, on the golds of the rows that need one and are not cached."""
    need = [i for i, v in enumerate(verdicts) if v.outcome is Outcome.ERROR and v.error_kind not in TASK_KINDS]
    if not need:
        return list(verdicts)
    golds: dict[int, Verdict | None] = {}
    todo: dict[str, Sample] = {}
    keys: dict[int, str] = {}
    for i in need:
        g = gold_sample(verifier, samples[i], fmt, column)
        if g is None:
            golds[i] = None
            continue
        keys[i] = k = gold_key(g)
        hit = cache.get(verifier, k)
        if hit is not None:
            golds[i] = hit
        else:
            todo.setdefault(k, g)
    if todo:
        order = list(todo)
        try:
            ran = run([todo[k] for k in order])
            if len(ran) != len(order):
                raise ValueError("wrong number of verdicts")
        except Exception as exc:  # noqa: BLE001 - the gold could not be scored: it fails as a crash
            ran = [Verdict.error(f"{type(exc).__name__}: {exc}", kind="crash") for _ in order]
        fresh = dict(zip(order, ran, strict=True))
        for k, v in fresh.items():
            cache.put(verifier, k, v)
        for i, k in keys.items():
            if i not in golds:
                golds[i] = fresh[k]
    out = list(verdicts)
    for i in need:
        out[i] = whose_fault(verdicts[i], golds.get(i))
    return out
