"""The walk of a value set on the command line to TRL's GRPOConfig (``bench/settings_walk.py``)
stays short: settings are resolved in one place, so the value climbs back to a module it passed
at most three times (issue 46: nine before the settings package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "settings_walk.py"


@pytest.mark.parametrize(("key", "value"), [("learning_rate", 2e-4), ("num_generations", 16)])
def test_a_value_set_on_the_command_line_climbs_back_at_most_three_times(key: str, value: object) -> None:
    spec = importlib.util.spec_from_file_location("settings_walk", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    visits = bench.walk(key, value, "value")
    assert visits[0] == "rlvr.cli._common" and visits[-1] == "rlvr.train.launch", visits
    assert bench.climb_backs(visits) <= 3, visits
