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

Modules: the pass's state and its operations on the candidate's side are in ``operations.py``,
expressions in ``expressions.py``, values, scopes and signals in ``values.py``; the statements
and the put-off asserts are here; ``checks.TestRun`` runs the rounds.

Limits: every step checks a deadline; operations whose size the inputs do not bound (``**``,
``*`` on sequences, ``range``, ``factorial``, string padding and replacement) are checked before
they run. Over a limit the sample is ``wrong`` with the reason.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from .decoding import JudgeLimit
from .expressions import Expressions
from .operations import Deferred
from .trusted import Unsupported
from .values import (
    PENDING,
    BreakSignal,
    CandidateError,
    ContinueSignal,
    Diverged,
    Function,
    Lost,
    NeedFlush,
    Ref,
    ReturnSignal,
    Scope,
    StopPass,
)


class Pass(Expressions):
    """One interpretation of the whole test against the answers known so far: the statements
    (expressions and operations are the base classes')."""

    def block(self, stmts: list[ast.stmt], scope: Scope) -> None:
        """Run statements in order."""
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
        if isinstance(s, ast.Assert):
            self.do_assert(s, scope)
        elif isinstance(s, ast.Expr):
            self.expr(s.value, scope)
        elif isinstance(s, ast.Assign):
            v = self.expr(s.value, scope)
            for target in s.targets:
                self.assign(target, v, scope)
        elif isinstance(s, ast.AugAssign):
            cur = self.expr(_load(s.target), scope)
            v = self.binop(type(s.op), cur, self.expr(s.value, scope))
            self.assign(s.target, v, scope)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, self.expr(s.value, scope), scope)
        elif isinstance(s, ast.If):
            self.block(s.body if self.truth(self.expr(s.test, scope)) else s.orelse, scope)
        elif isinstance(s, ast.For):
            self.for_(s, scope)
        elif isinstance(s, ast.While):
            self.while_(s, scope)
        elif isinstance(s, ast.FunctionDef):
            if s.decorator_list:
                raise Unsupported("decorated functions")
            scope.set(s.name, Function(self, s, scope))
        elif isinstance(s, ast.Return):
            raise ReturnSignal(None if s.value is None else self.expr(s.value, scope))
        elif isinstance(s, (ast.Pass, ast.Global, ast.Nonlocal)):
            pass
        elif isinstance(s, ast.Break):
            raise BreakSignal()
        elif isinstance(s, ast.Continue):
            raise ContinueSignal()
        elif isinstance(s, ast.Import):
            for a in s.names:
                if "." in a.name:
                    raise Unsupported(f"import {a.name}")
                scope.set(a.asname or a.name, self.module(a.name))
        elif isinstance(s, ast.ImportFrom):
            if s.level or not s.module:
                raise Unsupported("a relative import")
            mod = self.module(s.module)
            for a in s.names:
                if a.name == "*":
                    raise Unsupported("import *")
                scope.set(a.asname or a.name, mod.get(a.name))
        elif isinstance(s, ast.Try):
            self.try_(s, scope)
        elif isinstance(s, ast.Raise):
            if s.exc is None:
                raise Unsupported("a bare raise")
            exc = self.expr(s.exc, scope)
            if isinstance(exc, type) and issubclass(exc, BaseException):
                exc = exc()
            if not isinstance(exc, BaseException):
                raise TypeError("exceptions must derive from BaseException")
            raise exc
        elif isinstance(s, ast.Delete):
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
            raise Unsupported(f"{type(s).__name__} statements")

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
                self.deferred.append(Deferred(s, _snapshot(s.test, scope), k0, self.n_ops))
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

    def loop_body(self, body: list[ast.stmt], scope: Scope) -> bool:
        """Run a ``for`` or ``while`` body once; False when it breaks out (the loop's ``else`` is
        skipped), True when it ends or continues."""
        try:
            self.block(body, scope)
        except BreakSignal:
            return False
        except ContinueSignal:
            pass
        return True

    def for_(self, s: ast.For, scope: Scope) -> None:
        for item in self.iterate(self.expr(s.iter, scope)):
            self.tick()
            self.assign(s.target, item, scope)
            if not self.loop_body(s.body, scope):
                break
        else:
            self.block(s.orelse, scope)

    def while_(self, s: ast.While, scope: Scope) -> None:
        while self.truth(self.expr(s.test, scope)):
            self.tick()
            if not self.loop_body(s.body, scope):
                break
        else:
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
        vars(test)["_rlvr_names"] = names  # cached on the node: plans (and their trees) are reused
    out: dict[str, Any] = {}
    for name in names:
        s: Scope | None = scope
        while s is not None:
            if name in s.vars:
                out[name] = _copy(s.vars[name])
                break
            s = s.parent
    return out


def quick_round(p: Pass, deferred: list[Deferred]) -> bool:
    """Decide the asserts a pass put off, each from its snapshot, replaying the same operations.
    False when that is not exact (the next pass then replays the whole test)."""
    for d in deferred:
        node = d.node
        p.n_ops = d.start
        p.fresh.clear()
        scope = Scope({k: _copy(v, 0, p) for k, v in d.snapshot.items()}, None)
        try:
            ok = p.truth(p.expr(node.test, scope))
        except (NeedFlush, StopPass, Lost, Diverged, JudgeLimit, Unsupported):
            return False
        except Exception as exc:  # noqa: BLE001 - an exception inside the assert fails it
            ok = False
            p.mem_failures += _is_memory(exc)
            p._note(f"line {node.lineno}: {_exc_name(exc)}")
        if p.n_ops != d.end or p.fn_calls:
            return False
        if ok:
            p.passed += 1
        else:
            p.failed += 1
            if not p.notes or not p.notes[-1].startswith(f"line {node.lineno}:"):
                p._note(f"line {node.lineno}: assert failed: {ast.unparse(node.test)[:80]}")
    return True


def _load(target: ast.Name | ast.Attribute | ast.Subscript) -> ast.expr:
    node = copy.copy(target)
    node.ctx = ast.Load()
    return node


def _is_memory(exc: BaseException) -> bool:
    return isinstance(exc, CandidateError) and "MemoryError" in exc.names


def _exc_name(exc: BaseException) -> str:
    if isinstance(exc, CandidateError):
        return f"the candidate's code raised {exc.names[0] if exc.names else 'an exception'}"
    return f"{type(exc).__name__} while checking"
