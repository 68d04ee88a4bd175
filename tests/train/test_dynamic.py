"""Dynamic sampling (the online filter): the pure decisions, then training on the tiny model."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlvr.errors import ConfigError
from rlvr.train.dynamic import STATE_FILE, DynamicSampling, PromptFilter, is_flat

ON = DynamicSampling(mode="filter", visits=2, recheck_after=10)


def flat_group() -> list[float]:
    return [1.0] * 8


def varied_group() -> list[float]:
    return [1.0, 0.0] * 4


# -- settings ---------------------------------------------------------------------------------
# (resolving and checking the settings: tests/plan/test_layers.py)
def test_resample_refuses_groups_split_across_processes_before_anything_loads() -> None:
    from rlvr.settings.check import check_batch

    resample = DynamicSampling(mode="resample")
    cfg = {"num_generations": 8, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 2}
    check_batch(resample, cfg, processes=2)  # 8 per process: whole groups
    with pytest.raises(ConfigError, match="whole groups on every process"):
        check_batch(resample, {**cfg, "steps_per_generation": 1}, processes=2)
    check_batch(
        DynamicSampling(mode="filter"), {**cfg, "steps_per_generation": 1}, processes=2
    )  # the filter works on global groups


# -- what counts as flat ----------------------------------------------------------------------
def test_rewards_within_epsilon_are_flat_and_beyond_it_are_not() -> None:
    assert is_flat([1.0, 1.0 + 1e-9], 1e-6)
    assert not is_flat([1.0, 1.0 + 1e-3], 1e-6)


def test_masked_samples_do_not_count_as_variance() -> None:
    assert is_flat([1.0, None, math.nan, 1.0], 1e-6)


def test_a_group_with_fewer_than_two_decided_samples_is_flat() -> None:
    assert is_flat([0.3, None, None], 1e-6)


# -- skipping and re-checking -----------------------------------------------------------------
def test_a_prompt_flat_for_k_visits_in_a_row_is_skipped_until_its_recheck() -> None:
    f = PromptFilter(10, ON)
    f.observe(3, flat_group(), None, step=0)
    assert not f.is_skipped(3, 1)  # one flat visit of two
    f.observe(3, flat_group(), None, step=4)
    assert f.is_skipped(3, 5) and f.is_skipped(3, 13)
    assert not f.is_skipped(3, 14)  # 4 + recheck_after 10


def test_a_varied_group_between_flat_ones_keeps_the_prompt_in_play() -> None:
    f = PromptFilter(10, ON)
    for rewards in (flat_group(), varied_group(), flat_group()):
        f.observe(3, rewards, None, step=0)
    assert not f.is_skipped(3, 1)


def test_a_rechecked_prompt_that_is_still_flat_is_skipped_again_after_one_visit() -> None:
    f = PromptFilter(10, ON)
    f.observe(3, flat_group(), None, step=0)
    f.observe(3, flat_group(), None, step=1)
    f.observe(3, flat_group(), None, step=11)  # the re-check visit
    assert f.is_skipped(3, 12)


def test_a_rechecked_prompt_that_now_varies_is_released() -> None:
    f = PromptFilter(10, ON)
    f.observe(3, flat_group(), None, step=0)
    f.observe(3, flat_group(), None, step=1)
    f.observe(3, varied_group(), None, step=11)
    assert not f.is_skipped(3, 12)


def test_a_skipped_prompt_gives_its_slot_to_an_eligible_prompt_not_in_the_batch() -> None:
    f = PromptFilter(6, DynamicSampling(mode="filter", visits=1, recheck_after=100))
    for p in (0, 1):
        f.observe(p, flat_group(), None, step=0)
    plan = f.plan([0, 1, 2], step=1)
    assert plan.trained[2] == 2
    assert set(plan.trained[:2]) <= {3, 4, 5} and len(set(plan.trained)) == 3
    assert (plan.replaced, plan.starved) == (2, 0)


def test_when_every_prompt_is_skipped_the_drawn_prompts_are_trained_and_counted_starved() -> None:
    f = PromptFilter(3, DynamicSampling(mode="filter", visits=1, recheck_after=100))
    for p in range(3):
        f.observe(p, flat_group(), None, step=0)
    plan = f.plan([2, 0], step=1)
    assert plan.trained == (2, 0) and plan.starved == 2 and plan.replaced == 0


def test_the_plan_depends_only_on_state_step_and_seed() -> None:
    """Every process builds its own filter from the same gathered rewards: equal state must give
    equal plans, or ranks would train different prompts."""
    filters = [
        PromptFilter(1000, DynamicSampling(mode="filter", visits=1, recheck_after=100), seed=7) for _ in range(2)
    ]
    for f in filters:
        for p in range(0, 1000, 3):
            f.observe(p, flat_group(), None, step=0)
    plans = [f.plan(list(range(0, 48, 3)), step=5) for f in filters]
    assert plans[0] == plans[1] and plans[0].replaced == 16


def test_skipped_prompts_are_split_by_whether_their_last_group_was_solved() -> None:
    f = PromptFilter(10, DynamicSampling(mode="filter", visits=1, recheck_after=100))
    f.observe(1, flat_group(), [1.0] * 8, step=0)
    f.observe(2, [0.0] * 8, [0.0] * 8, step=0)
    f.observe(3, [0.1] * 8, [0.0] * 8, step=0)
    assert f.counts(1) == {"skipped_prompts": 3, "skipped_solved": 1, "skipped_unsolved": 2}


def test_the_state_round_trips_through_a_checkpoint_folder(tmp_path: Path) -> None:
    f = PromptFilter(10, ON, seed=3)
    f.observe(1, flat_group(), [1.0] * 8, step=0)
    f.observe(1, flat_group(), [1.0] * 8, step=2)
    f.observe(2, varied_group(), [0.5] * 8, step=2)
    f.plan([1, 2], step=3)
    f.save(tmp_path)
    g = PromptFilter(10, ON, seed=3)
    assert g.load(tmp_path)
    assert g.state_dict() == f.state_dict()
    assert g.plan([1, 2], step=4) == f.plan([1, 2], step=4)


def test_a_checkpoint_without_filter_state_leaves_the_filter_fresh(tmp_path: Path) -> None:
    f = PromptFilter(10, ON)
    assert not f.load(tmp_path) and f.state_dict() == PromptFilter(10, ON).state_dict()


# -- training on the tiny model ---------------------------------------------------------------
PLANTED = '''
import json, os

def score(completions, question, **kwargs):
    """1 for "easy" prompts, 0 for "hard" ones whatever the completion; a continuous share of
    digits otherwise (so those groups vary). Appends each call's prompts to SEEN."""
    with open(os.environ["RLVR_TEST_SEEN"], "a") as fh:
        fh.write(json.dumps({"rank": int(os.environ.get("RANK", "0")), "q": list(question)}) + "\\n")
    out = []
    for q, text in zip(question, completions):
        if q.startswith("easy"):
            out.append(1.0)
        elif q.startswith("hard"):
            out.append(0.0)
        else:
            out.append(sum(c.isdigit() for c in text) / max(len(text), 1) + 0.001 * len(text))
    return out
'''

EASY, HARD = ["easy1", "easy2"], ["hard1", "hard2"]
MID = [f"mid{i}" for i in range(4)]


def planted_task(folder: Path, dynamic: dict[str, Any] | None, grpo: dict[str, Any] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "planted.py").write_text(PLANTED)
    rows = [{"question": q, "answer": "1"} for q in EASY + HARD + MID]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {
        "name": "planted",
        "model": "builtin:tiny",
        "data": {"train": "train.jsonl"},
        "prompt": {"template": "{question}="},
        "answer": {"column": "answer", "format": "tags"},
        "rewards": [{"name": "score", "verifier": "planted.score"}],
        "generation": {"temperature": 1.0, "max_completion_length": 4},
        # 2 prompts per micro-batch, generation every steps_per_generation x num_iterations = 4
        # micro-steps (2 optimizer steps with accumulation 2), 4 prompts per generation.
        "grpo": {
            "learning_rate": 1e-3,
            "per_device_train_batch_size": 16,
            "gradient_accumulation_steps": 2,
            "steps_per_generation": 2,
            "num_iterations": 2,
            "num_generations": 8,
            "beta": 0.0,
            "save_steps": 2,
            # The planted score is deliberately not a correctness reward (it never reads the
            # answer), which the reward-hack tripwire rightly stops: off, these tests are about the filter.
            "tripwire": {"every": 0},
            **(grpo or {}),
            **({"dynamic": dynamic} if dynamic is not None else {}),
        },
    }
    (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder / "task.yaml"


def seen(path: Path) -> list[list[str]]:
    """Each generation's prompts in global batch order, one entry per group (the question repeated
    8 times): the k-th reward call of rank 0, then the k-th of rank 1, ..."""
    calls = [json.loads(x) for x in path.read_text().splitlines()]
    by_rank: dict[int, list[list[str]]] = {}
    for c in calls:
        by_rank.setdefault(c["rank"], []).append([c["q"][i] for i in range(0, len(c["q"]), 8)])
    ranks = sorted(by_rank)
    return [[q for r in ranks for q in by_rank[r][k]] for k in range(len(by_rank[ranks[0]]))]


def run_planted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    dynamic: dict[str, Any] | None,
    steps: int,
    name: str = "run",
    resume: bool = False,
) -> tuple[Path, list[list[str]]]:
    from rlvr.task import load_task
    from rlvr.train import TrainOptions, train

    log = tmp_path / f"{name}.seen.jsonl"
    monkeypatch.setenv("RLVR_TEST_SEEN", str(log))
    monkeypatch.syspath_prepend(str(tmp_path / "task"))
    task = load_task(planted_task(tmp_path / "task", dynamic))
    train(
        task,
        TrainOptions(
            run_dir=tmp_path / name,
            max_steps=steps,
            resume=resume,
            no_gate_reason="dynamic sampling test",
            progress=False,
            eval_every=0,
        ),
    )
    return tmp_path / name, seen(log)


def metrics(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def filtered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[list[str]]]:
    mp = pytest.MonkeyPatch()
    try:
        # 8 optimizer steps = 4 generations of 4 prompts = two epochs of the 8 prompts.
        return run_planted(
            tmp_path_factory.mktemp("dyn"), mp, {"mode": "filter", "visits": 1, "recheck_after": 100}, steps=8
        )
    finally:
        mp.undo()


def test_planted_always_and_never_solved_prompts_are_not_trained_after_their_first_flat_group(
    filtered: tuple[Path, list[list[str]]],
) -> None:
    """Two epochs: without the filter the sampler draws every prompt twice. Under accumulation 2,
    steps_per_generation 2 and num_iterations 2, each planted prompt is generated for once."""
    _, groups = filtered
    trained = [q for call in groups for q in call]
    assert len(groups) == 4 and len(trained) == 16
    for q in EASY + HARD:
        assert trained.count(q) <= 1, (q, groups)
    assert sum(trained.count(q) for q in MID) >= 12


def test_the_filter_logs_its_metrics_with_every_generation(filtered: tuple[Path, list[list[str]]]) -> None:
    """Like TRL's reward metrics, they are logged in the windows where a batch was generated (here
    every second step)."""
    run, _ = filtered
    logs = [x for x in metrics(run) if "reward" in x]
    assert [x["step"] for x in logs] == [1, 3, 5, 7]
    for key in (
        "dynamic/kept_groups",
        "dynamic/replaced_groups",
        "dynamic/starved_groups",
        "dynamic/skipped_prompts",
        "dynamic/skipped_solved",
        "dynamic/skipped_unsolved",
        "dynamic/zero_std_before",
        "dynamic/zero_std_after",
    ):
        assert all(key in x for x in logs), key
    assert sum(x["dynamic/replaced_groups"] for x in logs) > 0
    assert logs[-1]["dynamic/skipped_prompts"] == 4 and logs[-1]["dynamic/skipped_solved"] == 2


def test_the_run_config_records_the_filter_settings(filtered: tuple[Path, list[list[str]]]) -> None:
    run, _ = filtered
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["rlvr"]["dynamic"] == {
        "mode": "filter",
        "visits": 1,
        "recheck_after": 100,
        "epsilon": 1e-6,
        "max_rounds": 3,
        "short_batch": "kept",
    }


def test_every_checkpoint_holds_the_filter_state(filtered: tuple[Path, list[list[str]]]) -> None:
    run, _ = filtered
    state = json.loads((run / "checkpoints" / "checkpoint-8" / STATE_FILE).read_text())
    assert len(state["skipped_until"]) == 4 and state["generations"] == 4


def test_a_resumed_run_trains_the_same_prompts_and_ends_with_the_same_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An uninterrupted 8-step run against 4 steps, then a resume to 8 (~10 s on 2 CPU cores)."""
    dyn = {"mode": "filter", "visits": 1, "recheck_after": 100}
    whole, groups_whole = run_planted(tmp_path, monkeypatch, dyn, steps=8, name="whole")
    part, groups_a = run_planted(tmp_path, monkeypatch, dyn, steps=4, name="part")
    assert len(groups_a) == 2
    _, groups_b = run_planted(
        tmp_path, monkeypatch, dyn, steps=8, name="part", resume=True
    )  # the same log, appended to
    # The same prompts per generation; their order within a batch after a resume is the Trainer's
    # sampler replay (TRL reshuffles the second epoch differently after a resume), not the filter's.
    assert [sorted(g) for g in groups_b] == [sorted(g) for g in groups_whole]
    a = json.loads((whole / "checkpoints" / "checkpoint-8" / STATE_FILE).read_text())
    b = json.loads((part / "checkpoints" / "checkpoint-8" / STATE_FILE).read_text())
    for key in ("history", "skipped_until", "generations"):
        assert a[key] == b[key], key


@pytest.mark.slow
def test_two_processes_make_the_same_decisions_as_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """accelerate launch --num_processes 2 (CPU, gloo) with half the per-device batch: the same
    global batches, so the same prompts trained per generation, split across the two ranks, and
    the same filter state at the end. Measured ~40 s on 2 CPU cores."""
    import os
    import subprocess
    import sys

    dyn = {"mode": "filter", "visits": 1, "recheck_after": 100}
    one, groups_one = run_planted(tmp_path / "one", monkeypatch, dyn, steps=8)
    path = planted_task(tmp_path / "two" / "task", dyn, grpo={"per_device_train_batch_size": 8})
    log = tmp_path / "two" / "seen.jsonl"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "RLVR_TEST_SEEN": str(log)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.cli.main",
            "train",
            str(path),
            "--run-dir",
            str(tmp_path / "two" / "run"),
            "--max-steps",
            "8",
            "--no-gate",
            "dynamic sampling, two processes",
            "--eval-every",
            "0",
            "--no-progress",
            "--launch",
            "accelerate",
            "--num-processes",
            "2",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    assert {c["rank"] for c in calls} == {0, 1}
    assert seen(log) == groups_one
    a = json.loads((one / "checkpoints" / "checkpoint-8" / STATE_FILE).read_text())
    b = json.loads((tmp_path / "two" / "run" / "checkpoints" / "checkpoint-8" / STATE_FILE).read_text())
    for key in ("history", "skipped_until", "generations"):
        assert a[key] == b[key], key


# -- resample: the pure parts -----------------------------------------------------------------
from rlvr.train.resample import Pick, assemble, pick_groups, refill  # noqa: E402


def test_resample_keeps_groups_with_variance_in_order_and_asks_for_what_the_neediest_process_lacks() -> None:
    # 2 processes x 2 groups; round 0: process 0 has two flat groups, process 1 one.
    picks, need = pick_groups([[0.0, 0.0, 0.2, 0.0]], per_rank=2, ranks=2, epsilon=1e-6, short_batch="kept")
    assert need == 2
    # round 1: two groups per process (process 0: groups 0-1, process 1: groups 2-3)
    picks, need = pick_groups(
        [[0.0, 0.0, 0.2, 0.0], [0.4, 0.3, 0.5, 0.0]], per_rank=2, ranks=2, epsilon=1e-6, short_batch="kept"
    )
    assert need == 0
    assert picks[0] == [Pick(1, 0, False, False), Pick(1, 1, False, False)]
    assert picks[1] == [Pick(0, 0, False, False), Pick(1, 0, False, False)]


def test_resample_short_of_groups_fills_with_the_least_flat_dropped_ones_masked_for_kept() -> None:
    spreads = [[0.0, 1e-9], [0.5, 0.0]]
    picks, need = pick_groups(spreads, per_rank=2, ranks=1, epsilon=1e-6, short_batch="kept")
    assert need == 1 and picks[0] == [Pick(1, 0, False, False), Pick(0, 1, True, True)]
    picks, _ = pick_groups(spreads, per_rank=2, ranks=1, epsilon=1e-6, short_batch="best")
    assert picks[0][1] == Pick(0, 1, True, False)


def test_refill_draws_fresh_prompts_and_repeats_only_when_every_prompt_is_used() -> None:
    import random

    used = {0, 1, 2}
    got = refill(6, used, 3, random.Random(1))
    assert sorted(got) == [3, 4, 5]
    more = refill(6, used, 2, random.Random(1))
    assert len(more) == 2 and all(0 <= q < 6 for q in more)


def test_refill_is_the_same_for_the_same_generator_state() -> None:
    import random

    assert refill(10_000, {1, 2}, 16, random.Random("x")) == refill(10_000, {1, 2}, 16, random.Random("x"))


def test_assemble_joins_rounds_of_different_lengths_and_masks_the_kept_fill() -> None:
    import torch

    def out(prompt_len: int, comp_len: int, base: float) -> dict:
        return {
            "prompt_ids": torch.full((4, prompt_len), 7),
            "prompt_mask": torch.ones(4, prompt_len, dtype=torch.long),
            "completion_ids": torch.full((4, comp_len), 9),
            "completion_mask": torch.ones(4, comp_len, dtype=torch.long),
            "old_per_token_logps": torch.full((4, comp_len), base),
            "advantages": torch.arange(4, dtype=torch.float) + base,
            "num_items_in_batch": torch.tensor(16),
        }

    a, b = out(3, 2, 0.0), out(2, 5, 10.0)
    got = assemble([a, b], [Pick(1, 1, False, False), Pick(0, 0, True, True)], group_size=2, pad_id=0)
    assert got["prompt_ids"].shape == (4, 3) and got["completion_ids"].shape == (4, 5)
    assert got["prompt_ids"][0].tolist() == [0, 7, 7] and got["prompt_mask"][0].tolist() == [0, 1, 1]  # left-padded
    assert got["completion_ids"][2].tolist() == [9, 9, 0, 0, 0] and got["completion_mask"][2].tolist() == [
        0,
        0,
        0,
        0,
        0,
    ]  # masked fill
    assert got["completion_mask"][0].tolist() == [1] * 5
    assert got["advantages"].tolist() == [12.0, 13.0, 0.0, 0.0]
    assert "num_items_in_batch" not in got


# -- resample: training on the tiny model -----------------------------------------------------
def run_capturing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dynamic: dict[str, Any], steps: int
) -> tuple[Path, list[list[tuple[str, bool]]]]:
    """A planted run that records each generation batch TRL trains on: (prompt text, whether any
    completion token of the row is in the loss) per row."""
    from rlvr.train import dynamic as dyn_module

    trained: list[list[tuple[str, bool]]] = []
    original = dyn_module.trainer_class

    def capturing(base: type) -> type:
        cls = original(base)

        class Capturing(cls):  # type: ignore[misc, valid-type]
            def _generate_and_score_completions(self, inputs: Any) -> Any:
                out = super()._generate_and_score_completions(inputs)
                if self.model.training:
                    texts = self.processing_class.batch_decode(out["prompt_ids"], skip_special_tokens=True)
                    assert out["completion_ids"].shape[0] == len(inputs), "the batch keeps its shape"
                    trained.append(list(zip(texts, out["completion_mask"].sum(dim=1).gt(0).tolist(), strict=True)))
                return out

        return Capturing

    monkeypatch.setattr(dyn_module, "trainer_class", capturing)
    run, _ = run_planted(tmp_path, monkeypatch, dynamic, steps=steps)
    return run, trained


@pytest.fixture(scope="module")
def resampled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[list[tuple[str, bool]]]]:
    mp = pytest.MonkeyPatch()
    try:
        return run_capturing(tmp_path_factory.mktemp("resample"), mp, {"mode": "resample", "max_rounds": 4}, steps=8)
    finally:
        mp.undo()


def test_resample_never_trains_on_a_flat_group_while_groups_with_variance_are_left(
    resampled: tuple[Path, list[list[tuple[str, bool]]]],
) -> None:
    """Accumulation 2, steps_per_generation 2, num_iterations 2: each generation batch TRL trains
    on holds only the 'mid' prompts in its loss; a planted prompt is at most a masked fill."""
    _, trained = resampled
    assert len(trained) == 4
    for batch in trained:
        in_loss = [text for text, counted in batch if counted]
        assert in_loss and all(text.startswith("mid") for text in in_loss), batch


def test_resample_logs_rounds_extra_completions_and_the_share_before_and_after(
    resampled: tuple[Path, list[list[tuple[str, bool]]]],
) -> None:
    run, _ = resampled
    logs = [x for x in metrics(run) if "dynamic/rounds" in x]
    assert [x["step"] for x in logs] == [1, 3, 5, 7]
    first = logs[0]
    # Each extra round generates only what the batch still lacks: whole groups of 8, fewer than 4.
    extra = first["dynamic/extra_completions"]
    assert first["dynamic/rounds"] >= 2 and extra % 8 == 0 and 0 < extra <= (first["dynamic/rounds"] - 1) * 24
    assert first["dynamic/zero_std_before"] > 0 and first["dynamic/kept_groups"] + first["dynamic/starved_groups"] == 4
    assert all(x["dynamic/zero_std_after"] == x["dynamic/starved_groups"] / 4 for x in logs)


@pytest.mark.parametrize("short_batch", ["kept", "best"])
def test_resample_with_its_rounds_spent_masks_the_flat_fill_or_trains_it_as_configured(
    short_batch: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, trained = run_capturing(
        tmp_path, monkeypatch, {"mode": "resample", "max_rounds": 1, "short_batch": short_batch}, steps=2
    )
    (batch,) = trained
    planted = [counted for text, counted in batch if not text.startswith("mid")]
    assert planted, "the seed's first batch draws planted prompts"
    assert all(planted) if short_batch == "best" else not any(planted)
    assert all(counted for text, counted in batch if text.startswith("mid"))
    (log,) = [x for x in metrics(run) if "dynamic/rounds" in x]
    assert (
        log["dynamic/rounds"] == 1
        and log["dynamic/extra_completions"] == 0
        and log["dynamic/starved_groups"] == len(planted) / 8
    )


RESAMPLE_DRIVER = """
import json, os, sys
from pathlib import Path
from rlvr.train import dynamic as dyn
from rlvr.task import load_task
from rlvr.train import TrainOptions, train

original = dyn.trainer_class
out = Path(sys.argv[3]) / f"trained-{os.environ.get('RANK', '0')}.jsonl"

def capturing(base):
    cls = original(base)
    class Capturing(cls):
        def _generate_and_score_completions(self, inputs):
            res = super()._generate_and_score_completions(inputs)
            if self.model.training:
                texts = self.processing_class.batch_decode(res["prompt_ids"], skip_special_tokens=True)
                counted = res["completion_mask"].sum(dim=1).gt(0).tolist()
                with out.open("a") as fh:
                    fh.write(json.dumps({"rows": len(inputs), "out": [[t, c] for t, c in zip(texts, counted)]}) + "\\n")
            return res
    return Capturing

dyn.trainer_class = capturing
sys.path.insert(0, str(Path(sys.argv[1]).parent))
opts = TrainOptions(
    run_dir=Path(sys.argv[2]), max_steps=4, no_gate_reason="resample, two processes", progress=False, eval_every=0
)
train(load_task(sys.argv[1]), opts)
"""


@pytest.mark.slow
def test_resample_under_two_processes_trains_full_batches_of_groups_with_variance_on_both_ranks(tmp_path: Path) -> None:
    """accelerate launch --num_processes 2 (CPU, gloo): both processes run the same rounds (TRL
    gathers rewards across them: a mismatch would hang), keep their batch shape, and train only
    groups with variance. Measured ~30 s on 2 CPU cores."""
    import os
    import subprocess
    import sys

    from rlvr.models import resolve_model

    resolve_model("builtin:tiny")  # built once here: two processes building it at once would race
    path = planted_task(
        tmp_path / "task", {"mode": "resample", "max_rounds": 4}, grpo={"per_device_train_batch_size": 8}
    )
    (tmp_path / "driver.py").write_text(RESAMPLE_DRIVER)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "RLVR_TEST_SEEN": str(tmp_path / "seen.jsonl")}
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--num_processes",
        "2",
        str(tmp_path / "driver.py"),
        str(path),
        str(tmp_path / "run"),
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    per_rank = [[json.loads(x) for x in (tmp_path / f"trained-{r}.jsonl").read_text().splitlines()] for r in (0, 1)]
    assert len(per_rank[0]) == len(per_rank[1]) == 2  # 4 steps, a generation every 2
    for batches in per_rank:
        for b in batches:
            assert len(b["out"]) == b["rows"] == 16
            in_loss = [t for t, counted in b["out"] if counted]
            assert in_loss and all(t.startswith("mid") for t in in_loss), b
    calls = [json.loads(x) for x in (tmp_path / "seen.jsonl").read_text().splitlines()]
    sizes = {r: [len(c["q"]) for c in calls if c["rank"] == r] for r in (0, 1)}
    assert sizes[0] == sizes[1] and len(sizes[0]) > 2  # the same rounds, of the same sizes, on both ranks


def test_resample_refuses_to_join_outputs_it_does_not_know() -> None:
    import torch

    from rlvr.errors import RunError

    out = {
        "prompt_ids": torch.zeros(2, 1),
        "completion_mask": torch.ones(2, 1),
        "advantages": torch.zeros(2),
        "pixel_values": torch.zeros(2, 3),
    }
    with pytest.raises(RunError, match="pixel_values"):
        assemble([out], [Pick(0, 0, False, False)], group_size=2, pad_id=0)
