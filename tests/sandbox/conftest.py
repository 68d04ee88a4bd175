"""Shared sandbox pools: starting workers costs ~0.2 s, so each module reuses one."""

from __future__ import annotations

import os

import pytest

from rlvr.rewards.code import UnitTests
from rlvr.sandbox.pool import Limits, SandboxPool


def _needs_linux() -> None:
    if not os.path.exists("/proc/self/status"):
        pytest.skip("the sandbox needs Linux")


@pytest.fixture(scope="module")
def pool():
    _needs_linux()
    p = SandboxPool(2, Limits(timeout=2.0, memory_mb=512))
    p.start()
    yield p
    p.close()


@pytest.fixture(scope="module")
def full_pool(pool):
    """The pool, but only when every isolation layer is active (root on a Landlock kernel)."""
    missing = pool.layers.missing()
    if missing:
        pytest.skip(
            f"needs every isolation layer; missing here: {', '.join(missing)} (run as root on a kernel with Landlock)"
        )
    return pool


@pytest.fixture(scope="module")
def verifier(pool):
    return UnitTests(timeout=2.0, memory_mb=512, pool=pool)
