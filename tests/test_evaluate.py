"""The held-out eval's sampled measures: the pass@k estimator, its intervals and the sampled eval."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr.evaluate import lift_interval, mean_interval, pass_at_k, sampled_result

counts = st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n)))
values = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=60)


@given(counts)
def test_pass_at_k_is_one_minus_the_share_of_all_wrong_draws(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)


@given(counts)
def test_pass_at_1_is_the_share_correct(nck: tuple[int, int, int]) -> None:
    n, c, _ = nck
    assert pass_at_k(n, c, 1) == pytest.approx(c / n)


@given(counts)
def test_pass_at_k_grows_with_correct_samples_and_with_k(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    if c < n:
        assert pass_at_k(n, c + 1, k) >= pass_at_k(n, c, k)
    if k < n:
        assert pass_at_k(n, c, k + 1) >= pass_at_k(n, c, k)


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n))), st.floats(0.0, 1.0))
def test_pass_at_k_is_unbiased_for_the_chance_that_k_samples_hold_a_correct_one(nk: tuple[int, int], p: float) -> None:
    n, k = nk
    expected = sum(math.comb(n, c) * p**c * (1 - p) ** (n - c) * pass_at_k(n, c, k) for c in range(n + 1))
    assert expected == pytest.approx(1 - (1 - p) ** k, abs=1e-9)


def test_pass_at_k_refuses_k_above_the_samples() -> None:
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(4, 1, 5)


@given(values, st.integers(1, 16))
def test_the_mean_interval_holds_the_mean_inside_zero_and_one_with_positive_width(
    vals: list[float], per_value: int
) -> None:
    low, high = mean_interval(vals, per_value)
    mean = sum(vals) / len(vals)
    assert 0.0 <= low <= mean + 1e-12 and mean - 1e-12 <= high <= 1.0 and high > low


@given(values)
def test_the_mean_interval_narrows_with_more_prompts_alike(vals: list[float]) -> None:
    low, high = mean_interval(vals)
    low2, high2 = mean_interval(vals * 4)
    assert high2 - low2 <= high - low + 1e-12


def test_prompts_that_are_all_or_nothing_get_a_wider_interval_than_independent_samples() -> None:
    # 10 prompts x 8 samples at 50 %: every prompt half right (independent) vs half all-right, half all-wrong.
    spread = mean_interval([0.5] * 10, 8)
    clustered = mean_interval([1.0] * 5 + [0.0] * 5, 8)
    assert clustered[1] - clustered[0] > 2 * (spread[1] - spread[0])


triple = st.floats(0.0, 1.0).flatmap(
    lambda p: st.tuples(
        st.just(p), st.floats(0.0, 1.0).map(lambda x: x * p), st.floats(0.0, 1.0).map(lambda x: p + x * (1 - p))
    )
)


@given(triple, triple)
def test_the_lift_interval_holds_the_lift_and_flips_sign_with_the_order(
    before: tuple[float, float, float], after: tuple[float, float, float]
) -> None:
    lift, low, high = lift_interval(before, after)
    assert lift == pytest.approx(after[0] - before[0])
    assert -1.0 <= low <= lift + 1e-12 and lift - 1e-12 <= high <= 1.0
    back, back_low, back_high = lift_interval(after, before)
    assert (back, back_low, back_high) == pytest.approx((-lift, -high, -low))


def test_a_sampled_result_leaves_out_prompts_without_decided_samples_and_says_so() -> None:
    res = sampled_result([(2, 4), (0, 0), (4, 4), (1, 3)], samples=4, k=4, temperature=1.0)
    assert res.prompts == 3 and res.masked == 5 and res.decided == 11 and res.correct == 7
    assert res.pass1 == pytest.approx((0.5 + 1.0 + 1 / 3) / 3)
    assert res.passk == 1.0 and res.passk_prompts == 2  # pass@4 needs 4 decided samples
    assert res.pass1_low < res.pass1 < res.pass1_high
    assert res.summary().startswith("pass@1 61.1% [") and "4 samples x 3 prompts, T=1, 5 masked" in res.summary()


def test_the_sampled_eval_draws_k_completions_per_prompt_at_the_task_temperature(tmp_path: Path) -> None:
    from rlvr.evaluate import evaluate_sampled
    from rlvr.models import load_model, load_tokenizer
    from rlvr.task import load_task
    from support.tasks import make_task

    task = load_task(make_task(tmp_path))
    rows = task.load_split("eval")[:3]
    res = evaluate_sampled(load_model("builtin:tiny"), load_tokenizer("builtin:tiny"), task, rows, samples=5, k=2)
    assert (res.samples, res.k, res.prompts, res.decided + res.masked) == (5, 2, 3, 15)
    assert res.temperature == task.generation.temperature
    with pytest.raises(ValueError, match="temperature above 0"):
        evaluate_sampled(load_model("builtin:tiny"), load_tokenizer("builtin:tiny"), task, rows, temperature=0.0)
