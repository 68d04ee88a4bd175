"""The tripwire's probes on rollouts: a sound reward is never hit, each weak reward is hit by the
probe for its hole, an undecided probe is no reward; generated rollouts and the reported cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.audit.tripwire import PROBES, Probed, ProbeRound, perturbations, probe_rollouts
from rlvr.rewards.base import Sample
from rlvr.rewards.format import AnswerFormat
from rlvr.task import Task, load_task
from support.tasks import weak_rewards_task

ROWS = [{"question": f"{a}+{b}", "answer": str(a + b)} for a in range(10, 14) for b in range(20, 24)]
TASKS: dict[str, Task] = {}


@pytest.fixture(scope="module", autouse=True)
def tasks(tmp_path_factory: pytest.TempPathFactory) -> None:
    for fn in ("substring", "anchored", "gold_or_one", "self_certified", "any_number", "errors_on_exploits"):
        folder = tmp_path_factory.mktemp(fn)
        TASKS[fn] = load_task(weak_rewards_task(folder, [{"name": "correct", "verifier": f"audit_rewards.{fn}"}], ROWS))
    builtin = tmp_path_factory.mktemp("exact")
    rewards = [{"name": "format", "weight": 0.1}, {"name": "correct", "verifier": "exact"}]
    TASKS["exact"] = load_task(weak_rewards_task(builtin, rewards, ROWS, success="correct"))


def probe(name: str, completions: list[str], row: dict[str, Any] = ROWS[0]) -> ProbeRound:
    task = TASKS[name]
    rs = task.reward_set()
    samples = [Sample(c, row, f"{row['question']}=") for c in completions]
    rollouts = []
    for s, sc in zip(samples, rs.score(samples), strict=True):
        total = rs.total(sc)
        if total is not None:
            scores = {k: float(v.score) for k, v in sc.verdicts.items() if v.score is not None}
            rollouts.append(Probed(1, s, scores, total))
    return probe_rollouts(rs, rollouts, fmt=task.answer, column=task.answer_column, success=task.success_term, step=1)


# Rollouts a policy might write: digits, words, tags, the gold and a wrong answer, in any order.
pieces = st.sampled_from(["30", "31", "3", "0", " ", "the sum is ", "<answer>", "</answer>", "verified", "\n", "x"])
rollout = st.lists(pieces, max_size=10).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(rollout, min_size=1, max_size=4))
def test_a_sound_anchored_reward_is_never_hit(completions: list[str]) -> None:
    assert probe("anchored", completions).hits == ()
    assert probe("exact", completions).hits == ()


@settings(max_examples=150, deadline=None)
@given(rollout)
def test_a_reward_that_pays_the_gold_anywhere_is_hit_whenever_it_pays(completion: str) -> None:
    found = probe("substring", [completion])
    paid = "30" in completion  # ROWS[0]: 10+20 = 30
    assert bool(found.hits) == paid
    if paid:
        assert "span_moved" in {h.probe for h in found.hits}


def test_the_reported_cases_name_the_probe_for_each_hole() -> None:
    gold = "<answer>30</answer>"
    assert {h.probe for h in probe("substring", ["30 <answer>31</answer>"]).hits} == {"span_moved", "format_only"}
    assert {h.probe for h in probe("any_number", [gold]).hits} == {"span_moved"}
    assert {h.probe for h in probe("gold_or_one", [gold]).hits} == {"gold_absent"}
    certified = {h.probe for h in probe("self_certified", ["verified <answer>30</answer>"]).hits}
    assert {"answer_removed", "format_only", "span_moved"} <= certified


def test_an_undecided_probe_is_masked_not_a_reward_that_survived() -> None:
    found = probe("errors_on_exploits", ["<answer>30</answer>"])
    assert found.checks and found.hits == ()


def test_format_terms_are_not_probed() -> None:
    found = probe("exact", ["<answer>30</answer>"])
    assert found.terms == ("correct",)


def test_a_rollout_paid_no_more_than_a_wrong_answer_is_not_probed() -> None:
    assert probe("substring", ["<answer>31</answer>"]).checks == 0


@settings(max_examples=200, deadline=None)
@given(rollout, st.sampled_from(["30", "7", "abc"]), st.sampled_from(["31", "8", "qxzj"]))
def test_the_moved_and_format_only_probes_never_leave_the_gold_in_the_span(
    completion: str, gold: str, wrong: str
) -> None:
    from rlvr.rewards.format import extract

    fmt = AnswerFormat()
    out = perturbations(completion, gold, wrong, fmt)
    assert gold not in out["answer_removed"] or gold in wrong
    for name in ("span_moved", "format_only"):
        if name in out:
            ex = extract(out[name], fmt)
            assert not ex.ok or ex.answer == wrong.strip()


def test_every_probe_has_a_meaning_for_the_report() -> None:
    from rlvr.audit.tripwire import MEANING

    assert set(MEANING) == set(PROBES)


def test_the_round_counts_rollouts_with_hits_once(tmp_path: Path) -> None:
    found = probe("self_certified", ["verified <answer>30</answer>"])
    assert len(found.hits) > 1 and found.found == 1


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="30a", max_size=30), st.lists(st.text(alphabet="30a", min_size=1, max_size=3), max_size=2))
def test_erase_leaves_no_needle_even_where_removals_join_up(text: str, needles: list[str]) -> None:
    from rlvr.audit.tripwire import erase

    out = erase(text, needles)
    assert not any(n in out for n in needles)
    assert erase("3300", ["30"]) == ""


def test_a_custom_term_that_does_not_read_the_gold_is_a_shaping_term_and_not_hit(tmp_path: Path) -> None:
    from support.tasks import SHAPING

    (tmp_path / "shaping.py").write_text(SHAPING)
    rewards = [{"name": "digits", "verifier": "shaping.digits"}, {"name": "correct", "verifier": "exact"}]
    TASKS["shaped"] = load_task(weak_rewards_task(tmp_path, rewards, ROWS, success="correct"))
    found = probe("shaped", ["12345678", "30 <answer>30</answer>", "3030"])
    assert found.hits == () and "digits" in found.terms


def test_a_weak_custom_term_beside_the_success_term_is_still_hit(tmp_path: Path) -> None:
    rewards = [{"name": "correct", "verifier": "exact"}, {"name": "weak", "verifier": "audit_rewards.substring"}]
    TASKS["beside"] = load_task(weak_rewards_task(tmp_path, rewards, ROWS, success="correct"))
    found = probe("beside", ["30 <answer>31</answer>"])
    assert {h.term for h in found.hits} == {"weak"}
