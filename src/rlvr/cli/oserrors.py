"""The one place an operating-system error becomes a message: every command's ``OSError`` (and a
library's error caused by one, or torch's and safetensors' own words for a full disk) is caught at
the CLI boundary (``rlvr.cli.main``) and printed as one line naming the path and the cause in
words, with exit status 2. A path that cannot be written is the user's setting to change, not a
bug to report, so it gets no traceback (``--debug`` still shows one)."""

from __future__ import annotations

import errno
from collections.abc import Sequence
from pathlib import Path

from ..errors import caused_by, disk_full

__all__ = ["EXIT_STATUS", "describe", "disk_full"]

EXIT_STATUS = 2
_OUTPUTS = "point the output (--out, --run-dir, --gate) at a writable folder"


def os_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` at the root of ``exc`` (None: it is not one, or only a closed pipe)."""
    for cur in caused_by(exc):
        if isinstance(cur, OSError) and not isinstance(cur, BrokenPipeError) and cur.errno is not None:
            return cur
    return None


def describe(exc: BaseException, outputs: Sequence[str] = ()) -> str | None:
    """One line for an operating-system error: ``PATH: cause (fix: ...)``; None when ``exc`` is not
    one. A failed ``write()`` (a full disk) carries no file name: the command's ``outputs`` (its
    ``--out``/``--run-dir`` values) are named instead, as the place it was writing under."""
    err = os_error(exc)
    if err is None and not disk_full(exc):
        return None
    path = str(err.filename) if err is not None and err.filename not in (None, "") else ""
    if disk_full(exc):
        cause, fix = "no space left on the device", f"free space or {_OUTPUTS} on a larger disk, then rerun"
    else:
        assert err is not None
        cause, fix = cause_in_words(err.errno, path)
    if not path and outputs:
        path = "writing under " + ", ".join(outputs)
    # A stage that knows more says it in a note (the run's "disk full at checkpoint-N; ...").
    notes = "; ".join(n for cur in caused_by(exc) for n in getattr(cur, "__notes__", ()))
    if notes:
        cause = f"{cause}: {notes}"
    return f"{path}: {cause} (fix: {fix})" if path else f"{cause} (fix: {fix})"


def cause_in_words(code: int | None, path: str) -> tuple[str, str]:
    """(the cause, the fix) of an errno, for the path it happened at."""
    if code == errno.EROFS:
        return "the file system is read-only", _OUTPUTS
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied", f"{_OUTPUTS}, or give this user write access to it"
    if code == errno.ENOTDIR:
        blocker = file_in_the_way(path)
        what = f"{blocker} is a file, not a folder" if blocker else "a part of the path is a file, not a folder"
        return what, "move the file away, or choose another path"
    if code == errno.EEXIST and path and Path(path).is_file():
        return "is a file, not a folder", "move the file away, or choose another path"
    if code == errno.EISDIR:
        return "is a folder, not a file", "name a file inside it, or choose another path"
    if code == errno.ENOENT:
        return "no such file or folder", "check the path"
    if code in (errno.ENOSPC, errno.EDQUOT):
        return "no space left on the device", f"free space or {_OUTPUTS} on a larger disk, then rerun"
    if code == errno.ENAMETOOLONG:
        return "the name is too long", "choose a shorter path"
    import os

    return (os.strerror(code) if code is not None else "operating-system error").lower(), "check the path"


def file_in_the_way(path: str) -> str:
    """The first part of ``path`` that exists and is a file ("" when there is none)."""
    if not path:
        return ""
    p = Path(path)
    for part in [*reversed(p.parents), p]:
        if part.exists() and not part.is_dir():
            return str(part)
    return ""
