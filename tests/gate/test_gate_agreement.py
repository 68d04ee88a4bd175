"""Status numbers against hand-computed values, and the per-sample states."""

from __future__ import annotations

import pytest

from rlvr.gate.agreement import agreement, cohen_kappa, sample_state
from rlvr.gate.store import InspectionSample, Review
from rlvr.rewards.base import Verdict
from rlvr.rollouts import Rollout


def sample(sid: int, klass: str, total: float | None = None) -> InspectionSample:
    if total is None and klass != "masked":
        total = 1.1 if klass == "pass" else 0.0
    verdict = {"pass": Verdict.correct(), "fail": Verdict.wrong(), "masked": Verdict.error("timeout", kind="timeout")}[
        klass
    ]
    rollout = Rollout(
        sid, "1+1=", {"answer": "2"}, "<answer>2</answer>", (1, 2), "stop", None, {"correct": verdict}, total
    )
    return InspectionSample(sid, rollout, "middle", klass)


def review(s: InspectionSample, label: str, *, accepted: str | None = None, rid: int = 0) -> Review:
    return Review(rid or s.id, s.id, label, "", accepted, "alice", "t", s.rollout.total, s.reward_class, {})


def test_kappa_and_confusion_matrix_match_hand_computed_values() -> None:
    # 6 passing samples: 4 marked right, 2 should be lower; 4 failing: 3 right, 1 should be higher.
    # Matrix (reward rows, reviewer columns): pass->pass 4, pass->fail 2, fail->pass 1, fail->fail 3.
    # p_o = 7/10; row marginals .6/.4, column marginals .5/.5; p_e = .3 + .2 = .5;
    # kappa = (.7 - .5) / (1 - .5) = 0.4.
    samples = [sample(i, "pass") for i in range(1, 7)] + [sample(i, "fail") for i in range(7, 11)]
    labels = ["right"] * 4 + ["lower"] * 2 + ["right"] * 3 + ["higher"]
    latest = {s.id: review(s, lab) for s, lab in zip(samples, labels, strict=True)}
    a = agreement(samples, latest)
    assert a.matrix["pass"] == {"pass": 4, "fail": 2, "masked": 0}
    assert a.matrix["fail"] == {"pass": 1, "fail": 3, "masked": 0}
    assert a.observed_agreement == pytest.approx(0.7)
    assert a.kappa == pytest.approx(0.4)
    assert a.disagreement_ids == (5, 6, 10)
    assert not a.passed


def test_three_class_kappa_matches_hand_computed_value() -> None:
    # rows pass/fail/masked = [10,2,0],[3,8,1],[0,1,5]; n=30; p_o = 23/30;
    # rows .4/.4/.2, columns 13/30, 11/30, 6/30; p_e = (5.2 + 4.4 + 1.2)/30 = .36;
    # kappa = (23/30 - .36) / .64 = 0.6354166...
    m = {
        "pass": {"pass": 10, "fail": 2, "masked": 0},
        "fail": {"pass": 3, "fail": 8, "masked": 1},
        "masked": {"pass": 0, "fail": 1, "masked": 5},
    }
    kappa, p_o = cohen_kappa(m)
    assert p_o == pytest.approx(23 / 30)
    assert kappa == pytest.approx((23 / 30 - 0.36) / 0.64)
    assert kappa == pytest.approx(0.6354166, abs=1e-6)


def test_kappa_is_undefined_when_both_sides_use_one_and_the_same_class() -> None:
    samples = [sample(i, "pass") for i in range(1, 5)]
    a = agreement(samples, {s.id: review(s, "right") for s in samples})
    assert a.kappa is None
    assert a.observed_agreement == 1.0
    assert a.passed


def test_empty_matrix_has_no_kappa() -> None:
    assert cohen_kappa({}) == (None, None)


def test_unreviewed_sample_keeps_the_gate_from_passing() -> None:
    samples = [sample(1, "pass"), sample(2, "fail")]
    a = agreement(samples, {1: review(samples[0], "right")})
    assert a.open_ids == (2,)
    assert not a.passed


def test_right_verdict_reopens_when_a_rescore_changes_the_reward() -> None:
    before = sample(1, "pass")
    r = review(before, "right")
    assert sample_state(before, r) == "agrees"
    assert sample_state(sample(1, "fail"), r) == "changed"


def test_higher_is_resolved_only_when_the_reward_reaches_the_reviewer_class() -> None:
    wrong = sample(1, "fail", total=0.0)
    r = review(wrong, "higher")
    assert sample_state(wrong, r) == "open"
    # A format bump (0.0 -> 0.1) while still failing does not resolve "this should pass".
    assert sample_state(sample(1, "fail", total=0.1), r) == "open"
    assert sample_state(sample(1, "pass", total=1.1), r) == "resolved"


def test_lower_on_a_pass_is_resolved_when_the_reward_drops_to_fail() -> None:
    hacked = sample(1, "pass", total=1.1)
    r = review(hacked, "lower")
    assert sample_state(hacked, r) == "open"
    assert sample_state(sample(1, "fail", total=0.1), r) == "resolved"


def test_masked_sample_marked_higher_resolves_once_it_passes() -> None:
    masked = sample(1, "masked")
    r = review(masked, "higher")
    assert sample_state(masked, r) == "open"
    assert sample_state(sample(1, "pass"), r) == "resolved"


def test_accepted_disagreement_closes_but_still_counts_as_disagreement_in_the_matrix() -> None:
    s = sample(1, "pass")
    a = agreement([s], {1: review(s, "lower", accepted="tolerable: weight 0.1")})
    assert a.states["accepted"] == 1
    assert a.passed
    assert a.matrix["pass"]["fail"] == 1
