"""Cohen's kappa: one function for the judge calibration and the inspection gate, edge cases included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rlvr.rewards.judge import JudgeConfig, calibrate, check_record
from rlvr.rewards.kappa import cohen_kappa, pair_kappa


def test_empty_matrix_has_neither_kappa_nor_observed_agreement() -> None:
    assert cohen_kappa({}) == (None, None)
    assert cohen_kappa({"pass": {"pass": 0, "fail": 0}}) == (None, None)


def test_empty_label_lists_have_no_kappa() -> None:
    assert pair_kappa([], []) is None


def test_one_and_the_same_label_on_both_sides_leaves_kappa_undefined() -> None:
    assert cohen_kappa({"pass": {"pass": 7, "fail": 0}, "fail": {"pass": 0, "fail": 0}}) == (None, 1.0)
    assert pair_kappa([True] * 5, [True] * 5) is None


def test_constant_raters_with_different_labels_have_kappa_zero() -> None:
    assert cohen_kappa({"pass": {"fail": 4}}) == (0.0, 0.0)
    assert pair_kappa([True] * 4, [False] * 4) == 0.0


def test_one_constant_rater_has_kappa_zero_not_undefined() -> None:
    assert pair_kappa([True] * 4, [True, True, False, False]) == pytest.approx(0.0)


def test_the_gate_and_the_judge_share_one_kappa_function() -> None:
    from rlvr.gate.agreement import cohen_kappa as gate_kappa

    assert gate_kappa is cohen_kappa


class _OneLabelClient:
    """A fake judge endpoint that answers CORRECT to everything."""

    def post(self, url: str, json: Any = None, headers: Any = None, timeout: float = 0) -> Any:
        class Reply:
            status_code = 200
            text = ""

            def json(self) -> Any:
                return {"choices": [{"message": {"content": "CORRECT"}}]}

        return Reply()


def test_a_calibration_on_one_label_does_not_license_the_judge(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"completion": str(i), "label": True}) + "\n" for i in range(60)))
    cfg = JudgeConfig("fake-judge", "http://127.0.0.1:1/v1")
    record = calibrate(labels, cfg, client=_OneLabelClient())
    assert record.accuracy == 1.0 and record.kappa == 0.0 and not record.passed
    assert any("undefined" in n for n in record.notes)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(record.to_json()))
    assert any("kappa" in p for p in check_record(path, cfg, 0.6))
