"""Unwritable places for the tests of the CLI's one boundary for operating-system errors.

``unwritable(kind, root)`` returns a path a command cannot create, for three kinds: a read-only
file system, a file in the way (a part of the path is a file) and a full disk. A read-only and a
full file system are real tmpfs mounts where this process may mount (root with CAP_SYS_ADMIN: a
read-only mount binds root too, where a chmod would not); elsewhere the same errors are injected
at ``os.mkdir``/``os.open``/``open`` for paths under the folder, so the test runs everywhere."""

from __future__ import annotations

import builtins
import errno
import io
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

KINDS = ("read-only", "file-in-the-way", "full-disk")


def _mount(folder: Path, options: str) -> bool:
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    return done.returncode == 0


def _fill(folder: Path) -> None:
    with open(folder / "filler", "wb", buffering=0) as fh:  # noqa: PTH123
        try:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc


@contextmanager
def _inject(folder: Path, code: int) -> Iterator[None]:
    """Fail every creation or write under ``folder`` with ``code`` (where mounting is not allowed)."""
    prefix = str(folder.resolve())
    real_mkdir, real_os_open, real_open = os.mkdir, os.open, builtins.open

    def under(path: Any) -> bool:
        try:
            return os.path.abspath(os.fspath(path)).startswith(prefix)
        except TypeError:
            return False

    def fail(path: Any) -> OSError:
        return OSError(code, os.strerror(code), os.fspath(path))

    def mkdir(path: Any, *a: Any, **k: Any) -> None:
        if under(path):
            raise fail(path)
        real_mkdir(path, *a, **k)

    def os_open(path: Any, flags: int, *a: Any, **k: Any) -> int:
        if under(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise fail(path)
        return real_os_open(path, flags, *a, **k)

    def open_(path: Any, mode: str = "r", *a: Any, **k: Any) -> Any:
        if not isinstance(path, int) and under(path) and any(m in mode for m in "wax+"):
            raise fail(path)
        return real_open(path, mode, *a, **k)

    patched: list[tuple[Any, str, Callable[..., Any]]] = [
        (os, "mkdir", mkdir), (os, "open", os_open), (builtins, "open", open_), (io, "open", open_)
    ]  # fmt: skip
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in patched]
    for mod, name, fn in patched:
        setattr(mod, name, fn)
    try:
        yield
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)


@contextmanager
def unwritable(kind: str, root: Path) -> Iterator[Path]:
    """A path under ``root`` that a command cannot write, failing the way ``kind`` says."""
    if kind == "file-in-the-way":
        (root / "blocker").write_text("a file where a folder should be\n")
        yield root / "blocker" / "out"
        return
    folder = root / kind
    folder.mkdir(parents=True)
    options = "ro,size=64k" if kind == "read-only" else "size=64k"
    if not _mount(folder, options):
        with _inject(folder, errno.EROFS if kind == "read-only" else errno.ENOSPC):
            yield folder / "out"
        return
    try:
        if kind == "full-disk":
            _fill(folder)
        yield folder / "out"
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


CAUSE = {"read-only": "read-only", "file-in-the-way": "is a file, not a folder", "full-disk": "no space left"}
