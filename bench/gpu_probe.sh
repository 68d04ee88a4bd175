#!/usr/bin/env bash
# Probe throughput on an NVIDIA GPU with no internet: completions per second of the routing probe.
#
# What it measures (each line says backend, device, model, completions, seconds, completions/s):
#   1. the built-in tiny task (builtin:tiny, arithmetic prompts) through rlvr.probe.run_probe,
#      sampling and scoring included;
#   2. a Qwen2.5-0.5B-shaped model (24 layers, hidden 896, 14 heads / 2 KV heads, vocabulary
#      151,936) built locally with random weights (nothing is downloaded), sampling only, at a
#      fixed length (random weights rarely emit EOS, so every completion runs to MAX_NEW tokens);
# with the transformers backend on the GPU, and with vLLM too when vLLM is installed.
#
# It never fails for a missing GPU or a missing vLLM: it measures what it can, and prints one
# "not measured: ..." line for everything it skipped. Without a GPU it runs the CPU fallback
# (transformers on CPU, tiny task only) so the script itself stays tested.
#
# Settings (environment): PYTHON (default: .venv/bin/python, else python3), PROBE_PROMPTS (64),
# PROBE_K (8), MAX_NEW (256, the 0.5B-shaped runs), BIG_PROMPTS (64), BIG (1; 0 skips the
# 0.5B-shaped model; BIG_ON_CPU=1 runs it on the CPU anyway, to check the script), OUT (a
# temporary folder).
# Usage: bash bench/gpu_probe.sh
set -uo pipefail
cd "$(dirname "$0")/.."

pick_python() {
    for py in "${PYTHON:-}" .venv/bin/python python3; do
        [ -n "$py" ] || continue
        if command -v "$py" >/dev/null 2>&1 && "$py" -c "import torch, transformers, yaml" >/dev/null 2>&1; then
            echo "$py"
            return 0
        fi
    done
    return 1
}

PY=$(pick_python) || { echo "gpu_probe: no Python with torch and transformers found (set PYTHON=...)"; echo "not measured: everything"; exit 0; }
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
export RLVR_CACHE="${RLVR_CACHE:-$OUT/cache}"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
else
    echo "gpu: nvidia-smi not found"
fi
echo "python: $PY   out: $OUT"

"$PY" - "$OUT" <<'PYEOF'
import json, os, sys, time
from pathlib import Path

out = Path(sys.argv[1])
prompts_n = int(os.environ.get("PROBE_PROMPTS", "64"))
k = int(os.environ.get("PROBE_K", "8"))
max_new = int(os.environ.get("MAX_NEW", "256"))
big_prompts = int(os.environ.get("BIG_PROMPTS", "64"))
want_big = os.environ.get("BIG", "1") != "0"
big_on_cpu = os.environ.get("BIG_ON_CPU", "0") == "1"

import importlib.util
import torch
import transformers

from rlvr.demo import arithmetic
from rlvr.generate import make_sampler, vllm_available
from rlvr.probe import run_probe

gpu = torch.cuda.is_available()
has_vllm = importlib.util.find_spec("vllm") is not None
print(f"torch {torch.__version__}, transformers {transformers.__version__}, cuda {gpu}, vllm {'installed' if has_vllm else 'not installed'}")
not_measured = []
results = []


def line(backend, device, model, n, secs, extra=""):
    rate = n / secs if secs > 0 else float("nan")
    results.append({"backend": backend, "device": device, "model": model, "completions": n, "seconds": round(secs, 3), "completions_per_s": round(rate, 1), "extra": extra})
    print(f"RESULT backend={backend:12s} device={device:4s} model={model:22s} completions={n:6d} seconds={secs:8.2f} completions/s={rate:9.1f} {extra}", flush=True)


# -- the tiny task through run_probe ----------------------------------------------------------
task_dir = out / "tiny-task"
task_dir.mkdir(parents=True, exist_ok=True)
rows = arithmetic.generate(prompts_n, seed=0)
(task_dir / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
(task_dir / "task.yaml").write_text(
    "name: tiny-add\nmodel: builtin:tiny\ndata: {train: train.jsonl}\nprompt: {template: '{question}='}\n"
    "answer: {column: answer, format: tags}\nrewards:\n  - {name: format, weight: 0.1}\n  - {name: correct, verifier: exact}\n"
    f"generation: {{temperature: 1.0, max_completion_length: 12}}\nprobe: {{max_prompts: {prompts_n}}}\n"
)
device = "cuda" if gpu else "cpu"
backends = ["transformers"] + (["vllm"] if gpu and has_vllm else [])
if not gpu:
    not_measured.append("GPU throughput (no CUDA GPU visible): the transformers numbers are the CPU fallback")
if not has_vllm:
    not_measured.append("vLLM backend (vLLM is not installed)")
elif not gpu:
    not_measured.append("vLLM backend (installed, but no CUDA GPU)")

for backend in backends:
    try:
        t0 = time.perf_counter()
        if backend == "transformers":
            sampler = make_sampler("builtin:tiny", backend="transformers", device=device, batch_size=512 if gpu else 64)
        else:
            sampler = make_sampler("builtin:tiny", backend="vllm", gpu_memory_utilization=0.3)
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        report = run_probe(task_dir / "task.yaml", out_dir=out / f"probe-tiny-{backend}", k=k, sampler=sampler, progress=False)
        secs = time.perf_counter() - t0
        line(backend, device, "builtin:tiny (task)", report.n_samples + report.n_undecided, secs, f"load {load:.1f}s, route {report.route}, rate {report.rate:.3f}")
        del sampler
        if gpu:
            torch.cuda.empty_cache()
    except Exception as exc:  # noqa: BLE001 - a benchmark reports and moves on
        not_measured.append(f"tiny task with {backend} ({type(exc).__name__}: {str(exc)[:200]})")

# -- a 0.5B-shaped model with random weights ---------------------------------------------------
def build_big(dest: Path) -> Path:
    """Qwen2.5-0.5B's architecture with random weights and a 151,936-entry word-level vocabulary
    (characters first, then filler tokens), saved like a real checkpoint."""
    if (dest / "config.json").exists():
        return dest
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from rlvr.models import CHARS, SPECIAL

    vocab = {tok: i for i, tok in enumerate(SPECIAL.values())}
    for ch in CHARS:
        vocab.setdefault(ch, len(vocab))
    while len(vocab) < 151936:
        vocab[f"<t{len(vocab)}>"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIAL["unk_token"]))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, padding_side="left", **SPECIAL)
    cfg = Qwen2Config(vocab_size=len(vocab), hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                      num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
                      tie_word_embeddings=True, pad_token_id=fast.pad_token_id, bos_token_id=fast.bos_token_id,
                      eos_token_id=fast.eos_token_id, torch_dtype="bfloat16")
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(dest)
    fast.save_pretrained(dest)
    return dest


if not want_big:
    not_measured.append("0.5B-shaped model (BIG=0)")
elif not gpu and not big_on_cpu:
    not_measured.append("0.5B-shaped model (CPU fallback: too slow to be meaningful here)")
else:
    try:
        big = build_big(out / "qwen2.5-0.5b-shaped")
        prompts = [f"{r['question']}=" for r in arithmetic.generate(big_prompts, seed=1)]
        for backend in backends:
            try:
                if backend == "transformers":
                    sampler = make_sampler(str(big), backend="transformers", device=device, batch_size=512)
                else:
                    sampler = make_sampler(str(big), backend="vllm", gpu_memory_utilization=0.5)
                sampler.sample(prompts[:2], n=2, temperature=1.0, max_new_tokens=8, seed=0)  # warm-up
                if gpu:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                groups = sampler.sample(prompts, n=k, temperature=1.0, max_new_tokens=max_new, seed=0)
                if gpu:
                    torch.cuda.synchronize()
                secs = time.perf_counter() - t0
                comps = [c for g in groups for c in g]
                tokens = sum(c.n_tokens for c in comps)
                line(backend, device, "qwen2.5-0.5b-shaped", len(comps), secs, f"{tokens / secs:.0f} tokens/s, mean length {tokens / len(comps):.0f}")
                del sampler
                if gpu:
                    torch.cuda.empty_cache()
            except Exception as exc:  # noqa: BLE001
                not_measured.append(f"0.5B-shaped model with {backend} ({type(exc).__name__}: {str(exc)[:200]})")
    except Exception as exc:  # noqa: BLE001
        not_measured.append(f"0.5B-shaped model (could not build it: {type(exc).__name__}: {exc})")

for what in not_measured:
    print(f"not measured: {what}")
(out / "gpu_probe.json").write_text(json.dumps({"results": results, "not_measured": not_measured}, indent=2) + "\n")
print(f"wrote {out / 'gpu_probe.json'}")
PYEOF
rc=$?
[ $rc -eq 0 ] || echo "gpu_probe: the benchmark itself failed (exit $rc)"
exit $rc
