"""Signing the gate and enforcing it: every change is caught by ``enforce`` and named precisely."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rlvr import gate
from rlvr.demo.arithmetic import reference_answer
from rlvr.errors import GateError
from rlvr.gate.hashes import sha256_file, sha256_json
from rlvr.gate.record import AuditOutcome
from rlvr.task import load_task
from support.gate_fixtures import (
    SMALL,
    arithmetic_sampler,
    build_and_review,
    no_exploits,
    sign_small,
    unique_module,
    write_task,
)


def _module_file(task: Any) -> Path:
    name = task.rewards[1].verifier.partition(":")[0]
    return task.root / f"{name}.py"


def test_freshly_signed_gate_passes_enforce_with_a_summary(signed: Any) -> None:
    summary = gate.enforce(signed)
    assert summary["status"] == "passed"
    assert summary["reviewer"] == "alice"
    assert summary["samples"] == SMALL
    assert summary["no_gate_reason"] is None
    record = json.loads(gate.record_path(signed).read_text())
    assert record["reviewer"] == "alice"
    assert record["task"]["sha256"] == sha256_file(signed.path)
    assert str(_module_file(signed)) in [m["path"] for m in record["reward_code"].values()]


def test_changed_reward_module_is_named_with_old_and_new_hash(signed: Any) -> None:
    path = _module_file(signed)
    old = sha256_file(path)
    path.write_text(path.read_text().replace("ok = ex.answer.strip() == gold", "ok = gold in ex.answer"))
    new = sha256_file(path)
    with pytest.raises(GateError) as info:
        gate.enforce(signed)
    msg = str(info.value)
    assert f"reward module {path.stem} ({path}) changed: sha256 was {old}, now {new}" in msg


def test_changed_helper_module_beside_the_task_is_detected(tmp_path: Path) -> None:
    name, helper = unique_module(), unique_module()
    task_path = write_task(tmp_path / "t", module=name)
    (tmp_path / "t" / f"{helper}.py").write_text("def clean(x):\n    return x.strip()\n")
    mod = tmp_path / "t" / f"{name}.py"
    mod.write_text(f"import {helper}\n" + mod.read_text().replace("ex.answer.strip()", f"{helper}.clean(ex.answer)"))
    task = load_task(task_path)
    build_and_review(task)
    sign_small(task)
    (tmp_path / "t" / f"{helper}.py").write_text("def clean(x):\n    return x.strip().lstrip('0')\n")
    with pytest.raises(
        GateError,
        match=rf"reward module {helper} \(.*{helper}.py\) changed: sha256 was [0-9a-f]{{64}}, now [0-9a-f]{{64}}",
    ):
        gate.enforce(task)


def test_changed_task_file_is_named_with_old_and_new_hash(signed: Any) -> None:
    old = sha256_file(signed.path)
    signed.path.write_text(signed.path.read_text().replace("temperature: 1.0", "temperature: 0.7"))
    new = sha256_file(signed.path)
    with pytest.raises(GateError) as info:
        gate.enforce(load_task(signed.path))
    msg = str(info.value)
    assert f"task file {signed.path} changed: sha256 was {old}, now {new}" in msg
    assert "temperature changed: the set was sampled with 1.0, the run uses 0.7" in msg


def test_tampered_gate_json_is_detected(signed: Any) -> None:
    path = gate.record_path(signed)
    record = json.loads(path.read_text())
    record["kappa"] = 0.99
    path.write_text(json.dumps(record, indent=2))
    with pytest.raises(
        GateError,
        match=r"gate\.json was edited after signing: record_sha256 says [0-9a-f]{64}, "
        r"its content hashes to [0-9a-f]{64}",
    ):
        gate.enforce(signed)


def test_tampered_verdict_in_the_database_is_detected(signed: Any) -> None:
    db = gate.db_path(signed)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE reviews SET note = 'edited later' WHERE id = 3")
    with pytest.raises(
        GateError,
        match=r"the reviewer verdicts in .*inspection\.db changed since signing: "
        r"sha256 was [0-9a-f]{64}, now [0-9a-f]{64}",
    ):
        gate.enforce(signed)


def test_tampered_completion_in_the_database_is_detected(signed: Any) -> None:
    with sqlite3.connect(gate.db_path(signed)) as conn:
        conn.execute("UPDATE samples SET completion = '<answer>1</answer>' WHERE id = 1")
    with pytest.raises(GateError, match=r"the inspection set \(samples\) in .* changed since signing"):
        gate.enforce(signed)


def test_deleted_database_is_reported(signed: Any) -> None:
    gate.db_path(signed).unlink()
    with pytest.raises(GateError, match=r"inspection database .*inspection\.db cannot be checked: no inspection set"):
        gate.enforce(signed)


def test_missing_record_names_the_path_and_the_ways_out(task: Any) -> None:
    with pytest.raises(GateError, match=r"no gate record at .*gate\.json: inspect the reward first.*--no-gate REASON"):
        gate.enforce(task)


def test_no_gate_without_a_reason_is_refused(task: Any) -> None:
    with pytest.raises(GateError, match="needs a reason"):
        gate.enforce(task, no_gate_reason="  ")


def test_no_gate_with_a_reason_returns_the_reason(task: Any) -> None:
    summary = gate.enforce(task, no_gate_reason="smoke test of the launcher")
    assert summary["status"] == "bypassed"
    assert summary["no_gate_reason"] == "smoke test of the launcher"


def test_gate_flag_points_enforce_at_another_folder(user_task: Any, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    store = gate.build_set(user_task, gate.db_path(user_task, other), sampler=arithmetic_sampler(), size=SMALL)
    for s in store.samples():
        store.add_review(s.id, "right", reviewer="bob")
    path = sign_small(user_task, other)
    assert path == other / "gate.json"
    assert gate.enforce(user_task, gate_path=path)["reviewer"] == "bob"
    with pytest.raises(GateError, match="no gate record"):
        gate.enforce(user_task)


def test_model_other_than_the_sampled_one_is_refused(signed: Any) -> None:
    with pytest.raises(
        GateError,
        match=r"model changed: the set was sampled from 'builtin:tiny', the run starts from '/some/sft/checkpoint'",
    ):
        gate.enforce(signed, model="/some/sft/checkpoint")


def test_sign_refuses_while_samples_are_unreviewed(user_task: Any) -> None:
    store = gate.build_set(user_task, gate.db_path(user_task), sampler=arithmetic_sampler(), size=SMALL)
    store.add_review(1, "right", reviewer="alice")
    with pytest.raises(GateError, match=r"19 samples have no verdict yet \(ids 2, 3, "):
        sign_small(user_task)
    assert not gate.record_path(user_task).exists()


def test_sign_refuses_an_open_disagreement_until_it_is_accepted_with_a_reason(user_task: Any) -> None:
    store = build_and_review(user_task)
    store.add_review(7, "lower", reviewer="alice", note="looks wrong")
    with pytest.raises(GateError, match=r"1 disagreements are open \(ids 7\)"):
        sign_small(user_task)
    store.add_review(7, "lower", reviewer="alice", accepted="the stricter check is not worth it here")
    record = json.loads(sign_small(user_task).read_text())
    assert record["accepted_disagreements"] == [
        {"sample_id": 7, "label": "lower", "reason": "the stricter check is not worth it here"}
    ]


def test_sign_refuses_scores_the_current_reward_code_no_longer_gives(user_task: Any) -> None:
    build_and_review(user_task)
    path = _module_file(user_task)
    # Lenient check (the gold answer anywhere in the span) on a fresh module name: no stale import.
    path.write_text(path.read_text().replace("ok = ex.answer.strip() == gold", "ok = True"))
    import importlib
    import sys

    sys.modules.pop(path.stem, None)
    importlib.invalidate_caches()
    with pytest.raises(
        GateError, match=r"samples score differently with the current reward code .*rlvr inspect rescore"
    ):
        sign_small(user_task)


def test_sign_refuses_a_small_set(user_task: Any) -> None:
    build_and_review(user_task, size=10)
    with pytest.raises(GateError, match="the set has 10 samples; the gate asks a person to read at least 50"):
        gate.sign(user_task, audit=no_exploits)


def test_exploitable_term_blocks_signing_unless_a_reason_is_recorded(user_task: Any) -> None:
    build_and_review(user_task)

    def exploitable(task: Any) -> AuditOutcome:
        return AuditOutcome({"terms": ["format"]}, ("format",))

    with pytest.raises(GateError, match="the audit found exploitable reward terms: format"):
        sign_small(user_task, audit=exploitable)
    record = json.loads(
        sign_small(user_task, audit=exploitable, accept_exploits={"format": "tags-only reward, weight 0.1"}).read_text()
    )
    assert record["audit"]["accepted"] == {"format": "tags-only reward, weight 0.1"}
    assert gate.enforce(user_task)["status"] == "passed"


def test_signing_runs_the_real_audit_and_records_its_report(task: Any) -> None:
    build_and_review(task)
    from rlvr.audit import gate_audit

    record = json.loads(gate.sign(task, min_samples=SMALL, audit=gate_audit).read_text())
    assert record["audit"]["status"] == "ran"
    assert record["audit"]["exploitable"] == []
    assert "exploitable_terms" in record["audit"]["report"]


def test_reference_gate_signs_with_the_stand_in_reviewer_named(task: Any, tmp_path: Path) -> None:
    def checker(row: Any, completion: str, verdicts: Any) -> str:
        from rlvr.rewards.format import extract

        ex = extract(completion, task.answer)
        truly = ex.ok and ex.answer.strip() == reference_answer(row["question"] + "=")
        said = verdicts["correct"].outcome.value == "correct"
        return "right" if truly == said else ("higher" if truly else "lower")

    from rlvr.audit import gate_audit

    sampler = arithmetic_sampler()
    path = gate.reference_gate(
        task,
        model="builtin:tiny",
        out_dir=tmp_path / "g",
        checker=checker,
        sampler=sampler,
        size=SMALL,
        audit=gate_audit,
    )
    record = json.loads(path.read_text())
    assert record["reviewer"] == "reference-checker (demo)"
    assert record["counts"]["label_right"] == SMALL
    assert gate.enforce(task, gate_path=tmp_path / "g")["status"] == "passed"


def test_reference_gate_refuses_to_sign_when_the_checker_disagrees(task: Any, tmp_path: Path) -> None:
    with pytest.raises(GateError, match="disagreements are open"):
        gate.reference_gate(
            task,
            model="builtin:tiny",
            out_dir=tmp_path / "g",
            checker=lambda row, c, v: "lower",
            sampler=arithmetic_sampler(),
            size=SMALL,
            audit=no_exploits,
        )


def test_reward_code_covers_the_defining_module_and_what_it_imports() -> None:
    from types import SimpleNamespace

    from rlvr.gate.hashes import reward_modules

    def names(*verifiers: str) -> set[str]:
        fake = SimpleNamespace(path=Path(__file__), rewards=[SimpleNamespace(verifier=v) for v in verifiers])
        return set(reward_modules(fake))

    # exact reads the span through format and folds text with the shared rules (patterns, untrusted,
    # strictjson); every verdict is settled by the fail-closed rule (fault)
    assert names("exact") == {
        "rlvr.rewards.exact",
        "rlvr.rewards.format",
        "rlvr.rewards.base",
        "rlvr.rewards.episode",  # the sample record every verifier reads
        "rlvr.rewards.combine",
        "rlvr.rewards.fault",
        "rlvr.rewards.rules",  # the package of the one-rule modules (its __init__ is imported with them)
        "rlvr.rewards.rules.untrusted",
        "rlvr.rewards.rules.patterns",
        "rlvr.rewards.rules.strictjson",
    }
    # the unit-test term's verdict is decided by the sandbox pool, which starts the harness in the
    # worker's interpreter; the scan follows the harness to every inside module
    inside = {f"rlvr.sandbox.inside.{m}" for m in ("harness", "child", "testchild", "proxy", "wire", "relay")}
    inside |= {"rlvr.sandbox.inside.isolation", "rlvr.sandbox.inside.probing", "rlvr.sandbox.inside.tolerance"}
    assert {"rlvr.rewards.code", "rlvr.sandbox.pool", *inside} <= names("unit_tests")


def test_model_given_as_a_folder_matches_the_same_folder_by_another_spelling(user_task: Any, tmp_path: Path) -> None:
    folder = tmp_path / "sft"
    folder.mkdir()
    store = gate.build_set(
        user_task, gate.db_path(user_task), sampler=arithmetic_sampler(), size=SMALL, model=str(folder)
    )
    for s in store.samples():
        store.add_review(s.id, "right", reviewer="alice")
    sign_small(user_task)
    assert gate.enforce(user_task, model=str(tmp_path / "." / "sft"))["model"] == str(folder)


def test_rlvr_train_refuses_a_changed_reward_module_before_loading_anything(
    signed: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.cli.main import main

    path = _module_file(signed)
    old = sha256_file(path)
    path.write_text(path.read_text() + "\n# a later edit\n")
    assert (
        main(["train", str(signed.path), "--run-dir", str(tmp_path / "run"), "--max-steps", "1", "--no-progress"]) == 1
    )
    err = capsys.readouterr().err
    assert err.startswith("rlvr train: error: the gate record")
    assert f"reward module {path.stem} ({path}) changed: sha256 was {old}, now {sha256_file(path)}" in err
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


# -- the gate covers the data (issue 14) ------------------------------------------------------
def test_editing_train_jsonl_after_signing_stops_train(
    signed: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.cli.main import main

    train = signed.root / "train.jsonl"
    old = sha256_file(train)
    train.write_text(train.read_text().replace('"answer": "', '"answer": "1', 1))
    assert (
        main(["train", str(signed.path), "--run-dir", str(tmp_path / "run"), "--max-steps", "1", "--no-progress"]) == 1
    )
    err = capsys.readouterr().err
    assert f"data.train (train.jsonl) changed since signing: sha256 was {old}, now {sha256_file(train)}" in err
    assert not (tmp_path / "run").exists()


def test_a_file_a_term_option_names_is_bound_by_the_record(tmp_path: Path) -> None:
    import dataclasses

    from rlvr.gate.hashes import data_files
    from rlvr.task import TermSpec

    task = load_task(write_task(tmp_path / "t"))
    (task.root / "schema.json").write_text('{"type": "object"}')
    task = dataclasses.replace(
        task,
        rewards=(*task.rewards, TermSpec("shape", "json_schema", 1.0, {"schema": "schema.json", "extra_keys": False})),
    )
    files = data_files(task)
    assert files["rewards.shape.options.schema"] == {
        "path": "schema.json",
        "sha256": sha256_file(task.root / "schema.json"),
    }
    assert files["data.train"]["path"] == "train.jsonl"
    assert set(files) == {"data.train", "rewards.shape.options.schema"}


def test_a_record_signed_before_data_binding_must_be_signed_again(signed: Any) -> None:
    path = gate.record_path(signed)
    record = json.loads(path.read_text())
    del record["data"]
    record["record_sha256"] = sha256_json({k: v for k, v in record.items() if k != "record_sha256"})
    path.write_text(json.dumps(record))
    with pytest.raises(GateError, match="does not bind the data files"):
        gate.enforce(signed)


def test_the_enforce_summary_names_the_data_hashes(signed: Any) -> None:
    summary = gate.enforce(signed)
    assert summary["data_sha256"] == {"data.train": sha256_file(signed.root / "train.jsonl")}


def test_signing_without_an_audit_says_so_in_the_record(task: Any) -> None:
    build_and_review(task)
    record = json.loads(gate.sign(task, min_samples=SMALL, audit=None).read_text())
    assert record["audit"] == {"status": "unavailable", "reason": "audit disabled by the caller"}
