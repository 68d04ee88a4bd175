"""The callbacks rlvr hands TRL's Trainer: logging, held-out evals, stopping, checkpoint marks, one
progress bar; and the end of a distributed run.

``transformers`` is imported inside each function (heavy imports happen where used), so the
classes are built on call.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .rundir import MetricsLog
from .stopping import RunStopped, StopWatch, stop_evidence
from .tripwire import Tripwire


@contextmanager
def quiet_own_warnings() -> Iterator[None]:
    """Silence, around the call that raises them, the two warnings rlvr itself causes and a user
    cannot act on: transformers' FutureWarning for the ``gradient_checkpointing`` key rlvr's
    recipe states explicitly (every value that matters is stated; the older name works on every
    supported version), and TRL's "experimental" warning for the ``environment_factory`` rlvr
    passes on an episode task. Nothing else is filtered."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`gradient_checkpointing.*` is deprecated", category=FutureWarning)
        warnings.filterwarnings("ignore", message=r"You are using 'environment_factory'", category=UserWarning)
        yield


def rlvr_callback(
    run_dir: Path,
    log: MetricsLog,
    watch: StopWatch,
    run_eval: Callable[[int], None],
    eval_every: int,
    tripwire: Tripwire | None = None,
) -> Any:
    """A ``TrainerCallback`` that appends every log line to ``log``, runs the held-out eval at the
    start, every ``eval_every`` steps and at the end, stops a run that cannot learn (``watch``),
    runs the reward-hack tripwire's rounds (``rlvr.train.tripwire``: on a trip it saves a
    checkpoint at that step and ends training; ``run_grpo`` then raises ``RunStopped``), and marks
    each saved checkpoint complete."""
    from transformers import TrainerCallback

    from .checkpoints import mark_complete

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
            if tripwire is None:
                return
            trip = tripwire.check(state.global_step)
            # Each process probes its own share of the batch: any one that trips stops them all.
            if any_process(trip is not None):
                tripwire.halted = True
                control.should_save = True  # the checkpoint a fixed reward resumes from
                control.should_training_stop = True
                if state.is_world_process_zero:
                    why = trip.reason if trip is not None else "another process's tripwire"
                    log.write(state.global_step, {"event": "stopped", "reason": why, "tripwire": True})

        def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            # The Trainer has written every file of this checkpoint: mark it complete.
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if state.is_world_process_zero and path.is_dir():
                mark_complete(path, step=state.global_step, elapsed=log.elapsed())

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if eval_every and state.global_step % eval_every and state.is_world_process_zero:
                run_eval(state.global_step)

    return RlvrCallback()


def quiet_progress(
    trainer: Any,
    enabled: bool,
    desc: str,
    *,
    extra: Callable[[], Mapping[str, str]] | None = None,
    write: Callable[[str], None] | None = None,
) -> None:
    """Replace the Trainer's progress output (which prints every log dict) with one bar; with
    ``enabled`` off, one plain line per log step instead (``write``, stderr by default), so a run
    without a bar (a log file, CI) still shows that it moves. ``extra``: more values to show
    (the SFT dev pass rate), read at each log step."""
    from transformers import PrinterCallback, ProgressCallback, TrainerCallback

    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)

    rate = Throughput()

    def shown(logs: Mapping[str, Any]) -> dict[str, str]:
        # GRPO's loss is ~0 by construction on-policy with beta 0: show what moves instead.
        keys = {"reward": "reward", "frac_reward_zero_std": "zero_std"} if "reward" in logs else {"loss": "loss"}
        out = {short: f"{logs[k]:.3g}" for k, short in keys.items() if isinstance(logs.get(k), (int, float))}
        out.update(rate.shown(logs))
        out.update(extra() if extra is not None else {})
        return out

    class Clock(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * max(args.world_size, 1)
            rate.start(state.global_step, per_step)

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            rate.step = state.global_step

    class Bar(TrainerCallback):
        bar: Any = None
        last: dict[str, str] = {}  # noqa: RUF012 - replaced, never mutated

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            from tqdm.auto import tqdm

            if state.is_world_process_zero:
                self.bar = tqdm(
                    total=state.max_steps, initial=state.global_step, desc=desc, unit="step", dynamic_ncols=True
                )

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.bar is not None:
                self.bar.update(state.global_step - self.bar.n)
                more = extra() if extra is not None else {}
                if any(self.last.get(k) != v for k, v in more.items()):  # a dev check just ran
                    self.last = {**self.last, **more}
                    self.bar.set_postfix(self.last, refresh=False)

        def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kw: Any) -> None:
            if self.bar is not None and logs:
                self.last = shown(logs)
                self.bar.set_postfix(self.last, refresh=False)

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.bar is not None:
                self.bar.close()

    class Lines(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kw: Any) -> None:
            if logs and state.is_world_process_zero and ("loss" in logs or "reward" in logs):  # not the summary
                values = ", ".join(f"{k} {v}" for k, v in shown(logs).items())
                (write or _stderr_line)(f"{desc} step {state.global_step}/{state.max_steps}: {values}")

    trainer.add_callback(Clock())
    trainer.add_callback(Bar() if enabled else Lines())


class Throughput:
    """Samples (completions) per second since this session's first step, and tokens per second
    where the trainer logs its running token count (``num_tokens``), for the progress line. A
    fresh run counts tokens from 0 at its start; a resumed one has no count at its start, so its
    first log sets the baseline and shows no token rate, and later logs count from there."""

    def __init__(self) -> None:
        self.t0 = 0.0
        self.step0 = self.step = 0
        self.per_step = 0
        self.tokens0: float | None = None
        self.tokens_t0 = 0.0

    def start(self, step: int, per_step: int) -> None:
        self.t0, self.step0, self.step, self.per_step = time.monotonic(), step, step, per_step

    def shown(self, logs: Mapping[str, Any]) -> dict[str, str]:
        seconds = time.monotonic() - self.t0
        if not self.t0 or seconds <= 0 or self.step <= self.step0:
            return {}
        out = {"samples/s": f"{(self.step - self.step0) * self.per_step / seconds:.3g}"}
        tokens = logs.get("num_tokens")
        if isinstance(tokens, (int, float)):
            if self.tokens0 is None and self.step0 > 0:  # resumed: this log is the baseline
                self.tokens0, self.tokens_t0 = float(tokens), time.monotonic()
                return out
            if self.tokens0 is None:
                self.tokens0, self.tokens_t0 = 0.0, self.t0
            elapsed = time.monotonic() - self.tokens_t0
            if elapsed > 0:
                out["tokens/s"] = f"{(float(tokens) - self.tokens0) / elapsed:.3g}"
        return out


def _stderr_line(line: str) -> None:
    import sys

    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def end_distributed(trainer: Any) -> None:
    """Under ``accelerate launch``: wait until rank 0 has written final/, then tear the process
    group down. A rank that simply exited while its gloo threads were live aborted now and then
    ("terminate called without an active exception", exit -6), failing a finished run."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        trainer.accelerator.wait_for_everyone()
        dist.destroy_process_group()


def any_process(flag: bool) -> bool:
    """Whether ``flag`` is true on any training process (itself when there is one)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return flag
    import torch

    device = f"cuda:{torch.cuda.current_device()}" if dist.get_backend() == "nccl" else "cpu"
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())
