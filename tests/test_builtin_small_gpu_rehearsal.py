"""bench/gpu_rehearsal.sh: parses, says so and exits 0 without a GPU, and its CPU dry run goes through every phase."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "gpu_rehearsal.sh"


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ,
        "WORK": str(tmp_path / "work"),
        "RLVR_CACHE": str(tmp_path / "cache"),
        "OUT": str(tmp_path / "out"),
        **env,
    }
    return subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=full, timeout=900)


def test_rehearsal_script_parses_with_bash_n() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


def test_without_a_gpu_it_says_so_writes_the_json_and_exits_0(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the no-GPU path does not run")
    res = _run(tmp_path, DRY_RUN="0")
    assert res.returncode == 0
    assert "no CUDA GPU visible" in res.stdout
    data = json.loads((tmp_path / "out" / "gpu_rehearsal.json").read_text())
    assert data["gpu"] is None and data["not_measured"]


@pytest.mark.slow
def test_cpu_dry_run_goes_through_every_phase_and_writes_the_figures(tmp_path: Path) -> None:
    res = _run(tmp_path, DRY_RUN="1")
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads((tmp_path / "out" / "gpu_rehearsal.json").read_text())
    phases = data["phases"]
    assert phases["build"]["params"] > 0
    assert phases["probe"]["completions"] == phases["probe"]["truncated"] > 0  # random weights never end
    for name, peft in (("grpo", "none"), ("lora", "lora")):
        assert phases[name]["peft"] == peft and phases[name]["steps"] == 2
        assert phases[name]["estimate_peak_gb"] > 0 and phases[name]["median_step_s"] > 0
    assert "two GPUs" in phases["server"]["skipped"]


def test_rehearsal_model_has_a_tokenizer_entry_for_every_row_it_can_sample(tmp_path: Path) -> None:
    import sys

    env = {**os.environ, "DRY_RUN": "1", "RLVR_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT / "src")}
    res = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu_rehearsal.py"), "build", str(tmp_path / "work")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    built = json.loads((tmp_path / "work" / "build.json").read_text())
    assert (
        built["tokenizer_entries"] == 151_936
    )  # Qwen2.5-0.5B's vocabulary rows, all decodable (vLLM detokenizes every sampled id)
    from rlvr.models import load_tokenizer

    tok = load_tokenizer(built["model"])
    assert tok.decode([151_935]) == "<unused_151935>"
    assert (
        tok("<answer>42</answer>", add_special_tokens=False)["input_ids"]
        == load_tokenizer("builtin:small")("<answer>42</answer>", add_special_tokens=False)["input_ids"]
    )
