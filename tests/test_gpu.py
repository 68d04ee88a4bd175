"""The GPU path, opt-in: ``pytest -m gpu`` on a machine with CUDA (skipped without one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.tasks import make_task

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_hardware_reports_the_gpu_and_its_bf16() -> None:
    from rlvr.settings.recipe import hardware

    hw = hardware()
    assert hw["gpus"] == torch.cuda.device_count() >= 1
    assert hw["bf16"] == torch.cuda.is_bf16_supported()


def test_held_out_eval_runs_on_the_gpu(tmp_path: Path) -> None:
    from rlvr.evaluate import evaluate
    from rlvr.models import load_model, load_tokenizer, resolve_model
    from rlvr.task import load_task

    task = load_task(make_task(tmp_path))
    ref = resolve_model(task.model)
    model = load_model(ref, device="cuda")
    assert next(model.parameters()).device.type == "cuda"
    rows = task.load_split("eval")
    res = evaluate(model, load_tokenizer(ref), task, rows, seed=0)
    assert res.n + res.masked == len(rows)


def test_a_grpo_step_runs_on_the_gpu(tmp_path: Path) -> None:
    from rlvr.task import load_task
    from rlvr.train import TrainOptions, train

    task = load_task(make_task(tmp_path / "task"))
    result = train(
        task,
        TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="gpu test", progress=False, eval_every=0),
    )
    assert result.steps == 1 and (result.final_dir / "config.json").exists()
