"""Fixtures for the gate tests (helpers live in tests/support/gate_fixtures.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlvr.task import load_task
from support.gate_fixtures import build_and_review, sign_small, unique_module, write_task


@pytest.fixture
def task(tmp_path: Path) -> Any:
    return load_task(write_task(tmp_path / "task"))


@pytest.fixture
def user_task(tmp_path: Path) -> Any:
    return load_task(write_task(tmp_path / "task", module=unique_module()))


@pytest.fixture
def signed(user_task: Any) -> Any:
    """A user-module task with a reviewed, signed gate."""
    build_and_review(user_task)
    sign_small(user_task)
    return user_task
