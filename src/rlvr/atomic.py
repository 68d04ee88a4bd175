"""The one way rlvr replaces a file it writes: the new content goes to a temporary file beside
it, which is then renamed over it, so a reader (or a crash) sees the old file or the new one,
never half of one. A failed write removes the temporary file, and its ``OSError`` names the file
being written, not the temporary one (``rlvr.cli.oserrors`` words it for the user)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["replace_file", "write_text"]


def replace_file(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` to fill a temporary file in ``path``'s folder, then rename it to
    ``path``. The temporary name holds the process id, so two processes writing one path never
    share it; the last rename wins."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if exc.filename is not None and Path(os.fsdecode(exc.filename)) == tmp:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """``replace_file`` with UTF-8 text."""
    return replace_file(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
