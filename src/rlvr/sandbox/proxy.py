"""The test child's proxy: ``Handle`` stands for an object that lives in the candidate child,
and ``Link`` carries its requests. Standard library only; loaded by ``harness.py`` (through
``testchild.py``) inside the worker's interpreter, never by the trainer.

Every operation on a handle (call, attribute, item, iteration, operators, ``len``, ``bool``,
``hash``, ``str``, ``repr``, ``format``) is one request; the answer is decoded strictly
(``wire.decode``) into fresh values, or raised as the candidate's exception rebuilt as the first
builtin class of its MRO, with its message. Comparisons are the exception: a handle compared
with anything but another handle returns ``NotImplemented``, so Python falls back to identity
and an expected value never leaves this process; ``x in handle`` iterates the handle here. A
call's list, dict, set, bytearray and deque arguments are written back after the call. A
callable of the test's passed to the program is called back here (``Link.call_back``).
"""

from __future__ import annotations

import builtins
import collections
from typing import Any

import wire  # type: ignore[import-not-found]  # a sibling module, loaded by the harness

MAX_ANSWER = 64 << 20  # bytes of one answer from the candidate child
_MUTABLE = (list, dict, set, bytearray, collections.deque)


class Gone(BaseException):
    """The candidate child ended, or sent something that breaks the format: the test cannot go
    on. A ``BaseException``, so a test's ``except Exception`` does not swallow it."""


class Link:
    """The test child's end of the pipes to the candidate child."""

    def __init__(self, wfd: int, rfd: int) -> None:
        self.wfd, self.rfd = wfd, rfd
        self.handles: dict[int, Handle] = {}
        self.callables: list[Any] = []
        self.gone = ""

    def ref(self, tag: str, n: int) -> Any:
        if tag == "x":
            if not 0 <= n < len(self.callables):
                raise wire.WireError("an unknown callable")
            return self.callables[n]
        h = self.handles.get(n)
        if h is None:
            if n < 0 or len(self.handles) > 1_000_000:
                raise wire.WireError("a malformed handle")
            h = self.handles[n] = Handle(n)
        return h

    def other(self, obj: Any) -> list[Any]:
        """How an object of the test's own travels: a handle goes back as itself; anything else
        stays here and can only be called (``["x", n]``)."""
        if type(obj) is Handle:
            return ["h", object.__getattribute__(obj, "_n")]
        self.callables.append(obj)
        return ["x", len(self.callables) - 1]

    def enc(self, x: Any) -> Any:
        return wire.encode(x, self.other)

    def ask(self, msg: list[Any]) -> list[Any]:
        """Send a request and wait for its answer, running the candidate's calls back into the
        test's callables meanwhile."""
        if self.gone:
            raise Gone(self.gone)
        try:
            wire.send(self.wfd, msg)
            while True:
                ans = wire.recv(self.rfd, MAX_ANSWER)
                if type(ans) is not list or not ans or type(ans[0]) is not str:
                    if ans is None:
                        raise Gone("the candidate's process ended")
                    raise wire.WireError("a malformed answer")
                if ans[0] != "cb":
                    return ans
                self.call_back(ans)
        except (OSError, wire.WireError) as exc:
            self.gone = f"the candidate's process broke the protocol: {exc}"
            raise Gone(self.gone) from None
        except Gone as exc:
            self.gone = str(exc)
            raise

    def call_back(self, msg: list[Any]) -> None:
        if len(msg) != 4 or type(msg[1]) is not int or type(msg[2]) is not list or type(msg[3]) is not list:
            raise wire.WireError("a malformed call back")
        fn = self.ref("x", msg[1])
        try:
            args = [self.dec(a) for a in msg[2]]
            kwargs = {str(k): self.dec(v) for k, v in msg[3]}
            reply: list[Any] = ["ret", self.enc(fn(*args, **kwargs))]
        except Gone:
            raise
        except Exception as exc:  # noqa: BLE001 - the test's callable raised: the candidate sees it
            reply = ["raise", type(exc).__name__ if hasattr(builtins, type(exc).__name__) else "Exception", str(exc)]
        wire.send(self.wfd, reply)

    def dec(self, x: Any) -> Any:
        return wire.decode(x, self.ref)

    def value(self, msg: list[Any], args: list[Any] | None = None) -> Any:
        """Ask, and turn the answer into a value (or raise what the candidate raised)."""
        ans = self.ask(msg)
        try:
            if ans[0] == "ok" and len(ans) >= 2:
                out = self.dec(ans[1])
                if args is not None and len(ans) >= 3 and type(ans[2]) is list:
                    for i, new in zip(msg[4], ans[2], strict=False):
                        write_back(args[i], self.dec(new))
                return out
            if ans[0] == "stop":
                raise StopIteration
            if ans[0] == "exc" and len(ans) == 3 and type(ans[1]) is list and type(ans[2]) is str:
                raise rebuild(ans[1], ans[2])
        except wire.WireError as exc:
            self.gone = f"the candidate's process sent a bad answer: {exc}"
            raise Gone(self.gone) from None
        self.gone = "the candidate's process sent a malformed answer"
        raise Gone(self.gone)


LINK: Link | None = None


def _ask(h: Handle, kind: str, *rest: Any) -> Any:
    assert LINK is not None
    return LINK.value([kind, object.__getattribute__(h, "_n"), *rest])


def _op(name: str, *values: Any) -> Any:
    assert LINK is not None
    return LINK.value(["op", name, [LINK.enc(v) for v in values]])


def rebuild(names: list[Any], text: str) -> BaseException:
    """The candidate's exception as the first builtin class of its MRO that this process has."""
    for n in names:
        cls = getattr(builtins, n, None) if type(n) is str else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            try:
                return cls(text) if text else cls()
            except Exception:  # noqa: BLE001 - a class that wants other arguments
                continue
    return Exception(text)


def write_back(orig: Any, new: Any) -> None:
    """The candidate's view of an argument after the call, written into the test's own object."""
    if type(orig) is list or type(orig) is bytearray:
        orig[:] = new
    elif isinstance(orig, dict) and isinstance(new, dict):
        orig.clear()
        orig.update(new)
    elif type(orig) is set and isinstance(new, (set, frozenset)):
        orig.clear()
        orig |= new
    elif type(orig) is collections.deque:
        orig.clear()
        orig.extend(new)


class Handle:
    """An object that lives in the candidate child. Every operation is a request."""

    __slots__ = ("_n", "__weakref__")

    def __init__(self, n: int) -> None:
        object.__setattr__(self, "_n", n)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        assert LINK is not None
        mut = [i for i, a in enumerate(args) if type(a) in _MUTABLE or type(a) in (collections.Counter,)]
        mut += [i for i, a in enumerate(args) if i not in mut and isinstance(a, (dict, list, set))]
        msg = [
            "call",
            object.__getattribute__(self, "_n"),
            [LINK.enc(a) for a in args],
            [[k, LINK.enc(v)] for k, v in kwargs.items()],
            mut,
        ]
        return LINK.value(msg, list(args))

    def __getattr__(self, name: str) -> Any:
        return _ask(self, "attr", name)

    def __setattr__(self, name: str, value: Any) -> None:
        assert LINK is not None
        _ask(self, "setattr", name, LINK.enc(value))

    def __delattr__(self, name: str) -> None:
        _ask(self, "delattr", name)

    def __getitem__(self, key: Any) -> Any:
        assert LINK is not None
        return _ask(self, "item", LINK.enc(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        assert LINK is not None
        _ask(self, "setitem", LINK.enc(key), LINK.enc(value))

    def __delitem__(self, key: Any) -> None:
        assert LINK is not None
        _ask(self, "delitem", LINK.enc(key))

    def __iter__(self) -> Any:
        return _ask(self, "iter")

    def __next__(self) -> Any:
        return _ask(self, "next")

    def __len__(self) -> int:
        return _ask(self, "len")  # type: ignore[no-any-return]

    def __bool__(self) -> bool:
        return _ask(self, "bool")  # type: ignore[no-any-return]

    def __hash__(self) -> int:
        return _ask(self, "hash")  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return _ask(self, "str")  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return _ask(self, "repr")  # type: ignore[no-any-return]

    def __format__(self, spec: str) -> str:
        return _ask(self, "format", spec)  # type: ignore[no-any-return]

    def __contains__(self, item: Any) -> bool:
        # Decided here: the item may be an expected value, which never leaves this process.
        return any(x is item or x == item for x in self)

    def __index__(self) -> int:
        return _ask(self, "index")  # type: ignore[no-any-return]

    def __int__(self) -> int:
        return _ask(self, "int")  # type: ignore[no-any-return]

    def __float__(self) -> float:
        return _ask(self, "float")  # type: ignore[no-any-return]

    def __neg__(self) -> Any:
        return _op("neg", self)

    def __pos__(self) -> Any:
        return _op("pos", self)

    def __abs__(self) -> Any:
        return _op("abs", self)

    def __invert__(self) -> Any:
        return _op("invert", self)


def _compare(name: str) -> Any:
    def method(self: Handle, other: Any) -> Any:
        # Only between two of the candidate's objects is the comparison the candidate's to make.
        if type(other) is not Handle:
            return NotImplemented
        return _op(name, self, other)

    return method


def _binary(name: str, reflected: bool) -> Any:
    def method(self: Handle, other: Any) -> Any:
        return _op(name, other, self) if reflected else _op(name, self, other)

    return method


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Handle, f"__{_name}__", _compare(_name))
for _name in (
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "mod",
    "pow",
    "matmul",
    "and",
    "or",
    "xor",
    "lshift",
    "rshift",
):
    _fn = _name + "_" if _name in ("and", "or") else _name
    setattr(Handle, f"__{_name}__", _binary(_fn, False))
    setattr(Handle, f"__r{_name}__", _binary(_fn, True))
