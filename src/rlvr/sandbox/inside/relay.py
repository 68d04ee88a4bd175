"""The worker's relay: frames with the trainer on stdin/stdout, and moving a sample's bytes
between pipes with ``splice``, so the worker never reads a job, a record or an output into its
own memory (the next child, forked from it, cannot find one there). Runs in the worker (the
inside package: standard library only, see its ``__init__``).
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import termios
import time
from typing import Any

MAX_FRAME = 1 << 20  # one frame to the trainer, bytes


# -- framing with the pool: 1-byte type, 4-byte big-endian length, payload ----------------------
# Trainer -> worker: J (session control JSON: mode, timeout, number of inputs), then D frames
# (the test child's job, or one program-and-input per stdin/stdout case: spliced into the
# child's pipe, never read into this process).
# Worker -> trainer: H (hello), R (the test child's records), O / E (a script's stdout / stderr),
# C (how one stdin/stdout case ended), S (how the session ended).
def write_frame(kind: bytes, payload: bytes) -> None:
    """One frame to the trainer, on stdout."""
    data = kind + struct.pack(">I", len(payload)) + payload
    while data:
        data = data[os.write(1, data) :]


def read_exact(fd: int, n: int) -> bytes | None:
    """Exactly ``n`` bytes from ``fd``, or None at end of file."""
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def discard(fd: int, n: int) -> None:
    """Move ``n`` bytes from ``fd`` to /dev/null without reading them into this process."""
    null = os.open("/dev/null", os.O_WRONLY)
    try:
        while n > 0:
            moved = os.splice(fd, null, n)
            if moved <= 0:
                return
            n -= moved
    finally:
        os.close(null)


def fill(dst: int, n: int, deadline: float) -> bool:
    """Move the next ``n`` bytes of our stdin (the trainer's frame) into the file ``dst`` (a
    stdin/stdout case's input: a memfd, see ``harness.sealed_file``) without reading them into
    this process. False when the trainer's bytes did not come by ``deadline`` (the rest of the
    frame is then dropped) or our stdin ended."""
    while n > 0:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([0], [], [], left)[0]:
            discard(0, n)
            return False
        try:
            moved = os.splice(0, dst, n, flags=os.SPLICE_F_NONBLOCK)
        except BlockingIOError:
            continue
        if moved <= 0:
            return False
        n -= moved
    return True


def pump(deadline: float, n_in: int, dst: int, outs: dict[int, list[Any]], pidfd: int | None) -> str:
    """Move the next ``n_in`` bytes of our stdin (the trainer's frame) into ``dst``, then close
    it (``dst`` -1: nothing to move); relay each fd of ``outs`` (fd -> [frame type, cap, sent]; a
    negative cap drops what is over it instead of failing) to the trainer as frames, as it comes,
    never reading it into this process. Returns '' when every out is at end of file (and the
    process behind ``pidfd`` has ended), ``timeout`` or ``output_limit`` (decided the moment the
    cap is crossed)."""
    left_in = n_in
    if dst >= 0:
        os.set_blocking(dst, False)
    if not left_in and dst >= 0:
        os.close(dst)
        dst = -1
    for fd in outs:
        os.set_blocking(fd, False)
    live = dict(outs)
    gone = pidfd is None
    try:
        while live or not gone:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            rl = list(live) + ([pidfd] if pidfd is not None and not gone else [])
            r, w, _ = select.select(rl, [dst] if dst >= 0 else [], [], left)
            if pidfd is not None and pidfd in r:
                gone = True
            if dst >= 0 and dst in w:
                try:
                    left_in -= os.splice(0, dst, left_in, flags=os.SPLICE_F_NONBLOCK)
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    discard(0, left_in)
                    left_in = 0
                if not left_in:
                    os.close(dst)
                    dst = -1
            for fd in r:
                if fd not in live:
                    continue
                kind, cap, sent = live[fd]
                moved = pump_out(fd, kind, abs(cap) - sent)
                if moved is None:
                    del live[fd]
                elif moved < 0:  # over the cap
                    if cap >= 0:
                        return "output_limit"
                    discard_available(fd)
                    live[fd][2] = abs(cap)
                else:
                    live[fd][2] += moved
        return ""
    finally:
        if dst >= 0:
            os.close(dst)
        if left_in:
            discard(0, left_in)


def discard_available(fd: int) -> None:
    """Drop what is in a pipe now (a stream over its cap that is kept, not failed)."""
    avail = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    if avail > 0:
        discard(fd, avail)


def pump_out(fd: int, kind: bytes, room: int) -> int | None:
    """Forward what is in ``fd`` to the trainer as one frame of type ``kind``, at most ``room``
    bytes. Returns the bytes forwarded, None at end of file, -1 when more than ``room`` waits."""
    avail = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    if avail <= 0:
        try:
            byte = os.read(fd, 1)
        except BlockingIOError:
            return 0
        if not byte:
            return None
        if room <= 0:
            return -1
        os.write(1, kind + struct.pack(">I", 1) + byte)  # it came in just now: one byte
        return 1
    take = min(avail, room, MAX_FRAME)
    if take > 0:
        os.write(1, kind + struct.pack(">I", take))
        n = take
        while n:
            try:
                n -= os.splice(fd, 1, n)
            except BlockingIOError:
                select.select([], [1], [])  # the trainer is behind: wait until our stdout has room
    return -1 if avail > room else take
