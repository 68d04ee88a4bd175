"""The candidate child: the only process that runs the model's code, after every isolation layer
is applied (the inside package: standard library only, see its ``__init__``).

It decides nothing. Two ways to run:

- ``serve``: hold the program's module and answer the test child's requests, one at a time, in
  order (``wire`` frames on fds 3 and 4): ``load`` the program (answer: the global names the
  test child asked for, each as plain data or a handle with its kind), ``call``, ``attr``,
  ``setattr``, ``delattr``, ``item``, ``setitem``, ``delitem``, ``iter``, ``next``, ``len``,
  ``bool``, ``hash``, ``str``, ``repr``, ``format``, ``contains``, ``op`` (an operator) on
  handles. Answers: ``["ok", value, write-backs]``, ``["exc", ...]`` (the exception's claim,
  ``claims.claim``), ``["unsupported", why]`` or ``["stop"]``, each possibly preceded by
  ``["rel", numbers]`` (shared objects the program let go of: ``sharing``).
  A call's mutable arguments are sent back after the call (``write-backs``), so the
  test sees in-place changes in order. A callable of the test's (``["x", n]``) can be called:
  the child asks back (``["cb", n, args, kwargs]``) and serves nested requests until it gets
  ``["ret", value]`` or ``["raise", names, message]``. Whatever this process sends, the test
  child decodes it strictly (``wire.decode``) into fresh values.
- ``script``: run the program as ``__main__`` on stdin/stdout rows: ``script.py``.
"""

from __future__ import annotations

import builtins
import operator
import os
import sys
import types
from collections.abc import Iterator
from typing import Any

from . import claims, frames, sharing, wire

MAX_REQUEST = 1 << 30  # the test child is trusted; this only stops a runaway frame
OPS = {
    name: getattr(operator, name)
    for name in (
        "add sub mul truediv floordiv mod pow matmul and_ or_ xor lshift rshift neg pos abs invert eq ne lt le gt ge"
    ).split()
}
OPS["isinstance"], OPS["issubclass"] = isinstance, issubclass  # a class of the program decides, as in CPython


class TestCallable:
    """A callable that lives in the test child (a lambda the test passes): calling it asks back."""

    __slots__ = ("_n", "_srv")

    def __init__(self, srv: Server, n: int) -> None:
        self._srv, self._n = srv, n

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._srv.ask_back(self._n, args, kwargs)


class Server:
    """The candidate child's side of a sample (``serve``)."""

    def __init__(self, rfd: int, wfd: int) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.objs: list[Any] = []
        self.ids: dict[int, int] = {}
        self.tests: dict[int, TestCallable] = {}
        self.shared: dict[int, list[Any]] = {}  # identity number -> [object, snapshot] (see reply)
        self.shared_ids: dict[int, int] = {}  # id(object) -> identity number
        self.next_k = 0
        wire.NANS = wire.Nans(1)
        wire.SUBCLASSES = True
        self.module = types.ModuleType("__main__")
        self.ns = self.module.__dict__

    # values
    def handle(self, obj: Any) -> list[Any]:
        """An object that stays here, with its kind (what the test child allows on it without
        ``program_objects``: ``f`` call, ``i`` iterate; ``c`` a class, ``o`` anything else)."""
        n = self.ids.get(id(obj))
        if n is None:
            n = self.ids[id(obj)] = len(self.objs)
            self.objs.append(obj)  # kept alive, so its id is never reused in this sample
        t = type(obj)
        # Types no class can subclass, none of them an iterator or a class: the usual answer, told
        # apart by identity (the Iterator ABC's first use in a fresh child writes about 60 pages).
        if t is types.FunctionType or t is types.BuiltinFunctionType or t is types.MethodType:
            kind = "f"
        else:  # by the object's real type (a __class__ property of the program's is not asked)
            try:
                kind = "c" if issubclass(t, type) else "i" if issubclass(t, Iterator) else "f" if callable(obj) else "o"
            except BaseException:  # noqa: BLE001 - a class of the program's answered with an exception
                kind = "o"
        name = type.__getattribute__(obj if kind == "c" else t, "__qualname__")
        return ["h", n, kind, str.__str__(name)[:80] if isinstance(name, str) else "object"]

    def enc(self, x: Any) -> Any:
        return wire.encode(x, self.handle)

    def ref(self, tag: str, n: int, *rest: Any) -> Any:
        if tag == "h":
            return self.objs[n]
        if tag == "S":  # an object this process shared with the test, passed back: itself
            return self.shared[n][0]
        if n not in self.tests:
            self.tests[n] = TestCallable(self, n)
        return self.tests[n]

    def dec(self, x: Any) -> Any:
        return wire.decode(x, self.ref)

    # requests
    def run(self, msg: list[Any]) -> list[Any]:  # noqa: C901 - one table of operations
        k = msg[0]
        if k == "load":
            sys.modules["__main__"] = self.module
            exec(compile(msg[1], "<solution>", "exec"), self.ns)  # noqa: S102 - inside the sandbox
            return ["ok", self.globals(msg[2])]
        obj: Any = self.objs[msg[1]] if len(msg) > 1 and type(msg[1]) is int else None
        if k == "call":
            return self.call(obj, msg)
        if k == "attr":
            value = getattr(obj, self.dec(msg[2]))
            return self.reply(value)
        if k == "setattr":
            setattr(obj, self.dec(msg[2]), self.dec(msg[3]))
            return ["ok", None]
        if k == "delattr":
            delattr(obj, self.dec(msg[2]))
            return ["ok", None]
        if k == "item":
            value = obj[self.dec(msg[2])]
            return self.reply(value)
        if k == "setitem":
            obj[self.dec(msg[2])] = self.dec(msg[3])
            return ["ok", None]
        if k == "delitem":
            del obj[self.dec(msg[2])]
            return ["ok", None]
        if k == "type":  # the interpreter's type(), not the object's __class__
            return ["ok", self.enc(type(obj))]
        if k == "iter":
            return ["ok", self.handle(iter(obj))]
        if k == "next":
            try:
                value = next(obj)
            except StopIteration:
                return ["stop"]
            return self.reply(value)
        if k == "op":
            fn = OPS[msg[1]]
            value = fn(*[self.dec(a) for a in msg[2]])
            return self.reply(value)
        if k == "format":
            return ["ok", format(obj, self.dec(msg[2]))]
        if k == "contains":
            return ["ok", self.enc(self.dec(msg[2]) in obj)]
        simple: dict[str, Any] = {
            "len": len,
            "bool": bool,
            "hash": hash,
            "str": str,
            "repr": repr,
            "int": int,
            "float": float,
            "index": operator.index,
        }
        return ["ok", self.enc(simple[k](obj))]

    def call(self, obj: Any, msg: list[Any]) -> list[Any]:
        """Call, then write back every mutable argument the test child named (positions and
        keywords), also when the call raised. A container nested in an argument must come back
        unchanged, and travels back (in the write-backs and in the result) as a reference to the
        test's own object (``["A", position, *path]``), as does a result that is an argument.
        A mutable argument (or a container in one) the program still holds after the call (a
        closure, a generator or an object kept it) is *kept*: shared under an identity number
        with the test's own object (``"keep"``), so a later change on either side is refused
        (``check``) rather than hidden by the copy."""
        args = [self.dec(a) for a in msg[2]]
        kwargs = {name: self.dec(v) for name, v in msg[3]}
        given: dict[Any, Any] = {**dict(enumerate(args)), **kwargs}
        mut = [p for p in msg[4] if p in given]
        before = {p: [self.enc(x) for x in sharing.inner_mutables(v)] for p, v in given.items()}
        index = sharing.nested_paths(given)
        held = [x for x in sharing.nested_objects(given) if id(x) not in self.ids and id(x) not in self.shared_ids]
        counts = sharing.counts(held)
        claim: list[Any] | None = None
        value: Any = None
        try:
            value = obj(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the test sees it, after the write-back
            claim = describe(exc)
        wb = self.writes(given, mut, before, index)
        if "unsupported" in wb:
            return ["unsupported", wb["unsupported"]]
        if claim is not None:
            ans = claim
        elif sharing.is_a(value, sharing.MUTABLES) and id(value) in index:  # an argument, or a container in one
            ans = ["ok", ["A", *index[id(value)]]]
        else:
            ans = self.reply(value, index)
        value = None  # the program's own references are what is left
        after = sharing.counts(held)  # the same calls as before: only the program's new references differ
        keep = [
            (held[i], index[id(held[i])]) for i in range(len(held)) if after[i] > counts[i] or sharing.weakly(held[i])
        ]
        if keep:
            wb["keep"] = [[self.share(x, snap=True), *path] for x, path in keep]
        return [*ans, wb] if ans[0] in ("ok", "exc") else ans

    def reply(self, value: Any, skip: dict[int, Any] | None = None) -> list[Any]:
        """``["ok", value]``, where a mutable object of the value that the program still holds
        (or that appears twice in it) travels as ``["S", k, ...]``: the test child keeps one
        copy per identity number ``k``, so the same object answered twice is one object there,
        and both sides refuse the sample when either changes it later (``check``)."""
        shared = sharing.sharing(value, skip)
        why = self.check() if self.shared else None  # before this answer renews any snapshot
        if why:
            return ["unsupported", why]
        wire.ALIASES = skip or {}
        wire.SHARED = {id(x): self.share(x) for x in shared}
        try:
            return ["ok", self.enc(value)]
        finally:
            wire.ALIASES, wire.SHARED = {}, {}
            for x in shared:
                self.shared[self.shared_ids[id(x)]][1] = wire.snapshot(x)

    def share(self, x: Any, snap: bool = False) -> int:
        k = self.shared_ids.get(id(x))
        if k is None:
            k = self.shared_ids[id(x)] = self.next_k
            self.next_k += 1
            self.shared[k] = [x, None]  # kept alive, so its id is never reused in this sample
        if snap:
            self.shared[k][1] = wire.snapshot(x)
        return k

    def check(self) -> str | None:
        """Why the sample must end, if an object shared with the test changed here since the
        test last saw it (the test's copy would be stale; CPython shows it one object)."""
        for x, snap in self.shared.values():
            if snap is not None and wire.snapshot(x) != snap:
                return f"the program changed a {type(x).__name__} it shares with the test (the test holds a copy)"
        return None

    def release(self) -> list[int]:
        """Forget the shared objects nothing of the program holds any more (only this registry,
        no weak reference): the program can never change or return them again, so the test's
        copies are its own from now on. Their numbers go to the test child (``["rel", ks]``)."""
        gone = [k for k, entry in self.shared.items() if sharing.alone(entry)]
        for k in gone:
            self.shared_ids.pop(id(self.shared.pop(k)[0]), None)
        return gone

    def writes(
        self, given: dict[Any, Any], mut: list[Any], before: dict[Any, list[Any]], index: dict[int, list[Any]]
    ) -> dict[str, Any]:
        for p, v in given.items():  # a tuple's list too: f(([1],)) may change it
            if [self.enc(x) for x in sharing.inner_mutables(v)] != before[p]:
                return {"unsupported": "the program changed a container nested inside an argument"}
        wire.ALIASES = index
        try:
            return {"wb": [[p, self.enc(given[p])] for p in mut]}
        finally:
            wire.ALIASES = {}

    def globals(self, wanted: list[Any]) -> list[list[Any]]:
        """The names the test child asked for (those of its test file and the task's entry point)
        that the program defines, each as plain data or a handle. The test child binds nothing
        else, and never imports anything because of what this process says."""
        out: list[list[Any]] = []
        for name in wanted[:10_000]:
            if type(name) is not str or name.startswith("__") or name not in self.ns:
                continue
            value = self.ns[name]
            try:
                out.append([name, self.enc(value)])
            except (ValueError, RecursionError):
                out.append([name, self.handle(value)])  # too deep for plain data
        return out

    def answer(self, msg: list[Any]) -> list[Any]:
        """One request -> its answer (never raises)."""
        try:
            ans = self.run(msg)
        except wire.WireLimit as exc:  # a correct answer the wire cannot carry: refused, not wrong
            return ["unsupported", f"an answer beyond the wire's limits ({exc})"]
        except BaseException as exc:  # noqa: BLE001 - everything the program raises goes to the test
            ans = describe(exc)
        why = self.check() if self.shared else None
        return ["unsupported", why] if why else ans

    def send(self, ans: list[Any]) -> None:
        gone = self.release() if self.shared else []
        if gone:
            frames.send(self.wfd, ["rel", gone])
        try:
            frames.send(self.wfd, ans)
        except (ValueError, TypeError, RecursionError, OverflowError) as exc:
            frames.send(self.wfd, ["unsupported", f"an answer the wire cannot carry ({type(exc).__name__})"])

    def serve(self) -> None:
        """Answer requests until the test child closes the pipe."""
        while True:
            msg = frames.recv(self.rfd, MAX_REQUEST)
            if msg is None:
                return
            self.send(self.answer(msg))

    def ask_back(self, n: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call the test's callable ``n``: ask the test child, serving its requests meanwhile."""
        why = self.check() if self.shared else None
        if why:
            self.send(["unsupported", why])
            os._exit(0)
        self.send(["cb", n, [self.enc(a) for a in args], [[k, self.enc(v)] for k, v in kwargs.items()]])
        while True:
            msg = frames.recv(self.rfd, MAX_REQUEST)
            if msg is None:
                os._exit(0)
            if msg[0] == "ret":
                return self.dec(msg[1])
            if msg[0] == "raise":
                cls = getattr(builtins, msg[1], None)
                if not (isinstance(cls, type) and issubclass(cls, BaseException)):
                    cls = Exception
                raise cls(msg[2])
            self.send(self.answer(msg))


def describe(exc: BaseException) -> list[Any]:
    """An exception as the claim the test child checks (``claims.claim``): its MRO by builtin
    identity, ``str`` and ``repr`` as the program computes them, and its arguments when they
    are plain data."""
    return claims.claim(exc, _plain)


def _plain(x: Any) -> Any:
    return wire.encode(x, _not_plain)


def _not_plain(_: Any) -> list[Any]:
    raise ValueError("not plain data")


def serve(rfd: int = 3, wfd: int = 4) -> None:
    Server(rfd, wfd).serve()
