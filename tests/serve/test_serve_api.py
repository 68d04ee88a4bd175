"""The reward server's two protocols, its limits and its access rules, in process (TestClient)
and on 127.0.0.1 (a uvicorn thread), with every request bounded in count and time."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import ThreadServer, module_of, right

from rlvr.serve.app import Limits, RewardServer


def _sample(completion: str, answer: str = "4", prompt: str = "2+2=", **kw: Any) -> dict[str, Any]:
    return {"completion": completion, "prompt": prompt, "answer": answer, **kw}


# -- the rlvr API ---------------------------------------------------------------------------
def test_score_returns_every_terms_outcome_score_and_the_mask(client: Any) -> None:
    r = client.post("/v1/score", json={"samples": [_sample(right("4")), _sample(right("5")), _sample("4")]})
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["scores"]["correct"]["outcome"] for x in results] == ["correct", "wrong", "unparseable"]
    assert [x["scores"]["format"]["outcome"] for x in results] == ["correct", "correct", "wrong"]
    assert results[0]["reward"] == pytest.approx(1.1) and results[1]["reward"] == pytest.approx(0.1)
    assert [x["masked"] for x in results] == [False, False, False]
    assert results[0]["scores"]["correct"]["answer"] == "4"


def test_undecided_row_is_masked_with_null_reward_and_its_groups_mean_as_engine_reward(client: Any) -> None:
    r = client.post(
        "/v1/score", json={"samples": [_sample(right("4")), _sample(right("5")), _sample("CRASH " + right("4"))]}
    )
    res = r.json()["results"]
    assert res[2]["masked"] is True and res[2]["reward"] is None
    assert res[2]["scores"]["correct"]["outcome"] == "error" and "crashed" in res[2]["scores"]["correct"]["detail"]
    assert res[2]["imputed"] == "group"
    assert res[2]["engine_reward"] == pytest.approx((1.1 + 0.1) / 2)
    assert res[0]["engine_reward"] == pytest.approx(1.1) and res[0]["imputed"] is None
    assert r.json()["masked"] == 1


def test_group_field_overrides_the_prompt_as_the_group_key(client: Any) -> None:
    rows = [_sample(right("4"), group="a"), _sample(right("5"), group="b"), _sample("CRASH", group="b")]
    res = client.post("/v1/score", json={"samples": rows}).json()["results"]
    assert res[2]["engine_reward"] == pytest.approx(0.1)


def test_no_gate_reason_is_in_the_meta_of_every_scoring_response(client: Any) -> None:
    a = client.post("/v1/score", json={"samples": [_sample(right("4"))]}).json()
    b = client.post("/get_reward", json={"query": ["2+2=" + right("4")], "prompts": ["2+2="], "labels": ["4"]}).json()
    for meta in (a["meta"], b["rlvr"]["meta"]):
        assert meta["gate"]["status"] == "bypassed"
        assert meta["gate"]["no_gate_reason"] == "unit test of the server"
        assert meta["task"] == "arith" and len(meta["task_sha256"]) == 64


# -- OpenRLHF's protocol --------------------------------------------------------------------
def test_openrlhf_request_gets_rewards_scores_and_per_sample_extra_logs(client: Any) -> None:
    body = {
        "query": ["2+2=" + right("4") + "<|im_end|>", "2+2=" + right("5") + "</s>"],
        "prompts": ["2+2=", "2+2="],
        "labels": ["4", "4"],
    }
    out = client.post("/get_reward", json=body).json()
    assert out["rewards"] == pytest.approx([1.1, 0.1])
    assert out["scores"] == pytest.approx([1.0, 0.0])  # the success term, for dynamic filtering
    assert out["extra_logs"]["rlvr/correct/score"] == [1.0, 0.0]
    assert out["extra_logs"]["rlvr/format/score"] == [1.0, 1.0]  # the trailing EOS token is not text after the answer
    assert out["extra_logs"]["rlvr/masked"] == [0.0, 0.0]


def test_openrlhf_label_holding_a_json_object_gives_several_columns(client: Any) -> None:
    body = {"query": ["Q" + right("7")], "prompts": ["Q"], "labels": [json.dumps({"answer": "7", "other": 1})]}
    out = client.post("/get_reward", json=body).json()
    assert out["rlvr"]["results"][0]["scores"]["correct"]["outcome"] == "correct"


def test_openrlhf_masked_row_is_logged_and_given_its_groups_mean(client: Any) -> None:
    body = {"query": ["P" + right("4"), "P" + right("4") + "CRASH"], "prompts": ["P", "P"], "labels": ["4", "4"]}
    out = client.post("/get_reward", json=body).json()
    assert out["rewards"][1] == pytest.approx(out["rewards"][0])
    assert out["extra_logs"]["rlvr/masked"] == [0.0, 1.0]
    assert out["extra_logs"]["rlvr/correct/error"] == [0.0, 1.0]
    assert out["rlvr"]["results"][1]["reward"] is None


def test_openrlhf_lists_of_different_lengths_are_a_clear_400(client: Any) -> None:
    r = client.post("/get_reward", json={"query": ["a", "b"], "prompts": ["a"], "labels": ["1", "2"]})
    assert r.status_code == 400 and r.json()["where"] == "prompts"


# -- malformed and oversized requests -------------------------------------------------------
def test_malformed_json_is_a_clear_400_and_the_server_keeps_serving(client: Any) -> None:
    r = client.post("/v1/score", content=b'{"samples": [', headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]
    assert client.post("/v1/score", json={"samples": [_sample(right("4"))]}).status_code == 200


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ([1, 2], None),
        ({"samples": "x"}, "samples"),
        ({"samples": []}, "samples"),
        ({"samples": [{"prompt": "p"}]}, "samples[0].completion"),
        ({"samples": [{"completion": 3}]}, "samples[0].completion"),
        ({"samples": ["text"]}, "samples[0]"),
    ],
)
def test_wrong_shapes_are_400_naming_the_field(client: Any, body: Any, where: str | None) -> None:
    r = client.post("/v1/score", json=body)
    assert r.status_code == 400
    assert r.json().get("where") == where


def test_body_over_the_limit_is_413_by_its_content_length(client: Any) -> None:
    big = json.dumps({"samples": [_sample("x" * 70_000)]}).encode()
    r = client.post("/v1/score", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "limit" in r.json()["error"]


def test_chunked_body_over_the_limit_is_413(client: Any) -> None:
    def chunks() -> Any:
        for _ in range(20):
            yield b" " * 8192

    r = client.post("/v1/score", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_more_rows_than_the_limit_is_413(client: Any) -> None:
    r = client.post("/v1/score", json={"samples": [_sample(right("4"))] * 65})
    assert r.status_code == 413 and "65 samples" in r.json()["error"]


def test_a_body_that_is_not_json_content_type_is_415(client: Any) -> None:
    r = client.post("/v1/score", content=b'{"samples": []}', headers={"content-type": "text/plain"})
    assert r.status_code == 415


def test_non_local_host_header_is_refused_on_a_loopback_bind(client: Any) -> None:
    r = client.post("/v1/score", json={"samples": [_sample(right("4"))]}, headers={"host": "evil.example:5000"})
    assert r.status_code == 400 and "not local" in r.json()["error"]


# -- token ----------------------------------------------------------------------------------
def test_with_a_token_every_endpoint_but_healthz_needs_it(scorer: Any) -> None:
    from starlette.testclient import TestClient

    with TestClient(RewardServer(scorer, token="s3cret", host="0.0.0.0"), base_url="http://10.0.0.5") as c:
        body = {"samples": [_sample(right("4"))]}
        assert c.post("/v1/score", json=body).status_code == 401
        assert c.post("/v1/score", json=body, headers={"authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/metrics").status_code == 401
        assert c.get("/healthz").status_code == 200
        assert c.post("/v1/score", json=body, headers={"authorization": "Bearer s3cret"}).status_code == 200
        q = {"query": ["2+2=" + right("4")], "prompts": ["2+2="], "labels": ["4"]}
        assert c.post("/get_reward?token=s3cret", json=q).status_code == 200  # OpenRLHF sends no headers


# -- metrics --------------------------------------------------------------------------------
def test_metrics_report_per_term_error_timeout_unparseable_and_masked_rates(client: Any) -> None:
    rows = [_sample(right("4")), _sample("4"), _sample("CRASH " + right("4")), _sample(right("5"))]
    client.post("/v1/score", json={"samples": rows})
    text = client.get("/metrics").text
    assert 'rlvr_serve_term_error_rate{term="correct"} 0.25' in text
    assert 'rlvr_serve_term_unparseable_rate{term="correct"} 0.25' in text
    assert 'rlvr_serve_term_timeout_rate{term="correct"} 0.0' in text
    assert 'rlvr_serve_term_error_rate{term="format"} 0.0' in text
    assert "rlvr_serve_masked_rate 0.25" in text
    assert 'rlvr_serve_errors_total{term="correct",kind="crash"} 1' in text
    assert 'rlvr_serve_requests_total{endpoint="score",code="200"} 1' in text
    assert "# TYPE rlvr_serve_samples_total counter" in text


def test_metrics_count_rejected_requests_by_reason(client: Any) -> None:
    client.post("/v1/score", content=b"{", headers={"content-type": "application/json"})
    assert 'rlvr_serve_rejected_total{reason="bad_json"} 1' in client.get("/metrics").text


# -- on a real socket: admission, deadline, concurrency -------------------------------------
def _post_in_thread(url: str, body: Any, out: list[Any]) -> threading.Thread:
    def go() -> None:
        out.append(httpx.post(url, json=body, timeout=60))

    t = threading.Thread(target=go)
    t.start()
    return t


def _wait_active(url: str, n: int) -> None:
    import time

    for _ in range(600):
        if httpx.get(url + "/healthz", timeout=5).json()["batches_active"] >= n:
            return
        time.sleep(0.05)
    raise AssertionError("no batch became active")


def test_queue_full_gets_503_with_retry_after_and_the_admitted_batch_still_finishes(
    scorer: Any, task_path: Path
) -> None:
    server = ThreadServer(RewardServer(scorer, Limits(workers=1, max_queue=0)))
    release = module_of(task_path).RELEASE
    out: list[Any] = []
    try:
        t = _post_in_thread(server.url + "/v1/score", {"samples": [_sample("WAIT " + right("4"))]}, out)
        _wait_active(server.url, 1)
        r = httpx.post(server.url + "/v1/score", json={"samples": [_sample(right("4"))]}, timeout=30)
        assert r.status_code == 503 and r.headers["retry-after"] == "2" and "busy" in r.json()["error"]
        release.set()
        t.join(60)
        assert out[0].status_code == 200 and out[0].json()["results"][0]["scores"]["correct"]["outcome"] == "correct"
        assert (
            httpx.post(server.url + "/v1/score", json={"samples": [_sample(right("4"))]}, timeout=30).status_code == 200
        )
    finally:
        release.set()
        server.stop()


def test_rows_past_the_deadline_whose_gold_is_as_slow_are_masked_as_timeouts_and_the_server_keeps_serving(
    scorer: Any, task_path: Path
) -> None:
    server = ThreadServer(RewardServer(scorer, Limits(workers=2, deadline=0.2, chunk=1)))
    release = module_of(task_path).RELEASE
    module_of(task_path).GOLD_PREFIX = "WAIT "
    try:
        r = httpx.post(
            server.url + "/v1/score", json={"samples": [_sample(right("4")), _sample("WAIT " + right("4"))]}, timeout=30
        )
        assert r.status_code == 200
        fast, slow = r.json()["results"]
        assert fast["masked"] is False and fast["scores"]["correct"]["outcome"] == "correct"
        assert slow["masked"] is True and slow["scores"]["correct"]["error_kind"] == "timeout"
        assert "deadline" in slow["scores"]["correct"]["detail"]
        assert httpx.get(server.url + "/healthz", timeout=5).json()["status"] == "ok"
        text = httpx.get(server.url + "/metrics", timeout=5).text
        assert "rlvr_serve_deadline_samples_total 1" in text
        assert 'rlvr_serve_term_timeout_rate{term="correct"} 0.5' in text
    finally:
        release.set()
        server.stop()


def test_concurrent_clients_each_get_their_own_rows_back_in_order(scorer: Any) -> None:
    server = ThreadServer(RewardServer(scorer, Limits(workers=2, max_queue=16, chunk=2)))
    answers: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def client(i: int) -> None:
        try:
            for j in range(3):
                rows = [_sample(right(str(i * 10 + j + k)), answer=str(i * 10 + j)) for k in range(5)]
                res = httpx.post(server.url + "/v1/score", json={"samples": rows}, timeout=60).json()["results"]
                answers.setdefault(i, []).extend(x["scores"]["correct"]["outcome"] for x in res)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors
        for i in range(6):
            assert answers[i] == (["correct"] + ["wrong"] * 4) * 3
        assert "rlvr_serve_samples_total 90" in httpx.get(server.url + "/metrics", timeout=5).text
    finally:
        server.stop()


def test_a_completion_with_a_lone_surrogate_still_gets_valid_json(client: Any) -> None:
    body = json.dumps({"samples": [_sample(right("4\ud800"))]}).encode()  # escaped in the request
    r = client.post("/v1/score", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200
    assert json.loads(r.content)["results"][0]["scores"]["correct"]["answer"] == "4\ud800"


def test_a_non_finite_number_in_a_response_is_written_as_null_not_as_invalid_json() -> None:
    from rlvr.serve.app import json_response

    r = json_response({"reward": float("inf"), "ok": [1.0, float("nan")]})
    assert json.loads(r.body) == {"reward": None, "ok": [1.0, None]}


def test_a_slow_wrong_answer_past_the_deadline_is_charged_when_its_gold_is_not_slow(
    scorer: Any, task_path: Path
) -> None:
    server = ThreadServer(RewardServer(scorer, Limits(workers=2, deadline=0.2, chunk=1)))
    module_of(task_path).GOLD_PREFIX = ""
    try:
        rows = [_sample("WAIT " + right("5")), _sample(right("4"))]
        slow, fast = httpx.post(server.url + "/v1/score", json={"samples": rows}, timeout=30).json()["results"]
        assert fast["scores"]["correct"]["outcome"] == "correct"
        assert slow["masked"] is False and slow["reward"] == 0.0
        for term in ("correct", "format"):
            assert slow["scores"][term]["outcome"] == "wrong" and slow["scores"][term]["error_kind"] == "timeout"
        assert "charged to the answer" in slow["scores"]["correct"]["detail"]
        assert "rlvr_serve_deadline_samples_total 1" in httpx.get(server.url + "/metrics", timeout=5).text
    finally:
        module_of(task_path).RELEASE.set()
        server.stop()


def test_a_batch_answered_at_its_deadline_keeps_its_admission_until_its_rows_finish(
    scorer: Any, task_path: Path
) -> None:
    server = ThreadServer(RewardServer(scorer, Limits(workers=1, max_queue=0, deadline=0.2)))
    release = module_of(task_path).RELEASE
    try:
        r = httpx.post(server.url + "/v1/score", json={"samples": [_sample("WAIT " + right("4"))]}, timeout=30)
        assert r.json()["results"][0]["scores"]["correct"]["error_kind"] == "timeout"  # answered at the deadline
        busy = httpx.post(server.url + "/v1/score", json={"samples": [_sample(right("4"))]}, timeout=30)
        assert busy.status_code == 503  # the verifier still holds the only worker
        release.set()
        for _ in range(600):
            if httpx.get(server.url + "/healthz", timeout=5).json()["batches_active"] == 0:
                break
            threading.Event().wait(0.05)
        assert (
            httpx.post(server.url + "/v1/score", json={"samples": [_sample(right("4"))]}, timeout=30).status_code == 200
        )
    finally:
        release.set()
        server.stop()


def test_chunks_not_started_by_the_deadline_are_dropped_not_scored_later(scorer: Any, task_path: Path) -> None:
    server = ThreadServer(RewardServer(scorer, Limits(workers=1, deadline=0.2, chunk=1)))
    module = module_of(task_path)
    try:
        rows = [_sample("WAIT " + right("4")), _sample("queued-1 " + right("4")), _sample("queued-2 " + right("4"))]
        r = httpx.post(server.url + "/v1/score", json={"samples": rows}, timeout=30)
        assert [x["scores"]["correct"]["error_kind"] for x in r.json()["results"]] == ["timeout"] * 3
        module.RELEASE.set()
        for _ in range(600):
            if httpx.get(server.url + "/healthz", timeout=5).json()["batches_active"] == 0:
                break
            threading.Event().wait(0.05)
        assert httpx.get(server.url + "/healthz", timeout=5).json()["batches_active"] == 0
        assert not any("queued" in c for c in module.CALLS)
    finally:
        module.RELEASE.set()
        server.stop()


def test_a_failure_of_the_scoring_code_itself_masks_the_rows_as_a_crash(
    scorer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starlette.testclient import TestClient

    def broken(samples: Any, offset: int = 0) -> Any:
        raise MemoryError("out of memory while scoring")

    monkeypatch.setattr(scorer.reward_set, "score", broken)
    with TestClient(RewardServer(scorer), base_url="http://127.0.0.1") as c:
        res = c.post("/v1/score", json={"samples": [_sample(right("4"))]}).json()["results"][0]
        assert res["masked"] is True and res["scores"]["correct"]["error_kind"] == "crash"
        assert "MemoryError" in res["scores"]["correct"]["detail"]
        assert c.get("/healthz").json()["batches_active"] == 0
