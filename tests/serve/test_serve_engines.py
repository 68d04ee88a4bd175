"""The verl and OpenRLHF adapters against the engines' call signatures (recorded from their source,
cited in rlvr.serve.engines; neither engine is installed), the gate at every entry point, and
what a stand-in reward for a masked row does to the GRPO advantage."""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import right, write_task

from rlvr.cli.main import main
from rlvr.errors import GateError
from rlvr.serve import Imputer, Scorer
from rlvr.serve.engines import OpenRLHFAdapter, VerlAdapter
from support.gate_fixtures import build_and_review, sign_small, unique_module
from support.gate_fixtures import write_task as write_gate_task


# -- GRPO advantages: true masking vs the stand-ins -----------------------------------------
def grpo_advantages(rewards: list[float], eps: float = 1e-6) -> list[float]:
    """verl's ``compute_grpo_outcome_advantage`` for one group (norm by std): ``(r - mean) /
    (std + eps)``, std Bessel-corrected as ``torch.std``; NaN propagates as in torch."""
    if any(math.isnan(r) for r in rewards):
        return [math.nan] * len(rewards)
    mean, std = statistics.mean(rewards), statistics.stdev(rewards)
    return [(r - mean) / (std + eps) for r in rewards]


def masked_advantages(rewards: list[float | None], eps: float = 1e-6) -> list[float]:
    """True masking (TRL with every reward function returning None): mean and std over the
    decided rows only, advantage 0 for the masked ones."""
    decided = [r for r in rewards if r is not None]
    adv = iter(grpo_advantages(decided, eps))
    return [0.0 if r is None else next(adv) for r in rewards]


GROUP: list[float | None] = [1.1, 0.1, 1.1, 0.1, 0.1, 1.1, 0.1, None]  # 7 decided, one masked


def test_group_mean_stand_in_gives_the_masked_row_advantage_zero() -> None:
    filled = [v for v, _ in Imputer().fill(GROUP, ["g"] * len(GROUP))]
    adv = grpo_advantages(filled)
    assert adv[-1] == pytest.approx(0.0, abs=1e-12)


def test_group_mean_stand_in_scales_decided_advantages_by_sqrt_k_over_k_minus_1() -> None:
    filled = [v for v, _ in Imputer().fill(GROUP, ["g"] * len(GROUP))]
    ours, true = grpo_advantages(filled)[:-1], masked_advantages(GROUP)[:-1]
    k = 7
    for a, b in zip(ours, true, strict=True):
        assert a == pytest.approx(b * math.sqrt(k / (k - 1)), rel=1e-5)
    assert all(a * b > 0 for a, b in zip(ours, true, strict=True))  # no sign flips


def test_scoring_a_masked_row_zero_ranks_it_below_every_wrong_answer_and_shifts_the_others() -> None:
    zero = grpo_advantages([0.0 if r is None else r for r in GROUP])
    true = masked_advantages(GROUP)
    assert zero[-1] < min(zero[:-1]) < 0  # a slow-but-maybe-correct answer is pushed down hardest
    assert max(abs(a - b) for a, b in zip(zero[:-1], true[:-1], strict=True)) > 0.1


def test_nan_for_a_masked_row_turns_the_whole_groups_advantages_nan() -> None:
    assert all(math.isnan(a) for a in grpo_advantages([math.nan if r is None else r for r in GROUP]))


def test_an_all_masked_group_gets_one_value_so_every_advantage_is_zero() -> None:
    filled = [v for v, _ in Imputer().fill([None] * 4, ["g"] * 4)]
    assert len(set(filled)) == 1


def test_imputer_falls_back_to_history_then_global_mean_then_the_fallback() -> None:
    imp = Imputer(fallback=-7.0)
    assert imp.fill([None], ["a"]) == [(-7.0, "fallback")]
    imp.fill([1.0, 0.0], ["a", "a"])
    imp.fill([3.0], ["b"])
    assert imp.fill([None], ["a"]) == [(0.5, "history")]
    assert imp.fill([None], ["c"]) == [(pytest.approx(4.0 / 3.0), "global")]


def test_imputer_history_is_bounded() -> None:
    imp = Imputer(history=2)
    imp.fill([1.0, 2.0, 3.0], ["a", "b", "c"])
    assert imp.fill([None], ["a"])[0][1] == "global"
    assert imp.fill([None], ["c"])[0][1] == "history"


# -- verl -----------------------------------------------------------------------------------
@pytest.fixture
def verl(tmp_path: Path) -> VerlAdapter:
    return VerlAdapter(write_task(tmp_path / "t"), no_gate_reason="adapter test")


def _batch_reward_manager(
    compute_score: Any, solutions: list[str], truths: list[Any], extras: list[Any]
) -> tuple[list[float], dict[str, list[Any]]]:
    """The consuming loop of verl's BatchRewardManager.__call__ (verl/workers/reward_manager/
    batch.py), recorded: a dict result must hold 'score'; every key is appended per sample."""
    scores = compute_score(
        data_sources=["arith"] * len(solutions), solution_strs=solutions, ground_truths=truths, extra_infos=extras
    )
    rewards, extra_info = [], defaultdict(list)
    for score in scores:
        if isinstance(score, dict):
            reward = score["score"]
            for key, value in score.items():
                extra_info[key].append(value)
        else:
            reward = score
        rewards.append(reward)
    return rewards, extra_info


def test_verl_batch_gives_a_masked_row_its_groups_mean_and_every_row_the_same_keys(verl: VerlAdapter) -> None:
    sols = [right("4"), right("5"), "CRASH " + right("4"), right("9")]
    extras = [{"index": 0}, {"index": 0}, {"index": 0}, {"index": 1}]
    rewards, info = _batch_reward_manager(verl.compute_score_batch, sols, ["4", "4", "4", "9"], extras)
    assert rewards == pytest.approx([1.1, 0.1, 0.6, 1.1])
    assert all(len(v) == 4 for v in info.values())  # verl needs one value per sample for each key
    assert info["rlvr_masked"] == [0.0, 0.0, 1.0, 0.0]
    assert info["rlvr_correct_error"] == [0.0, 0.0, 1.0, 0.0]
    assert info["rlvr_imputed_group"] == [0.0, 0.0, 1.0, 0.0]
    assert all(isinstance(v, float) for vs in info.values() for v in vs)


def test_verl_without_index_groups_by_ground_truth(verl: VerlAdapter) -> None:
    sols = [right("4"), "CRASH", right("8"), right("9")]
    rewards, _ = _batch_reward_manager(verl.compute_score_batch, sols, ["4", "4", "9", "9"], [None] * 4)
    assert rewards[1] == pytest.approx(1.1)


def test_verl_per_sample_masked_row_gets_the_earlier_rows_of_its_group(verl: VerlAdapter) -> None:
    a = verl.compute_score(data_source="arith", solution_str=right("4"), ground_truth="4", extra_info={"index": 3})
    b = verl.compute_score(data_source="arith", solution_str=right("5"), ground_truth="4", extra_info={"index": 3})
    c = verl.compute_score(data_source="arith", solution_str="CRASH", ground_truth="4", extra_info={"index": 3})
    assert (a["score"], b["score"]) == (pytest.approx(1.1), pytest.approx(0.1))
    assert c["score"] == pytest.approx(0.6) and c["rlvr_masked"] == 1.0 and c["rlvr_imputed_other"] == 1.0
    assert set(a) == set(c)


def test_verl_ground_truth_mapping_and_extra_info_become_columns(verl: VerlAdapter) -> None:
    out = verl.compute_score_batch(["arith"], [right("12")], [{"answer": "12"}], [{"index": 0, "split": "train"}])
    assert out[0]["rlvr_correct"] == 1.0


# -- OpenRLHF -------------------------------------------------------------------------------
def _load_like_openrlhf(path: Path) -> Any:
    """How OpenRLHF loads --remote_rm_url *.py (openrlhf/utils/agent.py, SingleTurnAgentExecutor)."""
    spec = importlib.util.spec_from_file_location("reward_func", str(path))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.reward_func


def test_written_openrlhf_adapter_answers_one_sample_calls_as_openrlhf_makes_them(tmp_path: Path) -> None:
    task = write_task(tmp_path / "t")
    out = tmp_path / "reward_func.py"
    assert main(["serve", str(task), "--no-gate", "adapter test", "--write-adapter", "openrlhf", str(out)]) == 0
    reward_func = _load_like_openrlhf(out)
    info = reward_func(["2+2=" + right("4") + "<|im_end|>"], ["2+2="], ["4"])
    # agent.py reads rewards_info.get("rewards"), .get("scores"), .get("extra_logs")
    assert info["rewards"] == pytest.approx([1.1]) and info["scores"] == [1.0]
    assert info["extra_logs"]["rlvr/masked"] == [0.0]
    assert info["rlvr"]["meta"]["gate"]["no_gate_reason"] == "adapter test"
    json.dumps(info)  # plain JSON types, as the HTTP variant returns


def test_openrlhf_one_sample_calls_give_a_masked_row_its_groups_earlier_mean(tmp_path: Path) -> None:
    f = OpenRLHFAdapter(write_task(tmp_path / "t"), no_gate_reason="adapter test")
    f(["P" + right("4")], ["P"], ["4"])
    f(["P" + right("5")], ["P"], ["4"])
    info = f(["P CRASH"], ["P"], ["4"])
    assert info["rewards"] == pytest.approx([0.6]) and info["rlvr"]["results"][0]["imputed"] == "history"


def test_openrlhf_adapter_and_server_give_the_same_answer(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from rlvr.serve.app import RewardServer

    task = write_task(tmp_path / "t")
    body = {
        "query": ["P" + right("4"), "P" + right("5"), "P CRASH", "Q" + right("1")],
        "prompts": ["P", "P", "P", "Q"],
        "labels": ["4", "4", "4", "2"],
    }
    local = OpenRLHFAdapter(task, no_gate_reason="x")(body["query"], body["prompts"], body["labels"])
    with TestClient(RewardServer(Scorer.from_task(task, no_gate_reason="x")), base_url="http://127.0.0.1") as c:
        remote = c.post("/get_reward", json=body).json()
    for key in ("rewards", "scores"):
        assert remote[key] == pytest.approx(local[key])
    assert remote["extra_logs"] == local["extra_logs"]
    assert [r["masked"] for r in remote["rlvr"]["results"]] == [r["masked"] for r in local["rlvr"]["results"]]


def test_the_adapter_path_imports_neither_torch_nor_transformers(tmp_path: Path) -> None:
    task = write_task(tmp_path / "t")
    out = tmp_path / "verl_reward.py"
    assert main(["serve", str(task), "--no-gate", "adapter test", "--write-adapter", "verl", str(out)]) == 0
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('custom_module', {str(out)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "r = m.compute_score(data_source='a', solution_str='<answer>4</answer>', ground_truth='4')\n"
        "assert r['score'] > 1.0, r\n"
        "print(sorted(x for x in ('torch', 'transformers', 'trl', 'verl', 'openrlhf') if x in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- the gate at every entry point ----------------------------------------------------------
def test_every_entry_point_refuses_a_task_without_a_gate_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = write_task(tmp_path / "t")
    with pytest.raises(GateError, match="no gate record"):
        Scorer.from_task(task)
    with pytest.raises(GateError):
        VerlAdapter(task)
    with pytest.raises(GateError):
        OpenRLHFAdapter(task)
    out = tmp_path / "adapter.py"
    assert main(["serve", str(task), "--write-adapter", "verl", str(out)]) == 1
    assert not out.exists()
    assert main(["serve", str(task), "--port", "1"]) == 1
    assert "no gate record" in capsys.readouterr().err


def test_no_gate_needs_a_reason(tmp_path: Path) -> None:
    with pytest.raises(GateError, match="needs a reason"):
        Scorer.from_task(write_task(tmp_path / "t"), no_gate_reason="  ")


@pytest.fixture
def signed(tmp_path: Path) -> Any:
    from rlvr.task import load_task

    task = load_task(write_gate_task(tmp_path / "g", module=unique_module()))
    build_and_review(task)
    sign_small(task)
    return task


def test_a_signed_gate_is_accepted_and_named_in_the_meta(signed: Any) -> None:
    scorer = Scorer.from_task(signed.path)
    assert scorer.meta["gate"]["status"] == "passed"
    assert scorer.meta["gate"]["reviewer"] == "alice" and scorer.meta["gate"]["no_gate_reason"] is None


def test_a_changed_reward_module_is_refused_as_rlvr_train_refuses_it(signed: Any) -> None:
    module = signed.root / (signed.rewards[1].verifier.partition(":")[0] + ".py")
    module.write_text(module.read_text().replace("ok = ex.answer.strip() == gold", "ok = gold in ex.answer"))
    with pytest.raises(GateError, match="changed: sha256 was"):
        Scorer.from_task(signed.path)
    with pytest.raises(GateError, match="changed: sha256 was"):
        VerlAdapter(signed.path)


def test_the_verl_call_log_holds_one_line_per_sample_with_what_rlvr_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlvr.serve.engines import CALL_LOG_ENV

    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv(CALL_LOG_ENV, str(log))
    adapter = VerlAdapter(write_task(tmp_path / "t"), no_gate_reason="call log test")
    out = adapter.compute_score_batch(["d", "d"], [right("4"), "no"], ["4", "4"], [{"index": 0}, {"index": 1}])
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["solution_str"] for x in lines] == [right("4"), "no"]
    assert [x["result"] for x in lines] == out
