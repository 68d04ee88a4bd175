"""A short supervised warm start with TRL's ``SFTTrainer``.

RL sharpens what a model can already sometimes do; a model that never succeeds gets no signal
from GRPO (every completion in a group scores the same, so every advantage is 0). The recipe
routes such a model to SFT first. ``rlvr sft`` trains on the task's own train split, with the
target completion built from the ground truth in the task's answer format, and can stop as soon
as a *dev* slice of the train split (never the held-out eval) reaches a target pass rate -- the
demo uses that to stop at a partial, not perfect, base rate.

Before training it measures the targets (``rlvr.lengths``) and warns, with counts, about targets
that would be cut: longer than ``generation.max_completion_length`` (the model would learn
answers that generation later cuts off), or longer than SFT's own sequence limit (TRL's
``max_length``, default 1024, or the model's positions, whichever is smaller), which truncates
the target during SFT itself. The warnings go to ``opts.warn`` (stderr by default), into
``SftResult.warnings`` and into ``rlvr_sft.json``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Problem
from ..lengths import reference_completion
from ..task import Task

# TRL's SFTConfig.max_length default (1.16): longer prompt + completion sequences are truncated.
TRL_SFT_MAX_LENGTH = 1024

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
    warn: Callable[[str], None] | None = None  # default: one "rlvr sft: warning: ..." line on stderr


@dataclass(frozen=True)
class SftResult:
    out_dir: Path
    steps: int
    dev_pass_rate: float | None
    seconds: float
    stopped_early: bool
    warnings: tuple[str, ...] = ()


def sft_rows(task: Task, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Prompt-completion pairs: the completion is the ground truth wrapped in the answer format."""
    out: list[dict[str, Any]] = []
    for r in rows:
        prompt = task.render_prompt(r)
        completion = reference_completion(task, r)
        if isinstance(prompt, list):
            out.append({"prompt": prompt, "completion": [{"role": "assistant", "content": completion}]})
        else:
            out.append({"prompt": prompt, "completion": completion})
    return out


def target_warnings(
    task: Task, rows: list[dict[str, Any]], tokenizer: Any, *, max_length: int | None, positions: int | None
) -> list[str]:
    """Counts of SFT targets that would be cut, by the generation budget or by SFT's sequence limit."""
    from ..lengths import measure

    prompts, answers = measure(task, rows, tokenizer)
    out = []
    budget = task.generation.max_completion_length
    over_budget = sum(n > budget for n in answers)
    if over_budget:
        out.append(
            f"{over_budget} of {len(rows)} SFT targets are longer than generation.max_completion_length {budget} "
            f"(longest {max(answers)} tokens with EOS): generation would cut them off before the answer ends, so "
            "the probe, the gate and GRPO would never see them complete; raise generation.max_completion_length "
            f"to at least {max(answers)}"
        )
    limits = [x for x in (max_length, positions) if x]
    if limits:
        limit = min(limits)
        cut = sum(p + a > limit for p, a in zip(prompts, answers, strict=True))
        if cut:
            what = "SFT max_length" if max_length and limit == max_length else "the model's maximum positions"
            out.append(
                f"{cut} of {len(rows)} SFT examples (prompt + target) are longer than {limit} tokens ({what}): their "
                "targets are truncated during SFT"
            )
    return out


def _stderr_warning(message: str) -> None:
    sys.stderr.write(f"rlvr sft: warning: {message}\n")


def run_sft(task: Task, opts: SftOptions) -> SftResult:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from ..evaluate import evaluate
    from ..models import load_model, load_tokenizer, resolve_model

    model_ref = resolve_model(opts.model or task.model)
    tokenizer = load_tokenizer(model_ref)
    model = load_model(model_ref)
    rows = task.load_split("train")
    if opts.target_pass_rate is not None and len(rows) <= opts.dev_size:
        raise ConfigError(
            Problem(
                "sft",
                f"the train split has {len(rows)} rows: too few to hold out a dev slice of {opts.dev_size}",
                "lower --dev-size or add rows",
            )
        )
    dev, train_rows = (
        (rows[: opts.dev_size], rows[opts.dev_size :]) if opts.target_pass_rate is not None else ([], rows)
    )
    settings = {**SFT_DEFAULTS, **dict(task.sft), **dict(opts.overrides)}
    settings.setdefault("seed", task.seed)
    from ..lengths import max_positions

    warnings = target_warnings(
        task,
        train_rows,
        tokenizer,
        max_length=settings.get("max_length", TRL_SFT_MAX_LENGTH),
        positions=max_positions(model_ref),
    )
    for message in warnings:  # before training: a warning after the run is too late to act on
        (opts.warn or _stderr_warning)(message)
    cfg_kw = {k: v for k, v in settings.items() if k not in ("target_pass_rate",)}
    cfg_kw.update(
        output_dir=str(opts.out_dir / "trainer"), use_cpu=not torch.cuda.is_available(), bf16=False, disable_tqdm=True
    )
    config = SFTConfig(**cfg_kw)
    reached: dict[str, Any] = {"rate": None, "stopped": False}

    class StopAtTarget(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            st = state  # the Trainer's state; ``reached`` is ours
            if opts.target_pass_rate is None or st.global_step % opts.check_every:
                return control
            res = evaluate(model, tokenizer, task, dev, temperature=0.0)
            reached["rate"] = res.accuracy
            if res.accuracy >= opts.target_pass_rate:
                reached["stopped"] = True
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
    from .callbacks import quiet_progress

    quiet_progress(trainer, opts.progress, "SFT")
    trainer.train()
    seconds = time.time() - t0
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(opts.out_dir)
    tokenizer.save_pretrained(opts.out_dir)
    result = SftResult(
        opts.out_dir, trainer.state.global_step, reached["rate"], seconds, reached["stopped"], tuple(warnings)
    )
    (opts.out_dir / "rlvr_sft.json").write_text(
        json.dumps(
            {
                **asdict(result),
                "out_dir": str(opts.out_dir),
                "base_model": opts.model or task.model,
                "settings": settings,
            },
            indent=2,
            default=str,
        )
    )
    return result
