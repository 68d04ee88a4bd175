"""Every command that writes meets an unwritable place (a read-only file system, a file in the way,
a full disk) with one line naming the path and the cause in words, and exit status 2: the one
boundary in ``rlvr.cli.main``, worded by ``rlvr.cli.oserrors``."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from rlvr.cli.main import main
from rlvr.cli.oserrors import describe
from support.disks import CAUSE, KINDS, unwritable
from support.tasks import make_task


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-step run, for the commands that read a run and write beside it (rlvr report)."""
    root = tmp_path_factory.mktemp("run")
    task = make_task(root / "task", rows=4)
    run = root / "run"
    assert main(["train", str(task), "--no-gate", "t", "--max-steps", "1", "--no-progress", "--run-dir", str(run)]) == 0
    return run


def command(name: str, task: Path, out: Path, tmp_path: Path, run: Path) -> list[str]:
    if name == "report":
        return ["report", str(run), "--out", str(out)]
    if name == "score":
        done = tmp_path / "done.jsonl"
        done.write_text(json.dumps({"prompt": "1+1=", "completion": "<answer>2</answer>", "answer": "2"}) + "\n")
        return ["score", str(done), "--task", str(task), "--out", str(out / "scored.jsonl")]
    return {
        "train": ["train", str(task), "--no-gate", "t", "--max-steps", "1", "--no-progress", "--run-dir", str(out)],
        "sft": ["sft", str(task), "--max-steps", "1", "--no-progress", "--out", str(out)],
        "probe": ["probe", str(task), "-k", "2", "--max-prompts", "2", "--no-progress", "--out", str(out)],
        "inspect build": ["inspect", "build", str(task), "--size", "4", "--gate", str(out)],
        "plan": ["plan", str(task), "--gpus", "0", "--out", str(out)],
        "serve": ["serve", str(task), "--no-gate", "t", "--write-adapter", "verl", str(out)],
        "demo": ["demo", "--no-progress", "--out", str(out)],
    }[name]


WRITERS = ["train", "sft", "probe", "inspect build", "plan", "score", "serve", "demo", "report"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", WRITERS)
def test_an_unwritable_output_is_one_line_naming_the_path_and_cause_with_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, kind: str, finished_run: Path
) -> None:
    task = make_task(tmp_path / "task", rows=4)
    with unwritable(kind, tmp_path / "disk" if kind != "file-in-the-way" else tmp_path) as out:
        code = main(command(name, task, out, tmp_path, finished_run))
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("rlvr ")]
    assert code == 2, err
    assert len(err) == 1, err
    fault = str(tmp_path / "blocker") if kind == "file-in-the-way" else str(tmp_path / "disk" / kind)
    assert fault in err[0] and CAUSE[kind] in err[0], err[0]
    assert ".tmp" not in err[0], err[0]  # the file being written is named, never its temporary (rlvr.atomic)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.EROFS, "read-only"),
        (errno.EACCES, "permission denied"),
        (errno.ENOSPC, "no space left"),
        (errno.EDQUOT, "no space left"),
        (errno.EISDIR, "is a folder, not a file"),
        (errno.ENOENT, "no such file or folder"),
    ],
)
def test_each_common_cause_is_worded_with_the_path(code: int, words: str) -> None:
    assert describe(RuntimeError("not an operating-system error")) is None
    try:
        try:
            raise OSError(code, "x", "/some/where")
        except OSError as inner:
            raise RuntimeError("a library's own error") from inner
    except RuntimeError as outer:
        line = describe(outer)
    assert line is not None and line.startswith("/some/where: ") and words in line
