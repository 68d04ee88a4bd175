"""The expression half of the trusted interpreter (``judge.Pass`` adds the statements):
operators, calls, attributes, subscripts, comprehensions and assignment targets, each on plain
data, with the candidate's part sent to the child as operations (``Operations.remote``).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterator
from typing import Any

from .decoding import JudgeLimit, Opaque
from .operations import Operations
from .trusted import BINOPS, COMPARE, MAX_SEQ, NO_GLOBALS, Module, Unsupported, guard_binop, literal_code
from .values import ITERATING, PENDING, PURE_APPLY, Function, NeedFlush, Ref, Scope, StopPass

UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
}


class Expressions(Operations):
    """Expression evaluation on a pass's state (``Operations``)."""

    def block(self, stmts: list[ast.stmt], scope: Scope) -> None:
        """Run statements (a function of the test file): the statement half, ``judge.Pass``."""
        raise NotImplementedError

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
            if isinstance(e, PURE_APPLY):
                return PENDING
            raise StopPass() from None

    def _expr(self, e: ast.expr, scope: Scope) -> Any:  # noqa: C901 - one dispatch
        self.tick()
        t = type(e)
        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, ast.Name):
            return self.lookup(e.id, scope)
        if isinstance(e, ast.Call):
            return self.call(e, scope)
        if isinstance(e, ast.Compare):
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
        if isinstance(e, ast.BoolOp):
            is_and = isinstance(e.op, ast.And)
            v: Any = None
            for sub in e.values:
                v = self.expr(sub, scope)
                if self.truth(v) != is_and:
                    return v
            return v
        if isinstance(e, ast.UnaryOp):
            v = self.expr(e.operand, scope)
            if isinstance(e.op, ast.Not):
                return not self.truth(v)
            pv = self.plain(v)
            if isinstance(pv, Opaque):
                raise TypeError("an operation on an object of the candidate's own class")
            return UNARY[type(e.op)](pv)
        if isinstance(e, ast.BinOp):
            return self.binop(type(e.op), self.expr(e.left, scope), self.expr(e.right, scope))
        if isinstance(e, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            code = literal_code(e)
            if code is not None:
                return eval(code, NO_GLOBALS)  # noqa: S307 - a literal of the test file: constants only
        if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            items: list[Any] = []
            for x in e.elts:
                if isinstance(x, ast.Starred):
                    items.extend(self.iterate(self.expr(x.value, scope)))
                else:
                    items.append(self.expr(x, scope))
                if len(items) > MAX_SEQ:
                    raise JudgeLimit("a literal past the size limit")
            if isinstance(e, ast.Set):
                return {self.plain(x) for x in items}
            return items if isinstance(e, ast.List) else tuple(items)
        if isinstance(e, ast.Dict):
            d: dict[Any, Any] = {}
            for k, v_node in zip(e.keys, e.values, strict=True):
                if k is None:
                    d.update(self.plain(self.expr(v_node, scope)))
                else:
                    d[self.plain(self.expr(k, scope))] = self.expr(v_node, scope)
            return d
        if isinstance(e, ast.Attribute):
            return self.attribute(self.expr(e.value, scope), e.attr)
        if isinstance(e, ast.Subscript):
            obj = self.expr(e.value, scope)
            key = self.expr(e.slice, scope)
            if type(obj) is Ref:
                return self.remote({"k": "getitem", "h": obj.k, "key": self.arg(key)})
            obj = self.plain(obj)
            if isinstance(obj, Opaque):
                raise TypeError("indexing an object of the candidate's own class")
            return obj[self.plain(key)]
        if isinstance(e, ast.Slice):
            parts = [None if x is None else self.plain(self.expr(x, scope)) for x in (e.lower, e.upper, e.step)]
            return slice(*parts)
        if isinstance(e, ast.IfExp):
            return self.expr(e.body if self.truth(self.expr(e.test, scope)) else e.orelse, scope)
        if isinstance(e, ast.Lambda):
            return Function(self, e, scope)
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self.comprehension(e, scope)
        if isinstance(e, ast.JoinedStr):
            return "".join(str(self.expr(v, scope)) for v in e.values)
        if isinstance(e, ast.FormattedValue):
            v = self.plain(self.expr(e.value, scope))
            spec = self.expr(e.format_spec, scope) if e.format_spec else ""
            if any(len(p) > 6 for p in "".join(c if c.isdigit() else " " for c in spec).split()):
                raise JudgeLimit("a format width past the size limit")
            if e.conversion == 114:
                v = repr(v)
            elif e.conversion == 115:
                v = str(v)
            return format(v, spec)
        if isinstance(e, ast.NamedExpr):
            v = self.expr(e.value, scope)
            self.assign(e.target, v, scope)
            return v
        if isinstance(e, ast.Starred):
            raise Unsupported("a starred expression here")
        raise Unsupported(f"{t.__name__} expressions")

    def comprehension(self, e: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, scope: Scope) -> Any:
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

    def assign(self, target: ast.expr, value: Any, scope: Scope) -> None:
        t = type(target)
        if isinstance(target, ast.Name):
            scope.set(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
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
        elif isinstance(target, ast.Subscript):
            obj = self.expr(target.value, scope)
            key = self.expr(target.slice, scope)
            if type(obj) is Ref:
                raise Unsupported("item assignment on the candidate's object")
            obj[self.plain(key)] = value
        elif isinstance(target, ast.Attribute):
            obj = self.expr(target.value, scope)
            if type(obj) is not Ref or target.attr.startswith("_"):
                raise Unsupported("attribute assignment on a trusted value")
            self.remote({"k": "setattr", "h": obj.k, "name": target.attr, "v": self.arg(value)})
        else:
            raise Unsupported(f"assignment to {t.__name__}")

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
        if fn in ITERATING and len(args) == 1 and type(args[0]) is Ref and isinstance(self.plain(args[0]), Opaque):
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
        if type(owner) is str or type(owner) is bytes:
            name = fn.__name__
            if name in ("center", "ljust", "rjust", "zfill", "expandtabs") and any(
                type(a) is int and a > MAX_SEQ for a in args
            ):
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
        a = a.resolve()
    if type(b) is Ref:
        b = b.resolve()
    ta, tb = type(a), type(b)
    if ta in (int, float) and tb in (int, float) and (ta is float or tb is float):
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    if depth < 50 and ta is tb and ta in (list, tuple):
        return len(a) == len(b) and all(_close(x, y, tol, depth + 1) for x, y in zip(a, b, strict=True))
    if depth < 50 and ta is tb is dict:
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol, depth + 1) for k in a)
    return bool(a == b)
