"""Frames between the sandbox's processes: a 4-byte big-endian length, then the message as JSON
(``wire`` encodes the values inside it). A frame over the reader's limit is ``WireLimit``, bytes
that are not JSON ``WireError``; end of file is None."""

from __future__ import annotations

import json
import os
import struct
from typing import Any

from .wire import WireError, WireLimit


def send(fd: int, msg: Any) -> None:
    """One frame on ``fd`` (blocking)."""
    data = json.dumps(msg, separators=(",", ":")).encode("utf-8", "surrogatepass")
    data = struct.pack(">I", len(data)) + data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send_many(fd: int, msgs: list[Any]) -> None:
    """Several frames on ``fd`` in one write."""
    parts = []
    for msg in msgs:
        data = json.dumps(msg, separators=(",", ":")).encode("utf-8", "surrogatepass")
        parts.append(struct.pack(">I", len(data)) + data)
    view = memoryview(b"".join(parts))
    while view:
        view = view[os.write(fd, view) :]


def read_exact(fd: int, n: int) -> bytes | None:
    """Exactly ``n`` bytes, or None at end of file."""
    chunks = []
    while n > 0:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv(fd: int, limit: int) -> Any:
    """The next frame's JSON; None at end of file. ``WireError`` over ``limit`` bytes or when
    the bytes are not JSON."""
    head = read_exact(fd, 4)
    if head is None:
        return None
    n = struct.unpack(">I", head)[0]
    if n > limit:
        raise WireLimit(f"a frame of {n} bytes is over the {limit}-byte limit")
    body = read_exact(fd, n)
    if body is None:
        return None
    try:
        return json.loads(body.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError) as exc:
        raise WireError(f"a frame that is not JSON: {type(exc).__name__}") from None
