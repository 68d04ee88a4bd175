"""The untrusted side of a sample: runs inside the forked child, after every layer is applied.

Standard library only; loaded by ``harness.py`` (never imported by the trainer). It decides
nothing: it executes the operations the trusted side asks for, in order, and answers each with
plain data (tagged JSON, exact types) plus a handle number, so the trusted side can name the
object again in a later operation. Expected values never come here.

Input frames (4-byte big-endian length + JSON): ``{"ops": [...]}``. One output frame per
operation, written as soon as it finishes, so a crash or a timeout keeps the earlier answers.

Operations (``h`` = the number of an earlier operation, whose result is kept here as its handle;
arguments are tagged values or ``["h", n]``):

- ``load``: exec the program (``prog``: only keep it, for stdio); ``name``: look a name up in the program's globals;
- ``call`` / ``getattr`` / ``setattr`` / ``getitem``: the usual, on handles;
- ``list`` / ``len`` / ``bool``: ``list(obj)``, ``len(obj)``, ``bool(obj)`` of a handle;
- ``val``: the current value of a handle (mutable results are re-read after later calls);
- ``stdio``: run the program with this stdin, answer the whole stdout;
- ``legacy``: exec a test file inside the child (only for rows the trusted side cannot decide,
  when the task asks to run them anyway; the answer is forgeable and flagged).
"""

from __future__ import annotations

import io
import json
import os
import struct
import sys
from typing import Any

MAX_DEPTH = 60


def encode(x: Any, depth: int = 0) -> list[Any]:
    """Tagged JSON with exact types: nothing the program defines survives the trip."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    t = type(x)
    if x is None:
        return ["n"]
    if t is bool:
        return ["b", x]
    if t is int:
        return ["i", x] if -(2**53) <= x <= 2**53 else ["I", format(x, "x")]
    if t is float:
        return ["f", repr(x)]
    if t is str:
        return ["s", x]
    if t is list or t is tuple:
        return ["l" if t is list else "t", [encode(v, depth + 1) for v in x]]
    if t is set or t is frozenset:
        return ["S" if t is set else "F", [encode(v, depth + 1) for v in x]]
    if t is dict:
        return ["d", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]]
    if t is bytes:
        return ["y", x.hex()]
    if t is complex:
        return ["c", repr(x.real), repr(x.imag)]
    return ["?", "object"]


_MUTABLE = (list, dict, set)


class Child:
    """The child's side of a session: reads batches of operations, answers each in order."""

    def __init__(self, rfd: int, wfd: int) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
        self.handles: list[Any] = []
        self.code = ""

    # framing
    def read(self) -> Any:
        """The next input frame's JSON, or None at end of file."""
        head = self._exact(4)
        if head is None:
            return None
        body = self._exact(struct.unpack(">I", head)[0])
        return None if body is None else json.loads(body.decode("utf-8"))

    def _exact(self, n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            chunk = os.read(self.rfd, n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    # values
    def arg(self, a: list[Any]) -> Any:
        """A tagged argument from the trusted side as a value (``["h", n]``: a kept result)."""
        tag = a[0]
        if tag == "h":
            return self.handles[a[1]]
        if tag == "n":
            return None
        if tag in ("b", "s"):
            return a[1]
        if tag == "i":
            return int(a[1])
        if tag == "I":
            return int(a[1], 16)
        if tag == "f":
            return float(a[1])
        if tag == "y":
            return bytes.fromhex(a[1])
        if tag == "sl":
            return slice(*[self.arg(v) for v in a[1]])
        if tag == "c":
            return complex(float(a[1]), float(a[2]))
        if tag == "d":
            return {self.arg(k): self.arg(v) for k, v in a[1]}
        items = [self.arg(v) for v in a[1]]
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)

    def keep(self, value: Any, extra: list[Any] | None = None) -> list[Any]:
        """Keep ``value`` as the current operation's handle and answer it."""
        # Handle number == operation number: the trusted side can name a result before it sees it.
        self.handles[-1] = value
        out = ["ok", encode(value)]
        if extra:
            out.append(extra)
        return out

    def run_op(self, op: dict[str, Any]) -> list[Any]:
        """Execute one operation (it may raise: ``answer`` turns that into an answer)."""
        k = op["k"]
        if k == "load":
            self.code = op["code"]
            exec(compile(op["code"], "<solution>", "exec"), self.ns)  # noqa: S102 - inside the sandbox
            return ["ok", ["n"]]
        if k == "name":
            name = op["name"]
            if name in self.ns:
                return self.keep(self.ns[name])
            return self.keep(
                getattr(self.ns["__builtins__"], name) if hasattr(self.ns["__builtins__"], name) else self.ns[name]
            )
        if k == "prog":
            self.code = op["code"]
            return ["ok", ["n"]]
        if k == "stdio":
            return ["ok", ["s", self.stdio(op["input"], op.get("cap", 1 << 20))]]
        if k == "legacy":
            exec(compile(op["tests"], "<test>", "exec"), self.ns)  # noqa: S102 - inside the sandbox
            if op.get("entry"):
                self.ns["check"](self.ns[op["entry"]])
            return ["ok", ["n"]]
        target = self.handles[op["h"]]
        if k == "call":
            args = [self.arg(a) for a in op.get("a", [])]
            kwargs = {n: self.arg(a) for n, a in op.get("kw", [])}
            value = target(*args, **kwargs)
            # Arguments the trusted side passed by value that the call may have changed in place.
            changed = [[i, encode(v)] for i, v in enumerate(args) if type(v) in _MUTABLE and op["a"][i][0] != "h"]
            return self.keep(value, changed)
        if k == "getattr":
            return self.keep(getattr(target, op["name"]))
        if k == "setattr":
            setattr(target, op["name"], self.arg(op["v"]))
            return ["ok", ["n"]]
        if k == "getitem":
            return self.keep(target[self.arg(op["key"])])
        if k == "list":
            return self.keep(list(target))
        if k == "len":
            return self.keep(len(target))
        if k == "bool":
            return self.keep(bool(target))
        if k == "val":
            return self.keep(target)
        raise ValueError(f"unknown operation {k!r}")

    def stdio(self, text: str, cap: int) -> str:
        """Run the kept program with ``text`` as stdin; its whole stdout (at most ``cap`` bytes)."""
        real_in, real_out = sys.stdin, sys.stdout
        buf = io.BytesIO()
        sys.stdin = io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8")
        sys.stdout = out = io.TextIOWrapper(buf, encoding="utf-8", write_through=True)
        try:
            exec(compile(self.code, "<solution>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})  # noqa: S102
        except SystemExit:
            pass  # a program may end itself; its output so far is what it printed
        finally:
            try:
                sys.stdout.flush()
            except BaseException:  # noqa: BLE001
                pass
            sys.stdin, sys.stdout = real_in, real_out
        data = buf.getvalue()
        out.detach()  # keep buf open; the wrapper is done
        if len(data) > cap:
            raise OverflowError("output over the limit")
        return data.decode("utf-8", "replace")

    def answer(self, op: dict[str, Any]) -> list[Any]:
        """One operation -> its answer (never raises)."""
        self.handles.append(None)
        try:
            out = self.run_op(op)
        except MemoryError:
            return ["mem"]
        except BaseException as exc:  # noqa: BLE001 - SystemExit in a call is a failed call
            try:
                names = [c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins"]
            except BaseException:  # noqa: BLE001
                names = ["Exception"]
            return ["exc", [n for n in names if isinstance(n, str)][:8]]
        return out

    def serve(self) -> None:
        """Answer every operation of every batch until the trusted side closes the pipe."""
        while True:
            msg = self.read()
            if msg is None:
                return
            for op in msg["ops"]:
                out = self.answer(op)
                try:
                    data = json.dumps(out, separators=(",", ":")).encode("utf-8")
                except (ValueError, RecursionError, TypeError, MemoryError):
                    data = b'["exc",["ValueError","Exception","BaseException"]]'
                data = struct.pack(">I", len(data)) + data
                while data:
                    data = data[os.write(self.wfd, data) :]
