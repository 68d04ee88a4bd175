"""The test child's proxy: ``Handle`` stands for an object that lives in the candidate child,
and ``Link`` carries its requests; runs in the test child (the inside package: standard library
only, see its ``__init__``).

The rule: a ``correct`` verdict must imply that plain CPython passes the same program and tests.
What the proxy cannot keep exact it refuses (``Link.refuse``: the sample ends ``unsupported``,
scored wrong); it never substitutes semantics of its own.

- **Plain data by default.** An answer is decoded strictly (``wire.decode``) into fresh
  builtins. Without the task's ``program_objects`` option a handle is only a callable of the
  program (kind ``f``: it can be called) or an iterator it returned (kind ``i``: it can be
  iterated, one item a request); of any other object of the program (an instance, a subclass of
  a builtin) only its truth is asked. Any other operation on a handle, and a class of the
  program reaching the test, ends the sample ``unsupported``. So no program object decides a
  comparison, and an expected value reaches the program only where the test passes it as an
  argument, as in CPython.
- **program_objects** (class-design tasks): every operation dispatches to the program exactly as
  CPython would: comparisons and ``in`` call the program's dunders (with the test's value as
  the argument), reflected operators too. A lying ``__eq__`` passes then, as it does in CPython.
- **The program's end is final.** When the candidate child ends, closes its pipe or breaks the
  format, ``Link.gone`` writes the end record and ends this process on the spot (``os._exit``
  through the test child's ``end`` callback), so no ``except`` clause of the test can catch it.
- **Reports never ask.** While the test child renders a failure (``quiet``), every operation on
  a handle raises ``Quiet`` locally instead of sending a request.
- **The test's objects** reach the program as plain data (copied), as builtin classes by name,
  or, for a callable (a lambda, a function), as a reference the program can only call (called
  back here). Any other object of the test's ends the sample ``unsupported``. A call's list,
  dict, set, bytearray and deque arguments are written back after the call.
"""

from __future__ import annotations

import builtins
import collections
import sys
import types
from collections.abc import Callable
from typing import Any, NoReturn

from . import claims, frames, wire

MAX_ANSWER = 64 << 20  # bytes of one answer from the candidate child
_CALLABLE_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.BuiltinMethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
)
# Operations a handle allows without program_objects, by kind (f: callable, i: iterator).
# ``len`` for an iterator too: ``list(it)`` asks ``len`` for a size hint (a generator answers
# TypeError). ``bool`` on anything: ``assert f(x)`` asks the object's own truth in CPython as
# well, and a program that wants True can return True. Identity (``is None``) needs no request.
_PLAIN_OPS = {
    "f": frozenset({"call", "bool"}),
    "i": frozenset({"iter", "next", "len", "bool"}),
    "o": frozenset({"bool"}),
}


class Quiet(Exception):  # noqa: N818 - a signal, not an error
    """Raised instead of sending a request while a failure report is being made."""


class Link:
    """The test child's end of the pipes to the candidate child. ``end(record)`` writes the end
    record and ends the test child (never returns). ``objects``: the task's ``program_objects``."""

    def __init__(self, wfd: int, rfd: int, end: Callable[[dict[str, Any]], NoReturn], objects: bool = False) -> None:
        self.wfd, self.rfd = wfd, rfd
        self.end = end
        self.objects = objects
        self.quiet = False
        self.handling = False  # has the test asked the program anything while handling an exception?
        self.handles: dict[int, Handle] = {}
        self.callables: list[Any] = []
        self.call_args: dict[Any, Any] | None = None  # during a call: position -> the test's object
        claims.SIDE = claims.Refuse(self.refuse, self.gone, lambda: self.quiet, Quiet)
        # Objects the program still holds, as the test holds them: identity number -> [object,
        # snapshot]; sent back as ["S", k, ...] (wire.SHARED), so the program gets its own back.
        self.shared: dict[int, list[Any]] = {}
        self.shared_ids: dict[int, int] = wire.SHARED
        self.released: set[int] = set()  # numbers the program let go of (never reused)
        self.once: dict[int, Any] = {}  # a released number's copy, within the answer that carries it
        wire.NANS = wire.Nans(-1)

    def gone(self, why: str) -> NoReturn:
        """The candidate ended or broke the protocol: the sample ends here, whatever the test does."""
        self.end({"end": "gone", "why": why})

    def refuse(self, what: str) -> NoReturn:
        """A construct the boundary cannot keep exact: the sample ends ``unsupported``."""
        self.end({"end": "unsupported", "what": what[:300]})

    def ref(self, tag: str, n: Any, kind: Any = "o", tname: str = "object") -> Any:
        if tag == "A":
            return self.resolve(n, kind)
        if tag == "S":  # kind: the thunk that decodes the object's content
            if n in self.shared:
                return self.shared[n][0]  # the same object of the program: the same object here
            if n in self.released:  # released before this answer arrived: one object within it
                if n not in self.once:
                    self.once[n] = kind()
                return self.once[n]
            return self.keep(n, kind())
        if tag == "x":
            if not 0 <= n < len(self.callables):
                raise wire.WireError("an unknown callable")
            return self.callables[n]
        h = self.handles.get(n)
        if h is None:
            if n < 0 or len(self.handles) > 1_000_000:
                raise wire.WireError("a malformed handle")
            if not self.objects and kind == "c":
                # Refused on arrival: what a test does with a class (instantiate it, isinstance,
                # except) needs the program's objects, and ``except`` would not ask first.
                self.refuse(
                    f"the program's class {tname} reached the test "
                    "(a task whose tests use the program's objects sets program_objects: true)"
                )
            h = self.handles[n] = Handle(n, kind, tname)
        return h

    def resolve(self, pos: Any, path: list[Any]) -> Any:
        """The test's own object at ``path`` inside the call's argument ``pos`` (read before any
        write-back: the candidate sends paths into the arguments as they were passed)."""
        if self.call_args is None or pos not in self.call_args:
            raise wire.WireError("a reference to an unknown argument")
        x = self.call_args[pos]
        for step in path:
            key = self.dec(step)
            try:
                x = x[key] if isinstance(x, (list, tuple, dict, collections.deque)) else None
            except (IndexError, KeyError, TypeError):
                x = None
            if x is None:
                raise wire.WireError("a reference to a place not in the arguments")
        return x

    def keep(self, k: Any, obj: Any) -> Any:
        """Hold ``obj`` as the test's side of the program's shared object ``k`` (its snapshot is
        taken once the answer is settled: ``settle``)."""
        if type(k) is not int or k < 0 or len(self.shared) > 1_000_000:
            raise wire.WireError("a malformed identity number")
        if isinstance(obj, _SHAREABLE):
            self.shared[k] = [obj, None]
            self.shared_ids[id(obj)] = k
        return obj

    def settle(self) -> None:
        self.once.clear()
        for entry in self.shared.values():
            if entry[1] is None:
                entry[1] = wire.snapshot(entry[0])

    def release(self, msg: list[Any]) -> None:
        """The program no longer holds these shared objects: the test's copies are its own."""
        if len(msg) != 2 or type(msg[1]) is not list or not all(type(k) is int for k in msg[1]):
            raise wire.WireError("a malformed release")
        for k in msg[1]:
            self.released.add(k)
            entry = self.shared.pop(k, None)
            if entry is not None and self.shared_ids.get(id(entry[0])) == k:
                del self.shared_ids[id(entry[0])]

    def check_shared(self) -> None:
        """Refuse the sample when the test changed an object the program still holds (the program
        would read its stale copy; in CPython it is one object)."""
        for obj, snap in self.shared.values():
            if snap is not None and wire.snapshot(obj) != snap:
                self.refuse(f"the test changed a {type(obj).__name__} the program still holds (it holds a copy)")

    def other(self, obj: Any) -> list[Any]:
        """How an object of the test's own travels when it is not plain data: a handle goes back
        as itself; a callable stays here and can only be called (``["x", n]``); anything else is
        refused."""
        if type(obj) is Handle:
            return ["h", object.__getattribute__(obj, "_n")]
        if isinstance(obj, _CALLABLE_TYPES) or type(obj).__name__ == "partial":
            self.callables.append(obj)
            return ["x", len(self.callables) - 1]
        self.refuse(f"the test passes its own {type(obj).__name__} to the program (only plain data is copied)")

    def enc(self, x: Any) -> Any:
        return wire.encode(x, self.other)

    def ask(self, msg: list[Any]) -> list[Any]:
        """Send a request and wait for its answer, running the candidate's calls back into the
        test's callables meanwhile."""
        if self.quiet:
            raise Quiet
        if self.shared:
            self.check_shared()
        if sys.exc_info()[1] is not None:
            self.handling = True  # the program runs while the test handles an exception (see _answer)
        try:
            frames.send(self.wfd, msg)
            while True:
                ans = frames.recv(self.rfd, MAX_ANSWER)
                if ans is None:
                    self.gone("the candidate's process ended")
                if type(ans) is not list or not ans or type(ans[0]) is not str:
                    raise wire.WireError("a malformed answer")
                if ans[0] == "rel":
                    self.release(ans)
                    continue
                if ans[0] != "cb":
                    return ans
                self.call_back(ans)
        except wire.WireLimit as exc:
            self.refuse(f"an answer beyond the wire's limits ({exc})")
        except (OSError, wire.WireError) as exc:
            self.gone(f"the candidate's process broke the protocol: {exc}")

    def call_back(self, msg: list[Any]) -> None:
        if len(msg) != 4 or type(msg[1]) is not int or type(msg[2]) is not list or type(msg[3]) is not list:
            raise wire.WireError("a malformed call back")
        fn = self.ref("x", msg[1])
        try:
            args = [self.dec(a) for a in msg[2]]
            kwargs = {str(k): self.dec(v) for k, v in msg[3]}
            reply: list[Any] = ["ret", self.enc(fn(*args, **kwargs))]
        except Exception as exc:  # noqa: BLE001 - the test's callable raised: the candidate sees it
            reply = ["raise", type(exc).__name__ if hasattr(builtins, type(exc).__name__) else "Exception", str(exc)]
        if self.shared:
            self.check_shared()
        frames.send(self.wfd, reply)

    def dec(self, x: Any) -> Any:
        return wire.decode(x, self.ref)

    def value(self, msg: list[Any], args: dict[Any, Any] | None = None) -> Any:
        """Ask, and turn the answer into a value (or raise what the candidate raised). For a call,
        ``args`` maps each argument position (an index, or a keyword's name) the candidate writes
        back to the test's own object: it is updated in place, after the call returned or raised,
        before the result is decoded (a result that *is* an argument, ``["A", position]``, is the
        test's own object)."""
        ans = self.ask(msg)
        try:
            self.call_args = args
            try:
                return self._answer(ans, args)
            finally:
                self.call_args = None
                self.settle()
        except wire.WireLimit as exc:
            self.refuse(f"an answer beyond the wire's limits ({exc})")
        except wire.WireError as exc:
            self.gone(f"the candidate's process sent a bad answer: {exc}")

    def _answer(self, ans: list[Any], args: dict[Any, Any] | None) -> Any:
        if args is not None and ans[0] in ("ok", "exc") and len(ans) >= 3 and type(ans[-1]) is dict:
            if isinstance(ans[-1].get("unsupported"), str):
                self.refuse(ans[-1]["unsupported"])
            # Decode every write-back and the result before changing anything: references
            # (["A", ...]) name places in the arguments as they were passed.
            news = [(pos, self.dec(new)) for pos, new in ans[-1].get("wb", []) if type(pos) in (int, str)]
            for item in ans[-1].get("keep", []):  # arguments the program still holds
                if type(item) is not list or len(item) < 2:
                    raise wire.WireError("a malformed kept argument")
                self.keep(item[0], self.resolve(item[1], item[2:]))
            value = self.dec(ans[1]) if ans[0] == "ok" and len(ans) >= 2 else None
            for pos, new in news:
                if pos in args:
                    write_back(args[pos], new)
            if ans[0] == "ok":
                return value
        if ans[0] == "ok" and len(ans) >= 2:
            return self.dec(ans[1])
        if ans[0] == "stop":
            raise StopIteration
        if ans[0] == "unsupported" and len(ans) == 2 and type(ans[1]) is str:
            self.refuse(ans[1])
        if ans[0] == "exc":
            exc = self.rebuild(ans)
            if claims.chained(exc) and (self.handling or sys.exc_info()[1] is not None):
                # CPython chains the test's handled exception into every exception the call
                # raised with none of the program's own handled: the candidate never saw it.
                self.refuse(
                    "a chained exception of the program reached a test that calls the program while it handles "
                    "an exception of its own (CPython would chain that one in too)"
                )
            raise exc
        self.gone("the candidate's process sent a malformed answer")

    def rebuild(self, ans: list[Any]) -> BaseException:
        """The candidate's exception claim as the exception the test sees (``claims.rebuild``:
        the real builtin class only where that is exact, else an opaque stand-in)."""
        return claims.rebuild(ans[:10], self.dec)


_SHAREABLE = (list, dict, set, bytearray, collections.deque)


LINK: Link | None = None


def _link() -> Link:
    assert LINK is not None
    return LINK


def _gate(h: Handle, op: str) -> Link:
    """Every operation on a handle passes here: quiet while a report is made; refused unless the
    kind allows it or the task declared program_objects."""
    link = _link()
    if link.quiet:
        raise Quiet
    kind = object.__getattribute__(h, "_k")
    if not link.objects and op not in _PLAIN_OPS.get(kind, ()):
        tname = object.__getattribute__(h, "_t")
        link.refuse(
            f"the test uses {op!r} on the program's {tname}, which is not plain data: only calls, truth and "
            "iterating an iterator it returned are kept exact (program_objects: true allows every operation)"
        )
    return link


def _ask(h: Handle, kind: str, *rest: Any) -> Any:
    link = _gate(h, kind)
    return link.value([kind, object.__getattribute__(h, "_n"), *[link.enc(r) for r in rest]])


def _op(h: Handle, name: str, *values: Any) -> Any:
    link = _gate(h, name)
    return link.value(["op", name, [link.enc(v) for v in values]])


def shared_arguments(link: Link, values: Any) -> None:
    """A call whose arguments hold one mutable object twice (``f(a, a)``, ``[row] * 3``) is
    refused: the candidate would receive copies, and a change through one would not show
    through the other as it does in CPython."""
    seen: set[int] = set()
    stack = list(values)
    while stack:
        x = stack.pop()
        t = type(x)
        if t in (list, dict, set, bytearray, collections.deque, collections.Counter, collections.OrderedDict):
            if id(x) in seen:
                link.refuse(f"the test passes one {t.__name__} twice in a call's arguments (copies would split it)")
            seen.add(id(x))
        if t in (list, tuple, set, frozenset, collections.deque):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(dict.values(x))


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
    """An object that lives in the candidate child. Every operation is a request, gated by
    ``_gate``. ``_k``: ``f`` callable, ``i`` iterator, ``c`` class, ``o`` other; ``_t``: its type's
    name (display only)."""

    __slots__ = ("_n", "_k", "_t", "__weakref__")

    def __init__(self, n: int, kind: str = "o", tname: str = "object") -> None:
        object.__setattr__(self, "_n", n)
        object.__setattr__(self, "_k", kind)
        object.__setattr__(self, "_t", str(tname)[:80])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        link = _gate(self, "call")
        given: dict[Any, Any] = {**dict(enumerate(args)), **kwargs}
        shared_arguments(link, given.values())
        mut = [pos for pos, a in given.items() if isinstance(a, (list, dict, set, bytearray, collections.deque))]
        msg = [
            "call",
            object.__getattribute__(self, "_n"),
            [link.enc(a) for a in args],
            [[k, link.enc(v)] for k, v in kwargs.items()],
            mut,
        ]
        return link.value(msg, given)

    def __getattr__(self, name: str) -> Any:
        return _ask(self, "attr", name)

    def __setattr__(self, name: str, value: Any) -> None:
        _ask(self, "setattr", name, value)

    def __delattr__(self, name: str) -> None:
        _ask(self, "delattr", name)

    def __getitem__(self, key: Any) -> Any:
        return _ask(self, "item", key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _ask(self, "setitem", key, value)

    def __delitem__(self, key: Any) -> None:
        _ask(self, "delitem", key)

    def __iter__(self) -> Any:
        return _ask(self, "iter")

    def __next__(self) -> Any:
        return _ask(self, "next")

    def __len__(self) -> int:
        return _ask(self, "len")

    def __bool__(self) -> bool:
        return _ask(self, "bool")

    def __hash__(self) -> int:
        return _ask(self, "hash")

    def __str__(self) -> str:
        return _ask(self, "str")

    def __repr__(self) -> str:
        return _ask(self, "repr")

    def __format__(self, spec: str) -> str:
        return _ask(self, "format", spec)

    def __contains__(self, item: Any) -> bool:
        return _ask(self, "contains", item)

    def __index__(self) -> int:
        return _ask(self, "index")

    def __int__(self) -> int:
        return _ask(self, "int")

    def __float__(self) -> float:
        return _ask(self, "float")

    def __instancecheck__(self, obj: Any) -> bool:
        return _op(self, "isinstance", obj, self)  # type: ignore[no-any-return]

    def __subclasscheck__(self, cls: Any) -> bool:
        return _op(self, "issubclass", cls, self)  # type: ignore[no-any-return]

    def __neg__(self) -> Any:
        return _op(self, "neg", self)

    def __pos__(self) -> Any:
        return _op(self, "pos", self)

    def __abs__(self) -> Any:
        return _op(self, "abs", self)

    def __invert__(self) -> Any:
        return _op(self, "invert", self)


def _forward(name: str, reflected: bool) -> Any:
    # The candidate runs operator.<name>(left, right), so Python's own dispatch (reflected
    # operands, NotImplemented, identity fallback of == and !=) happens there, as in CPython.
    def method(self: Handle, other: Any) -> Any:
        return _op(self, name, other, self) if reflected else _op(self, name, self, other)

    return method


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Handle, f"__{_name}__", _forward(_name, False))
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
    setattr(Handle, f"__{_name}__", _forward(_fn, False))
    setattr(Handle, f"__r{_name}__", _forward(_fn, True))


# type(h) and isinstance(h, c) in the test file (claims.exact_type, claims.exact_isinstance), as the
# program's interpreter answers them (not the handle's __class__); both need program_objects (_gate).
claims.PROXY = (Handle, lambda h: _ask(h, "type"), lambda h, c: bool(_op(h, "isinstance", h, c)))
