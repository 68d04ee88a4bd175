"""A short supervised warm start with TRL's ``SFTTrainer``.

RL sharpens what a model can already sometimes do; a model that never succeeds gets no signal
from GRPO (every completion in a group scores the same, so every advantage is 0). The recipe
routes such a model to SFT first. ``rlvr sft`` trains on the task's own train split, with the
target completion built from the ground truth in the task's answer format, and can stop as soon
as a *dev* slice of the train split (never the held-out eval) reaches a target pass rate -- the
demo uses that to stop at a partial, not perfect, base rate.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, Problem
from .task import Task

# Defaults sized for a small model on CPU; a real model wants its own (lower) learning rate.
SFT_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-3,
    "warmup_steps": 50,
    "lr_scheduler_type": "constant_with_warmup",
    "per_device_train_batch_size": 32,
    "max_steps": 1000,
    "logging_steps": 10,
    "weight_decay": 0.0,
    "seed": 3407,
    "report_to": "none",
    "save_strategy": "no",
    "gradient_checkpointing": False,
}


@dataclass(frozen=True)
class SftOptions:
    out_dir: Path
    model: str | None = None
    target_pass_rate: float | None = None
    check_every: int = 25
    dev_size: int = 100
    overrides: Mapping[str, Any] = field(default_factory=dict)
    progress: bool = True


@dataclass(frozen=True)
class SftResult:
    out_dir: Path
    steps: int
    dev_pass_rate: float | None
    seconds: float
    stopped_early: bool


def sft_rows(task: Task, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Prompt-completion pairs: the completion is the ground truth wrapped in the answer format."""
    out = []
    for r in rows:
        prompt = task.render_prompt(r)
        completion = task.answer.wrap(str(r[task.answer_column]))
        if isinstance(prompt, list):
            out.append({"prompt": prompt, "completion": [{"role": "assistant", "content": completion}]})
        else:
            out.append({"prompt": prompt, "completion": completion})
    return out


def run_sft(task: Task, opts: SftOptions) -> SftResult:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from .evaluate import evaluate
    from .models import load_model, load_tokenizer, resolve_model

    model_ref = resolve_model(opts.model or task.model)
    tokenizer = load_tokenizer(model_ref)
    model = load_model(model_ref)
    rows = task.load_split("train")
    if opts.target_pass_rate is not None and len(rows) <= opts.dev_size:
        raise ConfigError(Problem("sft", f"the train split has {len(rows)} rows: too few to hold out a dev slice of {opts.dev_size}", "lower --dev-size or add rows"))
    dev, train_rows = (rows[: opts.dev_size], rows[opts.dev_size :]) if opts.target_pass_rate is not None else ([], rows)
    settings = {**SFT_DEFAULTS, **dict(task.sft), **dict(opts.overrides)}
    settings.setdefault("seed", task.seed)
    cfg_kw = {k: v for k, v in settings.items() if k not in ("target_pass_rate",)}
    cfg_kw.update(output_dir=str(opts.out_dir / "trainer"), use_cpu=not torch.cuda.is_available(), bf16=False, disable_tqdm=True)
    config = SFTConfig(**cfg_kw)
    state: dict[str, Any] = {"rate": None, "stopped": False}

    class StopAtTarget(TrainerCallback):
        def on_step_end(self, args: Any, st: Any, control: Any, **kw: Any) -> Any:
            if opts.target_pass_rate is None or st.global_step % opts.check_every:
                return control
            res = evaluate(model, tokenizer, task, dev, temperature=0.0)
            state["rate"] = res.accuracy
            if res.accuracy >= opts.target_pass_rate:
                state["stopped"] = True
                control.should_training_stop = True
            return control

    t0 = time.time()
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(sft_rows(task, train_rows)),
        processing_class=tokenizer,
        callbacks=[StopAtTarget()],
    )
    from .train import quiet_progress

    quiet_progress(trainer, opts.progress, "SFT")
    trainer.train()
    seconds = time.time() - t0
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(opts.out_dir)
    tokenizer.save_pretrained(opts.out_dir)
    result = SftResult(opts.out_dir, trainer.state.global_step, state["rate"], seconds, state["stopped"])
    (opts.out_dir / "rlvr_sft.json").write_text(json.dumps({**asdict(result), "out_dir": str(opts.out_dir), "base_model": opts.model or task.model, "settings": settings}, indent=2, default=str))
    return result
