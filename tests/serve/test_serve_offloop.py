"""Rule 5 of issue 34: the reward server reads bodies, scores and writes responses off its event
loop, so one slow body delays other clients by little more than their own parse. Checked by
where the work runs (thread names), never by timing."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from serve_helpers import right


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, seen: list[str]) -> None:
    real = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)


def test_bodies_are_read_and_responses_written_on_the_parse_pool_never_the_event_loop(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlvr.serve.app as app

    parsed: list[str] = []
    written: list[str] = []
    _spy(monkeypatch, app, "read_json", parsed)
    _spy(monkeypatch, app, "json_response", written)
    body = {"samples": [{"completion": right("4"), "prompt": "2+2=", "answer": "4"}]}
    assert client.post("/v1/score", json=body).status_code == 200
    q = {"query": ["2+2=" + right("4")], "prompts": ["2+2="], "labels": ["4"]}
    assert client.post("/get_reward", json=q).status_code == 200
    assert len(parsed) == 2 and all(n.startswith("rlvr-parse") for n in parsed), parsed
    assert len(written) == 2 and all(n.startswith("rlvr-parse") for n in written), written


def test_rows_are_scored_on_the_scoring_pool(client: Any, scorer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    _spy(monkeypatch, scorer.reward_set, "score", seen)
    body = {"samples": [{"completion": right("4"), "prompt": "2+2=", "answer": "4"}]}
    assert client.post("/v1/score", json=body).status_code == 200
    assert seen and all(n.startswith("rlvr-serve") for n in seen), seen


def test_a_body_that_is_not_json_is_refused_from_the_parse_pool_with_a_400(client: Any) -> None:
    r = client.post("/v1/score", content=b'{"samples": [1e999]}', headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]
