"""The inspection gate: a person reads the reward's verdicts on 50-100 base-model samples before
any training run, and ``rlvr train`` refuses to start unless a signed record matches.

The steps, each a function here and a ``rlvr inspect`` command:

1. ``build_set`` -- sample at the run's temperature (or reuse probe samples), score with every
   term, select both tails and a random middle, store in SQLite (``store``), export JSONL.
2. Review, one verdict per sample -- "reward is right", "should be higher", "should be lower",
   with a note: the web page (``web``, served on 127.0.0.1) or the terminal (``terminal``). Each
   verdict is committed the moment it is given.
3. ``agreement`` -- confusion matrix, Cohen's kappa, open disagreements.
4. ``rescore`` -- after a fix to the reward code, the same set is re-scored; verdicts are kept.
5. ``sign`` -- every sample read and nothing open: write ``gate.json`` bound to code hashes.
6. ``enforce`` -- what ``rlvr train`` calls: the record must match the run.

``reference_gate`` runs steps 1, 2 and 5 with a program standing in for the person. It exists
for the demo, whose arithmetic answers a checker can compute independently; the record names the
stand-in as the reviewer. A real task needs a person.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import GateError
from ..rewards.base import Verdict
from .agreement import Agreement, agreement, cohen_kappa, format_agreement
from .build import DEFAULT_SIZE, MAX_SIZE, MIN_SIZE, build_set, export_jsonl, rescore
from .record import AuditOutcome, check_trained, db_path, enforce, gate_dir, record_path, sign, verify
from .store import LABELS, InspectionSample, Review, Store

if TYPE_CHECKING:
    from ..generate import Sampler
    from ..task import Task


def open_store(task: Task, gate_path: str | Path | None = None) -> Store:
    """The inspection set of ``task`` (raises ``GateError`` when it has not been built)."""
    store = Store(db_path(task, gate_path))
    store.check()
    return store


def status(task: Task, gate_path: str | Path | None = None) -> Agreement:
    """Agreement between the reward and the reviewer on ``task``'s inspection set, as it stands."""
    store = open_store(task, gate_path)
    return agreement(store.samples(), store.latest_reviews())


Checker = Callable[[Mapping[str, Any], str, Mapping[str, Verdict]], str]


def reference_gate(
    task: Task,
    *,
    model: str,
    out_dir: str | Path,
    checker: Checker,
    reviewer: str = "reference-checker (demo)",
    size: int = DEFAULT_SIZE,
    sampler: Sampler | None = None,
    min_samples: int = MIN_SIZE,
    audit: Callable[[Task], AuditOutcome] | None,
) -> Path:
    """Build the set from ``model``, record ``checker(row, completion, verdicts)`` ("right",
    "higher" or "lower") as the verdict on every sample, and sign. Returns the gate.json path.

    Raises ``GateError`` when the checker disagrees with the reward anywhere: the disagreement
    stays open, exactly as it would for a person. ``audit`` is passed to ``sign``.
    """
    store = build_set(task, Path(out_dir) / "inspection.db", model=model, sampler=sampler, size=size, overwrite=True)
    for s in store.samples():
        label = checker(dict(s.rollout.row), s.rollout.completion, dict(s.rollout.verdicts))
        if label not in LABELS:
            raise GateError(
                f"the reference checker returned {label!r} for sample {s.id}; expected one of {', '.join(LABELS)}"
            )
        store.add_review(s.id, label, reviewer=reviewer, note="computed by the reference checker")
    export_jsonl(store)
    return sign(task, out_dir, reviewer=reviewer, min_samples=min(min_samples, size), audit=audit)


__all__ = [
    "Agreement",
    "AuditOutcome",
    "DEFAULT_SIZE",
    "InspectionSample",
    "LABELS",
    "MAX_SIZE",
    "MIN_SIZE",
    "Review",
    "Store",
    "agreement",
    "build_set",
    "check_trained",
    "cohen_kappa",
    "db_path",
    "enforce",
    "export_jsonl",
    "format_agreement",
    "gate_dir",
    "open_store",
    "record_path",
    "reference_gate",
    "rescore",
    "sign",
    "status",
    "verify",
]
