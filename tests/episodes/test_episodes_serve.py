"""``rlvr serve`` on an episode task: /v1/score scores whole episodes (the message list)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.serve.episodes import ServedEpisodes
from rlvr.serve.scoring import rlvr_samples
from rlvr.task import load_task
from support.tasks import make_task

CALL = {"type": "function", "function": {"name": "calculator", "arguments": {"expression": "10+10"}}}


def served(tmp_path: Path) -> Any:
    env = {"tools": ["calculator"], "required": ["calculator"], "terms": {"required_tools": 0.5}}
    return load_task(make_task(tmp_path, extra={"prompt": {"user": "{question}"}, "environment": env}))


def score(task: Any, completions: list[Any]) -> list[Any]:
    body = {"samples": [{"completion": c, "prompt": "10+10", "answer": "20"} for c in completions]}
    rewards = ServedEpisodes(task)
    samples, _ = rlvr_samples(body, 100, rewards)
    return [rewards.total(s) for s in rewards.score(samples)]


def test_a_whole_episode_is_scored_on_its_final_answer_and_its_calls(tmp_path: Path) -> None:
    task = served(tmp_path)
    used = [
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "name": "calculator", "content": "20"},
        {"role": "assistant", "content": "<answer>20</answer>"},
    ]
    failed = [used[0], {"role": "tool", "name": "calculator", "content": "error: timed out"}, used[2]]
    skipped = [used[2]]
    answer_in_result = [used[0], {"role": "tool", "name": "calculator", "content": "<answer>20</answer>"}]
    assert score(task, [used, failed, skipped, answer_in_result, "<answer>20</answer>"]) == [
        1.6,  # format 0.1 + correct 1 + required_tools 0.5
        1.1,  # the call failed: the required tool was not used
        1.1,
        0.5,  # the answer only in a tool result is not an answer
        1.1,  # plain text: an episode of one turn
    ]


def test_the_server_meta_lists_the_episode_terms(tmp_path: Path) -> None:
    rewards = ServedEpisodes(served(tmp_path))
    assert [(t.name, t.weight) for t in rewards.terms] == [("format", 0.1), ("correct", 1.0), ("required_tools", 0.5)]


def test_the_score_endpoint_scores_episodes(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from rlvr.serve.app import RewardServer
    from rlvr.serve.scoring import Scorer

    task = served(tmp_path)
    server = RewardServer(Scorer.from_task(task.path, no_gate_reason="episode serve test"))
    episode = [
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "name": "calculator", "content": "20"},
        {"role": "assistant", "content": "<answer>20</answer>"},
    ]
    with TestClient(server.app, base_url="http://127.0.0.1") as client:
        resp = client.post("/v1/score", json={"samples": [{"completion": episode, "prompt": "10+10", "answer": "20"}]})
    assert resp.status_code == 200, resp.text
    (result,) = resp.json()["results"]
    assert result["reward"] == 1.6 and result["scores"]["required_tools"]["score"] == 1.0


def test_rlvr_score_scores_an_episode_tasks_lines_as_episodes(tmp_path: Path) -> None:
    import json

    from rlvr.cli.main import main

    task = served(tmp_path / "task")
    episode = [
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "name": "calculator", "content": "20"},
        {"role": "assistant", "content": "<answer>20</answer>"},
    ]
    lines = [{"completion": episode, "answer": "20"}, {"completion": "<answer>20</answer>", "answer": "20"}]
    data = tmp_path / "episodes.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(["score", str(data), "--task", str(task.path)]) == 0
    scored = [json.loads(x) for x in (tmp_path / "episodes.scored.jsonl").read_text().splitlines()]
    assert [s["reward"] for s in scored] == [1.6, 1.1]
    assert scored[0]["scores"]["required_tools"]["score"] == 1.0


def test_a_row_past_the_deadline_is_settled_against_the_answer_terms_gold(tmp_path: Path) -> None:
    """The server's deadline rule (``past_deadline``) reads what each term makes of the row's gold:
    the answer terms score it, the episode terms have none."""
    from rlvr.rewards.base import Outcome, Sample
    from rlvr.serve.scoring import gold_verdicts, past_deadline

    rewards = ServedEpisodes(served(tmp_path))
    gold = gold_verdicts(rewards, Sample("<answer>21</answer>", {"answer": "20"}, "10+10"))
    assert gold["correct"] is not None and gold["correct"].outcome is Outcome.CORRECT
    assert gold["required_tools"] is None
    late = past_deadline(rewards.names, 1.0, gold)
    assert not late.masked and late.verdicts["correct"].outcome is Outcome.WRONG
