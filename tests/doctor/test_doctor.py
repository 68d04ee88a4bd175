"""The doctor: one planted symptom per synthetic log -> exactly that finding and its variant's
patch; a healthy log -> no finding; TRL trainer_state.json and CSV inputs; bad input."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.cli.main import main
from rlvr.doctor import Patch, choose, diagnose, is_moe, load_run, patched, write_patch
from rlvr.errors import ConfigError, DataError, RunError

DATA = Path(__file__).parents[1] / "data" / "doctor"
SYN = DATA / "synthetic"
TRL = DATA / "trl_checkpoint"

DAPO = {"loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.28, "beta": 0.0, "mask_truncated_completions": True}
DR_GRPO = {"loss_type": "dr_grpo", "scale_rewards": "none"}
GSPO = {
    "importance_sampling_level": "sequence",
    "loss_type": "grpo",
    "epsilon": 3e-4,
    "epsilon_high": 4e-4,
    "beta": 0.0,
    "steps_per_generation": 16,
}

# scenario -> (the one finding expected, the patch's grpo change group or None)
PLANTED = {
    "nan": ("nan", {"learning_rate": 5e-8}),
    "no_signal": ("no_learning_signal", {"dynamic": {"mode": "filter"}}),
    "entropy_collapse": ("entropy_collapse", DAPO),
    "dapo_entropy_collapse": ("entropy_collapse", None),  # checked separately: adaptive entropy
    "entropy_blowup": ("entropy_blowup", {"learning_rate": 2.5e-7}),
    "length_flat_reward": ("length_hacking", DR_GRPO),
    "length_cotrend": ("length_hacking", DR_GRPO),
    "truncation": ("truncation", {"max_completion_length": 512}),
    "reward_hacking": ("reward_hacking", None),
    "term_saturation": ("reward_hacking", None),
    "kl_explosion": ("kl_explosion", {"learning_rate": 2.5e-7}),
    "collapse": ("performance_collapse", {"learning_rate": 5e-8}),
    "verifier_errors": ("verifier_errors", None),
    "off_policy": ("off_policy_instability", {"num_iterations": 1}),
    "moe": ("moe_plain_grpo", GSPO),
}


def _copy(name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    shutil.copytree(SYN / name, dest)
    return dest


def _write_metrics(run: Path, rows: list[dict]) -> None:
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (SYN / name / "metrics.jsonl").read_text().splitlines()]


# ---- fixtures are what the generator writes -------------------------------------------------


def test_synthetic_fixtures_are_reproduced_by_their_generator(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("doctor_synth", DATA / "synth.py")
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    synth.main(tmp_path)
    for f in sorted(p for p in tmp_path.rglob("*") if p.is_file()):
        rel = f.relative_to(tmp_path)
        assert (SYN / rel).read_bytes() == f.read_bytes(), f"fixture {rel} differs from synth.py's output: rerun it"


# ---- one planted symptom -> exactly that finding ---------------------------------------------


def test_healthy_log_produces_no_finding() -> None:
    d = diagnose(load_run(SYN / "healthy"))
    assert d.findings == ()
    assert d.healthy


def test_small_clip_ratios_off_policy_are_not_a_finding() -> None:
    assert diagnose(load_run(SYN / "healthy_off_policy")).findings == ()


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_planted_symptom_gives_exactly_its_finding(name: str) -> None:
    d = diagnose(load_run(SYN / name))
    assert [f.check for f in d.findings] == [PLANTED[name][0]]
    f = d.findings[0]
    assert f.evidence and any(ch.isdigit() for ch in f.evidence), "evidence must carry numbers and steps"
    assert f.suggestion


@pytest.mark.parametrize("name", sorted(n for n, (_, p) in PLANTED.items() if p is not None))
def test_patch_is_the_change_group_the_table_names_and_nothing_else(name: str) -> None:
    f = diagnose(load_run(SYN / name)).findings[0]
    assert f.patch is not None
    assert dict(f.patch.grpo) == PLANTED[name][1]


def test_entropy_collapse_patch_is_dapo_with_the_soft_overlong_term() -> None:
    f = diagnose(load_run(SYN / "entropy_collapse")).findings[0]
    assert f.patch.variant == "DAPO"
    (term,) = f.patch.add_terms
    assert term["verifier"] == "overlong"
    assert term["options"] == {"max_completion_length": 256, "cache": 64}
    from rlvr.rewards import Sample, build_verifier

    v = build_verifier(term["verifier"], term["options"])  # the term as a task file would build it
    assert v.verify(Sample(completion="short", row={})).score == 0.0


def test_dapo_term_is_not_added_twice_when_the_task_has_it(tmp_path: Path) -> None:
    run = _copy("entropy_collapse", tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["rlvr"]["reward_terms"].append("overlong")
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    f = diagnose(load_run(run)).findings[0]
    assert f.patch.variant == "DAPO" and f.patch.add_terms == ()


def test_length_hacking_patch_is_dr_grpo() -> None:
    for name in ("length_flat_reward", "length_cotrend"):
        assert diagnose(load_run(SYN / name)).findings[0].patch.variant == "Dr. GRPO"


def test_moe_patch_is_gspo_and_clears_a_conflicting_generation_batch_size(tmp_path: Path) -> None:
    run = _copy("moe", tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["grpo"]["generation_batch_size"] = 32
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    f = diagnose(load_run(run)).findings[0]
    assert f.patch.variant == "GSPO"
    assert f.patch.grpo["generation_batch_size"] is None  # TRL refuses it together with steps_per_generation
    assert "generation_batch_size" not in patched(cfg, f.patch)["grpo"]


def test_moe_on_gspo_already_is_not_a_finding(tmp_path: Path) -> None:
    run = _copy("moe", tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["grpo"].update({"importance_sampling_level": "sequence", "steps_per_generation": 16})
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert diagnose(load_run(run)).findings == ()


def test_entropy_collapse_under_dapo_asks_for_adaptive_entropy_not_dapo_again() -> None:
    f = diagnose(load_run(SYN / "dapo_entropy_collapse")).findings[0]
    assert set(f.patch.grpo) == {"use_adaptive_entropy", "entropy_target"}
    assert f.patch.grpo["use_adaptive_entropy"] is True


def test_entropy_is_judged_relative_to_the_runs_own_start(tmp_path: Path) -> None:
    # The same shapes at ten times the entropy scale give the same verdicts.
    for name, expected in (("healthy", []), ("entropy_collapse", ["entropy_collapse"])):
        run = _copy(name, tmp_path)
        rows = _rows(name)
        for r in rows:
            if "entropy" in r:
                r["entropy"] *= 10
        _write_metrics(run, rows)
        assert [f.check for f in diagnose(load_run(run)).findings] == expected
        shutil.rmtree(run)


def test_an_entropy_level_that_is_low_in_absolute_terms_but_steady_is_not_a_collapse(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    rows = _rows("healthy")
    for r in rows:
        if "entropy" in r:
            r["entropy"] = 0.05 + 0.002 * ((r["step"] * 7) % 5)
    _write_metrics(run, rows)
    assert diagnose(load_run(run)).findings == ()


def test_reward_hacking_keeps_the_held_out_peak_step_in_its_advice() -> None:
    f = diagnose(load_run(SYN / "reward_hacking")).findings[0]
    assert f.numbers["acc_peak_step"] == 20
    assert "step 20" in f.suggestion


def test_reward_rise_with_only_two_evals_and_a_small_train_held_out_gap_is_not_called_hacking(tmp_path: Path) -> None:
    run = _copy("reward_hacking", tmp_path)
    rows = [r for r in _rows("reward_hacking") if "eval/accuracy" not in r or r["step"] in (0, 60)]
    for r in rows:
        if r.get("eval/accuracy") is not None and r["step"] == 60:
            r["eval/accuracy"] = 0.5  # the train correct rate ends near 0.66: a gap of 0.16, under 0.3
    _write_metrics(run, rows)
    assert diagnose(load_run(run)).findings == ()


def test_train_reward_far_above_held_out_accuracy_is_hacking_even_with_two_evals(tmp_path: Path) -> None:
    run = _copy("reward_hacking", tmp_path)
    rows = [r for r in _rows("reward_hacking") if "eval/accuracy" not in r or r["step"] in (0, 60)]
    _write_metrics(run, rows)
    [f] = diagnose(load_run(run)).findings
    assert f.check == "reward_hacking" and f.numbers["threshold"] == 0.3
    assert f.numbers["gap"] == pytest.approx(f.numbers["train_correct_late"] - 0.22)
    assert "TRAIN_HELD_OUT_GAP" in f.evidence  # the threshold's source is named


def test_reward_hacking_quotes_the_best_rewarded_rollouts(tmp_path: Path) -> None:
    run = _copy("reward_hacking", tmp_path)
    (run / "rollouts").mkdir()
    kept = [
        {
            "rollout": {"step": 60, "group": 0, "session": 1},
            "completion": f"<answer>{x}</answer>",
            "reward": r,
            "scores": {"correct": {"outcome": o}},
        }
        for x, r, o in (("7", 1.1, "correct"), ("8", 0.1, "incorrect"), ("9", 0.9, "correct"))
    ]
    (run / "rollouts" / "rollouts.jsonl").write_text("".join(json.dumps(k) + "\n" for k in kept))
    [f] = diagnose(load_run(run)).findings
    assert "the best-rewarded kept rollouts: step 60, reward 1.10 (correct correct): '<answer>7</answer>'" in f.evidence
    assert "'<answer>9</answer>'" in f.evidence and "<answer>8</answer>" not in f.evidence


def test_no_learning_signal_says_whether_prompts_are_too_easy() -> None:
    f = diagnose(load_run(SYN / "no_signal")).findings[0]
    assert f.severity == "error"
    assert "too easy" in f.suggestion


# ---- what the configuration explains is not a symptom ----------------------------------------


def test_zero_clip_ratios_on_policy_are_a_note_not_a_finding() -> None:
    d = diagnose(load_run(SYN / "healthy"))
    assert any(n.check == "off_policy" and "by construction" in n.text for n in d.notes)


def test_large_clip_ratios_on_policy_are_not_read_as_instability(tmp_path: Path) -> None:
    run = _copy("off_policy", tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["grpo"]["num_iterations"] = 1
    cfg["trl_resolved"]["num_iterations"] = 1
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    d = diagnose(load_run(run))
    assert d.findings == ()
    assert any(n.check == "off_policy" and "on-policy" in n.text for n in d.notes)


def test_steps_per_generation_above_accumulation_counts_as_off_policy(tmp_path: Path) -> None:
    run = _copy("off_policy", tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["grpo"]["num_iterations"] = 1
    cfg["trl_resolved"].update(num_iterations=1, steps_per_generation=8, generation_batch_size=64)
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    (f,) = diagnose(load_run(run)).findings
    assert f.check == "off_policy_instability"
    assert dict(f.patch.grpo) == {"steps_per_generation": 4}


def test_loss_near_zero_with_one_iteration_and_no_kl_is_a_note(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["grpo"]["beta"] = 0.0
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    rows = [r for r in _rows("healthy")]
    for r in rows:
        r.pop("kl", None)
        if "loss" in r:
            r["loss"] = 0.0
    _write_metrics(run, rows)
    d = diagnose(load_run(run))
    assert d.findings == ()
    assert any(n.check == "loss" and "expected" in n.text for n in d.notes)


def test_nan_is_found_whichever_metric_carries_it(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    rows = _rows("healthy")
    rows[-1]["eval/accuracy"] = (
        float("inf") if "eval/accuracy" in rows[-1] else rows[-1].setdefault("entropy", float("inf"))
    )
    rows[30]["rewards/format/std"] = float("nan")
    _write_metrics(run, rows)
    (f,) = diagnose(load_run(run)).findings
    assert f.check == "nan"
    assert f.numbers["metrics"] == 2


def test_missing_metric_windows_are_not_read_as_zero(tmp_path: Path) -> None:
    # TRL logs None when a metric had no valid value in a window; zero would fake "no signal".
    run = _copy("healthy", tmp_path)
    rows = _rows("healthy")
    for r in rows[40:]:
        for k in ("grad_norm", "reward_std", "frac_reward_zero_std"):
            if k in r:
                r[k] = None
    _write_metrics(run, rows)
    assert diagnose(load_run(run)).findings == ()


def test_a_resumed_run_relogging_steps_is_merged_not_doubled(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    rows = _rows("healthy")
    _write_metrics(run, rows + rows[-10:])
    r = load_run(run)
    assert len(r.train) == 60
    assert diagnose(r).findings == ()


# ---- MoE detection ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cfg",
    [
        {"model_type": "mixtral", "num_local_experts": 8},
        {"model_type": "deepseek_v3", "n_routed_experts": 256},
        {"model_type": "qwen3_moe"},
        {"model_type": "llava", "text_config": {"model_type": "x", "num_experts": 16}},
    ],
)
def test_moe_is_detected_from_the_model_config(cfg: dict) -> None:
    assert is_moe(cfg)


@pytest.mark.parametrize(
    "cfg",
    [
        {"model_type": "qwen2"},
        {"model_type": "x", "num_experts": 1},
        {"model_type": "x", "num_experts": True},
        None,
        {},
    ],
)
def test_dense_models_are_not_moe(cfg: dict | None) -> None:
    assert is_moe(cfg) is None


# ---- inputs: TRL trainer_state.json, CSV --------------------------------------------------------


def test_trl_trainer_state_from_a_real_tiny_run_shows_no_learning_signal() -> None:
    r = load_run(TRL)
    assert r.kind == "trainer_state"
    assert len(r.train) == 12 and not r.config_known
    assert r.model_config["model_type"] == "qwen2"
    d = diagnose(r)
    checks = [f.check for f in d.findings]
    assert checks[0] == "no_learning_signal"
    assert "truncation" in checks  # 12 of 16 tokens was the cap: most completions hit it
    assert all(f.patch is None for f in d.findings), "no config known: nothing to patch"


def test_trainer_state_summary_entry_is_not_a_step() -> None:
    r = load_run(TRL / "trainer_state.json")
    assert all("train_runtime" not in row for row in r.train)
    assert [int(row["step"]) for row in r.train] == list(range(1, 13))


def test_config_passed_explicitly_enables_config_checks(tmp_path: Path) -> None:
    r = load_run(TRL / "trainer_state.json", config=SYN / "healthy" / "config.yaml")
    assert r.config_known
    f = next(f for f in diagnose(r).findings if f.check == "truncation")
    assert f.patch is not None


def _to_csv(rows: list[dict], path: Path) -> None:
    keys = sorted({k for r in rows for k in r})
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r[k]) for k in keys})


@pytest.mark.parametrize("name", ["healthy", "entropy_collapse", "reward_hacking"])
def test_csv_export_gives_the_same_findings_as_the_run(name: str, tmp_path: Path) -> None:
    _to_csv(_rows(name), tmp_path / "m.csv")
    got = [f.check for f in diagnose(load_run(tmp_path / "m.csv", config=SYN / name / "config.yaml")).findings]
    assert got == [f.check for f in diagnose(load_run(SYN / name)).findings]


# ---- bad input: clear errors naming file, line/row and field --------------------------------------


def test_malformed_middle_line_names_file_and_line(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    lines = (run / "metrics.jsonl").read_text().splitlines()
    lines[5] = lines[5][:20]
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"metrics.jsonl, line 6: not valid JSON"):
        load_run(run)


def test_torn_last_line_of_a_live_run_is_skipped_with_a_warning(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    with (run / "metrics.jsonl").open("a") as fh:
        fh.write('{"step": 61, "reward": 0.')
    r = load_run(run)
    assert r.steps() == (1, 60)
    assert "incomplete last line" in r.warnings[0]


def test_missing_step_and_non_numeric_values_name_the_field(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    _write_metrics(run, [{"reward": 1.0}])
    with pytest.raises(DataError, match=r"line 1: field 'step' is missing"):
        load_run(run)
    _write_metrics(run, [{"step": 1, "reward": True}])
    with pytest.raises(DataError, match=r"line 1, field 'reward': expected a number"):
        load_run(run)
    _write_metrics(run, [{"step": 1.5, "reward": 1.0}])
    with pytest.raises(DataError, match=r"'step' must be an integer"):
        load_run(run)


def test_csv_bad_cell_names_row_and_column(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("step,reward\n1,0.5\n2,lots\n")
    with pytest.raises(DataError, match=r"row 3, column 'reward': 'lots' is not a number"):
        load_run(tmp_path / "m.csv")
    (tmp_path / "n.csv").write_text("reward\n0.5\n")
    with pytest.raises(DataError, match="no 'step' column"):
        load_run(tmp_path / "n.csv")


def test_trainer_state_without_log_history_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "trainer_state.json").write_text('{"global_step": 3}')
    with pytest.raises(DataError, match="log_history"):
        load_run(tmp_path / "trainer_state.json")


def test_missing_or_empty_runs_are_run_errors(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="no such run"):
        load_run(tmp_path / "nope")
    with pytest.raises(RunError, match="no metrics.jsonl"):
        load_run(tmp_path)
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(RunError, match="no logged steps"):
        load_run(tmp_path)


def test_config_that_is_not_a_mapping_names_the_file_and_field(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    (run / "config.yaml").write_text("grpo: [1, 2]\n")
    with pytest.raises(DataError, match=r"config.yaml: field 'grpo' must be a mapping"):
        load_run(run, config=run / "config.yaml")


# ---- the patch file --------------------------------------------------------------------------


def test_patch_file_differs_from_the_run_config_in_exactly_one_change_group(tmp_path: Path) -> None:
    run = _copy("entropy_collapse", tmp_path)
    path, finding = write_patch(diagnose(load_run(run)))
    assert path == run / "config.doctor-entropy_collapse.yaml"
    old, new = yaml.safe_load((run / "config.yaml").read_text()), yaml.safe_load(path.read_text())
    changed = {k for k in new["grpo"] if new["grpo"][k] != old["grpo"].get(k)}
    assert changed == {"loss_type", "epsilon_high", "beta", "mask_truncated_completions"}  # epsilon was already 0.2
    assert {k: new["grpo"][k] for k in DAPO} == DAPO
    assert set(new["grpo"]) == set(old["grpo"])
    assert {k: v for k, v in new["rlvr"].items() if k != "add_rewards"} == old["rlvr"]
    text = path.read_text()
    assert text.splitlines()[1].startswith("# finding: entropy_collapse")
    assert "loss_type: dapo  # doctor: entropy_collapse (DAPO); was 'grpo'" in text


def test_patch_never_overwrites_without_force(tmp_path: Path) -> None:
    run = _copy("truncation", tmp_path)
    out = tmp_path / "p.yaml"
    out.write_text("keep me\n")
    with pytest.raises(RunError, match="already exists"):
        write_patch(diagnose(load_run(run)), out)
    assert out.read_text() == "keep me\n"
    write_patch(diagnose(load_run(run)), out, force=True)
    assert yaml.safe_load(out.read_text())["grpo"]["max_completion_length"] == 512


def test_patch_refuses_when_the_fix_is_not_a_config_value() -> None:
    with pytest.raises(ConfigError, match="not a config change"):
        choose(diagnose(load_run(SYN / "reward_hacking")))


def test_patch_refuses_for_a_healthy_run() -> None:
    with pytest.raises(ConfigError, match="no findings"):
        choose(diagnose(load_run(SYN / "healthy")))


def test_patched_none_removes_a_key_so_trl_derives_it() -> None:
    cfg = {"grpo": {"a": 1, "generation_batch_size": 32}, "rlvr": {}}
    assert patched(cfg, Patch("x", {"generation_batch_size": None, "a": 2}))["grpo"] == {"a": 2}
    assert cfg["grpo"] == {"a": 1, "generation_batch_size": 32}, "the input is not modified"


# ---- CLI ---------------------------------------------------------------------------------------


def test_doctor_help_works(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["doctor", "--help"])
    assert exc.value.code == 0
    assert "--patch" in capsys.readouterr().out


def test_doctor_bad_argument_is_one_line_and_nonzero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["doctor", str(SYN / "healthy"), "--bogus"])
    assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_doctor_missing_run_is_one_line_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["doctor", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such run" in err[0]


def test_doctor_json_lists_findings_with_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", str(SYN / "length_cotrend"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (f,) = out["findings"]
    assert f["check"] == "length_hacking" and f["patch"]["grpo"] == DR_GRPO
    assert math.isclose(f["numbers"]["length_late"] / f["numbers"]["length_early"], 1.78, abs_tol=0.05)


def test_doctor_cli_patch_writes_the_file_and_names_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = _copy("moe", tmp_path)
    assert main(["doctor", str(run), "--patch"]) == 0
    out = capsys.readouterr().out
    assert "GSPO" in out and "config.doctor-moe_plain_grpo.yaml" in out
    assert (
        yaml.safe_load((run / "config.doctor-moe_plain_grpo.yaml").read_text())["grpo"]["importance_sampling_level"]
        == "sequence"
    )


def test_doctor_cli_unknown_finding_and_stray_flags_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = _copy("moe", tmp_path)
    assert main(["doctor", str(run), "--patch", "--finding", "entropy_collapse"]) == 2
    assert "not among this run's findings" in capsys.readouterr().err
    assert main(["doctor", str(run), "--out", str(tmp_path / "x.yaml")]) == 2
    assert "only mean something with --patch" in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.parametrize(
    "name",
    sorted(n for n, (_, p) in PLANTED.items() if p is not None and "dynamic" not in p) + ["dapo_entropy_collapse"],
)
def test_patched_config_is_accepted_by_trl_grpo_config(name: str, tmp_path: Path) -> None:
    from trl import GRPOConfig

    run = load_run(SYN / name)
    cfg = yaml.safe_load(Path(run.config_path).read_text())
    grpo = patched(cfg, diagnose(run).findings[0].patch)["grpo"]
    args = GRPOConfig(**{**grpo, "output_dir": str(tmp_path), "use_cpu": True})
    for k, v in diagnose(run).findings[0].patch.grpo.items():
        if v is not None:
            assert getattr(args, k) == v


def test_finding_json_has_no_inf_or_nan() -> None:
    from rlvr.doctor import Finding

    f = Finding("x", "warning", "m", "e", "s", None, {"ratio": math.inf, "bad": math.nan, "ok": 1.5})
    text = json.dumps(f.to_json())
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert f.to_json()["numbers"] == {"ratio": None, "bad": None, "ok": 1.5}


def test_patch_without_a_config_asks_for_one_instead_of_blaming_the_finding() -> None:
    with pytest.raises(RunError, match="no config.yaml found to patch"):
        write_patch(diagnose(load_run(TRL)))


# ---- real logs from tiny-model runs (tests/data/doctor/README.md says how they were made) -------

REAL = DATA / "real"


def test_real_run_from_the_untrained_model_is_diagnosed_as_no_signal_route_to_sft() -> None:
    d = diagnose(load_run(REAL / "base_30"))
    assert [f.check for f in d.findings] == ["no_learning_signal", "truncation"]
    assert "SFT first" in d.findings[0].suggestion
    assert d.findings[0].numbers["frac_reward_zero_std"] == 1.0


def test_real_run_that_learns_has_no_finding() -> None:
    r = load_run(REAL / "sft_60")
    acc = r.series("eval/accuracy", evals=True)
    assert acc.values[-1] > acc.values[0]  # the fixture really is a run that learns
    d = diagnose(r)
    assert d.findings == ()
    assert {n.check for n in d.notes} == {"off_policy", "loss"}


def test_real_trl_trainer_state_of_the_same_run_has_no_finding_either() -> None:
    r = load_run(REAL / "sft_60_trl_checkpoint")
    assert r.kind == "trainer_state" and len(r.train) == 60 and not r.config_known
    assert diagnose(r).findings == ()


def test_real_run_patch_raises_the_completion_budget_only(tmp_path: Path) -> None:
    run = tmp_path / "base_30"
    shutil.copytree(REAL / "base_30", run)
    d = diagnose(load_run(run))
    with pytest.raises(ConfigError, match="not a config change"):
        write_patch(d)  # the most urgent finding is data, not config
    path, f = write_patch(d, check="truncation")
    old, new = yaml.safe_load((run / "config.yaml").read_text()), yaml.safe_load(path.read_text())
    assert {k for k in new["grpo"] if new["grpo"][k] != old["grpo"].get(k)} == {"max_completion_length"}
    assert new["grpo"]["max_completion_length"] == 20


def test_patched_config_is_read_back_by_rlvr_train(tmp_path: Path) -> None:
    from rlvr.settings.file import RunConfig

    run = tmp_path / "run"
    shutil.copytree(SYN / "entropy_collapse", run)
    path, _ = write_patch(diagnose(load_run(run)))
    grpo = RunConfig.read(path).grpo  # what rlvr train --config reads
    assert {k: grpo[k] for k in DAPO} == DAPO


@pytest.mark.slow
def test_patched_config_trains_with_rlvr_train(tmp_path: Path) -> None:
    # End to end on CPU: a real run's patch feeds `rlvr train --config` (about a minute).
    run = tmp_path / "base_30"
    shutil.copytree(REAL / "base_30", run)
    path, _ = write_patch(diagnose(load_run(run)), check="truncation")
    task = Path(__file__).parents[2] / "examples" / "arithmetic" / "task.yaml"
    assert (
        main(
            [
                "train",
                str(task),
                "--run-dir",
                str(tmp_path / "new"),
                "--config",
                str(path),
                "--max-steps",
                "2",
                "--no-gate",
                "doctor test",
                "--eval-every",
                "0",
                "--no-progress",
            ]
        )
        == 0
    )
    grpo = yaml.safe_load((tmp_path / "new" / "config.yaml").read_text())["grpo"]
    assert grpo["max_completion_length"] == 20


def test_flat_grpo_config_is_read_and_patched_at_the_top_level(tmp_path: Path) -> None:
    flat = tmp_path / "plan.yaml"
    flat.write_text(yaml.safe_dump(yaml.safe_load((SYN / "healthy" / "config.yaml").read_text())["grpo"]))
    d = diagnose(load_run(TRL / "trainer_state.json", config=flat))
    path, f = write_patch(d, tmp_path / "out.yaml", check="truncation")
    new = yaml.safe_load(path.read_text())
    assert "grpo" not in new and new["max_completion_length"] == 512
    assert "max_completion_length: 512  # doctor: truncation" in path.read_text()


def test_text_cannot_break_out_of_the_patch_header_comment() -> None:
    from rlvr.doctor import Finding, render_patch

    f = Finding("x", "warning", "m", "evidence\nloss_type: evil", "s", Patch("t", {"seed": 1}, why="a\rb"))
    cfg = yaml.safe_load((SYN / "healthy" / "config.yaml").read_text())
    parsed = yaml.safe_load(render_patch(cfg, f, source="run\ndir"))
    assert "loss_type" not in parsed
    assert parsed["grpo"]["loss_type"] == "grpo" and parsed["grpo"]["seed"] == 1


def test_moe_is_detected_from_a_hub_model_already_in_the_local_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = tmp_path / "hub" / "models--acme--Big-30B-A3B" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps({"model_type": "qwen3_moe", "num_experts": 128}))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    run = _copy("healthy", tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["rlvr"]["model"] = "acme/Big-30B-A3B"
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    (f,) = diagnose(load_run(run)).findings
    assert f.check == "moe_plain_grpo" and f.patch.variant == "GSPO"


def test_trl_eval_of_the_correctness_term_stands_in_for_held_out_accuracy(tmp_path: Path) -> None:
    history = []
    for r in _rows("reward_hacking"):
        if "eval/accuracy" in r:
            history.append({"step": r["step"], "eval_rewards/correct/mean": r["eval/accuracy"], "eval_loss": 0.0})
        else:
            history.append({k: v for k, v in r.items() if k != "time"})
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    (f,) = diagnose(load_run(tmp_path / "trainer_state.json")).findings
    assert f.check == "reward_hacking" and f.metric == "eval_rewards/correct/mean"


def test_a_checkpoint_folder_finds_its_runs_config_two_levels_up(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    ckpt = run / "checkpoints" / "checkpoint-12"
    ckpt.mkdir(parents=True)
    shutil.copy(TRL / "trainer_state.json", ckpt)
    assert load_run(ckpt).config_path == str(run / "config.yaml")
    other = tmp_path / "healthy" / "exports" / "x"
    other.mkdir(parents=True)
    shutil.copy(TRL / "trainer_state.json", other)
    assert load_run(other).config_path is None, "only a checkpoint folder looks above itself"


def test_a_run_that_failed_before_logging_says_why(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"status": "failed", "error": "TypeError: '<=' not supported"}))
    with pytest.raises(RunError, match=r"run.json says the run failed: TypeError"):
        load_run(tmp_path)


def test_real_run_with_a_learning_rate_too_high_is_a_collapse_not_a_hard_task() -> None:
    d = diagnose(load_run(REAL / "hot_lr_80"))
    assert [f.check for f in d.findings] == ["performance_collapse", "no_learning_signal"]
    collapse, no_signal = d.findings
    assert collapse.numbers["acc_peak"] == 0.395 and collapse.numbers["acc_last"] == 0.0
    assert collapse.numbers["grad_norm_peak_step"] == 9
    assert dict(collapse.patch.grpo) == {"learning_rate": 2e-4}
    assert "restart from the starting model" in collapse.suggestion
    assert "training itself removed the signal" in no_signal.suggestion and "SFT" not in no_signal.suggestion


def test_every_finding_the_fixtures_produce_is_listed_in_the_help() -> None:
    from rlvr.cli.doctor import EPILOG

    found = {f.check for d in sorted(SYN.iterdir()) for f in diagnose(load_run(d)).findings}
    listed = EPILOG.split("variants")[0]
    assert len(found) == 13
    assert all(name in listed for name in found)


_keys = st.sampled_from(
    [
        "step",
        "reward",
        "entropy",
        "kl",
        "grad_norm",
        "frac_reward_zero_std",
        "reward_std",
        "loss",
        "completions/mean_length",
        "completions/clipped_ratio",
        "clip_ratio/region_mean",
        "rewards/format/mean",
        "rewards/correct/mean",
        "rewards/correct/error_rate",
        "eval/accuracy",
        "eval/n",
        "eval/mean_length_incorrect",
        "time",
        "x",
    ]
)
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.lists(st.dictionaries(_keys, _values, max_size=8), max_size=25),
        # mostly well-formed: an integer step and numbers, so the checks themselves get exercised
        st.lists(
            st.fixed_dictionaries(
                {"step": st.integers(0, 40)},
                optional={
                    k: st.one_of(st.none(), st.floats(-1e6, 1e6), st.sampled_from([0.0, 1.0, math.nan, math.inf]))
                    for k in [
                        "reward",
                        "entropy",
                        "kl",
                        "grad_norm",
                        "frac_reward_zero_std",
                        "reward_std",
                        "loss",
                        "completions/mean_length",
                        "completions/clipped_ratio",
                        "clip_ratio/region_mean",
                        "rewards/format/mean",
                        "rewards/correct/mean",
                        "rewards/correct/error_rate",
                        "eval/accuracy",
                        "eval/n",
                        "eval/mean_length_incorrect",
                    ]
                },
            ),
            min_size=6,
            max_size=40,
        ),
    ),
    st.booleans(),
)
def test_arbitrary_metric_lines_give_a_diagnosis_or_a_clear_error(
    tmp_path: Path, rows: list[dict], with_config: bool
) -> None:
    # Adversarial input: whatever a log holds, the doctor either diagnoses it or raises one of
    # its own errors naming the problem; it never crashes with a traceback.
    from rlvr.errors import RlvrError

    run = tmp_path / "fuzz"
    run.mkdir(exist_ok=True)
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if with_config:
        shutil.copy(SYN / "healthy" / "config.yaml", run / "config.yaml")
    elif (run / "config.yaml").exists():
        (run / "config.yaml").unlink()
    try:
        r = load_run(run)
    except RlvrError:
        return
    d = diagnose(r)
    json.dumps(d.to_json())
    from rlvr.doctor import format_text

    format_text(d)


def test_kl_at_the_first_step_flags_dropout_only_when_step_1_was_logged(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["grpo"]["disable_dropout"] = False
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    rows = _rows("healthy")
    rows[1]["kl"] = 0.05  # rows[0] is the step-0 eval line
    _write_metrics(run, rows)
    (f,) = diagnose(load_run(run)).findings
    assert f.check == "kl_explosion" and dict(f.patch.grpo) == {"disable_dropout": True}
    _write_metrics(run, [r for r in rows if r["step"] % 10 == 0])  # logging_steps=10: a window average
    assert diagnose(load_run(run)).findings == ()


def test_real_slow_degradation_without_a_gradient_spike_is_still_a_collapse() -> None:
    d = diagnose(load_run(REAL / "warm_lr_100"))
    assert [f.check for f in d.findings] == ["performance_collapse", "no_learning_signal"]
    assert d.findings[0].numbers["acc_last"] == 0.1
    assert dict(d.findings[0].patch.grpo) == {"learning_rate": 5e-5}


def test_collapse_advice_names_the_checkpoint_at_the_held_out_peak(tmp_path: Path) -> None:
    run = _copy("collapse", tmp_path)
    rows = _rows("collapse")
    for r in rows:
        if r.get("step") == 20 and "eval/accuracy" in r:
            r["eval/accuracy"] = 0.6  # the peak is now mid-run, after updates
    _write_metrics(run, rows)
    (f,) = diagnose(load_run(run)).findings
    assert f.check == "performance_collapse" and f.numbers["acc_peak_step"] == 20
    assert "checkpoint nearest step 20" in f.suggestion


def test_entropy_collapse_with_every_lever_pulled_has_no_patch(tmp_path: Path) -> None:
    run = _copy("dapo_entropy_collapse", tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["grpo"].update(use_adaptive_entropy=True, entropy_target=0.5)
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    (f,) = diagnose(load_run(run)).findings
    assert f.check == "entropy_collapse" and f.patch is None
    assert "already on" in f.suggestion


def test_verifier_failing_only_at_the_end_of_a_long_run_is_found(tmp_path: Path) -> None:
    rows = [{"step": i, "reward": 0.5, "rewards/correct/error_rate": 1.0 if i > 480 else 0.0} for i in range(1, 501)]
    run = tmp_path / "long"
    run.mkdir()
    _write_metrics(run, rows)
    (f,) = diagnose(load_run(run)).findings
    assert f.check == "verifier_errors"
    assert f.numbers["mean"] < 0.05 and "over steps 401-500" in f.evidence


# ---- a broken reward is named before anything else (issue 14) --------------------------------
REAL = DATA / "real"


def test_a_run_whose_every_sample_was_masked_is_named_reward_broken_with_the_rollouts_evidence() -> None:
    d = diagnose(load_run(REAL / "reward_broken"))
    first = d.findings[0]
    assert first.check == "reward_broken" and first.patch is None
    assert "rewards/masked_rate averaged 100% over steps 3-5" in first.evidence
    assert "grad_norm was 0" in first.evidence
    assert "16 of 16 kept samples say term 'broken': ValueError: boom" in first.evidence
    assert "no_learning_signal" not in {f.check for f in d.findings}  # explained by the reward, not the prompts


def test_a_non_finite_reward_is_named_reward_broken_and_the_learning_rate_is_not_blamed(tmp_path: Path) -> None:
    d = diagnose(load_run(SYN / "reward_nonfinite"))
    assert [f.check for f in d.findings] == ["reward_broken"]
    assert "the reward is not a finite number: reward (step 31)" in d.findings[0].evidence
    assert "grad_norm, loss, reward_std went non-finite too" in d.findings[0].evidence
    with pytest.raises(ConfigError, match="reward_broken: its fix is not a config change"):
        write_patch(d, tmp_path / "p.yaml")


def test_a_reward_never_logged_by_a_plain_trl_run_is_reward_broken(tmp_path: Path) -> None:
    run = tmp_path / "trl"
    run.mkdir()
    _write_metrics(
        run,
        [
            {"step": s, "loss": 0.0, "grad_norm": 0.0, "reward": None, "reward_std": None, "frac_reward_zero_std": 0.0}
            for s in range(1, 8)
        ],
    )
    (f, *_) = diagnose(load_run(run)).findings
    assert f.check == "reward_broken" and "reward was never logged in 7 logged steps" in f.evidence


def test_an_eval_that_decided_nothing_is_evidence_of_a_broken_reward(tmp_path: Path) -> None:
    run = _copy("healthy", tmp_path)
    rows = _rows("healthy")
    for r in rows:
        if "eval/accuracy" in r and r["step"] >= 30:
            r.update({"eval/n": 0, "eval/masked": 200, "eval/accuracy": 0.0})
    _write_metrics(run, rows)
    f = diagnose(load_run(run)).findings[0]
    assert f.check == "reward_broken" and "held-out evals at steps 30, 40, 50, 60 decided no sample" in f.evidence


def test_a_partly_masked_run_is_not_reward_broken() -> None:
    assert "reward_broken" not in {f.check for f in diagnose(load_run(SYN / "verifier_errors")).findings}


# ---- dynamic sampling (rlvr.train.dynamic) ------------------------------------------------------------


def test_the_no_signal_patch_turns_on_the_online_filter_and_rlvr_train_reads_it(tmp_path: Path) -> None:
    from rlvr.settings import Layer, resolve
    from rlvr.settings.file import RunConfig
    from support.tasks import task_values

    run = _copy("no_signal", tmp_path)
    path, f = write_patch(diagnose(load_run(run)))
    assert f.check == "no_learning_signal" and "skips the solved prompts" in f.suggestion
    cfg = RunConfig.read(path)  # what rlvr train --config reads
    assert "dynamic" not in cfg.grpo, "not a GRPOConfig field"
    file = Layer("config file", cfg.grpo, cfg.stop, cfg.dynamic, where=f"{path}: ")
    assert resolve(task_values({}, {}), hw={}, above=[file]).dynamic.mode == "filter"


def test_no_signal_with_the_filter_already_on_has_no_patch(tmp_path: Path) -> None:
    run = _copy("no_signal", tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["rlvr"]["dynamic"] = {"mode": "filter", "visits": 2, "recheck_after": 20, "epsilon": 1e-6}
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    f = diagnose(load_run(run)).findings[0]
    assert f.check == "no_learning_signal" and f.patch is None and "already on" in f.suggestion


def _dynamic_rows(before: float, starved: float, solved: float, unsolved: float) -> list[dict]:
    return [
        {
            "step": s,
            "reward": 0.5,
            "reward_std": 0.3,
            "frac_reward_zero_std": 0.1,
            "grad_norm": 0.5,
            "dynamic/zero_std_before": before,
            "dynamic/starved_groups": starved,
            "dynamic/skipped_solved": solved,
            "dynamic/skipped_unsolved": unsolved,
        }
        for s in range(1, 21)
    ]


def test_a_filter_dropping_nearly_every_group_is_a_finding_of_its_own(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _write_metrics(run, _dynamic_rows(0.95, 1.0, 30, 2))
    (f,) = [f for f in diagnose(load_run(run)).findings if f.check == "dynamic_sampling_drops_nearly_all"]
    assert f.severity == "error" and "95%" in f.evidence and "too easy" in f.suggestion and f.patch is None
    assert "(filter) skipped" in f.evidence


def test_a_filter_dropping_nearly_all_unsolved_prompts_points_at_sft_and_without_starving_is_a_warning(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _write_metrics(run, _dynamic_rows(0.92, 0.0, 1, 40))
    (f,) = [f for f in diagnose(load_run(run)).findings if f.check == "dynamic_sampling_drops_nearly_all"]
    assert f.severity == "warning" and "SFT" in f.suggestion


def test_a_filter_dropping_a_few_groups_is_not_a_finding(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _write_metrics(run, _dynamic_rows(0.3, 0.0, 3, 2))
    assert "dynamic_sampling_drops_nearly_all" not in {f.check for f in diagnose(load_run(run)).findings}


def test_resample_finding_flat_groups_nearly_everywhere_says_resample_and_its_rounds(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _write_metrics(run, [{**r, "dynamic/rounds": 3.0} for r in _dynamic_rows(0.97, 2.0, 30, 2)])
    (f,) = [f for f in diagnose(load_run(run)).findings if f.check == "dynamic_sampling_drops_nearly_all"]
    assert "(resample) found flat 97%" in f.evidence and "3 generation rounds" in f.evidence
