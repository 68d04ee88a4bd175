"""The state of one interpretation pass (``judge.Pass``) and its operations on the candidate's
side: each name, call, attribute or index on the candidate's objects is recorded as an operation
(``remote``) and answered by the child with plain data; ``value`` reads an answer, ``arg`` tags a
trusted value for the child, ``lookup`` resolves a name (the test's scopes, the trusted
builtins, else the candidate's module).
"""

from __future__ import annotations

import ast
import random
import time
from dataclasses import dataclass
from typing import Any

from .decoding import JudgeLimit, decode
from .trusted import BASE_BUILTINS, FORBIDDEN_NAMES, TRUSTED_MODULES, Module, Unsupported, literal_tag, make_module
from .values import MAX_OPS, PENDING, CandidateError, Diverged, Lost, NeedFlush, Ref, Scope, Session, StopPass

# The child's tag for each kind of sequence argument.
SEQUENCE_TAGS: dict[type, str] = {list: "l", tuple: "t", set: "S", frozenset: "F"}


@dataclass(frozen=True)
class Deferred:
    """An assert a pass put off: the values it reads (copied at that point) and the operations
    it recorded (``start`` up to ``end``), so the next round can decide just it."""

    node: ast.Assert
    snapshot: dict[str, Any]
    start: int
    end: int


class Operations:
    """A pass's state (answers, operation counter, deadline, counts) and the operations it sends."""

    def __init__(
        self, sess: Session, deadline: float, entry: str | None, strict: bool = False, tol: float = 0.0
    ) -> None:
        self.sess = sess
        self.strict = strict
        self.tol = tol  # the verifier's float_tolerance: == and != on floats within it
        self.deadline = deadline
        self.entry = entry
        self.n_ops = 0
        self.pending = False
        self.values: dict[int, Any] = {}
        self.fresh: dict[int, Ref] = {}
        self._last_args: list[Any] = []
        self._mods: dict[str, Module] = {}
        self.passed = 0
        self.failed = 0
        self.notes: list[str] = []
        self.try_depth = 0
        self.lazy = False
        self.fn_calls = 0
        self.mem_failures = 0  # failed asserts whose failure was a MemoryError of the candidate
        # Asserts put off with what they read, so the next round can decide just them.
        self.deferred: list[Deferred] = []
        self.quick_ok = not strict
        self.steps = 0
        self.rng = random.Random(0)
        self.builtins = dict(BASE_BUILTINS)

    # -- the trusted namespace -------------------------------------------------------------------
    def tick(self) -> None:
        self.steps += 1
        if self.steps & 255 == 0 and time.monotonic() > self.deadline:
            raise JudgeLimit("judging the test took longer than its deadline")

    def module(self, name: str) -> Module:
        if name not in TRUSTED_MODULES:
            raise Unsupported(f"import {name}")
        if name not in self._mods:
            self._mods[name] = make_module(name, self.rng, self.tick)
        return self._mods[name]

    # -- operations on the candidate's side -------------------------------------------------------
    def remote(self, op: dict[str, Any]) -> Ref:
        k = self.n_ops
        self.n_ops += 1
        if k >= MAX_OPS:
            raise JudgeLimit(f"more than {MAX_OPS} operations on the candidate's code")
        if k < len(self.sess.ops):
            if self.sess.ops[k] != op:
                raise Diverged(f"the replay diverged at operation {k}")
        else:
            self.sess.ops.append(op)
        ref = Ref(self, k)
        if k < len(self.sess.answers):
            ans = self.sess.answers[k]
            if ans[0] == "exc":
                raise CandidateError([str(n) for n in ans[1]] if isinstance(ans[1], list) else ["Exception"])
            if ans[0] == "mem":
                self.sess.memory = True
                raise CandidateError(["MemoryError", "Exception", "BaseException"])
            if ans[0] != "ok":
                raise CandidateError(["Exception"])  # garbled: the program broke its own channel
            if len(ans) > 2 and isinstance(ans[2], list) and op["k"] == "call":
                self._write_back(op, ans[2])
        elif self.sess.ended:
            raise Lost()
        else:
            self.pending = True
            if self.strict:
                raise StopPass()  # one operation per exchange: nothing runs ahead of Python
        return ref

    def _write_back(self, op: dict[str, Any], changed: list[Any]) -> None:
        """Arguments passed by value that the call changed in place: change ours the same way."""
        originals = self._last_args
        for item in changed:
            if not (
                isinstance(item, list) and len(item) == 2 and isinstance(item[0], int) and 0 <= item[0] < len(originals)
            ):
                continue
            target, new = originals[item[0]], decode(item[1])
            if type(target) is list and type(new) is list:
                target[:] = new
            elif type(target) in (dict, set) and type(new) is type(target):
                target.clear()
                target.update(new)

    def value(self, ref: Ref) -> Any:
        """The decoded value of a reference: plain data, or ``Opaque``. A mutable value read
        after later operations is read again from the child (those may have changed it)."""
        if ref.k + 1 < self.n_ops:
            # Read again after later operations (they may have changed it). Decided without
            # looking at the value, so every pass issues the same operations.
            last = self.fresh.get(ref.k)
            if last is None or last.k + 1 < self.n_ops:
                last = self.fresh[ref.k] = self.remote({"k": "val", "h": ref.k})
            return self._peek(last)
        return self._peek(ref)

    def _peek(self, ref: Ref) -> Any:
        k = ref.k
        if k >= len(self.sess.answers):
            if self.sess.ended:
                raise Lost()
            raise NeedFlush()
        if k not in self.values:
            self.values[k] = decode(self.sess.answers[k][1])
        return self.values[k]

    def arg(self, x: Any, depth: int = 0) -> Any:
        """A trusted value (or reference) as the child's tagged argument."""
        if depth > 50:
            raise JudgeLimit("argument nested too deeply")
        if x is PENDING:
            raise StopPass()
        t = type(x)
        if t is Ref:
            return ["h", x.k]
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
        if t is bytes:
            return ["y", x.hex()]
        if t is complex:
            return ["c", repr(x.real), repr(x.imag)]
        if t in (list, tuple, set, frozenset):
            return [SEQUENCE_TAGS[t], [self.arg(v, depth + 1) for v in x]]
        if t is dict:
            return ["d", [[self.arg(k, depth + 1), self.arg(v, depth + 1)] for k, v in x.items()]]
        if t is slice:
            return ["sl", [self.arg(v, depth + 1) for v in (x.start, x.stop, x.step)]]
        raise Unsupported(f"passing a {t.__name__} to the candidate's code")

    def call_remote(
        self, target: Ref, args: list[Any], kwargs: dict[str, Any], nodes: list[ast.expr] | None = None
    ) -> Ref:
        self._last_args = args
        if nodes is not None and len(nodes) == len(args):
            # A literal argument's tagged form is the same every time: computed once per node.
            tagged = [literal_tag(n, a, self.arg) for n, a in zip(nodes, args, strict=True)]
        else:
            tagged = [self.arg(a) for a in args]
        return self.remote(
            {"k": "call", "h": target.k, "a": tagged, "kw": [[k, self.arg(v)] for k, v in kwargs.items()]}
        )

    # -- names ---------------------------------------------------------------------------------
    def lookup(self, name: str, scope: Scope) -> Any:
        s: Scope | None = scope
        while s is not None:
            if name in s.vars:
                return s.vars[name]
            s = s.parent
        if name in self.builtins and name != self.entry:
            return self.builtins[name]
        if name in FORBIDDEN_NAMES:
            raise Unsupported(f"{name}() on the trusted side")
        return self.remote({"k": "name", "name": name})
