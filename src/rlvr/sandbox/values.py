"""What the trusted interpreter (``judge.py``) works with: references to the candidate's values
(``Ref``), the value of a computation not known yet (``PENDING``), the control-flow signals of a
pass, what persists across passes (``Session``), and the test file's own scopes and functions.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import Any, Protocol

from .trusted import Unsupported

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


class ReturnSignal(BaseException):
    """``return`` in a function of the test file, carrying its value."""

    def __init__(self, value: Any) -> None:
        self.value = value


class BreakSignal(BaseException):
    """``break`` in a loop of the test file."""


class ContinueSignal(BaseException):
    """``continue`` in a loop of the test file."""


class Answers(Protocol):
    """Where a reference reads its value: a pass (``operations.Operations.value``)."""

    def value(self, ref: Ref) -> Any: ...


class Interpreter(Protocol):
    """What the test file's functions need from a pass (``judge.Pass``)."""

    fn_calls: int
    lazy: bool

    def expr(self, e: ast.expr, scope: Scope) -> Any: ...

    def block(self, stmts: list[ast.stmt], scope: Scope) -> None: ...


# -- references to the candidate's values -----------------------------------------------------
class Ref:
    """A value produced by the candidate's code (operation ``k``). Trusted code only ever sees
    its decoded plain copy (``Pass.value``); the dunders below force it, so builtins work."""

    __slots__ = ("p", "k")

    def __init__(self, p: Answers, k: int) -> None:
        self.p, self.k = p, k

    def resolve(self) -> Any:
        """The decoded value (``Pass.value``)."""
        return self.p.value(self)

    def __deepcopy__(self, memo: Any) -> Any:
        return copy.deepcopy(self.resolve(), memo)

    def __repr__(self) -> str:
        return repr(self.resolve())


def _forward(name: str) -> Callable[..., Any]:
    def method(self: Ref, *args: Any) -> Any:
        return getattr(self.resolve(), name)(*[a.resolve() if type(a) is Ref else a for a in args])

    method.__name__ = name
    return method


for _name in (
    "__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ __len__ __iter__ __contains__ __getitem__ __index__ "
    "__int__ __float__ __complex__ __str__ __format__ __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ "
    "__truediv__ __rtruediv__ __floordiv__ __rfloordiv__ __mod__ __rmod__ __neg__ __pos__ __abs__ __round__ "
    "__and__ __rand__ __or__ __ror__ __xor__ __rxor__ __invert__ __reversed__"
).split():
    setattr(Ref, _name, _forward(_name))
Ref.__bool__ = lambda self: bool(self.resolve())  # type: ignore[attr-defined]


ITERATING = {len, bool, list, tuple, sorted, set}
# Nodes whose operands are all evaluated (their operations recorded) before the trusted operation
# that may need a pending value: putting them off skips no operation.
PURE_APPLY = (
    ast.BinOp,
    ast.UnaryOp,
    ast.Subscript,
    ast.Attribute,
    ast.FormattedValue,
    ast.JoinedStr,
    ast.Name,
    ast.Constant,
    ast.Compare,
    ast.Call,
    ast.Set,
    ast.List,
    ast.Tuple,
)


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

    def __init__(self, interp: Interpreter, node: ast.FunctionDef | ast.Lambda, scope: Scope) -> None:
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
        for i, name in enumerate(self.params[len(args) :], len(args)):
            if name in kwargs:
                bound[name] = kwargs.pop(name)
            elif i >= n - len(self.defaults):
                bound[name] = self.defaults[i - (n - len(self.defaults))]
            else:
                raise TypeError(f"missing argument {name}")
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        scope = Scope(bound, self.scope, declared(self.node))
        interp = self.interp
        interp.fn_calls += 1
        lazy, interp.lazy = interp.lazy, False
        try:
            if isinstance(self.node, ast.Lambda):
                return interp.expr(self.node.body, scope)
            interp.block(self.node.body, scope)
        except ReturnSignal as r:
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


def declared(node: ast.FunctionDef | ast.Lambda) -> tuple[set[str], set[str]]:
    """The names a function declares ``global`` and ``nonlocal``, cached on its node (plans, and
    their trees, are reused for every sample of a row)."""
    cached = getattr(node, "_rlvr_declared", None)
    if cached is None:
        g: set[str] = set()
        n: set[str] = set()
        body = node.body if isinstance(node, ast.FunctionDef) else []
        for stmt in body:
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Global):
                    g.update(sub.names)
                elif isinstance(sub, ast.Nonlocal):
                    n.update(sub.names)
        cached = vars(node)["_rlvr_declared"] = (g, n)
    return cached


class Scope:
    """A namespace of the test file (module or function), with its parent and its ``global`` and
    ``nonlocal`` declarations."""

    def __init__(
        self, vars: dict[str, Any], parent: Scope | None, decl: tuple[set[str], set[str]] = (set(), set())
    ) -> None:
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
