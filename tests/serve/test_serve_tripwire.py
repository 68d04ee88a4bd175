"""The tripwire in ``rlvr serve``: the same probes on every scored batch; a weak reward gets 409
with the report once it trips (and on every batch after), a sound one never does; /metrics counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from rlvr.serve import Scorer
from rlvr.serve.app import RewardServer
from support.tasks import weak_rewards_task

ROWS = [{"question": f"{a}+{a}", "answer": str(2 * a)} for a in range(10, 18)]


def client_for(tmp_path: Path, verifier: str, **extra: Any) -> TestClient:
    rewards = [{"name": "correct", "verifier": f"audit_rewards.{verifier}"}]
    task = weak_rewards_task(tmp_path, rewards, ROWS, success="correct", **extra)
    return TestClient(RewardServer(Scorer.from_task(task, no_gate_reason="tripwire test")), base_url="http://127.0.0.1")


def batch(answer: str) -> dict[str, Any]:
    """Four right answers to 10+10 in the span, each after a different lead (a sound reward pays them too)."""
    leads = ["", "sum: ", "so ", "= "]
    return {
        "query": [f"10+10={lead}<answer>{answer}</answer>" for lead in leads],
        "prompts": ["10+10="] * 4,
        "labels": ["20"] * 4,
    }


def test_a_weak_reward_gets_409_with_the_report_on_the_fifth_batch_and_after(tmp_path: Path) -> None:
    with client_for(tmp_path, "substring") as c:
        codes = [c.post("/get_reward", json=batch("20")).status_code for _ in range(4)]
        assert codes == [200] * 4
        tripped = c.post("/get_reward", json=batch("20"))
        assert tripped.status_code == 409
        body = tripped.json()
        assert body["tripwire"]["signal"] == "findings" and "'correct'" in body["error"]
        assert "not the hyperparameters" in body["error"]
        assert c.post("/v1/score", json={"samples": [{"completion": "x", "answer": "20"}]}).status_code == 409
        metrics = c.get("/metrics").text
        assert "rlvr_tripwire_tripped 1" in metrics and "rlvr_tripwire_batches_total 5" in metrics


def test_a_sound_reward_is_never_stopped_by_the_served_tripwire(tmp_path: Path) -> None:
    with client_for(tmp_path, "anchored") as c:
        assert all(c.post("/get_reward", json=batch("20")).status_code == 200 for _ in range(12))
        metrics = c.get("/metrics").text
        assert "rlvr_tripwire_tripped 0" in metrics and "rlvr_tripwire_findings_total 0" in metrics


@pytest.mark.parametrize("grpo", [{"tripwire": {"every": 0}}])
def test_every_zero_in_the_task_turns_the_served_tripwire_off(tmp_path: Path, grpo: dict) -> None:
    with client_for(tmp_path, "substring", grpo=grpo) as c:
        assert all(c.post("/get_reward", json=batch("20")).status_code == 200 for _ in range(6))
