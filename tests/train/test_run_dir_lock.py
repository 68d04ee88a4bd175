"""One session per run folder: two ``rlvr train`` on one ``--run-dir`` both passed the "already
holds a run" check and interleaved one metrics.jsonl, checkpoints and final/ (issue 46, item 4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.errors import RunError
from rlvr.task import load_task
from rlvr.train import TrainOptions, train
from rlvr.train.rundir import LOCK, claimed, refuse_existing
from support.tasks import make_task

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, b"4242\\n", 0)
print("held", flush=True)
sys.stdin.read()
"""


def options(run: Path) -> TrainOptions:
    return TrainOptions(run_dir=run, max_steps=1, no_gate_reason="lock test", progress=False, eval_every=0)


def test_a_run_folder_another_session_holds_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run / LOCK)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunError, match=r"is in use by another rlvr train \(pid 4242\)"):
            train(task, options(run))
    finally:
        holder.communicate("")
    assert sorted(p.name for p in run.iterdir()) == [LOCK]


def test_the_folder_is_released_when_a_session_ends(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "task"))
    run = tmp_path / "run"
    train(task, options(run))
    with claimed(run):  # would raise if the finished session still held it
        assert (run / LOCK).read_text().strip() == str(os.getpid())


def test_the_lock_file_alone_is_not_an_earlier_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with claimed(run):
        refuse_existing(run)  # a folder holding only the lock is a new run's folder


def test_a_held_folder_cannot_be_claimed_twice(tmp_path: Path) -> None:
    with claimed(tmp_path), pytest.raises(RunError, match="in use"):
        with claimed(tmp_path):
            pass
