"""The gate binds every term training pays on an episode task (``examples/tool-search``): the
episode terms are reward terms, scored in the gate and the audit as in training, listed in the
signed record with their options and code hash, and ``rlvr train`` refuses a reward set that is
not the signed one, naming the difference."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from rlvr.errors import GateError
from rlvr.gate import build_set, check_trained, enforce, record_path, sign, verify
from rlvr.gate.hashes import sha256_json
from rlvr.rewards.base import Sample
from rlvr.rewards.combine import RewardSet
from rlvr.rewards.episode import Call, Episode, Turn
from rlvr.task import load_task
from support.fakes import FakeSampler

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tool-search"
EPISODE_TERMS = ["valid_calls", "required_tools", "call_budget"]


@pytest.fixture
def task(tmp_path: Path) -> Any:
    shutil.copytree(EXAMPLE, tmp_path / "tool-search", ignore=shutil.ignore_patterns(".rlvr"))
    return load_task(tmp_path / "tool-search")


def skipping_sampler(task: Any) -> FakeSampler:
    """A model that knows every capital and never calls the search tool."""
    answers = {r["question"]: r["answer"] for r in task.load_split("train")}

    def text(prompt: str, rng: random.Random) -> str:
        return next(f"<answer>{a}</answer>" for q, a in answers.items() if q in prompt)

    return FakeSampler(text)


def test_the_episode_terms_are_terms_of_the_task_with_their_options(task: Any) -> None:
    terms = {t.name: t for t in task.rewards}
    assert [t.name for t in task.rewards] == ["format", "correct", *EPISODE_TERMS]
    assert terms["required_tools"].options == {"tools": ["search"]} and terms["call_budget"].options == {"budget": 1}
    rewards = task.reward_set()
    assert rewards.names == ["format", "correct", *EPISODE_TERMS]
    assert rewards.weights == [0.1, 1.0, 0.1, 0.2, 0.2]


def test_an_episode_that_skips_the_required_tool_does_not_get_full_marks(task: Any) -> None:
    rewards = task.reward_set()
    row = task.load_split("train")[0]
    answer = task.answer.wrap(row["answer"])
    honest = Episode((Turn("", (Call("search", {"query": "x"}, "a result"),)), Turn(answer)))
    skipped = Episode.single(answer)
    full, short = rewards.score([Sample.of_episode(e, row) for e in (honest, skipped)])
    assert rewards.total(full) == pytest.approx(1.4)
    assert short.verdicts["required_tools"].score == 0.0 and rewards.total(short) == pytest.approx(1.2)


def test_the_gate_scores_skipped_searches_with_the_terms_training_pays(task: Any, tmp_path: Path) -> None:
    store = build_set(task, tmp_path / "set.db", sampler=skipping_sampler(task), size=8, seed=1)
    samples = [s.rollout for s in store.samples()]
    assert samples and all(set(s.verdicts) == {"format", "correct", *EPISODE_TERMS} for s in samples)
    assert all(s.verdicts["correct"].score == 1.0 for s in samples)
    assert all(s.verdicts["required_tools"].score == 0.0 and s.total == pytest.approx(1.2) for s in samples)
    assert [t["name"] for t in store.meta()["terms"]] == ["format", "correct", *EPISODE_TERMS]


def test_the_audit_charges_a_skipped_search() -> None:
    from rlvr.audit.episodes import audit_episodes

    found = {f.exploit: f for f in audit_episodes(load_task(EXAMPLE))}
    assert not found["skipped_tools"].hit, found["skipped_tools"].evidence


@pytest.fixture
def signed(task: Any) -> Any:
    store = build_set(task, record_path(task).parent / "inspection.db", sampler=skipping_sampler(task), size=8)
    for s in store.samples():
        store.add_review(s.id, "right", reviewer="alice")
    sign(task, min_samples=1, audit=None)
    return task


def test_the_signed_record_lists_every_term_training_pays(signed: Any) -> None:
    record = json.loads(record_path(signed).read_text())
    terms = {t["name"]: t for t in record["terms"]}
    assert list(terms) == ["format", "correct", *EPISODE_TERMS]
    assert terms["required_tools"]["options"] == {"tools": ["search"]} and terms["required_tools"]["weight"] == 0.2
    assert terms["call_budget"]["options"] == {"budget": 1}
    calls = record["reward_code"]["rlvr.rewards.calls"]["sha256"]
    assert all(terms[n]["code_sha256"] == calls for n in EPISODE_TERMS)
    summary = enforce(signed)
    assert [t["name"] for t in summary["terms"]] == ["format", "correct", *EPISODE_TERMS]
    check_trained(summary, signed.reward_set())  # the set the run pays is the signed one


def test_a_record_signed_without_the_episode_terms_stops_the_run_naming_them(signed: Any) -> None:
    path = record_path(signed)
    record = json.loads(path.read_text())
    record["terms"] = record["terms"][:2]  # what an older rlvr signed: the answer terms alone
    record["record_sha256"] = sha256_json({k: v for k, v in record.items() if k != "record_sha256"})
    path.write_text(json.dumps(record))
    _, problems = verify(signed)
    assert [p for p in problems if "term" in p] == [
        f"reward terms changed: term {n!r} is trained but was not signed (weight {w})"
        for n, w in (("valid_calls", 0.1), ("required_tools", 0.2), ("call_budget", 0.2))
    ]


def test_a_changed_episode_option_is_named(signed: Any) -> None:
    path = signed.path
    path.write_text(path.read_text().replace("call_budget: 1 ", "call_budget: 2 "))
    _, problems = verify(load_task(path))
    assert (
        "reward terms changed: term 'call_budget': options was {'budget': 1} when signed, the run has "
        "{'budget': 2}" in problems
    )


def test_train_refuses_a_reward_set_that_is_not_the_signed_one(signed: Any) -> None:
    summary = enforce(signed)
    full = signed.reward_set()
    with pytest.raises(GateError) as err:
        check_trained(summary, RewardSet(full.terms[:2]))
    assert str(err.value).count("\n") == 0
    assert "term 'required_tools' was signed but is not trained" in str(err.value)


def test_the_review_shows_each_term_training_pays(task: Any, tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from rlvr.gate.agreement import statuses
    from rlvr.gate.terminal import render
    from rlvr.gate.web import ReviewApp

    store = build_set(task, tmp_path / "set.db", sampler=skipping_sampler(task), size=4, seed=1)
    (st, *_) = statuses(store.samples(), store.latest_reviews())
    text = render(store, st, correctness_term=task.success_term, answer_column="answer")
    page = TestClient(ReviewApp(store, reviewer="alice"), base_url="http://127.0.0.1:8765").get(
        f"/sample/{st.sample.id}"
    )
    for name, weight in (("valid_calls", 0.1), ("required_tools", 0.2), ("call_budget", 0.2)):
        assert name in text and f"<tr><td>{name}</td><td>{weight}</td>" in page.text
    assert "never used: search" in text and "never used: search" in page.text
