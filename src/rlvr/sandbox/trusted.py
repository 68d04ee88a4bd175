"""The trusted namespace a test runs in (``judge.py``): which builtins and modules it may use,
what makes a test file *weaker* (``static_reasons``), and the guards on operations whose cost the
inputs do not bound. Everything here runs in the trainer on plain data, never on the candidate's
objects.
"""

from __future__ import annotations

import ast
import builtins
import copy
import math
import operator
import random
import string
from collections.abc import Callable, Iterator
from typing import Any

from .decoding import JudgeLimit

MAX_SEQ = 10_000_000  # elements of any sequence the test builds
MAX_INT_BITS = 1_000_000


class Unsupported(Exception):
    """The test uses something this interpreter does not run on the trusted side."""


EXC_NAMES = {
    n
    for n in dir(builtins)
    if isinstance(getattr(builtins, n), type) and issubclass(getattr(builtins, n), BaseException)
}
_SAFE_BUILTINS = (
    "abs all any ascii bin bool bytes chr complex dict divmod enumerate filter float format frozenset hex int "
    "isinstance issubclass iter len list map max min next oct ord pow range repr reversed round set slice "
    "sorted str sum tuple type zip callable hash"
).split()
FORBIDDEN_NAMES = {
    "exec",
    "eval",
    "compile",
    "open",
    "globals",
    "locals",
    "vars",
    "getattr",
    "setattr",
    "delattr",
    "__import__",
    "input",
    "breakpoint",
    "help",
    "exit",
    "quit",
    "memoryview",
    "object",
    "super",
    "classmethod",
    "staticmethod",
    "property",
    "dir",
    "id",
}
# Not ``re``: a pattern could backtrack for hours inside one C call, where no deadline reaches.
TRUSTED_MODULES = (
    "math",
    "cmath",
    "random",
    "string",
    "copy",
    "typing",
    "collections",
    "itertools",
    "functools",
    "fractions",
    "operator",
    "heapq",
    "bisect",
)
_UNSUPPORTED_NODES = (
    ast.ClassDef,
    ast.With,
    ast.AsyncWith,
    ast.AsyncFunctionDef,
    ast.AsyncFor,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
    ast.Match,
    ast.TryStar,
)


def static_reasons(tree: ast.Module) -> list[str]:
    """Why a test file cannot be run on the trusted side, found without running it."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, _UNSUPPORTED_NODES):
            out.append(
                f"line {getattr(node, 'lineno', '?')}: {type(node).__name__} is not interpreted on the trusted side"
            )
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            out.append(f"line {node.lineno}: uses {node.id}()")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            out.append(f"line {node.lineno}: uses the attribute {node.attr}")
        elif isinstance(node, ast.Import):
            out += [
                f"line {node.lineno}: imports {a.name}"
                for a in node.names
                if a.name.split(".")[0] not in TRUSTED_MODULES
            ]
        elif isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").split(".")[0] not in TRUSTED_MODULES
        ):
            out.append(f"line {node.lineno}: imports from {node.module}")
        elif isinstance(node, ast.FunctionDef) and node.decorator_list:
            out.append(f"line {node.lineno}: decorated function {node.name}")
    return sorted(set(out))


# -- guarded operations --------------------------------------------------------------------------
def _size(x: Any) -> int:
    return len(x) if isinstance(x, (str, bytes, list, tuple)) else 0


def guard_binop(op: type, a: Any, b: Any) -> None:
    if (
        op is ast.Pow
        and type(a) is int
        and type(b) is int
        and b > 0
        and abs(a) > 1
        and a.bit_length() * b > MAX_INT_BITS
    ):
        raise JudgeLimit(f"{a.bit_length()}-bit number to the power {b}")
    if op is ast.Mult:
        for seq, n in ((a, b), (b, a)):
            if _size(seq) and type(n) is int and _size(seq) * n > MAX_SEQ:
                raise JudgeLimit("a sequence repeated past the size limit")
    if op is ast.LShift and type(b) is int and b > MAX_INT_BITS:
        raise JudgeLimit("a shift past the size limit")


BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
    ast.MatMult: operator.matmul,
}
COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _guard_range(*args: Any) -> range:
    r = range(*args)
    if len(r) > MAX_SEQ:
        raise JudgeLimit(f"range of {len(r)} elements")
    return r


def _guard_pow(a: Any, b: Any, m: Any = None) -> Any:
    if m is None:
        guard_binop(ast.Pow, a, b)
        return pow(a, b)
    if any(type(x) is int and x.bit_length() > 100_000 for x in (a, b, m)):
        raise JudgeLimit("modular power of huge numbers")
    return pow(a, b, m)


def _guard_int_arg(limit: int, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any) -> Any:
        if any(type(a) is int and a > limit for a in args):
            raise JudgeLimit(f"{fn.__name__} of a number over {limit}")
        return fn(*args)

    wrapped.__name__ = fn.__name__
    return wrapped


def _guard_bits(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``math.prod``/``math.lcm``: refuse when the inputs could make a result past the size limit
    (one C call, where no deadline reaches)."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        items = list(args[0]) if fn is math.prod and args else list(args)
        bits = sum(x.bit_length() if type(x) is int else 64 for x in items)
        if bits > MAX_INT_BITS:
            raise JudgeLimit(f"{fn.__name__} of numbers with {bits} bits in all")
        return fn(items, *args[1:], **kwargs) if fn is math.prod else fn(*items)

    wrapped.__name__ = fn.__name__
    return wrapped


def _guarded_op(op: type, fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def wrapped(a: Any, b: Any) -> Any:
        guard_binop(op, a, b)
        return fn(a, b)

    wrapped.__name__ = fn.__name__
    return wrapped


_GUARDED_OPERATOR = {
    name: _guarded_op(op, getattr(operator, name))
    for name, op in (
        ("pow", ast.Pow),
        ("ipow", ast.Pow),
        ("mul", ast.Mult),
        ("imul", ast.Mult),
        ("lshift", ast.LShift),
        ("ilshift", ast.LShift),
    )
}


NO_GLOBALS: dict[str, Any] = {"__builtins__": {}}
_LITERAL_NODES = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.USub, ast.UAdd, ast.Load)


def literal_code(node: ast.expr) -> Any:
    """A compiled form of a container literal made of constants only (fresh objects each time,
    at C speed), or None. Cached on the node: plans, and their trees, are cached."""
    code = node.__dict__.get("_rlvr_code", False)
    if code is False:
        code = None
        if all(isinstance(n, _LITERAL_NODES) for n in ast.walk(node)) and sum(1 for _ in ast.walk(node)) < 100_000:
            if not any(isinstance(n, ast.UnaryOp) and not isinstance(n.operand, ast.Constant) for n in ast.walk(node)):
                code = compile(ast.Expression(body=node), "<test literal>", "eval")
        node._rlvr_code = code  # type: ignore[attr-defined]
    return code


def literal_tag(node: ast.expr, value: Any, encode: Callable[[Any], Any]) -> Any:
    if type(node) not in (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Constant) or (
        type(node) is not ast.Constant and literal_code(node) is None
    ):
        return encode(value)
    tag = node.__dict__.get("_rlvr_tag")
    if tag is None:
        tag = node._rlvr_tag = encode(value)  # type: ignore[attr-defined]
    return tag


def _guard_sum(items: Any, start: Any = 0) -> Any:
    """``sum`` of sequences copies the running total at every step: quadratic."""
    if not isinstance(start, (int, float, complex)):
        items = list(items)
        if len(items) > 1000:
            raise JudgeLimit(f"sum of {len(items)} sequences")
    return sum(items, start)


class Module:
    """A trusted module as the test sees it: public attributes only, a few guarded."""

    def __init__(self, name: str, attrs: dict[str, Any]) -> None:
        self.__name = name
        self.__attrs = attrs

    def get(self, attr: str) -> Any:
        if attr.startswith("_") or attr not in self.__attrs:
            raise Unsupported(f"{self.__name}.{attr} is not available on the trusted side")
        return self.__attrs[attr]


def _public(mod: Any) -> dict[str, Any]:
    return {k: getattr(mod, k) for k in dir(mod) if not k.startswith("_")}


def _ticking(it: Any, tick: Callable[[], None]) -> Iterator[Any]:
    for x in it:
        tick()
        yield x


BASE_BUILTINS: dict[str, Any] = {n: getattr(builtins, n) for n in _SAFE_BUILTINS}
BASE_BUILTINS.update({n: getattr(builtins, n) for n in EXC_NAMES})
BASE_BUILTINS.update({"range": _guard_range, "pow": _guard_pow, "sum": _guard_sum, "print": lambda *a, **k: None})


def make_module(name: str, rng: random.Random, tick: Callable[[], None]) -> Module:  # noqa: C901 - one table
    """A trusted module as the test sees it (public names; the unbounded ones guarded)."""
    import bisect
    import cmath
    import collections
    import fractions
    import functools
    import heapq
    import itertools
    import typing

    if name == "math":
        m = _public(math)
        for fname, limit in (("factorial", 20_000), ("comb", 100_000), ("perm", 100_000)):
            m[fname] = _guard_int_arg(limit, getattr(math, fname))
        m["prod"] = _guard_bits(math.prod)
        m["lcm"] = _guard_bits(math.lcm)
        return Module("math", m)
    if name == "random":
        rnd = {
            k: getattr(rng, k)
            for k in (
                "random",
                "randint",
                "randrange",
                "choice",
                "choices",
                "shuffle",
                "sample",
                "uniform",
                "seed",
                "gauss",
                "getrandbits",
            )
        }
        rnd["Random"] = random.Random
        return Module("random", rnd)
    if name == "itertools":
        return Module(
            "itertools",
            {
                k: (lambda f: lambda *a, **kw: _ticking(f(*a, **kw), tick))(getattr(itertools, k))
                for k in _public(itertools)
                if not k[0].isupper()
            },
        )
    table: dict[str, Callable[[], Module]] = {
        "cmath": lambda: Module("cmath", _public(cmath)),
        "string": lambda: Module("string", {k: v for k, v in _public(string).items() if isinstance(v, str)}),
        "copy": lambda: Module("copy", {"copy": copy.copy, "deepcopy": copy.deepcopy}),
        "typing": lambda: Module("typing", _public(typing)),
        "collections": lambda: Module(
            "collections",
            {k: getattr(collections, k) for k in ("Counter", "defaultdict", "OrderedDict", "deque", "namedtuple")},
        ),
        "functools": lambda: Module("functools", {"reduce": functools.reduce, "cmp_to_key": functools.cmp_to_key}),
        "fractions": lambda: Module("fractions", {"Fraction": fractions.Fraction}),
        "operator": lambda: Module("operator", {**_public(operator), **_GUARDED_OPERATOR}),
        "heapq": lambda: Module("heapq", _public(heapq)),
        "bisect": lambda: Module("bisect", _public(bisect)),
    }
    return table[name]()
