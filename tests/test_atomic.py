"""``rlvr.atomic``: the one way rlvr replaces a file. A reader sees the old file or the new one;
a failed write leaves the old file and no temporary file, and its error names the file being
written. A structure test keeps every replace-by-rename in src going through it."""

from __future__ import annotations

import ast
import errno
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rlvr
from rlvr import atomic
from rlvr.cli.oserrors import describe

SRC = Path(rlvr.__file__).parent


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@given(old=st.text(), new=st.text())
def test_a_write_replaces_the_file_and_leaves_no_temporary(tmp_path_factory, old: str, new: str) -> None:
    folder = tmp_path_factory.mktemp("w")
    path = folder / "out.txt"
    path.write_text(old, encoding="utf-8")
    assert atomic.write_text(path, new) == path
    assert path.read_bytes() == new.encode("utf-8")
    assert _leftovers(folder) == []


@given(written=st.binary(max_size=200), at=st.integers(0, 2))
def test_a_write_that_fails_anywhere_keeps_the_old_file_and_no_temporary(
    tmp_path_factory, written: bytes, at: int
) -> None:
    folder = tmp_path_factory.mktemp("f")
    path = folder / "out.bin"
    path.write_bytes(b"old")

    def write(tmp: Path) -> None:
        if at >= 1:
            tmp.write_bytes(written)
        if at == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp))
        raise KeyboardInterrupt

    with pytest.raises((OSError, KeyboardInterrupt)):
        atomic.replace_file(path, write)
    assert path.read_bytes() == b"old"
    assert _leftovers(folder) == []


def test_the_error_names_the_file_being_written_not_the_temporary(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "plan.yaml"

    def refuse(tmp: Path) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp))

    with pytest.raises(PermissionError) as info:
        atomic.replace_file(path, refuse)
    assert info.value.filename == str(path)
    line = describe(info.value)
    assert line is not None and line.startswith(f"{path}: permission denied") and ".tmp" not in line


def test_a_folder_in_the_way_is_named_by_the_destination(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.mkdir()  # os.replace of a file onto a folder fails with EISDIR
    with pytest.raises(OSError) as info:
        atomic.write_text(path, "x")
    assert info.value.errno == errno.EISDIR and info.value.filename == str(path)
    assert _leftovers(tmp_path) == []


def test_two_processes_never_share_a_temporary_name(tmp_path: Path) -> None:
    seen: list[str] = []
    atomic.replace_file(tmp_path / "a", lambda tmp: (seen.append(tmp.name), tmp.write_text("x")))
    assert seen == [f"a.{os.getpid()}.tmp"]


# Files that rename something other than one file they wrote: model folders (models.py), the
# final model folder and checkpoint folders (train), the gate's SQLite database with its -wal/-shm
# companions (gate/store.py), and the kept-rollout log's rotation (keptrollouts.py).
_RENAMES_OF_THEIR_OWN = {
    "atomic.py",
    "models.py",
    "train/launch.py",
    "train/checkpoints.py",
    "gate/store.py",
    "keptrollouts.py",
}


def renames(code: str) -> list[int]:
    """Lines of ``code`` that rename a path: ``os.replace``/``os.rename`` and a one-argument
    ``.replace``/``.rename`` (``str.replace`` takes two)."""
    lines = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr not in {"replace", "rename"}:
                continue
            is_os = isinstance(f.value, ast.Name) and f.value.id == "os"
            if is_os or (len(node.args) == 1 and not node.keywords):
                lines.append(node.lineno)
    return sorted(lines)


def test_renames_finds_a_rename_by_hand_and_not_a_string_replace() -> None:
    code = "tmp.write_text('a')\ntmp.replace(p)\nos.rename(a, b)\ns = s.replace('a', 'b')\nPath(x).rename(y)\n"
    assert renames(code) == [2, 3, 5]


def test_every_replace_by_rename_in_src_goes_through_atomic() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel not in _RENAMES_OF_THEIR_OWN:
            found += [f"{rel}:{n}" for n in renames(path.read_text(encoding="utf-8"))]
    assert found == []
