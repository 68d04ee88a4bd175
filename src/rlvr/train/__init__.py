"""GRPO training on TRL's ``GRPOTrainer``, driven by a task file.

One run directory holds everything about a run::

    <run>/config.yaml        every resolved GRPOConfig value (grpo:) and rlvr's own (rlvr:)
    <run>/metrics.jsonl      one line per logging step (every TRL metric, per-term rewards and
                             verifier error rates) and one per held-out eval (eval/accuracy, ...)
    <run>/checkpoints/       TRL checkpoints, each marked complete once saved (rlvr.train.checkpoints);
                             --resume continues from the newest complete one (with the online
                             filter's state, rlvr_dynamic.json, when dynamic sampling filters)
    <run>/rollouts/          a bounded sample of completions per logging step with every verdict
                             (rlvr.rollouts)
    <run>/final/             the trained model and tokenizer
    <run>/run.json           status, versions, timings, one entry per session (start or resume)

Every value that matters is written explicitly (TRL's defaults move between versions). The
inspection gate is enforced before anything loads; bypassing it needs a written reason, which is
recorded in the config and in the metrics.

Fail loud: a run that cannot learn is stopped, not finished. When the masked rate (samples some
term could not decide) or the share of zero-variance groups stays at or above the recipe's
``STOP`` thresholds for that many logging steps in a row, training raises ``RunStopped`` with the
evidence (``grpo: {stop: {...}}`` in the task, or ``rlvr: {stop: ...}`` in a config file, changes
them; the run's config records them). A held-out eval that decides no sample raises too.

Dynamic sampling (``grpo: {dynamic: {mode: filter | resample}}``; on for a ``dapo`` loss) keeps
groups whose rewards are all equal out of the batch: see ``rlvr.train.dynamic``.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError, Problem, RunError
from ..task import Task
from .stopping import RunStopped, StopRules, StopWatch, stop_evidence


@dataclass(frozen=True)
class TrainOptions:
    run_dir: Path
    model: str | None = None
    max_steps: int | None = None
    resume: bool = False
    config_path: Path | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    no_gate_reason: str | None = None
    gate_path: Path | None = None
    eval_every: int | None = None
    eval_prompts: int | None = None
    report_to: str = "none"
    progress: bool = True
    peft: str | None = None  # none | lora | qlora; None: the config file's choice (rlvr plan), else none


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


def read_config_file(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A config YAML: ``{grpo: {...}, rlvr: {...}}`` (what rlvr train writes) or a flat mapping
    of GRPOConfig fields with rlvr's record under ``env:`` (what ``rlvr plan`` writes and
    ``trl grpo --config`` takes). Returns (grpo values, rlvr record)."""
    from ..plan.recipe import read_config

    grpo, meta = read_config(path)
    # A doctor patch writes the online filter as grpo: {dynamic: ...} (how a task file spells it);
    # it is rlvr's option, not a GRPOConfig field, so it leaves the GRPOConfig values here.
    patched_dynamic = grpo.pop("dynamic", None)
    out = {
        "variant": meta.variant,
        "justification": dict(meta.justifications),
        "task": meta.task,
        "model": meta.model,
        "peft": meta.peft,
    }
    stop = _file_stop(path)
    if stop:
        out["stop"] = stop
    dynamic: Any = {
        **_file_section(path, "dynamic"),
        **(patched_dynamic if isinstance(patched_dynamic, Mapping) else {}),
    }
    if patched_dynamic is not None and not isinstance(patched_dynamic, Mapping):
        dynamic = patched_dynamic  # DynamicSampling.resolve says what is wrong with it
    if dynamic:
        out["dynamic"] = dynamic
    return grpo, out


def _file_section(path: Path, key: str) -> dict[str, Any]:
    """``rlvr: {<key>: {...}}`` in a run's config.yaml; {} when absent or unreadable."""
    from .. import yamlio

    try:
        raw = yamlio.load(Path(path).read_text(encoding="utf-8")) or {}
    except Exception:  # noqa: BLE001 - read_config has already reported an unreadable file
        return {}
    rl = raw.get("rlvr") if isinstance(raw, Mapping) else None
    return dict(rl[key]) if isinstance(rl, Mapping) and isinstance(rl.get(key), Mapping) else {}


def _file_stop(path: Path) -> dict[str, Any]:
    """Stop thresholds in a config file: ``rlvr: {stop: {...}}`` (a run's config.yaml) or
    ``env: {RLVR_STOP_MASKED_RATE: ...}`` (a flat plan)."""
    from .. import yamlio

    try:
        raw = yamlio.load(Path(path).read_text(encoding="utf-8")) or {}
    except Exception:  # noqa: BLE001 - read_config has already reported an unreadable file
        return {}
    if not isinstance(raw, Mapping):
        return {}
    rl = raw.get("rlvr")
    if isinstance(rl, Mapping) and isinstance(rl.get("stop"), Mapping):
        return dict(rl["stop"])
    env = raw.get("env")
    out: dict[str, Any] = {}
    if isinstance(env, Mapping):
        for k, v in env.items():
            if str(k).startswith("RLVR_STOP_"):
                out[str(k)[len("RLVR_STOP_") :].lower()] = yamlio.load(str(v))
    return out


def resolve_grpo(task: Task, opts: TrainOptions, hw: Mapping[str, Any]) -> dict[str, Any]:
    """The GRPOConfig values for this run: recipe < hardware < task < config file < CLI."""
    from ..plan import recipe

    cfg = recipe.resolve(task.grpo, generation=dataclasses.asdict(task.generation), hw=hw, seed=task.seed)
    if opts.config_path is not None:
        file_grpo, _ = read_config_file(opts.config_path)
        cfg.update({k: v for k, v in file_grpo.items() if k not in ("output_dir", "reward_weights")})
    cfg.update(opts.overrides)
    if opts.max_steps is not None:
        cfg["max_steps"] = opts.max_steps
    cfg.setdefault("max_steps", -1)
    cfg["output_dir"] = str(opts.run_dir / "checkpoints")
    cfg["report_to"] = opts.report_to
    cfg["disable_tqdm"] = True  # our own bar (quiet_progress); the Trainer's prints every log dict
    return cfg


PEFT_CHOICES = ("none", "lora", "qlora")
# The adapter rlvr trains: rank 16 on every linear layer (TRL refuses LoRA on lm_head; PEFT's
# "all-linear" leaves the output layer out). The planner's memory estimate assumes the same.
LORA = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "target_modules": "all-linear", "task_type": "CAUSAL_LM"}


def peft_setup(peft: str, hw: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(peft_config for GRPOTrainer, extra from_pretrained kwargs) for ``peft``.

    QLoRA loads the base model in 4-bit NF4 with bitsandbytes, which needs a CUDA GPU: refused
    on CPU with the reason (written and checked on CPU only; the GPU path is untested here)."""
    if peft == "none":
        return None, {}
    if peft not in PEFT_CHOICES:
        raise ConfigError(Problem("peft", f"unknown {peft!r}", f"one of {', '.join(PEFT_CHOICES)}"))
    from peft import LoraConfig

    kwargs: dict[str, Any] = {}
    if peft == "qlora":
        import importlib.util

        if not hw.get("gpus") or importlib.util.find_spec("bitsandbytes") is None:
            raise ConfigError(
                Problem(
                    "peft",
                    "qlora loads the base model in 4-bit with bitsandbytes, which needs a CUDA GPU and the bitsandbytes package",
                    "use --peft lora (or none) on this machine",
                )
            )
        import torch
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16 if hw.get("bf16") else torch.float16,
        )
    return LoraConfig(**LORA), kwargs


def _world_size() -> int:
    import os

    return int(os.environ.get("WORLD_SIZE", "1"))


def _is_main_process() -> bool:
    import os

    return os.environ.get("RANK", "0") == "0"


def validate_config(
    cfg: Mapping[str, Any],
    task: Task,
    model_ref: str,
    hw: Mapping[str, Any],
    justified: Mapping[str, str],
    peft: str = "none",
) -> None:
    """The recipe's validation (every problem at once) against this machine and this model,
    before any weights load: unknown keys, batch arithmetic, bf16, vLLM mode, the group-size
    floor without a written justification, MoE without GSPO, a reference TRL cannot rebuild."""
    from ..plan.architecture import model_facts as _model_facts
    from ..plan.architecture import load_architecture
    from ..plan.recipe import Target, check

    try:
        moe = load_architecture(model_ref).moe
    except Exception:  # noqa: BLE001 - an unreadable config is reported when the model loads
        moe = False
    target = Target(gpus=int(hw.get("gpus", 0)), bf16=bool(hw.get("bf16")), processes=_world_size())
    config = {k: v for k, v in cfg.items() if k not in ("output_dir",)}
    check(
        config,
        source=str(task.path),
        target=target,
        model=_model_facts(model_ref, False, moe),
        justified=justified,
        peft=peft,
    )


def enforce_gate(task: Task, opts: TrainOptions) -> dict[str, Any]:
    """THE place where the inspection gate is checked: before any model loads.

    Training against an uninspected reward is how a run reward-hacks. Returns the summary that
    goes into the run's config; ``--no-gate REASON`` bypasses the check and records the reason.
    """
    from ..gate import enforce

    return enforce(task, gate_path=opts.gate_path, no_gate_reason=opts.no_gate_reason, model=opts.model)


class _MetricsLog:
    """Appends one JSON line per log event; flushes every line so a crash loses nothing.
    ``offset``: the run's seconds before this session (a resume), so ``time`` continues."""

    def __init__(self, path: Path, extra: Mapping[str, Any] | None = None, offset: float = 0.0) -> None:
        self.path = path
        self.extra = dict(extra or {})
        self.t0 = time.time() - offset

    def elapsed(self) -> float:
        return time.time() - self.t0

    def write(self, step: int, values: Mapping[str, Any]) -> None:
        line = {"step": step, "time": round(self.elapsed(), 3), **self.extra, **values}
        with self.path.open("a") as fh:
            fh.write(json.dumps(line, default=_jsonable) + "\n")


def _jsonable(x: Any) -> Any:
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def _truncate_metrics(path: Path, step: int) -> float | None:
    """On resume, lines logged after the checkpoint are logged again: move them aside, don't lose
    them. Returns the last kept line's time (the run's seconds at the checkpoint, roughly)."""
    if not path.exists():
        return None
    keep, dropped = [], []
    last_time = None
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
            if rec.get("step", 0) <= step:
                keep.append(line)
                if isinstance(rec.get("time"), int | float):
                    last_time = float(rec["time"])
            else:
                dropped.append(line)
        except (json.JSONDecodeError, AttributeError):
            dropped.append(line)
    if dropped:
        with (path.parent / "metrics.replaced.jsonl").open("a") as fh:
            fh.write("\n".join(dropped) + "\n")
        path.write_text("".join(line + "\n" for line in keep))
    return last_time


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint (see ``rlvr.train.checkpoints``)."""
    from .checkpoints import resume_point

    point = resume_point(run_dir)
    return point.checkpoint.path if point.checkpoint else None


def build_dataset(task: Task, rows: list[dict[str, Any]]) -> Any:
    from datasets import Dataset

    reserved = {
        "prompt",
        "completion",
        "completion_ids",
        "prompts",
        "completions",
        "trainer_state",
        "log_metric",
        "log_extra",
    }
    clash = sorted(reserved & set().union(*(r.keys() for r in rows))) if rows else []
    if clash:
        raise ConfigError(
            Problem(
                f"{task.path}: data.train",
                f"column(s) {clash} clash with names TRL passes to reward functions",
                "rename them in the data file",
            )
        )
    return Dataset.from_list([{**r, "prompt": task.render_prompt(r)} for r in rows])


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _previous_run(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(config.yaml's rlvr: section, run.json) of the run in ``run_dir``; {} for what is missing."""
    from .. import yamlio

    rl: dict[str, Any] = {}
    try:
        cfg = yamlio.load((run_dir / "config.yaml").read_text(encoding="utf-8")) or {}
        if isinstance(cfg, Mapping) and isinstance(cfg.get("rlvr"), Mapping):
            rl = dict(cfg["rlvr"])
    except Exception:  # noqa: BLE001 - no readable config: resume falls back to the task's model
        pass
    return rl, _read_json(run_dir / "run.json")


def resume_model(task: Task, opts: TrainOptions, previous: Mapping[str, Any]) -> str | None:
    """The model a resumed run continues from: the one it started from (an SFT output, say), not
    the task's. ``--model`` on a resume must name the same model."""
    started = previous.get("model_arg") or previous.get("model")
    if not isinstance(started, str) or not started:
        return opts.model
    if opts.model is not None:
        from ..gate.record import _same_model

        if not _same_model(opts.model, started):
            raise ConfigError(
                Problem(
                    "--model",
                    f"{opts.model!r} is not the model this run started from ({started!r}); a resume continues the run's own weights",
                    "drop --model (resume reads it from the run), or start a new run in another --run-dir",
                )
            )
    return started if started != task.model else None


def _finished(meta: Mapping[str, Any], max_steps: int, final: Path) -> bool:
    """Whether a run has already trained what was asked: run.json says done, final/ exists, and
    the step target (``--max-steps``, else the one the run had) is reached."""
    if meta.get("status") != "done" or not final.exists():
        return False
    done = int(meta.get("steps") or 0)
    target = max_steps if max_steps > 0 else int(meta.get("max_steps") or 0)
    return target <= done


def train(task: Task, opts: TrainOptions) -> TrainResult:
    """Run GRPO on ``task``. Raises ``GateError`` before anything loads when the gate fails,
    ``RunStopped`` when the run cannot learn, ``RunError`` when an eval decides nothing."""
    run_dir = opts.run_dir
    previous_rlvr, previous_meta = _previous_run(run_dir) if opts.resume else ({}, {})
    if opts.resume:
        opts = dataclasses.replace(opts, model=resume_model(task, opts, previous_rlvr))
    gate = enforce_gate(task, opts)
    from ..plan import recipe

    hw = recipe.hardware()
    cfg = resolve_grpo(task, opts, hw)
    rewards = task.reward_set()
    cfg["reward_weights"] = rewards.weights
    justified = recipe.justifications(task.grpo)
    file_rlvr = read_config_file(opts.config_path)[1] if opts.config_path is not None else {}
    justified.update(file_rlvr.get("justification") or {})
    stop_rules = StopRules.resolve(task.grpo.get("stop"), file_rlvr.get("stop"))
    from .dynamic import DynamicSampling

    dynamic = DynamicSampling.resolve(
        task.grpo.get("dynamic"), file_rlvr.get("dynamic"), variant=recipe.variant_of(cfg)
    )
    if dynamic.mode == "filter":  # an unset re-check becomes two epochs' worth of steps
        per_step = (
            int(cfg.get("per_device_train_batch_size", 8))
            * int(cfg.get("gradient_accumulation_steps", 1))
            * _world_size()
            // int(cfg.get("num_generations", 8))
        )
        dynamic = dynamic.for_epoch(len(task.load_split("train")), per_step)
    from ..models import resolve_model

    model_arg = opts.model or task.model
    model_ref = resolve_model(model_arg)
    peft = opts.peft or file_rlvr.get("peft") or "none"
    validate_config(cfg, task, model_ref, hw, justified, peft)
    from .dynamic import check_batch

    check_batch(dynamic, cfg, _world_size())
    from ..lengths import require_fit

    require_fit(
        task, model_ref, budget=cfg.get("max_completion_length")
    )  # a budget past the model's positions: refused before weights load
    peft_config, load_kwargs = peft_setup(peft, hw)
    if run_dir.exists() and any(run_dir.iterdir()) and not opts.resume:
        if (run_dir / "metrics.jsonl").exists() or (run_dir / "checkpoints").exists():
            if latest_checkpoint(run_dir) is None:
                status = _read_json(run_dir / "run.json").get("status", "unknown")
                raise RunError(
                    f"{run_dir} already holds a run (status {status}) with no complete checkpoint to resume: choose another --run-dir, or delete it"
                )
            raise RunError(f"{run_dir} already holds a run; pass --resume to continue it, or choose another --run-dir")
    final = run_dir / "final"
    main = _is_main_process()
    if opts.resume and _finished(previous_meta, int(cfg["max_steps"]), final):
        return TrainResult(
            run_dir,
            final,
            int(previous_meta.get("steps") or 0),
            float(previous_meta.get("seconds") or 0.0),
            [],
            main,
            already_done=True,
        )
    from .checkpoints import mark_complete, resume_point, set_aside

    resume_from: Path | None = None
    skipped: tuple[Path, ...] = ()
    offset = 0.0
    if opts.resume:
        point = resume_point(run_dir)
        if point.checkpoint is None:
            found = f"; found only incomplete ones: {', '.join(p.name for p in point.skipped)}" if point.skipped else ""
            raise RunError(f"{run_dir}: nothing to resume (no complete checkpoints/checkpoint-N{found})")
        resume_from, skipped = point.checkpoint.path, point.skipped
        if main and skipped:
            set_aside(skipped)
        offset = point.checkpoint.elapsed or 0.0
    run_dir.mkdir(parents=True, exist_ok=True)

    import torch
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from .. import rollouts
    from ..evaluate import evaluate
    from ..models import load_model, load_tokenizer

    eval_every = opts.eval_every if opts.eval_every is not None else task.eval.every
    eval_rows = task.load_split("eval")[: opts.eval_prompts or task.eval.max_prompts] if task.data.eval else []
    rlvr_section = {
        "task": str(task.path),
        "model": model_ref,
        "model_arg": model_arg,
        "variant": recipe.variant_of(cfg),
        "reward_terms": rewards.names,
        "reward_weights": rewards.weights,
        "gate": gate,
        "no_gate_reason": opts.no_gate_reason,
        "success_term": task.success_term,
        "eval": {
            "every": eval_every,
            "prompts": len(eval_rows),
            "term": task.success_term,
            "temperature": task.eval.temperature,
        },
        "stop": stop_rules.to_json(),
        "dynamic": dynamic.to_json(),
        "rollouts": {"per_step": rollouts.PER_STEP, "max_bytes": rollouts.MAX_BYTES, "keep": rollouts.KEEP},
        "hardware": dict(hw),
        "peft": {"method": peft, **({k: v for k, v in LORA.items() if k != "task_type"} if peft != "none" else {})},
    }
    if opts.config_path is not None:
        rlvr_section["config_file"] = str(opts.config_path)
    if justified:
        rlvr_section["justification"] = justified
    args = GRPOConfig(**cfg)
    resolved = {k: v for k, v in args.to_dict().items() if not k.startswith("_")}
    explicit = {k: resolved.get(k) for k in cfg}  # what we set, as TRL normalised it
    if main:
        (run_dir / "config.yaml").write_text(
            yaml.safe_dump(
                {"grpo": explicit, "rlvr": rlvr_section, "trl_resolved": resolved},
                sort_keys=False,
                default_flow_style=False,
                allow_unicode=True,
            )
        )

    metrics_path = run_dir / "metrics.jsonl"
    if resume_from is not None and main:
        last_time = _truncate_metrics(metrics_path, int(resume_from.name.split("-")[-1]))
        offset = offset or (last_time or 0.0)
    log = _MetricsLog(
        metrics_path, {"no_gate_reason": opts.no_gate_reason} if opts.no_gate_reason else None, offset=offset
    )
    sessions = list(previous_meta.get("sessions") or []) if opts.resume else []
    if resume_from is not None and main:
        log.write(
            int(resume_from.name.split("-")[-1]),
            {"event": "resume", "resumed_from": resume_from.name, "skipped": [p.name for p in skipped]},
        )
    tokenizer = load_tokenizer(model_ref)
    model = load_model(model_ref, **load_kwargs)
    evals: list[dict[str, Any]] = []
    watch = StopWatch(stop_rules)

    def run_eval(step: int) -> None:
        if not eval_rows:
            return
        res = evaluate(model, tokenizer, task, eval_rows, seed=task.seed)
        line = res.metrics()
        evals.append({"step": step, **line})
        log.write(step, line)
        res.raise_if_undecided(f"held-out eval at step {step}")

    class RlvrCallback(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.global_step == 0 and eval_every:
                run_eval(0)

        def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kw: Any) -> None:
            if not logs:
                return
            if state.is_world_process_zero:
                log.write(state.global_step, {k: v for k, v in logs.items()})
            # Every process sees the same values (TRL averages log_metric values and reward stats
            # across processes before logging), so every process stops at the same step.
            why = watch.update(state.global_step, logs)
            if why is not None:
                why += stop_evidence(run_dir, state.global_step)
                if state.is_world_process_zero:
                    log.write(state.global_step, {"event": "stopped", "reason": why})
                raise RunStopped(f"stopped at step {state.global_step}: {why}")

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if eval_every and state.global_step % eval_every == 0 and state.is_world_process_zero:
                run_eval(state.global_step)

        def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            # The Trainer has written every file of this checkpoint: mark it complete.
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if state.is_world_process_zero and path.is_dir():
                mark_complete(path, step=state.global_step, elapsed=log.elapsed())

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if eval_every and state.global_step % eval_every and state.is_world_process_zero:
                run_eval(state.global_step)

    recorder = rollouts.Recorder(
        run_dir,
        rewards,
        group_size=int(cfg.get("num_generations", 8)),
        logging_steps=int(args.logging_steps or 1),
        session=len(sessions) + 1,
        enabled=main,
    )
    trainer_cls: Any = GRPOTrainer
    if dynamic.enabled:
        from .dynamic import trainer_class

        trainer_cls = trainer_class(GRPOTrainer)
    trainer = trainer_cls(
        model=model,
        reward_funcs=recorder.wrap(rewards.trl_functions()),
        args=args,
        train_dataset=build_dataset(task, task.load_split("train")),
        processing_class=tokenizer,
        callbacks=[RlvrCallback()],
        peft_config=peft_config,
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
    session = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "resumed_from": str(resume_from) if resume_from else None,
        "skipped": [str(p) for p in skipped],
        "from_step": int(resume_from.name.split("-")[-1]) if resume_from else 0,
    }
    sessions.append(session)
    meta = {
        "status": "running",
        "task": str(task.path),
        "started": previous_meta.get("started") or session["started"],
        "resumed_from": session["resumed_from"],
        "sessions": sessions,
        "versions": _versions(),
        "threads": torch.get_num_threads(),
    }

    def write_meta() -> None:
        if main:
            (run_dir / "run.json").write_text(json.dumps(meta, indent=2))

    write_meta()
    t0 = time.time()
    try:
        trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    except BaseException as exc:
        session.update(seconds=round(time.time() - t0, 2), to_step=trainer.state.global_step)
        status = (
            "stopped"
            if isinstance(exc, RunStopped)
            else "interrupted"
            if isinstance(exc, KeyboardInterrupt)
            else "failed"
        )
        meta.update(
            status=status,
            error=f"{type(exc).__name__}: {exc}",
            steps=trainer.state.global_step,
            seconds=round(log.elapsed(), 2),
        )
        write_meta()
        raise
    session.update(seconds=round(time.time() - t0, 2), to_step=trainer.state.global_step)
    # Written beside final/ and renamed into place: a run killed while saving leaves the old
    # final/ (or none), never half of one.
    partial = run_dir / "final.partial"
    if main and partial.exists():
        import shutil

        shutil.rmtree(partial)
    if peft_config is not None:
        # The adapter alone in final/adapter; final/ itself holds the merged model, so every later
        # stage (probe, eval, a next run) loads it like any checkpoint.
        trainer.save_model(str(partial / "adapter"))
        if main and peft == "lora":
            trainer.model.merge_and_unload().save_pretrained(partial)
    else:
        trainer.save_model(str(partial))
    seconds = log.elapsed()
    if main:
        import shutil

        tokenizer.save_pretrained(partial)
        if final.exists():
            shutil.rmtree(final)
        partial.rename(final)
        meta.update(
            status="done",
            steps=trainer.state.global_step,
            max_steps=trainer.state.max_steps,
            seconds=round(seconds, 2),
            final=str(final),
        )
        meta.pop("error", None)
        write_meta()
    _end_distributed(trainer)
    return TrainResult(
        run_dir, final, trainer.state.global_step, seconds, evals, main, resumed_from=resume_from, skipped=skipped
    )


def _end_distributed(trainer: Any) -> None:
    """Under ``accelerate launch``: wait until rank 0 has written final/, then tear the process
    group down. A rank that simply exited while its gloo threads were live aborted now and then
    ("terminate called without an active exception", exit -6), failing a finished run."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        trainer.accelerator.wait_for_everyone()
        dist.destroy_process_group()


def quiet_progress(trainer: Any, enabled: bool, desc: str) -> None:
    """Replace the Trainer's progress output (which prints every log dict) with one bar."""
    from transformers import PrinterCallback, ProgressCallback, TrainerCallback

    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    if not enabled:
        return

    class Bar(TrainerCallback):
        bar: Any = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            from tqdm.auto import tqdm

            if state.is_world_process_zero:
                self.bar = tqdm(
                    total=state.max_steps, initial=state.global_step, desc=desc, unit="step", dynamic_ncols=True
                )

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.bar is not None:
                self.bar.update(state.global_step - self.bar.n)

        def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kw: Any) -> None:
            if self.bar is not None and logs:
                # GRPO's loss is ~0 by construction on-policy with beta 0: show what moves instead.
                keys = (
                    {"reward": "reward", "frac_reward_zero_std": "zero_std"} if "reward" in logs else {"loss": "loss"}
                )
                shown = {short: logs[k] for k, short in keys.items() if isinstance(logs.get(k), (int, float))}
                self.bar.set_postfix({k: f"{v:.3g}" for k, v in shown.items()}, refresh=False)

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.bar is not None:
                self.bar.close()

    trainer.add_callback(Bar())


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("rlvr", "trl", "transformers", "torch", "accelerate"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out
