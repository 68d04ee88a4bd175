"""The progress line's rates (``train.callbacks.Throughput``): samples per second since the
session's first step, and tokens per second from the trainer's running ``num_tokens``. A resumed
run has no token count at its start, so it shows no token rate until it has a baseline (it
printed ``tokens/s 0`` at the first step after a resume)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr.train import callbacks
from rlvr.train.callbacks import Throughput


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(callbacks.time, "monotonic", c)
    return c


def test_a_fresh_run_counts_tokens_from_zero(clock: Clock) -> None:
    t = Throughput()
    t.start(0, per_step=8)
    clock.now += 2.0
    t.step = 1
    assert t.shown({"num_tokens": 400}) == {"samples/s": "4", "tokens/s": "200"}


def test_the_first_log_after_a_resume_sets_the_baseline_and_shows_no_token_rate(clock: Clock) -> None:
    t = Throughput()
    t.start(50, per_step=8)
    clock.now += 2.0
    t.step = 51
    first = t.shown({"num_tokens": 20_000})
    assert first == {"samples/s": "4"}
    clock.now += 4.0
    t.step = 53
    assert t.shown({"num_tokens": 21_000}) == {"samples/s": "4", "tokens/s": "250"}


@given(start=st.integers(0, 1000), steps=st.lists(st.tuples(st.floats(0.01, 10), st.integers(1, 10_000)), max_size=6))
def test_the_token_rate_is_never_zero_or_negative_while_tokens_grow(start: int, steps: list[tuple[float, int]]) -> None:
    c = Clock()
    real = callbacks.time.monotonic
    callbacks.time.monotonic = c  # type: ignore[assignment]
    try:
        t = Throughput()
        t.start(start, per_step=4)
        tokens = 10**6 if start else 0
        for k, (dt, more) in enumerate(steps, start=1):
            c.now += dt
            t.step = start + k
            tokens += more
            rate = t.shown({"num_tokens": tokens}).get("tokens/s")
            assert rate is None or float(rate) > 0
    finally:
        callbacks.time.monotonic = real  # type: ignore[assignment]
