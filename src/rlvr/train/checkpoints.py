"""A run's checkpoints: which are complete, which one ``--resume`` continues from, and when a run
is already finished.

The Trainer writes a checkpoint file by file (weights, optimizer, scheduler, RNG state, then
``trainer_state.json``), straight into ``checkpoints/checkpoint-N/``. A process killed in the
middle (``kill -9``, a preempted node, a full disk) leaves a folder that looks like a checkpoint
and is not one: resuming from it fails with a raw ``FileNotFoundError`` or, worse, loads half a
state. So once the Trainer has finished a checkpoint (its ``on_save`` callback), ``rlvr train``
writes ``rlvr-complete.json`` into it, atomically (a temporary file, then a rename). A checkpoint
is complete exactly when that marker is there.

Resume picks the newest complete checkpoint and sets every newer incomplete one aside (renamed
``incomplete-checkpoint-N``, kept for a post-mortem), so the Trainer's rotation
(``save_total_limit``) never counts a broken folder against a good one; the caller says which it
skipped. Runs written before the marker existed have none at all: their checkpoints count as
complete when ``trainer_state.json`` (the Trainer's last file) parses.

The marker also records the run's elapsed seconds at that step, so the times in ``metrics.jsonl``
and the final summary continue across a resume instead of restarting at 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import atomic

MARKER = "rlvr-complete.json"
PREFIX = "checkpoint-"
SET_ASIDE = "incomplete-"


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    step: int
    complete: bool
    elapsed: float | None = None  # the run's seconds when it was written (None: not recorded)


def _step(path: Path) -> int | None:
    tail = path.name[len(PREFIX) :]
    return int(tail) if path.name.startswith(PREFIX) and tail.isdigit() else None


def _trainer_state_parses(path: Path) -> bool:
    try:
        json.loads((path / "trainer_state.json").read_text())
        return True
    except (OSError, ValueError):
        return False


def scan(run_dir: Path) -> list[Checkpoint]:
    """Every ``checkpoints/checkpoint-N`` of ``run_dir``, oldest first, each marked complete or not."""
    folders = [
        (s, p) for p in (run_dir / "checkpoints").glob(PREFIX + "*") if p.is_dir() and (s := _step(p)) is not None
    ]
    folders.sort()
    legacy = bool(folders) and not any((p / MARKER).exists() for _, p in folders)
    out = []
    for step, path in folders:
        marker = _read_marker(path)
        if marker is not None:
            out.append(Checkpoint(path, step, True, marker.get("elapsed")))
        else:
            out.append(Checkpoint(path, step, legacy and _trainer_state_parses(path)))
    return out


def _read_marker(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def mark_complete(path: Path, *, step: int, elapsed: float) -> None:
    """Write the completeness marker into a checkpoint the Trainer has finished saving."""
    atomic.write_text(path / MARKER, json.dumps({"step": step, "elapsed": round(elapsed, 3)}) + "\n")


@dataclass(frozen=True)
class ResumePoint:
    checkpoint: Checkpoint | None  # None: nothing complete to resume from
    skipped: tuple[Path, ...]  # incomplete checkpoints, newest first, where they were found

    def describe_skipped(self) -> str:
        if not self.skipped:
            return ""
        names = ", ".join(p.name for p in self.skipped)
        return f"skipped incomplete checkpoint(s) {names} (cut off while saving; set aside as {SET_ASIDE}<name>)"


def resume_point(run_dir: Path) -> ResumePoint:
    """The newest complete checkpoint, and the incomplete ones found (see the module doc)."""
    found = scan(run_dir)
    complete = [c for c in found if c.complete]
    skipped = tuple(c.path for c in reversed(found) if not c.complete)
    return ResumePoint(complete[-1] if complete else None, skipped)


def set_aside(paths: tuple[Path, ...]) -> list[Path]:
    """Rename incomplete checkpoints out of the Trainer's sight; returns the new paths."""
    out = []
    for p in paths:
        target = p.with_name(SET_ASIDE + p.name)
        n = 1
        while target.exists():
            n += 1
            target = p.with_name(f"{SET_ASIDE}{n}-{p.name}")
        p.rename(target)
        out.append(target)
    return out


def disk_full_note(run_dir: Path, step: int) -> str:
    """What a run that found the disk full says (in ``run.json`` and its one-line error): where it
    stopped (``checkpoint-N`` when that checkpoint was being written) and the last complete checkpoint,
    which ``--resume`` continues from. The cut-off checkpoint lacks its marker, so nothing is lost."""
    point = resume_point(run_dir)
    cut = run_dir / "checkpoints" / f"{PREFIX}{step}"
    writing = cut.is_dir() and (point.checkpoint is None or point.checkpoint.path != cut)
    at = f"disk full at {cut.name}" if writing else f"disk full at step {step}"
    if point.checkpoint is None:
        return f"{at}; no checkpoint is complete, so a rerun starts from step 0"
    return f"{at}; the last complete checkpoint is {point.checkpoint.path.name} (--resume continues from it)"
