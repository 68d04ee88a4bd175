"""``rlvr plan`` states the tripwire's thresholds: printed, written into the plan file, and read
back from it by ``rlvr train --config``; a bad value in the task is refused by the plan."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlvr.audit.tripwire import TripwireRules, rules_for
from rlvr.cli.main import main
from rlvr.settings.file import RunConfig

ARITH = Path(__file__).resolve().parents[2] / "examples" / "arithmetic"


def task_with(tmp_path: Path, tripwire: object) -> Path:
    raw = yaml.safe_load((ARITH / "task.yaml").read_text())
    raw["data"] = {"train": str(ARITH / "train.jsonl"), "eval": str(ARITH / "eval.jsonl")}
    raw["grpo"] = {**(raw.get("grpo") or {}), "tripwire": tripwire}
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_plan_prints_the_tripwire_and_the_plan_file_carries_it_back(tmp_path: Path, capsys) -> None:
    task = task_with(tmp_path, {"every": 10, "findings": 2})
    out = tmp_path / "plan.yaml"
    assert main(["plan", str(task), "--gpus", "0", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "tripwire: every 10 steps probe the 8 best rollouts; stop at 2 findings" in printed
    text = out.read_text()
    assert "RLVR_TRIPWIRE_EVERY: '10'" in text and "# tripwire: every 10" in text
    assert "tripwire" not in RunConfig.read(out).grpo  # not a GRPOConfig value
    assert rules_for({}, "other.yaml", RunConfig.read(out)) == TripwireRules(every=10, findings=2)


def test_a_bad_tripwire_value_in_the_task_is_refused_by_the_plan(tmp_path: Path, capsys) -> None:
    task = task_with(tmp_path, {"every": -1})
    assert main(["plan", str(task), "--gpus", "0", "-o", str(tmp_path / "p.yaml")]) == 2
    err = capsys.readouterr().err
    assert "grpo.tripwire.every" in err and err.count("\n") == 1
    assert not (tmp_path / "p.yaml").exists()


@pytest.mark.parametrize("off", [{"every": 0}])
def test_every_zero_is_printed_as_off(tmp_path: Path, capsys, off: dict) -> None:
    task = task_with(tmp_path, off)
    assert main(["plan", str(task), "--gpus", "0", "-o", str(tmp_path / "p.yaml")]) == 0
    assert "tripwire: off (every 0)" in capsys.readouterr().out
