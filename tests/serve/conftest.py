"""Fixtures for the reward-server tests (helpers in serve_helpers.py, imported by name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from serve_helpers import write_task


@pytest.fixture
def task_path(tmp_path: Path) -> Path:
    return write_task(tmp_path / "task")


@pytest.fixture
def scorer(task_path: Path) -> Any:
    from rlvr.serve import Scorer

    return Scorer.from_task(task_path, no_gate_reason="unit test of the server")


@pytest.fixture
def client(scorer: Any) -> Any:
    from starlette.testclient import TestClient

    from rlvr.serve.app import Limits, RewardServer

    with TestClient(
        RewardServer(scorer, Limits(max_rows=64, max_body_bytes=64 * 1024)), base_url="http://127.0.0.1"
    ) as c:
        yield c
