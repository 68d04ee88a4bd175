"""Building the set (sampling settings, tails and middle, probe reuse), rescoring, export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rlvr import gate
from rlvr.errors import DataError, GateError
from rlvr.gate.build import select
from rlvr.gate.store import InspectionSample
from rlvr.probe import ProbeSample, ProbeSettings
from rlvr.rewards.base import Verdict
from rlvr.rollouts import Rollout
from support.gate_fixtures import SMALL, arithmetic_sampler, build_and_review


def _cand(i: int, total: float | None) -> InspectionSample:
    v = Verdict.error("timeout", kind="timeout") if total is None else Verdict.wrong(total)
    rollout = Rollout(i, str(i), {}, "", (), "stop", None, {"correct": v}, total)
    return InspectionSample(0, rollout, "", "masked" if total is None else "fail")


def test_selection_covers_both_tails_and_a_random_middle() -> None:
    pool = [_cand(i, float(i)) for i in range(100)]
    picked = select(pool, 40, seed=0)
    buckets: dict[str, list[float]] = {}
    for c, b in picked:
        buckets.setdefault(b, []).append(c.rollout.total)
    assert sorted(buckets["low"]) == [float(i) for i in range(10)]
    assert sorted(buckets["high"]) == [float(i) for i in range(90, 100)]
    assert len(buckets["middle"]) == 20 and all(10 <= t < 90 for t in buckets["middle"])
    assert len({id(c) for c, _ in picked}) == 40


def test_selection_keeps_masked_samples_up_to_a_quarter() -> None:
    pool = [_cand(i, None) for i in range(30)] + [_cand(100 + i, float(i)) for i in range(70)]
    picked = select(pool, 40, seed=0)
    assert sum(b == "masked" for _, b in picked) == 10


def test_selection_is_shuffled_so_failures_do_not_come_first() -> None:
    pool = [_cand(i, float(i)) for i in range(100)]
    order = [b for _, b in select(pool, 40, seed=1)]
    assert order[:10] != ["low"] * 10


def test_build_samples_at_the_task_temperature_and_budget(task: Any) -> None:
    sampler = arithmetic_sampler()
    store = gate.build_set(task, gate.db_path(task), sampler=sampler, size=SMALL)
    assert [(c.n, c.temperature, c.max_new_tokens, len(c.prompts)) for c in sampler.calls] == [(2, 1.0, 12, SMALL)]
    meta = store.meta()
    assert (meta["temperature"], meta["max_new_tokens"], meta["model"]) == (1.0, 12, "builtin:tiny")
    assert {s.reward_class for s in store.samples()} == {"pass", "fail"}


def test_building_over_a_reviewed_set_refuses_without_overwrite(task: Any) -> None:
    build_and_review(task)
    with pytest.raises(GateError, match=f"already holds {SMALL} reviewer verdicts"):
        gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    assert len(gate.open_store(task).reviews()) == SMALL


def test_a_set_that_would_be_refused_is_refused_before_sampling(task: Any, tmp_path: Path) -> None:
    """Over a reviewed set, and into a folder it cannot write, ``build_set`` stops before its
    sampler is called (it sampled and scored the whole pool first)."""
    build_and_review(task)
    sampler = arithmetic_sampler()
    with pytest.raises(GateError):
        gate.build_set(task, gate.db_path(task), sampler=sampler, size=SMALL)
    blocked = tmp_path / "blocker"
    blocked.write_text("a file where the gate folder should be")
    with pytest.raises(OSError) as info:
        gate.build_set(task, blocked / "gate.db", sampler=sampler, size=SMALL)
    assert str(blocked) in str(info.value.filename)
    assert sampler.calls == []


def _write_probe(folder: Path, task: Any, temperature: float) -> Path:
    """A probe folder as ``rlvr probe`` writes it (through the probe's types), with a claimed
    success on every line that the current reward must not trust."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = task.load_split("train")[:30]
    settings = ProbeSettings(
        task=str(task.path),
        model="builtin:tiny",
        backend="fake",
        k=2,
        temperature=temperature,
        top_p=1.0,
        max_new_tokens=12,
        seed=task.seed,
        chunk=32,
        prompt_indices=tuple(range(len(rows))),
        terms=("correct",),
    )
    (folder / "probe.json").write_text(json.dumps(settings.to_json()))
    lines = [
        ProbeSample(
            rollout=Rollout(
                i, row["question"] + "=", row, text, (1, 2, 3), "stop", None, {"correct": Verdict.correct()}, 1.0
            ),
            sample_index=j,
            success=True,
            temperature=temperature,
            max_new_tokens=12,
        )
        for i, row in enumerate(rows)
        for j, text in enumerate((f"<answer>{row['answer']}</answer>", "no idea"))
    ]
    (folder / "samples.jsonl").write_text("".join(x.line() for x in lines))
    return folder


def test_probe_samples_are_reused_and_scored_with_the_current_reward(task: Any, tmp_path: Path) -> None:
    probe = _write_probe(tmp_path / "probe", task, 1.0)
    store = gate.build_set(task, gate.db_path(task), probe_samples=probe, size=SMALL)
    samples = store.samples()
    assert len(samples) == SMALL
    # the probe file claims every sample correct; the set trusts only the current reward
    assert {s.reward_class for s in samples if s.rollout.completion == "no idea"} == {"fail"}
    assert store.meta()["source"] == f"probe:{probe}"


def test_probe_samples_at_another_temperature_are_refused(task: Any, tmp_path: Path) -> None:
    probe = _write_probe(tmp_path / "probe", task, 0.7)
    with pytest.raises(GateError, match="probe samples were taken at temperature 0.7, the run samples at 1.0"):
        gate.build_set(task, gate.db_path(task), probe_samples=probe, size=SMALL)


def test_probe_samples_of_another_model_are_refused(task: Any, tmp_path: Path) -> None:
    probe = _write_probe(tmp_path / "probe", task, 1.0)
    with pytest.raises(GateError, match="the probe sampled 'builtin:tiny', the gate is for '/sft'"):
        gate.build_set(task, gate.db_path(task), probe_samples=probe, size=SMALL, model="/sft")


def test_malformed_probe_line_names_the_file_and_line(task: Any, tmp_path: Path) -> None:
    probe = _write_probe(tmp_path / "probe", task, 1.0)
    with (probe / "samples.jsonl").open("a") as fh:
        fh.write('{"prompt": "x"}\n')
    with pytest.raises(Exception, match=r"samples\.jsonl:61: not a probe sample"):
        gate.build_set(task, gate.db_path(task), probe_samples=probe, size=SMALL)


def test_inspect_build_from_a_probe_folder_uses_the_probes_settings(task: Any, tmp_path: Path) -> None:
    from rlvr.cli.main import main
    from rlvr.probe import read_samples, run_probe

    out = tmp_path / "probe"
    run_probe(task, out_dir=out, k=2, max_prompts=20, seed=11, sampler=arithmetic_sampler(), progress=False)
    assert main(["inspect", "build", str(task.path), "--probe", str(out), "--size", str(SMALL)]) == 0
    store = gate.open_store(task)
    meta = store.meta()
    # how the samples were drawn is the probe's (its model and sampling seed), not a fresh draw's
    assert (meta["source"], meta["model"], meta["seed"]) == (f"probe:{out}", "builtin:tiny", 11)
    assert (meta["temperature"], meta["top_p"], meta["max_new_tokens"]) == (1.0, 1.0, 12)
    probed = {(s.rollout.prompt_index, s.rollout.completion) for _, s in read_samples(out / "samples.jsonl")}
    assert {(s.rollout.prompt_index, s.rollout.completion) for s in store.samples()} <= probed


def test_probe_settings_in_an_older_format_are_refused_naming_the_file(task: Any, tmp_path: Path) -> None:
    probe = _write_probe(tmp_path / "probe", task, 1.0)
    (probe / "probe.json").write_text(json.dumps({"model": "builtin:tiny", "temperature": 1.0}))
    with pytest.raises(DataError, match=r"probe\.json: not probe settings .*rerun rlvr probe"):
        gate.build_set(task, gate.db_path(task), probe_samples=probe, size=SMALL)


def test_a_probe_line_from_an_older_rlvr_is_refused_saying_to_rerun_the_probe(task: Any, tmp_path: Path) -> None:
    probe = _write_probe(tmp_path / "probe", task, 1.0)
    old = json.loads((probe / "samples.jsonl").read_text().splitlines()[0])
    del old["temperature"]  # older probes did not record it on each line
    (probe / "samples.jsonl").write_text(json.dumps(old) + "\n")
    with pytest.raises(DataError, match=r"samples\.jsonl:1: not a probe sample .*rerun rlvr probe"):
        gate.build_set(task, gate.db_path(task), probe_samples=probe, size=SMALL)


def test_rescore_keeps_verdicts_and_reopens_samples_whose_reward_changed(user_task: Any) -> None:
    store = build_and_review(user_task)
    before = store.reviews()
    module = user_task.root / (user_task.rewards[1].verifier.partition(":")[0] + ".py")
    # The fix: a stricter reward that fails everything (stands in for any change to the code).
    module.write_text(module.read_text().replace("ok = ex.answer.strip() == gold", "ok = False"))
    import importlib
    import sys

    sys.modules.pop(module.stem, None)
    importlib.invalidate_caches()
    changed = gate.rescore(user_task, store)
    passing = [s for s in before if s.reward_class == "pass"]
    assert sorted(c.sample_id for c in changed) == sorted(r.sample_id for r in passing)
    assert {(c.old_class, c.new_class, c.state_before, c.state_after) for c in changed} == {
        ("pass", "fail", "agrees", "changed")
    }
    assert store.reviews() == before
    assert not gate.status(user_task).passed
    assert len(store.rescores()) == 1


def test_export_has_every_sample_with_its_latest_verdict(task: Any) -> None:
    store = build_and_review(task)
    store.add_review(2, "lower", reviewer="bob", note="n")
    path = gate.export_jsonl(store)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["id"] for x in lines] == list(range(1, SMALL + 1))
    assert lines[1]["review"]["label"] == "lower" and lines[1]["review"]["reviewer"] == "bob"
    assert lines[0]["review_state"] == "agrees"
    assert set(lines[0]["verdicts"]) == {"format", "correct"}


def test_database_is_in_wal_mode(task: Any) -> None:
    import sqlite3

    gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    with sqlite3.connect(gate.db_path(task)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_verdict_is_visible_to_a_new_connection_when_add_review_returns(task: Any) -> None:
    import sqlite3

    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    store.add_review(5, "higher", reviewer="alice", note="x")
    with sqlite3.connect(gate.db_path(task)) as conn:
        assert conn.execute("SELECT sample_id, label FROM reviews").fetchall() == [(5, "higher")]


def test_unknown_label_and_unknown_sample_are_refused(task: Any) -> None:
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    with pytest.raises(GateError, match="unknown verdict 'maybe'"):
        store.add_review(1, "maybe", reviewer="alice")
    with pytest.raises(GateError, match="no sample 999"):
        store.add_review(999, "right", reviewer="alice")
    with pytest.raises(GateError, match="only a disagreement"):
        store.add_review(1, "right", reviewer="alice", accepted="why")
    assert store.reviews() == []


def _kept_rollouts(task: Any, run: Path, step: int) -> None:
    """What rlvr train keeps at ``step``: two groups of 8 completions of the task's prompts."""
    from types import SimpleNamespace

    from rlvr import keptrollouts as rollouts

    rows = task.load_split("train")[:2]
    n = 16
    kwargs = {
        "prompts": [task.render_prompt(rows[i // 8]) for i in range(n)],
        "completions": [f"<answer>{rows[i // 8]['answer']}</answer>" if i % 2 else "no tags" for i in range(n)],
        "completion_ids": [[1, 2]] * n,
        "trainer_state": SimpleNamespace(global_step=step - 1),
        **{k: [rows[i // 8][k] for i in range(n)] for k in rows[0]},
    }
    rs = task.reward_set()
    rollouts.Recorder(run, rs, group_size=8, logging_steps=1).wrap(rs.trl_functions())[0](**kwargs)


def test_inspect_build_reads_a_runs_rollouts_at_a_step(
    task: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.cli.main import main

    run = tmp_path / "run"
    _kept_rollouts(task, run, 3)
    assert main(["inspect", "build", str(task.path), "--run", str(run), "--step", "3", "--size", "50"]) == 0
    out = capsys.readouterr().out
    assert "16 samples (pass 8, fail 8, masked 0)" in out
    assert "the run kept 16 completions at step 3 (fewer than --size 50); every one is in the set" in out
    store = gate.open_store(task, run / "inspect" / "step-3")
    assert store.meta()["source"] == f"rollouts:{run}@3" and store.meta()["model"] == f"{run} at step 3"
    assert {s.rollout.row["answer"] for s in store.samples()} == {r["answer"] for r in task.load_split("train")[:2]}


def test_inspect_build_at_a_step_without_rollouts_names_the_kept_steps(task: Any, tmp_path: Path) -> None:
    _kept_rollouts(task, tmp_path / "run", 1)
    with pytest.raises(GateError, match="no rollouts at step 5; kept steps: 1"):
        gate.build_set(task, tmp_path / "x.db", rollouts=(tmp_path / "run", 5))


def test_inspect_build_run_needs_a_step(task: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rlvr.cli.main import main

    assert main(["inspect", "build", str(task.path), "--run", str(tmp_path)]) == 2
    assert "--run/--step: go together" in capsys.readouterr().err


def test_a_set_built_before_samples_carried_episodes_still_reads(task: Any) -> None:
    """A store without the ``episode_json`` column (rlvr before issue 35) reads, every sample
    without an episode, and hashes as it did."""
    import sqlite3

    from rlvr.gate.hashes import set_hashes

    store = build_and_review(task, size=SMALL)
    before = set_hashes(store)
    conn = sqlite3.connect(store.path)
    conn.execute("ALTER TABLE samples DROP COLUMN episode_json")
    conn.commit()
    conn.close()
    samples = store.samples()
    assert samples and all(s.rollout.episode is None for s in samples)
    assert store.sample(samples[0].id) == samples[0]
    assert set_hashes(store) == before
