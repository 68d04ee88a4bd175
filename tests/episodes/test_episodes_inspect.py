"""``rlvr inspect`` on an episode task: each sample is an episode; the terminal and the review page
show every turn, call and result, long results folded, markup in a result escaped."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from rlvr.gate.build import build_set
from rlvr.gate.review import FOLD
from rlvr.gate.terminal import render
from rlvr.gate.web import ReviewApp
from rlvr.task import load_task
from support.fakes import FakeSampler
from support.tasks import make_task

LOOKUP = '''
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    if key == "long":
        return "<b>bold</b> " + "x" * 600
    return "20"
'''


@pytest.fixture
def store(tmp_path: Path) -> Any:
    from rlvr.models import load_tokenizer

    folder = tmp_path / "task"
    path = make_task(
        folder,
        rows=8,
        extra={
            "prompt": {"user": "{question}"},
            "environment": {"tools": ["tools.lookup"], "max_turns": 2},
            "generation": {"temperature": 1.0, "max_completion_length": 1000},
        },
    )
    (folder / "tools.py").write_text(LOOKUP)
    task = load_task(path)
    tok = load_tokenizer("builtin:tiny")

    def rule(prompt: str, rng: random.Random) -> str:
        if "<|tool|>" not in prompt:
            key = "long" if rng.random() < 0.5 else "short"
            return f'I will look. <tool_call>{{"name": "lookup", "arguments": {{"key": "{key}"}}}}</tool_call>'
        return "<answer>20</answer>"

    def ids(text: str, _max: int) -> tuple[int, ...]:
        return tuple(tok(text + "</s>", add_special_tokens=False)["input_ids"])

    return task, build_set(task, tmp_path / "set.db", sampler=FakeSampler(rule, token_ids=ids), size=6, seed=1)


def test_every_sample_of_the_set_is_an_episode(store: Any) -> None:
    _, s = store
    samples = [x.rollout for x in s.samples()]
    assert samples and all(x.episode is not None for x in samples)
    ep = samples[0].episode
    assert ep is not None and len(ep.turns) == 2 and ep.calls[0].name == "lookup"
    assert samples[0].completion == ep.final


def test_the_terminal_shows_each_turn_call_and_result_folded(store: Any) -> None:
    task, s = store
    from rlvr.gate.agreement import statuses

    texts = [
        render(s, st, correctness_term=task.success_term, answer_column="answer")
        for st in statuses(s.samples(), s.latest_reviews())
    ]
    assert all("turn 1: I will look." in t and "turn 2 (final answer): <answer>20</answer>" in t for t in texts)
    assert all('→ lookup({"key": ' in t for t in texts)
    long = [t for t in texts if '"long"' in t]
    assert long and all(f"… ({len('<b>bold</b> ') + 600 - FOLD} more characters)" in t for t in long)


def test_the_review_page_shows_the_episode_escaped_and_folded(store: Any) -> None:
    _, s = store
    client = TestClient(ReviewApp(s, reviewer="alice"), base_url="http://127.0.0.1:8765")
    pages = [client.get(f"/sample/{x.id}").text for x in s.samples()]
    assert all("id=episode" in p and "turn 2 · final answer" in p for p in pages)
    long = [p for p in pages if "&lt;b&gt;bold&lt;/b&gt;" in p]
    assert long and all("<details>" in p and "<b>bold</b>" not in p for p in long)
