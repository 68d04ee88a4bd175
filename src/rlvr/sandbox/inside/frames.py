"""Frames between the sandbox's processes: a 4-byte big-endian length, then the message as JSON
(``wire`` encodes the values inside it). A frame over the reader's limit is ``WireLimit``, bytes
that are not JSON ``WireError``; end of file is None."""

from __future__ import annotations

import json
import json.encoder
import os
import struct
from typing import Any

from .wire import WireError, WireLimit


def _unencodable(x: Any) -> Any:
    raise TypeError(f"{type(x).__name__} is not JSON")


# json.dumps(msg, separators=(",", ":")) without building an encoder per call: the same C encoder,
# made once in the worker, so that a fresh child's first frame writes fewer of its pages. No
# circular-reference table: a cycle (never sent: ``wire`` encodes values tree by tree) ends in
# RecursionError instead of ValueError.
_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_ENCODE = (
    _C_ENCODER(None, _unencodable, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True)
    if _C_ENCODER is not None
    else None
)


def dumps(msg: Any) -> str:
    """``msg`` as compact JSON, ASCII only (as ``json.dumps`` with compact separators)."""
    if _ENCODE is None:
        return json.dumps(msg, separators=(",", ":"))
    return "".join(_ENCODE(msg, 0))


_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads(text: str) -> Any:
    """Exactly one JSON value, nothing around it (stricter than ``json.loads``: no white space,
    which no sender writes). ``WireError`` otherwise."""
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError, RecursionError) as exc:
        raise WireError(f"a frame that is not JSON: {type(exc).__name__}") from None
    if end != len(text):
        raise WireError("a frame that is not JSON: extra data")
    return value


def send(fd: int, msg: Any) -> None:
    """One frame on ``fd`` (blocking)."""
    data = dumps(msg).encode("utf-8", "surrogatepass")
    data = struct.pack(">I", len(data)) + data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send_many(fd: int, msgs: list[Any]) -> None:
    """Several frames on ``fd`` in one write."""
    parts = []
    for msg in msgs:
        data = dumps(msg).encode("utf-8", "surrogatepass")
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
        text = body.decode("utf-8", "surrogatepass")
    except ValueError as exc:
        raise WireError(f"a frame that is not JSON: {type(exc).__name__}") from None
    return loads(text)
