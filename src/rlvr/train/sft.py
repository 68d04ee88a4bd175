"""A short supervised warm start with TRL's ``SFTTrainer``.

RL sharpens what a model can already sometimes do; a model that never succeeds gets no signal
from GRPO (every completion in a group scores the same, so every advantage is 0). The recipe
routes such a model to SFT first. ``rlvr sft`` trains on the task's own train split, with the
target completion built from the ground truth in the task's answer format, and can stop as soon
as a *dev* slice of the train split (never the held-out eval) reaches a target pass rate -- the
demo uses that to stop at a partial, not perfect, base rate.

The stop target is a band (``--target-pass-rate 0.2-0.5``): a quick dev read every
``--check-every`` steps, a crossing confirmed by a read of ``--confirm-samples`` completions per
row (``rlvr.train.sftstop``, which says why). A confirmed rate above the band's upper edge is
reported as an overshoot, in the result, as a warning and in ``rlvr_sft.json``, with every
read's step and rate.

The split is stated before training: every train row without a target; with one, a dev slice
(``--dev-size``, default 100 or a fifth of the rows, whichever is smaller) taken first from rows
the starting model never trained on; a dev slice of more than half the rows is refused. The rows
SFT trained on are written to ``trained_rows.json`` beside the model (with the starting model's),
so the probe measures it on the others. A missed ``--target-pass-rate`` is a warning with the
last dev rate; with progress off, one line per logging step shows the loss and the dev rate.

Before training it measures the targets (``rlvr.lengths``) and warns, with counts, about targets
that would be cut: longer than ``generation.max_completion_length`` (the model would learn
answers that generation later cuts off), or longer than SFT's own sequence limit (TRL's
``max_length``, default 1024, or the model's positions, whichever is smaller), which truncates
the target during SFT itself. The warnings go to ``opts.warn`` (stderr by default), into
``SftResult.warnings`` and into ``rlvr_sft.json``.

On an episode task (``environment:``) the target is a *reference episode* instead
(``rlvr.episodes.reference``): each row's reference calls played through the real tools, their
results, then the answer, rendered with the run's tool template, trained with the tool results
masked out of the loss. A task without the reference column is refused (answer-only SFT would teach
answering without the tools), and so is a row whose calls are malformed, fail, or make an episode
longer than ``generation.max_completion_length`` or SFT's sequence limit.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data import TrainedRows, row_key, trained_rows_of
from ..errors import ConfigError, Problem
from ..lengths import reference_completion
from ..settings.recipe import SFT_DEFAULTS, TRL_SFT_MAX_LENGTH
from ..task import Task
from .settings import logging_places
from .sftdata import sft_data_rows
from .sftstop import StopRule, overshoot, percent_text

if TYPE_CHECKING:
    from ..episodes.tools import CallWatch


@dataclass(frozen=True)
class SftOptions:
    out_dir: Path
    model: str | None = None
    target_pass_rate: float | None = None  # the band's lower edge: SFT stops at the first check at or above it
    target_max: float | None = None  # the band's upper edge: a check above it is an overshoot (None: 1.0)
    check_every: int = 1  # optimiser steps between quick dev reads
    confirm_samples: int = 4  # completions per dev row of the confirming read (StopRule); 0: none
    check_temperature: float | None = None  # None: the task's generation.temperature; 0: greedy
    dev_size: int | None = None  # None: 100, or a fifth of the rows when that is smaller
    overrides: Mapping[str, Any] = field(default_factory=dict)
    data: Path | None = None  # train on this file's rows instead of the train split (train.sftdata)
    progress: bool = True
    warn: Callable[[str], None] | None = None  # default: one "rlvr sft: warning: ..." line on stderr
    say: Callable[[str], None] | None = None  # the split; default: stderr
    progress_line: Callable[[str], None] | None = None  # with progress off, one line per log step; default: stderr


@dataclass(frozen=True)
class SftResult:
    out_dir: Path
    steps: int
    dev_pass_rate: float | None
    seconds: float
    stopped_early: bool
    warnings: tuple[str, ...] = ()
    n_train: int = 0  # rows SFT trained on (recorded in trained_rows.json)
    n_dev: int = 0  # rows held out as the dev slice
    target_missed: str | None = None  # why --target-pass-rate was not reached, when it was not
    overshot: str | None = None  # the stopping check landed above the band's upper edge
    checks: tuple[tuple[int, float], ...] = ()  # (optimiser step, dev pass rate) of every quick read
    confirmations: tuple[tuple[int, float], ...] = ()  # (optimiser step, rate) of every confirming read
    dev_samples: int = 1  # completions per dev row behind dev_pass_rate (the confirming read's, when it decided)
    check_temperature: float | None = None


# The dev slice may be at most this share of the train split: more, and SFT learns from the few
# rows left (a default of 100 on 130 rows once trained on 30, silently).
MAX_DEV_SHARE = 0.5
# The default dev slice: 100 rows, or a fifth of the split when that is smaller.
DEFAULT_DEV_SHARE = 0.2


@dataclass(frozen=True)
class Split:
    """Which train rows SFT trains on and which it holds out as the dev slice."""

    train: list[dict[str, Any]]
    dev: list[dict[str, Any]]
    total: int
    reason: str = ""
    source: str = "train rows"  # what the rows are: the train split's, or those of --data FILE

    def describe(self) -> str:
        if not self.dev:
            return f"SFT split: training on all {self.total} {self.source} (no dev slice: no --target-pass-rate)"
        return (
            f"SFT split: training on {len(self.train)} of {self.total} {self.source}; {len(self.dev)} held out as "
            f"the dev slice for --target-pass-rate{self.reason}"
        )


def split_rows(
    rows: list[dict[str, Any]],
    target: float | None,
    dev_size: int | None,
    start: TrainedRows | None = None,
    source: str = "train rows",
) -> Split:
    """The SFT split. Without a target, every row trains. With one, ``dev_size`` rows (default:
    100 or a fifth of the rows, whichever is smaller) are held out, taken first from rows the start
    model never trained on; a dev slice over half the rows is refused, naming the numbers."""
    if target is None:
        return Split(list(rows), [], len(rows), source=source)
    n = len(rows)
    auto = dev_size is None
    size = max(1, min(100, int(n * DEFAULT_DEV_SHARE))) if auto else int(dev_size or 0)
    if size < 1 or n < 2 or size > n * MAX_DEV_SHARE:
        raise ConfigError(
            Problem(
                "--dev-size",
                f"a dev slice of {size} rows would leave {max(0, n - size)} of the {n} train rows to train on "
                f"(at most {MAX_DEV_SHARE:.0%} may be held out)",
                f"pass --dev-size {max(1, int(n * DEFAULT_DEV_SHARE))} or fewer, or add rows",
            )
        )
    order = list(range(n))
    if start is not None:  # unseen rows first, in file order
        order.sort(key=lambda i: start.seen(rows[i]))
    dev_idx = set(order[:size])
    reason = " (default: a fifth of the rows, at most 100)" if auto else ""
    train = [r for i, r in enumerate(rows) if i not in dev_idx]
    return Split(train, [rows[i] for i in sorted(dev_idx)], n, reason, source)


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


def reference_episodes(
    task: Task,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    train_rows: list[dict[str, Any]],
    *,
    max_length: int | None = None,
    positions: int | None = None,
    source: str | None = None,
) -> list[Any]:
    """The ``ReferenceEpisode`` of each of ``train_rows`` (a subset of the split's ``rows``), or
    ``ConfigError`` listing every bad row by its line in the train file: no column, malformed
    calls, a call that fails, an episode past the generation budget or SFT's sequence limit.
    ``tokenizer`` is prepared for episodes here (changed in place)."""
    from ..episodes import build_toolbox, prepare_tokenizer
    from ..episodes.reference import ReferenceError, build_episode, column_problems, read_calls
    from ..episodes.tools import CallWatch

    spec = task.environment
    assert spec is not None
    source = source or task.resolve(task.data.train or "train")  # the file problems name: --data's, if given
    toolbox = build_toolbox(spec, str(task.path))
    toolbox.watch = CallWatch("rlvr sft")  # a hanging tool shows as progress, not a silent pause
    problems = column_problems(spec, toolbox, rows, source, required=True)
    if problems:
        raise ConfigError(problems, source="rlvr sft")
    prepare_tokenizer(tokenizer)
    col, budget = spec.reference_column, task.generation.max_completion_length
    limit = min([x for x in (max_length, positions) if x] or [0]) or None
    line = {id(r): i for i, r in enumerate(rows, 1)}
    out = []
    for row in train_rows:
        i = line[id(row)]
        where, what = f"{source}:{i}", f"row {i}: {col}:"
        try:
            calls = read_calls(row[col], toolbox, spec)
            episode = build_episode(
                spec, toolbox, tokenizer, task.render_prompt(row), row, calls, reference_completion(task, row)
            )
        except ReferenceError as exc:
            problems.append(Problem(where, f"{what} {exc}", "fix the row's calls (or the tool)"))
            same_failure(toolbox.watch, source)  # a broken tool stops here, once, not once per row
            continue
        ids, mask = episode.tokens(tokenizer)
        n = len(ids) - mask.index(1) if 1 in mask else 0
        if n > budget:
            problems.append(
                Problem(
                    where,
                    f"{what} the reference episode needs {n} tokens, generation.max_completion_length is {budget}",
                    "raise max_completion_length (every turn and tool result counts) or use fewer calls",
                )
            )
        elif limit is not None and len(ids) > limit:
            problems.append(
                Problem(where, f"{what} prompt and episode need {len(ids)} tokens, SFT keeps {limit}", "shorten it")
            )
        out.append(episode)
    if problems:
        raise ConfigError(problems, source="rlvr sft")
    return out


SAME_FAILURES = 3  # identical tool failures after which SFT stops: the tool is broken, not the rows


def same_failure(watch: CallWatch | None, source: str) -> None:
    """Stop with one problem once a tool has failed ``SAME_FAILURES`` times with the same error."""
    top = watch.commonest() if watch is not None else None
    if top is not None and top[2] >= SAME_FAILURES:
        tool, error, n = top
        raise ConfigError(
            Problem(
                source,
                f"the tool {tool!r} failed {n} times with the same error while playing the reference calls ({error}): "
                "the tool is broken, not the rows",
                "fix the tool (call it by hand with one row's arguments), then rerun",
            ),
            source="rlvr sft",
        )


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


def _stderr_say(message: str) -> None:
    sys.stderr.write(f"rlvr sft: {message}\n")


def run_sft(task: Task, opts: SftOptions) -> SftResult:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from ..evaluate import evaluate
    from ..models import load_model, load_tokenizer, resolve_model
    from .callbacks import quiet_own_warnings

    model_ref = resolve_model(opts.model or task.model)
    if opts.data is not None:  # checked before the model loads (train.sftdata)
        rows, data_warnings = sft_data_rows(task, opts.data)
    else:
        rows, data_warnings = task.load_split("train"), []
    start_rows = trained_rows_of(model_ref)  # an SFT model trained further: its rows are not a dev slice
    source = f"rows of {opts.data}" if opts.data is not None else "train rows"
    split = split_rows(rows, opts.target_pass_rate, opts.dev_size, start_rows, source)
    say = opts.say or _stderr_say
    say(split.describe())
    dev, train_rows = split.dev, split.train
    tokenizer = load_tokenizer(model_ref)
    settings = {**SFT_DEFAULTS, **dict(task.sft), **dict(opts.overrides)}  # rlvr.settings.recipe: SFT's own
    settings.setdefault("seed", task.seed)
    from ..lengths import max_positions

    limits = {"max_length": settings.get("max_length", TRL_SFT_MAX_LENGTH), "positions": max_positions(model_ref)}
    examples: list[dict[str, Any]]
    if task.environment is not None:  # before the model loads: a task without reference calls is refused
        file = str(opts.data) if opts.data is not None else None
        episodes = reference_episodes(task, tokenizer, rows, train_rows, **limits, source=file)
        examples = [dict(zip(("input_ids", "completion_mask"), e.tokens(tokenizer), strict=True)) for e in episodes]
        warnings: list[str] = []
    else:
        examples = sft_rows(task, train_rows)
        warnings = target_warnings(task, train_rows, tokenizer, **limits)
    warnings = data_warnings + warnings
    model = load_model(model_ref)
    for message in warnings:  # before training: a warning after the run is too late to act on
        (opts.warn or _stderr_warning)(message)
    cfg_kw = {k: v for k, v in settings.items() if k not in ("target_pass_rate",)}
    for key, value in logging_places(settings["report_to"], opts.out_dir, task.name).items():
        cfg_kw.setdefault(key, value)
    cfg_kw.update(
        output_dir=str(opts.out_dir / "trainer"), use_cpu=not torch.cuda.is_available(), bf16=False, disable_tqdm=True
    )
    if task.environment is not None:  # tokenized episodes: the loss reads their completion_mask (no tool results)
        cfg_kw["completion_only_loss"] = True
    with quiet_own_warnings():  # rlvr states gradient_checkpointing explicitly
        config = SFTConfig(**cfg_kw)
    reached: dict[str, Any] = {"rate": None, "stopped": False, "confirmed": False}
    checks: list[tuple[int, float]] = []
    confirmations: list[tuple[int, float]] = []
    check_t = task.generation.temperature if opts.check_temperature is None else opts.check_temperature
    low = opts.target_pass_rate
    # Greedy decoding gives one answer per row: at temperature 0 the quick read is the confirmation.
    rule = StopRule(low if low is not None else 1.0, opts.target_max, opts.confirm_samples if check_t > 0 else 0)

    def check(step: int) -> float:
        # Same seed at every check (common random numbers): two checks differ by the model, not the draw.
        rate = evaluate(model, tokenizer, task, dev, temperature=check_t, seed=task.seed).accuracy
        checks.append((step, rate))
        reached["rate"] = rate
        return rate

    def confirm(step: int, k: int) -> float:
        # A draw of its own (another seed): the quick read that chose this step does not bias it.
        rows = [r for r in dev for _ in range(k)]
        rate = evaluate(model, tokenizer, task, rows, temperature=check_t, seed=task.seed + 1).accuracy
        confirmations.append((step, rate))
        return rate

    def read(step: int) -> float | None:
        rate = rule.stop(check(step), lambda k: confirm(step, k))
        if rate is not None:
            reached.update(rate=rate, confirmed=True)
        return rate

    class LogEnds(TrainerCallback):
        """The first and the last step (the planned last, or the one the target stopped at) are
        logging steps too, a line each with --no-progress: a run shorter than ``logging_steps`` (10)
        otherwise logs nothing, and the last loss is the one a reader wants. After StopAtTarget,
        which decides the stop."""

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            if state.global_step in (1, state.max_steps) or control.should_training_stop:
                control.should_log = True
            return control

    class StopAtTarget(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            if low is not None and not state.global_step % opts.check_every and read(state.global_step) is not None:
                reached["stopped"] = True
                control.should_training_stop = True
            return control

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            # The last steps since the previous check: the missed-target line quotes the final rate.
            if low is not None and not reached["stopped"] and state.global_step % opts.check_every:
                read(state.global_step)
            return control

    t0 = time.time()
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(examples),
        processing_class=tokenizer,
        callbacks=[StopAtTarget(), LogEnds()],
    )
    from .callbacks import quiet_progress

    quiet_progress(
        trainer,
        opts.progress,
        "SFT",
        extra=lambda: {"dev": percent_text(reached["rate"])} if reached["rate"] is not None else {},
        write=opts.progress_line,
    )
    trainer.train()
    seconds = time.time() - t0
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(opts.out_dir)
    tokenizer.save_pretrained(opts.out_dir)
    # The rows this model trained on, with its start model's: the probe measures it on the others.
    TrainedRows(frozenset(row_key(r) for r in train_rows), ("sft",)).merged(start_rows).write(
        opts.out_dir, task=str(task.path)
    )
    missed = None
    if low is not None and not reached["confirmed"]:
        last = "never measured" if reached["rate"] is None else f"last {percent_text(reached['rate'])}"
        if confirmations and checks and confirmations[-1][0] == checks[-1][0]:
            last += f", its confirming read {percent_text(confirmations[-1][1])}"
        missed = (
            f"target dev pass rate {percent_text(low)} not reached in {trainer.state.global_step} "
            f"steps ({last} on {len(dev)} dev rows): raise --max-steps or the learning rate, or lower the target"
        )
        warnings.append(missed)
        (opts.warn or _stderr_warning)(missed)
    # The stopping read is the confirmed one: the overshoot names its rate, after the quick read before it.
    stop_reads = checks[:-1] + [(checks[-1][0], reached["rate"])] if checks else []
    overshot = overshoot(stop_reads, opts.target_max, len(dev)) if reached["stopped"] else None
    if overshot:
        warnings.append(overshot)
        (opts.warn or _stderr_warning)(overshot)
    result = SftResult(
        opts.out_dir,
        trainer.state.global_step,
        reached["rate"],
        seconds,
        reached["stopped"],
        tuple(warnings),
        n_train=len(train_rows),
        n_dev=len(dev),
        target_missed=missed,
        overshot=overshot,
        checks=tuple(checks),
        confirmations=tuple(confirmations),
        dev_samples=rule.confirm_samples if reached["confirmed"] and rule.confirm_samples else 1,
        check_temperature=check_t if opts.target_pass_rate is not None else None,
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
