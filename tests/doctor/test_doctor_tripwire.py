"""``check_tripwire``: what the tripwire wrote, read back as a pure Run -> Finding check."""

from __future__ import annotations

from rlvr.doctor.findings import Finding
from rlvr.doctor.table import Run
from rlvr.doctor.tripwire_checks import check_tripwire

HIT = {"term": "correct", "probe": "span_moved", "step": 5, "completion": "4 <answer>5</answer>"}


def run_with(tripwire: dict) -> Run:
    return Run(source="r", kind="run", train=({"step": 1, "reward": 0.5},), evals=(), tripwire=tripwire)


def one(tripwire: dict) -> Finding:
    (f,) = check_tripwire(run_with(tripwire))
    assert isinstance(f, Finding)
    return f


def test_a_run_without_tripwire_rounds_has_no_tripwire_finding() -> None:
    assert check_tripwire(run_with({})) == []


def test_clean_rounds_are_no_finding() -> None:
    assert check_tripwire(run_with({"rounds": 4, "rollouts": 32, "found": 0, "by": {}, "trip": None})) == []


def test_hits_below_the_threshold_are_a_warning_with_the_examples() -> None:
    f = one({"rounds": 2, "found": 1, "by": {"correct/span_moved": 1}, "examples": [HIT]})
    assert f.severity == "warning" and "correct/span_moved x1" in f.evidence and "'4 <answer>5</answer>'" in f.evidence


def test_a_trip_is_an_error_quoting_its_reason() -> None:
    trip = {"signal": "findings", "step": 10, "reason": "3 probed rollout(s) kept a reward", "hits": [HIT]}
    f = one({"rounds": 2, "found": 3, "by": {}, "examples": [HIT], "trip": trip})
    assert f.severity == "error" and f.metric == "tripwire/findings" and "step 10" in f.evidence
    assert f.patch is None and "not the hyperparameters" in f.suggestion
