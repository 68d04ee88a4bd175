"""The launch into TRL: settings already resolved and checked -> a ``GRPOTrainer`` that trains,
logs, evaluates, checkpoints and saves ``final/``.

Writes the run's ``config.yaml`` (a ``rlvr.settings.file.RunConfig``: every value set, as TRL
normalised it, plus rlvr's record), ``run.json`` (status, versions, one entry per session) and
``final/`` (written beside it as ``final.partial`` and renamed into place: a run killed while saving
leaves the old ``final/``, or none, never half of one).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..audit.tripwire import rules_for as tripwire_rules
from ..data import TRAINED_ROWS_NAME, TrainedRows, row_key, trained_rows_of
from ..errors import ConfigError, Problem, disk_full
from ..settings.file import RunConfig
from ..task import Task
from .callbacks import end_distributed, quiet_own_warnings, quiet_progress, rlvr_callback
from .checkpoints import disk_full_note
from .rundir import MetricsLog, ResumeStart, truncate_metrics, versions
from .settings import LORA, RunSettings, TrainOptions
from .stopping import RunStopped, StopWatch
from .tripwire import Feed, Tripwire


@dataclass(frozen=True)
class TrainResult:
    run_dir: Path
    final_dir: Path
    steps: int
    seconds: float  # the run's total, across resumes
    evals: list[dict[str, Any]]
    main_process: bool = True
    already_done: bool = False  # --resume on a finished run: nothing was trained or written
    resumed_from: Path | None = None
    skipped: tuple[Path, ...] = ()  # incomplete checkpoints set aside on resume


# Column names TRL passes to reward functions itself: a data column of the same name would clash.
RESERVED_COLUMNS = frozenset(
    {"prompt", "completion", "completion_ids", "prompts", "completions", "trainer_state", "log_metric", "log_extra"}
)


class SeenRows:
    """The train rows a GRPO run has scored, written to ``trained_rows.json`` in the run directory
    whenever the set grows (so a run killed mid-way still says what it saw), merged with the rows
    the starting model was trained on. A row is known by its rendered prompt, which is what TRL
    hands the reward functions. The safe side wins twice: a prompt it cannot place (an episode
    task's environment may rewrite it) counts every train row as seen, and so does a run over
    several processes (``whole``), where each process scores only its own slice."""

    def __init__(
        self,
        task: Task,
        rows: list[dict[str, Any]],
        run_dir: Path,
        start: TrainedRows | None,
        *,
        earlier: TrainedRows | None = None,
        whole: bool = False,
        enabled: bool = True,
    ) -> None:
        self.task_path, self.run_dir, self.start, self.enabled = str(task.path), run_dir, start, enabled
        self.by_prompt: dict[str, set[str]] = {}
        for r in rows:
            self.by_prompt.setdefault(_prompt_text(task.render_prompt(r)), set()).add(row_key(r))
        self.every = frozenset(row_key(r) for r in rows)
        own = (earlier.keys - start.keys) if earlier is not None and start is not None else None
        self.keys: set[str] = set(
            self.every if whole else (own if own is not None else earlier.keys if earlier else ())
        )
        self.write()

    def add(self, prompts: Sequence[Any]) -> None:
        new: set[str] = set()
        for prompt in prompts:
            keys = self.by_prompt.get(_prompt_text(prompt))
            if keys is None:
                new = set(self.every)
                break
            new |= keys
        if not new <= self.keys:
            self.keys |= new
            self.write()

    def write(self) -> None:
        if self.enabled:
            TrainedRows(frozenset(self.keys), ("grpo",)).merged(self.start).write(self.run_dir, task=self.task_path)

    def wrap(self, funcs: Sequence[Callable[..., Any]]) -> list[Callable[..., Any]]:
        """The same functions; the first also notes the batch's prompts."""
        if not funcs or not self.enabled:
            return list(funcs)
        first = funcs[0]

        def noted(*args: Any, **kwargs: Any) -> Any:
            self.add(kwargs.get("prompts") or ())
            return first(*args, **kwargs)

        noted.__name__ = first.__name__
        noted.__qualname__ = getattr(first, "__qualname__", first.__name__)
        return [noted, *funcs[1:]]


def _prompt_text(prompt: Any) -> str:
    """One spelling of a rendered prompt (text, or a chat's message list)."""
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)


def build_dataset(task: Task, rows: list[dict[str, Any]]) -> Any:
    """The training rows as a ``datasets.Dataset`` with each row's rendered ``prompt``."""
    from datasets import Dataset

    from ..task.rowchecks import arrow_rows, code_columns, type_problems

    clash = sorted(RESERVED_COLUMNS & set().union(*(r.keys() for r in rows))) if rows else []
    if clash:
        raise ConfigError(
            Problem(
                f"{task.path}: data.train",
                f"column(s) {clash} clash with names TRL passes to reward functions",
                "rename them in the data file",
            )
        )
    # A column Arrow cannot store is named here, not left to a raw ArrowInvalid from datasets.
    wrong = type_problems(rows, f"{task.path}: data.train", skip=code_columns(task))
    if wrong:
        raise ConfigError(wrong)
    return Dataset.from_list([{**r, "prompt": task.render_prompt(r)} for r in arrow_rows(task, rows)])


def run_config(
    task: Task,
    opts: TrainOptions,
    settings: RunSettings,
    gate: Mapping[str, Any],
    explicit: Mapping[str, Any],
    resolved: Mapping[str, Any],
    eval_rows: int,
    eval_every: int,
) -> RunConfig:
    """What the run writes into its config.yaml: every value set and rlvr's record."""
    from .. import keptrollouts

    record: dict[str, Any] = {
        "reward_terms": settings.rewards.names,
        "reward_weights": settings.rewards.weights,
        "gate": dict(gate),
        "no_gate_reason": opts.no_gate_reason,
        "success_term": task.success_term,
        "eval": {
            "every": eval_every,
            "prompts": eval_rows,
            "term": task.success_term,
            "temperature": task.eval.temperature,
        },
        "rollouts": {"per_step": keptrollouts.PER_STEP, "max_bytes": keptrollouts.MAX_BYTES, "keep": keptrollouts.KEEP},
        "hardware": dict(settings.hardware),
        "origin": dict(sorted(settings.origin.items())),  # where each value came from (rlvr plan prints the same)
    }
    if opts.config_path is not None:
        record["config_file"] = str(opts.config_path)
    return RunConfig(
        grpo=dict(explicit),
        variant=settings.variant,
        justification=dict(settings.justified),
        task=str(task.path),
        model=settings.model_ref,
        model_arg=settings.model_arg,
        peft=settings.peft,
        lora={k: v for k, v in LORA.items() if k != "task_type"} if settings.peft != "none" else {},
        stop=settings.stop.to_json(),
        dynamic=settings.dynamic.to_json(),
        record=record,
        resolved=dict(resolved),
    )


def run_grpo(
    task: Task,
    opts: TrainOptions,
    settings: RunSettings,
    gate: Mapping[str, Any],
    start: ResumeStart,
    previous_meta: Mapping[str, Any],
    peft: tuple[Any, dict[str, Any]],
    main: bool,
) -> TrainResult:
    """Load the model, train with TRL's ``GRPOTrainer`` and save ``final/``. ``peft``: the
    (peft_config, from_pretrained kwargs) pair of ``settings.peft_setup``."""
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from .. import keptrollouts
    from ..evaluate import evaluate, evaluate_sampled
    from ..models import load_model, load_tokenizer

    run_dir, cfg, dynamic = opts.run_dir, settings.grpo, settings.dynamic
    peft_config, load_kwargs = peft
    eval_every = opts.eval_every if opts.eval_every is not None else task.eval.every
    eval_rows = task.load_split("eval")[: opts.eval_prompts or task.eval.max_prompts] if task.data.eval else []
    vllm_cpu = cfg.get("use_vllm") and settings.hardware.get("vllm_cpu")
    if task.environment is not None:  # set before config.yaml is written, so the file records it
        if vllm_cpu:
            raise ConfigError(
                Problem(
                    "use_vllm",
                    "multi-turn episode tasks have not been run with vLLM's CPU build",
                    "set use_vllm: false (episodes then generate in transformers)",
                )
            )
        cfg = {**cfg, "max_tool_calling_iterations": task.environment.max_turns - 1}
    if vllm_cpu:
        from ..engines.vllm_cpu import install_trl_shims

        install_trl_shims()  # vLLM's CPU build: weight sync and server start (rlvr.engines.vllm_cpu)
    with quiet_own_warnings():
        args = GRPOConfig(**cfg)
    resolved = {k: v for k, v in args.to_dict().items() if not k.startswith("_")}
    explicit = {k: resolved.get(k) for k in cfg}  # what we set, as TRL normalised it
    train_rows = task.load_split("train")
    dataset = build_dataset(task, train_rows)  # before the model loads: a bad column fails in seconds
    rules = tripwire_rules(task.grpo, str(task.path), settings.config_file)  # likewise
    if main:
        config = run_config(task, opts, settings, gate, explicit, resolved, len(eval_rows), eval_every)
        dataclasses.replace(config, record={**config.record, "tripwire": rules.to_json()}).write(
            run_dir / "config.yaml"
        )
    # The rows this run scores, recorded as they come (the probe measures the others); a resumed
    # run keeps what its earlier sessions saw.
    seen = SeenRows(
        task,
        train_rows,
        run_dir,
        trained_rows_of(settings.model_ref),
        earlier=trained_rows_of(run_dir) if opts.resume else None,
        whole=not main or int(os.environ.get("WORLD_SIZE", "1")) > 1,
        enabled=main,
    )

    metrics_path = run_dir / "metrics.jsonl"
    offset = start.offset
    if start.checkpoint is not None and main:
        last_time = truncate_metrics(metrics_path, start.step)
        offset = offset or (last_time or 0.0)
    log = MetricsLog(
        metrics_path, {"no_gate_reason": opts.no_gate_reason} if opts.no_gate_reason else None, offset=offset
    )
    sessions = list(previous_meta.get("sessions") or []) if opts.resume else []
    if start.checkpoint is not None and main:
        log.write(
            start.step,
            {"event": "resume", "resumed_from": start.checkpoint.name, "skipped": [p.name for p in start.skipped]},
        )
    wire = Tripwire(
        rules,
        settings.rewards,
        fmt=task.answer,
        column=task.answer_column,
        success=task.success_term,
        run_dir=run_dir if main else None,
        seed=int(args.seed),
        where=f"{task.path}: grpo.tripwire",
    )
    tokenizer = load_tokenizer(settings.model_ref)
    model = load_model(settings.model_ref, **load_kwargs)
    evals: list[dict[str, Any]] = []

    def run_eval(step: int) -> None:
        if not eval_rows:
            return
        # The run's completion budget and sampling temperature, as resolved (a --set or config file moves them).
        budget, temperature = int(cfg["max_completion_length"]), float(cfg["temperature"])
        res = evaluate(model, tokenizer, task, eval_rows, max_new_tokens=budget, seed=task.seed)
        line = res.metrics()
        if task.eval.samples > 0:  # the measure of an RL lift: pass@1 / pass@k at the training temperature
            line |= evaluate_sampled(
                model,
                tokenizer,
                task,
                eval_rows,
                samples=task.eval.samples,
                temperature=temperature,
                max_new_tokens=budget,
                seed=task.seed,
            ).metrics()
        evals.append({"step": step, **line})
        log.write(step, line)
        # The tripwire compares the training success rate with the sampled pass@1 where there is one.
        wire.observe_eval(step, float(line.get("eval/pass@1", line["eval/accuracy"])), int(line["eval/n"]))
        res.raise_if_undecided(f"held-out eval at step {step}")

    rewards = settings.rewards
    episode_kwargs: dict[str, Any] = {}
    if task.environment is not None:  # multi-turn tool use: TRL runs the episodes (rlvr.episodes.training)
        from ..episodes.training import trainer_setup

        episode_kwargs = trainer_setup(task.environment, str(task.path), tokenizer, args)
    recorder = keptrollouts.Recorder(
        run_dir,
        rewards,
        group_size=int(cfg["num_generations"]),
        logging_steps=int(args.logging_steps or 1),
        session=len(sessions) + 1,
        enabled=main,
    )
    trainer_cls: Any = GRPOTrainer
    if dynamic.enabled:
        from . import dynamic as dynamic_module  # looked up at call time: tests wrap trainer_class

        trainer_cls = dynamic_module.trainer_class(GRPOTrainer)
    with quiet_own_warnings():
        trainer = trainer_cls(
            model=model,
            reward_funcs=seen.wrap(recorder.wrap(Feed(wire).wrap(rewards.trl_functions()))),
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            callbacks=[rlvr_callback(run_dir, log, StopWatch(settings.stop), run_eval, eval_every, wire)],
            peft_config=peft_config,
            **episode_kwargs,
        )
    if dynamic.enabled:
        from .dynamic import PromptFilter

        trainer.rlvr_dynamic = dynamic
        trainer.rlvr_success = task.success_term
        if dynamic.mode == "filter":
            # Its state is saved into every checkpoint and read back on resume (rlvr.train.dynamic).
            trainer.rlvr_filter = PromptFilter(len(trainer.train_dataset), dynamic, seed=int(args.seed))
    if peft_config is not None:
        model = trainer.model  # the PeftModel: held-out evals must see the adapter
    quiet_progress(trainer, opts.progress, "GRPO")
    session: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "resumed_from": str(start.checkpoint) if start.checkpoint else None,
        "skipped": [str(p) for p in start.skipped],
        "from_step": start.step,
    }
    sessions.append(session)
    meta: dict[str, Any] = {
        "status": "running",
        "task": str(task.path),
        "started": previous_meta.get("started") or session["started"],
        "resumed_from": session["resumed_from"],
        "sessions": sessions,
        "versions": versions(),
        "threads": torch.get_num_threads(),
    }

    def write_meta() -> None:
        if main:
            (run_dir / "run.json").write_text(json.dumps(meta, indent=2))

    write_meta()
    t0 = time.time()
    try:
        trainer.train(resume_from_checkpoint=str(start.checkpoint) if start.checkpoint else None)
        if wire.tripped is not None or wire.halted:  # stopped at a step end, its checkpoint saved
            trip = wire.tripped
            meta["tripwire"] = {"signal": trip.signal, "step": trip.step} if trip else {"signal": "another rank"}
            raise RunStopped(trip.message() if trip else "tripwire: another process's tripwire stopped the run")
    except BaseException as exc:
        session.update(seconds=round(time.time() - t0, 2), to_step=trainer.state.global_step)
        status = "stopped" if isinstance(exc, RunStopped) else "failed"
        if isinstance(exc, KeyboardInterrupt):
            status = "interrupted"
        error = f"{type(exc).__name__}: {exc}"
        if disk_full(exc):  # the one line and run.json say so, and which checkpoint is whole
            note = disk_full_note(run_dir, trainer.state.global_step)
            exc.add_note(note)
            error = f"{note} ({error.splitlines()[0][:300]})"
        meta.update(status=status, error=error, steps=trainer.state.global_step, seconds=round(log.elapsed(), 2))
        try:
            write_meta()
        except OSError:  # the full disk may refuse run.json too: the error itself still reaches the user
            pass
        raise
    session.update(seconds=round(time.time() - t0, 2), to_step=trainer.state.global_step)
    final = run_dir / "final"
    seconds = save_final(trainer, tokenizer, run_dir, settings.peft, main, log)
    if main:
        meta.update(
            status="done",
            steps=trainer.state.global_step,
            max_steps=trainer.state.max_steps,
            seconds=round(seconds, 2),
            final=str(final),
        )
        meta.pop("error", None)
        write_meta()
    end_distributed(trainer)
    return TrainResult(
        run_dir,
        final,
        trainer.state.global_step,
        seconds,
        evals,
        main,
        resumed_from=start.checkpoint,
        skipped=start.skipped,
    )


def save_final(trainer: Any, tokenizer: Any, run_dir: Path, peft: str, main: bool, log: MetricsLog) -> float:
    """Save the trained model as ``final/`` (via ``final.partial``); returns the run's seconds."""
    import shutil

    final, partial = run_dir / "final", run_dir / "final.partial"
    if main and partial.exists():
        shutil.rmtree(partial)
    if peft != "none":
        # The adapter alone in final/adapter; final/ itself holds the merged model, so every later
        # stage (probe, eval, a next run) loads it like any checkpoint.
        trainer.save_model(str(partial / "adapter"))
        if main and peft == "lora":
            trainer.model.merge_and_unload().save_pretrained(partial)
    else:
        trainer.save_model(str(partial))
    seconds = log.elapsed()
    if main:
        tokenizer.save_pretrained(partial)
        if (run_dir / TRAINED_ROWS_NAME).is_file():  # final/ is probed and trained on by path: it says what it saw
            shutil.copyfile(run_dir / TRAINED_ROWS_NAME, partial / TRAINED_ROWS_NAME)
        if final.exists():
            shutil.rmtree(final)
        partial.rename(final)
    return seconds
