"""When SFT stops: the band, the quick read and its confirmation (pure: fakes, no model)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr.train.sftstop import StopRule, overshoot, parse_band


def test_a_stopping_check_above_the_band_is_an_overshoot_naming_both_checks() -> None:
    message = overshoot([(1, 0.05), (2, 0.85)], 0.5, 40)
    assert message is not None and "85% on 40 dev rows at step 2, above its upper edge 50%" in message
    assert "at step 1, measured 5%" in message and "--check-every" in message


def test_a_stopping_check_inside_the_band_or_without_an_upper_edge_is_no_overshoot() -> None:
    assert overshoot([(1, 0.3)], 0.5, 40) is None
    assert overshoot([(1, 0.9)], None, 40) is None


@pytest.mark.parametrize(("text", "band"), [("0.2", (0.2, None)), ("0.2-0.5", (0.2, 0.5)), ("1", (1.0, None))])
def test_a_target_is_a_rate_or_a_band(text: str, band: tuple[float, float | None]) -> None:
    assert parse_band(text) == band


@pytest.mark.parametrize("text", ["0", "1.5", "0.5-0.2", "0.2-1.5", "a-b", "20%"])
def test_a_target_outside_zero_to_one_or_an_upside_down_band_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=repr(text)):
        parse_band(text)


def _fake_confirm(rate: float, calls: list[int]) -> Callable[[int], float]:
    def confirm(k: int) -> float:
        calls.append(k)
        return rate

    return confirm


@given(low=st.floats(0.01, 1.0), quick=st.floats(0.0, 1.0), confirmed=st.floats(0.0, 1.0), k=st.integers(1, 16))
def test_sft_stops_only_where_the_confirming_read_holds_the_band_and_reports_its_rate(
    low: float, quick: float, confirmed: float, k: int
) -> None:
    calls: list[int] = []
    rate = StopRule(low, None, k).stop(quick, _fake_confirm(confirmed, calls))
    # The confirming read is made only when the quick read reaches the band, with k samples per row.
    assert calls == ([k] if quick >= low else [])
    # A lucky quick read alone never stops SFT; the rate it stops at is the confirming read's.
    assert rate == (confirmed if quick >= low and confirmed >= low else None)


@given(low=st.floats(0.01, 1.0), quick=st.floats(0.0, 1.0))
def test_without_a_confirming_read_sft_stops_on_the_first_quick_read_in_the_band(low: float, quick: float) -> None:
    calls: list[int] = []
    assert StopRule(low, None, 0).stop(quick, _fake_confirm(0.0, calls)) == (quick if quick >= low else None)
    assert calls == []
