#!/usr/bin/env bash
# Check the memory planner against a real GRPO run on an NVIDIA GPU with no internet.
#
# What it runs (each a few GRPO steps through rlvr's own train(), the gate bypassed with a reason):
#   1. the built-in tiny task (builtin:tiny, arithmetic prompts);
#   2. a Qwen2.5-0.5B-shaped model (24 layers, hidden 896, 14 heads / 2 KV heads, vocabulary
#      151,936, tied embeddings) built locally with random weights -- nothing is downloaded --
#      with the character tokenizer of the built-in models. Random weights rarely emit EOS, so
#      every completion runs to MAX_NEW tokens: the memory is that of full-length completions.
# For each it prints the measured median step time, the peak GPU memory (device-wide, polled
# with torch.cuda.mem_get_info every 50 ms, so vLLM's share is included) and torch's peak
# allocation, beside the planner's estimate for the same setting (rlvr.plan.memory.estimate).
# vLLM is colocated when it is installed; without it generation runs in transformers and the
# estimate is made with no vLLM share -- the script says which.
#
# It never fails for a missing GPU: without CUDA it prints "not measured: ..." and runs the tiny
# task for STEPS steps on the CPU instead, so the script itself stays tested.
#
# Settings (environment): PYTHON (default .venv/bin/python, else python3), STEPS (5), MAX_NEW
# (256, the 0.5B-shaped model), BATCH (8 completions per device), BIG (1; 0 skips the 0.5B-shaped
# model), BIG_ON_CPU (0; 1 runs it on the CPU anyway, to check the script), OUT (a temp folder).
# Usage: bash bench/gpu_plan.sh
set -uo pipefail
cd "$(dirname "$0")/.."

pick_python() {
    for py in "${PYTHON:-}" .venv/bin/python python3; do
        [ -n "$py" ] || continue
        if command -v "$py" >/dev/null 2>&1 && "$py" -c "import torch, transformers, trl, yaml" >/dev/null 2>&1; then
            echo "$py"
            return 0
        fi
    done
    return 1
}

PY=$(pick_python) || { echo "gpu_plan: no Python with torch, transformers and trl found (set PYTHON=...)"; echo "not measured: everything"; exit 0; }
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
export RLVR_CACHE="${RLVR_CACHE:-$OUT/cache}" TRL_EXPERIMENTAL_SILENCE=1
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
else
    echo "gpu: nvidia-smi not found"
fi
echo "python: $PY   out: $OUT"

"$PY" - "$OUT" <<'PYEOF' 2>&1 | grep -v -E "Warning|warnings.warn|^\s*$"
import json, os, statistics, sys, threading, time
from dataclasses import replace
from pathlib import Path

out = Path(sys.argv[1])
steps = int(os.environ.get("STEPS", "5"))
max_new = int(os.environ.get("MAX_NEW", "256"))
batch = int(os.environ.get("BATCH", "8"))
want_big = os.environ.get("BIG", "1") != "0"
big_on_cpu = os.environ.get("BIG_ON_CPU", "0") == "1"

import importlib.util
import torch
import yaml

from rlvr.plan import architecture, memory
from rlvr.settings.recipe import hardware
from rlvr.task import load_task
from rlvr.train import TrainOptions, train

cuda = torch.cuda.is_available()
hw = hardware()
has_vllm = importlib.util.find_spec("vllm") is not None
print(f"torch {torch.__version__}, cuda {cuda}, bf16 {hw['bf16']}, vllm {'installed' if has_vllm else 'not installed'}")
if not cuda:
    print("not measured: GPU step time and memory (no CUDA device); running the tiny task on the CPU instead")
elif not has_vllm:
    print("note: vLLM is not installed here, so generation runs in transformers and the estimates below carry no vLLM share")
gpu_gb = torch.cuda.get_device_properties(0).total_memory / 1e9 if cuda else 0.0


class PeakMemory:
    """Device-wide used memory, polled: includes vLLM's pool, which torch's counters miss."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            free, total = torch.cuda.mem_get_info()
            self.peak = max(self.peak, total - free)
            time.sleep(0.05)

    def __enter__(self):
        if cuda:
            torch.cuda.reset_peak_memory_stats()
            self.base = torch.cuda.mem_get_info()[1] - torch.cuda.mem_get_info()[0]
            self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if cuda:
            self._t.join()


ARITH = Path("examples/arithmetic")


def task_copy(name: str, model: str, completion: int) -> Path:
    raw = yaml.safe_load((ARITH / "task.yaml").read_text())
    raw["data"] = {"train": str((ARITH / "train.jsonl").resolve()), "eval": str((ARITH / "eval.jsonl").resolve())}
    raw["model"] = model
    raw.setdefault("generation", {})["max_completion_length"] = completion
    path = out / name / "task.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw))
    return path


def run(label: str, task_path: Path, overrides: dict, arch: architecture.Architecture) -> None:
    task = load_task(task_path)
    run_dir = out / label / "run"
    t0 = time.perf_counter()
    try:
        with PeakMemory() as pm:
            train(task, TrainOptions(run_dir=run_dir, max_steps=steps, overrides=overrides, no_gate_reason="bench/gpu_plan.sh",
                                     eval_every=0, progress=False))
    except Exception as exc:  # noqa: BLE001 - report and go on to the next model
        print(f"{label}: failed: {type(exc).__name__}: {str(exc)[:400]}")
        return
    wall = time.perf_counter() - t0
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())["trl_resolved"]
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    step_times = [x["step_time"] for x in lines if "step_time" in x]
    prompt_tokens = max(8, max(len(str(task.render_prompt(r))) for r in task.load_split("train")[:500]))  # char tokenizer: 1 char = 1 token
    vllm = "colocate" if cfg.get("use_vllm") else "none"
    s = memory.Setting(gpus=1, gpu_memory_gb=gpu_gb or 80.0, peft="none", beta=float(cfg["beta"]), vllm=vllm,
                       vllm_util=float(cfg.get("vllm_gpu_memory_utilization", 0.3)), sleep_mode=bool(cfg.get("vllm_enable_sleep_mode")),
                       per_device_batch=int(cfg["per_device_train_batch_size"]), prompt_tokens=prompt_tokens,
                       completion_tokens=int(cfg["max_completion_length"]), gradient_checkpointing=bool(cfg.get("gradient_checkpointing")))
    est = memory.estimate(arch, s)
    med = statistics.median(step_times) if step_times else float("nan")
    print(f"{label}: {len(step_times)} steps, median step {med:.3f} s, wall {wall:.1f} s (incl. load), "
          f"batch {s.per_device_batch} x ({prompt_tokens}+{s.completion_tokens}) tokens, vLLM {vllm}")
    if cuda:
        print(f"  measured peak GPU memory {pm.peak / 1e9:.2f} GB device-wide ({(pm.peak - pm.base) / 1e9:.2f} GB above the start), "
              f"torch max allocated {torch.cuda.max_memory_allocated() / 1e9:.2f} GB, reserved {torch.cuda.max_memory_reserved() / 1e9:.2f} GB")
    else:
        import resource
        print(f"  CPU: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB (not a GPU measurement)")
    print(f"  planner estimate peak {est.peak / 1e9:.2f} GB = " + ", ".join(f"{k} {v / 1e9:.2f}" for k, v in est.parts.items() if v))


# 1. the built-in tiny task
tiny_arch = architecture.load_architecture("builtin:tiny")
run("tiny", task_copy("tiny", "builtin:tiny", 10), {}, tiny_arch)

# 2. a Qwen2.5-0.5B-shaped model with random weights
if want_big and (cuda or big_on_cpu):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from rlvr.models import build_tokenizer

    arch = architecture.SIZE_CLASSES["0.5B"]
    folder = out / "qwen05b-random"
    if not (folder / "config.json").exists():
        tok = build_tokenizer()
        config = Qwen2Config(vocab_size=arch.vocab, hidden_size=arch.hidden, num_hidden_layers=arch.layers, num_attention_heads=arch.heads,
                             num_key_value_heads=arch.kv_heads, intermediate_size=arch.intermediate, tie_word_embeddings=True,
                             max_position_embeddings=4096, pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
        torch.manual_seed(0)
        model = Qwen2ForCausalLM(config)
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        del model
    built = architecture.load_architecture(str(folder))
    print(f"built {folder.name}: {built.params / 1e9:.3f} B parameters (table: {arch.params / 1e9:.3f} B)")
    overrides = {"per_device_train_batch_size": batch, "gradient_accumulation_steps": 1, "learning_rate": 1e-6, "beta": 0.0,
                 "gradient_checkpointing": True}
    run("qwen2.5-0.5B-shaped", task_copy("big", str(folder), max_new), overrides, built)
elif want_big:
    print("not measured: the 0.5B-shaped model (no GPU; BIG_ON_CPU=1 runs it on the CPU to check the script)")
PYEOF
status=${PIPESTATUS[0]}
echo "gpu_plan: done (exit $status); runs under $OUT"
exit 0
