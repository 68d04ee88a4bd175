"""The trusted test interpreter: runs a row's test code here, in the trainer, in order, and asks
the sandboxed child only for what the candidate's code produces.

Every operator, builtin and library call that decides pass or fail runs in this process, on plain
data (``checks.decode``), in a clean namespace that the candidate cannot reach: an ``assert`` of a
comparison, ``and``/``or``/``not``, ``all``/``any``, ``in``, ``isinstance``, ``math.isclose``,
loops, helper functions of the test file, ``check(candidate)``, module-level statements with
state. The candidate's names, calls, attributes and indexing on its objects are *operations* sent
to the child; each answer is plain data plus a handle, so later operations can name the object
again (a stateful class, a list changed in place).

How it runs (replay): a pass interprets the whole test. An operation whose answer is not known
yet is recorded and gives a *pending* reference. An ``assert`` that needs a pending value is put
off (its operations are still recorded, in order); anything else that needs one (``if``, ``for``
over a result, a ``try`` body) ends the pass. Then every recorded operation goes to the child in
one batch, and the next pass starts over with the answers. The verdict comes from the first pass
that needs nothing pending: it is an exact, in-order execution of the test against the answers.
Typical tests (a list of asserts, loops over literals) need one batch.

Departures from Python, on purpose:

- an ``assert`` outside ``try`` that fails is counted and the test continues (as pytest-check
  does), so ``partial_credit`` can count; the verdict is ``passed`` only if none failed and no
  exception escaped. Inside ``try``, a failing assert raises, as in Python.
- values from the candidate are plain copies: an object it defines is *opaque* here, equal to
  nothing (its ``__eq__`` never runs), so a test that compares such objects fails.
- ``random`` is seeded the same on every pass (the test must replay identically).

What cannot be interpreted (a class in the test file, ``with``, ``exec``, dunder attributes,
imports outside ``TRUSTED_MODULES``, passing a test-defined function to the candidate) raises
``Unsupported``: the row is *weaker* and never gets a silent verdict.

Limits: every step checks a deadline; operations whose size the inputs do not bound (``**``,
``*`` on sequences, ``range``, ``factorial``, string padding and replacement) are checked before
they run. Over a limit the sample is ``wrong`` with the reason.
"""

from __future__ import annotations

import ast
import copy
import math
import operator
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from .checks import JudgeLimit, Opaque, decode
from .trusted import (
    BASE_BUILTINS,
    BINOPS,
    COMPARE,
    FORBIDDEN_NAMES,
    MAX_SEQ,
    NO_GLOBALS,
    TRUSTED_MODULES,
    Module,
    Unsupported,
    guard_binop,
    literal_code,
    literal_tag,
    make_module,
)

MAX_OPS = 20_000
MAX_ROUNDS = 200


class Diverged(BaseException):
    """A pass asked for different operations than the one before (a bug here, never the sample's)."""


class NeedFlush(BaseException):
    """A pending answer is needed: end the pass (never caught by test code)."""


class StopPass(BaseException):
    """A pending value decides what happens next (control flow, an argument to send): end the
    pass here, so the next one records exactly the same operations up to this point."""


class _PendingValue:
    """The result of trusted computation on a value not known yet, inside an assert."""

    def __repr__(self) -> str:
        return "<pending>"

    def __bool__(self) -> bool:
        raise StopPass()


PENDING = _PendingValue()


class Lost(BaseException):
    """An answer that will never come (the child ended): the test cannot go past this point."""


class CandidateError(Exception):
    """The candidate's code raised; ``names`` are the builtin classes in its MRO."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(names[0] if names else "Exception")
        self.names = names


class _Return(BaseException):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(BaseException):
    pass


class _Continue(BaseException):
    pass


# -- references to the candidate's values -----------------------------------------------------
class Ref:
    """A value produced by the candidate's code (operation ``k``). Trusted code only ever sees
    its decoded plain copy (``Pass.value``); the dunders below force it, so builtins work."""

    __slots__ = ("p", "k")

    def __init__(self, p: Pass, k: int) -> None:
        self.p, self.k = p, k

    def _v(self) -> Any:
        return self.p.value(self)

    def __deepcopy__(self, memo: Any) -> Any:
        return copy.deepcopy(self._v(), memo)

    def __repr__(self) -> str:
        return repr(self._v())


def _forward(name: str) -> Callable[..., Any]:
    def method(self: Ref, *args: Any) -> Any:
        return getattr(self._v(), name)(*[a._v() if type(a) is Ref else a for a in args])

    method.__name__ = name
    return method


for _name in (
    "__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ __len__ __iter__ __contains__ __getitem__ __index__ "
    "__int__ __float__ __complex__ __str__ __format__ __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ "
    "__truediv__ __rtruediv__ __floordiv__ __rfloordiv__ __mod__ __rmod__ __neg__ __pos__ __abs__ __round__ "
    "__and__ __rand__ __or__ __ror__ __xor__ __rxor__ __invert__ __reversed__"
).split():
    setattr(Ref, _name, _forward(_name))
Ref.__bool__ = lambda self: bool(self._v())  # type: ignore[attr-defined]


_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes)
_ITERATING = {len, bool, list, tuple, sorted, set}
# Nodes whose operands are all evaluated (their operations recorded) before the trusted operation
# that may need a pending value: putting them off skips no operation.
_PURE_APPLY = (ast.BinOp, ast.UnaryOp, ast.Subscript, ast.Attribute, ast.FormattedValue, ast.JoinedStr, ast.Name, ast.Constant, ast.Compare, ast.Call, ast.Set, ast.List, ast.Tuple)


def _immutable(x: Any) -> bool:
    if isinstance(x, _IMMUTABLE):
        return True
    if type(x) in (tuple, frozenset):
        return all(_immutable(v) for v in x)
    return False


class Session:
    """What persists across passes: the operations sent, the child's answers, whether it ended."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self.answers: list[Any] = []
        self.sent = 0
        self.ended = False
        self.memory = False  # the candidate raised MemoryError somewhere


class Function:
    """A function defined by the test file (or a lambda): interpreted here."""

    def __init__(self, interp: Pass, node: ast.FunctionDef | ast.Lambda, scope: Scope) -> None:
        self.interp, self.node, self.scope = interp, node, scope
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise Unsupported("functions with *args, **kwargs or keyword-only parameters")
        self.params = [x.arg for x in a.args]
        self.defaults = [interp.expr(d, scope) for d in a.defaults]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        n = len(self.params)
        if len(args) > n:
            raise TypeError("too many arguments")
        bound = dict(zip(self.params, args, strict=False))
        for i, name in enumerate(self.params[len(args):], len(args)):
            if name in kwargs:
                bound[name] = kwargs.pop(name)
            elif i >= n - len(self.defaults):
                bound[name] = self.defaults[i - (n - len(self.defaults))]
            else:
                raise TypeError(f"missing argument {name}")
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        scope = Scope(bound, self.scope, self.interp.declared(self.node))
        interp = self.interp
        interp.fn_calls += 1
        lazy, interp.lazy = interp.lazy, False
        try:
            if isinstance(self.node, ast.Lambda):
                return interp.expr(self.node.body, scope)
            interp.block(self.node.body, scope)
        except _Return as r:
            return r.value
        except NeedFlush:
            if lazy:
                # Put off, optimistically: the rest of the body may hold operations the next pass
                # records in another order. If it does, the replay diverges and the sample is run
                # again from scratch, one operation per exchange (``strict``).
                return PENDING
            raise
        finally:
            interp.lazy = lazy
        return None


class Scope:
    def __init__(self, vars: dict[str, Any], parent: Scope | None, decl: tuple[set[str], set[str]] = (set(), set())) -> None:
        self.vars, self.parent = vars, parent
        self.globals_, self.nonlocals = decl

    def root(self) -> Scope:
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def set(self, name: str, value: Any) -> None:
        if name in self.globals_:
            self.root().vars[name] = value
            return
        if name in self.nonlocals:
            s = self.parent
            while s is not None and name not in s.vars:
                s = s.parent
            (s or self).vars[name] = value
            return
        self.vars[name] = value


class Pass:
    """One interpretation of the whole test against the answers known so far."""

    def __init__(self, sess: Session, deadline: float, entry: str | None, strict: bool = False, tol: float = 0.0) -> None:
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
        self.deferred: list[tuple[ast.Assert, dict[str, Any], int, int]] = []
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
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], int) and 0 <= item[0] < len(originals)):
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
            return [{list: "l", tuple: "t", set: "S", frozenset: "F"}[t], [self.arg(v, depth + 1) for v in x]]
        if t is dict:
            return ["d", [[self.arg(k, depth + 1), self.arg(v, depth + 1)] for k, v in x.items()]]
        if t is slice:
            return ["sl", [self.arg(v, depth + 1) for v in (x.start, x.stop, x.step)]]
        raise Unsupported(f"passing a {t.__name__} to the candidate's code")

    def call_remote(self, target: Ref, args: list[Any], kwargs: dict[str, Any], nodes: list[ast.expr] | None = None) -> Ref:
        self._last_args = args
        if nodes is not None and len(nodes) == len(args):
            # A literal argument's tagged form is the same every time: computed once per node.
            tagged = [literal_tag(n, a, self.arg) for n, a in zip(nodes, args, strict=True)]
        else:
            tagged = [self.arg(a) for a in args]
        return self.remote({"k": "call", "h": target.k, "a": tagged, "kw": [[k, self.arg(v)] for k, v in kwargs.items()]})

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

    def declared(self, node: ast.AST) -> tuple[set[str], set[str]]:
        cached = getattr(node, "_rlvr_declared", None)
        if cached is None:
            cached = self._declared(node)
            node._rlvr_declared = cached  # type: ignore[attr-defined] - plans (and trees) are cached
        return cached

    def _declared(self, node: ast.AST) -> tuple[set[str], set[str]]:
        g: set[str] = set()
        n: set[str] = set()
        body = node.body if isinstance(node, ast.FunctionDef) else []
        for stmt in body:
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Global):
                    g.update(sub.names)
                elif isinstance(sub, ast.Nonlocal):
                    n.update(sub.names)
        return g, n

    # -- statements ----------------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt], scope: Scope) -> None:
        for s in stmts:
            self.stmt(s, scope)

    def stmt(self, s: ast.stmt, scope: Scope) -> None:
        self.tick()
        if self.try_depth:
            mark = self.n_ops
            self._stmt(s, scope)
            # Inside try, a pending result must be known now: its exception belongs to this try.
            for k in range(mark, self.n_ops):
                if k >= len(self.sess.answers):
                    if self.sess.ended:
                        raise Lost()
                    raise NeedFlush()
            return
        self._stmt(s, scope)

    def _stmt(self, s: ast.stmt, scope: Scope) -> None:
        t = type(s)
        if t is ast.Assert:
            self.do_assert(s, scope)
        elif t is ast.Expr:
            self.expr(s.value, scope)
        elif t is ast.Assign:
            v = self.expr(s.value, scope)
            for target in s.targets:
                self.assign(target, v, scope)
        elif t is ast.AugAssign:
            cur = self.expr(_load(s.target), scope)
            v = self.binop(type(s.op), cur, self.expr(s.value, scope))
            self.assign(s.target, v, scope)
        elif t is ast.AnnAssign:
            if s.value is not None:
                self.assign(s.target, self.expr(s.value, scope), scope)
        elif t is ast.If:
            self.block(s.body if self.truth(self.expr(s.test, scope)) else s.orelse, scope)
        elif t is ast.For:
            self.for_(s, scope)
        elif t is ast.While:
            broke = False
            while self.truth(self.expr(s.test, scope)):
                self.tick()
                try:
                    self.block(s.body, scope)
                except _Break:
                    broke = True
                    break
                except _Continue:
                    continue
            if not broke:
                self.block(s.orelse, scope)
        elif t is ast.FunctionDef:
            if s.decorator_list:
                raise Unsupported("decorated functions")
            scope.set(s.name, Function(self, s, scope))
        elif t is ast.Return:
            raise _Return(None if s.value is None else self.expr(s.value, scope))
        elif t is ast.Pass or t is ast.Global or t is ast.Nonlocal:
            pass
        elif t is ast.Break:
            raise _Break()
        elif t is ast.Continue:
            raise _Continue()
        elif t is ast.Import:
            for a in s.names:
                if "." in a.name:
                    raise Unsupported(f"import {a.name}")
                scope.set(a.asname or a.name, self.module(a.name))
        elif t is ast.ImportFrom:
            if s.level or not s.module:
                raise Unsupported("a relative import")
            mod = self.module(s.module)
            for a in s.names:
                if a.name == "*":
                    raise Unsupported("import *")
                scope.set(a.asname or a.name, mod.get(a.name))
        elif t is ast.Try:
            self.try_(s, scope)
        elif t is ast.Raise:
            if s.exc is None:
                raise Unsupported("a bare raise")
            exc = self.expr(s.exc, scope)
            if isinstance(exc, type) and issubclass(exc, BaseException):
                exc = exc()
            if not isinstance(exc, BaseException):
                raise TypeError("exceptions must derive from BaseException")
            raise exc
        elif t is ast.Delete:
            for target in s.targets:
                if isinstance(target, ast.Name):
                    scope.vars.pop(target.id, None)
                elif isinstance(target, ast.Subscript):
                    obj = self.expr(target.value, scope)
                    if type(obj) is Ref:
                        raise Unsupported("del on the candidate's object")
                    del obj[self.expr(target.slice, scope)]
                else:
                    raise Unsupported("del of this form")
        else:
            raise Unsupported(f"{t.__name__} statements")

    def do_assert(self, s: ast.Assert, scope: Scope) -> None:
        if self.try_depth:
            if not self.truth(self.expr(s.test, scope)):
                raise AssertionError()
            return
        k0, calls0 = self.n_ops, self.fn_calls
        try:
            self.lazy = True
            try:
                v = self.expr(s.test, scope)
            finally:
                self.lazy = False
            if v is PENDING:
                raise NeedFlush()
            ok = self.truth(v)
        except NeedFlush:
            self.pending = True
            if self.fn_calls == calls0 and self.quick_ok:
                self.deferred.append((s, _snapshot(s.test, scope), k0, self.n_ops))
            else:
                self.quick_ok = False  # a function of the test ran partly: replay everything
            return  # put off: its operations are recorded; the next pass decides it
        except (JudgeLimit, Unsupported):
            raise
        except Exception as exc:  # noqa: BLE001 - an exception inside the assert fails it
            ok = False
            self.mem_failures += _is_memory(exc)
            self._note(f"line {s.lineno}: {_exc_name(exc)}")
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            if not self.notes or not self.notes[-1].startswith(f"line {s.lineno}:"):
                self._note(f"line {s.lineno}: assert failed: {ast.unparse(s.test)[:80]}")

    def _note(self, text: str) -> None:
        if len(self.notes) < 3:
            self.notes.append(text)

    def for_(self, s: ast.For, scope: Scope) -> None:
        broke = False
        for item in self.iterate(self.expr(s.iter, scope)):
            self.tick()
            self.assign(s.target, item, scope)
            try:
                self.block(s.body, scope)
            except _Break:
                broke = True
                break
            except _Continue:
                continue
        if not broke:
            self.block(s.orelse, scope)

    def try_(self, s: ast.Try, scope: Scope) -> None:
        try:
            self.try_depth += 1
            try:
                self.block(s.body, scope)
            finally:
                self.try_depth -= 1
        except (JudgeLimit, Unsupported):
            raise
        except Exception as exc:  # noqa: BLE001 - matched against the handlers below
            for h in s.handlers:
                if h.type is None or self._matches(exc, self.expr(h.type, scope)):
                    if h.name:
                        scope.set(h.name, exc)
                    self.block(h.body, scope)
                    break
            else:
                raise
        else:
            self.block(s.orelse, scope)
        finally:
            self.block(s.finalbody, scope)

    def _matches(self, exc: Exception, spec: Any) -> bool:
        specs = spec if isinstance(spec, tuple) else (spec,)
        for cls in specs:
            if not (isinstance(cls, type) and issubclass(cls, BaseException)):
                raise Unsupported("except with something that is not a builtin exception")
            if isinstance(exc, CandidateError):
                if cls.__name__ in exc.names:
                    return True
            elif isinstance(exc, cls):
                return True
        return False

    def assign(self, target: ast.expr, value: Any, scope: Scope) -> None:
        t = type(target)
        if t is ast.Name:
            scope.set(target.id, value)
        elif t in (ast.Tuple, ast.List):
            items = list(self.iterate(value))
            names = target.elts
            star = [i for i, e in enumerate(names) if isinstance(e, ast.Starred)]
            if star:
                i = star[0]
                after = len(names) - i - 1
                if len(items) < len(names) - 1:
                    raise ValueError("not enough values to unpack")
                parts = items[:i] + [items[i:len(items) - after]] + items[len(items) - after:]
                for e, v in zip(names, parts, strict=True):
                    self.assign(e.value if isinstance(e, ast.Starred) else e, v, scope)
                return
            if len(items) != len(names):
                raise ValueError(f"expected {len(names)} values to unpack, got {len(items)}")
            for e, v in zip(names, items, strict=True):
                self.assign(e, v, scope)
        elif t is ast.Subscript:
            obj = self.expr(target.value, scope)
            key = self.expr(target.slice, scope)
            if type(obj) is Ref:
                raise Unsupported("item assignment on the candidate's object")
            obj[self.plain(key)] = value
        elif t is ast.Attribute:
            obj = self.expr(target.value, scope)
            if type(obj) is not Ref or target.attr.startswith("_"):
                raise Unsupported("attribute assignment on a trusted value")
            self.remote({"k": "setattr", "h": obj.k, "name": target.attr, "v": self.arg(value)})
        else:
            raise Unsupported(f"assignment to {t.__name__}")

    # -- expressions ---------------------------------------------------------------------------
    def plain(self, x: Any) -> Any:
        if x is PENDING:
            raise NeedFlush()
        return self.value(x) if type(x) is Ref else x

    def hard(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn``; a pending value there decides control flow: stop the pass."""
        try:
            return fn()
        except NeedFlush:
            if self.lazy:
                raise StopPass() from None
            raise

    def truth(self, x: Any) -> bool:
        if x is PENDING:
            raise StopPass()
        if type(x) is Ref:
            # The candidate's own truth value is asked for every time (an object of its own
            # class has no plain value); which is used depends on the value, the request does not.
            told = self.remote({"k": "bool", "h": x.k})
            v = self.hard(lambda: self.plain(x))
            return bool(self.hard(lambda: self.plain(told))) if isinstance(v, Opaque) else bool(v)
        return bool(self.hard(lambda: bool(x)))

    def iterate(self, x: Any) -> Iterator[Any]:
        if x is PENDING:
            raise StopPass()
        if type(x) is Ref:
            listed = self.remote({"k": "list", "h": x.k})
            v = self.hard(lambda: self.plain(x))
            if isinstance(v, Opaque):
                v = self.hard(lambda: self.plain(listed))
                if not isinstance(v, list):
                    raise TypeError("not iterable")
            return iter(v)
        if isinstance(x, Function):
            raise TypeError("a function is not iterable")
        return iter(x)

    def binop(self, op: type, a: Any, b: Any) -> Any:
        a, b = self.plain(a), self.plain(b)
        guard_binop(op, a, b)
        if isinstance(a, Opaque) or isinstance(b, Opaque):
            raise TypeError("an operation on an object of the candidate's own class")
        return BINOPS[op](a, b)

    def expr(self, e: ast.expr, scope: Scope) -> Any:
        if not self.lazy:
            return self._expr(e, scope)
        try:
            return self._expr(e, scope)
        except NeedFlush:
            # Inside an assert a trusted computation on a value not known yet is put off, as
            # long as none of its parts that would record an operation was skipped.
            if type(e) in _PURE_APPLY:
                return PENDING
            raise StopPass() from None

    def _expr(self, e: ast.expr, scope: Scope) -> Any:  # noqa: C901 - one dispatch
        self.tick()
        t = type(e)
        if t is ast.Constant:
            return e.value
        if t is ast.Name:
            return self.lookup(e.id, scope)
        if t is ast.Call:
            return self.call(e, scope)
        if t is ast.Compare:
            left = self.expr(e.left, scope)
            last = len(e.ops) - 1
            for i, (op, right_node) in enumerate(zip(e.ops, e.comparators, strict=True)):
                right = self.expr(right_node, scope)

                def compare(op: ast.cmpop = op, left: Any = left, right: Any = right) -> Any:
                    a, b = self.plain(left), self.plain(right)
                    if type(op) in (ast.In, ast.NotIn) and isinstance(b, Opaque):
                        raise TypeError("membership in an object of the candidate's own class")
                    if self.tol and type(op) in (ast.Eq, ast.NotEq):
                        return _close(a, b, self.tol) == (type(op) is ast.Eq)
                    return COMPARE[type(op)](a, b)

                # A chain stops at the first false link: only the last link may be put off.
                if not (compare() if i == last else self.hard(compare)):
                    return False
                left = right
            return True
        if t is ast.BoolOp:
            is_and = isinstance(e.op, ast.And)
            v: Any = None
            for sub in e.values:
                v = self.expr(sub, scope)
                if self.truth(v) != is_and:
                    return v
            return v
        if t is ast.UnaryOp:
            v = self.expr(e.operand, scope)
            if isinstance(e.op, ast.Not):
                return not self.truth(v)
            pv = self.plain(v)
            if isinstance(pv, Opaque):
                raise TypeError("an operation on an object of the candidate's own class")
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(e.op)](pv)
        if t is ast.BinOp:
            return self.binop(type(e.op), self.expr(e.left, scope), self.expr(e.right, scope))
        if t in (ast.List, ast.Tuple, ast.Set, ast.Dict):
            code = literal_code(e)
            if code is not None:
                return eval(code, NO_GLOBALS)  # noqa: S307 - a literal of the test file: constants only
        if t in (ast.List, ast.Tuple, ast.Set):
            items: list[Any] = []
            for x in e.elts:
                if isinstance(x, ast.Starred):
                    items.extend(self.iterate(self.expr(x.value, scope)))
                else:
                    items.append(self.expr(x, scope))
                if len(items) > MAX_SEQ:
                    raise JudgeLimit("a literal past the size limit")
            if t is ast.Set:
                return {self.plain(x) for x in items}
            return items if t is ast.List else tuple(items)
        if t is ast.Dict:
            d: dict[Any, Any] = {}
            for k, v_node in zip(e.keys, e.values, strict=True):
                if k is None:
                    d.update(self.plain(self.expr(v_node, scope)))
                else:
                    d[self.plain(self.expr(k, scope))] = self.expr(v_node, scope)
            return d
        if t is ast.Attribute:
            return self.attribute(self.expr(e.value, scope), e.attr)
        if t is ast.Subscript:
            obj = self.expr(e.value, scope)
            key = self.expr(e.slice, scope)
            if type(obj) is Ref:
                return self.remote({"k": "getitem", "h": obj.k, "key": self.arg(key)})
            obj = self.plain(obj)
            if isinstance(obj, Opaque):
                raise TypeError("indexing an object of the candidate's own class")
            return obj[self.plain(key)]
        if t is ast.Slice:
            parts = [None if x is None else self.plain(self.expr(x, scope)) for x in (e.lower, e.upper, e.step)]
            return slice(*parts)
        if t is ast.IfExp:
            return self.expr(e.body if self.truth(self.expr(e.test, scope)) else e.orelse, scope)
        if t is ast.Lambda:
            return Function(self, e, scope)
        if t in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            return self.comprehension(e, scope)
        if t is ast.JoinedStr:
            return "".join(str(self.expr(v, scope)) for v in e.values)
        if t is ast.FormattedValue:
            v = self.plain(self.expr(e.value, scope))
            spec = self.expr(e.format_spec, scope) if e.format_spec else ""
            if any(len(p) > 6 for p in "".join(c if c.isdigit() else " " for c in spec).split()):
                raise JudgeLimit("a format width past the size limit")
            if e.conversion == 114:
                v = repr(v)
            elif e.conversion == 115:
                v = str(v)
            return format(v, spec)
        if t is ast.NamedExpr:
            v = self.expr(e.value, scope)
            self.assign(e.target, v, scope)
            return v
        if t is ast.Starred:
            raise Unsupported("a starred expression here")
        raise Unsupported(f"{t.__name__} expressions")

    def comprehension(self, e: Any, scope: Scope) -> Any:
        inner = Scope({}, scope)

        def gen(i: int) -> Iterator[Any]:
            if i == len(e.generators):
                if isinstance(e, ast.DictComp):
                    yield (self.plain(self.expr(e.key, inner)), self.expr(e.value, inner))
                else:
                    yield self.expr(e.elt, inner)
                return
            g = e.generators[i]
            src = self.expr(g.iter, scope if i == 0 else inner)
            for item in self.iterate(src):
                self.tick()
                self.assign(g.target, item, inner)
                if all(self.truth(self.expr(c, inner)) for c in g.ifs):
                    yield from gen(i + 1)

        if isinstance(e, ast.GeneratorExp):
            return gen(0)
        out = list(gen(0))
        if isinstance(e, ast.SetComp):
            return {self.plain(x) for x in out}
        if isinstance(e, ast.DictComp):
            return dict(out)
        return out

    def attribute(self, obj: Any, attr: str) -> Any:
        if attr.startswith("_"):
            raise Unsupported(f"the attribute {attr}")
        if obj is PENDING:
            raise StopPass()
        if type(obj) is Ref:
            return self.remote({"k": "getattr", "h": obj.k, "name": attr})
        if isinstance(obj, Module):
            return obj.get(attr)
        if isinstance(obj, (Opaque, Function)):
            raise TypeError(f"no attribute {attr}")
        return getattr(obj, attr)

    def call(self, e: ast.Call, scope: Scope) -> Any:
        fn = self.expr(e.func, scope)
        args: list[Any] = []
        for a in e.args:
            if type(a) is ast.Starred:
                args.extend(self.iterate(self.expr(a.value, scope)))
            else:
                args.append(self.expr(a, scope))
        kwargs: dict[str, Any] = {}
        for kw in e.keywords:
            if kw.arg is None:
                kwargs.update(self.plain(self.expr(kw.value, scope)))
            else:
                kwargs[kw.arg] = self.expr(kw.value, scope)
        tf = type(fn)
        if tf is Ref:
            return self.call_remote(fn, args, kwargs, e.args)
        if tf is Function:
            return fn(*args, **kwargs)
        if fn in _ITERATING and len(args) == 1 and type(args[0]) is Ref and isinstance(self.plain(args[0]), Opaque):
            if fn is len:
                return self.remote({"k": "len", "h": args[0].k})
            if fn is bool:
                return self.truth(args[0])
            args = [self.plain(self.remote({"k": "list", "h": args[0].k}))]
        if fn is PENDING or isinstance(fn, Opaque) or not callable(fn):
            raise TypeError("not callable")
        self._guard_method(fn, args, kwargs)
        args = [self.plain(a) if type(a) is Ref or a is PENDING else a for a in args]
        if kwargs:
            kwargs = {k: self.plain(v) if type(v) is Ref or v is PENDING else v for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    def _guard_method(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
        owner = getattr(fn, "__self__", None)
        if type(owner) in (str, bytes):
            name = fn.__name__
            if name in ("center", "ljust", "rjust", "zfill", "expandtabs") and any(type(a) is int and a > MAX_SEQ for a in args):
                raise JudgeLimit(f"{name} past the size limit")
            if name == "replace" and len(args) >= 2:
                new = self.plain(args[1])
                if isinstance(new, (str, bytes)) and (len(owner) + 1) * max(1, len(new)) > MAX_SEQ:
                    raise JudgeLimit("replace past the size limit")
        if fn in (bytes, bytearray, str) and args and type(args[0]) is int and args[0] > MAX_SEQ:
            raise JudgeLimit("a sequence past the size limit")


def _close(a: Any, b: Any, tol: float, depth: int = 0) -> bool:
    """``a == b`` with floats compared within ``tol`` (relative and absolute), also inside lists,
    tuples and dict values; everything else as Python compares it."""
    if type(a) is Ref:
        a = a._v()
    if type(b) is Ref:
        b = b._v()
    ta, tb = type(a), type(b)
    if ta in (int, float) and tb in (int, float) and (ta is float or tb is float):
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    if depth < 50 and ta is tb and ta in (list, tuple):
        return len(a) == len(b) and all(_close(x, y, tol, depth + 1) for x, y in zip(a, b, strict=True))
    if depth < 50 and ta is tb is dict:
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol, depth + 1) for k in a)
    return bool(a == b)


def _copy(v: Any, depth: int = 0, rebind: Pass | None = None) -> Any:
    """Containers copied; with ``rebind``, references re-attached to that pass (whose answers and
    operation counter they must read)."""
    if depth > 50:
        raise JudgeLimit("a value nested too deeply")
    t = type(v)
    if t is list:
        return [_copy(x, depth + 1, rebind) for x in v]
    if t is dict:
        return {k: _copy(x, depth + 1, rebind) for k, x in v.items()}
    if t is set:
        return set(v)
    if t is tuple:
        return tuple(_copy(x, depth + 1, rebind) for x in v)
    if t is Ref and rebind is not None:
        return Ref(rebind, v.k)
    return v


def _snapshot(test: ast.expr, scope: Scope) -> dict[str, Any]:
    """The values an assert reads, copied (later statements may change them)."""
    names = getattr(test, "_rlvr_names", None)
    if names is None:
        names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        test._rlvr_names = names  # type: ignore[attr-defined] - plans (and trees) are cached
    out: dict[str, Any] = {}
    for name in names:
        s: Scope | None = scope
        while s is not None:
            if name in s.vars:
                out[name] = _copy(s.vars[name])
                break
            s = s.parent
    return out


def quick_round(p: Pass, deferred: list[tuple[ast.Assert, dict[str, Any], int, int]]) -> bool:
    """Decide the asserts a pass put off, each from its snapshot, replaying the same operations.
    False when that is not exact (the next pass then replays the whole test)."""
    for node, snap, k0, k1 in deferred:
        p.n_ops = k0
        p.fresh.clear()
        scope = Scope({k: _copy(v, 0, p) for k, v in snap.items()}, None)
        try:
            ok = p.truth(p.expr(node.test, scope))
        except (NeedFlush, StopPass, Lost, Diverged, JudgeLimit, Unsupported):
            return False
        except Exception as exc:  # noqa: BLE001 - an exception inside the assert fails it
            ok = False
            p.mem_failures += _is_memory(exc)
            p._note(f"line {node.lineno}: {_exc_name(exc)}")
        if p.n_ops != k1 or p.fn_calls:
            return False
        if ok:
            p.passed += 1
        else:
            p.failed += 1
            if not p.notes or not p.notes[-1].startswith(f"line {node.lineno}:"):
                p._note(f"line {node.lineno}: assert failed: {ast.unparse(node.test)[:80]}")
    return True


def _load(target: ast.expr) -> ast.expr:
    node = copy.copy(target)
    node.ctx = ast.Load()
    return node


def _is_memory(exc: BaseException) -> bool:
    return isinstance(exc, CandidateError) and "MemoryError" in exc.names


def _exc_name(exc: BaseException) -> str:
    if isinstance(exc, CandidateError):
        return f"the candidate's code raised {exc.names[0] if exc.names else 'an exception'}"
    return f"{type(exc).__name__} while checking"


