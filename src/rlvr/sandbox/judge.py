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
import random
import time
from typing import Any

from .checks import JudgeLimit, decode
from .expressions import Expressions
from .trusted import BASE_BUILTINS, FORBIDDEN_NAMES, TRUSTED_MODULES, Module, Unsupported, literal_tag, make_module
from .values import (
    MAX_OPS,
    PENDING,
    CandidateError,
    Diverged,
    Function,
    Lost,
    NeedFlush,
    Ref,
    Scope,
    Session,
    StopPass,
    _Break,
    _Continue,
    _Return,
)


class Pass(Expressions):
    """One interpretation of the whole test against the answers known so far."""

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
            return [{list: "l", tuple: "t", set: "S", frozenset: "F"}[t], [self.arg(v, depth + 1) for v in x]]
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
                parts = items[:i] + [items[i : len(items) - after]] + items[len(items) - after :]
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
