"""Issue 25, item 7: request bodies go through the one strict JSON reader (400 JSON, never a 500
text), a remote bind needs a token of at least 16 characters, and no response carries a path
of the server's machine."""

from __future__ import annotations

from typing import Any

import pytest
from serve_helpers import right

from rlvr.errors import ConfigError
from rlvr.serve.app import MIN_TOKEN_CHARS, check_bind


def _post(client: Any, path: str, text: str) -> Any:
    return client.post(path, content=text.encode(), headers={"content-type": "application/json"})


BAD_BODIES = {
    "deep": '{"samples": ' + "[" * 5000 + "]" * 5000 + "}",
    "huge integer": '{"samples": [{"completion": "x", "answer": 1%s}]}' % ("0" * 5000),
    "NaN": '{"samples": [{"completion": "x", "answer": NaN}]}',
    "Infinity": '{"samples": [{"completion": "x", "answer": -Infinity}]}',
    "float overflow": '{"samples": [{"completion": "x", "answer": 1e999}]}',
    "duplicate key": '{"samples": [{"completion": "x", "completion": "y", "answer": "4"}]}',
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
@pytest.mark.parametrize("path", ["/v1/score", "/get_reward"])
def test_a_body_the_strict_reader_refuses_is_a_400_json_error(client: Any, name: str, path: str) -> None:
    r = _post(client, path, BAD_BODIES[name])
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/json")
    assert "not valid JSON" in r.json()["error"]


def test_the_server_still_scores_after_refusing_bad_bodies(client: Any) -> None:
    for text in BAD_BODIES.values():
        _post(client, "/v1/score", text)
    r = client.post("/v1/score", json={"samples": [{"completion": right("4"), "prompt": "2+2=", "answer": "4"}]})
    assert r.status_code == 200 and r.json()["results"][0]["scores"]["correct"]["outcome"] == "correct"


def test_a_short_token_is_refused_for_a_remote_bind_and_the_minimum_is_stated() -> None:
    with pytest.raises(ConfigError, match=f"at least {MIN_TOKEN_CHARS}"):
        check_bind("0.0.0.0", "x", allow_remote=True)
    with pytest.raises(ConfigError, match=f"at least {MIN_TOKEN_CHARS}"):
        check_bind("0.0.0.0", "a" * (MIN_TOKEN_CHARS - 1), allow_remote=True)
    check_bind("0.0.0.0", "a" * MIN_TOKEN_CHARS, allow_remote=True)
    check_bind("127.0.0.1", "x", allow_remote=False)  # a loopback bind needs no token at all


def test_no_response_carries_a_path_of_the_servers_machine(client: Any, task_path: Any) -> None:
    a = client.post("/v1/score", json={"samples": [{"completion": right("4"), "prompt": "2+2=", "answer": "4"}]})
    b = client.post("/get_reward", json={"query": ["2+2=" + right("4")], "prompts": ["2+2="], "labels": ["4"]})
    for r in (a, b, client.get("/healthz")):
        assert str(task_path.parent) not in r.text and "task_path" not in r.text


def test_an_openrlhf_query_ending_in_a_long_whitespace_run_is_answered(client: Any) -> None:
    # The old trailing-token pattern backtracked over the run on the event loop (13 s for 60 KB);
    # tests/rewards/test_rewards_patterns.py bounds the strip's work by the input size.
    query = "2+2=" + right("4") + " " * 60_000 + "x"
    r = client.post("/get_reward", json={"query": [query], "prompts": ["2+2="], "labels": ["4"]})
    assert r.status_code == 200
    query = "2+2=" + right("4") + " \n" * 15_000 + "<|im_end|>"
    r = client.post("/get_reward", json={"query": [query], "prompts": ["2+2="], "labels": ["4"]})
    assert r.status_code == 200 and r.json()["rewards"][0] == pytest.approx(1.1)
