"""Calibrating a judge against human labels (``calibrate``), and the record that licenses it
(``write_record``, ``check_record``). ``rlvr.rewards.judge`` documents the rules.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import atomic
from ..data import read_objects
from ..errors import DataError
from .base import Sample
from .judgecore import DEFAULT_LABELS, JudgeConfig, JudgeFailure, ask, check_kappa
from .kappa import pair_kappa

MIN_ROWS = 20  # judged rows a calibration needs: below it one disagreement moves kappa by ~0.1


@dataclass(frozen=True)
class CalibrationRecord:
    """Agreement of one judge configuration with human labels."""

    model: str
    base_url: str
    prompt_sha256: str
    version: str
    n: int
    judged: int
    errors: int
    accuracy: float
    kappa: float
    confusion: dict[str, int]
    threshold: float
    passed: bool
    labels_file: str
    created: str
    notes: list[str] = field(default_factory=list)
    labels: tuple[str, str] = DEFAULT_LABELS

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _label(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("correct", "incorrect", "true", "false", "yes", "no"):
        return value.strip().lower() in ("correct", "true", "yes")
    raise DataError(f"{where}: field 'label' must be true/false or correct/incorrect, got {value!r}")


def read_labels(path: str | Path) -> list[tuple[Sample, bool]]:
    p = Path(path)
    out = []
    for lineno, row in read_objects(p):
        for key in ("completion", "label"):
            if key not in row:
                raise DataError(f"{p}:{lineno}: field {key!r} is missing")
        label = _label(row["label"], f"{p}:{lineno}")
        sample = Sample(
            str(row["completion"]),
            {k: v for k, v in row.items() if k not in ("completion", "label")},
            prompt=str(row.get("prompt") or ""),
        )
        out.append((sample, label))
    if not out:
        raise DataError(f"{p}: no labelled rows")
    return out


def calibrate(
    labels_path: str | Path, cfg: JudgeConfig, threshold: float = 0.6, concurrency: int = 4, client: Any = None
) -> CalibrationRecord:
    """Judge every labelled row and measure agreement. Judge errors are left out of accuracy and
    kappa and counted; more than 5% errors fails the calibration whatever the kappa."""
    import datetime

    import httpx

    threshold = check_kappa("threshold", threshold)

    rows = read_labels(labels_path)
    own = client is None
    client = client or httpx.Client()
    try:

        def one(item: tuple[Sample, bool]) -> bool | None:
            try:
                return ask(client, cfg, item[0])
            except JudgeFailure:
                return None

        with ThreadPoolExecutor(max(1, concurrency)) as ex:
            verdicts = list(ex.map(one, rows))
    finally:
        if own:
            client.close()
    pairs = [(h, j) for (_, h), j in zip(rows, verdicts, strict=True) if j is not None]
    human, judge = [h for h, _ in pairs], [j for _, j in pairs]
    errors = len(rows) - len(pairs)
    confusion = {
        "judge_correct_human_correct": sum(h and j for h, j in pairs),
        "judge_correct_human_incorrect": sum(j and not h for h, j in pairs),
        "judge_incorrect_human_correct": sum(h and not j for h, j in pairs),
        "judge_incorrect_human_incorrect": sum(not h and not j for h, j in pairs),
    }
    accuracy = sum(h == j for h, j in pairs) / len(pairs) if pairs else 0.0
    measured = pair_kappa(human, judge)
    notes = []
    if measured is None:
        notes.append("kappa is undefined (no judged rows, or both sides gave one and the same label): recorded as 0")
    kappa = 0.0 if measured is None else measured
    if errors > 0.05 * len(rows):
        notes.append(f"{errors} of {len(rows)} judgements failed (over 5%): fix the judge endpoint before trusting it")
    if len(pairs) < 50:
        notes.append(f"only {len(pairs)} judged rows: kappa is noisy below about 50")
    if len(set(human)) < 2:
        notes.append("the human labels are all one class: kappa cannot measure agreement; label both kinds")
    if len(pairs) < MIN_ROWS:
        notes.append(f"only {len(pairs)} judged rows; a calibration needs at least {MIN_ROWS}")
    passed = kappa >= threshold and errors <= 0.05 * len(rows) and len(set(human)) == 2 and len(pairs) >= MIN_ROWS
    return CalibrationRecord(
        model=cfg.model,
        base_url=cfg.base_url,
        prompt_sha256=cfg.prompt_sha256,
        version=cfg.version,
        n=len(rows),
        judged=len(pairs),
        errors=errors,
        accuracy=round(accuracy, 6),
        kappa=round(kappa, 6),
        confusion=confusion,
        threshold=threshold,
        passed=passed,
        labels_file=str(labels_path),
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        notes=notes,
        labels=cfg.labels,
    )


def write_record(record: CalibrationRecord, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return atomic.write_text(p, json.dumps(record.to_json(), indent=2) + "\n")


def check_record(path: str | Path, cfg: JudgeConfig, min_kappa: float) -> list[str]:
    """Every reason the record at ``path`` does not license this judge (empty when it does): it
    must be strict JSON (no NaN), match the judge's model, endpoint (``base_url``), prompt hash,
    version and labels, say ``passed: true``, and hold a finite kappa at or above ``min_kappa``
    (itself checked by ``check_kappa``) over at least ``MIN_ROWS`` judged rows with at most 5%
    failed judgements."""
    from .rules.strictjson import JsonError, read_json

    min_kappa = check_kappa("min_kappa", min_kappa)
    p = Path(path)
    try:
        data = read_json(p.read_text(encoding="utf-8"), decimals="float")
    except OSError:
        return [f"no calibration record at {p} (run: rlvr judge calibrate --labels LABELS.jsonl --out {p})"]
    except (JsonError, UnicodeDecodeError) as exc:
        return [f"{p} is not a valid calibration record ({exc})"]
    if not isinstance(data, dict):
        return [f"{p} is not a calibration record (a JSON object)"]
    problems = []
    recorded_labels = data.get("labels", list(DEFAULT_LABELS))
    for key, mine, theirs in (
        ("model", cfg.model, data.get("model")),
        ("base_url", cfg.base_url, data.get("base_url")),
        ("prompt_sha256", cfg.prompt_sha256, data.get("prompt_sha256")),
        ("version", cfg.version, data.get("version")),
        ("labels", list(cfg.labels), recorded_labels),
    ):
        if theirs != mine:
            problems.append(
                f"record {key} {theirs!r} does not match the judge's {mine!r}: re-calibrate after changing the judge"
            )
    kappa = data.get("kappa")
    if isinstance(kappa, bool) or not isinstance(kappa, int | float) or not math.isfinite(kappa):
        problems.append(f"record kappa {kappa!r} is not a finite number: re-calibrate")
    elif kappa < min_kappa:
        problems.append(
            f"record kappa {kappa!r} is below the required {min_kappa}: improve the prompt or model and re-calibrate"
        )
    if data.get("passed") is not True:
        problems.append(f"record says passed: {data.get('passed')!r}; only a passed calibration licenses a judge")
    n, errors = data.get("n"), data.get("errors")
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in (n, errors)) or not n:
        problems.append(f"record n {n!r} and errors {errors!r} must be whole numbers, n above 0")
    elif errors > 0.05 * n:
        problems.append(f"record has {errors} failed judgements of {n}: over 5%")
    elif n - errors < MIN_ROWS:
        problems.append(f"record judged {n - errors} rows; a calibration needs at least {MIN_ROWS}: label more rows")
    return problems
