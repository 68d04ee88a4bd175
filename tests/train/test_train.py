"""GRPO on TRL, end to end on the tiny model: parameters move, metrics are complete, resume works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rlvr.errors import ConfigError, GateError, RunError
from rlvr.settings.file import RunConfig
from rlvr.task import load_task
from rlvr.train import TrainOptions, train
from support.tasks import make_task


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def two_step_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    root = tmp_path_factory.mktemp("train")
    task = load_task(make_task(root / "task", shaping=True))
    result = train(
        task, TrainOptions(run_dir=root / "run", max_steps=2, no_gate_reason="unit test of the trainer", progress=False)
    )
    return root, result


def test_two_grpo_steps_change_the_parameters(two_step_run: tuple[Path, object]) -> None:
    import torch

    from rlvr.models import load_model

    root, result = two_step_run
    before = load_model("builtin:tiny")
    after = load_model(str(result.final_dir))  # type: ignore[attr-defined]
    changed = [
        n
        for (n, a), (_, b) in zip(before.named_parameters(), after.named_parameters(), strict=True)
        if not torch.equal(a, b)
    ]
    assert changed, "no parameter changed after 2 GRPO steps"


def test_metrics_have_every_term_and_the_error_rates(two_step_run: tuple[Path, object]) -> None:
    root, _ = two_step_run
    logs = [x for x in lines(root / "run" / "metrics.jsonl") if "reward" in x]
    assert [x["step"] for x in logs] == [1, 2]
    for term in ("format", "digits", "correct"):
        assert f"rewards/{term}/mean" in logs[0] and f"rewards/{term}/std" in logs[0]
        assert f"rewards/{term}/error_rate" in logs[0]
    for key in ("frac_reward_zero_std", "entropy", "completions/mean_length", "grad_norm", "rewards/masked_rate"):
        assert key in logs[0], key
    assert all(x["no_gate_reason"] == "unit test of the trainer" for x in logs)


def test_held_out_eval_is_logged_at_the_start_and_every_n_steps(two_step_run: tuple[Path, object]) -> None:
    root, result = two_step_run
    evals = [x for x in lines(root / "run" / "metrics.jsonl") if "eval/accuracy" in x]
    assert [x["step"] for x in evals] == [0, 2]
    assert all(x["eval/n"] == 8 for x in evals)


def test_resolved_config_states_every_recipe_value(two_step_run: tuple[Path, object]) -> None:
    from rlvr.settings.recipe import EXPLICIT_KEYS

    root, _ = two_step_run
    cfg = yaml.safe_load((root / "run" / "config.yaml").read_text())
    for key in EXPLICIT_KEYS:
        assert key in cfg["grpo"], key
    assert cfg["grpo"]["loss_type"] == "grpo" and cfg["grpo"]["learning_rate"] == 1e-3
    assert cfg["grpo"]["reward_weights"] == [0.1, 0.5, 1.0]
    assert cfg["rlvr"]["gate"]["status"] == "bypassed"
    assert cfg["rlvr"]["no_gate_reason"] == "unit test of the trainer"
    back = RunConfig.read(root / "run" / "config.yaml")
    assert back.grpo["num_generations"] == 8 and back.variant == "grpo"
    assert cfg["rlvr"]["reward_terms"] == ["format", "digits", "correct"]


def test_config_yaml_records_the_layer_each_value_came_from(two_step_run: tuple[Path, object]) -> None:
    root, _ = two_step_run
    origin = yaml.safe_load((root / "run" / "config.yaml").read_text())["rlvr"]["origin"]
    assert origin["learning_rate"] == "task" and origin["loss_type"] == "recipe"
    assert origin["max_steps"] == "rlvr train" and origin["reward_weights"] == "task rewards"
    assert origin["stop.masked_rate"] == "recipe"


def test_training_refuses_to_start_without_a_gate(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    with pytest.raises(GateError):
        train(task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, progress=False))
    assert not (tmp_path / "run").exists()


def test_an_unknown_grpo_key_is_refused_before_loading(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task", extra={"grpo": {"learning_rat": 1e-3}}))
    with pytest.raises(ConfigError, match="did you mean 'learning_rate'"):
        train(task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="test", progress=False))


def test_an_existing_run_is_not_overwritten(two_step_run: tuple[Path, object]) -> None:
    root, _ = two_step_run
    task = load_task(root / "task" / "task.yaml")
    with pytest.raises(RunError, match="--resume"):
        train(task, TrainOptions(run_dir=root / "run", max_steps=2, no_gate_reason="test", progress=False))


def test_resume_continues_from_the_checkpoint(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task", shaping=True))
    run = tmp_path / "run"
    opts = TrainOptions(run_dir=run, max_steps=2, no_gate_reason="resume test", progress=False, eval_every=0)
    train(task, opts)
    assert (run / "checkpoints" / "checkpoint-2").exists()
    # Simulate an interruption after the checkpoint: a log line for a step that was never saved.
    with (run / "metrics.jsonl").open("a") as fh:
        fh.write(json.dumps({"step": 3, "reward": 0.0}) + "\n")
    result = train(
        task,
        TrainOptions(run_dir=run, max_steps=4, resume=True, no_gate_reason="resume test", progress=False, eval_every=0),
    )
    assert result.steps == 4
    steps = [x["step"] for x in lines(run / "metrics.jsonl") if "reward" in x]
    assert steps == [1, 2, 3, 4]
    assert json.loads((run / "metrics.replaced.jsonl").read_text().splitlines()[0])["step"] == 3
    assert json.loads((run / "run.json").read_text())["resumed_from"].endswith("checkpoint-2")


def test_resume_without_checkpoints_is_a_clear_error(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    with pytest.raises(RunError, match="nothing to resume"):
        train(task, TrainOptions(run_dir=tmp_path / "run", resume=True, no_gate_reason="test", progress=False))


def test_recipe_validation_runs_before_anything_loads(tmp_path: Path) -> None:
    task = load_task(
        make_task(
            tmp_path / "task",
            extra={
                "grpo": {
                    "num_generations": 4,
                    "per_device_train_batch_size": 6,
                    "gradient_accumulation_steps": 1,
                    "beta": 0.0,
                }
            },
        )
    )
    with pytest.raises(ConfigError) as info:
        train(task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="test", progress=False))
    text = str(info.value)
    assert "below the recipe's floor" in text and "not divisible by num_generations" in text
    assert not (tmp_path / "run").exists()


def test_a_written_justification_lets_a_small_group_through(tmp_path: Path) -> None:
    grpo = {
        "num_generations": 4,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1,
        "beta": 0.0,
        "justify": {"num_generations": "tiny smoke test"},
    }
    task = load_task(make_task(tmp_path / "task", shaping=True, extra={"grpo": grpo}))
    train(
        task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="test", progress=False, eval_every=0)
    )
    cfg = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert cfg["grpo"]["num_generations"] == 4
    assert cfg["rlvr"]["justification"] == {"num_generations": "tiny smoke test"}


def test_lora_trains_an_adapter_and_saves_a_merged_model(tmp_path: Path) -> None:
    import torch

    from rlvr.models import load_model

    task = load_task(make_task(tmp_path / "task", shaping=True))
    result = train(
        task,
        TrainOptions(
            run_dir=tmp_path / "run", max_steps=2, no_gate_reason="lora test", progress=False, eval_every=2, peft="lora"
        ),
    )
    final = result.final_dir
    assert (final / "adapter" / "adapter_config.json").exists()
    merged, base = load_model(str(final)), load_model("builtin:tiny")
    changed = {
        n
        for (n, a), (_, b) in zip(merged.named_parameters(), base.named_parameters(), strict=True)
        if not torch.equal(a, b)
    }
    assert changed and all("proj" in n for n in changed)  # only LoRA-wrapped linear layers moved
    cfg = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert cfg["rlvr"]["peft"]["method"] == "lora" and cfg["rlvr"]["peft"]["r"] == 16


def test_qlora_on_cpu_is_refused_with_the_reason(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    with pytest.raises(ConfigError, match="CUDA GPU"):
        train(
            task,
            TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="test", progress=False, peft="qlora"),
        )


def test_a_plan_that_chose_lora_is_trained_with_lora(tmp_path: Path) -> None:
    from rlvr.settings.file import ConfigMeta, write_config

    task = load_task(make_task(tmp_path / "task", shaping=True))
    grpo = RunConfig.read(_write_run_config(tmp_path, task)).grpo
    plan = write_config(tmp_path / "plan.yaml", grpo, ConfigMeta(peft="lora"))
    train(
        task,
        TrainOptions(
            run_dir=tmp_path / "run",
            config_path=plan,
            max_steps=1,
            no_gate_reason="plan test",
            progress=False,
            eval_every=0,
        ),
    )
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["rlvr"]["peft"]["method"] == "lora"


def _write_run_config(tmp_path: Path, task) -> Path:
    """The grpo values a CPU run of ``task`` resolves to, as a flat config."""
    from rlvr.settings import hardware
    from rlvr.train import layered_settings

    cfg = layered_settings(task, TrainOptions(run_dir=tmp_path / "x"), hardware()).grpo
    cfg.pop("output_dir")
    path = tmp_path / "resolved.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


# -- fail loud (issue 14) ---------------------------------------------------------------------
BROKEN = """
def boom(completions, **kwargs):
    raise ValueError("boom: the reward cannot read its ground truth")
"""


def _broken_task(folder: Path, **extra) -> Path:
    """A task whose second term always raises: every sample is masked."""
    path = make_task(folder, shaping=True, extra=extra)
    (folder / "broken.py").write_text(BROKEN)
    spec = yaml.safe_load(path.read_text())
    spec["rewards"].insert(2, {"name": "broken", "verifier": "broken.boom", "weight": 1.0})
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_a_reward_that_always_raises_stops_the_run_with_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.cli.main import main

    task = _broken_task(
        tmp_path / "task",
        grpo={
            "learning_rate": 1e-3,
            "per_device_train_batch_size": 16,
            "gradient_accumulation_steps": 1,
            "num_generations": 8,
            "beta": 0.0,
            "stop": {"masked_steps": 2},
        },
    )
    code = main(
        [
            "train",
            str(task),
            "--run-dir",
            str(tmp_path / "run"),
            "--max-steps",
            "6",
            "--no-gate",
            "test",
            "--eval-every",
            "0",
            "--no-progress",
        ]
    )
    err_lines = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err_lines[0].startswith("GRPO step 1/6: ")  # --no-progress: a line per log step, not a bar
    err = "\n".join(x for x in err_lines if not x.startswith("GRPO step "))
    assert len(err.splitlines()) == 1
    assert (
        "stopped at step 2: every sample was masked" in err
        and "16 of 16 kept samples say term 'broken': ValueError: boom: the reward cannot read its ground truth" in err
    )
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "stopped" and meta["steps"] == 2
    assert not (tmp_path / "run" / "final").exists()
    assert any(x.get("event") == "stopped" for x in lines(tmp_path / "run" / "metrics.jsonl"))


def test_groups_without_reward_variance_for_n_steps_stop_the_run(tmp_path: Path) -> None:
    from rlvr.train import RunStopped

    # format + exact on the untrained tiny model: every group is all-wrong, so zero variance.
    grpo = {
        "learning_rate": 1e-3,
        "per_device_train_batch_size": 16,
        "gradient_accumulation_steps": 1,
        "num_generations": 8,
        "beta": 0.0,
        "stop": {"zero_std_steps": 2},
    }
    task = load_task(make_task(tmp_path / "task", extra={"grpo": grpo}))
    with pytest.raises(RunStopped, match="zero reward variance for 2 logging steps in a row"):
        train(
            task,
            TrainOptions(run_dir=tmp_path / "run", max_steps=5, no_gate_reason="test", progress=False, eval_every=0),
        )


def test_stop_thresholds_come_from_the_recipe_and_are_recorded(two_step_run: tuple[Path, object]) -> None:
    from rlvr.settings.recipe import STOP

    root, _ = two_step_run
    cfg = yaml.safe_load((root / "run" / "config.yaml").read_text())
    assert cfg["rlvr"]["stop"] == STOP


def test_a_rule_with_zero_steps_never_stops() -> None:
    from rlvr.train import StopRules, StopWatch

    watch = StopWatch(StopRules(0.5, 0, 1.0, 0))
    assert all(watch.update(s, {"rewards/masked_rate": 1.0, "frac_reward_zero_std": 1.0}) is None for s in range(1, 50))


def test_an_eval_that_decides_no_sample_is_an_error(tmp_path: Path) -> None:
    path = _broken_task(tmp_path / "task", success="broken")
    with pytest.raises(
        RunError,
        match=r"held-out eval at step 0: the success term could not decide any of the 8 samples \(all masked: .*boom",
    ):
        train(
            load_task(path),
            TrainOptions(run_dir=tmp_path / "run", max_steps=2, no_gate_reason="test", progress=False, eval_every=2),
        )


def test_the_eval_line_reports_masked_beside_the_accuracy() -> None:
    from rlvr.evaluate import EvalResult

    res = EvalResult(
        accuracy=5 / 9,
        correct=5,
        n=9,
        masked=3,
        mean_length=4.0,
        mean_length_correct=None,
        mean_length_incorrect=None,
        temperature=0.0,
    )
    assert res.summary() == "55.6% (5 correct of 9 decided, 3 masked)"
    assert res.metrics()["eval/prompts"] == 12


def test_the_cli_summary_reports_masked_eval_samples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rlvr.cli.main import main

    task = make_task(tmp_path / "task", shaping=True)
    assert (
        main(
            [
                "train",
                str(task),
                "--run-dir",
                str(tmp_path / "run"),
                "--max-steps",
                "1",
                "--no-gate",
                "test",
                "--eval-every",
                "1",
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "held-out accuracy 0.0% (0 correct of 8 decided, 0 masked)" in out


# -- checkpoints and resume -------------------------------------------------------------------
def _cut_off(ckpt: Path) -> None:
    """What kill -9 during a save leaves: three files of the usual set, no marker."""
    keep = {"config.json", "generation_config.json", "model.safetensors"}
    for f in ckpt.iterdir():
        if f.name not in keep:
            f.unlink() if f.is_file() else __import__("shutil").rmtree(f)


def test_checkpoints_are_marked_complete_once_saved(two_step_run: tuple[Path, object]) -> None:
    root, _ = two_step_run
    marker = json.loads((root / "run" / "checkpoints" / "checkpoint-2" / "rlvr-complete.json").read_text())
    assert marker["step"] == 2 and marker["elapsed"] > 0


def test_resume_skips_a_checkpoint_cut_off_while_saving_and_says_so(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task", shaping=True))
    run = tmp_path / "run"
    train(task, TrainOptions(run_dir=run, max_steps=4, no_gate_reason="resume test", progress=False, eval_every=0))
    _cut_off(run / "checkpoints" / "checkpoint-4")
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "status": "running"}))  # killed: never finished
    __import__("shutil").rmtree(run / "final")
    result = train(
        task,
        TrainOptions(run_dir=run, max_steps=4, resume=True, no_gate_reason="resume test", progress=False, eval_every=0),
    )
    assert result.resumed_from is not None and result.resumed_from.name == "checkpoint-2"
    assert [p.name for p in result.skipped] == ["checkpoint-4"]
    assert (run / "checkpoints" / "incomplete-checkpoint-4").is_dir()
    assert (run / "checkpoints" / "checkpoint-4" / "rlvr-complete.json").exists()  # saved again, whole
    assert result.steps == 4 and (run / "final" / "config.json").exists()


def test_resume_with_only_incomplete_checkpoints_names_them(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    ckpt = tmp_path / "run" / "checkpoints" / "checkpoint-2"
    ckpt.mkdir(parents=True)
    (ckpt / "model.safetensors").write_bytes(b"")
    (ckpt / "trainer_state.json").write_text("{")  # torn
    with pytest.raises(RunError, match="nothing to resume .*found only incomplete ones: checkpoint-2"):
        train(task, TrainOptions(run_dir=tmp_path / "run", resume=True, no_gate_reason="test", progress=False))


def test_resume_on_a_finished_run_trains_nothing_and_keeps_final(
    two_step_run: tuple[Path, object], capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.cli.main import main

    root, _ = two_step_run
    final = root / "run" / "final"
    before = {p.name: p.stat().st_mtime_ns for p in final.iterdir()}
    metrics = (root / "run" / "metrics.jsonl").read_text()
    code = main(
        [
            "train",
            str(root / "task" / "task.yaml"),
            "--run-dir",
            str(root / "run"),
            "--resume",
            "--max-steps",
            "2",
            "--no-gate",
            "test",
            "--no-progress",
        ]
    )
    assert code == 0
    assert "already finished at step 2" in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in final.iterdir()} == before
    assert (root / "run" / "metrics.jsonl").read_text() == metrics


def refuse_writing_the_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the run folder's lock file one this process cannot open for writing (CI runs as root,
    which writes anywhere: the folder's refusal is simulated where the lock file is opened)."""
    import os

    from rlvr.train.rundir import LOCK

    real_open = os.open

    def read_only(path: object, flags: int, *args: object) -> int:
        if str(path).endswith(LOCK) and flags & (os.O_RDWR | os.O_WRONLY | os.O_CREAT):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", read_only)


def test_resume_on_a_finished_run_in_a_folder_it_cannot_write_says_already_finished(
    two_step_run: tuple[Path, object], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # It failed on opening the lock file for writing, with a one-line OS error.
    from rlvr.cli.main import main

    root, _ = two_step_run
    refuse_writing_the_lock(monkeypatch)
    args = ["train", str(root / "task" / "task.yaml"), "--run-dir", str(root / "run"), "--resume"]
    code = main([*args, "--max-steps", "2", "--no-gate", "test", "--no-progress"])
    assert code == 0
    assert "already finished at step 2" in capsys.readouterr().out


def test_a_lock_opened_read_only_is_still_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from rlvr.train.rundir import claimed

    with claimed(tmp_path):  # this session holds the folder, its lock file written
        refuse_writing_the_lock(monkeypatch)
        with pytest.raises(RunError, match=rf"in use by another rlvr train \(pid {os.getpid()}\)"):
            with claimed(tmp_path):
                pass


def test_times_continue_across_a_resume(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task", shaping=True))
    run = tmp_path / "run"
    first = train(task, TrainOptions(run_dir=run, max_steps=2, no_gate_reason="t", progress=False, eval_every=0))
    second = train(
        task, TrainOptions(run_dir=run, max_steps=4, resume=True, no_gate_reason="t", progress=False, eval_every=0)
    )
    times = {x["step"]: x["time"] for x in lines(run / "metrics.jsonl") if "reward" in x}
    marker = json.loads((run / "checkpoints" / "checkpoint-2" / "rlvr-complete.json").read_text())
    assert times[3] >= marker["elapsed"] >= times[2]
    # The summary carries the first session's time (from the checkpoint it resumed), not only the
    # second session's: a property of the bookkeeping, not of how long either session took.
    assert marker["elapsed"] <= min(first.seconds, second.seconds)
    meta = json.loads((run / "run.json").read_text())
    assert (
        len(meta["sessions"]) == 2
        and meta["sessions"][1]["from_step"] == 2
        and meta["seconds"] == pytest.approx(second.seconds, abs=0.05)
    )
    events = [x for x in lines(run / "metrics.jsonl") if x.get("event") == "resume"]
    assert events == [{**events[0], "step": 2, "event": "resume", "resumed_from": "checkpoint-2", "skipped": []}]


def test_resume_reads_the_model_from_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19: after SFT, `rlvr train task.yaml --resume` checked the gate against the task's model."""
    import sys

    train_mod = sys.modules["rlvr.train"]  # the package exports a function of the same name
    task = load_task(make_task(tmp_path / "task"))
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(
        yaml.safe_dump({"grpo": {}, "rlvr": {"model": "/abs/sft-out", "model_arg": "sft-out"}})
    )
    seen = []

    def fake_gate(task, opts):
        seen.append(opts.model)
        raise GateError("stop here")

    monkeypatch.setattr(train_mod, "enforce_gate", fake_gate)
    with pytest.raises(GateError):
        train(task, TrainOptions(run_dir=run, resume=True))
    assert seen == ["sft-out"]
    with pytest.raises(ConfigError, match="not the model this run started from"):
        train(task, TrainOptions(run_dir=run, resume=True, model="another-model"))


def test_a_run_and_its_final_model_record_the_rows_it_trained_on(two_step_run: tuple[Path, object]) -> None:
    from rlvr.data import row_key, trained_rows_of

    root, _ = two_step_run
    task = load_task(root / "task" / "task.yaml")
    rows = task.load_split("train")
    # Two steps of 2 prompts reach a few of the 16 rows: exactly the ones whose prompts were scored.
    kept = [json.loads(line) for f in sorted((root / "run" / "rollouts").glob("*.jsonl")) for line in f.open()]
    scored = {row_key(r) for r in rows if task.render_prompt(r) in {k["prompt"] for k in kept}}
    for folder in (root / "run", root / "run" / "final"):
        record = trained_rows_of(folder)
        assert record is not None and record.sources == ("grpo",)
        assert scored and scored <= record.keys < {row_key(r) for r in rows}


def test_a_prompt_the_run_cannot_place_counts_every_row_as_seen(tmp_path: Path) -> None:
    from rlvr.data import row_key, trained_rows_of
    from rlvr.train.launch import SeenRows

    task = load_task(make_task(tmp_path / "task"))
    rows = task.load_split("train")
    seen = SeenRows(task, rows, tmp_path, None)
    assert trained_rows_of(tmp_path).keys == frozenset()  # type: ignore[union-attr]
    (noted,) = seen.wrap([lambda **kw: [1.0] * len(kw["prompts"])])
    noted(prompts=[task.render_prompt(rows[3])] * 2)
    assert trained_rows_of(tmp_path).keys == {row_key(rows[3])}  # type: ignore[union-attr]
    noted(prompts=["a prompt no row renders to"])
    assert trained_rows_of(tmp_path).keys == {row_key(r) for r in rows}  # type: ignore[union-attr]
    whole = tmp_path / "whole"
    SeenRows(task, rows, whole, None, whole=True)
    assert trained_rows_of(whole).keys == {row_key(r) for r in rows}  # type: ignore[union-attr]


def test_a_value_of_the_wrong_type_is_refused_before_the_model_loads(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    opts = TrainOptions(
        run_dir=tmp_path / "run", overrides={"learning_rate": "fast"}, no_gate_reason="test", progress=False
    )
    with pytest.raises(ConfigError, match=r"--set learning_rate: 'fast' is not a number"):
        train(task, opts)
    assert not (tmp_path / "run" / "final").exists()


def test_a_run_records_the_model_it_started_from(two_step_run: tuple[Path, object]) -> None:
    root, _ = two_step_run
    assert yaml.safe_load((root / "run" / "config.yaml").read_text())["rlvr"]["model_arg"] == "builtin:tiny"


# -- rollouts ---------------------------------------------------------------------------------
def test_each_logging_step_keeps_a_bounded_sample_of_rollouts_with_every_verdict(
    two_step_run: tuple[Path, object],
) -> None:
    from rlvr import keptrollouts as rollouts

    root, _ = two_step_run
    rows = list(rollouts.read(root / "run"))
    assert rollouts.steps(root / "run") == [1, 2]
    for step in (1, 2):
        at = rollouts.at_step(root / "run", step)
        assert len(at) == rollouts.PER_STEP
        assert {r["rollout"]["group"] for r in at} == {0, 1}  # whole groups of 8
    first = rows[0]
    assert set(first["scores"]) == {"format", "digits", "correct"}
    assert first["answer"] and isinstance(first["completion"], str) and "masked" in first and "reward" in first


def test_rlvr_score_reads_the_kept_rollouts(two_step_run: tuple[Path, object], tmp_path: Path) -> None:
    from rlvr.rewards.scoring import score_file

    root, _ = two_step_run
    task = load_task(root / "task" / "task.yaml")
    summary = score_file(root / "run" / "rollouts" / "rollouts.jsonl", task.reward_set(), out=tmp_path / "scored.jsonl")
    assert summary.rows == 2 * 16 and summary.masked == 0


def test_a_finished_run_is_recognised_by_its_step_target(tmp_path: Path) -> None:
    from rlvr.train.rundir import run_finished

    (tmp_path / "final").mkdir()
    done = {"status": "done", "steps": 40, "max_steps": 40}
    assert run_finished(done, 40, tmp_path / "final") and run_finished(done, -1, tmp_path / "final")
    assert not run_finished(done, 60, tmp_path / "final")  # a higher --max-steps trains further
    assert not run_finished({**done, "status": "stopped"}, 40, tmp_path / "final")
    assert not run_finished(done, 40, tmp_path / "missing")


def test_stop_thresholds_in_a_config_file_are_read_from_either_form(tmp_path: Path) -> None:
    run_form = tmp_path / "run.yaml"
    run_form.write_text(yaml.safe_dump({"grpo": {"learning_rate": 1e-3}, "rlvr": {"stop": {"masked_steps": 3}}}))
    flat = tmp_path / "plan.yaml"
    flat.write_text(
        yaml.safe_dump({"env": {"RLVR_VARIANT": "grpo", "RLVR_STOP_ZERO_STD_STEPS": "0"}, "learning_rate": 1e-3})
    )
    assert RunConfig.read(run_form).stop == {"masked_steps": 3}
    assert RunConfig.read(flat).stop == {"zero_std_steps": 0}


def test_a_stopped_run_without_checkpoints_is_not_offered_a_resume(tmp_path: Path) -> None:
    grpo = {
        "learning_rate": 1e-3,
        "per_device_train_batch_size": 16,
        "gradient_accumulation_steps": 1,
        "num_generations": 8,
        "beta": 0.0,
        "stop": {"masked_steps": 1},
    }
    task = load_task(_broken_task(tmp_path / "task", grpo=grpo))
    opts = TrainOptions(run_dir=tmp_path / "run", max_steps=3, no_gate_reason="test", progress=False, eval_every=0)
    with pytest.raises(RunError, match="stopped at step 1"):
        train(task, opts)
    with pytest.raises(RunError, match=r"already holds a run \(status stopped\) with no complete checkpoint to resume"):
        train(task, opts)


@pytest.mark.slow
def test_under_two_processes_a_reward_broken_on_one_rank_stops_both(tmp_path: Path) -> None:
    """A stop on one process only would leave the other waiting in the next collective forever.
    Measured ~30 s on 2 CPU cores (accelerate, gloo)."""
    import os
    import subprocess
    import sys

    grpo = {
        "learning_rate": 1e-3,
        "per_device_train_batch_size": 16,
        "gradient_accumulation_steps": 1,
        "num_generations": 8,
        "beta": 0.0,
        "stop": {"masked_steps": 2},
    }
    path = make_task(tmp_path / "task", shaping=True, extra={"grpo": grpo})
    (tmp_path / "task" / "rankbroken.py").write_text(
        "import os\n\ndef boom(completions, **kwargs):\n    if os.environ.get('RANK', '0') == '1':\n"
        "        raise ValueError('boom on rank 1')\n    return [0.0] * len(completions)\n"
    )
    spec = yaml.safe_load(path.read_text())
    spec["rewards"].insert(2, {"name": "rankbroken", "verifier": "rankbroken.boom", "weight": 1.0})
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.cli.main",
            "train",
            str(path),
            "--run-dir",
            str(run),
            "--max-steps",
            "6",
            "--no-gate",
            "distributed stop",
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
        timeout=300,
    )
    assert proc.returncode != 0
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "stopped" and meta["steps"] == 2
    assert [x["rewards/masked_rate"] for x in lines(run / "metrics.jsonl") if "reward" in x] == [
        0.5,
        0.5,
    ]  # the mean over both processes


KILLED_MID_SAVE = """
import os, signal, sys
from pathlib import Path
import transformers
from rlvr.task import load_task
from rlvr.train import TrainOptions, train

save_rng = transformers.Trainer._save_rng_state

def dying(self, output_dir):  # the weights and optimizer of checkpoint-4 are on disk, the rest is not
    if self.state.global_step == 4:
        os.kill(os.getpid(), signal.SIGKILL)
    return save_rng(self, output_dir)

transformers.Trainer._save_rng_state = dying
opts = TrainOptions(run_dir=Path(sys.argv[2]), max_steps=6, no_gate_reason="kill -9 test", progress=False, eval_every=0)
train(load_task(sys.argv[1]), opts)
"""


@pytest.mark.slow
def test_a_run_killed_with_sigkill_mid_save_resumes_from_the_last_complete_checkpoint(tmp_path: Path) -> None:
    """Issue 14: a checkpoint cut off by kill -9 made --resume fail with a raw FileNotFoundError.
    A real SIGKILL in the middle of the Trainer's save (~30 s on 2 shared cores; the fast version
    cuts a checkpoint's files by hand: test_resume_skips_a_checkpoint_cut_off_while_saving_and_says_so)."""
    import os
    import subprocess
    import sys

    task_path = make_task(tmp_path / "task", shaping=True)
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_MID_SAVE, str(task_path), str(run)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -9, proc.stderr[-2000:]
    cut = run / "checkpoints" / "checkpoint-4"
    assert cut.is_dir() and not (cut / "trainer_state.json").exists() and not (cut / "rlvr-complete.json").exists()
    result = train(
        load_task(task_path),
        TrainOptions(
            run_dir=run, max_steps=6, resume=True, no_gate_reason="kill -9 test", progress=False, eval_every=0
        ),
    )
    assert result.resumed_from is not None and result.resumed_from.name == "checkpoint-2"
    assert [p.name for p in result.skipped] == ["checkpoint-4"] and result.steps == 6


# -- one run config (issue 18) ------------------------------------------------------------------
def test_a_runs_own_config_passed_back_as_config_reproduces_its_settings(tmp_path: Path) -> None:
    first = {
        "num_generations": 4,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1,
        "beta": 0.0,
        "justify": {"num_generations": "tiny smoke test"},
        "stop": {"masked_steps": 7},
        "dynamic": {"mode": "filter", "visits": 3, "recheck_after": 5},
    }
    source = load_task(make_task(tmp_path / "a", shaping=True, extra={"grpo": first}))
    plain = load_task(make_task(tmp_path / "b", shaping=True))  # none of the above: all from the config
    common = {"max_steps": 1, "no_gate_reason": "config round trip", "progress": False, "eval_every": 0}
    train(source, TrainOptions(run_dir=tmp_path / "one", peft="lora", overrides={"learning_rate": 2e-3}, **common))
    train(plain, TrainOptions(run_dir=tmp_path / "two", config_path=tmp_path / "one" / "config.yaml", **common))
    one, two = (yaml.safe_load((tmp_path / run / "config.yaml").read_text()) for run in ("one", "two"))
    assert {k: v for k, v in one["grpo"].items() if k != "output_dir"} == {
        k: v for k, v in two["grpo"].items() if k != "output_dir"
    }
    for key in ("variant", "peft", "stop", "dynamic", "justification"):
        assert one["rlvr"][key] == two["rlvr"][key], key
    assert two["rlvr"]["peft"]["method"] == "lora" and two["grpo"]["learning_rate"] == 2e-3
    assert two["rlvr"]["stop"]["masked_steps"] == 7 and two["rlvr"]["dynamic"]["visits"] == 3


def test_a_malformed_config_is_refused_naming_the_file_and_the_key(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    bad = tmp_path / "config.yaml"
    for rlvr, where in (({"stop": [5]}, "rlvr.stop"), ({"stop": {"masked_steps": -1}}, "stop.masked_steps")):
        bad.write_text(yaml.safe_dump({"grpo": {"learning_rate": 1e-3}, "rlvr": rlvr}))
        with pytest.raises(ConfigError, match=rf"config\.yaml: {where}"):
            train(
                task,
                TrainOptions(
                    run_dir=tmp_path / "run", config_path=bad, max_steps=1, no_gate_reason="t", progress=False
                ),
            )
    assert not (tmp_path / "run").exists()


def test_a_task_with_eval_samples_logs_pass_at_1_and_pass_at_k_beside_greedy(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task", shaping=True, extra={"eval": {"samples": 3}}))
    train(
        task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="test", progress=False, eval_every=1)
    )
    evals = [x for x in lines(tmp_path / "run" / "metrics.jsonl") if "eval/accuracy" in x]
    assert [x["step"] for x in evals] == [0, 1]
    for x in evals:
        assert x["eval/samples"] == x["eval/k"] == 3 and x["eval/temperature"] == task.generation.temperature
        assert x["eval/pass@1_low"] <= x["eval/pass@1"] <= x["eval/pass@1_high"]
