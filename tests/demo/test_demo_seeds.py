"""bench/demo_seeds.py's table: one row per demo and seed, from each run's demo.json, never invented."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo_seeds", ROOT / "bench" / "demo_seeds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stage(name: str, pass1: float, passk: float, greedy: float) -> dict[str, object]:
    return {"name": name, "pass1": pass1, "passk": passk, "accuracy": greedy, "k": 4}


def test_a_row_shows_each_stage_the_lift_with_its_interval_and_the_cost(tmp_path: Path) -> None:
    (tmp_path / "smollm2-s1").mkdir()
    demo = {
        "stages": [
            stage("base", 0.0, 0.0, 0.0),
            stage("after SFT", 0.2, 0.5, 0.4),
            stage("after GRPO", 0.45, 0.7, 0.5),
        ],
        "lift": 0.25,
        "lift_low": 0.14,
        "lift_high": 0.35,
        "seconds": 720.0,
        "cpu_seconds": 600.0,
        "load_average": [3.0, 2.0, 1.0, 5.0, 4.0, 3.0],
        "sft_steps": 7,
    }
    (tmp_path / "smollm2-s1" / "demo.json").write_text(json.dumps(demo))
    row = bench().row_of(tmp_path, "smollm2", 1)
    assert row == [
        "smollm2",
        "1",
        "7",
        "0.0",
        "20.0 / 45.0",
        "50.0 / 70.0 (k=4)",
        "40.0 / 50.0",
        "+25.0 [+14.0, +35.0]",
        "12.0",
        "10.0",
        "3.0/5.0",
    ]


def test_a_run_that_was_not_made_is_marked_not_measured(tmp_path: Path) -> None:
    table = bench().table(tmp_path, ["tiny"], [0, 2])
    assert table.count("not measured") == 2


def test_the_verdict_line_states_the_range_over_seeds_against_the_goal(tmp_path: Path) -> None:
    for seed, lift, cpu in [(0, 0.25, 600.0), (1, 0.18, 700.0)]:
        (tmp_path / f"smollm2-s{seed}").mkdir()
        (tmp_path / f"smollm2-s{seed}" / "demo.json").write_text(json.dumps({"lift": lift, "cpu_seconds": cpu}))
    [line] = bench().verdicts(tmp_path, ["smollm2"], [0, 1])
    assert line == (
        "smollm2: lift +18.0 to +25.0 points over 2 of 2 seeds, 10.0-11.7 CPU min; "
        "goal +20 on every seed in <= 15 CPU min: NOT met"
    )
    (tmp_path / "smollm2-s1" / "demo.json").write_text(json.dumps({"lift": 0.21, "cpu_seconds": 700.0}))
    assert bench().verdicts(tmp_path, ["smollm2"], [0, 1])[0].endswith(": met")


def test_the_markdown_table_has_the_same_cells(tmp_path: Path) -> None:
    lines = bench().table(tmp_path, ["tiny"], [0], markdown=True).splitlines()
    assert lines[0].startswith("| demo | seed | SFT steps |") and lines[1].startswith("|---|")
    assert lines[2] == "| tiny | 0 | not measured |"
