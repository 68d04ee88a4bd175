"""`rlvr serve` driven exactly as OpenRLHF 0.11.2's remote reward client drives it, without OpenRLHF.

The client below restates ``SingleTurnAgentExecutor._fetch_rewards_via_http`` and its caller
(openrlhf/utils/agent.py, lines 207-365 of the 0.11.2 wheel) with httpx in place of aiohttp:

- one request per sample, every sample of a rollout at once (the executor runs one per sample,
  concurrently): ``{"query": [prompt + response], "prompts": [prompt], "labels": [label]}``,
  the query decoded with ``skip_special_tokens=False``;
- sharded over the URLs given (``--remote_rm_url a,b``): endpoints taken in turn across calls;
- ``raise_for_status`` and up to 5 tries, 1 s apart, on any error (a refused connection, a 503);
  then ``RuntimeError``, which the executor logs and turns into a reward of None;
- from the answer: ``rewards``, ``scores`` (or ``rewards`` when absent) and ``extra_logs``.

The opt-in tests/serve/test_serve_engine_code.py runs OpenRLHF's own executor against the server.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import ProcessServer, right, write_task

from rlvr.serve.engines import OpenRLHFAdapter
from rlvr.serve.launch import write_openrlhf_data
from rlvr.task import load_task

TRIES, PAUSE, TIMEOUT = 5, 1.0, 180.0  # _post_request(try_max_times=5), asyncio.sleep(1), ClientTimeout(total=180)


class OpenRLHFClient:
    """OpenRLHF 0.11.2's remote reward client (module docstring), request for request."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.cycle: Iterator[str] = itertools.cycle(urls)
        self.attempts: list[tuple[str, int | str]] = []  # (url, status or error) for every try

    async def _post(self, url: str, data: dict[str, Any]) -> Any:
        for _ in range(TRIES):
            try:
                async with httpx.AsyncClient(timeout=TIMEOUT) as session:
                    response = await session.post(url, json=data)
                    self.attempts.append((url, response.status_code))
                    response.raise_for_status()
                    return response.json()
            except httpx.HTTPError as exc:
                if not isinstance(exc, httpx.HTTPStatusError):
                    self.attempts.append((url, type(exc).__name__))
            await asyncio.sleep(PAUSE)
        raise RuntimeError(f"Request error for {TRIES} times, returning None. Please check the API server.")

    async def fetch(self, queries: list[str], prompts: list[str], labels: list[Any]) -> list[Any]:
        size = (len(queries) + len(self.urls) - 1) // len(self.urls)
        tasks = []
        for i in range(len(self.urls)):
            if i * size >= len(queries):
                break
            body = {
                "query": queries[i * size : (i + 1) * size],
                "prompts": prompts[i * size : (i + 1) * size],
                "labels": labels[i * size : (i + 1) * size],
            }
            tasks.append(asyncio.create_task(self._post(next(self.cycle), body)))
        return list(await asyncio.gather(*tasks))

    async def reward(self, query: str, prompt: str, label: Any) -> dict[str, Any] | None:
        """What the executor keeps for one sample: ``reward``, ``scores``, ``extra_logs`` (None on failure)."""
        try:
            info = (await self.fetch([query], [prompt], [label]))[0]
        except Exception:  # noqa: BLE001 - the executor logs it and leaves the reward None
            return None
        score = info.get("scores")
        return {"reward": info.get("rewards"), "scores": info.get("rewards") if score is None else score,
                "extra_logs": info.get("extra_logs") or {}}  # fmt: skip

    def rollout(self, samples: list[tuple[str, str, Any]]) -> list[dict[str, Any] | None]:
        async def go() -> list[dict[str, Any] | None]:
            return list(await asyncio.gather(*(self.reward(q, p, label) for q, p, label in samples)))

        return asyncio.run(go())


def _rollout(task_path: Path, tmp: Path, groups: int = 2, n: int = 8) -> list[tuple[str, str, Any]]:
    """Samples as OpenRLHF builds them from the data `--launch` writes: the JSONL ``input`` as the
    prompt, the ``label``, and prompt + response + the end-of-turn token as the query."""
    files = write_openrlhf_data(load_task(task_path, check_data=False), tmp / "data")
    lines = [json.loads(x) for x in Path(files["train"]).read_text().splitlines()[:groups]]
    out = []
    for line in lines:
        gold = json.loads(line["label"])["answer"]
        for i in range(n):
            response = right(gold) if i % 2 else "<answer>-1</answer>"
            out.append((line["input"] + response + "<|im_end|>", line["input"], line["label"]))
    return out


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    return write_task(tmp_path / "t")


def test_every_sample_gets_the_reward_the_in_process_adapter_gives(task_file: Path, tmp_path: Path) -> None:
    samples = _rollout(task_file, tmp_path)
    server = ProcessServer(task_file)
    try:
        got = OpenRLHFClient([server.url + "/get_reward"]).rollout(samples)
    finally:
        server.kill()
    local = OpenRLHFAdapter(task_file, no_gate_reason="x")
    for (q, p, label), answer in zip(samples, got, strict=True):
        assert answer is not None
        want = local([q], [p], [label])
        assert answer["reward"] == want["rewards"] and answer["scores"] == want["scores"]
        assert all(len(v) == 1 for v in answer["extra_logs"].values())
    assert {round(a["reward"][0], 6) for a in got if a} == {1.1, 0.1}  # right, and tagged but wrong


def test_a_server_at_capacity_answers_503_which_the_client_retries(task_file: Path, tmp_path: Path) -> None:
    samples = _rollout(task_file, tmp_path, groups=4)
    server = ProcessServer(task_file, "--workers", "1", "--max-queue", "0")
    try:
        client = OpenRLHFClient([server.url + "/get_reward"])
        client.rollout(samples)
    finally:
        server.kill()
    statuses = [status for _, status in client.attempts]
    assert set(statuses) <= {200, 503} and 503 in statuses
    assert len(statuses) > len(samples)  # every 503 was tried again


def test_a_queue_as_long_as_the_rollout_answers_every_sample_on_the_first_try(task_file: Path, tmp_path: Path) -> None:
    samples = _rollout(task_file, tmp_path, groups=4)
    server = ProcessServer(task_file, "--max-queue", str(len(samples)))
    try:
        client = OpenRLHFClient([server.url + "/get_reward"])
        got = client.rollout(samples)
    finally:
        server.kill()
    assert all(a is not None for a in got)
    assert [status for _, status in client.attempts] == [200] * len(samples)


def test_two_urls_are_used_in_turn_across_one_sample_calls(task_file: Path, tmp_path: Path) -> None:
    samples = _rollout(task_file, tmp_path, groups=1, n=4)
    a, b = ProcessServer(task_file), ProcessServer(task_file)
    try:
        client = OpenRLHFClient([a.url + "/get_reward", b.url + "/get_reward"])
        got = client.rollout(samples)
    finally:
        a.kill()
        b.kill()
    assert all(x is not None for x in got)
    used = [url for url, status in client.attempts if status == 200]
    assert used.count(a.url + "/get_reward") == used.count(b.url + "/get_reward") == 2
