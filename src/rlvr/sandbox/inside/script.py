"""The candidate child of an stdin/stdout row (``script``): runs the program as ``__main__`` with
fd 0 as its stdin (a regular file holding the input, as a judge gives it), fd 1 and 2 as stdout
and stderr (pipes); ``exit()``, ``quit()`` and ``sys.exit`` work, and non-daemon threads are
joined and the streams flushed at exit, as ``python prog.py`` does. Like ``child.py`` it decides
nothing: the worker measures and the trainer judges.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import traceback
import types
from typing import Any


def run(src_fd: int = 3) -> int:
    """Run the program (read whole from ``src_fd``, then closed) as ``__main__`` on fd 0 (its
    input, a regular file), fd 1 and fd 2; the exit status is what ``python prog.py`` would
    return."""
    chunks = []
    while chunk := os.read(src_fd, 1 << 20):
        chunks.append(chunk)
    os.close(src_fd)
    source = b"".join(chunks).decode("utf-8", "replace")
    sys.stdin, sys.stdout, sys.stderr = (_stdio(fd, stream) for fd, stream in enumerate(_STDIO))
    setattr(sys, "__stdin__", sys.stdin)  # noqa: B010 - typeshed calls these final; a script may read them
    setattr(sys, "__stdout__", sys.stdout)  # noqa: B010
    setattr(sys, "__stderr__", sys.stderr)  # noqa: B010
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = module
    status = 0
    try:
        exec(compile(source, "<solution>", "exec"), module.__dict__)  # noqa: S102 - inside the sandbox
    except SystemExit as exc:
        status = exit_status(exc)
    except BaseException as exc:  # noqa: BLE001 - the traceback goes to stderr, as python would print it
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
        status = 1
    try:
        import atexit

        threading = sys.modules.get("threading")  # as CPython's exit: only if the program loaded it
        if threading is not None:
            threading._shutdown()  # join non-daemon threads, as at exit
        atexit._run_exitfuncs()
    except SystemExit as exc:
        status = exit_status(exc)
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - a closed stream: what it held is lost, as in python
            status = status or 120
    return status


_STDIO = (sys.stdin, sys.stdout, sys.stderr)  # the worker's, made by CPython: their encodings


def _stdio(fd: int, like: Any) -> io.TextIOWrapper:
    """A standard stream as CPython's start-up makes it (``create_stdio``): buffered, ``newline``
    "\\n" (no translation on POSIX), the interpreter's encoding and errors, stderr line-buffered
    with ``backslashreplace``, ``mode`` and the raw file's ``name`` set (the PyRival FastIO
    template reads ``file.mode``)."""
    write = fd > 0
    buf: Any = open(fd, "wb" if write else "rb", -1, closefd=False)  # noqa: SIM115 - the process's own stream
    buf.raw.name = ("<stdin>", "<stdout>", "<stderr>")[fd]
    encoding = getattr(like, "encoding", None) or "utf-8"
    errors = "backslashreplace" if fd == 2 else getattr(like, "errors", None) or "strict"
    stream = io.TextIOWrapper(buf, encoding, errors, "\n", line_buffering=fd == 2)
    stream.mode = "w" if write else "r"  # type: ignore[misc]
    return stream


def exit_status(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except BaseException:  # noqa: BLE001
        pass
    return 1
