"""The custom-verifier contract probe: a user's reward function is called directly on the
completions a policy can write -- the row's gold, a wrong answer, an empty completion, and for a
JSON gold the record with one field missing -- and every return that breaks the contract rlvr
reads it by (``rlvr.rewards.as_verdict``) is a task-level problem of the audit:

- it raises: a crash is undecided, never a verdict (charged to the answer, or masked when the gold
  crashes too), so a function that raises on an answer it should call wrong hands the policy a
  way out of its negative advantage;
- it returns ``None`` (or an ``error`` verdict) on an answer it could judge: the same undecided;
  the sound value is 0.0 (fail closed);
- a success term returns a number other than 0 or 1 (``0.3``): rlvr reads any number above 0 as
  ``correct``, so partial credit becomes a success in the probe, the eval and the gate; a value
  that is not a finite number is refused by every term.

Built-in verifiers hold this contract by construction and are not probed; a custom verifier that
returns ``Verdict``s is read by their outcomes. What the probe cannot see: returns that depend on
inputs other than these four (the report's other exploits cover those).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..rewards import FunctionVerifier, TrlFunctionVerifier
from ..rewards.base import Outcome, Sample, Verdict, ground_truth, reads_of
from ..rewards.combine import RewardSet
from ..rewards.format import AnswerFormat
from .answers import perturb

ROWS = 4  # rows each custom term is called on
FIX = "return 0.0 (or Verdict.wrong) for an answer that is not right, 1.0 for one that is, and raise nothing"


def contract_problems(
    reward_set: RewardSet,
    rows: Sequence[Mapping[str, Any]],
    fmt: AnswerFormat,
    answer_column: str,
    success: str | None,
    only: set[str] | None = None,
) -> list[str]:
    """One problem per custom term that breaks the contract (the first break found, with its input)."""
    out = []
    for term in reward_set.terms:
        verifier = term.verifier
        if not isinstance(verifier, (FunctionVerifier, TrlFunctionVerifier)) or (only and term.name not in only):
            continue
        reads = reads_of(verifier)
        column = reads.answer if reads is not None and reads.answer else answer_column
        problem = _first_break(verifier, rows[:ROWS], fmt, column, term.name == success)
        if problem:
            name = getattr(verifier.fn, "__qualname__", repr(verifier.fn))
            out.append(f"term {term.name!r} ({name}) {problem}; fix: {FIX}")
    return out


def _inputs(row: Mapping[str, Any], fmt: AnswerFormat, column: str) -> list[tuple[str, str, bool]]:
    """(label, completion, is the gold) for one row."""
    gold = ground_truth(row, column)
    if gold is None:
        return []
    out = [("the row's gold", fmt.wrap(gold), True), ("a wrong answer", fmt.wrap(perturb(gold)), False)]
    out.append(("an empty completion", "", False))
    try:
        record = json.loads(gold)
    except ValueError:
        record = None
    if isinstance(record, dict) and record:
        first = next(iter(record))
        missing = {k: v for k, v in record.items() if k != first}
        out.append((f"the gold record without its field {first!r}", fmt.wrap(json.dumps(missing)), False))
    return out


def _first_break(
    verifier: FunctionVerifier | TrlFunctionVerifier,
    rows: Sequence[Mapping[str, Any]],
    fmt: AnswerFormat,
    column: str,
    decides_success: bool,
) -> str | None:
    for i, row in enumerate(rows, 1):
        for label, completion, is_gold in _inputs(row, fmt, column):
            sample = Sample(completion, row, "")
            try:
                value = verifier.fn(sample) if isinstance(verifier, FunctionVerifier) else verifier._call([sample])[0]
            except Exception as exc:  # noqa: BLE001 - what the probe reports
                return f"raises {type(exc).__name__} on {label} (row {i}): a crash is undecided, never a verdict"
            why = _why(value, is_gold, decides_success)
            if why:
                return f"returns {_shown(value)} on {label} (row {i}): {why}"
    return None


def _why(value: Any, is_gold: bool, decides_success: bool) -> str | None:
    if isinstance(value, Verdict):
        if value.outcome is Outcome.ERROR and not is_gold and value.error_kind != "ground_truth":
            return "an error verdict is undecided where the answer can be judged: it should fail closed (wrong)"
        return None
    if value is None:
        return "None is undecided, not wrong: where the answer can be judged it should fail closed (0.0)"
    if isinstance(value, bool):
        return None
    if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        return "not a finite number: rlvr refuses it as undecided"
    if decides_success and value not in (0, 1):
        return "the success term's values must be 0 or 1: rlvr reads any number above 0 as correct"
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
