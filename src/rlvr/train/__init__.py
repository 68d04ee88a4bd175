"""GRPO training on TRL's ``GRPOTrainer``, driven by a task file.

One run directory holds everything about a run::

    <run>/config.yaml        every resolved GRPOConfig value (grpo:) and rlvr's own (rlvr:): one
                             rlvr.settings.RunConfig, read back by --config, --resume, the doctor
    <run>/metrics.jsonl      one line per logging step (every TRL metric, per-term rewards and
                             verifier error rates) and one per held-out eval (eval/accuracy, ...)
    <run>/checkpoints/       TRL checkpoints, each marked complete once saved (rlvr.train.checkpoints);
                             --resume continues from the newest complete one (with the online
                             filter's state, rlvr_dynamic.json, when dynamic sampling filters)
    <run>/rollouts/          a bounded sample of completions per logging step with every verdict
                             (rlvr.keptrollouts)
    <run>/final/             the trained model and tokenizer
    <run>/run.json           status, versions, timings, one entry per session (start or resume)

Every value that matters is written explicitly (TRL's defaults move between versions). The
inspection gate is enforced before anything loads; bypassing it needs a written reason, which is
recorded in the config and in the metrics.

Fail loud: a run that cannot learn is stopped, not finished. When the masked rate (samples some
term could not decide) or the share of zero-variance groups stays at or above the recipe's
thresholds (``rlvr.settings.StopRules``) for that many logging steps in a row, training raises
``RunStopped`` with the evidence (``grpo: {stop: {...}}`` in the task, or ``rlvr: {stop: ...}`` in
a config file, changes them; the run's config records them). A held-out eval that decides no sample raises too.

Dynamic sampling (``grpo: {dynamic: {mode: filter | resample}}``; on for a ``dapo`` loss) keeps
groups whose rewards are all equal out of the batch: see ``rlvr.train.dynamic``.

The stages, each in its own module: ``settings`` (every value resolved and checked before any
weights load), ``rundir`` (what a run reads back from its folder and appends to it), ``launch``
(the TRL trainer, config.yaml, run.json, final/), ``callbacks`` (logging, evals, stopping, the
progress bar), ``stopping``, ``dynamic`` (with ``resample``) and ``checkpoints``.
"""

from __future__ import annotations

import dataclasses
import sys

from ..task import Task
from .launch import TrainResult, build_dataset, run_grpo
from .rundir import (
    ResumeStart,
    claimed,
    latest_checkpoint,
    previous_run,
    refuse_existing,
    resume_model,
    resume_options,
    resume_start,
    run_finished,
)
from .settings import (
    LORA,
    PEFT_CHOICES,
    TrainOptions,
    enforce_gate,
    is_main_process,
    layered_settings,
    peft_setup,
    resolve_settings,
)
from .stopping import RunStopped, StopRules, StopWatch


def train(task: Task, opts: TrainOptions) -> TrainResult:
    """Run GRPO on ``task``. Raises ``GateError`` before anything loads when the gate fails,
    ``RunStopped`` when the run cannot learn, ``RunError`` when an eval decides nothing."""
    run_dir = opts.run_dir
    previous, previous_meta = previous_run(run_dir) if opts.resume else (None, {})
    if opts.resume:
        opts, overridden = resume_options(opts, previous)
        opts = dataclasses.replace(opts, model=resume_model(task, opts, previous))
        if is_main_process():
            for line in overridden:
                sys.stderr.write(f"resume: {line} overrides the run's config.yaml\n")
    gate = enforce_gate(task, opts)
    settings = resolve_settings(task, opts)
    from ..gate import check_trained

    check_trained(gate, settings.rewards)  # the terms TRL will pay are the ones the gate signed
    peft = peft_setup(settings.peft, settings.hardware)
    main = is_main_process()
    with claimed(run_dir, main):  # one session per run folder, from the check to the end
        if not opts.resume:
            refuse_existing(run_dir)
        final = run_dir / "final"
        if opts.resume and run_finished(previous_meta, int(settings.grpo["max_steps"]), final):
            return TrainResult(
                run_dir,
                final,
                int(previous_meta.get("steps") or 0),
                float(previous_meta.get("seconds") or 0.0),
                [],
                main,
                already_done=True,
            )
        start = resume_start(run_dir, main) if opts.resume else ResumeStart()
        run_dir.mkdir(parents=True, exist_ok=True)
        return run_grpo(task, opts, settings, gate, start, previous_meta, peft, main)


__all__ = [
    "LORA",
    "PEFT_CHOICES",
    "RunStopped",
    "StopRules",
    "StopWatch",
    "TrainOptions",
    "TrainResult",
    "build_dataset",
    "enforce_gate",
    "latest_checkpoint",
    "layered_settings",
    "peft_setup",
    "train",
]
