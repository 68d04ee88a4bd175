"""The doctor's early_dip finding: a real run whose first updates broke the policy for a while is
flagged with a lower learning rate; the same start at a lower rate is not; flat noisy runs are
not; a planted dip that recovers is, one that stays is performance_collapse's."""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.doctor import diagnose, load_run
from rlvr.doctor.dip_checks import check_early_dip

REAL = Path(__file__).parents[1] / "data" / "doctor" / "real"


def test_the_measured_tool_search_run_at_lr_1e_4_shows_its_early_dip_with_a_lower_rate() -> None:
    findings = diagnose(load_run(REAL / "tool_lr_dip")).findings
    assert [f.check for f in findings] == ["early_dip"]
    f = findings[0]
    assert f.metric == "rewards/correct/mean"
    assert 0.7 < f.numbers["start"] < 0.8 and f.numbers["low"] < 0.25 and f.numbers["low_step"] == 12
    assert f.numbers["late"] > 0.6
    assert f.patch is not None and dict(f.patch.grpo) == {"learning_rate": 3.33e-05}
    assert "steps 12-17" in f.evidence and "ends at 0.644" in f.evidence


def test_the_same_start_at_lr_3e_5_has_no_finding() -> None:
    assert diagnose(load_run(REAL / "tool_lr_steady")).findings == ()


def _write(tmp: Path, values: list[float]) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    rows = [{"step": i + 1, "reward": v, "rewards/correct/mean": v} for i, v in enumerate(values)]
    (tmp / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp


def _rates(rng: random.Random, n: int, level: list[float], prompts: int) -> list[float]:
    """Per-step success rates of ``prompts`` prompts x 8 samples, each prompt's difficulty drawn
    around the step's level (the spread real groups have)."""
    out = []
    for s in range(n):
        p = level[s]
        hits = 0
        for _ in range(prompts):
            q = min(1.0, max(0.0, rng.betavariate(max(2 * p, 0.05) * 2, max(2 - 2 * p, 0.05) * 2)))
            hits += sum(rng.random() < q for _ in range(8))
        out.append(hits / (8 * prompts))
    return out


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.sampled_from([60, 120, 300, 500]),
    p=st.floats(0.02, 0.98),
    prompts=st.sampled_from([1, 2, 4]),
)
def test_flat_noisy_runs_show_no_dip(tmp_path_factory: object, seed: int, n: int, p: float, prompts: int) -> None:
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("flat")  # type: ignore[attr-defined]
    assert check_early_dip(load_run(_write(tmp, _rates(rng, n, [p] * n, prompts)))) == []


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1), n=st.sampled_from([200, 300, 500]), p=st.floats(0.55, 0.9), at=st.floats(0.05, 0.3)
)
def test_a_planted_dip_that_recovers_is_found_and_one_that_stays_is_not_this_check(
    tmp_path_factory: object, seed: int, n: int, p: float, at: float
) -> None:
    rng = random.Random(seed)
    start, length = int(n * at), max(12, n // 20)
    dipped = [p * 0.1 if start <= s < start + length else p for s in range(n)]
    stays = [p * 0.1 if s >= start else p for s in range(n)]
    tmp = tmp_path_factory.mktemp("dip")  # type: ignore[attr-defined]
    found = check_early_dip(load_run(_write(tmp / "a", _rates(rng, n, dipped, 4))))
    assert [f.check for f in found] == ["early_dip"]
    assert abs(found[0].numbers["low_step"] - (start + 1)) <= length  # type: ignore[operator]
    run = load_run(_write(tmp / "b", _rates(rng, n, stays, 4)))
    assert check_early_dip(run) == []
    assert "performance_collapse" in [f.check for f in diagnose(run).findings]
