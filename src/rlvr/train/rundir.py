"""The run folder: what a run reads back from it and what it appends to it.

``metrics.jsonl`` is append-only (``MetricsLog``: one flushed line per event, so a crash loses
nothing); on resume the lines logged after the checkpoint are moved aside, never lost
(``truncate_metrics``). ``config.yaml`` is a ``rlvr.settings.file.RunConfig``; ``run.json`` holds
the status and one entry per session. Where a resume starts (``resume_start``), which model it
continues (``resume_model``), and whether there is anything left to train (``run_finished``).
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Problem, RunError
from ..settings.file import RunConfig
from ..task import Task
from .settings import TrainOptions


class MetricsLog:
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


def truncate_metrics(path: Path, step: int) -> float | None:
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


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object file; {} when it is missing or not one."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def previous_run(run_dir: Path) -> tuple[RunConfig | None, dict[str, Any]]:
    """(config.yaml, run.json) of the run in ``run_dir``: None and {} for what is missing. A
    config.yaml that is there but malformed is refused (``ConfigError`` naming it and the key)."""
    path = run_dir / "config.yaml"
    return (RunConfig.read(path) if path.is_file() else None), read_json(run_dir / "run.json")


def resume_model(task: Task, opts: TrainOptions, previous: RunConfig | None) -> str | None:
    """The model a resumed run continues from: the one it started from (an SFT output, say), not
    the task's. ``--model`` on a resume must name the same model."""
    started = (previous.model_arg or previous.model) if previous is not None else ""
    if not started:
        return opts.model
    if opts.model is not None:
        from ..gate.record import same_model

        if not same_model(opts.model, started):
            raise ConfigError(
                Problem(
                    "--model",
                    f"{opts.model!r} is not the model this run started from ({started!r}); "
                    "a resume continues the run's own weights",
                    "drop --model (resume reads it from the run), or start a new run in another --run-dir",
                )
            )
    return started if started != task.model else None


def resume_options(opts: TrainOptions, previous: RunConfig | None) -> tuple[TrainOptions, list[str]]:
    """A run directory owns its settings: a resume trains with what the run was started with.
    ``config.yaml`` is the record: its GRPOConfig values (``max_steps``, ``save_steps``, every
    ``--set``) come back as the config file, and the rest from its ``rlvr:`` record (the eval
    cadence and size, the gate or the written reason for bypassing it, the logger). A flag given on
    the resume overrides the record explicitly; returns the options and one line per such flag."""
    if previous is None:
        return opts, []
    record = previous.record
    ev: Mapping[str, Any] = record["eval"] if isinstance(record.get("eval"), Mapping) else {}
    gate: Mapping[str, Any] = record["gate"] if isinstance(record.get("gate"), Mapping) else {}
    changes: dict[str, Any] = {}
    said: list[str] = []
    if opts.config_path is None:
        changes["config_path"] = Path(previous.source)
    else:
        said.append(f"--config {opts.config_path} replaces the run's settings in {previous.source}")
    old_max = previous.grpo.get("max_steps")
    if opts.max_steps is not None and opts.max_steps != old_max:
        said.append(f"--max-steps {opts.max_steps} (the run's: {old_max})")
    for key, value in opts.overrides.items():
        if previous.grpo.get(key) != value:
            said.append(f"--set {key}={value} (the run's: {previous.grpo.get(key)!r})")
    for name, flag, key in (("eval_every", "--eval-every", "every"), ("eval_prompts", "--eval-prompts", "prompts")):
        had = ev.get(key)
        given = getattr(opts, name)
        if given is None and isinstance(had, int):
            changes[name] = had
        elif given is not None and had is not None and given != had:
            said.append(f"{flag} {given} (the run's: {had})")
    if opts.peft is not None and opts.peft != previous.peft:
        said.append(f"--peft {opts.peft} (the run's: {previous.peft})")
    logger = previous.grpo.get("report_to")
    logger = ",".join(map(str, logger)) if isinstance(logger, list) else logger
    if opts.report_to == "none" and isinstance(logger, str) and logger not in ("", "none"):
        changes["report_to"] = logger
    if opts.no_gate_reason is None and opts.gate_path is None:
        if gate.get("status") == "bypassed" and isinstance(gate.get("no_gate_reason"), str):
            changes["no_gate_reason"] = gate["no_gate_reason"]
        elif isinstance(gate.get("record"), str):
            changes["gate_path"] = Path(gate["record"])
    return replace(opts, **changes), said


def run_finished(meta: Mapping[str, Any], max_steps: int, final: Path) -> bool:
    """Whether a run has already trained what was asked: run.json says done, final/ exists, and
    the step target (``--max-steps``, else the one the run had) is reached."""
    if meta.get("status") != "done" or not final.exists():
        return False
    done = int(meta.get("steps") or 0)
    target = max_steps if max_steps > 0 else int(meta.get("max_steps") or 0)
    return target <= done


def refuse_existing(run_dir: Path) -> None:
    """A new run (no --resume) never writes over a folder that already holds one."""
    if not (run_dir.exists() and any(p.name != LOCK for p in run_dir.iterdir())):
        return
    if (run_dir / "metrics.jsonl").exists() or (run_dir / "checkpoints").exists():
        if latest_checkpoint(run_dir) is None:
            status = read_json(run_dir / "run.json").get("status", "unknown")
            raise RunError(
                f"{run_dir} already holds a run (status {status}) with no complete checkpoint to resume: "
                "choose another --run-dir, or delete it"
            )
        raise RunError(f"{run_dir} already holds a run; pass --resume to continue it, or choose another --run-dir")


LOCK = ".rlvr-train.lock"


@contextmanager
def claimed(run_dir: Path, main: bool = True) -> Iterator[None]:
    """Hold the run folder for one session: an exclusive ``flock`` on ``run_dir/.rlvr-train.lock``
    (the holder's pid written in it), taken before the folder is checked for an earlier run and
    released when the session ends or its process dies. Without it two ``rlvr train`` on one
    ``--run-dir`` both passed the check and interleaved one ``metrics.jsonl``, checkpoints and
    ``final/``. Only the main process of a multi-process launch takes it. A file system without
    locks (some network mounts) runs unlocked: the lock guards against a mistake, not an attacker."""
    if not main:
        yield
        return
    import errno
    import fcntl
    import os

    run_dir.mkdir(parents=True, exist_ok=True)
    fd, writable = _open_lock(run_dir / LOCK)
    if fd < 0:
        yield  # a folder this process can neither write nor lock: it cannot interleave anything there
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                yield  # no locks on this file system
                return
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise RunError(
                f"{run_dir} is in use by another rlvr train (pid {holder}): wait for it to end, or choose "
                "another --run-dir"
            ) from None
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _open_lock(path: Path) -> tuple[int, bool]:
    """(the lock file's descriptor, whether it was opened for writing); -1 when it cannot be opened.
    In a folder this process cannot write (a finished run kept read-only) the lock is opened
    read-only, so a resume still reports "already finished", or fails at its first write, instead
    of failing here; an existing lock is still honoured (``flock`` works on a read-only descriptor)."""
    import errno
    import os

    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644), True
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
    try:
        return os.open(path, os.O_RDONLY), False
    except OSError:
        return -1, False


@dataclass(frozen=True)
class ResumeStart:
    """Where this session starts: the checkpoint (None: from scratch), the incomplete checkpoints
    set aside, and the run's seconds so far."""

    checkpoint: Path | None = None
    skipped: tuple[Path, ...] = ()
    offset: float = 0.0

    @property
    def step(self) -> int:
        return int(self.checkpoint.name.split("-")[-1]) if self.checkpoint is not None else 0


def resume_start(run_dir: Path, main: bool) -> ResumeStart:
    """The newest complete checkpoint to resume from; incomplete ones are set aside (by the main
    process). Raises ``RunError`` when there is none."""
    from .checkpoints import resume_point, set_aside

    point = resume_point(run_dir)
    if point.checkpoint is None:
        found = f"; found only incomplete ones: {', '.join(p.name for p in point.skipped)}" if point.skipped else ""
        raise RunError(f"{run_dir}: nothing to resume (no complete checkpoints/checkpoint-N{found})")
    if main and point.skipped:
        set_aside(point.skipped)
    return ResumeStart(point.checkpoint.path, point.skipped, point.checkpoint.elapsed or 0.0)


def versions() -> dict[str, str]:
    """The versions that decide what a run did (recorded in run.json)."""
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("rlvr", "trl", "transformers", "torch", "accelerate"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out
